#!/usr/bin/env bash
# The command line: usage errors exit 64 with a message naming what was
# wrong, --help documents every option with its SPOTRUN_* twin, and the
# commands that need a wrapper say so when there is none.
. "$(dirname "$0")/lib.sh"

test_expect_success 'no arguments: exit 64 and the usage on stderr' '
    expect_code 64 "$SPOTRUN" >out 2>err &&
    test ! -s out &&
    grep "^usage: spotrun COMMAND" err &&
    grep "^  run " err && grep "^  commit " err && grep "^  pull " err
'

test_expect_success 'spotrun --help prints the usage on stdout and exits 0' '
    "$SPOTRUN" --help >out &&
    grep "^usage: spotrun COMMAND" out
'

test_expect_success 'unknown command: exit 64 naming it' '
    expect_code 64 "$SPOTRUN" frobnicate 2>err &&
    grep "unknown command \"frobnicate\"" err
'

test_expect_success 'unknown flag: exit 64 naming it' '
    expect_code 64 "$SPOTRUN" run --bogus -- true 2>err &&
    grep -- "--bogus" err
'

test_expect_success 'bad duration --every 10x: exit 64 naming the flag' '
    expect_code 64 "$SPOTRUN" run --every 10x -- true 2>err &&
    grep -- "--every" err && grep "10x" err
'

test_expect_success 'negative --keep -1: exit 64 naming the flag' '
    expect_code 64 "$SPOTRUN" run --keep -1 -- true 2>err &&
    grep -- "--keep" err
'

test_expect_success 'non-numeric --max-restarts abc: exit 64 naming the flag' '
    expect_code 64 "$SPOTRUN" run --max-restarts abc -- true 2>err &&
    grep -- "--max-restarts" err && grep abc err
'

test_expect_success 'a flag without its value: exit 64 naming the flag' '
    expect_code 64 "$SPOTRUN" run --every 2>err &&
    grep -- "--every" err
'

test_expect_success 'bad environment twin SPOTRUN_EVERY=bogus: exit 64 naming the variable' '
    SPOTRUN_EVERY=bogus expect_code 64 "$SPOTRUN" run -- true 2>err &&
    grep "SPOTRUN_EVERY" err && grep bogus err
'

test_expect_success 'usage errors do not run the job' '
    expect_code 64 "$SPOTRUN" run --every 10x -- touch ran 2>/dev/null &&
    test ! -e ran &&
    test ! -e "$SPOTRUN_STORE"
'

test_expect_success 'run --help lists every option with its SPOTRUN_* twin' '
    "$SPOTRUN" run --help >help &&
    grep "^usage: spotrun run" help &&
    for pair in run-id:SPOTRUN_RUN_ID ckpt-dir:SPOTRUN_CKPT_DIR work-dir:SPOTRUN_WORK_DIR \
        every:SPOTRUN_EVERY keep:SPOTRUN_KEEP settle:SPOTRUN_SETTLE grace:SPOTRUN_GRACE \
        max-restarts:SPOTRUN_MAX_RESTARTS backoff:SPOTRUN_BACKOFF signal:SPOTRUN_SIGNAL \
        fresh:SPOTRUN_FRESH no-preload:SPOTRUN_NO_PRELOAD threads:SPOTRUN_THREADS \
        level:SPOTRUN_LEVEL store:SPOTRUN_STORE quiet:SPOTRUN_QUIET verbose:SPOTRUN_VERBOSE
    do
        grep -E -- "--${pair%%:*}( |$).*\[${pair#*:}\]" help ||
            { say "missing: --${pair%%:*} [${pair#*:}]"; exit 1; }
    done &&
    grep -E -- "--help" help
'

test_expect_success 'every option in run --help has an environment twin (except --help)' '
    "$SPOTRUN" run --help >help &&
    grep -E "^ +(-[a-z], )?--" help | grep -v -- "--help" | grep -v "\[SPOTRUN_[A-Z_]*\]$" >missing || true &&
    test ! -s missing
'

test_expect_success 'spotrun run without a command: exit 64' '
    expect_code 64 "$SPOTRUN" run 2>err &&
    grep "no command" err &&
    expect_code 64 "$SPOTRUN" run --keep 2 -- 2>err &&
    grep "no command" err
'

test_expect_success 'spotrun commit outside a job: exit 64 with a clear message' '
    expect_code 64 "$SPOTRUN" commit --step 3 2>err &&
    grep "not running under .spotrun run." err
'

test_expect_success 'spotrun notify with no wrapper running: nonzero with a clear message' '
    got=0 &&
    "$SPOTRUN" notify 2>err || got=$? &&
    test "$got" -ne 0 &&
    grep "no spotrun wrapper is running" err
'

test_expect_success 'spotrun notify --run-id of a run that is not running: nonzero with a message' '
    got=0 &&
    "$SPOTRUN" notify --run-id nosuchrun 2>err || got=$? &&
    test "$got" -ne 0 &&
    grep "notify" err
'

test_expect_success 'spotrun --version prints the version, the commit, the libraries and the shim it uses' '
    "$SPOTRUN" --version >out &&
    cat out &&
    version=$(sed -n "s/^project(spotrun VERSION \([0-9.]*\).*/\1/p" "$SRCDIR/CMakeLists.txt") &&
    head -n1 out | grep -E "^spotrun $version \(commit ([0-9a-f]{12}|unknown)\)$" &&
    if git -C "$SRCDIR" rev-parse HEAD >/dev/null 2>&1; then
        commit=$(sed -n "1s/.*(commit \(.*\))$/\1/p" out) &&
        git -C "$SRCDIR" cat-file -e "$commit^{commit}"
    fi &&
    grep -E "^stores: file, s3, az \(libcurl [0-9]" out &&
    grep -E "^archive: libarchive [0-9.]+, zstd [0-9.]+" out &&
    unset SPOTRUN_PRELOAD &&
    shim=$("$SPOTRUN" version | sed -n "s/^shim: //p") &&
    test -f "$shim" && case "$shim" in /*libspotrun.so) ;; *) false ;; esac &&
    "$SPOTRUN" version | grep "^spotrun $version "
'

test_expect_success 'run names its run id and resolved store in one line before the job starts' '
    "$SPOTRUN" run --store rel-store --run-id named -- sh -c "echo job-says-hi >&2" 2>run.log &&
    grep -n -F "spotrun: run named, store $TRASH/rel-store" run.log | cut -d: -f1 >at.store &&
    grep -n "job-says-hi" run.log | cut -d: -f1 >at.job &&
    test -s at.store && test "$(cat at.store)" -lt "$(cat at.job)" &&
    ! grep -n "durable in" run.log | cut -d: -f1 | awk -v s="$(cat at.store)" "\$1 < s" | grep .
'

test_expect_success 'a mistyped command, sweep subcommand or long flag: 64 with "did you mean"' '
    expect_code 64 "$SPOTRUN" shwo r1 2>err && grep -F "unknown command \"shwo\"; did you mean \"show\"?" err &&
    expect_code 64 "$SPOTRUN" sweep shwo sw 2>err && grep -F "did you mean \"show\"?" err &&
    expect_code 64 "$SPOTRUN" run --evrey 10s -- true 2>err && grep -F "did you mean --every?" err &&
    expect_code 64 "$SPOTRUN" ls --jsno 2>err && grep -F "did you mean --json?" err &&
    expect_code 64 "$SPOTRUN" ls --stroe=x 2>err && grep -F "did you mean --store?" err
'

test_expect_success 'nothing close: no suggestion' '
    expect_code 64 "$SPOTRUN" frobnicate 2>err && ! grep "did you mean" err &&
    expect_code 64 "$SPOTRUN" run --bogus -- true 2>err && ! grep "did you mean" err
'

test_expect_success 'global options before the command: spotrun -v ls, --store X ls, -q show, sweep' '
    "$SPOTRUN" run --store gstore --run-id g1 -- true 2>/dev/null &&
    "$SPOTRUN" --store gstore ls >out && grep "^g1 " out &&
    "$SPOTRUN" --store=gstore -v ls >out 2>err && grep "^g1 " out &&
    "$SPOTRUN" -q --store "$TRASH/gstore" show g1 >out && grep "g1" out &&
    expect_code 66 "$SPOTRUN" --store gstore sweep show nosw 2>err && grep -F "no sweep nosw" err &&
    expect_code 64 "$SPOTRUN" -v 2>err && grep "no command after the options" err &&
    expect_code 64 "$SPOTRUN" --store 2>err && grep "missing value for --store" err &&
    expect_code 64 "$SPOTRUN" --json ls 2>err &&
    grep -F "unknown option \"--json\" before the command (only -v, -q and --store go there" err
'

test_expect_success 'a global --store wins over SPOTRUN_STORE, as the flag after the command does' '
    SPOTRUN_STORE=$TRASH/elsewhere "$SPOTRUN" --store gstore ls >out && grep "^g1 " out &&
    test ! -e "$TRASH/elsewhere"
'

test_expect_success 'notify with nothing running says what it waits for and how long, then 69' '
    expect_code 69 "$SPOTRUN" notify --wait 1s 2>err &&
    grep -F "no spotrun wrapper is running under $SPOTRUN_WORK_DIR yet: waiting up to 1.0s for one to start (--wait)" err &&
    expect_code 69 "$SPOTRUN" notify --run-id nosuchrun --wait 1s 2>err &&
    grep -F "no wrapper is running for run nosuchrun yet: waiting up to 1.0s" err &&
    expect_code 69 "$SPOTRUN" notify --wait 0 2>err && ! grep waiting err
'

test_done
