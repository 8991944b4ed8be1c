#!/usr/bin/env bash
# sweep report of a sweep in progress (docs/sweep-show.md, "The picture"):
# a running trial is drawn up to now and its curve in the running color,
# a pause still in force spans the lanes up to now, a pause without
# --stop marks no running trial, a cancel and a retry of a trial that never
# started are marked on its lane; the legend names what is drawn, and only
# that.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/sweep-report-scenario.sh"

# reports loss at steps 1-3, commits, says ready and runs until stopped
cat >live.sh <<'JOB'
#!/bin/sh
for s in 1 2 3; do "$SPOTRUN_BIN" metric --step $s loss="$(awk -v s=$s 'BEGIN { print 1 / s }')"; done
echo x >"$SPOTRUN_CKPT_DIR/w"
"$SPOTRUN_BIN" commit --step 3
echo ready
while :; do sleep 0.1; done
JOB
chmod +x live.sh

cleanup() {
    [ -s "$TRASH/run0.pid" ] && kill "$(cat "$TRASH/run0.pid")" 2>/dev/null
    return 0
}
trap cleanup EXIT

# One body: the wrapper is reaped (wait) by the shell that started it.
test_expect_success 'a sweep in progress: trial 0 runs, trial 1 cancelled and retried, the sweep paused' '
    "$SPOTRUN" sweep init lv --param x=0.123456789,2.5,7 -- "$TRASH/live.sh"
    "$SPOTRUN" sweep cancel lv 1 >cancel.out
    "$SPOTRUN" sweep retry lv 1 >retry.out
    # alone after the &: $! is the wrapper (not a subshell running a list)
    CUDA_VISIBLE_DEVICES= "$SPOTRUN" run --sweep lv --trial 0 --notice none >run0.log 2>&1 &
    pid=$!
    echo $pid >run0.pid &&
    wait_for run0.log "^ready" 60 &&
    "$SPOTRUN" sweep pause lv >pause.out &&
    "$SPOTRUN" sweep report lv -o lv.svg &&
    kill $pid && { wait $pid || :; } && rm run0.pid &&
    xmllint --noout lv.svg
'

test_expect_success 'the running trial has a running bar and its curve the running look' '
    test "$(svg_count lv.svg "attempt running")" -eq 1 &&
    svg_py lv.svg "
run = next(e for e in root.iter() if \"attempt\" in cls(e) and \"running\" in cls(e))
curve = next(e for e in root.iter() if \"curve\" in cls(e))
assert curve.get(\"data-trial\") == \"0\" and curve.get(\"data-look\") == \"running\", curve.attrib
if \"best\" not in cls(curve): # (a running trial is not the best, for some readings of best)
    assert curve.get(\"stroke\") == run.get(\"fill\"), (curve.attrib, run.attrib)
"
'

test_expect_success 'the pause in force spans the lanes up to now, where the running bar ends; without --stop it marks no trial' '
    svg_py lv.svg "
span = [e for e in root.iter() if \"paused-span\" in cls(e)]
assert len(span) == 1, span
end = float(span[0].get(\"x\")) + float(span[0].get(\"width\"))
run = next(e for e in root.iter() if \"attempt\" in cls(e) and \"running\" in cls(e))
assert abs(end - float(run.get(\"x\")) - float(run.get(\"width\"))) < 0.5, (end, run.attrib)
label = next(e for e in root.iter() if \"paused-label\" in cls(e))
assert \"still paused\" in label.find(S + \"title\").text, label.find(S + \"title\").text
assert texts(label) == [\"paused\"], texts(label)
assert not [e for e in root.iter() if \"steer-pause\" in cls(e)]
"
'

test_expect_success 'the cancel and the retry of a trial that never ran are marked on its lane' '
    svg_py lv.svg "
lane = next(e for e in root.iter() if \"trial\" in cls(e) and e.get(\"data-trial\") == \"1\")
c = [e for e in lane.iter() if \"steer-cancel\" in cls(e)]
r = [e for e in lane.iter() if \"steer-retry\" in cls(e)]
assert len(c) == 1 and len(r) == 1, (c, r)
assert r[0].find(S + \"title\").text.startswith(\"retry by \"), r[0].find(S + \"title\").text
assert \"queued\" in texts(lane), texts(lane)
"
'

test_expect_success 'the legend names what is drawn (running, paused, cancel, retry) and nothing else' '
    svg_py lv.svg "
names = texts(next(e for e in root.iter() if \"legend\" in cls(e)))
print(names)
assert names == [\"running\", \"sweep paused\", \"cancel\", \"retry\"], names
lanes = colors(within(root, \"trial\") + within(root, \"steering\"))
assert lanes <= colors(within(root, \"legend\")), lanes
"
'

test_expect_success 'the picture renders to a PNG' '
    rsvg-convert -o lv.png lv.svg &&
    test -s lv.png
'

test_done
