#!/usr/bin/env bash
# What the control socket and the commands that use it accept, and what
# they say when refusing (runtime/supervise/control.h): a request line with
# a word too many is no request; a SPOTRUN_CONTROL that is not a socket is
# said to be one; a bad metric name is echoed only in part; notify's --wait
# and --source are bounded; an {env:X} that is set but empty says so.
. "$(dirname "$0")/lib.sh"

# send LINE: one raw request line to the wrapper at $SOCK, prints the reply.
send() {
    "$PY" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
buf = b""
while b"\n" not in buf:
    c = s.recv(4096)
    if not c:
        break
    buf += c
print(buf.decode().strip())' "$SOCK" "$1"
}

cat >job.sh <<'JOB'
#!/bin/sh
echo "$SPOTRUN_CONTROL" >"$OUT/control"
echo x >"$SPOTRUN_CKPT_DIR/x"
while [ ! -e "$OUT/stop" ]; do sleep 0.05; done
JOB
chmod +x job.sh

test_expect_success 'a request line with a word too many or too long is refused, not half-read' '
    OUT=$PWD "$SPOTRUN" run --run-id ctl -- ./job.sh >run.log 2>&1 &
    p=$!
    wait_for control "."
    SOCK=$(cat control)
    n=0; until send STATUS | grep -q "^OK "; do n=$((n + 1)); test $n -lt 600 || { echo "no answer to STATUS at $SOCK"; exit 1; }; sleep 0.1; done
    test "$(send "COMMIT 1 extra")" = "ERR bad request" &&
    test "$(send "STATUS now")" = "ERR bad request" &&
    test "$(send "NOTIFY 30000 manual extra")" = "ERR bad request" &&
    test "$(send "METRIC - loss 1 2")" = "ERR bad request" &&
    test "$(send "COMMIT 1$(printf "0%.0s" $(seq 1 90))")" = "ERR bad request" &&
    test "$(send "METRIC - loss 0.5")" = "OK" &&
    test "$(send "COMMIT 1")" = "OK 1" &&
    touch stop && wait $p &&
    "$SPOTRUN" show ctl | grep -E "^ +1 +1 " &&
    test "$(ls "$SPOTRUN_STORE/ctl/ckpt")" = "0000000001"
'

test_expect_success 'a regular file as SPOTRUN_CONTROL: commit says it is no control socket (64)' '
    : >notasock &&
    SPOTRUN_CONTROL=$PWD/notasock expect_code 64 "$SPOTRUN" commit --step 1 2>c.err &&
    cat c.err && grep "notasock is not a spotrun control socket (it is a regular file" c.err &&
    ! grep -i "exited\|refused" c.err &&
    SPOTRUN_CONTROL=$PWD/notasock expect_code 64 "$SPOTRUN" metric loss=1 2>m.err &&
    grep "is not a spotrun control socket" m.err
'

test_expect_success 'the python module says so too' '
    SPOTRUN_CONTROL=$PWD/notasock SPOTRUN_RUN_ID=x PYTHONPATH=$SRCDIR/python "$PY" -c "
import spotrun
try:
    spotrun.commit(1)
except spotrun.Error as e:
    print(type(e).__name__, e)
" >py.out 2>&1
    cat py.out
    grep "is not a spotrun control socket" py.out && ! grep "exited" py.out
'

test_expect_success 'metric echoes a bounded prefix of a bad argument' '
    long=$(printf "n%.0s" $(seq 1 5000))
    SPOTRUN_CONTROL=$PWD/notasock expect_code 64 "$SPOTRUN" metric "$long=1" 2>long.err &&
    cat long.err && grep "(5002 characters)" long.err &&
    test "$(wc -c <long.err)" -lt 400
'

test_expect_success 'notify: --wait over 1h and a --source that is no short name are usage errors' '
    expect_code 64 "$SPOTRUN" notify --run-id ctl --wait 2h 2>w.err &&
    grep "wait must be at most 1h" w.err &&
    expect_code 64 "$SPOTRUN" notify --run-id ctl --wait 0 --source "a b" 2>s.err &&
    grep "source must be 1 to 31 letters" s.err
'

test_expect_success '{env:X} set but empty says so, not "not set"' '
    EMPTYVAR= expect_code 64 "$SPOTRUN" run --run-id e --nodes "{env:EMPTYVAR}" --node-rank 0 -- true 2>e.err &&
    cat e.err && grep "EMPTYVAR is set but empty" e.err &&
    EMPTYVAR= expect_code 64 "$SPOTRUN" run --run-id "x-{env:EMPTYVAR}" -- true 2>r.err &&
    cat r.err && grep "EMPTYVAR, which is set but empty" r.err
'

test_done
