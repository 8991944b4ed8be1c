#!/usr/bin/env bash
# spotrun stats over a store of known runs (genstore.py: 3 teams, 2 instance
# types, 2 zones, known preemptions, causes, lost work and prices): every
# number exact in text, JSON and CSV, on the file store and on S3; the
# filters, --by cause, the charts, bad flags and an empty store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"

gen=$SRCDIR/tests/e2e/genstore.py
check=$SRCDIR/tests/e2e/statscheck.py
printf '# instance_type spot on_demand\ng5.xlarge 0.40 1.00\np3.2xlarge 0.90 3.00\n' >prices.txt

# same_as_model STORE ARGS...: --json and --csv of stats ARGS equal what
# statscheck.py computes from the model.
same_as_model() {
    local store=$1
    shift
    "$SPOTRUN" stats --store "$store" --json "$@" >got.json &&
        "$PY" "$check" model.json json "$@" <got.json &&
        "$SPOTRUN" stats --store "$store" --csv "$@" >got.csv &&
        "$PY" "$check" model.json csv "$@" <got.csv
}

test_expect_success 'setup: the generated store (half the runs with a summary)' '
    "$PY" "$gen" "$TRASH/fleet" --model model.json &&
    test -f "$TRASH/fleet/summaries/nlp-a.json" && test ! -f "$TRASH/fleet/summaries/nlp-b.json" &&
    "$SPOTRUN" ls --store "$TRASH/fleet" >ls.out && test "$(grep -c . ls.out)" = 7
'

test_expect_success 'the totals, added up by hand' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --prices prices.txt --json >t.json &&
    "$PY" - <<-EOF
	import json
	t = json.load(open("t.json"))["total"]
	# hours: nlp-a 4+3, nlp-b (10+5+2) x 2 nodes, vision-a 6+6+3, vision-b 8+1+2,
	# speech-b 2, speech-a 12+4
	assert t["runs"] == 6 and t["attempts"] == 14, t
	assert abs(t["instance_hours"] - 85) < 1e-9, t
	# g5: 40 h x 0.40 = 16.00; p3: 45 h x 0.90 = 40.50; on demand 40 x 1 + 45 x 3
	assert abs(t["cost"] - 56.5) < 1e-9 and abs(t["on_demand_cost"] - 175) < 1e-9, t
	assert abs(t["saving"] - 118.5) < 1e-9, t
	assert t["preemptions"] == 4 and abs(t["preemptions_per_100h"] - 400 / 85) < 1e-5, t
	assert abs(t["mtbp_hours"] - 21.25) < 1e-9, t
	# lost: 0.5 + (1 + 0.25) x 2 + 2 + 1 + 0.5 + 0.5 + 1.5
	assert abs(t["lost_hours"] - 8.5) < 1e-9, t
	# GPU count unknown: vision-a 15 h; known: 7x1 + 34x4 + 11x1 + 2x1 + 16x1
	assert abs(t["gpu_unknown_hours"] - 15) < 1e-9 and abs(t["gpu_hours"] - 172) < 1e-9, t
	# queued: an hour between consecutive attempts: nlp-a 1, nlp-b 2, speech-a 1,
	# vision-a 2, vision-b 2
	assert abs(t["queued_hours"] - 8) < 1e-9, t
	e = t["ends"]
	assert (e["done"], e["preempted"], e["crashed"], e["oom"], e["stalled"], e["time-limit"],
	        e["budget"], e["vanished"], e["running"]) == (3, 4, 1, 1, 1, 1, 1, 1, 1), e
	EOF
'

test_expect_success 'the text table: by team and week, rows and totals' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --by team,week --prices prices.txt >tw.out &&
    cat tw.out &&
    head -1 tw.out | grep -E "^TEAM +WEEK +RUNS +ATT +INST-H +GPU-H +COST +ON-DEMAND +SAVING +PREEMPT +PER100H" &&
    grep -E "^nlp +2026-W49 +2 +5 +41\.00 +143\.00 +\\\$33\.40 +\\\$109\.00 +\\\$75\.60 +2 +4\.88 +20\.5 +3\.00 " tw.out &&
    grep -E "^speech +2026-W50 +1 +2 +16\.00 +16\.00 +\\\$6\.40 " tw.out &&
    grep -E "^vision +2026-W49 +2 +6 +26\.00 +11\.00\+\? " tw.out &&
    grep -E "^total +6 +14 +85\.00 .* \\\$56\.50 +\\\$175\.00 +\\\$118\.50 +4 +4\.71 +21\.2 +8\.50 " tw.out &&
    grep "GPU-H: 15.00 instance-hours with an unknown GPU count" tw.out
'

test_expect_success 'JSON and CSV equal the model: no grouping, by team,week, by instance_type,zone' '
    same_as_model "$TRASH/fleet" &&
    same_as_model "$TRASH/fleet" --by team,week --prices prices.txt &&
    same_as_model "$TRASH/fleet" --by instance_type,zone --prices prices.txt &&
    same_as_model "$TRASH/fleet" --by team,month,cloud,host --price-per-hour 0.5
'

test_expect_success 'unpriced hours are said, never a cost of 0: the start events'"'"' own prices' '
    same_as_model "$TRASH/fleet" --by team &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --by team >u.out && cat u.out &&
    grep -E "^nlp +2 +5 +41\.00 +143\.00 +- " u.out &&
    grep -E "^vision .* \\\$7\.50\* " u.out &&
    grep "unpriced: 68.00 instance-hours had no price" u.out
'

test_expect_success '--by cause: attempts grouped by how they ended' '
    same_as_model "$TRASH/fleet" --by cause --prices prices.txt &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --by cause >c.out &&
    grep -E "^preempted +4 +4 +44\.00 " c.out && grep -E "^running +1 +1 +4\.00 " c.out &&
    grep -E "^vanished +1 +1 +6\.00 " c.out
'

test_expect_success '--label, --prefix: only those runs' '
    same_as_model "$TRASH/fleet" --label team=vision --by instance_type --prices prices.txt &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --prefix nlp- --json >p.json &&
    "$PY" -c "import json; t = json.load(open(\"p.json\"))[\"total\"]; assert t[\"runs\"] == 2 and t[\"instance_hours\"] == 41, t" &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --label team=nobody >n.out &&
    grep "no runs match" n.out
'

test_expect_success '--since/--until clip attempts to the window and cut them at days' '
    same_as_model "$TRASH/fleet" --by team,day --since 2026-12-02 --until 2026-12-03 &&
    same_as_model "$TRASH/fleet" --by week --since 2026-12-02T12:00:00Z --until 2026-12-05T20:00Z &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --by day --since 2026-12-03 --until 2026-12-03 --json >d.json &&
    "$PY" -c "
import json; d = json.load(open(\"d.json\"))
g = d[\"groups\"]; assert [x[\"key\"][\"day\"] for x in g] == [\"2026-12-03\"], g
# vision-a attempt 2 ran 23:00 to 02:00: two of its three hours, and its end
assert g[0][\"instance_hours\"] == 2 and g[0][\"ends\"][\"done\"] == 1, g
assert d[\"since\"] == \"2026-12-03T00:00:00Z\" and d[\"until\"] == \"2026-12-04T00:00:00Z\", d"
'

test_expect_success 'the charts: valid SVG, rendered, and an HTML page with the table' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --by team --prices prices.txt --svg fleet.svg &&
    xmllint --noout fleet.svg &&
    grep -q "Spot cost per day" fleet.svg && grep -q "Preemptions per 100 instance-hours" fleet.svg &&
    grep -q "p3.2xlarge / us-east-1b" fleet.svg && grep -qF ">vision  \$15.90<" fleet.svg &&
    rsvg-convert -o fleet.png fleet.svg && test -s fleet.png &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --by team,week --html fleet.html &&
    grep -q "<svg" fleet.html && grep -q "Instance-hours per day" fleet.html &&
    grep -q "^nlp " fleet.html
'

test_expect_success 'bad flags are usage errors that say what is wrong' '
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --by "team,Zone" 2>e1 &&
    grep "bad --by key \"Zone\"" e1 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --by team,,week 2>e2 && grep "bad --by" e2 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --by team,team 2>e3 && grep "given twice" e3 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --since 2026-02-30 2>e4 &&
    grep "bad --since \"2026-02-30\"" e4 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --until yesterday 2>e5 && grep "bad --until" e5 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --since 2026-12-05 --until 2026-12-01 2>e6 &&
    grep "is not before --until" e6 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --json --csv 2>e7 &&
    grep "give one of --json, --csv, --svg, --html" e7 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --label team 2>e8 && grep "KEY=VALUE" e8 &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --prices nope.txt 2>e9 && grep "nope.txt" e9
'

test_expect_success 'an empty store: "no runs", exit 0; JSON with no groups' '
    mkdir empty &&
    "$SPOTRUN" stats --store "$TRASH/empty" >e.out && grep "^no runs in" e.out &&
    "$SPOTRUN" stats --store "$TRASH/empty" --by team --json >e.json &&
    "$PY" -c "import json; d = json.load(open(\"e.json\")); assert d[\"groups\"] == [] and d[\"total\"][\"runs\"] == 0, d"
'

s3_start

test_expect_success 'S3: the same store in a bucket gives the same numbers' '
    awscli s3 cp --recursive --quiet "$TRASH/fleet" "s3://bkt/fleet" &&
    same_as_model s3://bkt/fleet &&
    same_as_model s3://bkt/fleet --by team,week --prices prices.txt &&
    same_as_model s3://bkt/fleet --by instance_type,zone --prices prices.txt &&
    same_as_model s3://bkt/fleet --by cause --label team=nlp &&
    same_as_model s3://bkt/fleet --by team,day --since 2026-12-02 --until 2026-12-03 &&
    "$SPOTRUN" stats --store s3://bkt/fleet --by team,week --prices prices.txt >s3.out &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --by team,week --prices prices.txt | diff - s3.out
'

test_done
