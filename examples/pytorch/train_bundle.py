#!/usr/bin/python3
"""train_bundle.py - a plain PyTorch script (MLP with dropout, AdamW, cosine LR,
a shuffling DataLoader with augmentation in its workers) made exact across
preemption by spotrun.torch, in five lines of glue.

Each glue line ends with a `# spotrun` comment; a line that replaces one of
the plain script says what it was (`# spotrun; plain: ...`). Remove the
first kind and put back the second, and what is left is the plain script
(tests/e2e/t0720-torch-bundle.sh does exactly that, runs it, and counts
the glue).

    spotrun run -- /usr/bin/python3 examples/pytorch/train_bundle.py --workers 2

(with the spotrun module importable: installed, or PYTHONPATH=python).
Rank-aware under torch.distributed (python3 -m spotrun.launch --nproc-per-node 2 ...), where
each rank trains on its share of every epoch. The last line is the sha256
of the final weights.
"""
import argparse
import hashlib
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset

import spotrun.torch as st  # spotrun

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--pace", type=float, default=0.0, help="sleep SECONDS after each step")
p.add_argument("--out", help="write the final weights' sha256 here")
args = p.parse_args()


class Noisy(Dataset):
    """Synthetic inputs labelled by a fixed teacher, plus random noise per sample."""

    def __init__(self, n=512):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(n, 16, generator=g)
        self.y = (self.x @ torch.randn(16, 4, generator=g)).argmax(1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i] + 0.05 * torch.randn(16), self.y[i]  # augmentation: the global RNG


ddp = "WORLD_SIZE" in os.environ
if ddp:
    dist.init_process_group("gloo")
rank = dist.get_rank() if ddp else 0
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 4))
if ddp:
    model = nn.parallel.DistributedDataParallel(model)
    torch.manual_seed(1 + rank)  # dropout: each rank its own stream
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
dataset = Noisy()
loader = st.loader(dataset, batch_size=32, shuffle=True, num_workers=args.workers, seed=0)  # spotrun; plain: loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=args.workers)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(loader))
state = st.State(model=model, optimizer=opt, scheduler=sched, loader=loader)  # spotrun

for epoch in state.epochs(args.epochs):  # spotrun; plain: for epoch in range(args.epochs):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        state.step_done()  # spotrun
        if rank == 0:
            print("epoch %d batch %d loss %.6f" % (epoch, i, loss.item()), flush=True)
        if args.pace:
            time.sleep(args.pace)

h = hashlib.sha256()
for k, t in model.state_dict().items():
    h.update(k.encode() + t.detach().contiguous().numpy().tobytes())
if rank == 0:
    print("final weights sha256: %s" % h.hexdigest(), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(h.hexdigest() + "\n")
