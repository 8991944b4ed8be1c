# shellcheck shell=bash
# lib-stages.sh - the stages of scripts/test.sh (sourced): each stage runs
# with its output in its own log (STAGE_DIR/NAME.log), printed whole when
# the stage ends, under a lock, so that stages running at the same time
# (in background tracks) never interleave; at the end, a table of every
# stage's seconds and status, also when the run failed or was cut short.
#
#   stage_init DIR          logs and records go to DIR (made if missing)
#   stage NAME CMD...       runs CMD as stage NAME; returns its status
#   stage_after "A B" NAME CMD...
#                           first waits until stages A and B (possibly in
#                           another track) have ended; if one did not pass,
#                           NAME is skipped (returns 1), else as stage
#   stage_skip NAME WHY     records NAME as skipped, saying why
#   stage_table             the table; returns 1 when any stage failed
#   stage_kill_tree PID     ends a track cut short: PID and its descendants
#
# Records: DIR/NAME.status holds "SECONDS STATUS" once NAME ended; DIR/order
# the names in the order they started. Needs flock(1) (util-linux).

stage_init() {
    STAGE_DIR=$1
    STAGE_START=$(date +%s)
    mkdir -p "$STAGE_DIR"
    : >"$STAGE_DIR/order"
    : >"$STAGE_DIR/print.lock"
}

# stage_say TEXT...: one line to stdout, under the print lock.
stage_say() { flock "$STAGE_DIR/print.lock" printf '%s\n' "$*"; }

# stage_begin NAME: NAME takes its row in the table.
stage_begin() { flock "$STAGE_DIR/print.lock" sh -c 'echo "$1" >>"$2/order"' _ "$1" "$STAGE_DIR"; }

# stage_end NAME SECONDS STATUS
stage_end() {
    echo "$2 $3" >"$STAGE_DIR/$1.status.tmp" && mv "$STAGE_DIR/$1.status.tmp" "$STAGE_DIR/$1.status"
}

stage_skip() {
    stage_begin "$1"
    stage_end "$1" 0 "skipped ($2)"
    stage_say "== $1: skipped ($2)"
}

stage_after() {
    local dep name=$2
    for dep in $1; do
        # the stage runs in another track, which ends it (ok, failed,
        # skipped) whatever happens
        while [ ! -e "$STAGE_DIR/$dep.status" ]; do sleep 1; done
        if [ "$(cut -d' ' -f2 "$STAGE_DIR/$dep.status")" != ok ]; then
            stage_skip "$name" "$dep did not pass"
            return 1
        fi
    done
    shift
    stage "$@"
}

stage() {
    local name=$1 log=$STAGE_DIR/$1.log start rc=0 secs status
    shift
    stage_begin "$name"
    stage_say "== $name: started ($(date -u +%H:%M:%S))"
    start=$(date +%s)
    "$@" >"$log" 2>&1 </dev/null || rc=$?
    secs=$(($(date +%s) - start))
    status=ok
    [ "$rc" -eq 0 ] || status="FAILED (exit $rc)"
    # the log first, then the record: a stage waiting on this one starts
    # after this stage's output is out
    flock "$STAGE_DIR/print.lock" sh -c '
        printf "== %s: %s in %ss; its output (%s):\n" "$1" "$2" "$3" "$4"
        cat "$4"
        [ "$2" = ok ] || printf "== %s: %s in %ss (log: %s)\n" "$1" "$2" "$3" "$4"' \
        _ "$name" "$status" "$secs" "$log"
    stage_end "$name" "$secs" "$status"
    return "$rc"
}

stage_kill_tree() {
    local child
    kill -STOP "$1" 2>/dev/null || return 0 # no new children meanwhile
    for child in $(pgrep -P "$1"); do stage_kill_tree "$child"; done
    kill -TERM "$1" 2>/dev/null
    kill -CONT "$1" 2>/dev/null
    return 0 # gone already is fine too (this runs in an EXIT trap under set -e)
}

stage_table() {
    local name secs status failed="" total
    total=$(($(date +%s) - ${STAGE_START:-$(date +%s)}))
    printf '\n== stage times (logs in %s)\n' "$STAGE_DIR"
    printf '%-14s %8s  %s\n' stage seconds status
    while read -r name; do
        if [ -e "$STAGE_DIR/$name.status" ]; then
            read -r secs status <"$STAGE_DIR/$name.status"
        else
            secs=- status="did not finish"
        fi
        printf '%-14s %8s  %s\n' "$name" "$secs" "$status"
        case $status in ok | skipped*) ;; *) failed="$failed $name" ;; esac
    done <"$STAGE_DIR/order"
    if [ -n "$failed" ]; then
        printf '%-14s %8s  %s\n' total "$total" "FAILED:$failed"
        return 1
    fi
    printf '%-14s %8s  %s\n' total "$total" ok
}
