#!/usr/bin/env bash
# spotrun report --fleet over S3 reads what stats reads, plus a constant
# (docs/cost.md, "Fleet page"): a repeated read of 40 runs makes no more
# requests than `stats` + 2, and a sweep adds what `sweep show` reads of
# it; the page's totals are stats'. Requests are counted by the test
# server (S3RVER_REQUEST_LOG, s3lib.sh's s3_count).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start
TOOL=${RUNSUM_TOOL:-$SRCDIR/build/tests/runsum_tool}
RUNS=40
cat >trial.sh <<\EOF
#!/bin/sh
"$SPOTRUN_BIN" metric --step 1 loss="0.$SPOTRUN_PARAM_N" || exit 1
EOF
chmod +x trial.sh
export SPOTRUN_BIN=$SPOTRUN
# totals FILE: the #totals element's data- attributes, one per line
totals() { grep -o "<section id=\"totals\"[^>]*>" "$1" | grep -oE "data-[a-z-]+=\"[^\"]*\""; }

test_expect_success 'setup: 40 runs with their summaries in the bucket, read once (the snapshot)' '
    "$PY" "$SRCDIR/tests/e2e/genstore.py" gen --synthetic $RUNS --summaries none &&
    "$TOOL" fold gen &&
    "$PY" "$SRCDIR/tests/s3/seed.py" gen "$TRASH/s3data/bkt/$test_name" &&
    "$SPOTRUN" stats --by team >/dev/null
'

test_expect_success 'a repeated read: report --fleet makes at most stats'"'"' requests + 2' '
    s3_count stats.req "$SPOTRUN" stats --by team,week >stats.out &&
    s3_count fleet.req "$SPOTRUN" report --fleet -o page 2>fleet.err &&
    cat stats.req fleet.req fleet.err &&
    grep "wrote page/index.html ($RUNS runs, 0 sweeps)" fleet.err &&
    test "$(s3_requests fleet.req)" -le $(($(s3_requests stats.req) + 2)) &&
    test "$(s3_requests fleet.req PUT)" = 0
'

test_expect_success 'the page'"'"'s totals are stats'"'"' (the same read)' '
    "$SPOTRUN" stats --by team --json >stats.json &&
    totals page/index.html >got &&
    cat got &&
    json stats.json "t = d[\"total\"]; print(\"data-runs=\\\"%d\\\"\" % t[\"runs\"])" >want.runs &&
    grep -Fx -f want.runs got &&
    json stats.json "t = d[\"total\"]; print(\"data-gpu-hours=\\\"%.6f\\\"\" % t[\"gpu_hours\"])" >want.gpu &&
    grep -Fx -f want.gpu got
'

test_expect_success 'a sweep adds what sweep show reads of it, and a listing' '
    "$SPOTRUN" sweep init sw --label team=vision --param n=1..2 -- "$TRASH/trial.sh" &&
    "$SPOTRUN" sweep work sw --until-empty --poll 100ms >work.log 2>&1 &&
    "$SPOTRUN" sweep show sw >/dev/null &&
    "$SPOTRUN" stats >/dev/null &&
    s3_count stats2.req "$SPOTRUN" stats --by team,week >/dev/null &&
    s3_count show.req "$SPOTRUN" sweep show sw >/dev/null &&
    s3_count fleet2.req "$SPOTRUN" report --fleet -o page 2>fleet2.err &&
    cat fleet2.err &&
    grep "wrote page/index.html ($((RUNS + 2)) runs, 1 sweeps)" fleet2.err &&
    say "stats $(s3_requests stats2.req), sweep show $(s3_requests show.req), report --fleet $(s3_requests fleet2.req)" &&
    test "$(s3_requests fleet2.req)" -le $(($(s3_requests stats2.req) + $(s3_requests show.req) + 2))
'

s3_stop
test_done
