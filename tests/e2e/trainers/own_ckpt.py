#!/usr/bin/python3
"""A trainer that checkpoints on its own, as many do (HF Trainer's
output_dir, Lightning's dirpath, nanoGPT's out_dir): every --save-every
steps it writes <save-dir>/last.pt (model, optimizer, step, RNG state:
enough for an exact resume; written to a temporary name and renamed), and
at start it resumes from that file when it is there. It knows nothing of
spotrun. A small MLP on random batches, so that it runs in seconds."""
import argparse
import hashlib
import os
import time

import torch
from torch import nn

parser = argparse.ArgumentParser(description="an MLP that saves every N steps")
parser.add_argument("--steps", type=int, default=16)
parser.add_argument("--save-every", type=int, default=4)
parser.add_argument("--save-dir", default="checkpoints")
parser.add_argument("--pace", type=float, default=0, help="seconds to sleep after each step")
parser.add_argument("--out", default="", help="write the final weights' sha256 here")
args = parser.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
w_true = torch.randn(8, 4, generator=torch.Generator().manual_seed(5))
ckpt = os.path.join(args.save_dir, "last.pt")
step = 0
if os.path.exists(ckpt):
    state = torch.load(ckpt)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    step = state["step"]
    print("resuming from %s at step %d" % (ckpt, step), flush=True)
else:
    print("no checkpoint in %s: training from scratch" % args.save_dir, flush=True)

while step < args.steps:
    x = torch.randn(32, 8)
    loss = nn.functional.mse_loss(model(x), x @ w_true)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    print("step %d loss %.6f" % (step, loss.item()), flush=True)
    if step % args.save_every == 0:
        os.makedirs(args.save_dir, exist_ok=True)
        state = {"model": model.state_dict(), "optimizer": opt.state_dict(),
                 "rng": torch.get_rng_state(), "step": step}
        torch.save(state, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
        print("saved checkpoint at step %d" % step, flush=True)
    time.sleep(args.pace)

digest = hashlib.sha256()
for t in model.state_dict().values():
    digest.update(t.numpy().tobytes())
print("final weights sha256: %s" % digest.hexdigest())
if args.out:
    with open(args.out, "w") as f:
        f.write(digest.hexdigest() + "\n")
