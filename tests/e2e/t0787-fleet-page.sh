#!/usr/bin/env bash
# spotrun report --fleet -o DIR in a real browser (Debian's chromium,
# headless; scripts/deps.sh installs it, and without it this test fails):
# over a generated fleet (genstore.py --fleet steady8, its summaries
# folded), two real runs and a two-trial sweep, the page loads with its
# script run and no console error, its screenshot is a PNG of the size
# asked and not blank, the figures in its DOM equal stats --json's (total
# and per team, also under --label), a scripted sort and label filter
# (the page's ?sort=&dir=&label= hook) order and hide the runs' rows,
# and hostile strings (a store path, and instance type, zone and host in
# a run's summary re-signed as a tool that knows the digest would) are
# shown escaped, with no element of theirs in the DOM.
. "$(dirname "$0")/lib.sh"

gen=$SRCDIR/tests/e2e/genstore.py
TOOL=${RUNSUM_TOOL:-$SRCDIR/build/tests/runsum_tool}
export SPOTRUN_STORE="$TRASH/fleet<i id=inj-store>"
printf '# instance_type spot on_demand\np4d.24xlarge 12.0 32.0\n' >prices.txt
EVIL_TYPE='<img id=inj-type src=x onerror=document.title=1>'
EVIL_ZONE='</td><script id=inj-zone>document.title=2</script>'
EVIL_HOST='<b id=inj-host>h</b>'

# browse OUT ARG...: chromium, headless, with a profile of its own under
# $TRASH, console messages logged to OUT.err.
browse() {
    local out=$1
    shift
    timeout 120 chromium --headless=new --no-sandbox --disable-gpu \
        --user-data-dir="$TRASH/chromium-$out" --enable-logging=stderr --v=0 "$@" \
        >"$out" 2>"$out.err"
}
page() { printf 'file://%s/out/index.html%s' "$TRASH" "${1:-}"; }

# forge.py SUMMARY KEY=VALUE...: sets every attempt's KEY in a run's
# summary and signs it again as runsum.c does (XXH64 of jansson's compact,
# key-sorted dump, through ctypes).
cat >forge.py <<'PY'
import ctypes, json, sys
J, X = ctypes.CDLL("libjansson.so.4"), ctypes.CDLL("libxxhash.so.0")
J.json_loads.restype = ctypes.c_void_p
J.json_loads.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
J.json_dumps.restype, J.json_dumps.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t]
X.XXH64.restype = ctypes.c_uint64
X.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
d = json.load(open(sys.argv[1]))
for a in d["attempts"]:
    for kv in sys.argv[2:]:
        k, v = kv.split("=", 1)
        a[k] = v
d.pop("digest", None)
text = ctypes.string_at(J.json_dumps(J.json_loads(json.dumps(d).encode(), 0, None), 0x20 | 0x80))
d["digest"] = "%016x" % X.XXH64(text, len(text), 0)
json.dump(d, open(sys.argv[1], "w"))
PY

# dom.py DOM CHECK...: the dumped DOM's elements (tag, attributes, text)
# for the checks below; exits 1 naming what is wrong.
cat >dom.py <<'PY'
import html.parser, json, math, sys
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.el, self.stack, self.text = [], [], []
    def handle_starttag(self, tag, attrs):
        e = {"tag": tag, "a": dict(attrs), "text": "", "cells": []}
        self.el.append(e)
        if tag == "tr":
            self.tr = e
        elif tag == "td":
            self.tr["cells"].append(e)
        if tag not in ("meta", "input", "br", "img", "rect", "line", "path", "circle"):
            self.stack.append(e)
    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()["tag"] != tag:
            pass
    def handle_data(self, data):
        self.text.append(data)
        for e in self.stack:
            e["text"] += data
p = P()
p.feed(open(sys.argv[1]).read())
el = p.el
body = [e for e in el if e["tag"] == "body"][0]["a"]
rows = [e for e in el if e["tag"] == "tr" and "data-labels" in e["a"]]
def close(a, b):
    if b is None:
        return a == ""
    return math.isclose(float(a), b, rel_tol=1e-9, abs_tol=2e-6)
def figures(a, g):
    for k, attr in (("runs", "data-runs"), ("gpu_hours", "data-gpu-hours"),
                    ("cost", "data-cost"), ("preemptions", "data-preemptions")):
        assert close(a[attr], g[k]), (k, a[attr], g[k])
for check in sys.argv[2:]:
    what, _, arg = check.partition("=")
    if what == "ran":
        assert body.get("data-script") == "ok" and "data-js-error" not in body, body
    elif what == "stats":  # the figures of #totals and #teams are stats --json's
        d = json.load(open(arg))
        tot = [e for e in el if e["a"].get("id") == "totals"][0]["a"]
        figures(tot, d["total"])
        teams = {e["a"]["data-team"]: e["a"] for e in el if "data-team" in e["a"]}
        want = {g["key"]["team"]: g for g in d["groups"]}
        assert teams.keys() == want.keys(), (teams.keys(), want.keys())
        for t in want:
            figures(teams[t], want[t])
        print("page = stats:", d["total"]["gpu_hours"], "GPU-hours,", sorted(want))
    elif what == "sorted":  # KEY:desc|asc by the column's data-v
        key, way = arg.split(":")
        t = [e for e in el if e["a"].get("id") == "runs"][0]["a"]
        assert t.get("data-sorted") == key + " " + way, t
        col = [e["a"].get("data-key") for e in el if e["tag"] == "th" and "data-key" in e["a"]]
        vals = [float(r["cells"][col.index(key)]["a"]["data-v"] or "-inf") for r in rows]
        assert vals == sorted(vals, reverse=way == "desc") and len(set(vals)) > 1, vals
    elif what == "shown":  # LABEL: the rows without it hidden, #shown counts the rest
        vis = [r for r in rows if "hidden" not in r["a"]]
        assert vis and len(vis) < len(rows), (len(vis), len(rows))
        assert all(arg in r["a"]["data-labels"].split() for r in vis)
        assert all(arg not in r["a"]["data-labels"].split() for r in rows if r not in vis)
        shown = [e for e in el if e["a"].get("id") == "shown"][0]["text"]
        assert shown == str(len(vis)), (shown, len(vis))
    elif what == "escaped":  # a hostile string shown as text, no element of it
        assert arg in "".join(p.text), arg
        inj = [e for e in el if e["a"].get("id", "").startswith("inj-")]
        assert not inj, inj
        assert len([e for e in el if e["tag"] == "script"]) == 1
        assert not [e for e in el if e["tag"] == "img"]
        assert [e for e in el if e["tag"] == "title"][0]["text"] == "fleet - spotrun report"
    else:
        sys.exit("dom.py: unknown check " + check)
PY

cat >trial.sh <<\EOF
#!/bin/sh
"$SPOTRUN_BIN" metric --step 1 loss="0.$SPOTRUN_PARAM_N" || exit 1
EOF
chmod +x trial.sh
export SPOTRUN_BIN=$SPOTRUN

test_expect_success 'chromium is installed (scripts/deps.sh)' '
    command -v chromium
'

test_expect_success 'setup: a fleet, a run with hostile strings, real runs and a sweep' '
    "$PY" "$gen" "$SPOTRUN_STORE" --fleet steady8 --model model.json
    "$TOOL" fold "$SPOTRUN_STORE"
    "$PY" forge.py "$SPOTRUN_STORE/summaries/burst-00.json" \
        "instance_type=$EVIL_TYPE" "zone=$EVIL_ZONE" "host=$EVIL_HOST"
    "$SPOTRUN" stats --by zone --json >zones.json
    "$SPOTRUN" run --run-id real-1 --label team=nlp --label user=ana -- true &&
    "$SPOTRUN" run --run-id real-2 --label team=speech -- true &&
    "$SPOTRUN" sweep init sw --label team=vision --param n=1..2 -- "$TRASH/trial.sh" &&
    "$SPOTRUN" sweep work sw --until-empty --poll 100ms >work.log 2>&1 &&
    grep -F "\"zone\": \"$EVIL_ZONE\"" zones.json
'

test_expect_success 'report --fleet -o out writes out/index.html, one page, charts inline' '
    "$SPOTRUN" report --fleet -o out --prices prices.txt --reserved-price 0.9 2>err &&
    cat err &&
    grep "wrote out/index.html (19 runs, 1 sweeps)" err &&
    test "$(ls out)" = index.html &&
    grep -c "<svg" out/index.html >svgs && test "$(cat svgs)" = 2 &&
    refute grep -E "(src|href)=\"(https?:)?//" out/index.html
'

test_expect_success 'the page loads: its script ran, no console error' '
    browse dom.html --dump-dom "$(page)" &&
    "$PY" dom.py dom.html ran &&
    refute grep -E "CONSOLE|Uncaught" dom.html.err
'

test_expect_success 'a screenshot of the page: a PNG of the size asked, not blank' '
    browse shot.out --screenshot="$TRASH/shot.png" --window-size=1200,900 "$(page)" &&
    "$PY" "$SRCDIR/tests/e2e/pngcheck.py" shot.png 1200 900 &&
    refute grep -E "CONSOLE|Uncaught" shot.out.err
'

test_expect_success 'the figures in the DOM are stats --json'"'"'s: the total and each team' '
    "$SPOTRUN" stats --by team --prices prices.txt --json >stats.json &&
    "$PY" dom.py dom.html stats=stats.json &&
    json stats.json "assert d[\"total\"][\"runs\"] == 19 and d[\"total\"][\"preemptions\"] == 14, d[\"total\"]"
'

test_expect_success 'under --label and a window: the same as stats with them' '
    "$SPOTRUN" report --fleet -o out --prices prices.txt --label team=nlp \
        --since 2026-11-30 --until 2026-12-06 &&
    "$SPOTRUN" stats --by team --prices prices.txt --label team=nlp \
        --since 2026-11-30 --until 2026-12-06 --json >nlp.json &&
    browse nlp.html --dump-dom "$(page)" &&
    "$PY" dom.py nlp.html ran stats=nlp.json &&
    json nlp.json "assert list(g[\"key\"][\"team\"] for g in d[\"groups\"]) == [\"nlp\"]"
'

test_expect_success 'a click on a header sorts the runs, the label filter hides the others' '
    "$SPOTRUN" report --fleet -o out --prices prices.txt &&
    browse sort.html --dump-dom "$(page "?sort=gpu_hours&dir=desc")" &&
    "$PY" dom.py sort.html ran sorted=gpu_hours:desc &&
    browse asc.html --dump-dom "$(page "?sort=last_start")" &&
    "$PY" dom.py asc.html ran sorted=last_start:asc &&
    browse filter.html --dump-dom "$(page "?label=team=nlp")" &&
    "$PY" dom.py filter.html ran shown=team=nlp &&
    browse ana.html --dump-dom "$(page "?label=ana")" &&
    "$PY" dom.py ana.html ran shown=user=ana &&
    grep -F "<td data-v=\"real-1\">real-1</td>" filter.html
'

test_expect_success 'hostile strings are shown escaped, no element of theirs in the DOM' '
    "$PY" dom.py dom.html ran "escaped=$EVIL_TYPE" "escaped=$EVIL_ZONE" \
        "escaped=$SPOTRUN_STORE" &&
    grep -F "&lt;/td&gt;&lt;script id=inj-zone&gt;" out/index.html
'

test_expect_success 'the sweep: its trials by state and its best' '
    grep -F "<td>sw</td>" dom.html >sw.row &&
    grep -E "<td>sw</td><td class=\"n\" data-v=\"2.000000\">2</td><td>done 2 </td><td>loss 0.1 \(trial 0\)</td>" sw.row
'

test_expect_success 'quota use: each quota in force with its use and limits, as quota show --json' '
    "$SPOTRUN" quota set team=vision --gpu-hours 500 --max-cost 40 --max-concurrent 3 \
        --per month --by ana &&
    "$SPOTRUN" quota set team=nlp --gpu-hours 20 --by ana &&
    "$SPOTRUN" report --fleet -o outq --prices prices.txt &&
    "$SPOTRUN" quota show --json >quotas.json &&
    browse q.html --dump-dom "file://$TRASH/outq/index.html" &&
    refute grep -E "CONSOLE|Uncaught" q.html.err &&
    "$PY" - q.html quotas.json <<-PY
	import html.parser, json, math, sys
	rows = {}
	class P(html.parser.HTMLParser):
	    def handle_starttag(self, tag, attrs):
	        a = dict(attrs)
	        if tag == "tr" and "data-quota" in a:
	            self.row = rows.setdefault(a["data-quota"], {})
	        elif tag == "td" and getattr(self, "row", None) is not None:
	            self.row.update({k: float(v) for k, v in a.items() if k.startswith("data-") and k != "data-v"})
	    def handle_endtag(self, tag):
	        if tag == "tr":
	            self.row = None
	P().feed(open(sys.argv[1]).read())
	show = json.load(open(sys.argv[2]))["quotas"]
	assert sorted(rows) == sorted(q["label"] for q in show), (rows, show)
	for q in show:
	    r, u, l = rows[q["label"]], q["use"], q["limits"]
	    for attr, want in (("data-gpu-hours", u["gpu_hours"]), ("data-cost", u["cost"]),
	                       ("data-running", u["running"]), ("data-gpu-hours-limit", l["gpu_hours"]),
	                       ("data-cost-limit", l["max_cost"]),
	                       ("data-running-limit", l["max_concurrent"])):
	        assert math.isclose(r[attr], want, abs_tol=1e-5), (q["label"], attr, r[attr], want)
	assert rows["team=vision"]["data-gpu-hours-limit"] == 500, rows
	print(len(rows), "quotas on the page equal quota show --json")
	PY
'

test_expect_success 'usage errors exit 64 saying what to give; the window'"'"'s environment twins leave a run'"'"'s report alone' '
    expect_code 64 "$SPOTRUN" report --fleet 2>e1 &&
    grep "give -o DIR" e1 &&
    expect_code 64 "$SPOTRUN" report --fleet -o out real-1 2>e2 &&
    grep "give no RUN" e2 &&
    expect_code 64 "$SPOTRUN" report 2>e3 &&
    grep "RUN, or --fleet -o DIR" e3 &&
    expect_code 64 "$SPOTRUN" report real-1 --label team=nlp -o x.svg 2>e4 &&
    grep -x "spotrun report: --label goes with --fleet (a run.s report takes no window)" e4 &&
    SPOTRUN_STATS_SINCE=2026-12-01 SPOTRUN_PRICES=prices.txt "$SPOTRUN" report real-1 -o real-1.svg &&
    grep -q "<svg" real-1.svg &&
    expect_code 64 "$SPOTRUN" report --fleet -o out --since 2026-12-09 --until 2026-12-01 2>e5 &&
    grep "is not before --until" e5
'

test_done
