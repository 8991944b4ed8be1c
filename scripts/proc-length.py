#!/usr/bin/env python3
"""proc-length.py [-n N] [--max M] [FILE...]: the C functions longer than N
lines (default 100), longest first, as "LINES FILE:LINE NAME"; exits 1 when
one is longer than M (default 100), the house limit (new code aims at 60).

Without FILEs: every .c and .h file git tracks outside tests/ and
examples/. A function's length runs from its signature's first line to its
closing brace; an option table inside it (an array of struct sr_opt or
struct option, from its declaration to its closing brace) is data and is
not counted. scripts/test.sh's format stage runs it.
"""

import argparse
import re
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def blank(text):
    """text with comments, string and char literals and preprocessor
    lines replaced by spaces (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(text)
    bol = True
    while i < n:
        c = text[i]
        if bol and c in " \t":
            out.append(c)
            i += 1
            continue
        if bol and c == "#":
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        bol = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1 : j]) + c)
            i = j + 1
        else:
            if c == "\n":
                bol = True
            out.append(c)
            i += 1
    return "".join(out)


def match_brace(s, i):
    """Index of the brace closing the one at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


def func_name(header):
    """The function a header (the text before a top-level brace) defines,
    or None when the brace opens something else (an initializer, a type)."""
    h = header.rstrip()
    if not h.endswith(")") or "=" in re.sub(r"\([^()]*\)", "", h):
        return None
    depth = 0
    for k in range(len(h) - 1, -1, -1):
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"(\w+)\s*$", h[:k])
                return m.group(1) if m else None
    return None


def table_lines(body):
    """Lines of the option tables in a function body."""
    total = 0
    for m in re.finditer(r"struct\s+(sr_opt|option)\s+\w+\s*\[[^\]]*\]\s*=\s*\{", body):
        start = body.rfind("\n", 0, m.start()) + 1
        end = match_brace(body, m.end() - 1)
        total += body.count("\n", start, end) + 1
    return total


def functions(path):
    """(name, first line, lines) of each function defined in path."""
    s = blank(path.read_text(errors="replace"))
    i, last, n = 0, 0, len(s)
    while i < n:
        c = s[i]
        if c == ";" or c == "}":
            last = i + 1
        elif c == "{":
            end = match_brace(s, i)
            header = s[last:i]
            name = func_name(header)
            if name:
                first = last + len(header) - len(header.lstrip())
                line = s.count("\n", 0, first) + 1
                lines = s.count("\n", first, end) + 1 - table_lines(s[i : end + 1])
                yield name, line, lines
            i = end
            last = end + 1
        i += 1


def tracked():
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.c", "*.h"], capture_output=True, text=True, check=True
    ).stdout.split()
    return [p for p in out if not p.startswith(("tests/", "examples/"))]


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=100, help="print functions over N lines")
    ap.add_argument("--max", type=int, default=100, help="fail when one is over M lines")
    ap.add_argument("files", nargs="*", type=Path)
    a = ap.parse_args()
    found = []
    files = a.files or [ROOT / p for p in tracked()]
    for p in files:
        for name, line, lines in functions(p):
            if lines > a.n:
                shown = p if a.files else p.relative_to(ROOT)
                found.append((lines, f"{shown}:{line}", name))
    for lines, where, name in sorted(found, key=lambda f: (-f[0], f[1])):
        print(f"{lines:5d} {where} {name}")
    over = [f for f in found if f[0] > a.max]
    if over:
        print(f"proc-length: {len(over)} function(s) over {a.max} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
