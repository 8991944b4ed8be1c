#!/usr/bin/env bash
# Lost work is the truth: the figure `show` prints for an interrupted
# attempt is the training time since the state the newest durable
# checkpoint holds was taken, checked against the job's own clock (a log
# of its iterations, kept outside the checkpoint dir). For a wrapper killed
# with kill -9 it runs to the attempt's last keep-alive; under --settle it
# counts from when the committed files were last written, not from the
# commit.
. "$(dirname "$0")/lib.sh"

KA=300 # keep-alive interval (ms) in these runs

# job.sh MODE: one iteration every 0.1 s, each logged with its time (ms) to
# $TRASH/$RUN.iter. MODE commit: the state is written and `spotrun commit`
# called at iteration 5 only (its time logged as "state"). MODE settle: the
# state file is written at iteration 5 only (ditto); --settle commits it.
cat >job.sh <<'JOB'
#!/bin/sh
log=$TRASH/$SPOTRUN_RUN_ID.iter
echo $$ >"$TRASH/$SPOTRUN_RUN_ID.pid"
i=0
while :; do
    i=$((i + 1))
    t=$(date +%s%3N)
    echo "iter $i $t" >>"$log"
    if [ "$i" -eq 5 ]; then
        echo "$i" >"$SPOTRUN_CKPT_DIR/step"
        echo "state $i $(date +%s%3N)" >>"$log"
        [ "$1" = commit ] && "$SPOTRUN_BIN" commit --step "$i"
    fi
    sleep 0.1
done
JOB
chmod +x job.sh
export TRASH

# truth RUN: the job's own count of the work since its committed state (ms)
truth() { awk '$1 == "state" {s = $3} $1 == "iter" {l = $3} END {print l - s}' "$1.iter"; }

# check RUN: the figure of the run's first attempt against the job's clock:
# at least 70% of it, at most it plus a keep-alive interval (and a second
# of slack for a loaded machine); and the checkpoint's staged event records
# when the state was taken (state_ms), within a second of the job's clock
check() {
    local t s
    t=$(truth "$1")
    s=$(awk '$1 == "state" {print $3}' "$1.iter")
    "$SPOTRUN" show "$1" --json >"$1.json"
    events "$1" | grep "\"event\":\"staged\"" >"$1.staged"
    say "# $1: job's own count ${t}ms, state taken at $s"
    json "$1.json" "
a = d['attempt_list'][0]
lost = a['lost_work_seconds'] * 1000
print('# spotrun says', lost, 'ms')
assert lost >= 0.7 * $t, (lost, $t)
assert lost <= $t + $KA + 1000, (lost, $t)
assert d['lost_work_seconds'] * 1000 == lost, d['lost_work_seconds']
staged = json.loads(open('$1.staged').readline())
assert abs(staged.get('state_ms', 0) - $s) <= 1000, (staged, $s)
"
}

# run_and_kill RUN MODE [ARGS]: runs the job until it has worked 3 s past
# its state, then kills the wrapper with kill -9 (the job dies with it)
run_and_kill() {
    local run=$1 mode=$2
    shift 2
    SPOTRUN_KEEPALIVE_MS=$KA "$SPOTRUN" run --run-id "$run" --lease-ttl 2s --notice none "$@" \
        -- "$TRASH/job.sh" "$mode" >"$run.log" 2>&1 &
    local pid=$!
    wait_for "$run.log" "durable" 60 &&
    wait_for "$run.iter" "^iter 35 " 60 &&
    kill -9 $pid &&
    { wait $pid 2>/dev/null || :; } &&
    wait_until 60 "the job to die with its wrapper" sh -c "! kill -0 $(cat "$run.pid") 2>/dev/null" &&
    wait_until 60 "the run to read as vanished" sh -c \
        "\"$SPOTRUN\" show $run >$run.show && grep -q '^state: *vanished$' $run.show"
}

test_expect_success 'kill -9 of the wrapper: lost work runs from the commit call (state_ms) to the last keep-alive' '
    run_and_kill k commit &&
    check k
'

test_expect_success '--settle: lost work counts from when the files were last written, not from the commit' '
    run_and_kill s settle --settle 2s &&
    check s
'

test_done
