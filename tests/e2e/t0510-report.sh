#!/usr/bin/env bash
# spotrun report draws a run's timeline: a valid SVG (or an HTML page) with a
# segment per attempt, its checkpoints, the notice, restarts and lost work.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/obs-scenario.sh"

test_expect_success 'a run with a crash, a restart, a preemption and a resume' '
    obs_first_run r && obs_second_run r
'

test_expect_success 'report -o run.svg writes a well-formed SVG document' '
    "$SPOTRUN" report r -o run.svg 2>err &&
    grep "wrote run.svg (3 attempt(s))" err &&
    "$PY" -c "
import xml.etree.ElementTree as ET
root = ET.parse(\"run.svg\").getroot()
assert root.tag == \"{http://www.w3.org/2000/svg}svg\", root.tag
assert float(root.get(\"width\")) > 0 and float(root.get(\"height\")) > 0
"
'

test_expect_success 'report without -o, stdout not a terminal: the picture on stdout, no file' '
    rm -f r.svg &&
    "$SPOTRUN" report r >piped.svg 2>err &&
    ! test -e r.svg &&
    ! grep wrote err &&
    cmp run.svg piped.svg &&
    "$SPOTRUN" report r -o - --format html >piped.html &&
    grep -q "<html" piped.html && ! test -e r.svg
'

test_expect_success 'report without -o on a terminal writes RUN.svg, as it always did' '
    rm -f r.svg &&
    script -qec "\"$SPOTRUN\" report r" /dev/null >tty.out 2>&1 &&
    grep "wrote r.svg (3 attempt(s))" tty.out &&
    cmp run.svg r.svg
'

test_expect_success 'one lane and one training segment per attempt' '
    test "$(svg_count run.svg attempt)" -eq 3 &&
    test "$(svg_count run.svg segment)" -eq 3 &&
    test "$(svg_count run.svg "segment crashed")" -eq 1 &&
    test "$(svg_count run.svg "segment preempted")" -eq 1 &&
    test "$(svg_count run.svg "segment done")" -eq 1
'

test_expect_success 'the notice, the crash, the restart and the lost work are drawn' '
    test "$(svg_count run.svg notice)" -eq 1 &&
    grep -q "preemption notice from manual" run.svg &&
    test "$(svg_count run.svg "exit crash")" -eq 1 &&
    test "$(svg_count run.svg restart)" -eq 1 &&
    test "$(svg_count run.svg resume)" -eq 1 &&
    test "$(svg_count run.svg lost)" -ge 1
'

test_expect_success 'every checkpoint is drawn staged and durable' '
    n=$(ls "$SPOTRUN_STORE/r/ckpt" | wc -l) &&
    test "$(svg_count run.svg "ckpt staged")" -eq "$n" &&
    test "$(svg_count run.svg "ckpt durable")" -eq "$n"
'

test_expect_success 'xmllint and rsvg-convert accept it, when installed' '
    if command -v xmllint >/dev/null; then xmllint --noout run.svg; fi &&
    if command -v rsvg-convert >/dev/null; then
        rsvg-convert -o run.png run.svg && test -s run.png
    fi
'

test_expect_success 'report -o run.html: a page with the picture and the summary' '
    "$SPOTRUN" report r -o run.html &&
    head -n 1 run.html | grep -i "<!DOCTYPE html>" &&
    grep -q "<svg xmlns=" run.html &&
    grep -q "preemptions: 1 (manual: 1)" run.html
'

test_expect_success 'report -o run.html: the summary in the <pre> keeps its lines' '
    "$PY" - run.html <<-\PY
	import re, sys
	page = open(sys.argv[1]).read()
	pre = re.search(r"<pre>(.*?)</pre>", page, re.S).group(1).split("\n")
	print("\n".join(pre))
	assert len(pre) >= 10, len(pre)
	assert "preemptions: 1 (manual: 1)" in pre, pre
	assert any(l.startswith("wall time:") for l in pre), pre
	assert sum(l.startswith("attempt ") for l in pre) == 3, pre
	PY
'

test_expect_success 'a run without metrics has no metric panel' '
    test "$(svg_count run.svg metric-panel)" -eq 0 &&
    ! grep -q "metrics the job reported" run.svg
'

# A run whose job reported loss and val_acc every 50 steps: attempt 0
# crashes at step 700 (checkpoint at 500), attempt 1 resumes from 500 and
# is preempted at step 1200 (checkpoint at 1000), attempt 2 resumes from
# 1000 and finishes at 2000. Written as the event logs a wrapper writes.
test_expect_success 'a run with metrics, a crash and a preemption (event logs)' '
    "$PY" - "$SPOTRUN_STORE/mp/events" <<-\PY
	import json, os, sys
	d = sys.argv[1]; os.makedirs(d)
	T, t = 1700000000000, 0
	def ev(f, e, a, **kw):
	    kw.update(event=e, time="x", unix_ms=T + t, attempt=a); f.write(json.dumps(kw) + "\n")
	for a, s0, s1, res, end in ((0, 0, 700, None, "crash"), (1, 500, 1200, 500, "pre"),
	                            (2, 1000, 2000, 1000, "done")):
	    with open(os.path.join(d, "%06d.jsonl" % a), "w") as f:
	        ev(f, "start", a, host="vm", resumed=res is not None, seq=1, step=res)
	        for s in range(s0, s1 + 1, 50):
	            t += 100
	            ev(f, "metric", a, name="loss", value=2.0 / (1 + s / 300.0), step=s)
	            ev(f, "metric", a, name="val_acc", value=s / 2000.0, step=s)
	            if s % 500 == 0 and s > s0:
	                ev(f, "staged", a, seq=s // 500, step=s, seconds=0.1)
	                t += 10
	                ev(f, "persisted", a, seq=s // 500, step=s, seconds=0.1)
	        t += 100
	        if end == "pre":
	            ev(f, "notice", a, source="manual", ms_left=20000)
	        ev(f, "exit", a, code={"crash": 3, "pre": 75, "done": 0}[end])
	        ev(f, {"crash": "restart", "pre": "preempted", "done": "done"}[end], a)
	        t += 500
	PY
    "$SPOTRUN" show mp >mp.show &&
    grep "^preemptions: 1 (manual: 1)$" mp.show &&
    grep "^failures: *1 (exit 3: 1); 1 restart(s)$" mp.show
'

test_expect_success 'report: one panel per metric, a curve per attempt, crash and preemption marked' '
    "$SPOTRUN" report mp -o mp.svg &&
    test "$(svg_count mp.svg metric-panel)" -eq 2 &&
    test "$(svg_count mp.svg curve)" -eq 6 &&
    test "$(svg_count mp.svg metric-preemption)" -eq 2 &&
    test "$(svg_count mp.svg metric-crash)" -eq 2 &&
    test "$(svg_count mp.svg best)" -eq 2 &&
    test "$(svg_count mp.svg metric-legend)" -eq 1 &&
    grep -q "attempt 1 preempted at step 1200; attempt 2 resumed from step 1000" mp.svg &&
    grep -q "attempt 0 crashed at step 700; attempt 1 resumed from step 500" mp.svg &&
    grep -q "loss: last 0.26087, best 0.26087 at step 2000 (min)" mp.svg &&
    grep -q "val_acc: last 1, best 1 at step 2000 (max)" mp.svg &&
    if command -v xmllint >/dev/null; then xmllint --noout mp.svg; fi
'

test_expect_success 'report: the preemption line is drawn at step 1200 of the step axis' '
    "$PY" - mp.svg <<-\PY
	import sys, xml.etree.ElementTree as ET
	S = "{http://www.w3.org/2000/svg}"
	panel = next(e for e in ET.parse(sys.argv[1]).getroot().iter(S + "g")
	             if e.get("class") == "metric-panel" and e.get("data-metric") == "loss")
	ticks = {t.text: float(t.get("x")) for t in panel.iter(S + "text") if t.get("class") == "tick"}
	x0, x1 = ticks["0"], ticks["2000"]
	line = next(e for e in panel.iter(S + "line") if e.get("class") == "metric-preemption")
	x = float(line.get("x1"))
	assert abs(x - (x0 + (x1 - x0) * 1200 / 2000)) < 1, (x, x0, x1)
	PY
'

test_expect_success 'report -o mp.html: the panel is in the page too' '
    "$SPOTRUN" report mp -o mp.html &&
    grep -q "class=\"metric-panel\"" mp.html &&
    grep -q "^metrics: *loss *last 0.26087 at step 2000" mp.html
'

test_expect_success 'a run without events is an error (66)' '
    expect_code 66 "$SPOTRUN" report nosuch -o x.svg &&
    test ! -e x.svg
'

test_done
