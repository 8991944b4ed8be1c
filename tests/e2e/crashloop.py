#!/usr/bin/env python3
"""crashloop.py - the crash-consistency loop (anchors: SQLite's crash tests,
ALICE, CrashMonkey): runs a trainer under `spotrun run`, interrupts it at a
random point, reruns it as a new node would, and checks what a user would:
the run resumes from a complete checkpoint (the trainer verifies the state
it restored against its own checksum) or starts fresh only when the store
held no checkpoint, it ends with the one correct final state, and no file
of the user's outside spotrun's own directories changed.

    crashloop.py --store URL -n N [--seed S] --dir DIR [--s3-url URL]

Run by tests/e2e/t0605-crash-loop.sh (file store), t0606-crash-loop-s3.sh
(S3) and scripts/crash.sh (long runs). Environment: SPOTRUN (the binary),
SPOTRUN_INJECT_LIB (tests/faults' libspotrun-inject.so), SRCDIR.

Trainers (tests/e2e/crashtrainer.py): "inplace" saves DIR/state.bin itself
and is run with --settle and -d DIR (the zero-line path); "commit" saves
$SPOTRUN_CKPT_DIR/state.bin and runs `spotrun commit --step N`.

Interruptions, and how each point is reached:
  job-kill           kill -9 of the trainer, aimed at a save: after its
                     "save K begin" line plus a random delay (mid-save about
                     70% of the time), classified by whether the trainer
                     held state.bin open (it is SIGSTOPped, its fds read,
                     then killed); the wrapper restarts it itself
  notice             `spotrun notify`, aimed the same way; classified by the
                     trainer's open state.bin at the moment of the notice
  wrapper-random     kill -9 of the wrapper at a random time of the run;
                     the wrapper is SIGSTOPped first and the point read from
                     its open files (a spool temp: mid-stage; a store temp
                     or a spool archive read: mid-upload; a MANIFEST or
                     LEASE temp: mid-manifest, mid-lease-renewal; else idle)
  wrapper-stage      kill -9 inside the wrapper at its Nth write/fsync/
                     rename of a spool file (libspotrun-inject.so, KILL)
  wrapper-upload     file store: at its Nth link/write/fsync of a data
                     object; S3: while a PUT of data.tar.zst is held in a
                     fault proxy (body half sent, or done but unanswered)
  wrapper-manifest   the same for MANIFEST.json
  wrapper-lease      the same for LEASE, after the acquisition (a renewal:
                     --lease-ttl 3s renews every second)
An injected point the run never reached (N too high) is "not reached": the
run ended by itself, and it is checked all the same.

Each interrupted run is rerun (same run id, same store) by a new node (its
own HOME, so its own work dir ~/.cache/spotrun, and project dir), or one
time in three by the same node, up to 3 times until it exits 0. Classes:
recovered, fresh-ok, unrecoverable (a restored state failed its checksum,
the run never finished, it started fresh although a checkpoint was
durable, or its final state is wrong), user-file-changed (a file in a
node's HOME or project dir, outside ~/.cache/spotrun and the -d dir,
changed, vanished or appeared). Exit 1 when unrecoverable or
user-file-changed > 0.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crashtrainer  # noqa: E402

PY = "/usr/bin/python3"
TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crashtrainer.py")
FAULTPROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s3", "faultproxy.py")

# per trainer: its steps, the time between its saves, about how long a run
# takes; its payload's size (a save of 8 chunks, 0.32 s)
STEPS = {"inplace": 4, "commit": 6}
STEP_TIME = {"inplace": 1.5, "commit": 0.3}  # inplace: --settle looks once a second
RUN_TIME = {"inplace": 8.0, "commit": 4.0}
SIZE = 256 << 10
KINDS = ["job-kill", "notice", "wrapper-random", "wrapper-stage", "wrapper-upload",
         "wrapper-manifest", "wrapper-lease"]
# Every (trainer, kind) once per 14 iterations, the in-place notice first:
# a short loop reaches the torn save (issue 40, item 3) at once.
SCHEDULE = []
for k in range(len(KINDS)):
    SCHEDULE.append(("inplace", KINDS[(1 + k) % len(KINDS)]))
    SCHEDULE.append(("commit", KINDS[(5 + k) % len(KINDS)]))

# file store: kind -> (path substring, [(op, highest N)])
INJECT = {
    "wrapper-stage": ("/spool/", [("write", 12), ("fsync", 2), ("rename", 3)]),
    "wrapper-upload": ("data.tar.zst", [("link", 3), ("write", 3), ("fsync", 3)]),
    "wrapper-manifest": ("MANIFEST", [("write", 3), ("fsync", 3), ("rename", 3)]),
    "wrapper-lease": ("LEASE", [("rename", 6), ("write", 6)]),
}
PROXY_PATH = {"wrapper-upload": r"/data\.tar\.zst", "wrapper-manifest": r"/MANIFEST\.json",
              "wrapper-lease": r"/LEASE$"}


class Hung(Exception):
    pass


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 16), b""):
            h.update(b)
    return h.hexdigest()


class Node:
    """A machine: its HOME and a project with the user's files beside the
    trainer's -d dir (project/out)."""

    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        self.home = os.path.join(self.dir, "home")
        self.project = os.path.join(self.dir, "project")
        self.out = os.path.join(self.project, "out")
        self.work = os.path.join(self.home, ".cache", "spotrun")
        files = {
            "home/.profile": "export EDITOR=vi\n",
            "home/.config/tool/settings.ini": "[ui]\ntheme = dark\n",
            "home/.cache/pip/keep.txt": "a cache that is not spotrun's\n",
            "project/README.md": "# my experiment\n",
            "project/train.cfg": "lr = 3e-4\nsteps = 4\n",
            "project/data/train.csv": "x,y\n" + "".join(f"{i},{i * i}\n" for i in range(200)),
            "project/notes/todo.txt": "try a bigger model\n",
        }
        for rel, text in files.items():
            p = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        os.symlink("data/train.csv", os.path.join(self.project, "latest.csv"))
        os.makedirs(self.out, exist_ok=True)
        self.snap = self.snapshot()

    def snapshot(self):
        """{path: what it is} of the user's tree: HOME but ~/.cache/spotrun,
        the project but its -d dir."""
        skip = {self.work, self.out}
        seen = {}
        for top in (self.home, self.project):
            for d, dirs, files in os.walk(top):
                dirs[:] = sorted(x for x in dirs if os.path.join(d, x) not in skip)
                for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
                    p = os.path.join(d, name)
                    rel = os.path.relpath(p, self.dir)
                    st = os.lstat(p)
                    if os.path.islink(p):
                        seen[rel] = "link " + os.readlink(p)
                    elif os.path.isfile(p):
                        seen[rel] = "file %o %s" % (st.st_mode & 0o7777, sha(p))
                    else:
                        seen[rel] = "other %o" % st.st_mode
                seen[os.path.relpath(d, self.dir) + "/"] = "dir %o" % (os.lstat(d).st_mode & 0o7777)
        return seen

    def changes(self):
        now = self.snapshot()
        out = []
        for k in sorted(set(self.snap) | set(now)):
            if k not in now:
                out.append(f"{k} vanished")
            elif k not in self.snap:
                out.append(f"{k} appeared")
            elif now[k] != self.snap[k]:
                out.append(f"{k} changed ({self.snap[k][:20]} -> {now[k][:20]})")
        return out


class Loop:
    def __init__(self, a):
        self.a = a
        self.spotrun = os.environ.get("SPOTRUN") or os.path.join(
            os.environ.get("SRCDIR", "."), "build", "runtime", "spotrun")
        self.inject = os.environ.get("SPOTRUN_INJECT_LIB") or os.path.join(
            os.path.dirname(self.spotrun), "..", "tests", "faults", "libspotrun-inject.so")
        self.s3 = a.store.startswith("s3://")
        self.schedule = [x for x in SCHEDULE if not a.only or f"{x[0]}/{x[1]}" in a.only.split(",")
                         or x[0] in a.only.split(",") or x[1] in a.only.split(",")]
        if not self.schedule:
            sys.exit(f"crashloop.py: --only {a.only}: no trainer/kind matches")
        self.counts = {}
        self.points = {}
        self.bad = []
        os.makedirs(a.dir, exist_ok=True)
        self.record = open(os.path.join(a.dir, "iterations.jsonl"), "w")

    # ---- processes --------------------------------------------------------

    def env(self, node, extra=None):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("SPOTRUN_") and k not in ("SPOTRUN_S3_RETRY_BASE_MS",):
                del e[k]
        e.update(HOME=node.home if node else e.get("HOME", "/"), SPOTRUN_NOTICE="none")
        e.pop("LD_PRELOAD", None)
        if extra:
            e.update(extra)
        return e

    def wrapper_argv(self, run, trainer, node):
        argv = [self.spotrun, "run", "--run-id", run, "--store", self.a.store, "--lease-ttl", "3s",
                "--backoff", "0.2s"]
        job = [PY, TRAINER, trainer]
        if trainer == "inplace":
            argv += ["--settle", "1s", "-d", node.out]
            job += [node.out]
        job += ["--steps", str(STEPS[trainer]), "--step-time", str(STEP_TIME[trainer]),
                "--size", str(SIZE)]
        return argv + ["--"] + job

    def start(self, run, trainer, node, log, extra=None):
        f = open(log, "ab")
        return subprocess.Popen(self.wrapper_argv(run, trainer, node), cwd=node.project,
                                env=self.env(node, extra), stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

    def wait(self, p, limit=150):
        try:
            return p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Hung(f"a wrapper ran past {limit}s")

    def checkpoints(self, run, node):
        r = subprocess.run([self.spotrun, "show", "--json", "--store", self.a.store, run],
                           env=self.env(node), capture_output=True, text=True)
        if r.returncode != 0:
            return []
        return [c["seq"] for c in json.loads(r.stdout).get("checkpoints", [])]

    # ---- aiming -----------------------------------------------------------

    @staticmethod
    def lines(log):
        try:
            with open(log, "rb") as f:
                return f.read().decode(errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def wait_line(self, log, pattern, p, limit=60):
        rx = re.compile(pattern)
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if any(rx.search(x) for x in self.lines(log)):
                return True
            if p.poll() is not None:
                return False
            time.sleep(0.01)
        return False

    def trainer_pid(self, log):
        pids = [int(m.group(1)) for x in self.lines(log) for m in [re.match(r"start pid=(\d+)", x)] if m]
        return pids[-1] if pids else None

    @staticmethod
    def open_files(pid):
        """[(path, writable)] of the process's open files (empty if gone)."""
        out = []
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            return out
        for fd in fds:
            try:
                path = os.readlink(f"/proc/{pid}/fd/{fd}")
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    flags = int(re.search(r"flags:\s*(\d+)", f.read()).group(1), 8)
            except (OSError, AttributeError):
                continue
            out.append((path, bool(flags & (os.O_WRONLY | os.O_RDWR))))
        return out

    def aim_at_save(self, rng, trainer, log, p, early):
        """Waits for a save of the trainer and a random moment around it:
        inside it most of the time (early: always, in its first tenth of a
        second). False if the run ended first."""
        k = rng.randint(1, STEPS[trainer] - 1)
        inside = early or rng.random() < 0.7
        if not self.wait_line(log, rf"^save {k} {'begin' if inside else 'end'}$", p):
            return False
        top = 0.1 if early else 0.25 if inside else STEP_TIME[trainer]
        time.sleep(rng.uniform(0.0, top))
        return True

    def classify_wrapper(self, pid):
        files = self.open_files(pid)
        names = [(os.path.basename(x), x, w) for x, w in files]
        for base, path, w in names:
            if "/spool/" in path and base.startswith(".") and ".tmp." in base:
                return "mid-stage"
        for base, path, w in names:
            if base.startswith(".data.tar.zst.tmp") or (
                    "/spool/" in path and not w and re.match(r"\d+-\d+\.tar\.zst$", base)):
                return "mid-upload"
        for base, path, w in names:
            if base.startswith(".MANIFEST.json.tmp.") and not base.endswith(".lock"):
                return "mid-manifest"
        for base, path, w in names:
            if base.startswith(".LEASE.tmp.") and not base.endswith(".lock"):
                return "mid-lease-renewal"
        return "idle"

    # ---- one iteration ----------------------------------------------------

    def interrupt(self, rng, trainer, kind, run, node, log, early=False):
        """Starts the run on node and interrupts it; returns (point, wrapper
        Popen, proxy or None)."""
        extra, proxy = {}, None
        if kind in INJECT and not (self.s3 and kind in PROXY_PATH):
            path, ops = INJECT[kind]
            op, top = rng.choice(ops)
            lo = 1 if kind == "wrapper-lease" else 0
            n = rng.randint(lo, top if trainer == "commit" else max(lo, top // 2))  # fewer commits
            extra = {"LD_PRELOAD": self.inject, "SPOTRUN_INJECT": f"{op}:KILL:{n}",
                     "SPOTRUN_INJECT_PATH": path}
            p = self.start(run, trainer, node, log, extra)
            rc = self.wait(p)
            what = "lease-renewal" if kind == "wrapper-lease" else kind[8:]
            point = f"mid-{what} ({op} #{n + 1})" if rc == -signal.SIGKILL else f"{what}: not reached"
            return point, p, None
        if kind in PROXY_PATH:  # S3: hold the request in a proxy, then kill
            fault = rng.choice(["stall", "slow"])
            plog = os.path.join(node.dir, "proxy.log")
            proxy = subprocess.Popen(
                [PY, FAULTPROXY, "--upstream", self.a.s3_url, "--faults", fault, "--rate",
                 "0.3" if kind == "wrapper-lease" else "0.6", "--seed", str(rng.randrange(1 << 30)),
                 "--methods", "PUT,POST", "--path", PROXY_PATH[kind], "--max-faults", "1",
                 "--skip", "1" if kind == "wrapper-lease" else "0",
                 "--stall-seconds", "60"], stdout=open(plog, "w"), stderr=subprocess.STDOUT)
            if not self.wait_line(plog, r"^port \d+", proxy, 20):
                proxy.kill()
                proxy.wait()
                raise Hung("the fault proxy did not start")
            port = re.search(r"^port (\d+)", open(plog).read(), re.M).group(1)
            p = self.start(run, trainer, node, log, {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"})
            if self.wait_line(plog, r"^fault ", p, 150):
                time.sleep(0.3)  # slow: the server has it; stall: half the body sent
                p.send_signal(signal.SIGKILL)
                what = "mid-lease-renewal" if kind == "wrapper-lease" else f"mid-{kind[8:]}"
                point = f"{what} ({fault})"
            else:
                point = f"{kind[8:]}: not reached"
            return point, p, proxy
        p = self.start(run, trainer, node, log)
        if kind == "wrapper-random":
            time.sleep(rng.uniform(0.3, RUN_TIME[trainer]))
            if p.poll() is not None:
                return "wrapper: not reached (the run had ended)", p, None
            p.send_signal(signal.SIGSTOP)
            point = "wrapper " + self.classify_wrapper(p.pid)
            p.send_signal(signal.SIGKILL)
            return point, p, None
        if not self.aim_at_save(rng, trainer, log, p, early):
            return f"{kind}: not reached (the run had ended)", p, None
        tp = self.trainer_pid(log)
        if kind == "job-kill":
            if not tp:
                return "job-kill: no trainer", p, None
            try:
                os.kill(tp, signal.SIGSTOP)
            except ProcessLookupError:
                return "job-kill: not reached (the trainer had exited)", p, None
            saving = any(x.endswith("/state.bin") and w for x, w in self.open_files(tp))
            os.kill(tp, signal.SIGKILL)
            return f"job-kill {'mid-save' if saving else 'between saves'}", p, None
        saving = bool(tp) and any(x.endswith("/state.bin") and w for x, w in self.open_files(tp))
        deadline = rng.choice(["5s", "10s", "30s"])
        subprocess.run([self.spotrun, "notify", "-q", "--run-id", run, "--deadline", deadline],
                       env=self.env(node), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return f"notice {'mid-save' if saving else 'between saves'}", p, None

    def gone(self, pid):
        """Waits until pid (the killed wrapper's job) is gone."""
        for _ in range(300):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)

    def iteration(self, i):
        rng = random.Random(f"{self.a.seed}:{i}")
        trainer, kind = self.schedule[i % len(self.schedule)]
        run = f"crash-{self.a.seed}-{i}"
        root = os.path.join(self.a.dir, f"it{i:04d}")
        os.makedirs(root)
        nodes = [Node(root, "node0")]
        logs = [os.path.join(root, "run0.log")]
        rc = None
        try:
            # the first iteration's notice or kill lands early in a save
            point, p, proxy = self.interrupt(rng, trainer, kind, run, nodes[0], logs[0], i == 0)
            # the trainer's lines from here on are the recovery's (all of
            # them when the point was never reached)
            first = 0 if "not reached" in point else len(self.lines(logs[0]))
            if kind == "job-kill":  # the wrapper restarts the job: what it may restore is this
                durable = self.checkpoints(run, nodes[0])
            rc = self.wait(p)
            if proxy:
                proxy.terminate()
                proxy.wait()
            tp = self.trainer_pid(logs[0])
            if tp:
                self.gone(tp)
            if kind != "job-kill":
                durable = self.checkpoints(run, nodes[0])
            if "not reached" in point:
                durable = []  # nothing was interrupted: its first start was fresh
            reruns = 0
            while rc != 0 and reruns < 3:
                reruns += 1
                if rng.random() < 1 / 3:
                    node = nodes[-1]
                else:
                    node = Node(root, f"node{len(nodes)}")
                    nodes.append(node)
                logs.append(os.path.join(root, f"run{reruns}.log"))
                rc = self.wait(self.start(run, trainer, node, logs[-1]))
            before = self.lines(logs[0])[:first]
            rec = self.lines(logs[0])[first:] + [x for lg in logs[1:] for x in self.lines(lg)]
            if any(x.startswith("done step ") for x in before):
                point += " (after the job finished)"  # e.g. releasing the lease: the rerun sees DONE
            verdict, why = self.judge(run, trainer, rc, before, rec, durable, nodes)
        except Hung as e:
            point = locals().get("point", kind)
            verdict, why = "unrecoverable", str(e)
        self.counts[verdict] = self.counts.get(verdict, 0) + 1
        key = f"{trainer:7} {re.sub(r' #[0-9]+', '', point)}"
        self.points[key] = self.points.get(key, 0) + 1
        line = f"#{i} {trainer} {kind}: {point}: {verdict}" + (f" ({why})" if why else "")
        print(line, flush=True)
        if verdict in ("unrecoverable", "user-file-changed"):
            self.bad.append(line + f" [logs: {root}]")
        self.record.write(json.dumps({"i": i, "trainer": trainer, "kind": kind, "point": point,
                                      "verdict": verdict, "why": why, "rc": rc, "dir": root}) + "\n")
        self.record.flush()
        if verdict in ("recovered", "fresh-ok") and not self.a.keep:
            shutil.rmtree(root, ignore_errors=True)

    def judge(self, run, trainer, rc, before, rec, durable, nodes):
        verdict, why = self.judge_run(run, trainer, rc, before, rec, durable,
                                      os.path.dirname(nodes[0].dir))
        changed = [c for n in nodes for c in n.changes()]
        if changed and verdict == "unrecoverable":
            return verdict, why + "; user files changed too: " + "; ".join(changed[:5])
        if changed:
            return "user-file-changed", "; ".join(changed[:5])
        return verdict, why

    def judge_run(self, run, trainer, rc, before, rec, durable, root):
        torn = [x for x in rec if "fails its checksum" in x]
        resumed = [x for x in rec if re.match(r"resumed step \d+$", x)]
        starts = [x for x in rec if x == "fresh" or re.match(r"resumed step \d+$", x)]
        if torn:
            return "unrecoverable", (f"a restored state failed its checksum {len(torn)}x: "
                                     f"{torn[0].split(': ', 2)[-1]}; "
                                     + ("finished after all" if rc == 0 else f"never finished (exit {rc})"))
        if rc != 0:
            return "unrecoverable", f"never finished: last exit {rc}"
        if starts and starts[0] == "fresh" and durable:
            return "unrecoverable", f"started fresh although checkpoint(s) {durable} were durable"
        final = self.final_state(run, os.path.join(root, "check"))
        if final != STEPS[trainer]:
            return "unrecoverable", f"final state: {final}"
        done = [x for x in before + rec if x.startswith("done step ")]
        want = hashlib.sha256(crashtrainer.state_of(STEPS[trainer], SIZE)).hexdigest()
        if not done or not done[-1].endswith(want):
            return "unrecoverable", f"the trainer's last line: {done[-1] if done else 'none'}"
        return ("recovered" if resumed or not starts else "fresh-ok"), ""

    def final_state(self, run, where):
        """The step the run's newest checkpoint holds, verified, or why not
        (pulled into WHERE/pulled by a reader with its own HOME there)."""
        dest = os.path.join(where, "pulled")
        os.makedirs(os.path.join(where, "home"), exist_ok=True)
        env = self.env(None)
        env["HOME"] = os.path.join(where, "home")
        r = subprocess.run([self.spotrun, "pull", "-q", "--store", self.a.store, run, dest],
                           env=env, capture_output=True, text=True, cwd=where)
        if r.returncode != 0:
            return f"pull failed: {r.stderr.strip()}"
        try:
            with open(os.path.join(dest, "state.bin"), "rb") as f:
                return crashtrainer.verify(f.read(), SIZE)
        except (OSError, ValueError) as e:
            return f"the newest checkpoint does not verify: {e}"

    def main(self):
        t0 = time.monotonic()
        for i in range(self.a.n):
            self.iteration(i)
        c = self.counts
        store = "S3" if self.s3 else "file"
        print(f"\npoints reached ({store} store):")
        for k in sorted(self.points):
            print(f"  {self.points[k]:5}  {k}")
        if self.bad:
            print("failing iterations:")
            for b in self.bad:
                print("  " + b)
        print(f"crash loop: N={self.a.n} runs ({store} store, seed {self.a.seed}, "
              f"{time.monotonic() - t0:.0f}s): recovered {c.get('recovered', 0)}, "
              f"fresh-ok {c.get('fresh-ok', 0)}, unrecoverable {c.get('unrecoverable', 0)}, "
              f"user-file-changed {c.get('user-file-changed', 0)}")
        return 1 if c.get("unrecoverable", 0) or c.get("user-file-changed", 0) else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", required=True, help="a file store's path or s3://bucket/prefix")
    p.add_argument("-n", type=int, default=8, help="iterations")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--dir", required=True, help="scratch directory (nodes, logs)")
    p.add_argument("--s3-url", default=os.environ.get("S3_URL", ""),
                   help="the S3 server's http://HOST:PORT (the fault proxy's upstream)")
    p.add_argument("--keep", action="store_true", help="keep the nodes of passing iterations")
    p.add_argument("--only", default="", help="TRAINER, KIND or TRAINER/KIND, comma-separated: "
                   "only these (e.g. inplace/notice)")
    a = p.parse_args()
    if a.store.startswith("s3://") and not a.s3_url:
        p.error("an S3 store needs --s3-url (or S3_URL)")
    print(f"# crash loop: seed {a.seed} (--seed {a.seed} replays it), {a.n} iterations", flush=True)
    sys.exit(Loop(a).main())


if __name__ == "__main__":
    main()
