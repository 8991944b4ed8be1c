#!/usr/bin/python3
"""train.py - a deterministic PyTorch training job that speaks spotrun's job contract.

A small MLP learns to classify synthetic data labelled by a hidden random
"teacher" network. Everything that influences the result lives in the
checkpoint (model, optimizer, step, torch's global RNG used by dropout, the
minibatch torch.Generator, Python's `random` used for the augmentation noise
level), so a run that is interrupted and resumed ends with exactly the same
weights as one that never stopped; the last line prints their sha256.

The contract (docs/guide.md, "The job's contract"), through the spotrun module
(python/spotrun, docs/python.md):
  * resume:  when spotrun.resumed(), load spotrun.path("state.pt");
  * request: after each step, spotrun.checkpoint_due() (a poll of the job
             page, no signal handler) says whether to save now;
  * save:    `with spotrun.saving("state.pt") as p: torch.save(state, p)`
             (a temp file renamed into place), then spotrun.commit(step);
             a failed commit only warns, and training goes on (the wrapper
             decides whether to stop us).
Without SPOTRUN_CKPT_DIR it simply trains and saves nothing.

Run with /usr/bin/python3 (Debian's PyTorch is importable only from there):
    spotrun run -- /usr/bin/python3 examples/pytorch/train.py --steps 300
"""
import argparse
import hashlib
import os
import random
import sys
import time

import torch
from torch import nn

# The spotrun module of this checkout (python/) when the example runs from
# the repository, so the two always match; otherwise the installed one
# (pip install ./python, or cmake --install).
_REPO_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.path.isfile(os.path.join(_REPO_PYTHON, "spotrun", "__init__.py")):
    sys.path.insert(0, _REPO_PYTHON)
import spotrun  # noqa: E402

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


class Job:
    """The training state and the checkpoint protocol around it."""

    def __init__(self, args):
        self.args = args
        self.ckpt_dir = spotrun.ckpt_dir()
        self.x, self.y = make_data()
        torch.manual_seed(TRAIN_SEED)
        random.seed(TRAIN_SEED)
        self.model = make_model()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.batches = torch.Generator().manual_seed(TRAIN_SEED + 1)
        self.step = 0

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
        path = spotrun.path(CKPT_NAME)
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
        """Atomic write of state.pt, then the commit; failures only warn."""
        try:
            with spotrun.saving(CKPT_NAME) as tmp:
                torch.save(self.state(), tmp)
        except OSError as e:
            print("train.py: warning: cannot save checkpoint in %s: %s" % (self.ckpt_dir, e),
                  file=sys.stderr, flush=True)
            return
        try:
            spotrun.commit(self.step)
        except spotrun.WrapperGone as e:
            print("train.py: warning: %s; training goes on without checkpoints" % e,
                  file=sys.stderr, flush=True)
            self.ckpt_dir = None  # nobody is left to commit to
        except spotrun.Error as e:
            print("train.py: warning: commit of step %d failed (%s); training goes on"
                  % (self.step, e), file=sys.stderr, flush=True)

    def report(self, loss):
        """The loss into the run's event log (`spotrun show`); never fatal."""
        if not self.ckpt_dir:
            return
        try:
            spotrun.metric("loss", loss, step=self.step)
        except (spotrun.Error, ValueError) as e:  # ValueError: a nan loss
            print("train.py: warning: metric not recorded: %s" % e, file=sys.stderr, flush=True)

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
        may_crash = spotrun.attempt() == 0
        saved_at = self.step
        while self.step < args.steps:
            if may_crash and args.crash_at is not None and self.step == args.crash_at:
                log("crashing at step %d as asked" % self.step)
                os._exit(3)
            loss = self.train_step()
            if self.step % 10 == 0:
                log("step %d loss %.6f" % (self.step, loss))
                self.report(loss)
            requested = spotrun.checkpoint_due()  # pending until a commit answers it
            periodic = args.save_every > 0 and self.step % args.save_every == 0
            if self.ckpt_dir and (requested or periodic):
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
    if job.ckpt_dir and spotrun.resumed():
        job.load()
    job.run()
    digest = weights_sha256(job.model)
    log("final weights sha256: %s" % digest)
    if args.out:
        with open(args.out, "w") as f:
            f.write(digest + "\n")


if __name__ == "__main__":
    main()
