#!/usr/bin/env bash
# spotrun_register: host and (fake) device buffers written at each commit
# and filled back on resume, bit for bit; the GPU memory peak in the
# manifest and `spotrun show`; the API from Python through ctypes.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAKECUDA:-}" ]; then
    say "ok 1 # skip: no fake CUDA libraries (CUDA headers not found at configure time)"
    exit 0
fi
REGJOB=$FAKECUDA/regjob

test_expect_success 'uninterrupted reference run' '
    "$REGJOB" --steps 600 --out ref.bin >ref.log
'

test_expect_success 'notify: registered buffers are saved at the commit; spotrun exits 75' '
    "$SPOTRUN" run --run-id reg -- "$REGJOB" --steps 600 --pace-ms 2 --out w.bin >run1.log 2>&1 &
    wait_for run1.log "step 200$"
    "$SPOTRUN" notify --run-id reg --deadline 20s
    expect_code 75 wait $!
    grep "checkpoint requested at step" run1.log &&
    test ! -e w.bin
'

test_expect_success 'the checkpoint holds the buffers; show prints the GPU memory peak' '
    "$SPOTRUN" pull reg pulled >/dev/null 2>&1 &&
    test "$(stat -c %s pulled/spotrun-buffers/device.bin)" = 262144 &&
    test "$(stat -c %s pulled/spotrun-buffers/host.bin)" = 16384 &&
    test "$(stat -c %s pulled/spotrun-buffers/step.bin)" = 8 &&
    "$SPOTRUN" show reg >show.out && cat show.out &&
    grep "^gpu peak: *dev0 256.0 KiB" show.out &&
    grep -A2 "\"gpu\"" store/reg/ckpt/*/MANIFEST.json | grep 262144
'

test_expect_success 'rerun: buffers are filled back and the result is bit-exact' '
    "$SPOTRUN" run --run-id reg -- "$REGJOB" --steps 600 --out w.bin >run2.log 2>&1 &&
    grep "resumed from step" run2.log &&
    cmp ref.bin w.bin
'

test_expect_success 'crash and restart: the same, without a notice' '
    "$SPOTRUN" run --run-id reg2 --backoff 10ms -- "$REGJOB" --steps 600 --save-every 100 \
        --crash-at 250 --out w2.bin >run3.log 2>&1 &&
    grep "resumed from step 200" run3.log &&
    cmp ref.bin w2.bin
'

cat >py_reg.py <<\PY
import ctypes, os, sys
lib = ctypes.CDLL(None)
n = int(sys.argv[1])
buf = (ctypes.c_double * n)()
rc = lib.spotrun_register(b"weights", buf, ctypes.sizeof(buf))
if rc == 1:
    print("restored", list(buf[:3]))
    sys.exit(0)
print("register rc=%d" % rc)
if rc < 0:
    sys.exit(1)
for i in range(n):
    buf[i] = i * 0.25
print("commit rc=%d" % lib.spotrun_commit(7))
sys.stdout.flush()
os._exit(3)
PY

test_expect_success 'Python via ctypes: register, commit, crash, resume restores the buffer' '
    "$SPOTRUN" run --run-id py --backoff 10ms -- "$PY" py_reg.py 1000 >py.log 2>&1 &&
    grep "commit rc=0" py.log &&
    grep "restored \[0.0, 0.25, 0.5\]" py.log
'

test_expect_success 'a size mismatch on resume is a clear error, the buffer untouched' '
    "$SPOTRUN" run --run-id py2 --max-restarts 0 -- "$PY" py_reg.py 10 \
        >/dev/null 2>&1 || true
    cat >py_mis.py <<\PY &&
import ctypes, sys
lib = ctypes.CDLL(None)
buf = (ctypes.c_double * 20)(*([9.0] * 20))
rc = lib.spotrun_register(b"weights", buf, ctypes.sizeof(buf))
print("rc=%d first=%s" % (rc, buf[0]))
PY
    "$SPOTRUN" run --run-id py2 -- "$PY" py_mis.py >mis.log 2>&1 &&
    grep "rc=-90 first=9.0" mis.log &&
    grep "register \"weights\": the checkpoint holds 80 bytes but the buffer has 160" mis.log
'

test_done
