"""bgtrainer.py MODE: spotrun.torch.State's background save, seen from the job
(tests/e2e/t0723-torch-background.sh).

torch.save is wrapped by a hook that logs when a write begins and ends and
can hold it: a background save runs it in its thread, a synchronous one in
the training loop.

  returns  one save of a Linear whose weight is 1, held until save()
           returned and the weight was set to 2: the checkpoint must hold 1
  waits    three saves in a row, the first held 2 s: the second waits for it
  sync     background=False: save() returns once committed, with the seq
  train    a loop (--every, --steps, --pace) whose weight is the step number
           (each rank's times rank + 1), on 2 gloo ranks when WORLD_SIZE is
           set; the save of step --hold is held until the loop has gone on
           past it and a checkpoint request is pending (a notice)
"""
import argparse
import os
import sys
import threading
import time

import torch

import spotrun
import spotrun.torch as st

p = argparse.ArgumentParser()
p.add_argument("mode")
p.add_argument("--every", type=int)
p.add_argument("--steps", type=int, default=1000)
p.add_argument("--pace", type=float, default=0.0)
p.add_argument("--hold", type=int, default=-1)
args = p.parse_args()

ddp = "WORLD_SIZE" in os.environ
if ddp:
    import torch.distributed as dist
    dist.init_process_group("gloo")
rank = int(os.environ.get("RANK", "0"))
torch.set_num_threads(1)

gate = threading.Event()
done_step = [0]  # the loop's newest finished step
real_save = torch.save


_out = threading.Lock()


def log(msg):
    with _out:  # one write per line: the save's thread logs too
        sys.stdout.write("rank %d %s\n" % (rank, msg))
        sys.stdout.flush()


def hooked_save(obj, f, *a, **kw):
    step = obj["step"] if isinstance(obj, dict) and "step" in obj else None
    log("writing step %s in %s" % (step, threading.current_thread().name))
    if args.mode in ("returns", "waits") and not gate.is_set():
        gate.wait(10)  # a synchronous save holds the loop: it goes on after 10 s
    if args.mode == "train" and step == args.hold:
        # held until the loop went on past this step and a request is pending
        t = time.monotonic() + 60
        while time.monotonic() < t and not (done_step[0] > step and spotrun.checkpoint_due()):
            time.sleep(0.05)
        if rank == 1:
            time.sleep(1)  # the other rank's file is in place first: the commit waits for this one
    real_save(obj, f, *a, **kw)
    log("wrote step %s" % step)


torch.save = hooked_save
model = torch.nn.Linear(4, 4, bias=False)


def fill(v):
    with torch.no_grad():
        model.weight.fill_(v)


if args.mode == "returns":
    state = st.State(model=model, background=True)
    fill(1.0)
    state.step = 7
    seq = state.save()
    log("save returned: seq %r, file written %s" % (seq, os.path.exists(spotrun.path(st.CKPT_NAME))))
    fill(2.0)  # changed right after save() returned, before the write
    state.step = 8
    gate.set()
    log("wait: seq %r" % state.wait())
    sd = torch.load(spotrun.path(st.CKPT_NAME))
    log("checkpoint step %d weight %s" % (sd["step"], sd["objects"]["model"]["weight"].unique().tolist()))
    log("stats %r" % state.save_stats)
elif args.mode == "waits":
    state = st.State(model=model, background=True)
    for i, v in enumerate((1.0, 2.0, 3.0)):
        fill(v)
        state.step = 10 + i
        if i == 1:
            threading.Timer(2, gate.set).start()
        state.save()
        log("save %d returned" % (i + 1))
    log("wait: seq %r" % state.wait())
    sd = torch.load(spotrun.path(st.CKPT_NAME))
    log("checkpoint step %d weight %s" % (sd["step"], sd["objects"]["model"]["weight"].unique().tolist()))
    log("waits %d" % state.save_stats["waits"])
elif args.mode == "sync":
    state = st.State(model=model, background=False)
    fill(5.0)
    state.step = 3
    seq = state.save()
    log("save returned: seq %r, file written %s" % (seq, os.path.exists(spotrun.path(st.CKPT_NAME))))
else:
    state = st.State(model=model, every=args.every, background=True)
    if state.resumed:
        log("resumed at step %d weight %s" % (state.step, model.weight.unique().tolist()))
    while state.step < args.steps:
        fill(float((state.step + 1) * (rank + 1)))  # the weight after step N is N (times rank + 1)
        state.step_done()
        done_step[0] = state.step
        log("step %d" % state.step)
        time.sleep(args.pace)
    state.wait()
    log("finished at step %d" % state.step)
sys.stdout.flush()
