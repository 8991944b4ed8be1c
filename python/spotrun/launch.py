"""python3 -m spotrun.launch: a small torchrun, installed with the module.

    spotrun run -- python3 -m spotrun.launch --nproc-per-node 2 train.py --epochs 3

Debian 12's torchrun (torch 1.13 on Python 3.11) fails at start; this one
does what torchrun does for a static group (no elastic restarts: spotrun
restarts the whole job):

  * it starts --nproc-per-node copies of `PYTHON SCRIPT ARGS...` (or
    `PYTHON -m MODULE ARGS...` with -m), PYTHON being the interpreter that
    runs the launcher (the one that imported spotrun: a venv's python runs
    its ranks in that venv); the directory spotrun is imported from is
    added to the ranks' PYTHONPATH too;
  * each child gets RANK (node_rank * nproc + local rank), LOCAL_RANK,
    WORLD_SIZE (nnodes * nproc), LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR
    and MASTER_PORT (--master-addr / --master-port, else $MASTER_ADDR /
    $MASTER_PORT, else 127.0.0.1 and, on one node, a free port picked at
    each start);
  * SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to the launcher are forwarded to
    every child still running (the launcher waits for them to exit); under
    spotrun SIGTERM is not: the wrapper makes an outside SIGTERM a
    checkpoint request to every rank and stops the job's whole process
    group itself, and a SIGTERM forwarded from inside the job would kill
    the ranks;
  * when a child fails, the others are terminated (a DDP peer would
    otherwise wait in a collective), and killed 10 s later if they linger;
  * it exits with the worst child status: the largest exit code, a child
    killed by signal S counting as 128+S (children it stopped after another
    failed do not count: the exit code is the failure's).

spotrun's checkpoint request reaches every rank without it: the wrapper
raises the request on the job page that every process of the job polls
(spotrun.checkpoint_due(), spotrun.torch), so the launcher neither catches
nor forwards SIGUSR1.
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


def parse(argv):
    p = argparse.ArgumentParser(prog="python3 -m spotrun.launch",
                                description=__doc__.split("\n")[0])
    p.add_argument("--nproc-per-node", "--nproc_per_node", "--nproc", type=int, default=1,
                   dest="nproc", help="processes to start on this node (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="nodes in the job (default 1)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, dest="node_rank",
                   help="this node's rank, 0 to nnodes-1 (default 0)")
    p.add_argument("--master-addr", "--master_addr", dest="master_addr",
                   default=os.environ.get("MASTER_ADDR") or "127.0.0.1",
                   help="rank 0's address (default $MASTER_ADDR, else 127.0.0.1)")
    p.add_argument("--master-port", "--master_port", type=int, dest="master_port",
                   default=int(os.environ.get("MASTER_PORT") or 0),
                   help="rendezvous port (default $MASTER_PORT, else a free one on one node)")
    p.add_argument("--standalone", action="store_true", help="one node (as torchrun's)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run SCRIPT as a module (python -m SCRIPT)")
    p.add_argument("script", help="the training script, run with this interpreter")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    a = p.parse_args(argv)
    if a.nproc < 1 or a.nnodes < 1:
        p.error("--nproc-per-node and --nnodes must be at least 1")
    if not 0 <= a.node_rank < a.nnodes:
        p.error("--node-rank %d: must be 0 to %d (--nnodes %d)" % (a.node_rank, a.nnodes - 1,
                                                                  a.nnodes))
    if a.nnodes > 1 and not a.master_port:
        p.error("--nnodes %d: every node needs the same --master-port (or $MASTER_PORT)"
                % a.nnodes)
    return a


def child_env(a, local, port):
    import spotrun
    here = os.path.dirname(os.path.dirname(os.path.abspath(spotrun.__file__)))
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    world = a.nnodes * a.nproc
    return dict(os.environ, RANK=str(a.node_rank * a.nproc + local), LOCAL_RANK=str(local),
                WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(a.nproc),
                GROUP_RANK=str(a.node_rank), MASTER_ADDR=a.master_addr, MASTER_PORT=str(port),
                PYTHONPATH=os.pathsep.join(path + ([here] if here not in path else [])))


def main(argv=None):
    a = parse(argv)
    port = a.master_port or free_port()
    cmd = [sys.executable] + (["-m"] if a.module else []) + [a.script] + a.args
    children = {}  # pid -> rank, while running
    for rank in range(a.nproc):
        proc = subprocess.Popen(cmd, env=child_env(a, rank, port))
        children[proc.pid] = rank

    stopping = []

    # Under spotrun a SIGTERM is not forwarded: one from outside the job is
    # a checkpoint request the wrapper makes to every rank itself (and its
    # stop signals the job's whole process group), while one forwarded from
    # here would come from inside the job's tree and kill the ranks.
    under_spotrun = bool(os.environ.get("SPOTRUN_CONTROL"))

    def forward(signum, frame):
        stopping.append(signum)
        if under_spotrun and signum == signal.SIGTERM and frame is not None:
            return
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
            print("spotrun.launch: rank %d exited with %d; stopping the others" % (rank, code),
                  file=sys.stderr, flush=True)
            forward(signal.SIGTERM, None)
            kill_at = time.monotonic() + KILL_AFTER
    sys.exit(worst)


if __name__ == "__main__":
    main()
