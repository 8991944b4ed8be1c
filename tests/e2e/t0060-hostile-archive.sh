#!/usr/bin/env bash
# Hostile archives in the store (built with python3's tarfile and stock
# zstd, with a correct seek table and checksum, so only their entries are
# wrong) are refused: exit 65, a message naming the entry, nothing written
# outside the target, the target unchanged; and a restore falls back to an
# older good checkpoint.
. "$(dirname "$0")/lib.sh"

# mkckpt.py STORE [RUN SEQ STEP KIND]...: writes checkpoint SEQ of RUN the way
# spotrun lays it out (data.tar.zst = one zstd frame + seek table;
# MANIFEST.json with the right sizes and the xxh3-128 checksum, computed
# with the system's libxxhash). The tar holds ok.txt and then, by KIND:
#   benign       nothing else
#   dotdot       ../evil-dotdot and a deep ../../.. path to $EVIL_DIR/evil-deep
#   abs          the absolute path $EVIL_DIR/evil-abs
#   symlink-abs  link -> $EVIL_DIR/linkdir, then link/evil-link-abs
#   symlink-rel  link -> ../linkdir, then link/evil-link-rel
#   symlink-in   sub/ and link -> sub (harmless), then link/evil-through
#   hardlink     hard link evil-hard -> $EVIL_DIR/victim
#   fifo         a fifo named pipe
#   chardev      a character device named null (1,3)
cat >mkckpt.py <<\PY
import ctypes, io, json, os, socket, struct, subprocess, sys, tarfile, time

evil = os.environ["EVIL_DIR"]

def add(tar, name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    ti.size = len(data) if ti.isreg() else 0
    ti.mtime = 1700000000
    tar.addfile(ti, io.BytesIO(data) if ti.size else None)

class H128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]
xxh = ctypes.CDLL("libxxhash.so.0")
xxh.XXH3_128bits.restype = H128
xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

def mkckpt(store, run, seq, step, kind):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "ok.txt", b"fine\n")
        if kind == "dotdot":
            add(tar, "../evil-dotdot", b"pwned\n")
            add(tar, "../" * 16 + evil.lstrip("/") + "/evil-deep", b"pwned\n")
        elif kind == "abs":
            add(tar, evil + "/evil-abs", b"pwned\n")
        elif kind == "symlink-abs":
            add(tar, "link", type=tarfile.SYMTYPE, linkname=evil + "/linkdir")
            add(tar, "link/evil-link-abs", b"pwned\n")
        elif kind == "symlink-rel":
            add(tar, "link", type=tarfile.SYMTYPE, linkname="../linkdir")
            add(tar, "link/evil-link-rel", b"pwned\n")
        elif kind == "symlink-in":
            add(tar, "sub", type=tarfile.DIRTYPE, mode=0o755)
            add(tar, "link", type=tarfile.SYMTYPE, linkname="sub")
            add(tar, "link/evil-through", b"pwned\n")
        elif kind == "hardlink":
            add(tar, "evil-hard", type=tarfile.LNKTYPE, linkname=evil + "/victim")
        elif kind == "fifo":
            add(tar, "pipe", type=tarfile.FIFOTYPE)
        elif kind == "chardev":
            add(tar, "null", type=tarfile.CHRTYPE, devmajor=1, devminor=3)
        elif kind != "benign":
            sys.exit("mkckpt.py: unknown kind " + kind)
    raw = buf.getvalue()

    frame = subprocess.run(["zstd", "-q", "-c", "--no-check"], input=raw,
                           stdout=subprocess.PIPE, check=True).stdout
    # zstd seekable format: a skippable frame with one entry (compressed size,
    # decompressed size), then frame count, descriptor (no checksums), magic.
    entry = struct.pack("<II", len(frame), len(raw))
    data = frame + struct.pack("<II", 0x184D2A5E, len(entry) + 9) + entry + \
        struct.pack("<IBI", 1, 0, 0x8F92EAB1)

    h = xxh.XXH3_128bits(data, len(data))

    d = os.path.join(store, run, "ckpt", "%010d" % seq)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "data.tar.zst"), "wb") as f:
        f.write(data)
    now = int(time.time())
    manifest = {"format": 1, "run_id": run, "seq": seq, "step": step, "created": now,
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                "host": socket.gethostname(), "attempt": 0, "raw_bytes": len(raw),
                "stored_bytes": len(data), "files": 1, "frames": 1, "frame_size": 4194304,
                "level": 3, "codec": "tar+zstd-seekable",
                "checksum": "xxh3-128:%016x%016x" % (h.high64, h.low64), "stage_seconds": 0.0}
    try:  # made under the run's current lease, as a wrapper would
        with open(os.path.join(store, run, "LEASE")) as f:
            manifest["epoch"] = json.load(f)["epoch"]
    except OSError:
        pass
    with open(os.path.join(d, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=2)

store, args = sys.argv[1], sys.argv[2:]
for i in range(0, len(args), 4):
    mkckpt(store, args[i], int(args[i + 1]), int(args[i + 2]), args[i + 3])
PY

export EVIL_DIR=$TRASH/outside
mkdir -p "$EVIL_DIR/linkdir"
echo "do not touch" >"$EVIL_DIR/victim"
mkdir -p good
echo "the good one" >good/state.txt

KINDS="dotdot abs symlink-abs symlink-rel symlink-in hardlink fifo chardev"

# Fails if anything named evil-* exists outside the store, or the victim changed.
no_evil() {
    find "$TRASH" -path "$SPOTRUN_STORE" -prune -o -name "evil-*" -print >found &&
    test ! -s found &&
    test "$(cat "$EVIL_DIR/victim")" = "do not touch" &&
    test -z "$(ls -A "$EVIL_DIR/linkdir")"
}

# A target (an earlier pull's) holding a file that must survive a failed pull.
target() { rm -rf "$1" && mkdir -p "$1" && spotrun_made "$1" && echo mine >"$1/mine.txt"; }
target_unchanged() { test "$(ls -A "$1")" = mine.txt && test "$(cat "$1/mine.txt")" = mine; }

test_expect_success 'setup: craft the checkpoints (h-KIND alone; fb-KIND over a good one)' '
    specs="benign 1 7 benign" &&
    for kind in $KINDS; do
        "$SPOTRUN" push "fb-$kind" good --step 1 2>/dev/null || exit 1
        specs="$specs h-$kind 1 7 $kind fb-$kind 2 2 $kind"
    done &&
    "$PY" mkckpt.py "$SPOTRUN_STORE" $specs
'

test_expect_success 'the crafted format is valid: a benign crafted checkpoint restores' '
    target out &&
    "$SPOTRUN" pull benign out &&
    test "$(cat out/ok.txt)" = fine &&
    test "$(ls -A out)" = ok.txt
'

# expect_refused KIND ENTRY-PATTERN: pull --seq 1 of run h-KIND fails with
# 65, names the entry, and leaves the target and the outside alone.
expect_refused() {
    target "out-$1" &&
    expect_code 65 "$SPOTRUN" pull --seq 1 "h-$1" "out-$1" 2>"err-$1" &&
    cat "err-$1" &&
    grep -i "unsafe" "err-$1" &&
    grep -- "$2" "err-$1" &&
    target_unchanged "out-$1" &&
    no_evil
}

test_expect_success 'a "../" entry is refused, naming it' '
    expect_refused dotdot "\.\./evil-dotdot"
'

test_expect_success 'an absolute path entry is refused, naming it' '
    expect_refused abs "$EVIL_DIR/evil-abs"
'

test_expect_success 'a symlink to an absolute path followed by link/file is refused' '
    expect_refused symlink-abs "link"
'

test_expect_success 'a symlink pointing outside (../) followed by link/file is refused' '
    expect_refused symlink-rel "link"
'

test_expect_success 'a write through an (inside) symlink is refused' '
    expect_refused symlink-in "link"
'

test_expect_success 'a hard link to a file outside is refused' '
    expect_refused hardlink "evil-hard"
'

test_expect_success 'a fifo entry is refused, naming it' '
    expect_refused fifo "pipe"
'

test_expect_success 'a device node entry is refused, naming it' '
    expect_refused chardev "null"
'

test_expect_success 'a failed pull into a new directory creates nothing' '
    expect_code 65 "$SPOTRUN" pull --seq 1 h-abs fresh-target 2>/dev/null &&
    test ! -e fresh-target &&
    no_evil
'

test_expect_success 'newest-first pull of a run whose only checkpoint is hostile: exit 65' '
    target out &&
    expect_code 65 "$SPOTRUN" pull h-dotdot out 2>err &&
    grep "evil-dotdot" err &&
    target_unchanged out &&
    no_evil
'

test_expect_success 'with an older good checkpoint, a restore falls back past each hostile one' '
    for kind in $KINDS; do
        target out &&
        "$SPOTRUN" pull "fb-$kind" out 2>err &&
        diff -r good out &&
        grep "warning" err | grep "seq 2" &&
        no_evil || { say "kind $kind"; cat err; exit 1; }
    done
'

test_expect_success 'spotrun run resumes the job from the good checkpoint, not the hostile one' '
    cat >job.sh <<-\JOB &&
	#!/bin/sh
	echo "step=${SPOTRUN_STEP-none} $(cat "$SPOTRUN_CKPT_DIR/state.txt")" >"$TRASH/seen"
	JOB
    chmod +x job.sh &&
    TRASH=$TRASH "$SPOTRUN" run --run-id fb-symlink-abs -- ./job.sh >run.log 2>&1 &&
    test "$(cat seen)" = "step=1 the good one" &&
    no_evil
'

test_done
