# lib-save.sh - a trainer that saves its own checkpoint in place, slowly
# (t0081-t0083: a save in flight at a stop, a kill, a settle). Sourced
# after lib.sh; writes ./saver.py into $TRASH.
#
# saver.py: on start, when $SPOTRUN_CKPT_DIR/ckpt.pt exists, checks it as
# torch.load would (a header, the payload, a trailer with the SHA-256 of
# both) and exits 3 on a torn file ("torn checkpoint"), else says "resumed
# from step N". Then it trains (a step is STEP_S seconds) and every
# SAVE_EVERY steps rewrites ckpt.pt in place (open "wb", like torch.save):
# SIZE_KB KiB in CHUNK_KB KiB chunks, CHUNK_S seconds apart, with a pause
# of PAUSE_S seconds halfway through the save numbered PAUSE_SAVE (0: none).
# Before a save it writes $MARKS/saving-N (its pid), after it saved-N.
# It exits 0 once its step reaches MAX_STEP (0: at once after the check).
# LOG_APPEND=1: it keeps train.log in the directory open for appending (a
# log, not a save; one line at the start).
# `saver.py --check FILE` checks a file only: "ok step N", or exit 3.
cat >saver.py <<\PY
import hashlib, os, sys, time

def check(path):
    data = open(path, "rb").read()
    head, sep, rest = data.partition(b"\n")
    if not sep or not head.startswith(b"SAVER step="):
        return None
    step, size = (int(f.split(b"=")[1]) for f in head.split()[1:3])
    payload, trailer = rest[:size], rest[size:]
    want = b"END " + hashlib.sha256(head + b"\n" + payload).hexdigest().encode() + b"\n"
    return step if len(payload) == size and trailer == want else None

def env(name, default):
    return type(default)(os.environ.get(name, default))

if sys.argv[1:2] == ["--check"]:
    step = check(sys.argv[2]) if os.path.exists(sys.argv[2]) else None
    if step is None:
        print("torn checkpoint: %s" % sys.argv[2], flush=True)
        sys.exit(3)
    print("ok step %d" % step, flush=True)
    sys.exit(0)

d = os.environ["SPOTRUN_CKPT_DIR"]
marks = os.environ.get("MARKS", ".")
path = os.path.join(d, "ckpt.pt")
step = 0
if os.path.exists(path):
    step = check(path)
    if step is None:
        print("torn checkpoint: %s (PytorchStreamReader failed: central directory)" % path,
              flush=True)
        sys.exit(3)
    print("resumed from step %d" % step, flush=True)
size, chunk = env("SIZE_KB", 4096) * 1024, env("CHUNK_KB", 256) * 1024
log = open(os.path.join(d, "train.log"), "a") if env("LOG_APPEND", 0) else None
if log:
    log.write("started at step %d\n" % step)
    log.flush()
saves = 0
while step < env("MAX_STEP", 0):
    time.sleep(env("STEP_S", 0.2))
    step += 1
    if step % env("SAVE_EVERY", 5):
        continue
    saves += 1
    open(os.path.join(marks, "saving-%d" % saves), "w").write("%d\n" % os.getpid())
    print("saving step %d (save %d, pid %d)" % (step, saves, os.getpid()), flush=True)
    head = b"SAVER step=%d size=%d\n" % (step, size)
    h = hashlib.sha256(head)
    with open(path, "wb") as f:
        f.write(head)
        written = 0
        while written < size:
            block = hashlib.sha256(b"%d.%d" % (step, written)).digest() * (chunk // 32)
            block = block[: size - written]
            f.write(block)
            f.flush()
            h.update(block)
            written += len(block)
            if saves == env("PAUSE_SAVE", 0) and written >= size // 2 > written - len(block):
                print("pausing mid-save", flush=True)
                time.sleep(env("PAUSE_S", 0.0))
            time.sleep(env("CHUNK_S", 0.05))
        f.write(b"END " + h.hexdigest().encode() + b"\n")
    open(os.path.join(marks, "saved-%d" % saves), "w").write("%d\n" % step)
    print("saved step %d" % step, flush=True)
print("done at step %d" % step, flush=True)
PY
export MARKS=$TRASH
