#!/usr/bin/env bash
# The CLI reference's tables (docs/cli.md: the options of `run`, the
# commands, the exit codes of `run`) and the man page (docs/spotrun.1.scd)
# say what `spotrun --help` and `spotrun run --help` say:
# tests/docs/reference.py fails, naming the option, command or code and
# where it is missing, when they drift apart (the option table in
# runtime/cmd/cmd_run.c is the source of --help; docs/cli.md's exit codes
# follow sr_end_table, test_outcome.c).
. "$(dirname "$0")/lib.sh"

check() { "$PY" "$SRCDIR/tests/docs/reference.py" "$SPOTRUN" "$@"; }
cp "$SRCDIR/docs/cli.md" cli.md && cp "$SRCDIR/docs/spotrun.1.scd" man.scd

test_expect_success 'docs/cli.md and the man page agree with --help' '
    check cli.md man.scd >out 2>&1 || { cat out; exit 1; }
    test ! -s out
'

test_expect_success 'an option of --help missing from the docs/cli.md table fails, naming it' '
    grep -v "^| \`--fresh\` |" cli.md >r.md &&
    expect_code 1 check r.md man.scd >out 2>&1 &&
    cat out &&
    grep -x "reference: option --fresh is in spotrun run --help but not in r.md: add a row for it (the option table in runtime/cmd/cmd_run.c is the source)" out &&
    test "$(wc -l <out)" = 1
'

test_expect_success 'an option the man page has and --help does not fails' '
    printf "# OPTIONS OF RUN\n\n*--frobnicate* _N_\n\tNo such thing.\n\n" >m.scd &&
    sed "/^# OPTIONS OF RUN/d" man.scd >>m.scd &&
    expect_code 1 check cli.md m.scd >out 2>&1 &&
    grep -x "reference: option --frobnicate is in m.scd but not in spotrun run --help: remove it, or add it to the option table" out
'

test_expect_success 'a docs/cli.md row without the option'"'"'s environment twin fails' '
    sed "s/^| \`-k, --keep N\` | \`SPOTRUN_KEEP\` |/| \`-k, --keep N\` | |/" cli.md >r.md &&
    ! cmp -s r.md cli.md &&
    expect_code 1 check r.md man.scd >out 2>&1 &&
    grep -x "reference: option --keep: its environment twin SPOTRUN_KEEP is not in its r.md row: write it in the env column" out
'

test_expect_success 'a command missing from the docs/cli.md command table fails' '
    grep -v "^| \`sweep " cli.md >r.md &&
    expect_code 1 check r.md man.scd >out 2>&1 &&
    grep -x "reference: command sweep is in spotrun --help but not in r.md.s command table: add a row" out
'

test_expect_success 'an exit code of docs/cli.md missing from the man page fails' '
    sed "/^\*78\*$/d" man.scd >m.scd &&
    expect_code 1 check cli.md m.scd >out 2>&1 &&
    grep -x "reference: exit code 78 is in cli.md but not in m.scd.s EXIT STATUS OF RUN: add an item for it" out
'

test_done
