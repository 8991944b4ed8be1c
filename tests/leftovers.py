#!/usr/bin/env python3
"""leftovers.py CMD [ARG...]: runs a test (CMD) and, once it has ended,
kills every process it started that is still running; the test fails
(exit 1) when there was one, and each is named by its command line.

ctest runs every e2e script under it (tests/CMakeLists.txt). A process is
the test's when it descends from CMD: this wrapper is a child subreaper
(prctl PR_SET_CHILD_SUBREAPER), so a server the test started in the
background, or a daemon that forked twice and called setsid, is reparented
here rather than to init; and when it carries the test's token in its
environment (SPOTRUN_TEST_TOKEN, which the wrapper exports), which finds
it even where the wrapper itself was killed (scripts/test.sh's sweep, see
--sweep). A process that is stopping when the test ends gets
SPOTRUN_LEFTOVER_GRACE seconds (default 30) to finish on its own.

leftovers.py --sweep TAG: kills and names every process whose
SPOTRUN_TEST_TAG is TAG (exported by scripts/test.sh around each ctest),
exit 1 when there was one.
"""

import ctypes
import os
import signal
import sys
import time
import uuid

PR_SET_CHILD_SUBREAPER = 36


def environ_has(pid, entry):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return entry in f.read().split(b"\0")
    except OSError:
        return False


def stat_of(pid):
    """(state, ppid) of pid, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
        return rest[0].decode(), int(rest[1])
    except (OSError, IndexError, ValueError):
        return None


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().rstrip(b"\0").split(b"\0")
        return " ".join(a.decode(errors="replace") for a in args) or "?"
    except OSError:
        return "?"


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def find(entry, root):
    """Live processes (not zombies) that descend from root (when not None)
    or carry entry in their environment; never this process."""
    me = os.getpid()
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            st = stat_of(int(name))
            if st:
                procs[int(name)] = st
    found = {p for p in procs if procs[p][0] != "Z" and environ_has(p, entry)}
    if root is not None:
        tree = {root}
        grew = True
        while grew:
            grew = False
            for p, (_, ppid) in procs.items():
                if ppid in tree and p not in tree:
                    tree.add(p)
                    grew = True
        found |= {p for p in tree - {root} if procs[p][0] != "Z"}
    return sorted(found)


def settle(entry, root, grace):
    """Waits up to grace seconds for the processes found to end."""
    deadline = time.monotonic() + grace
    while True:
        reap()
        left = find(entry, root)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def kill_all(entry, root, what):
    """Names and kills what is left; returns whether there was any."""
    named = set()
    for _ in range(50):
        left = find(entry, root)
        if not left:
            break
        for pid in left:
            if pid not in named:
                named.add(pid)
                print(f"leftovers: {what} left pid {pid} running: {cmdline(pid)}", flush=True)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
        reap()
    return bool(named)


def sweep(tag):
    entry = f"SPOTRUN_TEST_TAG={tag}".encode()
    left = settle(entry, None, 2.0)
    if left and kill_all(entry, None, "a test"):
        print("leftovers: a test left processes running (killed now)", flush=True)
        return 1
    return 0


def main(argv):
    if len(argv) < 2:
        print("usage: leftovers.py CMD [ARG...] | --sweep TAG", file=sys.stderr)
        return 2
    if argv[1] == "--sweep":
        return sweep(argv[2])
    grace = float(os.environ.get("SPOTRUN_LEFTOVER_GRACE", "30"))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("leftovers: prctl(PR_SET_CHILD_SUBREAPER) failed", file=sys.stderr)
        return 2
    token = uuid.uuid4().hex
    os.environ["SPOTRUN_TEST_TOKEN"] = token
    entry = f"SPOTRUN_TEST_TOKEN={token}".encode()
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[1], argv[1:])
        finally:
            os._exit(127)

    def forward(sig, _frame):
        try:
            os.kill(child, sig)
        except OSError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    # Reap whatever dies meanwhile, as init would: an orphan reparented
    # here must not linger as a zombie (kill -0 would say it runs).
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        if pid == child:
            break
    rc = os.waitstatus_to_exitcode(status)
    rc = rc if rc >= 0 else 128 - rc
    me = os.getpid()
    left = settle(entry, me, grace)
    if left and kill_all(entry, me, os.path.basename(argv[-1])):
        print("leftovers: the test left processes running (killed now): it fails", flush=True)
        return rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
