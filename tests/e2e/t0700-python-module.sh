#!/usr/bin/env bash
# The Python module (python/spotrun): its unit tests, then under a real
# wrapper: a job that saves only when asked answers every request by
# polling the job page, commit returns the seq the store records, resume,
# metrics in the event log, a polling job is waited for at a notice, and
# the errors a user sees: no wrapper (the script runs unchanged), a dead
# socket, a wrapper gone mid-commit, an ERR reply.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree

# job.py SECONDS [crash]: polls checkpoint_due() every 10 ms, saves and
# commits only when due; prints what the module says. With "crash", the
# first attempt commits once by itself and exits 3. Each line is one print
# of one string: with PYTHONUNBUFFERED every argument of print is a write of
# its own, and the wrapper's log lines share the file.
cat >job.py <<\PY
import os, sys, time
import spotrun
seconds = float(sys.argv[1])
crash = len(sys.argv) > 2 and sys.argv[2] == "crash"
print("active=%s resumed=%s step=%s attempt=%d" % (spotrun.active(), spotrun.resumed(),
      spotrun.restored_step(), spotrun.attempt()), flush=True)
if spotrun.resumed():
    with open(spotrun.path("s.txt")) as f:
        print("loaded step %s" % f.read(), flush=True)
if crash and spotrun.attempt() == 0:
    spotrun.save("s.txt", "41")
    print("seq %d" % spotrun.commit(41), flush=True)
    sys.exit(3)
print("ready", flush=True)
step, seqs, end = 0, [], time.time() + seconds
while time.time() < end:
    time.sleep(0.01)
    step += 1
    if spotrun.checkpoint_due():
        with spotrun.saving("s.txt") as p:
            with open(p, "w") as f:
                f.write(str(step))
        seqs.append(spotrun.commit(step))
        print("seq %d step %d" % (seqs[-1], step), flush=True)
spotrun.metric("loss", 0.3125, step=step)
spotrun.metric("lr", 0.0625)
print("commits=%d seqs=%s" % (len(seqs), ",".join(map(str, seqs))), flush=True)
PY

test_expect_success 'the module unit tests pass' '
    "$PY" -m unittest discover -s "$SRCDIR/python/tests" -v >unit.log 2>&1 || { cat unit.log; exit 1; }
    cat unit.log
    grep "^OK" unit.log
'

test_expect_success 'a job that saves only when due answers every request (--every 1s, 8 s)' '
    "$SPOTRUN" run --run-id poll --every 1s --max-restarts 0 -- "$PY" job.py 8 >poll.log 2>&1 &&
    cat poll.log &&
    n=$(sed -n "s/^commits=\([0-9]*\) .*/\1/p" poll.log) &&
    test "$n" -ge 5 &&
    "$SPOTRUN" show poll --json >poll.json &&
    "$PY" -c "import json, sys; d = json.load(open(\"poll.json\")); assert d[\"checkpoint_count\"] >= 5, d[\"checkpoint_count\"]" &&
    ! grep "does not listen" poll.log
'

test_expect_success 'commit returns the seq the store records for that step' '
    grep "^commits=.* seqs=1,2,3,4,5" poll.log &&
    "$PY" - poll.json poll.log <<\PY
import json, re, sys
store = {c["seq"]: c["step"] for c in json.load(open(sys.argv[1]))["checkpoints"]}
seen = {int(s): int(t) for s, t in re.findall(r"^seq (\d+) step (\d+)$", open(sys.argv[2]).read(), re.M)}
assert seen and all(store[s] == t for s, t in seen.items()), (store, seen)
PY
'

test_expect_success 'metrics land in the event log with their step' '
    cat "$SPOTRUN_STORE"/poll/events/*.jsonl | grep "\"event\":\"metric\"" >metrics.ev &&
    cat metrics.ev &&
    grep "\"name\":\"loss\"" metrics.ev | grep "\"value\":0.3125" | grep "\"step\":[1-9]" &&
    grep "\"name\":\"lr\"" metrics.ev | grep "\"value\":0.0625" | grep -v "\"step\""
'

test_expect_success 'after a crash the job resumes: resumed(), restored_step(), attempt()' '
    "$SPOTRUN" run --run-id res --max-restarts 1 --backoff 0 -- "$PY" job.py 0.2 crash >res.log 2>&1 &&
    cat res.log &&
    grep "^active=True resumed=False step=None attempt=0" res.log &&
    grep -E "^seq 1([^0-9]|$)" res.log && # (a wrapper line may follow on it: print writes "\n" apart)
    grep "^active=True resumed=True step=41 attempt=1" res.log &&
    grep "^loaded step 41" res.log
'

test_expect_success 'a job that only polls is waited for at a notice and commits in time' '
    "$SPOTRUN" run --run-id notice --grace 30s -- "$PY" job.py 60 >notice.log 2>&1 &
    pid=$!
    wait_for notice.log "^ready" || { kill $pid; exit 1; }
    "$SPOTRUN" notify --run-id notice --deadline 20s
    expect_code 75 wait $pid
    cat notice.log
    grep "checkpoint 1 (step [0-9]*) staged" notice.log &&
    grep "preempted: checkpoint 1 is durable" notice.log &&
    ! grep "does not listen" notice.log
'

test_expect_success 'a poller behind sh -c hears the request through the page' '
    "$SPOTRUN" run --run-id shc --every 1s --max-restarts 0 -- \
        sh -c "\"$PY\" job.py 4; exit \$?" >shc.log 2>&1 &&
    cat shc.log &&
    n=$(sed -n "s/^commits=\([0-9]*\) .*/\1/p" shc.log) &&
    test "$n" -ge 2
'

test_expect_success 'outside spotrun the same script runs: commit returns None, saves go nowhere' '
    "$PY" job.py 0.1 >plain.log 2>&1 &&
    cat plain.log &&
    grep "^active=False resumed=False step=None attempt=0" plain.log &&
    grep "^commits=0" plain.log &&
    "$PY" -c "import spotrun; print(spotrun.commit(3), spotrun.metric(\"x\", 1))" >none.log &&
    grep "^None None$" none.log
'

# errors.py: commits once against $SPOTRUN_CONTROL and prints what it got.
cat >errors.py <<\PY
import spotrun
try:
    print("seq", spotrun.commit(7))
except spotrun.WrapperGone as e:
    print("WrapperGone:", e)
except spotrun.CommitError as e:
    print("CommitError:", e)
PY

# fake.py SOCKET MODE: a fake wrapper answering one connection: "close"
# reads the COMMIT and closes without answering, "err" answers ERR.
cat >fake.py <<\PY
import os, socket, sys
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
line = c.recv(256)
print("got", line.decode().strip(), flush=True)
if mode == "err":
    c.sendall(b"ERR cannot stage: No space left on device\n")
c.close()
PY

test_expect_success 'SPOTRUN_CONTROL naming a dead socket raises WrapperGone' '
    SPOTRUN_CONTROL=$TRASH/nobody.sock "$PY" errors.py >dead.log 2>&1 &&
    cat dead.log &&
    grep "^WrapperGone: no spotrun wrapper answers at $TRASH/nobody.sock" dead.log
'

test_expect_success 'a wrapper that closes mid-commit raises WrapperGone' '
    "$PY" fake.py "$TRASH/close.sock" close >fake-close.log 2>&1 &
    wait_for fake-close.log "^listening" 10 &&
    SPOTRUN_CONTROL=$TRASH/close.sock "$PY" errors.py >close.log 2>&1 &&
    wait &&
    cat fake-close.log close.log &&
    grep "^got COMMIT 7$" fake-close.log &&
    grep "^WrapperGone: the spotrun wrapper at .* closed the connection before answering COMMIT" close.log &&
    grep "the checkpoint was not confirmed" close.log
'

test_expect_success 'an ERR reply raises CommitError with the wrapper message' '
    "$PY" fake.py "$TRASH/err.sock" err >fake-err.log 2>&1 &
    wait_for fake-err.log "^listening" 10 &&
    SPOTRUN_CONTROL=$TRASH/err.sock "$PY" errors.py >err.log 2>&1 &&
    wait &&
    cat err.log &&
    grep "^CommitError: spotrun commit failed: cannot stage: No space left on device" err.log
'

test_done
