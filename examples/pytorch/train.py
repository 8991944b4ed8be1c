#!/usr/bin/python3
"""train.py - a deterministic PyTorch training job that speaks spotrun's job contract.

A small MLP learns to classify synthetic data labelled by a hidden random
"teacher" network. Everything that influences the result lives in the
checkpoint (model, optimizer, step, torch's global RNG used by dropout, the
minibatch torch.Generator, Python's `random` used for the augmentation noise
level), so a run that is interrupted and resumed ends with exactly the same
weights as one that never stopped; the last line prints their sha256.

Contract with the wrapper (see DESIGN.md, "The job's contract"):
  * resume: when SPOTRUN_RESUMED=1, load $SPOTRUN_CKPT_DIR/state.pt;
  * save:   write state.pt (temp file, fsync, os.replace), then run
            `$SPOTRUN_BIN commit --step N` and check its exit status;
  * request: the signal named by SPOTRUN_SIGNAL (default SIGUSR1) only sets
            a flag; after the current step we save, commit and keep training
            (the wrapper decides whether to stop us).
Without SPOTRUN_CKPT_DIR it simply trains and saves nothing.

Run with /usr/bin/python3 (Debian's PyTorch is importable only from there):
    spotrun run -- /usr/bin/python3 examples/pytorch/train.py --steps 300
"""
import argparse
import hashlib
import os
import random
import signal
import subprocess
import sys
import time

import torch
from torch import nn

N_SAMPLES = 8192
N_FEATURES = 64
N_CLASSES = 10
WIDTH = 256
BATCH = 256
DATA_SEED = 20240601
TRAIN_SEED = 1234
CKPT_NAME = "state.pt"


def log(msg):
    print(msg, flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--save-every", type=int, default=50,
                   help="checkpoint every K steps; 0 = only on request (default 50)")
    p.add_argument("--pace", type=float, default=0.0, help="sleep SECONDS after each step")
    p.add_argument("--out", help="write the final weights' sha256 (hex) to FILE")
    p.add_argument("--crash-at", type=int, default=None,
                   help="exit 3 on reaching STEP, on the first attempt only (for tests)")
    args = p.parse_args()
    if args.steps < 0 or args.save_every < 0 or args.pace < 0:
        p.error("--steps, --save-every and --pace must not be negative")
    return args


def make_data():
    """Inputs and labels from a fixed seed; identical on every start."""
    g = torch.Generator().manual_seed(DATA_SEED)
    x = torch.randn(N_SAMPLES, N_FEATURES, generator=g)
    w1 = torch.randn(N_FEATURES, 32, generator=g) / N_FEATURES ** 0.5
    w2 = torch.randn(32, N_CLASSES, generator=g) / 32 ** 0.5
    y = (torch.tanh(x @ w1) @ w2).argmax(dim=1)
    return x, y


def make_model():
    return nn.Sequential(
        nn.Linear(N_FEATURES, WIDTH), nn.ReLU(),
        nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(WIDTH, WIDTH), nn.ReLU(),
        nn.Linear(WIDTH, N_CLASSES),
    )


def weights_sha256(model):
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def signal_from_name(name):
    """'SIGUSR1', 'USR1', 'usr1', '10', 'SIGRTMIN+2' -> signal number."""
    name = name.strip().upper()
    if name.isdigit():
        return int(name)
    if not name.startswith("SIG"):
        name = "SIG" + name
    for base in ("SIGRTMIN+", "SIGRTMAX-"):
        if name.startswith(base) and name[len(base):].isdigit():
            off = int(name[len(base):])
            return signal.SIGRTMIN + off if base == "SIGRTMIN+" else signal.SIGRTMAX - off
    return int(signal.Signals[name])


class Job:
    """The training state and the checkpoint protocol around it."""

    def __init__(self, args):
        self.args = args
        self.ckpt_dir = os.environ.get("SPOTRUN_CKPT_DIR") or None
        self.spotrun = os.environ.get("SPOTRUN_BIN") or "spotrun"
        self.requested = False
        self.x, self.y = make_data()
        torch.manual_seed(TRAIN_SEED)
        random.seed(TRAIN_SEED)
        self.model = make_model()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.batches = torch.Generator().manual_seed(TRAIN_SEED + 1)
        self.step = 0

    def _on_signal(self, signum, frame):
        self.requested = True  # acted on between steps, never here

    def install_handler(self):
        name = os.environ.get("SPOTRUN_SIGNAL") or "SIGUSR1"
        try:
            signum = signal_from_name(name)
        except (KeyError, ValueError):
            sys.exit("train.py: unknown signal name in SPOTRUN_SIGNAL: %r" % name)
        signal.signal(signum, self._on_signal)

    def state(self):
        return {
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "step": self.step,
            "torch_rng": torch.get_rng_state(),
            "batch_generator": self.batches.get_state(),
            "python_random": random.getstate(),
        }

    def load(self):
        path = os.path.join(self.ckpt_dir, CKPT_NAME)
        if not os.path.exists(path):
            log("no %s in %s: starting fresh" % (CKPT_NAME, self.ckpt_dir))
            return
        st = torch.load(path)
        self.model.load_state_dict(st["model"])
        self.opt.load_state_dict(st["optimizer"])
        self.step = int(st["step"])
        torch.set_rng_state(st["torch_rng"])
        self.batches.set_state(st["batch_generator"])
        random.setstate(st["python_random"])
        log("resumed from step %d" % self.step)

    def save(self):
        """Durable write of state.pt, then `spotrun commit`; failures only warn."""
        path = os.path.join(self.ckpt_dir, CKPT_NAME)
        tmp = os.path.join(self.ckpt_dir, ".%s.tmp.%d" % (CKPT_NAME, os.getpid()))
        try:
            with open(tmp, "wb") as f:
                torch.save(self.state(), f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            dfd = os.open(self.ckpt_dir, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as e:
            print("train.py: warning: cannot save checkpoint in %s: %s" % (self.ckpt_dir, e),
                  file=sys.stderr, flush=True)
            return
        cmd = [self.spotrun, "commit", "--step", str(self.step)]
        try:
            rc = subprocess.run(cmd).returncode
        except OSError as e:
            rc = e
        if rc != 0:
            print("train.py: warning: %s failed (%s); training goes on" % (" ".join(cmd), rc),
                  file=sys.stderr, flush=True)

    def train_step(self):
        self.model.train()
        idx = torch.randint(0, N_SAMPLES, (BATCH,), generator=self.batches)
        noise_level = random.uniform(0.0, 0.05)
        xb = self.x[idx]
        xb = xb + noise_level * torch.randn(xb.shape, generator=self.batches)
        loss = nn.functional.cross_entropy(self.model(xb), self.y[idx])
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.step += 1
        return loss.item()

    def run(self):
        args = self.args
        may_crash = os.environ.get("SPOTRUN_ATTEMPT", "0") in ("", "0")
        saved_at = self.step
        while self.step < args.steps:
            if may_crash and args.crash_at is not None and self.step == args.crash_at:
                log("crashing at step %d as asked" % self.step)
                os._exit(3)
            loss = self.train_step()
            if self.step % 10 == 0:
                log("step %d loss %.6f" % (self.step, loss))
            requested = self.requested
            periodic = args.save_every > 0 and self.step % args.save_every == 0
            if self.ckpt_dir and (requested or periodic):
                self.requested = False  # a request arriving during save stays pending
                if requested:  # before the commit: the wrapper may stop us right after it
                    log("checkpoint requested at step %d" % self.step)
                self.save()
                saved_at = self.step
            if args.pace > 0:
                time.sleep(args.pace)
        if self.ckpt_dir and saved_at != self.step:
            self.save()  # the finished state: a late restart has nothing to redo


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    job = Job(args)
    if job.ckpt_dir:
        job.install_handler()
        if os.environ.get("SPOTRUN_RESUMED") == "1":
            job.load()
    job.run()
    digest = weights_sha256(job.model)
    log("final weights sha256: %s" % digest)
    if args.out:
        with open(args.out, "w") as f:
            f.write(digest + "\n")


if __name__ == "__main__":
    main()
