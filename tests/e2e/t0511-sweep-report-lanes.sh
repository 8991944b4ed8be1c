#!/usr/bin/env bash
# sweep report's lanes read at a glance (docs/sweep-show.md, "sweep
# report"): the legend names every color and mark the lanes use (pruned,
# cancelled, stopped by a pause included), the operator's cancel, pause
# --stop and priority are marked on the trials they reached and the span
# the sweep was paused is drawn, and every number is printed in at most 4
# significant digits (a lane's label too: lr=0.0007363, the full value in
# its tooltip). The sweep: tests/e2e/sweep-report-scenario.sh.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/sweep-report-scenario.sh"

test_expect_success 'a sweep with done, pruned, cancelled and paused trials' '
    report_sweep &&
    "$SPOTRUN" sweep report rs -o rs.svg 2>err &&
    grep "wrote rs.svg (6 trials)" err &&
    xmllint --noout rs.svg
'

test_expect_success 'the legend names every color drawn on the lanes, pruned and cancelled included' '
    svg_py rs.svg "
lanes = colors(within(root, \"trial\") + within(root, \"steering\"))
legend = colors(within(root, \"legend\"))
print(\"lanes:\", sorted(lanes), \"legend:\", sorted(legend))
assert lanes, lanes
assert lanes <= legend, (\"not in the legend\", lanes - legend)
names = texts(next(e for e in root.iter() if \"legend\" in cls(e)))
print(names)
for n in (\"done\", \"pruned (early stopping)\", \"cancelled\", \"stopped by a pause\",
          \"restart / resume\", \"sweep paused\", \"cancel\", \"pause --stop\", \"priority set\"):
    assert n in names, n
for n in (\"running\", \"preempted\", \"failed / crashed\", \"preemption notice\", \"retry\"):
    assert n not in names, (n, \"named though nothing is drawn so\")
" &&
    test "$(svg_count rs.svg "attempt pruned cause-pruned")" -eq 2 &&
    test "$(svg_count rs.svg "attempt cancelled cause-cancelled")" -eq 1 &&
    test "$(svg_count rs.svg "attempt paused cause-paused")" -eq 1 &&
    test "$(svg_count rs.svg "attempt done")" -eq 3
'

test_expect_success 'the cancel, the pause --stop and the priority are marked on their trials; the pause spans the lanes' '
    svg_py rs.svg "
lanes = {e.get(\"data-trial\"): e for e in root.iter() if \"trial\" in cls(e)}
def marks(k, what):
    return [e for e in lanes[k].iter() if \"steer-\" + what in cls(e)]
tip = lambda e: e.find(S + \"title\").text
c, p, s = marks(\"4\", \"cancel\"), marks(\"5\", \"priority\"), marks(\"5\", \"pause\")
assert len(c) == 1 and re.match(r\"cancel by [^ ]*@[^ ]+ at 20\", tip(c[0])), [tip(e) for e in c]
assert len(p) == 1 and tip(p[0]).startswith(\"priority 10 by \"), [tip(e) for e in p]
assert len(s) == 1 and tip(s[0]).startswith(\"pause --stop by \"), [tip(e) for e in s]
for k in \"0123\":
    assert not [e for e in lanes[k].iter() if \"steer-mark\" in cls(e)], k
span = [e for e in root.iter() if \"paused-span\" in cls(e)]
assert len(span) == 1, span
label = [e for e in root.iter() if \"paused-label\" in cls(e)]
assert \"resume by \" in tip(label[0]) and \"pause --stop by \" in tip(label[0]), tip(label[0])
# the pause mark sits inside the span, on trial 5 stopped attempt
x = float(s[0].get(\"d\")[1:].split()[0]) + 4
x0 = float(span[0].get(\"x\"))
assert x0 - 1 <= x <= x0 + float(span[0].get(\"width\")) + 1, (x, x0)
"
'

test_expect_success 'lane labels print each parameter in 4 significant digits, the full value in the tooltip' '
    svg_py rs.svg "
labels = [e for e in root.iter() if \"lane-label\" in cls(e)]
shown = [\"\".join(t.itertext()) for e in labels for t in e.iter(S + \"text\")]
tips = [e.find(S + \"title\").text for e in labels]
print(shown, tips)
assert shown[0] == \"0 lr=0.0007363 width=64\", shown[0]
assert shown[3] == \"3 lr=0.003142 width=128\", shown[3]
assert shown[5] == \"5 lr=0.01 width=128\", shown[5]
assert tips[0] == \"trial 0: lr=0.0007363055617 width=64\", tips[0]
"
'

test_expect_success 'no number printed in the picture has more than 4 significant digits' '
    svg_py rs.svg "
NUM = re.compile(r\"(?<![\w.:])[-+]?(\d+\.\d+|\d+(?:\.\d*)?[eE][-+]?\d+)(?![\w.:])\")
def sig(tok):
    m = tok.lstrip(\"+-\").split(\"e\")[0].split(\"E\")[0].replace(\".\", \"\").lstrip(\"0\")
    return len(m)
shown = texts(root)
found = [(t, m.group(0)) for t in shown for m in NUM.finditer(t)]
print(found)
assert any(n == \"0.0007363\" for _, n in found), found
bad = [(t, n) for t, n in found if sig(n) > 4]
assert not bad, bad
"
'

test_done
