#!/usr/bin/env bash
# sweep report draws learning curves (docs/sweep-show.md, "sweep report"):
# one chart per metric with every trial's values over its steps, a pruned
# trial's curve ending in a mark at its rung, a cancelled one's where it
# stopped, the best trial drawn thick and named, the value axis labelled
# with the metric and which way is better. The sweep:
# tests/e2e/sweep-report-scenario.sh (trial 5 is the best).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/sweep-report-scenario.sh"

test_expect_success 'a sweep with done, pruned, cancelled and paused trials' '
    report_sweep &&
    "$SPOTRUN" sweep report rs -o rs.svg &&
    xmllint --noout rs.svg
'

test_expect_success 'one chart per metric, one curve per trial that reported it, a point per step' '
    svg_py rs.svg "
charts = {e.get(\"data-metric\"): e for e in root.iter() if \"curves\" in cls(e)}
assert sorted(charts) == [\"acc\", \"loss\"], sorted(charts)
steps = {\"0\": 8, \"1\": 2, \"2\": 8, \"3\": 2, \"4\": 4, \"5\": 8}
for m, g in charts.items():
    curves = [e for e in g.iter(S + \"path\") if \"curve\" in cls(e)]
    got = sorted(e.get(\"data-trial\") for e in curves)
    assert got == list(\"012345\"), (m, got)
    for e in curves: # trial 5 reported step 4 twice (resumed from 3): one point
        n = e.get(\"d\").count(\"M\") + e.get(\"d\").count(\"L\")
        assert n == steps[e.get(\"data-trial\")], (m, e.get(\"data-trial\"), e.get(\"d\"))
"
'

test_expect_success 'the rungs are drawn; a pruned trial ends in a mark at its rung (step 2), a cancelled one where it stopped' '
    svg_py rs.svg "
g = next(e for e in root.iter() if \"curves\" in cls(e) and e.get(\"data-metric\") == \"loss\")
ticks = {t.text: float(t.get(\"x\")) for t in g.iter(S + \"text\") if \"tick\" in cls(t)}
curves = {e.get(\"data-trial\"): e for e in g.iter(S + \"path\") if \"curve\" in cls(e)}
def end(k):
    x, y = curves[k].get(\"d\").split(\"L\")[-1].lstrip(\"M\").split()
    return float(x), float(y)
marks = [e for e in g.iter(S + \"path\") if \"pruned-mark\" in cls(e)]
assert sorted(e.get(\"data-trial\") for e in marks) == [\"1\", \"3\"], marks
for e in marks:
    x, y = end(e.get(\"data-trial\"))
    assert abs(x - ticks[\"2\"]) < 0.5, (x, ticks)
    mx, my = (float(v) for v in e.get(\"d\")[1:].split(\"l\")[0].split())
    assert abs(mx + 4 - x) < 0.5 and abs(my + 4 - y) < 0.5, (e.get(\"d\"), x, y)
    tip = e.find(S + \"title\").text
    assert re.match(r\"trial [13] pruned at rung 0; its last loss 5\.5[0-9]* at step 2$\", tip), tip
c = [e for e in g.iter(S + \"path\") if \"cancel-mark\" in cls(e)]
assert [e.get(\"data-trial\") for e in c] == [\"4\"], c
assert abs(end(\"4\")[0] - ticks[\"4\"]) < 0.5, (end(\"4\"), ticks)
rungs = {t.text: float(t.get(\"x\")) for t in g.iter(S + \"text\") if \"rung-label\" in cls(t)}
assert sorted(rungs) == [\"rung 0\", \"rung 1\", \"rung 2\"], rungs # steps 2, 4, 8
assert abs(rungs[\"rung 0\"] - ticks[\"2\"]) < 0.5 and abs(rungs[\"rung 2\"] - ticks[\"8\"]) < 0.5, rungs
legend = texts(next(e for e in g.iter() if \"curves-legend\" in cls(e)))
assert \"pruned at its rung\" in legend and \"cancelled where it stopped\" in legend, legend
"
'

test_expect_success 'the best trial (by the first metric, loss) is drawn thick, last, and named in each chart' '
    svg_py rs.svg "
charts = [e for e in root.iter() if \"curves\" in cls(e)]
assert len(charts) == 2, charts
for g in charts:
    curves = [e for e in g.iter(S + \"path\") if \"curve\" in cls(e)]
    best = [e for e in curves if \"best\" in cls(e)]
    assert [e.get(\"data-trial\") for e in best] == [\"5\"], best
    assert curves[-1] is best[0], \"drawn last\"
    assert float(best[0].get(\"stroke-width\")) > max(float(e.get(\"stroke-width\")) for e in curves[:-1])
    shown = texts(g)
    want = \"best: trial 5\" + (\"\" if g.get(\"data-metric\") == \"loss\" else \" (by loss)\")
    assert \"trial 5 (best)\" in shown and want in shown, shown
"
'

test_expect_success 'the value axis names the metric and which way is better; the step axis says step' '
    svg_py rs.svg "
labels = {}
for g in (e for e in root.iter() if \"curves\" in cls(e)):
    labels[g.get(\"data-metric\")] = [t.text for t in g.iter(S + \"text\") if \"axis-label\" in cls(t)]
print(labels)
assert labels[\"loss\"] == [\"step\", \"loss (min: lower is better, log scale)\"], labels
assert labels[\"acc\"] == [\"step\", \"acc (max: higher is better)\"], labels
"
'

test_expect_success 'sweep report --maximize loss: the axis and the best trial follow the flag' '
    "$SPOTRUN" sweep report rs --maximize loss -o max.svg &&
    svg_py max.svg "
g = next(e for e in root.iter() if \"curves\" in cls(e) and e.get(\"data-metric\") == \"loss\")
assert \"loss (max: higher is better, log scale)\" in texts(g), texts(g)
best = [e.get(\"data-trial\") for e in g.iter(S + \"path\") if \"best\" in cls(e)]
assert best and best[0] != \"5\", best
"
'

test_expect_success 'a sweep whose trials reported no metric has no learning curves' '
    "$SPOTRUN" sweep init quiet --param x=1,2 -- true &&
    "$SPOTRUN" run --sweep quiet --trial 0 --notice none 2>/dev/null &&
    "$SPOTRUN" sweep report quiet -o quiet.svg &&
    xmllint --noout quiet.svg &&
    test "$(svg_count quiet.svg curves)" -eq 0 &&
    test "$(svg_count quiet.svg "attempt done")" -eq 1
'

test_done
