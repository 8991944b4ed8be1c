# obs-scenario.sh - a run with a history, for the observability tests
# (t05NN-*.sh source it after lib.sh): the job crashes once (exit 3 at step
# 700, after the checkpoint of step 500), is restarted, is preempted by
# `spotrun notify`, and a rerun finishes it.
#
# obs_first_run RUN [spotrun run options...]   ends with exit 75
# obs_second_run RUN [spotrun run options...]  resumes and ends with exit 0

obs_first_run() {
    local run=$1
    shift
    "$SPOTRUN" run --run-id "$run" --notice none --backoff 10ms "$@" -- \
        "$LOGREG" --steps 3000 --save-every 500 --crash-at 700 --pace-ms 1 \
        --out "$TRASH/$run.bin" >"$run-1.log" 2>&1 &
    local pid=$!
    wait_for "$run-1.log" "resumed from step 500" 30 &&
        wait_for "$run-1.log" "^step 1200 " 30 &&
        "$SPOTRUN" notify --run-id "$run" --deadline 20s &&
        expect_code 75 wait $pid
}

obs_second_run() {
    local run=$1
    shift
    "$SPOTRUN" run --run-id "$run" --notice none "$@" -- \
        "$LOGREG" --steps 3000 --save-every 500 --out "$TRASH/$run.bin" >"$run-2.log" 2>&1
}
