# Shared by the t079x tests (real trainers, as they are written): sourced
# after lib.sh. The trainers live in tests/e2e/trainers/: NAME.py is the
# script as published (no spotrun), NAME.spotrun.py the same script with its
# glue.
TR=$SRCDIR/tests/e2e/trainers
export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1

# glue_lines PLAIN SPOTRUN: the lines of SPOTRUN that PLAIN does not have
# (added or changed), as diff counts them.
glue_lines() { diff "$1" "$2" | grep -c '^>' || true; }

# job_pid WRAPPER_PID: the job spotrun started (its own process group).
job_pid() {
    local i=0 p=
    until p=$(pgrep -P "$1" | head -n 1) && [ -n "$p" ]; do
        i=$((i + 1))
        [ $i -le 200 ] || { echo "timed out after 10s waiting for the job of wrapper $1" >&2; return 1; }
        sleep 0.05
    done
    echo "$p"
}

# timed LOG CMD...: runs CMD, its output into LOG, and says how long it took.
timed() {
    local log=$1 t0 rc=0
    shift
    t0=$(date +%s.%N)
    "$@" >"$log" 2>&1 || rc=$?
    say "$(basename "$log" .log): $(awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN { printf \"%.1f\", b - a }") s, exit $rc"
    return $rc
}

# stop_at LOG PATTERN N HOW RUN_ID PID: once LOG has N lines matching
# PATTERN, preempts the run: HOW is notice (spotrun notify) or group (SIGTERM
# to every process of the job); then waits for the wrapper (exit 75).
stop_at() {
    local log=$1 pattern=$2 n=$3 how=$4 id=$5 pid=$6
    wait_lines "$log" "$pattern" "$n" 120 || { kill -TERM "$pid"; wait "$pid"; return 1; }
    case $how in
    notice) "$SPOTRUN" notify --run-id "$id" --deadline 60s || { kill -TERM "$pid"; wait "$pid"; return 1; } ;;
    group) kill -TERM -- -"$(job_pid "$pid")" ;;
    esac
    expect_code 75 wait "$pid" || { cat "$log"; return 1; }
    grep "preempted: checkpoint [0-9]* is durable" "$log"
}
