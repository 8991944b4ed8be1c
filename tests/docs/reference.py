#!/usr/bin/env python3
"""reference.py SPOTRUN [CLI [MAN]] - the reference tables agree with --help.

The options of `spotrun run` are defined once, in its option table
(runtime/cmd/cmd_run.c), which `spotrun run --help` prints with each
option's SPOTRUN_* twin. The CLI reference's "Options of `run`" table
(docs/cli.md) and the man page's OPTIONS OF RUN (docs/spotrun.1.scd) are
written by hand; this fails when they drift from it:

  - an option of --help missing from docs/cli.md's table or the man page,
    or one of theirs that --help does not know;
  - an option's environment twin missing from its docs/cli.md row;
  - a command of `spotrun --help` missing from docs/cli.md's command table
    or the man page's SYNOPSIS, or one of theirs that is no command;
  - an exit code of docs/cli.md's "Exit codes of `spotrun run`" table (the
    one tests/unit/test_outcome.c checks against sr_end_table) missing from
    the man page's EXIT STATUS OF RUN, or one of the man page's that the
    docs/cli.md's table lacks.

Prints one line per problem and exits 1, or exits 0 in silence.
"""
import os
import re
import subprocess
import sys

LONG = re.compile(r"--([a-z][a-z0-9-]*)")


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, check=True).stdout


def section(text, start, stop):
    """The text from the line that starts with start up to the next line that
    starts with stop (exclusive)."""
    m = re.search(r"^" + re.escape(start) + r".*$", text, re.M)
    if not m:
        return None
    rest = text[m.end():]
    e = re.search(r"^" + re.escape(stop), rest, re.M)
    return rest[:e.start()] if e else rest


def help_options(spotrun):
    """{option: set of twins} from `spotrun run --help`."""
    out = {}
    for line in run(spotrun, "run", "--help").splitlines():
        m = re.match(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]*)", line)
        if m and m.group(1) != "help":
            out[m.group(1)] = set(re.findall(r"\[(SPOTRUN_\w+)\]\s*$", line))
    return out


def readme_options(readme):
    """{option: the row's environment cell} from docs/cli.md's options table."""
    out = {}
    for line in block(readme, "| option | env | default | meaning |"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`"):
            for opt in LONG.findall(cells[0]):
                out[opt] = cells[1]
    return out


def man_options(man):
    sec = section(man, "# OPTIONS OF RUN", "# ") or ""
    return {o for line in sec.splitlines() if line.startswith("*-") for o in LONG.findall(line)}


def block(text, start):
    """The lines after the line that starts with start, up to a blank line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(start):
            out = []
            for rest in lines[i + 1:]:
                if not rest.strip():
                    break
                out.append(rest)
            return out
    return []


def help_commands(spotrun):
    return {m.group(1) for line in block(run(spotrun, "--help"), "commands:")
            for m in [re.match(r"^  ([a-z]+)\s", line)] if m}


def readme_commands(readme):
    return {m.group(1) for line in block(readme, "| command | what it does |")
            for m in [re.match(r"^\| `([a-z]+)", line)] if m}


def man_commands(man):
    sec = section(man, "# SYNOPSIS", "# ") or ""
    cmds = set(re.findall(r"\*spotrun\*\s+\*([a-z]+)", sec))
    cmds |= set(re.findall(r"\*spotrun ([a-z]+)\*", sec))
    return cmds


def readme_codes(readme):
    sec = section(readme, "## Exit codes of `spotrun run`", "## ") or ""
    codes = set()
    for line in sec.splitlines():
        m = re.match(r"^\| ([0-9][0-9 /]*) \|", line)
        if m:
            codes |= set(m.group(1).replace("/", " ").split())
    return codes


def man_codes(man):
    sec = section(man, "# EXIT STATUS OF RUN", "# ") or ""
    items = set()
    for line in sec.splitlines():
        if re.match(r"^\*[0-9]+\*(, \*[0-9]+\*)*$", line):
            items |= set(re.findall(r"[0-9]+", line))
    return items


def compare(what, a_name, a, b_name, b, problems, hint):
    for x in sorted(a - b):
        problems.append("%s %s is in %s but not in %s: %s" % (what, x, a_name, b_name, hint))


def main():
    spotrun = sys.argv[1]
    src = os.environ.get("SRCDIR", ".")
    readme_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(src, "docs/cli.md")
    man_path = sys.argv[3] if len(sys.argv) > 3 else os.path.join(src, "docs/spotrun.1.scd")
    readme = open(readme_path).read()
    man = open(man_path).read()
    rn, mn = os.path.basename(readme_path), os.path.basename(man_path)
    p = []

    helps = help_options(spotrun)
    rows = readme_options(readme)
    mans = man_options(man)
    if not helps or not rows or not mans:
        p.append("cannot find the options in `spotrun run --help` (%d), %s's \"Options of "
                 "`run`\" table (%d) or %s's OPTIONS OF RUN (%d)" %
                 (len(helps), rn, len(rows), mn, len(mans)))
    add_row = "add a row for it (the option table in runtime/cmd/cmd_run.c is the source)"
    compare("option --", "spotrun run --help", set(helps), rn, set(rows), p, add_row)
    compare("option --", "spotrun run --help", set(helps), mn, mans, p,
            "add it to OPTIONS OF RUN")
    compare("option --", rn, set(rows), "spotrun run --help", set(helps), p,
            "remove it, or add it to the option table")
    compare("option --", mn, mans, "spotrun run --help", set(helps), p,
            "remove it, or add it to the option table")
    for opt, twins in sorted(helps.items()):
        for t in sorted(twins):
            if opt in rows and t not in rows[opt]:
                p.append("option --%s: its environment twin %s is not in its %s row: write it "
                         "in the env column" % (opt, t, rn))

    cmds = help_commands(spotrun)
    rc, mc = readme_commands(readme), man_commands(man)
    if not cmds:
        p.append("cannot find the commands in `spotrun --help`")
    compare("command", "spotrun --help", cmds, rn + "'s command table", rc, p, "add a row")
    compare("command", "spotrun --help", cmds, mn + "'s SYNOPSIS", mc, p, "add a line")
    compare("command", rn + "'s command table", rc, "spotrun --help", cmds, p, "remove it")
    compare("command", mn + "'s SYNOPSIS", mc, "spotrun --help", cmds, p, "remove it")

    r, m = readme_codes(readme), man_codes(man)
    if not r or not m:
        p.append("cannot find the exit codes in %s (%d) or %s (%d)" % (rn, len(r), mn, len(m)))
    compare("exit code", rn, r, mn + "'s EXIT STATUS OF RUN", m, p, "add an item for it")
    compare("exit code", mn + "'s EXIT STATUS OF RUN", m, rn, r, p, "add a row for it")

    for line in p:
        print("reference: " + line.replace("option -- ", "option --"))
    return 1 if p else 0


if __name__ == "__main__":
    sys.exit(main())
