#!/usr/bin/env bash
# The checkpoint request reaches every process of the job, every time: a
# Python job that commits through subprocess answers every request; trainers
# behind `sh -c` and behind a launcher get it too (by signal, or by polling
# the job page); a SIGTERM the job sends inside its own tree is not a
# notice; a job that never listens is not waited for, nor signalled; the
# messages say what happened.
. "$(dirname "$0")/lib.sh"

# trainer.py SECONDS TAG [poll]: saves only when asked. The request comes
# by its SIGUSR1 handler, or with "poll" by spotrun_checkpoint_requested()
# (the job page; no handler). Commits through subprocess, as
# examples/pytorch/train.py does. Prints "TAG requests=R commits=C".
cat >trainer.py <<\PY
import ctypes, os, signal, subprocess, sys, time
seconds, tag = float(sys.argv[1]), sys.argv[2]
poll = len(sys.argv) > 3 and sys.argv[3] == "poll"
flag = [0]
requests = 0
if poll:
    lib = ctypes.CDLL(None)
    due = lambda: lib.spotrun_checkpoint_requested() != 0
else:
    def on_request(sig, frame):
        flag[0] = 1
    signal.signal(signal.Signals[os.environ.get("SPOTRUN_SIGNAL", "SIGUSR1")]
                  if not os.environ.get("SPOTRUN_SIGNAL", "").startswith("SIGRTMIN")
                  else signal.SIGRTMIN + int(os.environ["SPOTRUN_SIGNAL"][9:] or 0), on_request)
    def due():
        if flag[0]:
            flag[0] = 0
            return True
        return False
print(tag, "ready", flush=True)
ckpt = os.environ.get("SPOTRUN_CKPT_DIR")
step, commits, end = 0, 0, time.time() + seconds
while time.time() < end:
    time.sleep(0.02)
    step += 1
    if due():
        requests += 1
        with open(os.path.join(ckpt, tag + ".tmp"), "w") as f:
            f.write(str(step))
        os.replace(os.path.join(ckpt, tag + ".tmp"), os.path.join(ckpt, tag + ".txt"))
        r = subprocess.run([os.environ["SPOTRUN_BIN"], "commit", "--step", str(step)])
        commits += r.returncode == 0
print("%s requests=%d commits=%d" % (tag, requests, commits), flush=True)
PY

# launcher.py N CMD...: starts N copies of CMD (TAG = rank) with subprocess,
# as torchrun does, and waits for them.
cat >launcher.py <<\PY
import subprocess, sys
n, cmd = int(sys.argv[1]), sys.argv[2:]
procs = [subprocess.Popen([a.replace("RANK", str(r)) for a in cmd]) for r in range(n)]
sys.exit(max(p.wait() for p in procs))
PY

# count TAG LOG: "TAG requests=R commits=C" -> "R C"
count() { sed -n "s/^$1 requests=\([0-9]*\) commits=\([0-9]*\)$/\1 \2/p" "$2"; }
at_least() { [ -n "$1" ] && [ "$1" -ge "$2" ] || { echo "expected >= $2, got '$1'"; return 1; }; }

test_expect_success 'a Python job that commits through subprocess answers every request' '
    "$SPOTRUN" run --run-id direct --every 1s --max-restarts 0 -- "$PY" trainer.py 8 job \
        >direct.log 2>&1 &&
    cat direct.log &&
    set -- $(count job direct.log) &&
    at_least "$1" 5 && at_least "$2" 5 &&
    "$SPOTRUN" ls | grep "^direct"
'

test_expect_success 'a trainer behind sh -c gets every request' '
    "$SPOTRUN" run --run-id shc --every 1s --max-restarts 0 -- \
        sh -c "\"$PY\" trainer.py 8 job; exit \$?" >shc.log 2>&1 &&
    cat shc.log &&
    set -- $(count job shc.log) &&
    at_least "$1" 5 && at_least "$2" 5
'

test_expect_success 'every trainer behind a Python launcher gets the request (signal and page)' '
    "$SPOTRUN" run --run-id launch --every 1s --max-restarts 0 -- \
        "$PY" launcher.py 2 "$PY" trainer.py 8 rankRANK >launch.log 2>&1 &&
    "$SPOTRUN" run --run-id launchpoll --every 1s --max-restarts 0 -- \
        "$PY" launcher.py 2 "$PY" trainer.py 8 pollRANK poll >>launch.log 2>&1 &&
    cat launch.log &&
    for t in rank0 rank1 poll0 poll1; do
        set -- $(count $t launch.log) && at_least "$1" 4 && at_least "$2" 4 || exit 1
    done
'

test_expect_success 'a C program keeps its handler across vfork, fork and posix_spawn children' '
    if [ -z "${FAKECUDA:-}" ]; then echo "skip: sigprobe not built"; exit 0; fi
    "$SPOTRUN" run --run-id vfork --max-restarts 0 -- "$FAKECUDA/sigprobe" vfork >vfork.log 2>&1 &&
    grep "vfork handler=ok hits=3" vfork.log
'

test_expect_success 'Python keeps its handler across subprocess, multiprocessing and posix_spawn' '
    cat >children.py <<\PY &&
import multiprocessing as mp, os, signal, subprocess, sys, time
hits = []
signal.signal(signal.SIGUSR1, lambda s, f: hits.append(s))
def child():
    pass
def ping(what):
    before = len(hits)
    os.kill(os.getpid(), signal.SIGUSR1)
    for _ in range(100):
        if len(hits) > before:
            return
        time.sleep(0.01)
    sys.exit("handler lost after " + what)
if __name__ == "__main__":
    ping("start")
    subprocess.run(["/bin/true"]); ping("subprocess")
    subprocess.run(["/bin/true"], close_fds=False); ping("subprocess again")
    for method in ("fork", "spawn", "forkserver"):
        p = mp.get_context(method).Process(target=child); p.start(); p.join()
        ping("multiprocessing " + method)
    pid = os.posix_spawn("/bin/true", ["/bin/true"], os.environ, setsigdef=[signal.SIGUSR1])
    os.waitpid(pid, 0); ping("posix_spawn")
    print("handler kept: %d hits" % len(hits))
PY
    "$SPOTRUN" run --run-id pychildren --max-restarts 0 -- "$PY" children.py >children.log 2>&1 &&
    cat children.log &&
    grep "handler kept: 7 hits" children.log
'

test_expect_success 'a job that terminates its own child, or runs timeout, is not preempted' '
    cat >own_term.py <<\PY &&
import subprocess, time
p = subprocess.Popen(["sleep", "30"]); time.sleep(0.3); p.terminate()
print("child rc", p.wait(), flush=True)
print("timeout rc", subprocess.run(["timeout", "1", "sleep", "5"]).returncode, flush=True)
PY
    "$SPOTRUN" run --run-id ownterm --max-restarts 0 -- "$PY" own_term.py >ownterm.log 2>&1 &&
    cat ownterm.log &&
    grep "child rc -15" ownterm.log && grep "timeout rc 124" ownterm.log &&
    ! grep -i "notice" ownterm.log &&
    ! cat "$SPOTRUN_STORE"/ownterm/events/*.jsonl | grep "\"notice\""
'

test_expect_success 'a SIGTERM from outside to a trainer behind sh -c is still a notice' '
    "$SPOTRUN" run --run-id outside --grace 20s -- \
        sh -c "\"$PY\" trainer.py 60 outside$$; exit \$?" >outside.log 2>&1 &
    pid=$!
    wait_for outside.log "outside$$ ready"
    kill -TERM "$(pgrep -f "^$PY trainer.py 60 outside$$")"
    expect_code 75 wait $pid
    cat outside.log
    grep "preemption notice from job:SIGTERM" outside.log &&
    grep "checkpoint 1 is durable" outside.log
'

test_expect_success 'a SIGTERM the job sends to the wrapper is not a notice' '
    "$SPOTRUN" run --run-id upward --max-restarts 0 -- sh -c "kill -TERM \$PPID; sleep 1; exit 0" \
        >upward.log 2>&1 &&
    cat upward.log &&
    grep "SIGTERM from the job.s own process" upward.log &&
    ! grep "preemption notice from" upward.log
'

test_expect_success 'a job that never listens is not waited for, and the log says why' '
    "$SPOTRUN" run --run-id deaf --grace 60s -- sh -c "echo ready; sleep 60" >deaf.log 2>&1 &
    pid=$!
    wait_for deaf.log "^ready"
    "$SPOTRUN" notify --run-id deaf --deadline 60s
    expect_code 75 wait $pid
    cat deaf.log
    grep "does not listen for checkpoint requests" deaf.log &&
    ! grep "did not commit in time" deaf.log
'

test_expect_success 'no checkpoint at all: the log says so, not that one stands' '
    cat >never.py <<\PY &&
import signal, time
signal.signal(signal.SIGUSR1, lambda s, f: None)
print("ready", flush=True)
time.sleep(60)
PY
    "$SPOTRUN" run --run-id never -- "$PY" never.py >never.log 2>&1 &
    pid=$!
    wait_for never.log "^ready"
    "$SPOTRUN" notify --run-id never --deadline 2s
    expect_code 75 wait $pid
    cat never.log
    grep "run never has no checkpoint yet" never.log &&
    ! grep -E "checkpoint [0-9]+ stands" never.log
'

test_expect_success 'notify right after run & waits for the wrapper' '
    "$SPOTRUN" run --run-id early -- "$PY" trainer.py 60 early >early.log 2>&1 &
    pid=$!
    "$SPOTRUN" notify --run-id early --deadline 20s &&
    expect_code 75 wait $pid
'

test_expect_success 'notify for a run nobody runs says so' '
    expect_code 69 "$SPOTRUN" notify --run-id nobody --wait 0 2>nobody.err &&
    cat nobody.err &&
    grep "no wrapper is running for run nobody (nothing answers at" nobody.err
'

test_expect_success 'real-time request signals: by number and as RTMIN+N' '
    "$SPOTRUN" run --run-id rt --signal RTMIN+2 --every 500ms --max-restarts 0 -- \
        "$PY" trainer.py 3 job >rt.log 2>&1 &&
    set -- $(count job rt.log) && at_least "$1" 2 &&
    "$SPOTRUN" run --run-id rtnum --signal 40 --max-restarts 0 -- sh -c "echo sig=\$SPOTRUN_SIGNAL" \
        >rtnum.log 2>&1 &&
    grep "sig=SIGRTMIN+[0-9]" rtnum.log &&
    expect_code 64 "$SPOTRUN" run --run-id bad --signal RTMIN+99 -- true
'

test_expect_success 'a daemon the job leaves behind (setsid) is stopped with it' '
    "$SPOTRUN" run --run-id daemon --max-restarts 0 -- \
        sh -c "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo \$! >daemon.pid; sleep 0.2" \
        >daemon.log 2>&1 &&
    d=$(cat daemon.pid) &&
    ! kill -0 "$d" 2>/dev/null
'

test_expect_success 'silent connections to the control socket do not stall the wrapper' '
    "$SPOTRUN" run --run-id silent --grace 30s -- \
        sh -c "echo \"\$SPOTRUN_CONTROL\" >sock.path; exec \"$PY\" trainer.py 60 silent" \
        >silent.log 2>&1 &
    pid=$!
    wait_for silent.log "silent ready"
    sock=$(cat sock.path)
    "$PY" -c "
import socket, sys, time
conns = []
for _ in range(40):
    c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); conns.append(c)
time.sleep(30)
" "$sock" &
    idle=$!
    sleep 0.5
    "$SPOTRUN" notify --run-id silent --deadline 10s --wait 0
    expect_code 75 wait $pid
    kill $idle 2>/dev/null
    grep "checkpoint 1 is durable" silent.log
'

# Nobody listens yet (no handler, no poll: a job still starting, say in
# torch's rendezvous, whose TCPStore connect fails on an EINTR): requests
# stay on the job page and no signal is sent; once a process installs a
# handler, they are signalled.
test_expect_success 'the request signal goes out only once someone of the job listens' '
    "$SPOTRUN" run --run-id unheard --every 200ms --max-restarts 0 -- sh -c "sleep 1.5" 2>/dev/null &&
    grep "\"event\":\"request\"" "$SPOTRUN_STORE"/unheard/events/000000.jsonl >unheard.ev &&
    test -s unheard.ev &&
    ! grep -v "\"processes\":0" unheard.ev &&
    "$SPOTRUN" run --run-id ear --every 200ms --max-restarts 0 -- \
        sh -c "trap \"echo heard\" USR1; sleep 1.5; wait" >ear.log 2>/dev/null &&
    grep "\"event\":\"request\"" "$SPOTRUN_STORE"/ear/events/000000.jsonl |
        grep -v "\"processes\":0" | grep . &&
    grep "^heard" ear.log
'

test_done
