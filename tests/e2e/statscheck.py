#!/usr/bin/env python3
"""statscheck.py - what `spotrun stats` must say about genstore.py's runs,
computed here from the generator's model, compared with its --json or --csv.

    spotrun stats --json [flags] | statscheck.py MODEL json [flags]
    spotrun stats --csv  [flags] | statscheck.py MODEL csv  [flags]

flags: --by KEYS --since DATE --until DATE --label team=X --prices FILE
--price-per-hour X (the same as given to stats). Exit 1 with the
differences on stderr. The rules are docs/cost.md's: attempts clipped to
the window and cut at days (for day/week/month keys); an end counts where
it falls inside the window; lost work is [end - lost, end] clipped.
"""
import argparse
import csv
import datetime
import io
import json
import sys

H = 3600000.0
DAY = 86400000
CAUSES = ["done", "preempted", "crashed", "oom", "stalled", "time-limit", "budget",
          "vanished", "lease-lost", "pruned", "running"]


def ms_of(s, end):
    if len(s) == 10:
        d = datetime.datetime.strptime(s, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
        return int(d.timestamp() * 1000) + (DAY if end else 0)
    d = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    return int(d.timestamp() * 1000)


def key_of(name, a, t):
    d = datetime.datetime.fromtimestamp(t / 1000, datetime.timezone.utc).date()
    if name == "team":
        return a["team"] or "-"
    if name == "instance_type":
        return a["type"]
    if name == "zone":
        return a["zone"]
    if name == "cloud":
        return "aws"
    if name == "host":
        return "node-%s-%d" % (a["run"], a["attempt"])
    if name == "day":
        return d.isoformat()
    if name == "week":
        y, w, _ = d.isocalendar()
        return "%04d-W%02d" % (y, w)
    if name == "month":
        return d.strftime("%Y-%m")
    if name == "cause":
        return a["cause"]
    return "-"  # a label the runs lack


def expected(model, o):
    by = o.by.split(",") if o.by else []
    lo = ms_of(o.since, False) if o.since else -2**62
    hi = ms_of(o.until, True) if o.until else 2**62
    table = {}
    if o.prices:
        for line in open(o.prices):
            f = line.split("#")[0].split()
            if f:
                table[f[0]] = (float(f[1]), float(f[2]) if len(f) > 2 and f[2] != "-" else 0)
    want = dict(kv.split("=") for kv in o.label)
    groups, total = {}, {}

    def row(g):
        return g.setdefault("_", dict(runs=set(), atts=set(), ih=0, gh=0, gu=0, cost=0, unp=0,
                                      od=0, ods=0, pre=0, lost=0, lostc=0, lostu=0,
                                      ends={c: 0 for c in CAUSES}, wall=0, stage=0, gs=0, gsu=0,
                                      gsi=0, queued=0))

    ran_to = {}  # run: the latest end of its attempts so far
    for a in model:
        if any(k != "team" or a["team"] != v for k, v in want.items()):
            continue
        s, e = a["start_ms"], a["end_ms"]
        prev = ran_to.get(a["run"])
        ran_to[a["run"]] = e if prev is None else max(prev, e)
        # queued: the run's wait before this attempt, clipped to the window,
        # counted in the attempt's first piece
        waited = max(0, min(s, hi) - max(prev, lo)) if prev is not None and prev < s else 0
        if s >= hi or e < lo or (e == lo and e > s):
            continue
        c0, c1 = max(s, lo), min(e, hi)
        cuts = [c0]
        if any(k in ("day", "week", "month") for k in by):
            t = (c0 // DAY + 1) * DAY
            while t < c1:
                cuts.append(t)
                t += DAY
        cuts.append(c1)
        if a["type"] in table:
            spot, od = table[a["type"]]
        elif o.price_per_hour:
            spot, od = o.price_per_hour, 0
        else:
            spot, od = a["price"], 0
        for t0, t1 in zip(cuts, cuts[1:]):
            k = tuple(key_of(n, a, t0) for n in by)
            for r in (row(groups.setdefault(k, {})), row(total)):
                r["runs"].add(a["run"])
                r["atts"].add((a["run"], a["attempt"]))
                ih = (t1 - t0) / H * a["nodes"]
                frac = (t1 - t0) / (e - s) if e > s else 1
                lost = max(0, min(e, t1) - max(e - a["lost_ms"], t0)) / H * a["nodes"]
                r["ih"] += ih
                r["lost"] += lost
                if a["gpus"]:
                    r["gh"] += ih * a["gpus"]
                else:
                    r["gu"] += ih
                if spot:
                    r["cost"] += ih * spot
                    r["lostc"] += lost * spot
                else:
                    r["unp"] += ih
                    r["lostu"] += lost
                if spot and od:
                    r["od"] += ih * od
                    r["ods"] += ih * spot
                if t1 == e and e < hi:
                    r["ends"][a["cause"]] += 1
                    r["pre"] += a["cause"] == "preempted"
                r["wall"] += (t1 - t0) / 1000
                r["queued"] += waited / H if t0 == c0 else 0
                r["stage"] += a["stage"] * frac
                n = a["samples"] * frac
                r["gs"] += n
                r["gsu"] += a["util"] * n
                r["gsi"] += a["idle"] * n

    def out(r):
        none = None
        return {
            "runs": len(r["runs"]), "attempts": len(r["atts"]), "instance_hours": r["ih"],
            "gpu_hours": r["gh"], "gpu_unknown_hours": r["gu"],
            "cost": r["cost"] if r["ih"] - r["unp"] > 1e-9 else none,
            "unpriced_hours": r["unp"], "on_demand_cost": r["od"] if r["od"] > 0 else none,
            "saving": r["od"] - r["ods"] if r["od"] > 0 else none,
            "preemptions": r["pre"],
            "preemptions_per_100h": r["pre"] * 100 / r["ih"] if r["ih"] > 0 else none,
            "mtbp_hours": r["ih"] / r["pre"] if r["pre"] else none,
            "lost_hours": r["lost"],
            "lost_cost": r["lostc"] if r["lost"] - r["lostu"] > 1e-9 else none,
            "ends": r["ends"],
            "checkpoint_overhead": r["stage"] / r["wall"] if r["wall"] > 0 else none,
            "gpu_util_mean": r["gsu"] / r["gs"] if r["gs"] > 0 else none,
            "gpu_idle_share": r["gsi"] / r["gs"] if r["gs"] > 0 else none,
            "queued_hours": r["queued"],
        }

    rows = [(list(k), out(g["_"])) for k, g in sorted(groups.items())]
    return by, rows, out(total["_"]) if total else None


def close(a, b):
    if a is None or b is None or isinstance(a, dict):
        return a == b
    return abs(float(a) - float(b)) <= 1e-5 * max(1, abs(float(b)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("form", choices=["json", "csv"])
    p.add_argument("--by", default="")
    p.add_argument("--since")
    p.add_argument("--until")
    p.add_argument("--label", action="append", default=[])
    p.add_argument("--prices")
    p.add_argument("--price-per-hour", type=float, default=0)
    o = p.parse_args()
    model = json.load(open(o.model))
    by, rows, total = expected(model, o)
    bad = []
    if o.form == "json":
        doc = json.load(sys.stdin)
        got = [([g["key"][k] for k in by], g) for g in doc["groups"]]
        if doc["by"] != by:
            bad.append("by: %s, want %s" % (doc["by"], by))
        if total:
            got.append((["total"], doc["total"]))
            rows = rows + [(["total"], total)]
        elif doc["groups"] or doc["total"]["runs"]:
            bad.append("want no groups, got %s" % doc["groups"])
    else:
        r = list(csv.reader(io.StringIO(sys.stdin.read())))
        head = r[0]
        got = []
        for line in r[1:]:
            d = dict(zip(head, line))
            g = {k: (None if d[k] == "" else float(d[k])) for k in head[len(by):]
                 if not k.startswith("ends_")}
            g["ends"] = {c: int(d["ends_" + c]) for c in CAUSES}
            got.append(([d[k] for k in by], g))
        if not by and total:
            rows = [([], total)]
    if [k for k, _ in got] != [k for k, _ in rows]:
        bad.append("groups: %s, want %s" % ([k for k, _ in got], [k for k, _ in rows]))
    for (k, g), (_, w) in zip(got, rows):
        for f, v in w.items():
            if not close(g.get(f), v):
                bad.append("%s %s: %s, want %s" % ("/".join(k) or "total", f, g.get(f), v))
    if bad:
        sys.stderr.write("\n".join(bad) + "\n")
        sys.exit(1)
    print("ok: %d groups" % len(rows))


if __name__ == "__main__":
    main()
