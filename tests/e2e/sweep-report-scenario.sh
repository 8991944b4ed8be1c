# sweep-report-scenario.sh - the sweep that t0511-t0513 draw with `sweep
# report`, sourced after lib.sh: report_sweep builds it in the file store.
#
# Sweep rs: lr (long decimals, as a sampler writes them) x width, six
# trials, early stopping loss:min,grace=2,eta=2,max=8 (rungs at steps 2, 4,
# 8). The job reports loss = 1/step + c and acc = 1 - loss/10 at each of
# its 8 steps, c by trial: 0.05 0.05+5 0.03 0.03+5 0.02 0.01. Run one at a
# time: 0 and 2 done, 1 and 3 pruned at the first rung (worse than both),
# 4 cancelled while it runs (`sweep cancel`), 5 given priority 10, stopped
# by `sweep pause --stop` at step 4, resumed after `sweep resume` (from
# the state of step 3: it reports step 4 again) and done: the best trial
# however "best" is read (the lowest final and lowest value).
# svg_py FILE CODE: runs CODE with root (the SVG's root element), S (its
# namespace in braces), within(root, cls) (the elements inside elements
# of class cls) and colors(elements) (their fill and stroke colors).
svg_py() {
    "$PY" -c "
import re, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
S = '{http://www.w3.org/2000/svg}'
def cls(e): return (e.get('class') or '').split()
def within(top, c):
    out = []
    for e in top.iter():
        if c in cls(e):
            out.extend(x for x in e.iter() if x is not e)
    return out
def colors(es):
    out = set()
    for e in es:
        if e.tag in (S + 'text', S + 'title') or 'band' in cls(e):
            continue
        for a in ('fill', 'stroke'):
            v = (e.get(a) or 'none').lower()
            if v not in ('none', '#fff', '#ffffff', 'white'):
                out.add(v)
    return out
def texts(top, skip=()):
    out = []
    def walk(e, off):
        off = off or any(c in cls(e) for c in skip)
        if e.tag == S + 'text' and not off:
            out.append(''.join(e.itertext()))
        for x in e:
            walk(x, off)
    walk(top, False)
    return out
$2
" "$1"
}

cat >trial.sh <<\EOF
#!/bin/sh
d=$SPOTRUN_CKPT_DIR
asked=0
trap 'asked=1' USR1
step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt 8 ]; do
    step=$((step + 1))
    sleep 0.2
    loss=$(awk -v s="$step" -v t="$SPOTRUN_TRIAL" 'BEGIN {
        split("0.05 5.05 0.03 5.03 0.02 0.01", c, " "); printf "%.9f", 1 / s + c[t + 1] }')
    acc=$(awk -v l="$loss" 'BEGIN { printf "%.9f", 1 - l / 10 }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss" acc="$acc" || exit 1
    case $step in 1 | 3 | 5 | 7) echo "$step" >"$d/step" ;; esac # a resume redoes a step
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
    # trials 4 and 5 wait at step 4 (their first start) to be steered
    if [ "$step" = 4 ] && [ "${SPOTRUN_RESUMED:-0}" = 0 ] &&
        { [ "$SPOTRUN_TRIAL" = 4 ] || [ "$SPOTRUN_TRIAL" = 5 ]; }; then
        echo "waiting $SPOTRUN_TRIAL" >"$TRASH/waiting-$SPOTRUN_TRIAL"
        for _ in $(seq 3000); do
            [ "$asked" = 0 ] || { asked=0; "$SPOTRUN_BIN" commit --step "$step"; }
            sleep 0.1
        done
        exit 1
    fi
done
EOF
chmod +x trial.sh
export TRASH

# report_sweep: the sweep above, every trial ended (log in report.log).
trial() { CUDA_VISIBLE_DEVICES= "$SPOTRUN" run --sweep rs --notice none --budget-poll 300ms --trial "$@"; }
report_sweep() {
    "$SPOTRUN" sweep init rs --param lr=0.0007363055617,0.003141592653,0.01 \
        --param width=64,128 --early-stop loss:min,grace=2,eta=2,max=8 -- ./trial.sh &&
        for k in 0 2; do trial $k 2>>report.log || return 1; done &&
        for k in 1 3; do
            expect_code 124 trial $k 2>>report.log || return 1
        done &&
        # trial 4: cancelled while it runs
        { trial 4 2>>report.log & } &&
        wait_for waiting-4 "waiting 4" 120 &&
        "$SPOTRUN" sweep cancel rs 4 >>report.log &&
        expect_code 124 wait $! &&
        # trial 5: priority 10, stopped by a pause, resumed, done
        "$SPOTRUN" sweep priority rs 5 --set 10 >>report.log &&
        { trial 5 2>>report.log & } &&
        wait_for waiting-5 "waiting 5" 120 &&
        "$SPOTRUN" sweep pause rs --stop >>report.log &&
        expect_code 124 wait $! &&
        "$SPOTRUN" sweep resume rs >>report.log &&
        trial 5 2>>report.log &&
        ls "$SPOTRUN_STORE/sweeps/rs/end" | sort | tr "\n" " " >ends &&
        test "$(cat ends)" = "0.done 1.pruned 2.done 3.pruned 4.cancelled 5.done "
}
