#!/usr/bin/env bash
# The wrapper of a single-node run keeps summaries/<run>.json (docs/store.md):
# after a normal run, a restart after a crash, a preemption (SIGTERM to the
# wrapper: 75) and its rerun, a kill -9 of the wrapper and its rerun (the
# vanished attempt counted), the summary is valid and says what the event
# logs say. A hostile summary (garbage, wrong types, huge numbers, fewer
# attempts than the logs, a directory, a symlink) is never believed: the
# run is read from its logs, never hidden; and a summary that cannot be
# written never fails the run. Read through sr_runsum_load_all, the reader
# of `spotrun stats` (tests/tools/runsum_tool).
. "$(dirname "$0")/lib.sh"
TOOL=${RUNSUM_TOOL:-$SRCDIR/build/tests/runsum_tool}

# line RUN [STORE]: RUN's line of load_all ("RUN from_logs=0 state=... attempts=...").
line() { "$TOOL" load "${2:-$SPOTRUN_STORE}" "$1" 2>/dev/null | awk -v r="$1" '$1 == r'; }
# attempts RUN: its attempts, "0:crashed,1:done" (cause or open).
attempts() {
    line "$1" | sed 's/.* attempts=//' | tr ',' '\n' | cut -d: -f1,2 | paste -sd, -
}
# summary_matches RUN: RUN's summary is read (valid, not stale) and says
# what its event logs alone say (a copy of the store without it).
summary_matches() {
    local from_sum from_logs
    from_sum=$(line "$1")
    case "$from_sum" in *" from_logs=0 "*) ;; *) say "summary of $1 not used: $from_sum"; return 1 ;; esac
    rm -rf copy && cp -r "$SPOTRUN_STORE" copy && rm "copy/summaries/$1.json"
    from_logs=$(line "$1" copy)
    case "$from_logs" in *" from_logs=1 "*) ;; *) say "no fallback: $from_logs"; return 1 ;; esac
    test "${from_sum#* from_logs=0 }" = "${from_logs#* from_logs=1 }" || {
        say "summary: $from_sum"
        say "logs:    $from_logs"
        return 1
    }
}

test_expect_success 'a normal run writes a valid summary that matches its log' '
    "$SPOTRUN" run --run-id n -- sh -c "exit 0" 2>n.log &&
    test -f "$SPOTRUN_STORE/summaries/n.json" &&
    summary_matches n &&
    test "$(attempts n)" = "0:done" &&
    line n | grep " state=done " &&
    json "$SPOTRUN_STORE/summaries/n.json" "
assert d[\"version\"] == 3 and d[\"run\"] == \"n\" and d[\"state\"] == \"done\"
assert d[\"labels\"] == {}, d
a = d[\"attempts\"][0]
assert a[\"cause\"] == \"done\" and a[\"nodes\"] == 1 and a[\"end_ms\"] >= a[\"start_ms\"] > 0, a
"
'

test_expect_success 'a restart after a crash: both attempts in one summary' '
    "$SPOTRUN" run --run-id c --max-restarts 1 -- \
        sh -c "test -e $TRASH/c.once && exit 0; touch $TRASH/c.once; exit 3" 2>c.log &&
    summary_matches c &&
    test "$(attempts c)" = "0:crashed,1:done"
'

# start_bg RUN CMD...: starts a run in the background (its pid in RUN.wpid,
# the job's in RUN.pid) and waits until its job runs.
start_bg() {
    local run=$1
    shift
    "$SPOTRUN" run --run-id "$run" --grace 5s -- "$@" >"$run.log" 2>&1 &
    echo $! >"$run.wpid"
    wait_for "$run.log" "started" 30 &&
        wait_until 30 "the job to write $run.pid" test -s "$run.pid"
}

test_expect_success 'a preemption (SIGTERM to the wrapper: 75), then its rerun' '
    job="test -e $TRASH/p.go && exit 0; echo \$\$ >$TRASH/p.pid; exec sleep 300" &&
    start_bg p sh -c "$job" &&
    kill -TERM "$(cat p.wpid)" &&
    expect_code 75 wait "$(cat p.wpid)" &&
    summary_matches p &&
    test "$(attempts p)" = "0:preempted" &&
    line p | grep " state=preempted " &&
    touch p.go &&
    "$SPOTRUN" run --run-id p -- sh -c "$job" 2>p2.log &&
    summary_matches p &&
    test "$(attempts p)" = "0:preempted,1:done"
'

kjob="test -e $TRASH/k.go && exit 0; echo \$\$ >$TRASH/k.pid; exec sleep 300"
# The summary the dead wrapper left says its attempt is open; its LEASE is
# takeable (its holder, a process of this machine, is gone), so the reader
# goes to the logs: the attempt vanished at its last event, never running.
test_expect_success 'kill -9 of the wrapper: the open attempt vanished at its last event' '
    start_bg k sh -c "$kjob" &&
    wait_until 30 "the summary of the open attempt" \
        grep -q "\"cause\":\"\"" "$SPOTRUN_STORE/summaries/k.json" &&
    kill -9 "$(cat k.wpid)" &&
    { kill -9 "$(cat k.pid)" 2>/dev/null || :; } && # gone already if it died with the wrapper
    { wait "$(cat k.wpid)" || :; } &&
    grep -q "\"cause\":\"\"" "$SPOTRUN_STORE/summaries/k.json" &&
    line k | grep " from_logs=1 state=vanished " &&
    test "$(attempts k)" = "0:vanished"
'

test_expect_success 'and its rerun counts the vanished attempt' '
    touch k.go &&
    "$SPOTRUN" run --run-id k -- sh -c "$kjob" 2>k2.log &&
    summary_matches k &&
    test "$(attempts k)" = "0:vanished,1:done"
'

# hostile RUN: RUN is read from its logs (from_logs=1) with attempts WANT.
from_logs_with() {
    local l
    l=$(line "$1")
    case "$l" in *" from_logs=1 "*) ;; *) say "believed: $l"; return 1 ;; esac
    test "$(attempts "$1")" = "$2"
}

test_expect_success 'garbage, wrong types and huge numbers: read from the logs' '
    good=$(cat "$SPOTRUN_STORE/summaries/c.json") &&
    printf "\001\002 not json" >"$SPOTRUN_STORE/summaries/c.json" &&
    from_logs_with c "0:crashed,1:done" &&
    printf "%s" "$good" | sed "s/\"attempt\":0/\"attempt\":\"0\"/" >"$SPOTRUN_STORE/summaries/c.json" &&
    from_logs_with c "0:crashed,1:done" &&
    printf "%s" "$good" | sed "s/\"lost_ms\":[0-9]*/\"lost_ms\":1e999/" >"$SPOTRUN_STORE/summaries/c.json" &&
    from_logs_with c "0:crashed,1:done" &&
    printf "%s" "$good" | sed "s/\"end_ms\":/\"end_ms\":99999999999999999999/" >"$SPOTRUN_STORE/summaries/c.json" &&
    from_logs_with c "0:crashed,1:done" &&
    printf "%s" "$good" >"$SPOTRUN_STORE/summaries/c.json" &&
    summary_matches c
'

test_expect_success 'a summary claiming fewer attempts than the logs: the logs win' '
    json "$SPOTRUN_STORE/summaries/k.json" "
d[\"attempts\"] = d[\"attempts\"][1:]
json.dump(d, open(\"$SPOTRUN_STORE/summaries/k.json\", \"w\"))
" &&
    from_logs_with k "0:vanished,1:done"
'

test_expect_success 'a directory or a symlink as its summary: the logs, and no crash' '
    rm "$SPOTRUN_STORE/summaries/n.json" && mkdir "$SPOTRUN_STORE/summaries/n.json" &&
    from_logs_with n "0:done" &&
    rm -r "$SPOTRUN_STORE/summaries/p.json" && ln -s /etc/passwd "$SPOTRUN_STORE/summaries/p.json" &&
    from_logs_with p "0:preempted,1:done"
'

test_expect_success 'an edited summary (another team, +100 h, 8 GPUs, $999/h): stats shows the logs' '
    "$SPOTRUN" run --run-id e --label team=nlp --price-per-hour 1 -- sh -c "exit 0" 2>e.log &&
    summary_matches e &&
    "$SPOTRUN" stats --prefix e --label team=nlp >e.before &&
    json "$SPOTRUN_STORE/summaries/e.json" "
d[\"labels\"] = {\"team\": \"vision\"}
a = d[\"attempts\"][0]
a[\"end_ms\"] += 100 * 3600 * 1000
a[\"gpus\"], a[\"price_per_hour\"] = 8, 999.0
json.dump(d, open(\"$SPOTRUN_STORE/summaries/e.json\", \"w\"))
" &&
    from_logs_with e "0:done" &&
    "$SPOTRUN" stats --prefix e --label team=nlp >e.after &&
    cat e.before e.after &&
    cmp e.before e.after &&
    grep -E "^ +1 +1 +0\.00 " e.after &&
    "$SPOTRUN" stats --prefix e --label team=vision >e.vision 2>&1 &&
    cat e.vision &&
    grep "no runs match" e.vision
'

test_expect_success 'a summary folded from a shorter log than the store holds: the logs win' '
    start_bg m sh -c "echo \$\$ >$TRASH/m.pid; exec sleep 300" &&
    wait_for "$SPOTRUN_STORE/summaries/m.json" "\"attempts\":\[{" 60 &&
    cp "$SPOTRUN_STORE/summaries/m.json" m.early &&
    kill -TERM "$(cat m.wpid)" &&
    expect_code 75 wait "$(cat m.wpid)" &&
    summary_matches m &&
    test "$(attempts m)" = "0:preempted" &&
    cp m.early "$SPOTRUN_STORE/summaries/m.json" &&
    from_logs_with m "0:preempted" &&
    line m | grep " state=preempted "
'

test_expect_success 'a summary that cannot be written is a warning, never the run failing' '
    mkdir -p "$SPOTRUN_STORE/summaries/w.json" &&
    "$SPOTRUN" run --run-id w -- sh -c "exit 0" 2>w.log &&
    grep "warning: cannot write summaries/w.json" w.log &&
    test "$(grep -c "cannot write summaries/w.json" w.log)" = 1 &&
    from_logs_with w "0:done"
'

test_done
