#!/usr/bin/python3
"""study-chunking.py - how much of a checkpoint is reusable from the previous one?

Issue 16 (upload only what changed), stage 1: measure before choosing how to
cut the tar stream into frames. For pairs of consecutive checkpoints it
builds the pax tar stream spotrun would write (sorted walk, ustar headers
with mtime/size/mode; Python's tarfile in PAX_FORMAT, the same layout as
libarchive's restricted pax for these names) and reports the fraction of the
second checkpoint's tar bytes that lie in frames whose content also occurs
in the first checkpoint, under four ways of cutting:

  fixed      today: every 4 MiB of the tar stream, regardless of entries
  file       file-aligned: each regular file >= 256 KiB starts a new frame
             at its data and is cut every 4 MiB from there; the frame ends
             with its data (and tar padding); headers and small files share
             frames between large files
  file+hdr   the same, but each large file's frame starts at its header
             (header and data together: a rewritten file's new mtime makes
             the first frame differ)
  file@1M    `file` with 1 MiB frames instead of 4 MiB
  cdc        content-defined chunks over each file's data (rolling sum of
             random byte values over a 48-byte window, cut where its low 20
             bits are 0, min 128 KiB, max 4 MiB: ~1 MiB average), headers
             and small files as in `file`

Cases: (a) examples/pytorch/train.py's model + Adam state at two
consecutive steps; (b) a model with a frozen ~77 MB embedding and a small
trainable head (Adam on the head only) at two consecutive steps; (c) a
synthetic directory of 32 x 8 MiB files where one file (~3%) is rewritten
per step, with and without a small metadata file, sorted first, that grows
by a few bytes per step (which shifts every later tar offset).

Usage: /usr/bin/python3 scripts/study-chunking.py [--quick]
Needs python3 (stdlib), numpy and torch (Debian's, at /usr/bin/python3).
"""
import argparse
import hashlib
import io
import os
import random
import sys
import tarfile
import tempfile
import time
import zipfile

import numpy as np

MiB = 1 << 20
FRAME = 4 * MiB
SMALL = 256 << 10  # files below this share frames (stage 2's threshold)
CDC_WINDOW = 48
CDC_BITS = 20
CDC_MIN = 128 << 10
CDC_MAX = 4 * MiB
_GEAR = np.random.default_rng(16).integers(0, 1 << 32, size=256, dtype=np.uint64)


def tar_stream(root):
    """The tar stream of root's tree (sorted) and its regular files as
    (header offset, data offset, size)."""
    buf = io.BytesIO()
    entries = []
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(dirnames + filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                ti = tf.gettarinfo(full, arcname=rel)
                ti.uname = ti.gname = ""
                ti.mtime = int(ti.mtime)
                if ti.isfile():
                    hdr = buf.tell()
                    with open(full, "rb") as f:
                        tf.addfile(ti, f)
                    size = ti.size
                    entries.append((hdr, buf.tell() - (size + 511) // 512 * 512, size))
                elif ti.isdir():
                    tf.addfile(ti)
    return buf.getvalue(), entries


def cdc_cuts(data):
    """Chunk boundaries (ends) of data by a windowed rolling sum."""
    n = len(data)
    if n <= CDC_MIN:
        return [n]
    b = np.frombuffer(data, dtype=np.uint8)
    g = _GEAR[b]
    cs = np.cumsum(g, dtype=np.uint64)
    h = cs.copy()
    h[CDC_WINDOW:] -= cs[:-CDC_WINDOW]
    cand = np.nonzero((h & np.uint64((1 << CDC_BITS) - 1)) == 0)[0] + 1
    cuts, last = [], 0
    ci = 0
    while n - last > CDC_MAX or (n - last > 0 and ci < len(cand)):
        while ci < len(cand) and cand[ci] < last + CDC_MIN:
            ci += 1
        nxt = int(cand[ci]) if ci < len(cand) else n
        if nxt - last > CDC_MAX:
            nxt = last + CDC_MAX
        if nxt >= n:
            break
        cuts.append(nxt)
        last = nxt
    cuts.append(n)
    return cuts


def frames(stream, entries, how):
    """Frame boundaries [(start, end)] of stream under `how`."""
    FRAME = MiB if how.endswith("@1M") else globals()["FRAME"]
    how = how.split("@")[0]
    if how == "fixed":
        return [(o, min(o + FRAME, len(stream))) for o in range(0, len(stream), FRAME)]
    cuts = set([0, len(stream)])
    for hdr, off, size in entries:
        if size < SMALL:
            continue
        end = off + (size + 511) // 512 * 512
        start = hdr if how == "file+hdr" else off
        cuts.add(start)
        cuts.add(end)
        if how == "cdc":
            cuts.update(off + c for c in cdc_cuts(stream[off:off + size])[:-1])
        else:
            cuts.update(range(off + FRAME, off + size, FRAME))
    # headers and small files between large files: at most FRAME per frame
    out, pts = [], sorted(cuts)
    for a, b in zip(pts, pts[1:]):
        while b - a > FRAME:
            out.append((a, a + FRAME))
            a += FRAME
        out.append((a, b))
    return out


def reuse(prev, cur, how):
    ps, pe = prev
    cs, ce = cur
    seen = {hashlib.sha256(ps[a:b]).digest() for a, b in frames(ps, pe, how)}
    fr = frames(cs, ce, how)
    hit = sum(b - a for a, b in fr if hashlib.sha256(cs[a:b]).digest() in seen)
    return hit / len(cs), len(fr)


def zip_offsets(path):
    with zipfile.ZipFile(path) as z:
        return {i.filename.split("/", 1)[1]: (i.header_offset, i.file_size) for i in z.infolist()}


def torch_pair(tmp, which):
    import torch
    from torch import nn
    d1, d2 = os.path.join(tmp, which + "1"), os.path.join(tmp, which + "2")
    os.makedirs(d1)
    os.makedirs(d2)
    torch.manual_seed(0)
    if which == "example":
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "examples", "pytorch"))
        os.environ.pop("SPOTRUN_CKPT_DIR", None)
        import train
        job = train.Job(argparse.Namespace(steps=10, save_every=0, pace=0, out=None,
                                           crash_at=None))
        step, state = job.train_step, job.state
    else:
        emb = nn.Embedding(50000, 384)  # 76.8 MB, frozen
        emb.weight.requires_grad_(False)
        head = nn.Linear(384, 1000)
        model = nn.ModuleDict({"backbone": emb, "head": head})
        opt = torch.optim.Adam(head.parameters(), lr=1e-3)
        it = [0]

        def step():
            x = torch.randint(0, 50000, (64, 16))
            y = torch.randint(0, 1000, (64,))
            loss = nn.functional.cross_entropy(head(emb(x).mean(1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            it[0] += 1

        def state():
            return {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": it[0]}
    step()
    torch.save(state(), os.path.join(d1, "state.pt"))
    time.sleep(1.1)  # a new whole-second mtime, as between real steps
    step()
    torch.save(state(), os.path.join(d2, "state.pt"))
    a, b = zip_offsets(os.path.join(d1, "state.pt")), zip_offsets(os.path.join(d2, "state.pt"))
    same = sum(1 for k in b if a.get(k) == b[k])
    print("  %s: state.pt %d -> %d bytes; zip entries at the same offset and size: %d of %d"
          % (which, os.path.getsize(os.path.join(d1, "state.pt")),
             os.path.getsize(os.path.join(d2, "state.pt")), same, len(b)), file=sys.stderr)
    return d1, d2


def synthetic_pair(tmp, grow, nfiles, fsize):
    d1, d2 = os.path.join(tmp, "syn%d_1" % grow), os.path.join(tmp, "syn%d_2" % grow)
    rnd = random.Random(7)
    for d in (d1, d2):
        os.makedirs(d)
    for i in range(nfiles):
        blob = rnd.randbytes(fsize)
        for d in (d1, d2):
            with open(os.path.join(d, "shard-%03d.bin" % i), "wb") as f:
                f.write(blob)
    with open(os.path.join(d2, "shard-%03d.bin" % (nfiles // 2)), "wb") as f:
        f.write(rnd.randbytes(fsize))  # the one file this step changed
    for d, n in ((d1, 100), (d2, 101)):
        with open(os.path.join(d, "a-meta.json"), "w") as f:
            # a growing log: 700 more bytes shift every later tar offset
            f.write('{"step": %d, "log": "%s"}\n' % (n, "x" * (700 + 700 * (n - 100) * grow)))
    return d1, d2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smaller synthetic directory")
    args = ap.parse_args()
    nfiles, fsize = (8, 4 * MiB) if args.quick else (32, 8 * MiB)
    hows = ["fixed", "file", "file@1M", "file+hdr", "cdc"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="spotrun-study-") as tmp:
        cases = [("(a) example MLP+Adam", torch_pair(tmp, "example")),
                 ("(b) frozen 77MB emb + head", torch_pair(tmp, "frozen")),
                 ("(c) synthetic, sizes stable", synthetic_pair(tmp, 0, nfiles, fsize)),
                 ("(c') synthetic, meta grows", synthetic_pair(tmp, 1, nfiles, fsize))]
        for title, (d1, d2) in cases:
            s1, s2 = tar_stream(d1), tar_stream(d2)
            r = [reuse(s1, s2, h) for h in hows]
            rows.append((title, len(s2[0]), r))
    print("%-28s %10s | %s" % ("case", "tar bytes", " | ".join("%-15s" % h for h in hows)))
    print("%-28s %10s | %s" % ("", "", " | ".join("%-15s" % "reuse  frames" for _ in hows)))
    for title, size, r in rows:
        print("%-28s %10d | %s" % (title, size,
                                   " | ".join("%5.1f%%  %6d " % (100 * f, n) for f, n in r)))


if __name__ == "__main__":
    main()
