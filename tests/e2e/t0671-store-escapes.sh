#!/usr/bin/env bash
# Strings from the store never reach a terminal raw: ESC and BEL in a start
# event's host (or any string of an event log), a manifest's host, the
# LEASE's host or a sweep parameter's value. show, ls and sweep show still
# work and print no control byte: the event log's strings are printed with
# '?' for each control, and the structured objects (manifest, LEASE, sweep
# definition) that hold one are refused as malformed (SECURITY.md).
. "$(dirname "$0")/lib.sh"

EVIL=$(printf 'evil\033]0;pwned\007\033[2J')

# edit FILE KEY VALUE: sets KEY to VALUE in a JSON object file (an event
# log's first line).
edit() {
    "$PY" - "$@" <<'PY'
import json, sys
path, key, value = sys.argv[1:4]
text = open(path).read()
try:  # one object (a manifest, a LEASE)
    o = json.loads(text)
    o[key] = value
    text = json.dumps(o)
except json.JSONDecodeError:  # an event log: its first line
    lines = text.split("\n")
    o = json.loads(lines[0])
    o[key] = value
    text = "\n".join([json.dumps(o)] + lines[1:])
open(path, "w").write(text)
PY
}

# clean FILE: FILE holds no ESC and no BEL byte.
clean() {
    if [ "$(grep -c "$(printf '[\033\007]')" "$1")" != 0 ]; then
        say "a control byte reached $1:"
        cat -v "$1"
        return 1
    fi
}

test_expect_success 'a run with a checkpoint' '
    "$SPOTRUN" run --run-id esc -- sh -c \
        "echo a >\"\$SPOTRUN_CKPT_DIR/a\" && \"$SPOTRUN\" commit --step 1" 2>run.log &&
    test -f "$SPOTRUN_STORE/esc/ckpt/0000000001/MANIFEST.json"
'

test_expect_success 'a start event host with ESC and BEL: show and ls print it with ? for each' '
    edit "$SPOTRUN_STORE/esc/events/000000.jsonl" host "$EVIL" &&
    rm -f "$SPOTRUN_STORE/summaries/esc.json" &&
    "$SPOTRUN" show esc >show.out 2>show.err &&
    clean show.out && clean show.err &&
    grep "^attempt 0 .* on evil?\]0;pwned??\[2J: done" show.out &&
    "$SPOTRUN" ls >ls.out 2>ls.err &&
    clean ls.out && clean ls.err &&
    grep "^esc  *done" ls.out
'

test_expect_success 'a LEASE host with ESC: the lease is malformed, show still works' '
    edit "$SPOTRUN_STORE/esc/LEASE" host "$EVIL" &&
    "$SPOTRUN" show esc >show.out 2>show.err &&
    clean show.out && clean show.err &&
    grep "^state: *done" show.out &&
    ! grep "^lease:" show.out
'

test_expect_success 'a manifest host with ESC: the checkpoint is malformed, show still works' '
    edit "$SPOTRUN_STORE/esc/ckpt/0000000001/MANIFEST.json" host "$(printf "ckpt\033[2Jhost")" &&
    "$SPOTRUN" show esc >show.out 2>show.err &&
    clean show.out && clean show.err &&
    grep "^state: *done" show.out &&
    ! grep "ckpt.*host" show.out
'

test_expect_success 'sweep init refuses a parameter value with a control character' '
    expect_code 64 "$SPOTRUN" sweep init bad --param "lr=1,$EVIL" -- true 2>init.err &&
    grep "control characters" init.err
'

test_expect_success 'a sweep definition with ESC in a value: sweep show says it is malformed' '
    "$SPOTRUN" sweep init sw --param lr=1,2 -- true &&
    "$PY" - "$SPOTRUN_STORE/sweeps/sw/def/000000.json" "$EVIL" <<-\PY &&
	import json, sys
	o = json.load(open(sys.argv[1]))
	o["trials"][1]["lr"] = sys.argv[2]
	json.dump(o, open(sys.argv[1], "w"))
	PY
    ! "$SPOTRUN" sweep show sw >sw.out 2>sw.err &&
    clean sw.out && clean sw.err &&
    grep "malformed" sw.err
'

test_done
