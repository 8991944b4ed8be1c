#!/usr/bin/env bash
# --every auto asks for checkpoints as often as it pays (docs/interval.md):
# it starts from the priors, measures what a commit costs the job, and
# re-chooses sqrt(2 x cost x MTBF) within its bounds; show prints the choice
# with the numbers it came from. Timing is loose: this machine is shared.
. "$(dirname "$0")/lib.sh"

# A job that commits at the step after each request; its checkpoint is
# 4 MB of random bytes, so that staging it at zstd level 19 on one thread
# takes a measurable part of a second.
cat >job.sh <<\EOF
#!/bin/sh
req=0
trap 'req=1' USR1
end=$(($(date +%s) + $1))
step=0
while [ "$(date +%s)" -lt "$end" ]; do
    sleep 0.2
    step=$((step + 1))
    if [ "$req" = 1 ]; then
        req=0
        head -c 4000000 /dev/urandom >"$SPOTRUN_CKPT_DIR/state"
        "$SPOTRUN_BIN" commit --step "$step" >/dev/null
    fi
done
EOF
chmod +x job.sh

test_expect_success 'the first interval comes from the priors, capped at MTBF / 2' '
    "$SPOTRUN" run --run-id auto --every auto --mtbf 12s --every-min 1s --level 19 \
        --threads 1 -- ./job.sh 40 >auto.log 2>&1 &&
    cat auto.log &&
    grep "checkpoint interval 6.0s (auto: cost 10.0s prior, MTBF 12.0s prior; at its upper bound)" \
        auto.log
'

test_expect_success 'after a staged commit the interval follows the measured cost' '
    grep -E "checkpoint interval [0-9.]+(ms|s) \(auto: cost [0-9.]+(ms|s) measured, MTBF 12.0s prior" \
        auto.log &&
    events auto | grep "\"event\":\"interval\"" >interval.ev &&
    test "$(wc -l <interval.ev)" -ge 2
'

test_expect_success 'requests arrive at about the chosen interval' '
    events auto >all.ev &&
    "$PY" - all.ev <<\PY
import json, math, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ev.sort(key=lambda e: e["unix_ms"])
iv = [e for e in ev if e["event"] == "interval"]
for e in iv:  # each choice is sqrt(2 C M) within its bounds
    want = min(max(math.sqrt(2 * e["cost_ms"] * e["mtbf_ms"]), 0), e["mtbf_ms"] / 2)
    assert abs(e["interval_ms"] - max(want, 1000)) <= 1, e
    assert e["loss_ms"] == e["interval_ms"] // 2 + e["cost_ms"], e
req = [e["unix_ms"] for e in ev if e["event"] == "request" and e["reason"] == "every"]
staged = [e["unix_ms"] for e in ev if e["event"] == "staged"]
print("requests", len(req), "staged", len(staged), [i["interval_ms"] for i in iv])
assert len(req) >= 3 and len(staged) >= 3
start = [e["unix_ms"] for e in ev if e["event"] == "start"][0]
# the first request: one prior interval (6s) after the start
assert 5000 <= req[0] - start <= 12000, req[0] - start
# later ones: one measured interval after the commit before them, or after
# the request before them when the job has not answered it yet (on a loaded
# machine a level-19 commit can outlast the interval: the ticker repeats).
# A stage that ended less than 500 ms before a request may not have reached
# the loop when the request fell due (its event is dated by the stager, the
# loop takes its result next): that request is timed from what came before.
for k, r in enumerate(req[1:]):
    base = max([s for s in staged if s < r - 500] + [req[k]])
    chosen = [i for i in iv if i["unix_ms"] <= r][-1]["interval_ms"]
    assert 0.8 * chosen <= r - base <= 1.5 * chosen + 3000, (r - base, chosen)
    assert chosen <= 6000
PY
'

test_expect_success 'show prints the interval, its cost and MTBF, and the expected loss' '
    "$SPOTRUN" show auto >show.out &&
    cat show.out &&
    grep -E "^interval: +[0-9.]+(ms|s) auto \(cost [0-9.]+(ms|s) measured, MTBF 12.0s prior\); expected loss [0-9.]+(ms|s) per preemption, overhead [0-9.]+%$" \
        show.out &&
    "$SPOTRUN" show auto --json >show.json &&
    json show.json "
i = d[\"checkpoint_interval\"]
assert i[\"source\"] == \"auto\" and i[\"cost_from\"] == \"measured\" and i[\"mtbf_from\"] == \"prior\"
assert i[\"mtbf_seconds\"] == 12 and 1 <= i[\"seconds\"] <= 6 and i[\"cost_seconds\"] > 0
assert abs(i[\"expected_loss_seconds\"] - (i[\"seconds\"] / 2 + i[\"cost_seconds\"])) < 0.002
assert abs(i[\"overhead\"] - i[\"cost_seconds\"] / i[\"seconds\"]) < 1e-6
"
'

test_expect_success 'a preempted run measures its MTBF from its own history' '
    "$SPOTRUN" run --run-id pre --every auto --mtbf 1h --every-min 1s -- ./job.sh 60 \
        >pre1.log 2>&1 &
    wait_for pre1.log "started" &&
    sleep 2 &&
    "$SPOTRUN" notify --run-id pre --deadline 20s &&
    code=0 && wait $! || code=$?
    test "$code" -eq 75 &&
    "$SPOTRUN" run --run-id pre --every auto --mtbf 1h --every-min 1s -- ./job.sh 1 >pre2.log 2>&1 &&
    cat pre2.log &&
    grep -E "checkpoint interval .*MTBF [0-9.]+s history" pre2.log
'

test_expect_success 'a fixed --every is not an auto interval: no interval event' '
    "$SPOTRUN" run --run-id fixed --every 2s -- ./job.sh 3 >fixed.log 2>&1 &&
    ! grep "checkpoint interval" fixed.log &&
    ! events fixed | grep "\"event\":\"interval\"" &&
    "$SPOTRUN" show fixed >fixed.out && ! grep "^interval:" fixed.out &&
    "$SPOTRUN" show fixed --json >fixed.json &&
    json fixed.json "assert d[\"checkpoint_interval\"] is None"
'

test_expect_success 'bad --every, --mtbf and bounds are usage errors that run nothing' '
    expect_code 64 "$SPOTRUN" run --every autox -- touch ran 2>err1 &&
    grep -- "--every" err1 && grep autox err1 &&
    expect_code 64 "$SPOTRUN" run --every auto --mtbf -1 -- touch ran 2>err2 &&
    grep -- "--mtbf" err2 &&
    expect_code 64 "$SPOTRUN" run --every auto --mtbf 0 -- touch ran 2>err3 &&
    grep -- "--mtbf" err3 &&
    expect_code 64 "$SPOTRUN" run --every auto --every-min 10m --every-max 1m -- touch ran &&
    SPOTRUN_EVERY=autox expect_code 64 "$SPOTRUN" run -- touch ran 2>err4 &&
    grep SPOTRUN_EVERY err4 &&
    test ! -e ran
'

test_done
