#!/usr/bin/python3
"""train_ddp.py - train.py's MLP with torch.distributed (gloo, CPU): every
rank agrees on when to checkpoint, each saves its own file, one commits.

Start one process per rank with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
set (python3 -m spotrun.launch, or torchrun where it works):

    spotrun run -- /usr/bin/python3 -m spotrun.launch --nproc-per-node 2 \\
        examples/pytorch/train_ddp.py --steps 300 --save-every 0

The checkpoint protocol (docs/python.md, "torch.distributed"):
  * the request reaches every rank, not at the same step: after each step
    the ranks take the all_reduce(MAX) of spotrun.checkpoint_due()
    (spotrun.distributed.checkpoint_due()), so all save the same step;
  * each rank writes rank<R>.pt (model, optimizer, step, its RNG and
    minibatch generator states) with spotrun.saving();
  * spotrun.distributed.commit(step): a barrier (every file is in place),
    LOCAL_RANK 0 commits, every rank learns the seq.
On resume each rank loads its own file, so the run ends bit-exact with an
uninterrupted one of the same world size. Rank 0 prints train.py's lines:
`step N loss X`, `checkpoint requested at step N`, `resumed from step N`,
and last `final weights sha256: <hex>`.
"""
import argparse
import os
import random
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import BATCH, N_SAMPLES, TRAIN_SEED, make_data, make_model, weights_sha256  # noqa: E402
import spotrun  # noqa: E402  (train put the checkout's python/ on sys.path)
import spotrun.distributed as sd  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--save-every", type=int, default=50,
                   help="checkpoint every K steps; 0 = only on request (default 50)")
    p.add_argument("--pace", type=float, default=0.0, help="sleep SECONDS after each step")
    p.add_argument("--out", help="rank 0 writes the final weights' sha256 (hex) to FILE")
    args = p.parse_args()
    if args.steps < 0 or args.save_every < 0 or args.pace < 0:
        p.error("--steps, --save-every and --pace must not be negative")
    return args


class Rank:
    def __init__(self, args):
        self.args = args
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.ckpt_dir = spotrun.ckpt_dir()
        self.x, self.y = make_data()
        torch.manual_seed(TRAIN_SEED)  # the same initial weights on every rank
        self.model = DistributedDataParallel(make_model())
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        torch.manual_seed(TRAIN_SEED + 1000 + self.rank)  # dropout: each rank its own
        random.seed(TRAIN_SEED + self.rank)
        self.batches = torch.Generator().manual_seed(TRAIN_SEED + 1 + self.rank)
        self.step = 0
        self.name = "rank%d.pt" % self.rank

    def log(self, msg):
        if self.rank == 0:
            print(msg, flush=True)

    def state(self):
        return {
            "model": self.model.module.state_dict(),
            "optimizer": self.opt.state_dict(),
            "step": self.step,
            "world_size": self.world,
            "torch_rng": torch.get_rng_state(),
            "batch_generator": self.batches.get_state(),
            "python_random": random.getstate(),
        }

    def load(self):
        path = spotrun.path(self.name)
        st = torch.load(path)
        if st["world_size"] != self.world:
            sys.exit("train_ddp.py: %s was saved by %d ranks, this run has %d"
                     % (path, st["world_size"], self.world))
        self.model.module.load_state_dict(st["model"])
        self.opt.load_state_dict(st["optimizer"])
        self.step = int(st["step"])
        torch.set_rng_state(st["torch_rng"])
        self.batches.set_state(st["batch_generator"])
        random.setstate(st["python_random"])
        self.log("resumed from step %d" % self.step)

    def save(self):
        """Every rank writes its file; then one commit for all (a collective)."""
        with spotrun.saving(self.name) as tmp:
            torch.save(self.state(), tmp)
        try:
            sd.commit(self.step)
        except spotrun.Error as e:
            print("train_ddp.py: rank %d: warning: commit of step %d failed (%s); training goes on"
                  % (self.rank, self.step, e), file=sys.stderr, flush=True)

    def train_step(self):
        self.model.train()
        idx = torch.randint(0, N_SAMPLES, (BATCH,), generator=self.batches)
        noise_level = random.uniform(0.0, 0.05)
        xb = self.x[idx]
        xb = xb + noise_level * torch.randn(xb.shape, generator=self.batches)
        loss = nn.functional.cross_entropy(self.model(xb), self.y[idx])
        self.opt.zero_grad()
        loss.backward()  # DDP averages the gradients over the ranks here
        self.opt.step()
        self.step += 1
        return loss.item()

    def run(self):
        args = self.args
        saved_at = self.step
        while self.step < args.steps:
            loss = self.train_step()
            if self.step % 10 == 0:
                self.log("step %d loss %.6f" % (self.step, loss))
            requested = sd.checkpoint_due()  # the same answer on every rank
            periodic = args.save_every > 0 and self.step % args.save_every == 0
            if self.ckpt_dir and (requested or periodic):
                if requested:
                    self.log("checkpoint requested at step %d" % self.step)
                self.save()
                saved_at = self.step
            if args.pace > 0:
                time.sleep(args.pace)
        if self.ckpt_dir and saved_at != self.step:
            self.save()


def train(args):
    r = Rank(args)
    if r.ckpt_dir and spotrun.resumed():
        r.load()
    r.run()
    digest = weights_sha256(r.model.module)
    r.log("final weights sha256: %s" % digest)
    if args.out and r.rank == 0:
        with open(args.out, "w") as f:
            f.write(digest + "\n")


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo", init_method="env://")
    train(args)
    # Only now, with the DDP model freed (train() returned): a DDP model
    # freed after its process group is gone hangs now and then in torch 1.13.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
