#!/usr/bin/env python3
"""sup_owners.py [DIR]: the owned parts of the supervisor's state are
written only by their owners.

runtime/supervise/supervisor_int.h splits struct sup into parts; a part
whose comment says "Owned by a.c" (or "Owned by a.c and b.c") may be
written only in those files. A write is an assignment to one of its
fields (=, +=, |=, ...), ++ or --, or its address taken (&s->stop.ack:
the callee may write it), through the member of struct sup or struct
sup_attempt that holds the part (s->stop.pre, s->att.watch.stalling).
An address passed where the callee's
prototype (in a header of common/, storage/ or runtime/) takes a const
pointer is a read. Reads are free. Prints "file:line: writes s->stop.pre (owned by stop.c,
notices.c)" for each other write and exits 1; exits 0 in silence.
Multi-node: no file of the loop (one that includes supervisor_int.h) nor
of runtime/cmd compares the wrapper's node count (c->nodes > 1,
cfg->nodes <= 1, r->c.nodes > 1 and the like); they ask the one
interface, supervisor.h's sr_cfg_multinode, sr_cfg_rank and
sr_cfg_nodes (group.c's sup_group_* in the loop). Such a comparison
prints "file:line: asks how many nodes (supervisor.h's sr_cfg_* answer)".
A stored checkpoint's node count (m->nodes) is the format's, not asked
here.
DIR: the tree (default: this checkout).
"""

import re
import sys
from pathlib import Path

HEADER = "runtime/supervise/supervisor_int.h"
# The wrapper's configuration's node count, compared: c->nodes > 1,
# s->cfg->nodes <= 1, r->c.nodes > 1, n.nodes > 1 (struct sr_nodes).
NODES = r"(?:\bc|\bcfg|->cfg|->c|\.c|\bn)(?:->|\.)nodes\s*(?:[<>]=?|[=!]=)"
ASSIGN = r"(?:[-+*/%&|^]|<<|>>)?=(?!=)"


def strip_comments(text):
    """text with /* */ and // comments blanked (newlines kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parts(header):
    """{struct name: [owner files]} for every struct with an "Owned by"
    comment right above it."""
    owned = {}
    for m in re.finditer(r"/\*((?:(?!\*/).)*?)\*/\s*struct (sup_\w+) \{", header, re.S):
        own = re.search(r"Owned by ([\w.]+(?:(?:,| and)\s+[\w.]+)*)", m.group(1).replace("\n *", ""))
        if own:
            owned[m.group(2)] = re.findall(r"\w+\.c", own.group(1))
    return owned


def members(header, struct):
    """{member name: struct type} of the members of struct that are
    themselves structs."""
    m = re.search(r"struct %s \{(.*?)\n\};" % struct, header, re.S)
    body = strip_comments(m.group(1)) if m else ""
    return {name: kind for kind, name in re.findall(r"struct (sup_\w+) (\w+);", body)}


def paths(header, owned):
    """{access path regex: (part, owners)}: s->stop., s->att.watch. ..."""
    out = {}
    top = members(header, "sup")
    att = members(header, "sup_attempt")
    for name, kind in top.items():
        if kind in owned:
            out[r"\bs(?:->|\.)%s\." % name] = ("s->%s" % name, owned[kind])
    for name, kind in att.items():
        if kind in owned:
            out[r"\bs->att\.%s\." % name] = ("s->att.%s" % name, owned[kind])
    return out


def prototypes(root):
    """{function: [parameter text]} from the headers of the tree."""
    protos = {}
    for sub in ("common", "storage", "runtime"):
        for h in (root / sub).rglob("*.h"):
            code = strip_comments(h.read_text())
            for m in re.finditer(r"\b(\w+)\s*\(([^;{}()]*)\)\s*;", code):
                protos[m.group(1)] = [p.strip() for p in m.group(2).split(",")]
    return protos


def callee(code, at):
    """(function, argument index) of the call whose argument list holds
    position at, or (None, 0)."""
    depth, arg = 0, 0
    for i in range(at - 1, -1, -1):
        c = code[i]
        if c in ")]":
            depth += 1
        elif c in "([":
            if depth == 0:
                if c == "[":
                    return None, 0
                m = re.search(r"(\w+)\s*$", code[:i])
                return (m.group(1) if m else None), arg
            depth -= 1
        elif c == "," and depth == 0:
            arg += 1
        elif c in ";{}" and depth == 0:
            return None, 0
    return None, 0


def const_arg(code, at, protos):
    """Whether the address at position at goes to a const parameter."""
    fn, arg = callee(code, at)
    params = protos.get(fn)
    return bool(params) and arg < len(params) and params[arg].startswith("const ")


def writes(text, path, protos):
    """(line, field) of each write through path in text."""
    code = strip_comments(text)
    found = []
    field = r"(\w+)(?:\[[^\]]*\]|\.\w+)*"
    pats = [
        r"%s%s\s*(?:%s|\+\+|--)" % (path, field, ASSIGN),
        r"(?:\+\+|--)\s*%s%s" % (path, field),
        r"(?<!&)&(?!&)\s*%s%s" % (path, field),
    ]
    for k, pat in enumerate(pats):
        for m in re.finditer(pat, code):
            if k == 2 and const_arg(code, m.start(), protos):
                continue
            found.append((code.count("\n", 0, m.start()) + 1, m.group(1)))
    return sorted(set(found))


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    header = (root / HEADER).read_text()
    owned = parts(header)
    if not owned:
        print("sup_owners: %s names no owned part" % HEADER)
        return 1
    protos = prototypes(root)
    bad = 0
    for src in sorted((root / "runtime/supervise").glob("*.c")):
        text = src.read_text()
        for path, (shown, owners) in paths(header, owned).items():
            if src.name in owners:
                continue
            for line, field in writes(text, path, protos):
                print("%s:%d: writes %s.%s (owned by %s)"
                      % (src.relative_to(root), line, shown, field, ", ".join(owners)))
                bad += 1
    loop = [p for p in (root / "runtime/supervise").glob("*.c")
            if '"supervisor_int.h"' in p.read_text()]
    for src in sorted(loop + list((root / "runtime/cmd").glob("*.c"))):
        code = strip_comments(src.read_text())
        for m in re.finditer(NODES, code):
            print("%s:%d: asks how many nodes (supervisor.h's sr_cfg_* answer)"
                  % (src.relative_to(root), code.count("\n", 0, m.start()) + 1))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
