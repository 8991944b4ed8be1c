#!/usr/bin/env bash
# The price table of --prices is a regular file: a FIFO, a directory or a
# device is refused at once (never waited on), and what an error quotes
# from the file is printable (no terminal escapes echoed).
. "$(dirname "$0")/lib.sh"

mkdir -p "$TRASH/fleet"

test_expect_success 'stats --prices naming a FIFO is refused at once (exit 64), not waited on' '
    mkfifo fifo &&
    expect_code 64 timeout 60 "$SPOTRUN" stats --store "$TRASH/fleet" --prices fifo 2>e1 &&
    cat e1 && grep "price table fifo: it is a FIFO, not a regular file" e1
'

test_expect_success 'a run'"'"'s --prices naming a directory is refused' '
    mkdir pdir &&
    expect_code 64 timeout 60 "$SPOTRUN" run --run-id p --prices pdir --max-cost 1 \
        --instance-type g5.xlarge -- true 2>e2 &&
    cat e2 && grep "it is a directory, not a regular file" e2
'

test_expect_success 'an error about the price table never echoes control bytes' '
    printf "g5.xlarge 0.4\n\033]0;pwned\007evil\033[2J 1.0\n" >bad.txt &&
    expect_code 64 "$SPOTRUN" stats --store "$TRASH/fleet" --prices bad.txt 2>e3 &&
    cat e3 && grep "bad.txt:2: not an instance type" e3 &&
    grep "\"?\]0;pwned?evil?\[2J\"" e3 &&
    ! grep -q "$(printf "\033")" e3 && ! grep -q "$(printf "\007")" e3
'

test_done
