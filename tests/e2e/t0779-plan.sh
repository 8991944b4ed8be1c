#!/usr/bin/env bash
# spotrun plan over synthetic fleets whose answer is known (genstore.py
# --fleet, written through the store layout as event logs and summaries):
# a steady 8-GPU baseline plus daily 16-GPU bursts reserves 8 GPUs, pure
# bursts reserve none, the weekly costs in --json are the generator's
# arithmetic (docs/cost.md, "Capacity plan"), without --reserved-price it
# prints the curves and says what to pass, bad flags exit 64 with what is
# wrong, an empty store says so.
. "$(dirname "$0")/lib.sh"

gen=$SRCDIR/tests/e2e/genstore.py
printf '# instance_type spot on_demand\np4d.24xlarge 12.0 32.0\n' >prices.txt
win="--since 2026-11-30 --until 2026-12-13"

# check.py MODEL PLAN.json RESERVED: the plan's numbers from the model's
# attempts: one instance type, 8 GPUs a node, 1.5 spot and 4.0 on-demand
# per GPU-hour, two weeks.
cat >check.py <<'PY'
import json, math, sys
model, doc, res = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
H, lo = 3600000, 1795996800000
hi = lo + 14 * 24 * H
gpus = lambda m: m["nodes"] * m["gpus"]
D = sum((m["end_ms"] - m["start_ms"]) / H * gpus(m) for m in model)
lost = sum(m["lost_ms"] / H * gpus(m) for m in model)
stage = sum(m["stage"] / 3600 * gpus(m) for m in model)
eff = 1.5 * (1 + (lost + stage) / (D - lost - stage))
edges = sorted([(m["start_ms"], gpus(m)) for m in model] + [(m["end_ms"], -gpus(m)) for m in model])
hours, level, t = {}, 0, lo  # hours at each level
for when, d in edges + [(hi, 0)]:
    hours[level] = hours.get(level, 0) + (when - t) / H
    level, t = level + d, when
share = lambda L: sum(h for k, h in hours.items() if k >= L) / 336
L = 0
while share(L + 1) * eff > res:
    L += 1
burst = sum(h * max(0, k - L) * eff for k, h in hours.items())
want = dict(reserved_gpus=L, weekly_on_demand=D * 4.0 / 2, weekly_spot=D * eff / 2,
            weekly_reserved_spot=(L * 336 * res + burst) / 2)
want["weekly_saving"] = min(want["weekly_on_demand"], want["weekly_spot"]) - want["weekly_reserved_spot"]
[g] = doc["groups"]
assert g["name"] == "p4d.24xlarge", g["name"]
assert math.isclose(g["effective_spot_per_gpu_hour"], eff, abs_tol=1e-5), (g, eff)
assert math.isclose(doc["gpu_hours"], D, abs_tol=1e-5), (doc["gpu_hours"], D)
for k, v in want.items():
    assert math.isclose(g["plan"][k], v, rel_tol=1e-6, abs_tol=1e-5), (k, g["plan"][k], v)
teams = {}
for m in model:
    teams[m["team"]] = teams.get(m["team"], 0) + (m["end_ms"] - m["start_ms"]) / H * gpus(m)
got = {}
for w in doc["weekly"]:
    got[w["team"]] = got.get(w["team"], 0) + w["gpu_hours"]
assert teams.keys() == got.keys() and all(math.isclose(teams[k], got[k]) for k in teams), (teams, got)
print("L = %d; weekly: on-demand %.2f, spot %.2f, reserved + spot %.2f" % (
    L, want["weekly_on_demand"], want["weekly_spot"], want["weekly_reserved_spot"]))
PY

test_expect_success 'setup: a steady 8-GPU baseline plus bursts, and bursts alone' '
    "$PY" "$gen" "$TRASH/steady" --fleet steady8 --model steady.json &&
    "$PY" "$gen" "$TRASH/bursts" --fleet bursts --model bursts.json
'

test_expect_success 'steady 8 GPUs plus bursts: reserve 8, costs as the arithmetic says' '
    "$SPOTRUN" plan --store "$TRASH/steady" --prices prices.txt $win --reserved-price 0.9 \
        --json >steady.plan.json &&
    "$PY" check.py steady.json steady.plan.json 0.9 >steady.out &&
    cat steady.out &&
    json steady.plan.json "L = d[\"groups\"][0][\"plan\"][\"reserved_gpus\"]; assert 7 <= L <= 9, L" &&
    "$SPOTRUN" plan --store "$TRASH/steady" --prices prices.txt $win --reserved-price 0.9 >steady.txt &&
    cat steady.txt &&
    grep -q "^p4d.24xlarge: reserve 8 GPUs" steady.txt &&
    grep -q "peak 2 jobs and 24 GPUs at once" steady.txt
'

test_expect_success 'pure bursts: reserve none' '
    "$SPOTRUN" plan --store "$TRASH/bursts" --prices prices.txt $win --reserved-price 0.9 \
        --json >bursts.plan.json &&
    "$PY" check.py bursts.json bursts.plan.json 0.9 &&
    json bursts.plan.json "assert d[\"groups\"][0][\"plan\"][\"reserved_gpus\"] == 0"
'

test_expect_success 'a cheap enough reserved price reserves the bursts too' '
    "$SPOTRUN" plan --store "$TRASH/steady" --prices prices.txt $win --reserved-price 0.3 \
        --json >cheap.plan.json &&
    "$PY" check.py steady.json cheap.plan.json 0.3 &&
    json cheap.plan.json "assert d[\"groups\"][0][\"plan\"][\"reserved_gpus\"] == 24"
'

test_expect_success 'by job type: GPU-hours, utilization and queued hours per job_type label' '
    "$PY" - steady.json steady.plan.json <<-PY &&
	import json, math, sys
	model, doc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
	want = {}
	for m in model:
	    w = want.setdefault("pretrain" if m["run"] == "base" else "finetune",
	                        dict(runs=set(), gh=0, n=0, u=0))
	    w["runs"].add(m["run"])
	    w["gh"] += (m["end_ms"] - m["start_ms"]) / 3600000 * m["nodes"] * m["gpus"]
	    w["n"] += m["samples"]
	    w["u"] += m["util"] * m["samples"]
	got = {j["job_type"]: j for j in doc["by_job_type"]}
	assert sorted(got) == ["finetune", "pretrain"], got
	for k, w in want.items():
	    g = got[k]
	    assert g["runs"] == len(w["runs"]) and math.isclose(g["gpu_hours"], w["gh"]), (k, g, w)
	    assert math.isclose(g["gpu_util_mean"], w["u"] / w["n"]), (k, g, w)
	    assert g["queued_hours"] == 0 and g["failed_attempts"] == 0, (k, g)
	PY
    grep -E "^finetune +14 +1568\.0 +80% +0\.0 +0$" steady.txt &&
    grep -E "^pretrain +1 +2688\.0 +90% +0\.0 +0$" steady.txt &&
    "$PY" "$gen" "$TRASH/fixed" &&
    "$SPOTRUN" plan --store "$TRASH/fixed" --json >fixed.plan.json &&
    "$SPOTRUN" stats --store "$TRASH/fixed" --json >fixed.stats.json &&
    "$PY" - fixed.plan.json fixed.stats.json <<-PY
	import json, math, sys
	plan, stats = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
	[j] = plan["by_job_type"]  # no run has the label
	t = stats["total"]
	assert j["job_type"] == "-" and j["runs"] == 6, j
	# an hour between consecutive attempts: nlp-a 1, nlp-b 2, speech-a 1,
	# vision-a 2, vision-b 2
	assert math.isclose(j["queued_hours"], 8) and math.isclose(t["queued_hours"], 8), (j, t)
	assert math.isclose(j["gpu_hours"], t["gpu_hours"] + t["gpu_unknown_hours"]), (j, t)
	# crashed, oom, stalled, vanished; one running
	assert j["failed_attempts"] == 4, j
	PY
'

test_expect_success '--by team: one plan over every instance type' '
    "$SPOTRUN" plan --store "$TRASH/steady" --prices prices.txt $win --reserved-price 0.9 \
        --by team --json >team.json &&
    json team.json "assert [g[\"name\"] for g in d[\"groups\"]] == [\"all\"]; assert d[\"groups\"][0][\"plan\"][\"reserved_gpus\"] == 8"
'

test_expect_success 'without --reserved-price: the curves, and what to pass' '
    "$SPOTRUN" plan --store "$TRASH/steady" --prices prices.txt $win >curves.txt &&
    cat curves.txt &&
    grep -q "1-8: 100.0%  9-24: 29.2%" curves.txt &&
    grep -q "pass --reserved-price X" curves.txt &&
    "$SPOTRUN" plan --store "$TRASH/steady" --prices prices.txt $win --json >curves.json &&
    json curves.json "assert d[\"groups\"][0][\"plan\"] is None"
'

test_expect_success '--svg: weekly bars by team, the duration curve with the reserved line' '
    "$SPOTRUN" plan --store "$TRASH/steady" --prices prices.txt $win --reserved-price 0.9 \
        --svg plan.svg &&
    "$PY" - plan.svg <<-PY
	import sys, xml.etree.ElementTree as ET
	root = ET.parse(sys.argv[1]).getroot()
	ns = "{http://www.w3.org/2000/svg}"
	texts = [t.text for t in root.iter(ns + "text")]
	for want in ("infra", "nlp", "vision", "2026-W49", "2026-W50", "reserved: 8 GPUs"):
	    assert want in texts, (want, texts)
	bars = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
	assert len(bars) == 6, len(bars)  # 2 weeks x 3 teams
	assert any(l.get("stroke-dasharray") for l in root.iter(ns + "line")), "no reserved line"
	PY
'

test_expect_success 'bad flags exit 64 saying what is wrong' '
    expect_code 64 "$SPOTRUN" plan --store "$TRASH/steady" --by zone 2>err1 &&
    grep -q "bad --by \"zone\": give instance_type" err1 &&
    expect_code 64 "$SPOTRUN" plan --store "$TRASH/steady" --reserved-price cheap 2>err2 &&
    grep -q "for --reserved-price" err2 &&
    expect_code 64 "$SPOTRUN" plan --store "$TRASH/steady" --since yesterday 2>err3 &&
    grep -q "bad --since \"yesterday\"" err3 &&
    expect_code 64 "$SPOTRUN" plan --store "$TRASH/steady" --since 2026-12-10 --until 2026-12-01 2>err4 &&
    grep -q "is not before --until" err4 &&
    expect_code 64 "$SPOTRUN" plan --store "$TRASH/steady" --prices missing.txt 2>err5 &&
    grep -q "spotrun plan: --prices" err5 &&
    expect_code 64 "$SPOTRUN" plan --store "$TRASH/steady" --json --svg x.svg 2>err6 &&
    grep -q "give one of --json, --svg" err6
'

test_expect_success 'an empty store, and a window with nothing in it, say so' '
    mkdir -p "$TRASH/empty" &&
    "$SPOTRUN" plan --store "$TRASH/empty" >empty.txt &&
    grep -q "^no runs in file://" empty.txt &&
    "$SPOTRUN" plan --store "$TRASH/steady" --since 2027-01-01 >none.txt &&
    grep -q "^no runs match (15 runs in the store" none.txt
'

test_done
