"""A toy trial for examples/optuna/space.py: minimizes an ill-conditioned
quadratic with the sweep's optimizer (Adam, or SGD with momentum) in pure
Python, reporting `loss` every step and committing its state, so a
preempted trial resumes where its checkpoint stands.

    python3 train.py --optimizer {optimizer} --lr {lr} --momentum={momentum} [--steps N]

--momentum= (empty: the trial has none, as the space gives Adam) and the
environment's SPOTRUN_PARAM_MOMENTUM (unset then) say the same.
"""
import argparse
import json
import math
import os

import spotrun

p = argparse.ArgumentParser()
p.add_argument("--optimizer", choices=("adam", "sgd"), required=True)
p.add_argument("--lr", type=float, required=True)
p.add_argument("--momentum", default="", help="SGD only; empty: none")
p.add_argument("--steps", type=int, default=8)
a = p.parse_args()
if (a.momentum != "") != (a.optimizer == "sgd"):
    p.error("--momentum goes with sgd only (got %r for %s)" % (a.momentum, a.optimizer))
if os.environ.get("SPOTRUN_SWEEP") and \
        os.environ.get("SPOTRUN_PARAM_MOMENTUM", "") != a.momentum:
    p.error("SPOTRUN_PARAM_MOMENTUM and --momentum disagree")

scale = [1.0, 10.0]  # loss = sum(scale_i * w_i^2) / 2
state = {"step": 0, "w": [1.0, 1.0], "m": [0.0, 0.0], "v": [0.0, 0.0]}
if spotrun.resumed():
    with open(spotrun.path("state.json")) as f:
        state = json.load(f)
while state["step"] < a.steps:
    t = state["step"] = state["step"] + 1
    for i, s in enumerate(scale):
        g = s * state["w"][i]
        if a.optimizer == "sgd":
            state["m"][i] = float(a.momentum) * state["m"][i] + g
            state["w"][i] -= a.lr * state["m"][i]
        else:
            state["m"][i] = 0.9 * state["m"][i] + 0.1 * g
            state["v"][i] = 0.999 * state["v"][i] + 0.001 * g * g
            mh, vh = state["m"][i] / (1 - 0.9 ** t), state["v"][i] / (1 - 0.999 ** t)
            state["w"][i] -= a.lr * mh / (math.sqrt(vh) + 1e-8)
    loss = sum(s * w * w for s, w in zip(scale, state["w"])) / 2
    spotrun.metric("loss", loss if loss < 1e30 else 1e30, step=t)  # diverged: inf, nan
    with spotrun.saving("state.json") as tmp, open(tmp, "w") as f:
        json.dump(state, f)
    spotrun.commit(t)
