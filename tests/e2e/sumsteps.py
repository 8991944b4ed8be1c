# sumsteps.py - the trainer of the limit tests (t0750, t0751, t0752): it
# sums its steps, one step per 0.2 s (never more than 50 in 10 s), commits
# every 5 steps and whenever asked, and stops after $STEPS. Its state is the
# step and the sum; each start appends "RUN STEP" to $OUT/starts.log (OUT
# defaults to the working directory), and a finished run writes "STEP SUM"
# to $OUT/result-RUN. Runs that must stop at a limit are given 150 steps
# (30 s at least): with the limit broken they finish and the test fails.
import os
import time

import spotrun

out = os.environ.get("OUT", ".")
state = os.path.join(os.environ["SPOTRUN_CKPT_DIR"], "state")
step, total = 0, 0
if os.path.exists(state):
    step, total = map(int, open(state).read().split())
with open(os.path.join(out, "starts.log"), "a") as f:
    f.write("%s %d\n" % (os.environ["SPOTRUN_RUN_ID"], step))
print("ready", flush=True)
while step < int(os.environ["STEPS"]):
    time.sleep(0.2)
    step += 1
    total += step
    if step % 5 == 0 or spotrun.checkpoint_due():
        with open(state, "w") as f:
            f.write("%d %d" % (step, total))
        spotrun.commit(step)
with open(os.path.join(out, "result-" + os.environ["SPOTRUN_RUN_ID"]), "w") as f:
    f.write("%d %d\n" % (step, total))
