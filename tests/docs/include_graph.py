#!/usr/bin/env python3
"""include_graph.py [ROOT] - every #include "..." keeps to the layer picture.

docs/internals.md, "The include graph", holds two tables: each source
folder and the folders it may include, and the headers held back (outside
their own folder, only the folders named may include them; a row may be a
glob, `preload/*`, and the first matching row applies). This reads every
#include "..." of the C sources outside tests/ and examples/, resolves the
folder that holds the header (a path relative to the including file, else
the one source file of that name), and prints one line per problem,
file:line first: a folder the first table does not name, an include its
row does not allow, a header the second table holds back, a header that no
folder holds (or two do). Exits 1 on a problem, 0 in silence.

The files are git's (tracked, and untracked ones it does not ignore) when
ROOT is a git checkout, else every file below ROOT but build trees.
"""
import fnmatch
import os
import re
import subprocess
import sys

SOURCE = (".c", ".h")
SKIP = ("tests/", "examples/")
DOC = "docs/internals.md"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def git(root, *args):
    return subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True,
                          check=True).stdout


def sources(root):
    """The C sources below root, outside tests/ and examples/."""
    files = None
    try:
        if os.path.realpath(git(root, "rev-parse", "--show-toplevel").strip()) == \
                os.path.realpath(root):
            files = [f for f in git(root, "ls-files", "--cached", "--others",
                                    "--exclude-standard").splitlines()
                     if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    if files is None:
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "node_modules")
                       and not os.path.exists(os.path.join(d, x, "CMakeCache.txt"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SOURCE) and not f.startswith(SKIP))


def table(text, marker):
    """The rows of the markdown table after <!-- include-graph: marker -->,
    as (first cell's names, second cell's names), header row excluded."""
    at = text.find("<!-- include-graph: %s -->" % marker)
    if at < 0:
        raise SystemExit("include_graph: %s has no '<!-- include-graph: %s -->' table"
                         % (DOC, marker))
    rows = []
    for line in text[at:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= set("- :"):
            continue
        names = [re.findall(r"`([^`]+)`", c) for c in cells[:2]]
        if names[0]:
            rows.append((names[0][0], names[1]))
    return rows


def resolve(f, header, by_name, files):
    """The source file header names when f includes it, or an error text."""
    rel = os.path.normpath(os.path.join(os.path.dirname(f), header))
    if rel in files:
        return rel, None
    held = by_name.get(os.path.basename(header), [])
    if len(held) == 1:
        return held[0], None
    if not held:
        return None, "no source folder holds it"
    return None, "%s all hold it: the include cannot say which" % ", ".join(held)


def check(root):
    text = open(os.path.join(root, DOC)).read()
    may = {folder: set(allowed) for folder, allowed in table(text, "folders")}
    held_back = table(text, "headers")
    files = sources(root)
    fileset = set(files)
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    problems = []
    unnamed = set()
    for f in files:
        folder = os.path.dirname(f)
        if folder not in may:
            if folder not in unnamed:
                unnamed.add(folder)
                problems.append("%s:1: folder %s is not in %s's table of folders: add its row "
                                "(what it may include)" % (f, folder, DOC))
            continue
        with open(os.path.join(root, f), errors="replace") as src:
            for n, line in enumerate(src, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                where = "%s:%d: #include \"%s\"" % (f, n, m.group(1))
                target, err = resolve(f, m.group(1), by_name, fileset)
                if err:
                    problems.append("%s: %s" % (where, err))
                    continue
                to = os.path.dirname(target)
                if to == folder:
                    continue
                if to not in may:
                    problems.append("%s: folder %s (of %s) is not in %s's table of folders"
                                    % (where, to, target, DOC))
                    continue
                if to not in may[folder]:
                    problems.append("%s: %s may not include %s (%s): %s does not allow it"
                                    % (where, folder, to, target, DOC))
                    continue
                for pattern, only in held_back:
                    if fnmatch.fnmatch(target, pattern):
                        if folder not in only:
                            problems.append("%s: %s is held back: %s lets only %s include it"
                                            % (where, target, DOC,
                                               ", ".join(only) if only else "its own folder"))
                        break
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    problems = check(root)
    for p in problems:
        print("include_graph: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
