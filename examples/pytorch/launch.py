#!/usr/bin/python3
"""launch.py - a tiny torchrun: starts N copies of a training script, one per
rank, and waits for them.

    spotrun run -- /usr/bin/python3 examples/pytorch/launch.py --nproc-per-node 2 \\
        examples/pytorch/train_ddp.py --steps 300

Debian 12's torchrun (torch 1.13 on Python 3.11) fails at start, so the
examples bring their own launcher; it does what torchrun does for one node:

  * each child runs `sys.executable SCRIPT ARGS...` with RANK, LOCAL_RANK,
    WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR (127.0.0.1) and MASTER_PORT
    (--master-port, or a free port picked at each start) in its environment;
  * SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to the launcher are forwarded to
    every child still running (the launcher waits for them to exit);
  * when a child fails, the others are terminated (a DDP peer would
    otherwise wait in a collective), and killed 10 s later if they linger;
  * it exits with the worst child status: the largest exit code, a child
    killed by signal S counting as 128+S (children it stopped after another
    failed do not count: the exit code is the failure's).

It leaves spotrun's checkpoint request alone (it neither catches nor
forwards SIGUSR1): the wrapper asks every process of the job itself, and
the trainers poll the job page.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
KILL_AFTER = 10.0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_code(status):
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nproc-per-node", "--nproc", type=int, default=2, dest="nproc",
                   help="processes to start (default 2)")
    p.add_argument("--master-port", type=int, default=0, help="rendezvous port (default: a free one)")
    p.add_argument("script", help="the training script, run with this interpreter")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    a = p.parse_args()
    if a.nproc < 1:
        p.error("--nproc-per-node must be at least 1")

    port = a.master_port or free_port()
    children = {}  # pid -> rank, while running
    for rank in range(a.nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(a.nproc),
                   LOCAL_WORLD_SIZE=str(a.nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        proc = subprocess.Popen([sys.executable, a.script] + a.args, env=env)
        children[proc.pid] = rank

    stopping = []

    def forward(signum, frame):
        stopping.append(signum)
        for pid in children:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    for s in FORWARDED:
        signal.signal(s, forward)

    worst, kill_at = 0, None
    while children:
        if kill_at is None:
            pid, status = os.waitpid(-1, 0)  # a forwarded signal interrupts and resumes it
        else:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                if time.monotonic() >= kill_at:
                    for c in children:
                        os.kill(c, signal.SIGKILL)
                    kill_at = float("inf")
                time.sleep(0.1)
                continue
        rank = children.pop(pid, None)
        if rank is None:
            continue
        code = status_code(status)
        if kill_at is None:  # not one the launcher stopped after a failure
            worst = max(worst, code)
        if code != 0 and kill_at is None and children and not stopping:
            print("launch.py: rank %d exited with %d; stopping the others" % (rank, code),
                  file=sys.stderr, flush=True)
            forward(signal.SIGTERM, None)
            kill_at = time.monotonic() + KILL_AFTER
    sys.exit(worst)


if __name__ == "__main__":
    main()
