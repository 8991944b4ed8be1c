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

test_expect_success 'a run without events is an error (66)' '
    expect_code 66 "$SPOTRUN" report nosuch -o x.svg &&
    test ! -e x.svg
'

test_done
