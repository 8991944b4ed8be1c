#!/usr/bin/env bash
# The zero-line path as a new user meets it: a run id derived from
# `sh -c 'exec python3 train.py ...'` names the script, `ls` keeps its
# columns when an id is long, and `--help` names every store scheme.
. "$(dirname "$0")/lib.sh"

printf 'import os\nprint(os.environ["SPOTRUN_RUN_ID"])\n' >train.py

test_expect_success 'sh -c "exec python3 train.py --out_dir=out/ckpt": the run id names train' '
    "$SPOTRUN" run -- sh -c "exec $PY train.py --out_dir=out/ckpt --init_from=scratch" >id 2>run.log &&
    cat id &&
    grep -E "^train-[0-9a-f]{8}$" id
'

test_expect_success 'bash -lc with assignments, env and a launcher: still train' '
    "$SPOTRUN" run -- bash -lc "A=1 env B=2 nohup $PY -u ./train.py --log=logs/exp1; true" >id2 2>run2.log &&
    cat id2 &&
    grep -E "^train-[0-9a-f]{8}$" id2
'

test_expect_success 'ls: a long run id does not push the other columns out of line' '
    long=train-shakespeare-char-with-a-long-name-lr-0.001-warmup-200-$(printf "%040d" 7) &&
    "$SPOTRUN" run -q --run-id "$long" -- true &&
    "$SPOTRUN" run -q --run-id short -- true &&
    "$SPOTRUN" ls >ls.out && cat ls.out &&
    awk "NR == 1 {h = index(\$0, \"STATE\")} NR > 1 {if (index(\$0, \" done \") + 1 != h) bad = 1} END {exit bad}" ls.out
'

test_expect_success '--help names every store scheme: file, s3, az' '
    "$SPOTRUN" --help >help.out &&
    grep "file:///path" help.out && grep "s3://bucket" help.out && grep "az://account" help.out &&
    "$SPOTRUN" run --help >runhelp.out &&
    grep -- "--store URL .*file:///path.*s3://bucket.*az://account" runhelp.out
'

test_done
