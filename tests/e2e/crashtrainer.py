#!/usr/bin/env python3
"""crashtrainer.py - the toy trainer of the crash-consistency loop
(tests/e2e/crashloop.py): a deterministic step sequence whose whole state
is one file that carries its own checksum.

    crashtrainer.py inplace DIR [--steps N] [--size BYTES] ...
        the zero-line path: saves DIR/state.bin itself, in place (like
        nanoGPT's torch.save of out_dir/ckpt.pt), and resumes from it when
        the file exists; it never talks to spotrun (run it under --settle
        with -d DIR)
    crashtrainer.py commit [--steps N] ...
        saves $SPOTRUN_CKPT_DIR/state.bin in place, then runs
        `spotrun commit --step N`; a checkpoint request (the request signal)
        is answered by the same save and commit at the next step

State after step n: "CRSH", n (8 bytes), seed(n) (32 bytes), a payload of
--size bytes expanded from seed(n) (SHAKE-256), and a SHA-256 trailer of
everything before it. seed(0) = SHA-256("crashtrainer"), seed(n) =
SHA-256(seed(n-1) || n): the sequence is fixed, so the final state (and
the digest printed at the end) is known in advance. A restored file is
verified whole (length, trailer, payload, and seed against the chain); one
that fails exits 3 with "restored state fails its checksum", as a real
trainer crashes on a torn torch.save. Each line it prints is flushed at
once (the loop reads them to aim its kills): "start pid=P", "resumed step
K", "fresh", "save K begin", "save K end", "done step N digest HEX".
"""
import argparse
import hashlib
import os
import signal
import subprocess
import sys
import time

MAGIC = b"CRSH"


def seed_of(step):
    s = hashlib.sha256(b"crashtrainer").digest()
    for n in range(1, step + 1):
        s = hashlib.sha256(s + n.to_bytes(8, "little")).digest()
    return s


def state_of(step, size):
    seed = seed_of(step)
    body = MAGIC + step.to_bytes(8, "little") + seed + hashlib.shake_256(seed).digest(size)
    return body + hashlib.sha256(body).digest()


def verify(data, size):
    """The step a state file holds, or raises ValueError saying why not."""
    if len(data) != 4 + 8 + 32 + size + 32:
        raise ValueError(f"{len(data)} bytes, want {4 + 8 + 32 + size + 32}")
    body, trailer = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != trailer:
        raise ValueError("sha256 trailer does not match")
    if body[:4] != MAGIC:
        raise ValueError("bad magic")
    step = int.from_bytes(body[4:12], "little")
    if body[12:44] != seed_of(step):
        raise ValueError(f"seed is not the one of step {step}")
    if body[44:] != hashlib.shake_256(body[12:44]).digest(size):
        raise ValueError("payload does not follow from its seed")
    return step


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def save(path, step, a):
    """Writes the state in place, in chunks, slowly: a save takes a while."""
    data = state_of(step, a.size)
    say(f"save {step} begin")
    with open(path, "wb") as f:
        for off in range(0, len(data), a.chunk):
            f.write(data[off : off + a.chunk])
            f.flush()
            time.sleep(a.chunk_pause)
    say(f"save {step} end")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["inplace", "commit"])
    p.add_argument("dir", nargs="?", help="inplace: the directory it saves in")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--size", type=int, default=256 << 10, help="payload bytes")
    p.add_argument("--chunk", type=int, default=32 << 10)
    p.add_argument("--chunk-pause", type=float, default=0.04)
    p.add_argument("--step-time", type=float, default=0.3, help="'training' between saves")
    p.add_argument("--spotrun", default=os.environ.get("SPOTRUN_BIN", "spotrun"))
    a = p.parse_args()
    if a.mode == "inplace":
        if not a.dir:
            p.error("inplace needs DIR")
        ckdir = a.dir
    else:
        ckdir = os.environ["SPOTRUN_CKPT_DIR"]
        signal.signal(signal.SIGUSR1, lambda *_: None)  # a request: the next save answers it
    os.makedirs(ckdir, exist_ok=True)
    path = os.path.join(ckdir, "state.bin")
    say(f"start pid={os.getpid()}")
    step = 0
    if os.path.exists(path):
        with open(path, "rb") as f:
            data = f.read()
        try:
            step = verify(data, a.size)
        except ValueError as e:
            sys.stderr.write(f"crashtrainer: restored state fails its checksum: {e}\n")
            sys.exit(3)
        say(f"resumed step {step}")
    else:
        say("fresh")
    while step < a.steps:
        time.sleep(a.step_time)
        step += 1
        save(path, step, a)
        if a.mode == "commit":
            subprocess.run([a.spotrun, "commit", "-q", "--step", str(step)], check=True)
    with open(path, "rb") as f:
        final = f.read()
    say(f"done step {verify(final, a.size)} digest {hashlib.sha256(final).hexdigest()}")


if __name__ == "__main__":
    main()
