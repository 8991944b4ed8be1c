#!/usr/bin/env python3
"""house.py [--pairs P] [--lines L] [--min-lines N] [-v]: the house's size
limits, rerunnable without any outside tool: the duplicate pairs (at most
P, default 5) and the C functions over L lines (default 100, by
scripts/proc-length.py). Exits 1 when either limit is passed.

Duplicates: every .c, .h, .sh and .py file git tracks outside any tests/
folder is read line by line. A line is normalized: comments, blank lines,
lines of punctuation alone (`{`, `} else {`, `);`), #include and import
lines are dropped, white space is folded; its shape is the line with
every string, number and identifier other than a keyword replaced by a
placeholder. Two places share a run when N (default 6) or more
consecutive normalized lines have the same shapes. A window standing in
more than 8 places (as `duplicates` has it), or in 3 or more files of one
folder (that folder's idiom), does not count. A pair is two files (or a
file with itself) sharing one or more runs; it prints as
`a.c:LINE ~ b.c:LINE (+K more runs)`, its longest run first.

Boilerplate (a pair made only of it does not count): a run alike only in
shape (no N lines in a row the same to the letter) shorter than 10 lines;
or a run in which at least half of the lines are thin, that is: a return,
break, continue or goto; a call that frees, closes, unlocks or destroys
(`free(x)`, `sr_foo_free(&x)`, `close(fd)`, `curl_easy_cleanup`); `fail`,
`die` or `exit` in shell; a row of an option or lookup table
(`{"name", ...},`, its help text continued on string-only lines, its
last fields `1, 1, FLAGS},`); a `case X:` label; a bare declaration (`int rc = 0;`);
or a line of keywords and punctuation alone. `-v` prints the boilerplate
pairs too. tests/README.md, "House limits".
"""

import argparse
import hashlib
import importlib.util
import re
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WINDOW_MAX_PLACES = 8
SHAPE_MIN = 10
FOLDER_IDIOM = 3


def _proc_length():
    spec = importlib.util.spec_from_file_location("proc_length", ROOT / "scripts" / "proc-length.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PL = _proc_length()

KEYWORDS = set(
    """if else for while do switch case default return break continue goto
    sizeof struct union enum typedef static const volatile extern inline
    unsigned signed int char long short void float double bool size_t
    ssize_t NULL true false def class import from as with try except
    finally raise pass lambda yield in not and or is None True False elif
    then fi done esac local echo printf exit function""".split()
)
TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|\b\d[\w.]*|[A-Za-z_]\w*|\S')
PUNCT_ONLY = re.compile(r"^[\s{}()\[\];,]*$")
THIN = [
    re.compile(r"^(return\b.*|break;|continue;|goto \w+;)$"),
    re.compile(r"^\w*(free|close|cleanup|unlock|destroy|_fini|_clear)\w*\s*\(.*\);$"),
    re.compile(r"^(fail|die|exit|return)\b.*$"),
    re.compile(r'^\{\s*"[^"]*",.*\},?$'),
    re.compile(r"^case\b.*:$|^default:$"),
    re.compile(r'^("(?:[^"\\]|\\.)*"\s*)+[,})\];]*$'),  # a table row's text, continued
    re.compile(r"^[\w\s,|&]*\}+[,;]?$"),  # a table row's last fields: 1, 1, A | B},
    re.compile(r"^(const\s+)?(struct\s+)?\w+\s*\**\s*\w+(\s*=\s*[^;()]*)?;$"),
]


def tracked():
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.c", "*.h", "*.sh", "*.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [p for p in out if "tests" not in Path(p).parts]


C_LEXEME = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_c_comments(text):
    """C: comments dropped (their newlines kept), literals kept, and
    preprocessor lines (#include, a #define and its continued lines)
    dropped."""
    text = C_LEXEME.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else "\n" * m.group(0).count("\n"), text)
    out, macro = [], False
    for line in text.split("\n"):
        drop = macro or line.lstrip().startswith("#")
        macro = drop and line.rstrip().endswith("\\")  # a #define goes on
        out.append("" if drop else line)
    return "\n".join(out)


def strip_hash_comments(text):
    """Shell and python: a line whose first non-blank is # is a comment
    (a trailing # comment is kept: telling it from a # in a string is
    more than this needs)."""
    return "\n".join("" if l.lstrip().startswith("#") else l for l in text.split("\n"))


def normalized(path):
    """[(line number, text, shape)] of the lines that count in path."""
    text = (ROOT / path).read_text(errors="replace")
    if path.endswith((".c", ".h")):
        text = strip_c_comments(text)
    else:
        text = strip_hash_comments(text)
    out = []
    for no, line in enumerate(text.split("\n"), 1):
        t = " ".join(line.split())
        if not t or PUNCT_ONLY.match(t) or re.match(r"^[}\s]*else[{\s]*$|^\}\s*else\s*\{$", t):
            continue
        if re.match(r"^(import|from \S+ import)\b", t):
            continue
        shape = []
        for tok in TOKEN.findall(t):
            if tok[0] in "\"'":
                shape.append("S")
            elif tok[0].isdigit():
                shape.append("N")
            elif tok[0].isalpha() or tok[0] == "_":
                shape.append(tok if tok in KEYWORDS else "I")
            else:
                shape.append(tok)
        out.append((no, t, " ".join(shape)))
    return out


def thin(text):
    if all(tok in KEYWORDS or not (tok[0].isalnum() or tok[0] in "_\"'") for tok in TOKEN.findall(text)):
        return True
    return any(p.match(text) for p in THIN)


def boilerplate(run, n):
    """A run mostly thin, or alike only in shape (no n lines in a row the
    same to the letter) and shorter than SHAPE_MIN lines."""
    length, share, same = run[0], run[5], run[6]
    return share >= 0.5 or (same < n and length < SHAPE_MIN)


def folder_idiom(places):
    """Whether a window stands in FOLDER_IDIOM or more files of one folder:
    that folder's way of doing a thing (a command's preamble), not a copy."""
    per = defaultdict(set)
    for f, _ in places:
        per[str(Path(f).parent)].add(f)
    return max(len(v) for v in per.values()) >= FOLDER_IDIOM


def find_pairs(files, n):
    lines = {f: normalized(f) for f in files}
    places = defaultdict(list)
    for f, ls in lines.items():
        for i in range(len(ls) - n + 1):
            key = hashlib.blake2b("\n".join(l[2] for l in ls[i : i + n]).encode(), digest_size=12).digest()
            places[key].append((f, i))
    # matching windows, by pair of places, keyed by the offset between them
    hits = defaultdict(set)
    for key, ps in places.items():
        if len(ps) < 2 or len(ps) > WINDOW_MAX_PLACES or folder_idiom(ps):
            continue
        for a in range(len(ps)):
            for b in range(a + 1, len(ps)):
                (fa, ia), (fb, ib) = sorted((ps[a], ps[b]))
                if fa == fb and abs(ia - ib) < n:
                    continue  # a run overlapping itself (a repeated line)
                hits[(fa, fb, ib - ia)].add(ia)
    runs = defaultdict(list)  # (fa, fb) -> [(len, a first, a last, b first, b last, thin share)]
    for (fa, fb, off), starts in hits.items():
        starts = sorted(starts)
        k = 0
        while k < len(starts):
            j = k
            while j + 1 < len(starts) and starts[j + 1] == starts[j] + 1:
                j += 1
            a0, a1 = starts[k], starts[j] + n - 1
            seg = lines[fa][a0 : a1 + 1]
            other = lines[fb][a0 + off : a1 + off + 1]
            share = sum(thin(l[1]) for l in seg) / len(seg)
            same, streak = 0, 0  # the longest stretch the same to the letter
            for x, y in zip(seg, other):
                streak = streak + 1 if x[1] == y[1] else 0
                same = max(same, streak)
            runs[(fa, fb)].append(
                (len(seg), lines[fa][a0][0], lines[fa][a1][0], lines[fb][a0 + off][0], lines[fb][a1 + off][0], share, same)
            )
            k = j + 1
    pairs = []
    for (fa, fb), rs in runs.items():
        rs.sort(key=lambda r: (-r[0], r[1]))
        boiler = all(boilerplate(r, n) for r in rs)
        pairs.append((boiler, -rs[0][0], fa, fb, rs))
    pairs.sort()
    return pairs


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5, help="fail over P non-boilerplate pairs")
    ap.add_argument("--lines", type=int, default=100, help="fail when a function is over L lines")
    ap.add_argument("--min-lines", type=int, default=6, help="shortest run that makes a pair")
    ap.add_argument("-v", action="store_true", help="print the boilerplate pairs too")
    a = ap.parse_args()
    files = tracked()
    pairs = find_pairs(files, a.min_lines)
    counted = [p for p in pairs if not p[0]]
    for boiler, _, fa, fb, rs in pairs:
        if boiler and not a.v:
            continue
        r = rs[0]
        more = f" (+{len(rs) - 1} more run{'s' if len(rs) > 2 else ''})" if len(rs) > 1 else ""
        tag = " boilerplate" if boiler else ""
        print(f"{fa}:{r[1]}-{r[2]} ~ {fb}:{r[3]}-{r[4]}{tag}{more}")
    print(f"duplicate pairs: {len(counted)} (limit {a.pairs}; {len(pairs) - len(counted)} boilerplate) in {len(files)} files")
    long = []
    for p in files:
        if p.endswith((".c", ".h")) and not p.startswith("examples/"):
            for name, line, n in PL.functions(ROOT / p):
                if n > a.lines:
                    long.append((n, f"{p}:{line}", name))
    for n, where, name in sorted(long, key=lambda f: (-f[0], f[1])):
        print(f"{n:5d} {where} {name}")
    print(f"procedures over {a.lines} lines: {len(long)}")
    return 1 if len(counted) > a.pairs or long else 0


if __name__ == "__main__":
    sys.exit(main())
