#!/usr/bin/env python3
"""mkhostile.py STORE RUN SEQ STEP KIND [FIELD=VALUE]...: plants checkpoint
SEQ of RUN in a file store the way spotrun lays it out (data.tar.zst: one
zstd frame + seek table; MANIFEST.json with the right sizes and the
xxh3-128 checksum from the system's libxxhash), so that only what KIND
makes hostile is wrong. FIELD=VALUE overrides a manifest field (an integer
when VALUE is one), e.g. epoch=9223372036854775807.

KIND:
  benign     ok.txt
  deep:N     ok.txt and N nested directories a/a/.../a holding a file
"""
import ctypes, io, json, os, socket, struct, subprocess, sys, tarfile, time


def add(tar, name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    ti.size = len(data) if ti.isreg() else 0
    ti.mtime = 1700000000
    tar.addfile(ti, io.BytesIO(data) if ti.size else None)


class H128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


def xxh3_128(data):
    xxh = ctypes.CDLL("libxxhash.so.0")
    xxh.XXH3_128bits.restype = H128
    xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    h = xxh.XXH3_128bits(data, len(data))
    return "xxh3-128:%016x%016x" % (h.high64, h.low64)


def tar_of(kind):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "ok.txt", b"fine\n")
        if kind.startswith("deep:"):
            path = ""
            for _ in range(int(kind[5:])):
                path = path + "/a" if path else "a"
                add(tar, path, type=tarfile.DIRTYPE, mode=0o755)
            add(tar, path + "/leaf", b"deep\n")
        elif kind != "benign":
            sys.exit("mkhostile.py: unknown kind " + kind)
    return buf.getvalue()


def main():
    store, run, seq, step, kind = sys.argv[1:6]
    seq, step = int(seq), int(step)
    raw = tar_of(kind)
    frame = subprocess.run(["zstd", "-q", "-c", "--no-check"], input=raw,
                           stdout=subprocess.PIPE, check=True).stdout
    # zstd seekable format: a skippable frame with one entry (compressed
    # size, decompressed size), then frame count, descriptor, magic.
    entry = struct.pack("<II", len(frame), len(raw))
    data = frame + struct.pack("<II", 0x184D2A5E, len(entry) + 9) + entry + \
        struct.pack("<IBI", 1, 0, 0x8F92EAB1)
    d = os.path.join(store, run, "ckpt", "%010d" % seq)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "data.tar.zst"), "wb") as f:
        f.write(data)
    now = int(time.time())
    m = {"format": 1, "run_id": run, "seq": seq, "step": step, "created": now,
         "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
         "host": socket.gethostname(), "attempt": 0, "raw_bytes": len(raw),
         "stored_bytes": len(data), "files": 1, "frames": 1, "frame_size": 4194304,
         "level": 3, "codec": "tar+zstd-seekable", "checksum": xxh3_128(data),
         "stage_seconds": 0.0}
    try:  # made under the run's current lease, as a wrapper would
        with open(os.path.join(store, run, "LEASE")) as f:
            m["epoch"] = json.load(f)["epoch"]
    except (OSError, ValueError, KeyError):
        pass
    for kv in sys.argv[6:]:
        k, v = kv.split("=", 1)
        m[k] = int(v) if v.lstrip("-").isdigit() else v
    with open(os.path.join(d, "MANIFEST.json"), "w") as f:
        json.dump(m, f, indent=2)


main()
