"""promcheck.py FILE - validates a Prometheus text exposition (format 0.0.4)
and prints its samples as JSON lines: {"name", "labels", "value"}.

Checks the rules of the format itself (no promtool here): line grammar,
metric and label names, quoted and escaped label values, float values,
# HELP / # TYPE at most once per family and before its samples, the
samples of a family contiguous, no duplicate series, and for histograms
cumulative buckets ending in le="+Inf" equal to _count, with _sum.
Exits 1 with a message naming the line on the first violation.
"""
import json
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def fail(lineno, msg):
    sys.exit(f"promcheck: line {lineno}: {msg}")


def parse_value(s, lineno):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    try:
        return float(s)
    except ValueError:
        fail(lineno, f"bad value {s!r}")


def parse_labels(s, i, lineno):
    """Parses {a="x",b="y"} starting at s[i] == '{'; returns (dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        if s[i] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            fail(lineno, "bad label name")
        name = m.group(0)
        i = m.end()
        if s[i : i + 2] != '="':
            fail(lineno, f"label {name} without =\"")
        i += 2
        val = []
        while s[i] != '"':
            if s[i] == "\\":
                nxt = s[i + 1]
                if nxt not in '\\"n':
                    fail(lineno, f"bad escape \\{nxt}")
                val.append("\n" if nxt == "n" else nxt)
                i += 2
            elif s[i] == "\n":
                fail(lineno, "newline in a label value")
            else:
                val.append(s[i])
                i += 1
        i += 1
        if name in labels:
            fail(lineno, f"label {name} twice")
        labels[name] = "".join(val)
        if s[i] == ",":
            i += 1
        elif s[i] != "}":
            fail(lineno, "expected , or }")


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and types.get(base) in ("histogram", "summary"):
            return base
    return name


def main(path):
    text = open(path, encoding="utf-8").read()
    if text and not text.endswith("\n"):
        fail(text.count("\n") + 1, "the last line does not end with a newline")
    types, helps, samples, seen = {}, set(), [], set()
    done_families, current = set(), None
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 2 and parts[1] in ("HELP", "TYPE"):
                if len(parts) < 3 or not NAME.fullmatch(parts[2]):
                    fail(lineno, "bad metric name in " + parts[1])
                fam = parts[2]
                if fam in done_families or fam == current and parts[1] == "TYPE" and fam in types:
                    fail(lineno, f"{parts[1]} of {fam} after its samples or twice")
                if parts[1] == "TYPE":
                    if len(parts) != 4 or parts[3] not in TYPES:
                        fail(lineno, "bad TYPE")
                    if fam in types:
                        fail(lineno, f"TYPE of {fam} twice")
                    types[fam] = parts[3]
                else:
                    if fam in helps:
                        fail(lineno, f"HELP of {fam} twice")
                    helps.add(fam)
            continue
        m = NAME.match(line)
        if not m:
            fail(lineno, "bad metric name")
        name, i = m.group(0), m.end()
        labels = {}
        if i < len(line) and line[i] == "{":
            try:
                labels, i = parse_labels(line, i, lineno)
            except IndexError:
                fail(lineno, "unterminated label set")
        rest = line[i:].split()
        if not line[i:].startswith(" ") or len(rest) not in (1, 2):
            fail(lineno, "expected ' value [timestamp]'")
        value = parse_value(rest[0], lineno)
        if len(rest) == 2 and not re.fullmatch(r"-?[0-9]+", rest[1]):
            fail(lineno, "bad timestamp")
        fam = family_of(name, types)
        if fam != current:
            if fam in done_families:
                fail(lineno, f"samples of {fam} are not together")
            if current:
                done_families.add(current)
            current = fam
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            fail(lineno, f"duplicate series {name}{labels}")
        seen.add(key)
        t = types.get(fam, "untyped")
        if t == "counter" and (value < 0 or math.isnan(value)):
            fail(lineno, "a counter must be >= 0")
        if t == "histogram" and name == fam:
            fail(lineno, "a histogram sample must be _bucket, _sum or _count")
        if name.endswith("_bucket") and t == "histogram" and "le" not in labels:
            fail(lineno, "a bucket without le")
        samples.append({"name": name, "labels": labels, "value": value, "line": lineno})
    check_histograms(types, samples)
    for s in samples:
        del s["line"]
        print(json.dumps(s))


def check_histograms(types, samples):
    for fam, t in types.items():
        if t != "histogram":
            continue
        series = {}
        for s in samples:
            if s["name"] in (fam + "_bucket", fam + "_sum", fam + "_count"):
                other = tuple(sorted((k, v) for k, v in s["labels"].items() if k != "le"))
                series.setdefault(other, []).append(s)
        for other, ss in series.items():
            buckets = [s for s in ss if s["name"] == fam + "_bucket"]
            count = [s for s in ss if s["name"] == fam + "_count"]
            total = [s for s in ss if s["name"] == fam + "_sum"]
            if not buckets or len(count) != 1 or len(total) != 1:
                fail(ss[0]["line"], f"histogram {fam}{dict(other)} needs buckets, _sum and _count")
            les = [parse_value(s["labels"]["le"], s["line"]) for s in buckets]
            if les != sorted(les) or les[-1] != math.inf:
                fail(buckets[-1]["line"], f"buckets of {fam} must rise to le=\"+Inf\"")
            vals = [s["value"] for s in buckets]
            if vals != sorted(vals):
                fail(buckets[-1]["line"], f"buckets of {fam} are not cumulative")
            if vals[-1] != count[0]["value"]:
                fail(count[0]["line"], f"{fam}_count differs from the +Inf bucket")


if __name__ == "__main__":
    main(sys.argv[1])
