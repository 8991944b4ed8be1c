#!/usr/bin/env bash
# One owner per run on Azure Blob: the lease is written with If-None-Match: *
# / If-Match on Put Blob (Azurite honours both). A second wrapper is refused,
# a paused owner loses the run to a new one and cannot win afterwards,
# racing pushes never both write; a block upload onto an existing blob is
# refused by its conditional Put Block List.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/azlib.sh"
az_start

on_a="env SPOTRUN_WORK_DIR=$TRASH/node-a"
on_b="env SPOTRUN_WORK_DIR=$TRASH/node-b"
train="$LOGREG --steps 1500"

test_expect_success 'uninterrupted reference run' '
    $train --out ref.bin >/dev/null
'

test_expect_success 'a second wrapper is refused with 73; Azurite honours the conditions' '
    $on_a "$SPOTRUN" run --run-id s1 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        --out a.bin >a.log 2>&1 &
    a=$!
    wait_for a.log "step 100 "
    expect_code 73 $on_b "$SPOTRUN" run --run-id s1 --lease-wait 1s -- $train --out b.bin \
        >b.log 2>&1
    grep "is owned by $(hostname) pid $a" b.log
    $on_a "$SPOTRUN" notify --run-id s1 --deadline 20s
    expect_code 75 wait $a
    refute grep "ignores conditional writes" a.log b.log
    azreq GET "/ckpt/$test_name/s1/LEASE" | grep "\"released\": *true"
'

test_expect_success 'a paused owner loses the run; its wake-up exits 73 and cannot win' '
    $on_a "$SPOTRUN" run --run-id s2 --lease-ttl 2s -- $train --save-every 100 --pace-ms 5 \
        --out a.bin >a2.log 2>&1 &
    a=$!
    wait_for a2.log "checkpoint 1 durable"
    job=$(pgrep -P $a)
    # Whatever fails below, the paused pair is resumed (and then exits 73):
    # a stopped wrapper would outlive the test, holding its connections.
    trap "kill -CONT -- -$job $a 2>/dev/null || :" EXIT
    kill -STOP $a
    kill -STOP -- -$job
    $on_b "$SPOTRUN" run --run-id s2 --lease-ttl 2s --lease-wait 30s -- $train --pace-ms 2 \
        --out b.bin >b2.log 2>&1 &
    b=$!
    wait_for b2.log "step 1000 "
    $on_b "$SPOTRUN" notify --run-id s2 --deadline 20s
    expect_code 75 wait $b
    kill -CONT -- -$job
    kill -CONT $a
    expect_code 73 wait $a
    grep "lost the lease of run s2" a2.log
    test "$(newest_epoch s2)" = 2
    $on_b "$SPOTRUN" run --run-id s2 -- $train --out b.bin >b3.log 2>&1
    grep "resumed from step" b3.log
    cmp ref.bin b.bin
'

test_expect_success 'racing pushes into one run: each either lands or is refused with 73' '
    mkdir -p src
    echo state >src/state
    head -c 400000 /dev/urandom >src/big
    for i in 1 2 3 4; do
        (rc=0; SPOTRUN_AZ_BLOCK_SIZE=64K "$SPOTRUN" push -q r4 src || rc=$?; echo $rc >push-$i.rc) &
    done
    wait
    cat push-*.rc | sort | uniq -c
    ok=$(grep -lx 0 push-*.rc | wc -l)
    refused=$(grep -lx 73 push-*.rc | wc -l)
    test "$ok" -ge 1 && test $((ok + refused)) -eq 4
    test "$("$SPOTRUN" show --json r4 | "$PY" -c "import json,sys; print(json.load(sys.stdin)[\"checkpoint_count\"])")" = "$ok"
    rm -rf out && "$SPOTRUN" pull -q r4 out && cmp src/state out/state
'

test_expect_success 'Put Block List is conditional too: a wrong If-Match is 412, * on an existing blob 409' '
    blob=/ckpt/$test_name/r4/ckpt/0000000001/data.tar.zst &&
    azreq GET $blob comp=blocklist >bl.xml &&
    id=$(grep -o "<Name>[^<]*</Name>" bl.xml | sed -n 1p | sed "s/<[^>]*>//g") &&
    printf "<?xml version=\"1.0\"?><BlockList><Committed>%s</Committed></BlockList>" "$id" >list.xml &&
    ! AZ_HEADERS="If-Match: \"0x8D000000000000\"" azreq PUT $blob comp=blocklist list.xml >412.out &&
    head -n 1 412.out | grep "^412 .*ConditionNotMet" &&
    ! AZ_HEADERS="If-None-Match: *" azreq PUT $blob comp=blocklist list.xml >409.out &&
    head -n 1 409.out | grep "^409 .*BlobAlreadyExists"
'

test_done
