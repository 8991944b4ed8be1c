#!/usr/bin/env python3
"""readme_files.py [ROOT] - every C source file is named in its folder's README.

Each folder of the tree that holds *.c or *.h files has a README.md naming
each of them (docs/internals.md, "The map"): the folder's own README, or for
folders under tests/ and examples/ (test servers, probes, fakes) the
nearest README above them. A README may name a family with a glob in
backticks (`unit/test_*.c`). Entries of a README's file list ("- `x.c`: ...")
must name files that exist. Prints one line per problem and exits 1, or
exits 0 in silence.

The files are git's (tracked, and untracked ones it does not ignore) when
ROOT is a git checkout, else every file below ROOT but build trees.
"""
import fnmatch
import os
import re
import subprocess
import sys

SOURCE = (".c", ".h")
# Folders whose sources a README above them may name.
BORROWS = ("tests", "examples")


def git(root, *args):
    return subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True,
                          check=True).stdout


def sources(root):
    try:
        if os.path.realpath(git(root, "rev-parse", "--show-toplevel").strip()) == \
                os.path.realpath(root):
            files = git(root, "ls-files", "--cached", "--others", "--exclude-standard")
            return [f for f in files.splitlines()
                    if f.endswith(SOURCE) and os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in (".git", "node_modules")
                   and not os.path.exists(os.path.join(d, x, "CMakeCache.txt"))]
        found += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(SOURCE)]
    return found


def readme_for(root, folder):
    """The README that must name folder's files, or None."""
    own = os.path.join(root, folder, "README.md")
    if os.path.isfile(own) or folder.split("/")[0] not in BORROWS:
        return os.path.join(folder, "README.md") if os.path.isfile(own) else None
    d = folder
    while d:
        d = os.path.dirname(d)
        if os.path.isfile(os.path.join(root, d, "README.md")):
            return os.path.join(d, "README.md")
    return None


def named(text, readme_dir, path):
    """path (relative to the root) is named in the README's text."""
    name = os.path.basename(path)
    rel = os.path.relpath(path, readme_dir) if readme_dir else path
    if re.search(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])", text):
        return True
    for glob in re.findall(r"`([^`\s]*\*[^`\s]*)`", text):
        if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(name, glob):
            return True
    return False


def listed_missing(root, readme, text):
    """Entries of the README's file list that name no file."""
    d = os.path.dirname(readme)
    bad = []
    for line in text.splitlines():
        m = re.match(r"^- ((?:`[^`]+`(?:, )?)+):", line)
        if not m:
            continue
        for entry in re.findall(r"`([^`]+)`", m.group(1)):
            if entry.endswith(SOURCE) and "*" not in entry and \
                    not os.path.exists(os.path.join(root, d, entry)):
                bad.append(entry)
    return bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    by_folder = {}
    for f in sources(root):
        by_folder.setdefault(os.path.dirname(f), []).append(f)
    problems = []
    texts = {}
    for folder in sorted(by_folder):
        readme = readme_for(root, folder)
        if readme is None:
            problems.append("%s/ holds C sources but no README.md: add one that says what the "
                            "folder is and names each file" % folder)
            continue
        text = texts.setdefault(readme, open(os.path.join(root, readme)).read())
        for f in sorted(by_folder[folder]):
            if not named(text, os.path.dirname(readme), f):
                problems.append("%s is not named in %s: add a line for it to the README's "
                                "list of files" % (f, readme))
    for readme in sorted(texts):
        for entry in listed_missing(root, readme, texts[readme]):
            problems.append("%s lists %s, which does not exist: remove or rename the entry"
                            % (readme, entry))
    for p in problems:
        print("readme_files: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
