#!/usr/bin/env python3
"""genstore.py - writes a file store of runs whose numbers are known, for
`spotrun stats` (tests/e2e/t0771-stats.sh, scripts/bench-stats.sh).

    genstore.py STORE [--model model.json] [--summaries all|half|none]
    genstore.py STORE --synthetic N [--seed S] [--summaries ...]
    genstore.py STORE --fleet steady8|bursts [--model ...] [--summaries ...]

Each attempt is an event log <run>/events/<attempt %06d>.jsonl written the
way storage/run/events.c writes it (event, time, unix_ms, attempt, and the
fields runtime/record/history.c reads): a "start" with host, cloud,
instance_type, zone, nodes, labels and maybe price_per_hour; a "gpu"
sample summary; one checkpoint ("staged" and "persisted" at end - lost, so
the attempt's lost work is exactly `lost`); and the end its cause needs
(docs/events.md). With --summaries, summaries/<run>.json too, in
runtime/record/runsum.c's format (the fast path of stats). --model writes
the attempts as JSON (times in unix ms) for the test's own arithmetic.

The fixed store: week 2026-W49 (Mon 2026-11-30 .. Sun 2026-12-06) plus one
run in 2026-W50; teams nlp, vision, speech; instance types g5.xlarge and
p3.2xlarge; zones us-east-1a and us-east-1b.

The fleets (`spotrun plan`, tests/e2e/t0779-plan.sh): two weeks from
2026-11-30 on p4d.24xlarge (8 GPUs a node). bursts: every day a run of
team vision or nlp on 2 nodes (16 GPUs) from 08:00, preempted at 12:00
with an hour lost, then again 12:00-15:00 to done; steady8: the same plus
team infra's one 8-GPU run through the whole two weeks. Their runs carry a
job_type label: the bursts "finetune", infra's run "pretrain".
"""
import argparse
import json
import os
import random

H = 3600 * 1000
T0 = 1795996800000  # 2026-11-30T00:00:00Z, a Monday (ISO week 2026-W49)
assert T0 % (86400 * 1000) == 0

G5, P3 = "g5.xlarge", "p3.2xlarge"
A, B = "us-east-1a", "us-east-1b"

# (day, start hour, hours, type, zone, cause, lost hours, nodes, gpus, util,
#  idle, samples, stage seconds, price in the start event)
FIXED = {
    "nlp-a": ("nlp", [
        (0, 8, 4, G5, A, "preempted", 0.5, 1, 1, 80, 0.10, 1000, 60, 0),
        (0, 13, 3, G5, B, "done", 0, 1, 1, 90, 0.05, 500, 30, 0),
    ]),
    "nlp-b": ("nlp", [
        (1, 0, 10, P3, A, "preempted", 1, 2, 4, 50, 0.40, 2000, 120, 0),
        (1, 11, 5, P3, A, "crashed", 0.25, 2, 4, 50, 0.40, 1000, 60, 0),
        (1, 17, 2, P3, A, "done", 0, 2, 4, 60, 0.20, 500, 30, 0),
    ]),
    "vision-a": ("vision", [
        (2, 9, 6, G5, B, "oom", 2, 1, 0, 0, 0, 0, 0, 0.5),
        (2, 16, 6, G5, B, "vanished", 1, 1, 0, 0, 0, 0, 0, 0.5),
        (2, 23, 3, G5, A, "done", 0, 1, 0, 0, 0, 0, 90, 0.5),  # crosses midnight
    ]),
    "vision-b": ("vision", [
        (4, 10, 8, P3, B, "preempted", 0.5, 1, 1, 20, 0.70, 800, 40, 0),
        (4, 19, 1, P3, B, "stalled", 0.5, 1, 1, 0, 1.0, 100, 0, 0),
        (4, 21, 2, P3, B, "time-limit", 0, 1, 1, 30, 0.50, 200, 20, 0),
    ]),
    "speech-b": ("speech", [
        (5, 6, 2, G5, A, "budget", 0, 1, 1, 70, 0.10, 200, 10, 0.45),
    ]),
    "speech-a": ("speech", [  # week 2026-W50
        (7, 0, 12, G5, A, "preempted", 1.5, 1, 1, 85, 0.05, 3000, 180, 0),
        (7, 13, 4, G5, A, "running", 0, 1, 1, 85, 0.05, 1000, 60, 0),
    ]),
}


def iso(ms):
    import datetime
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def ev(kind, ms, attempt, **kw):
    o = {"event": kind, "time": iso(ms), "unix_ms": ms, "attempt": attempt}
    o.update(kw)
    return json.dumps(o)


JOB_TYPE = {}  # run: its job_type label (the fleets'; `spotrun plan` groups by it)


def labels_of(run, team):
    out = {"team": team} if team else {}
    if run in JOB_TYPE:
        out["job_type"] = JOB_TYPE[run]
    return out


def attempt_log(run, team, i, a, seq):
    """The event lines of attempt i, and its model entry."""
    (start, hours, itype, zone, cause, lost, nodes, gpus, util, idle, samples, stage,
     price) = a
    end = start + int(hours * H)
    lost_ms = int(lost * H)
    start_ev = dict(host="node-%s-%d" % (run, i), cloud="aws", instance_type=itype, zone=zone,
                    nodes=nodes, labels=labels_of(run, team))
    if nodes == 1:
        del start_ev["nodes"]
    if price:
        start_ev["price_per_hour"] = price
    lines = [ev("start", start, i, **start_ev)]
    ck = end - lost_ms
    lines.append(ev("staged", ck, i, seq=seq, step=seq * 100, seconds=stage, raw_bytes=1000,
                    stored_bytes=500))
    lines.append(ev("persisted", ck, i, seq=seq, step=seq * 100, seconds=1.0, raw_bytes=1000,
                    stored_bytes=500))
    if gpus:
        lines.append(ev("gpu", end, i, samples=samples, devices=gpus, util_mean=util,
                        util_p50=util, util_p95=util, idle_share=idle, mem_used_max=1 << 30,
                        power_mean_w=None))
    elif cause in ("vanished", "running"):
        lines.append(ev("metric", end, i, name="loss", value=1.0, step=seq * 100))
    if cause == "preempted":
        lines.append(ev("notice", end - 120000, i, source="aws", ms_left=120000))
        lines.append(ev("exit", end, i, code=75))
        lines.append(ev("preempted", end, i))
    elif cause == "done":
        lines.append(ev("exit", end, i, code=0))
        lines.append(ev("done", end, i))
    elif cause == "crashed":
        lines.append(ev("exit", end, i, code=1))
        lines.append(ev("restart", end, i))
    elif cause == "oom":
        lines.append(ev("exit", end, i, code=137, signal="KILL", oom=True))
        lines.append(ev("restart", end, i))
    elif cause == "stalled":
        lines.append(ev("stalled", end, i, since_ms=600000, timeout_ms=600000))
        lines.append(ev("exit", end, i, code=137, signal="KILL"))
        lines.append(ev("restart", end, i))
    elif cause in ("time-limit", "budget"):
        lines.append(ev("limit", end, i, cause=cause, what="run", limit=1, used=1))
        lines.append(ev("exit", end, i, code=124))
    # vanished, running: the log just stops
    model = dict(run=run, team=team, attempt=i, start_ms=start, end_ms=end, type=itype,
                 zone=zone, cause=cause, lost_ms=0 if cause in ("done", "running") else lost_ms,
                 nodes=nodes, gpus=gpus, util=util, idle=idle, samples=samples if gpus else 0,
                 stage=stage, price=price)
    return lines, model


CAUSE_STATE = {"done": "done", "preempted": "preempted", "running": "running",
               "time-limit": "stopped", "budget": "stopped"}


def summary(run, team, models):
    last = models[-1]["cause"]
    atts = []
    for m in models:
        atts.append(dict(attempt=m["attempt"], nodes=m["nodes"], host="node-%s-%d" % (run, m["attempt"]),
                         cloud="aws", instance_type=m["type"], zone=m["zone"],
                         start_ms=m["start_ms"], end_ms=m["end_ms"],
                         cause="" if m["cause"] == "running" else m["cause"],
                         lost_ms=m["lost_ms"], price_per_hour=float(m["price"]),
                         gpus=m["gpus"], gpu_samples=m["samples"],
                         gpu_util_mean=float(m["util"]), gpu_idle_share=float(m["idle"]),
                         stage_seconds=float(m["stage"]), notices=1 if m["cause"] == "preempted" else 0))
    return dict(version=1, run=run, state=CAUSE_STATE.get(last, "failed"),
                labels=labels_of(run, team), attempts=atts)


def write_run(store, run, team, attempts, with_summary):
    d = os.path.join(store, run, "events")
    os.makedirs(d, exist_ok=True)
    models = []
    for i, a in enumerate(attempts):
        lines, m = attempt_log(run, team, i, a, i + 1)
        with open(os.path.join(d, "%06d.jsonl" % i), "w") as f:
            f.write("\n".join(lines) + "\n")
        models.append(m)
    if models and models[-1]["cause"] == "done":
        open(os.path.join(store, run, "DONE"), "w").close()
    if with_summary:
        os.makedirs(os.path.join(store, "summaries"), exist_ok=True)
        with open(os.path.join(store, "summaries", run + ".json"), "w") as f:
            json.dump(summary(run, team, models), f)
    return models


def fixed(store, summaries):
    out = []
    for k, (run, (team, atts)) in enumerate(sorted(FIXED.items())):
        full = [(T0 + day * 24 * H + int(hour * H),) + tuple(a[2:]) for a in atts
                for day, hour in [(a[0], a[1])]]
        s = summaries == "all" or (summaries == "half" and k % 2 == 0)
        out += write_run(store, run, team, full, s)
    return out


def synthetic(store, n, seed, summaries):
    rnd = random.Random(seed)
    teams = ["nlp", "vision", "speech"]
    causes = ["preempted", "crashed", "oom", "stalled", "vanished"]
    out = []
    for r in range(n):
        run = "r%05d" % r
        team = teams[r % 3]
        t = T0 + rnd.randrange(0, 28 * 24) * H
        atts = []
        k = rnd.randrange(1, 5)
        for i in range(k):
            hours = rnd.choice([1, 2, 3, 4, 6, 8])
            cause = "done" if i == k - 1 else rnd.choice(causes)
            lost = 0 if cause == "done" else rnd.choice([0.25, 0.5, 1])
            lost = min(lost, hours)
            itype = rnd.choice([G5, P3])
            atts.append((t, hours, itype, rnd.choice([A, B]), cause, lost, 1, 1,
                         rnd.randrange(10, 95), 0.1, 100, 30, 0.4 if itype == G5 else 0.9))
            t += int((hours + 0.5) * H)
        s = summaries == "all" or (summaries == "half" and r % 2 == 0)
        out += write_run(store, run, team, atts, s)
    return out


P4 = "p4d.24xlarge"


def fleet(store, kind, summaries):
    out = []
    JOB_TYPE["base"] = "pretrain"
    JOB_TYPE.update({"burst-%02d" % d: "finetune" for d in range(14)})
    if kind == "steady8":
        out += write_run(store, "base", "infra",
                         [(T0, 14 * 24, P4, A, "done", 0, 1, 8, 90, 0.05, 1000, 600, 0)],
                         summaries != "none")
    for d in range(14):
        t = T0 + d * 24 * H
        atts = [(t + 8 * H, 4, P4, B, "preempted", 1, 2, 8, 80, 0.1, 100, 60, 0),
                (t + 12 * H, 3, P4, B, "done", 0, 2, 8, 80, 0.1, 100, 60, 0)]
        s = summaries == "all" or (summaries == "half" and d % 2 == 0)
        out += write_run(store, "burst-%02d" % d, ["vision", "nlp"][d % 2], atts, s)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("store")
    p.add_argument("--model")
    p.add_argument("--summaries", default="half", choices=["all", "half", "none"])
    p.add_argument("--synthetic", type=int)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fleet", choices=["steady8", "bursts"])
    a = p.parse_args()
    os.makedirs(a.store, exist_ok=True)
    if a.fleet:
        models = fleet(a.store, a.fleet, a.summaries)
    elif a.synthetic:
        models = synthetic(a.store, a.synthetic, a.seed, a.summaries)
    else:
        models = fixed(a.store, a.summaries)
    if a.model:
        with open(a.model, "w") as f:
            json.dump(models, f, indent=1)


if __name__ == "__main__":
    main()
