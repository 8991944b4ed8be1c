#!/usr/bin/env bash
# What a file store holds is not trusted to be what it claims: a FIFO,
# directory, socket or symlink where an object belongs is a bad object (ls,
# show, pull and run never hang; pull and run fall back to the previous good
# checkpoint, never "internal error"); a symlink to a secret is never read,
# so no byte of it is printed; absurd epochs are malformed (never pinning
# restores, never overflowing the next lease); a planted event log cannot
# wrap the attempt counter; show prints sane times and durations whatever
# the event logs claim.
. "$(dirname "$0")/lib.sh"

MK="$SRCDIR/tests/e2e/mkhostile.py"
T="timeout 20" # a hang fails the test instead of the suite

mkdir -p d1 d2
echo one >d1/state
echo two >d2/state
echo "aws_secret_access_key = SECRET1234567890" >secret

# fresh RUN: checkpoints 1 (d1) and 2 (d2) of RUN.
fresh() {
    "$SPOTRUN" push "$1" d1 --step 1 2>/dev/null &&
    "$SPOTRUN" push "$1" d2 --step 2 2>/dev/null
}
ck() { echo "$SPOTRUN_STORE/$1/ckpt/000000000$2"; }

# falls_back RUN: pull restores d1 with a warning naming seq 2; no secret.
falls_back() {
    rm -rf "out-$1" &&
    $T "$SPOTRUN" pull "$1" "out-$1" >out 2>err &&
    cat err &&
    diff -r d1 "out-$1" &&
    grep "warning" err | grep "seq 2" &&
    ! grep -q SECRET out err
}

for kind in fifo dir socket devnull secret; do
    fresh "data-$kind"
done
make_bad() { # make_bad PATH KIND: PATH becomes a KIND instead of a file
    rm -f "$1" &&
    case $2 in
    fifo) mkfifo "$1" ;;
    dir) mkdir "$1" && echo x >"$1/x" ;;
    socket) (cd "$(dirname "$1")" && # relative: a socket path is short
        "$PY" -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$(basename "$1")") ;;
    devnull) ln -s /dev/null "$1" ;;
    secret) ln -s "$TRASH/secret" "$1" ;;
    esac
}

test_expect_success 'a FIFO, directory, socket or symlink as the newest data object: pull falls back' '
    for kind in fifo dir socket devnull secret; do
        make_bad "$(ck data-$kind 2)/data.tar.zst" $kind &&
        falls_back "data-$kind" &&
        grep "not an object\|symlink" err || { say "kind $kind"; exit 1; }
    done
'

test_expect_success 'pull --seq of a FIFO data object: exit 65 at once, not a hang or 70' '
    expect_code 65 $T "$SPOTRUN" pull --seq 2 data-fifo out-seq 2>err &&
    grep "is a FIFO, not an object" err
'

test_expect_success 'spotrun run resumes from the previous good checkpoint past a FIFO data object' '
    cat >job.sh <<-\JOB &&
	#!/bin/sh
	echo "step=$SPOTRUN_STEP $(cat "$SPOTRUN_CKPT_DIR/state")" >"$TRASH/seen"
	JOB
    chmod +x job.sh &&
    TRASH=$TRASH $T "$SPOTRUN" run --run-id data-fifo -- ./job.sh >run.log 2>&1 &&
    test "$(cat seen)" = "step=1 one"
'

test_expect_success 'a FIFO or a symlink to a secret as the newest manifest: ls, show, pull never hang or leak' '
    fresh man-fifo && fresh man-secret &&
    make_bad "$(ck man-fifo 2)/MANIFEST.json" fifo &&
    make_bad "$(ck man-secret 2)/MANIFEST.json" secret &&
    $T "$SPOTRUN" ls >out 2>err &&
    grep "^man-fifo " out && grep "^man-secret " out &&
    ! grep -q SECRET out err &&
    for run in man-fifo man-secret; do
        $T "$SPOTRUN" show $run >out 2>err &&
        grep "^checkpoints: *1$" out &&
        ! grep -q SECRET out err &&
        rm -rf "out-$run" &&
        $T "$SPOTRUN" pull $run "out-$run" 2>err &&
        diff -r d1 "out-$run" &&
        ! grep -q SECRET err || { say "run $run"; cat out err; exit 1; }
    done
'

test_expect_success 'a LEASE that is a symlink to a secret: never quoted' '
    fresh lease-secret &&
    ln -sf "$TRASH/secret" "$SPOTRUN_STORE/lease-secret/LEASE" &&
    $T "$SPOTRUN" show lease-secret >out 2>&1 || true &&
    $T "$SPOTRUN" show --json lease-secret >>out 2>&1 || true &&
    TRASH=$TRASH $T "$SPOTRUN" run --run-id lease-secret -- ./job.sh >>out 2>&1 || true &&
    cat out &&
    ! grep -q SECRET out &&
    test "$(cat secret)" = "aws_secret_access_key = SECRET1234567890"
'

test_expect_success 'a manifest with epoch 2^63-1 is malformed: skipped with a warning, never restored first' '
    fresh ep &&
    "$PY" "$MK" "$SPOTRUN_STORE" ep 3 3 benign epoch=9223372036854775807 &&
    rm -rf out-ep &&
    "$SPOTRUN" pull ep out-ep 2>err &&
    cat err &&
    grep "warning" err | grep "0000000003" | grep "epoch" &&
    diff -r d2 out-ep
'

test_expect_success 'after it, a run takes the lease and its new commit is the one restored' '
    cat >commit.sh <<-\JOB &&
	#!/bin/sh
	echo three >"$SPOTRUN_CKPT_DIR/state"
	"$SPOTRUN_BIN" commit --step 4
	JOB
    chmod +x commit.sh &&
    $T "$SPOTRUN" run --run-id ep -- ./commit.sh >run.log 2>&1 &&
    "$PY" -c "import json,sys; e=json.load(open(sys.argv[1]))[\"epoch\"]; assert 0 < e < 2**53, e" \
        "$SPOTRUN_STORE/ep/LEASE" &&
    rm -rf out-ep &&
    "$SPOTRUN" pull ep out-ep 2>err &&
    test "$(cat out-ep/state)" = three
'

test_expect_success 'a LEASE with epoch 2^63-1 is unreadable: taken over, the next epoch does not overflow' '
    fresh lease-ep &&
    "$PY" -c "
import json, sys
p = sys.argv[1]; l = json.load(open(p)); l[\"epoch\"] = 2**63 - 1
json.dump(l, open(p, \"w\"))" "$SPOTRUN_STORE/lease-ep/LEASE" &&
    $T "$SPOTRUN" run --run-id lease-ep -- ./commit.sh >run.log 2>&1 &&
    cat run.log &&
    grep "lease of run lease-ep is unreadable" run.log &&
    "$PY" -c "import json,sys; e=json.load(open(sys.argv[1]))[\"epoch\"]; assert 0 < e < 2**53, e" \
        "$SPOTRUN_STORE/lease-ep/LEASE" &&
    rm -rf out-le && "$SPOTRUN" pull lease-ep out-le 2>/dev/null &&
    test "$(cat out-le/state)" = three
'

test_expect_success 'a manifest at the epoch limit (2^53): the next lease is refused with a clear error, no overflow' '
    fresh ep-max &&
    rm -f "$SPOTRUN_STORE/ep-max/LEASE" &&
    "$PY" "$MK" "$SPOTRUN_STORE" ep-max 3 3 benign epoch=9007199254740992 &&
    expect_code 65 $T "$SPOTRUN" run --run-id ep-max -- true 2>err &&
    cat err &&
    grep "already 2^53" err
'

test_expect_success 'a planted events/4294967295.jsonl does not wrap the attempt counter' '
    cat >att.sh <<-\JOB &&
	#!/bin/sh
	echo "$SPOTRUN_ATTEMPT" >>"$TRASH/attempts"
	exit 3
	JOB
    chmod +x att.sh &&
    TRASH=$TRASH expect_code 3 "$SPOTRUN" run --run-id ev --max-restarts 0 -- ./att.sh 2>/dev/null &&
    cp "$SPOTRUN_STORE/ev/events/000000.jsonl" attempt0.jsonl &&
    echo "{\"event\":\"start\",\"unix_ms\":1,\"attempt\":0}" \
        >"$SPOTRUN_STORE/ev/events/4294967295.jsonl" &&
    TRASH=$TRASH expect_code 3 "$SPOTRUN" run --run-id ev --max-restarts 0 -- ./att.sh 2>err &&
    cat err &&
    grep "ignoring ev/events/4294967295.jsonl" err &&
    test "$(cat attempts)" = "$(printf "0\n1")" &&
    cmp attempt0.jsonl "$SPOTRUN_STORE/ev/events/000000.jsonl"
'

test_expect_success 'show prints dates and sane durations whatever times the event log claims' '
    fresh times &&
    mkdir -p "$SPOTRUN_STORE/times/events" &&
    cat >"$SPOTRUN_STORE/times/events/000000.jsonl" <<-\EOF &&
	{"event":"start","unix_ms":1700000000000,"attempt":0,"host":"h"}
	{"event":"notice","unix_ms":9223372036854775807,"attempt":0,"ms_left":-9223372036854775808,"source":"x"}
	{"event":"staged","unix_ms":1700000001000,"attempt":0,"seq":1,"seconds":1e308,"raw_bytes":-1,"stored_bytes":9223372036854775807}
	{"event":"persisted","unix_ms":1700000002000,"attempt":0,"seq":1,"seconds":-1e308}
	{"event":"exit","unix_ms":1e300,"attempt":0,"code":-2147483649}
	{"event":"start","unix_ms":0,"attempt":3,"host":"h"}
	{"event":"exit","unix_ms":1700000003000,"attempt":3,"code":1}
	EOF
    "$SPOTRUN" show times >out 2>err &&
    "$SPOTRUN" show --json times >>out 2>>err &&
    "$SPOTRUN" ls >>out 2>>err &&
    cat out err &&
    ! grep -E "[0-9]{16}|e\+|-[0-9]+ms|[0-9]{5,}-[0-9]{2}-[0-9]{2}" out
'

test_expect_success 'metric names with control bytes or quotes in a tampered log are never printed' '
    fresh metnames &&
    mkdir -p "$SPOTRUN_STORE/metnames/events" &&
    cat >"$SPOTRUN_STORE/metnames/events/000000.jsonl" <<-\EOF &&
	{"event":"start","unix_ms":1700000000000,"attempt":0,"host":"h"}
	{"event":"metric","unix_ms":1700000000100,"attempt":0,"name":"\u001b]0;pwned\u0007evil","value":1,"step":1}
	{"event":"metric","unix_ms":1700000000200,"attempt":0,"name":"quo\"te,x\nzzq","value":2,"step":1}
	{"event":"metric","unix_ms":1700000000300,"attempt":0,"name":"val_loss","value":0.5,"step":1}
	{"event":"exit","unix_ms":1700000001000,"attempt":0,"code":1}
	EOF
    "$SPOTRUN" show metnames >out 2>err &&
    "$SPOTRUN" show --json metnames >>out 2>>err &&
    "$SPOTRUN" ls -l >>out 2>>err &&
    "$SPOTRUN" report metnames -o metnames.svg 2>>err &&
    cat out err &&
    grep "val_loss" out &&
    grep "val_loss" metnames.svg &&
    ! grep -a -e "evil" -e "pwned" -e "quo\"" -e "zzq" out err metnames.svg &&
    ! grep -a "$(printf "\033")" out err metnames.svg
'

test_done
