#!/usr/bin/env bash
# A sweep with two objectives (docs/sweeps.md, "Best"; docs/sweep-show.md,
# "The picture"): 16 random trials run by `sweep work`, each reporting loss
# and size. `sweep show` lists the Pareto front, the non-dominated done
# trials as computed here from `sweep show --json`; `sweep report` draws
# it: every done trial placed by loss and size, better towards the lower
# left on both axes (a maximized objective's axis turned), the front named
# and joined by its staircase, the dominated ones faint; rsvg-convert
# renders it; and `sweep export --optuna` gives a study with two
# directions whose best_trials are the same front.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/sweep-report-scenario.sh" # svg_py

# The job: size = width, loss = 2/sqrt(width) + 0.3 |log10(lr) + 2.5| (a
# wider model is better and bigger; lr has its optimum at 10^-2.5), acc =
# 1 - loss; a first report at step 1, the final values at step 2.
cat >pareto.sh <<\EOF
#!/bin/sh
loss=$(awk -v lr="$SPOTRUN_PARAM_LR" -v w="$SPOTRUN_PARAM_WIDTH" 'BEGIN {
    d = log(lr) / log(10) + 2.5; if (d < 0) d = -d; printf "%.6f", 2 / sqrt(w) + 0.3 * d }')
acc=$(awk -v l="$loss" 'BEGIN { printf "%.6f", 1 - l }')
"$SPOTRUN_BIN" metric --step 1 loss=9 acc=0 size="$SPOTRUN_PARAM_WIDTH" || exit 1
"$SPOTRUN_BIN" metric --step 2 loss="$loss" acc="$acc" size="$SPOTRUN_PARAM_WIDTH" || exit 1
echo 2 >"$SPOTRUN_CKPT_DIR/step"
"$SPOTRUN_BIN" commit --step 2
EOF
chmod +x pareto.sh
export SPOTRUN_BIN=$SPOTRUN

# front.py JSON M1 D1 M2 D2: the trial numbers no other done trial
# dominates by the final values of M1 and M2 (D: min or max), computed
# here from `sweep show --json`, one a line.
cat >front.py <<\EOF
import json, sys
d = json.load(open(sys.argv[1]))
objs = [(sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5])]
pts = {}
for t in d["trials"]:
    if t["state"] == "done" and all(m in t["metrics"] for m, _ in objs):
        pts[t["trial"]] = [t["metrics"][m]["last"] * (-1 if s == "max" else 1) for m, s in objs]
def dominates(a, b):
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))
for k in sorted(pts):
    if not any(dominates(pts[j], pts[k]) for j in pts if j != k):
        print(k)
EOF

# mk NAME OBJECTIVE...: 16 random trials (the same for each NAME), run by
# one worker until none is left.
mk() {
    local name=$1
    shift
    "$SPOTRUN" sweep init "$name" --random 16 --seed 5 --param lr=loguniform:1e-4,1e-1 \
        --param width=int:8,256 "$@" -- "$TRASH/pareto.sh" &&
        "$SPOTRUN" sweep work "$name" --until-empty --poll 100ms >"work-$name.log" 2>&1 &&
        "$SPOTRUN" sweep show "$name" --json >"$name.json" &&
        json "$name.json" "assert d[\"counts\"][\"done\"] == 16, d[\"counts\"]"
}

# chart FILE.svg JSON X Y: asserts the Pareto chart of FILE: its axes
# name X and Y, its points are the done trials, the dark ones and the
# names exactly the front of front.py, nothing lies below-left of a front
# point, and each axis runs from better to worse (X left to right, Y
# bottom to top); prints the front.
chart() {
    svg_py "$1" "
import json
d = json.load(open(\"$2\"))
(x, sx), (y, sy) = \"$3\".split(\":\"), \"$4\".split(\":\")
want = [int(k) for k in open(\"want-$3-$4\").read().split()]
g = [e for e in root.iter() if \"pareto\" in cls(e)]
assert len(g) == 1, \"no Pareto chart\"
g = g[0]
assert (g.get(\"data-x\"), g.get(\"data-y\")) == (x, y), g.attrib
pts = {}
for e in g.iter():
    if \"pareto-trial\" in cls(e):
        c = [c for c in e.iter(S + \"circle\") if \"pareto-point\" in cls(c)][0]
        pts[int(e.get(\"data-trial\"))] = (float(c.get(\"cx\")), float(c.get(\"cy\")), \"front\" in cls(c))
assert sorted(pts) == list(range(16)), sorted(pts)
front = sorted(k for k, p in pts.items() if p[2])
names = sorted(int(t.get(\"data-trial\")) for t in g.iter(S + \"text\") if \"pareto-label\" in cls(t))
texts_ = sorted(\"\".join(t.itertext()) for t in g.iter(S + \"text\") if \"pareto-label\" in cls(t))
print(\"front\", front, \"named\", texts_)
assert front == want, (front, want)
assert names == want and texts_ == sorted(\"trial %d\" % k for k in want), (names, texts_)
assert [e for e in g.iter(S + \"path\") if \"pareto-front\" in cls(e)], \"no staircase\"
faint = [c for c in g.iter(S + \"circle\") if \"dominated\" in cls(c)]
assert len(faint) == 16 - len(want) and all(c.get(\"fill-opacity\") for c in faint)
# better towards the lower left: no point below-left of a front one
for k in want:
    fx, fy, _ = pts[k]
    below_left = [j for j, (px, py, _) in pts.items() if px < fx - 0.5 and py > fy + 0.5]
    assert not below_left, (k, below_left)
# each axis from better to worse
v = {t[\"trial\"]: t[\"metrics\"] for t in d[\"trials\"]}
def cost(k, m, s): return v[k][m][\"last\"] * (-1 if s == \"max\" else 1)
for a in pts:
    for b in pts:
        if pts[a][0] < pts[b][0] - 0.5:
            assert cost(a, x, sx) <= cost(b, x, sx), (\"x\", a, b)
        if pts[a][1] > pts[b][1] + 0.5:
            assert cost(a, y, sy) <= cost(b, y, sy), (\"y\", a, b)
# the axes say the metric and which way is better; numbers in 4 digits
labels = [\"\".join(t.itertext()) for t in g.iter(S + \"text\") if \"axis-label\" in cls(t)]
assert any(l.startswith(x + \" (\" + sx + \":\") and \"better to the left\" in l for l in labels), labels
assert any(l.startswith(y + \" (\" + sy + \":\") and \"better downwards\" in l for l in labels), labels
NUM = re.compile(r\"(?<![\w.:])[-+]?(\d+\.\d+|\d+(?:\.\d*)?[eE][-+]?\d+)(?![\w.:])\")
long = [n.group(0) for t in texts(g) for n in NUM.finditer(t)
        if len(n.group(0).lstrip(\"+-\").split(\"e\")[0].replace(\".\", \"\").lstrip(\"0\")) > 4]
assert not long, long
"
}

test_expect_success 'a two-objective random sweep (loss:min, size:min) run by sweep work: 16 trials done' '
    mk mo --objective loss:min --objective size:min &&
    "$PY" front.py mo.json loss min size min >want-loss:min-size:min &&
    cat want-loss:min-size:min &&
    test "$(wc -l <want-loss:min-size:min)" -ge 3
'

test_expect_success 'sweep show lists the front: the non-dominated done trials of its --json values' '
    "$SPOTRUN" sweep show mo >mo.out &&
    n=$(wc -l <want-loss:min-size:min) &&
    grep -E "^pareto: +$n trials on the front \(loss min, size min; final values of done trials\)$" mo.out &&
    sed -n "s/^ *trial \([0-9]*\): loss .*/\1/p" mo.out >shown &&
    diff want-loss:min-size:min shown &&
    json mo.json "assert d[\"pareto\"] == [int(k) for k in open(\"want-loss:min-size:min\").read().split()], d[\"pareto\"]"
'

test_expect_success 'sweep report draws the Pareto chart: the front named and joined, the rest faint, better to the lower left' '
    "$SPOTRUN" sweep report mo -o mo.svg &&
    xmllint --noout mo.svg &&
    chart mo.svg mo.json loss:min size:min
'

test_expect_success 'a maximized objective turns its axis: acc:max against size:min, better still to the lower left' '
    mk mx --objective acc:max --objective size:min &&
    "$PY" front.py mx.json acc max size min >want-acc:max-size:min &&
    json mx.json "assert d[\"pareto\"] == [int(k) for k in open(\"want-acc:max-size:min\").read().split()], d[\"pareto\"]" &&
    "$SPOTRUN" sweep report mx -o mx.svg &&
    xmllint --noout mx.svg &&
    chart mx.svg mx.json acc:max size:min
'

test_expect_success 'rsvg-convert renders the report with its Pareto chart' '
    rsvg-convert -o mo.png mo.svg 2>render.err &&
    test ! -s render.err &&
    test "$(head -c 8 mo.png | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a &&
    svg_py mo.svg "
h = float(root.get(\"height\"))
plot = [e for e in root.iter(S + \"rect\") if \"plot\" in cls(e) and e in list(within(root, \"pareto\"))]
assert plot and float(plot[0].get(\"y\")) + float(plot[0].get(\"height\")) < h, (plot, h)
"
'

export_title='sweep export --optuna: a study of two directions whose best_trials are the front'
if ! "$PY" -c "import optuna" 2>/dev/null; then
    test_skip "$export_title" "python3-optuna is not installed (scripts/deps.sh installs it)"
else
test_expect_success "$export_title" '
    "$SPOTRUN" sweep export mo --optuna sqlite:///mo.db >export.out &&
    grep "16 trials added" export.out &&
    "$PY" - <<-\PY
	import optuna
	s = optuna.load_study(study_name="mo", storage="sqlite:///mo.db")
	D = optuna.study.StudyDirection
	assert s.directions == [D.MINIMIZE, D.MINIMIZE], s.directions
	best = sorted(t.user_attrs["spotrun_trial"] for t in s.best_trials)
	want = [int(k) for k in open("want-loss:min-size:min").read().split()]
	print("optuna best_trials", best)
	assert best == want, (best, want)
	PY
'
fi

test_done
