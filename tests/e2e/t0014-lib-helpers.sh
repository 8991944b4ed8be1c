#!/usr/bin/env bash
# The helpers lib.sh gives every script (tests/README.md, "Writing one"),
# defined there once rather than copied into the scripts that use them.
. "$(dirname "$0")/lib.sh"

test_expect_success 'json FILE CODE: the assertions hold, or it fails' '
    printf "{\"state\": \"done\", \"attempts\": 3}" >"it'"'"'s.json" &&
    json "it'"'"'s.json" "assert d[\"state\"] == \"done\" and d[\"attempts\"] == 3" &&
    ! json "it'"'"'s.json" "assert d[\"attempts\"] == 4" 2>err &&
    grep AssertionError err
'

test_expect_success 'events RUN: every line of the run'"'"'s event logs, in the logs'"'"' order' '
    mkdir -p "$SPOTRUN_STORE/r/events" &&
    echo "{\"event\":\"start\",\"attempt\":1}" >"$SPOTRUN_STORE/r/events/000001.jsonl" &&
    echo "{\"event\":\"start\",\"attempt\":0}" >"$SPOTRUN_STORE/r/events/000000.jsonl" &&
    events r >all &&
    test "$(sed -n "s/.*\"attempt\":\([0-9]\).*/\1/p" all | tr -d "\n")" = 01
'

test_expect_success 'free_port: a port of 127.0.0.1 that can be bound' '
    port=$(free_port) &&
    test "$port" -gt 0 && test "$port" -lt 65536 &&
    "$PY" -c "import socket, sys; socket.socket().bind((\"127.0.0.1\", int(sys.argv[1])))" "$port"
'

test_expect_success 'test_skip: counted and said as TAP says a skip' '
    cat >skipper.sh <<-\EOS &&
	. "$SRCDIR/tests/e2e/lib.sh"
	test_skip "needs a GPU" "no nvidia-smi here"
	test_done
	EOS
    TEST_TMP=$TRASH/sub bash skipper.sh >out &&
    grep -x "ok 1 - needs a GPU # skip: no nvidia-smi here" out &&
    grep -x "1 passed, 0 failed" out
'

test_done
