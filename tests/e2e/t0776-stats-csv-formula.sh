#!/usr/bin/env bash
# stats --csv never hands a spreadsheet a formula: a text cell (a host, a
# zone, a label value...) that starts with = + - @, a tab or a CR is
# written as OWASP recommends, quoted with a ' before it; numbers (a
# negative saving) and the "-" of an unknown key stay as they are.
. "$(dirname "$0")/lib.sh"

# host RUN NAME: the host of RUN's first attempt becomes NAME (a store is
# anyone's to write); its summary goes, so stats reads the log.
host() {
    "$PY" - "$SPOTRUN_STORE/$1/events/000000.jsonl" "$2" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
o = json.loads(lines[0])
o["host"] = sys.argv[2]
open(sys.argv[1], "w").write("\n".join([json.dumps(o)] + lines[1:]))
PY
    rm -f "$SPOTRUN_STORE/summaries/$1.json"
}

test_expect_success 'runs labelled team=-1-2 and team=ok, on hosts =cmd and +1' '
    "$SPOTRUN" run --run-id f1 --label team=-1-2 -- true 2>/dev/null &&
    "$SPOTRUN" run --run-id f2 --label team=ok -- true 2>/dev/null &&
    host f1 "=cmd|\" /c calc\"!A1" &&
    host f2 "+1"
'

test_expect_success 'stats --csv: those cells start with a quote, inside double quotes' '
    "$SPOTRUN" stats --by team,host --csv >out.csv &&
    cat out.csv &&
    grep "^\"'"'"'-1-2\",\"'"'"'=cmd|\"\" /c calc\"\"!A1\"," out.csv &&
    grep "^ok,\"'"'"'+1\"," out.csv &&
    ! grep -E "(^|,)[=+@-][^0-9]" out.csv
'

test_expect_success 'the table itself prints the values as they are' '
    "$SPOTRUN" stats --by team >out.txt &&
    grep "^-1-2 " out.txt && grep "^ok " out.txt
'

test_done
