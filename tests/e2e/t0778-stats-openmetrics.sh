#!/usr/bin/env bash
# spotrun stats --format openmetrics over a store of known runs
# (genstore.py): Prometheus' own checker (promtool check metrics) finds
# nothing to say, every sample equals the group's number in stats --json
# (hours as seconds), label values from the store are escaped so that a
# hostile one stays one value, and a bad format is refused.
. "$(dirname "$0")/lib.sh"

gen=$SRCDIR/tests/e2e/genstore.py
printf '# instance_type spot on_demand\ng5.xlarge 0.40 1.00\np3.2xlarge 0.90 3.00\n' >prices.txt

# equal_to_json PROM JSON: every sample of PROM is its group's value in
# JSON, every group of JSON has its samples, and nothing else is there.
cat >equal.py <<'PY'
import json, math, re, sys
prom, doc = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
by = doc["by"]
want = {}
for g in doc["groups"]:
    key = tuple(g["key"][b] if isinstance(g["key"], dict) else g["key"][i] for i, b in enumerate(by))
    for name, field, scale in (("runs", "runs", 1), ("attempts", "attempts", 1),
                               ("instance_seconds", "instance_hours", 3600),
                               ("gpu_seconds", "gpu_hours", 3600), ("cost_dollars", "cost", 1),
                               ("on_demand_cost_dollars", "on_demand_cost", 1),
                               ("preemptions", "preemptions", 1), ("signal_stops", "signal_stops", 1),
                               ("lost_work_seconds", "lost_hours", 3600),
                               ("lost_work_cost_dollars", "lost_cost", 1),
                               ("checkpoint_seconds", "checkpoint_seconds", 1)):
        v = g[field]
        if v is not None:
            want[("spotrun_" + name, key)] = v * scale
label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
got = {}
assert prom.endswith("# EOF\n"), "no # EOF at the end"
for line in prom.splitlines():
    if line.startswith("#"):
        continue
    m = re.fullmatch(r"([a-z_]+)\{(.*)\} (\S+)", line)
    assert m, "not a sample with labels: %r" % line
    labels = {k: re.sub(r"\\(.)", lambda x: "\n" if x.group(1) == "n" else x.group(1), v)
              for k, v in label.findall(m.group(2))}
    assert list(labels) == by, (labels, by)
    got[(m.group(1), tuple(labels[b] for b in by))] = float(m.group(3))
got = {k: v for k, v in got.items() if k[0] != "spotrun_gpu_utilization_ratio"}
missing = set(want) - set(got)
extra = set(got) - set(want)
assert not missing and not extra, ("missing", sorted(missing)[:5], "extra", sorted(extra)[:5])
bad = [(k, want[k], got[k]) for k in want if not math.isclose(want[k], got[k], rel_tol=1e-9, abs_tol=1e-9)]
assert not bad, bad[:5]
print("%d samples equal stats --json" % len(got))
PY

test_expect_success 'setup: the generated store' '
    "$PY" "$gen" "$TRASH/fleet" --model model.json
'

test_expect_success 'promtool check metrics finds nothing to say' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --prices prices.txt --format openmetrics >m.prom &&
    head -4 m.prom &&
    promtool check metrics <m.prom >lint.out 2>&1 &&
    cat lint.out &&
    test ! -s lint.out
'

test_expect_success 'every sample equals stats --json, labelled by team, instance type and zone' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --prices prices.txt --json --by team,instance_type,zone >g.json &&
    "$PY" equal.py m.prom g.json
'

test_expect_success 'with --by and a window: the groups of stats --json for the same flags' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --prices prices.txt --by team,week --since 2026-12-01 \
        --format openmetrics >w.prom &&
    "$SPOTRUN" stats --store "$TRASH/fleet" --prices prices.txt --by team,week --since 2026-12-01 \
        --json >w.json &&
    promtool check metrics <w.prom &&
    "$PY" equal.py w.prom w.json &&
    grep -q "week=\"2026-W" w.prom
'

# A tampered record's host (the loader keeps quotes and backslashes, and
# turns control characters into "?"): one label value, escaped, whose
# unescaped text is the host stats --json gives.
test_expect_success 'a hostile host from a tampered record stays one escaped value' '
    mkdir -p "$TRASH/odd/evil/events" &&
    "$PY" -c "import json, sys; print(json.dumps(dict(event=\"start\", attempt=0, unix_ms=1700000000000, host=sys.argv[1], pid=1, cloud=\"aws\", instance_type=\"g5.xlarge\", zone=\"z\")))" \
        "a\"b\\c} x=\"y" >"$TRASH/odd/evil/events/000000.jsonl" &&
    "$SPOTRUN" stats --store "$TRASH/odd" --by host,zone --format openmetrics >o.prom &&
    grep "^spotrun_runs" o.prom >runs.line &&
    cat runs.line &&
    test "$(cat runs.line)" = "spotrun_runs{host=\"a\\\"b\\\\c} x=\\\"y\",zone=\"z\"} 1" &&
    promtool check metrics <o.prom &&
    "$SPOTRUN" stats --store "$TRASH/odd" --json --by host,zone >o.json &&
    "$PY" equal.py o.prom o.json
'

# The example dashboard asks only for metrics and labels stats prints.
test_expect_success 'examples/grafana: every metric and label its queries use is printed' '
    "$PY" - "$SRCDIR/examples/grafana/spotrun-fleet.json" m.prom <<-PY
	import json, re, sys
	d = json.load(open(sys.argv[1]))
	prom = open(sys.argv[2]).read()
	have = set(re.findall(r"^# TYPE (spotrun_[a-z_]+) gauge$", prom, re.M))
	labels = set(re.findall(r"([a-z_]+)=\"", prom))
	exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
	exprs.append(d["templating"]["list"][1]["query"])
	used = set(m for e in exprs for m in re.findall(r"spotrun_[a-z_]+", e))
	assert used and used <= have, sorted(used - have)
	by = set(l for e in exprs for g in re.findall(r"by \(([a-z_, ]+)\)", e) for l in g.split(","))
	by |= set(re.findall(r"([a-z_]+)=~", " ".join(exprs)))
	by = set(x.strip() for x in by)
	assert by <= labels, sorted(by - labels)
	print(len(d["panels"]), "panels,", len(used), "metrics,", sorted(by))
	PY
'

test_expect_success 'quota use: each quota in force, as quota show --json says, and promtool is content' '
    cp -r "$TRASH/fleet" "$TRASH/quotas" &&
    "$SPOTRUN" quota set --store "$TRASH/quotas" team=vision --gpu-hours 500 --max-cost 40 \
        --max-concurrent 3 --per month --by ana &&
    "$SPOTRUN" quota set --store "$TRASH/quotas" team=nlp --gpu-hours 20 --by ana &&
    "$SPOTRUN" stats --store "$TRASH/quotas" --format openmetrics >q.prom &&
    "$SPOTRUN" quota show --store "$TRASH/quotas" --json >q.json &&
    promtool check metrics <q.prom >qlint.out 2>&1 &&
    test ! -s qlint.out &&
    "$PY" - q.prom q.json <<-PY &&
	import json, math, re, sys
	prom, show = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
	got = {}
	for name, k, v, per, val in re.findall(
	        r"^(spotrun_quota_[a-z_]+)\{quota_key=\"([^\"]*)\",quota_value=\"([^\"]*)\",per=\"([a-z]+)\"\} (\S+)$",
	        prom, re.M):
	    got[(name, "%s=%s" % (k, v), per)] = float(val)
	want = {}
	for q in show["quotas"]:
	    key, per, lim, use = q["label"], q["per"], q["limits"], q["use"]
	    want[("spotrun_quota_gpu_seconds", key, per)] = use["gpu_hours"] * 3600
	    want[("spotrun_quota_cost_dollars", key, per)] = use["cost"]
	    want[("spotrun_quota_running_runs", key, per)] = use["running"]
	    for name, v in (("spotrun_quota_gpu_limit_seconds", lim["gpu_hours"] * 3600),
	                    ("spotrun_quota_cost_limit_dollars", lim["max_cost"]),
	                    ("spotrun_quota_concurrent_limit_runs", lim["max_concurrent"])):
	        if v:
	            want[(name, key, per)] = v
	assert sorted(got) == sorted(want), (sorted(got), sorted(want))
	for k, v in want.items():
	    assert math.isclose(got[k], v, rel_tol=1e-6, abs_tol=1e-5), (k, got[k], v)
	assert got[("spotrun_quota_gpu_limit_seconds", "team=vision", "month")] == 500 * 3600
	assert got[("spotrun_quota_concurrent_limit_runs", "team=vision", "month")] == 3
	print(len(got), "quota samples equal quota show --json")
	PY
    test "$(grep -c "^spotrun_quota_" m.prom)" = 0
'

test_expect_success 'an unknown format, or two outputs at once, is a usage error' '
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --format prometheus 2>f.err &&
    grep "unknown --format \"prometheus\": the one format is openmetrics" f.err &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --format openmetrics --json 2>g.err &&
    grep "give one of" g.err
'

test_done
