#!/usr/bin/env bash
# kill -9 of the wrapper (or of push / gc) at random points during commit,
# persist and gc: afterwards the store always yields a complete, verified
# checkpoint no older than the newest one that was durable before the kill.
# Seeded and reproducible: SPOTRUN_FAULT_SEED=N reruns one sequence.
. "$(dirname "$0")/lib.sh"

seed=${SPOTRUN_FAULT_SEED:-$(date +%s)}
points=${SPOTRUN_FAULT_POINTS:-50}
say "# seed $seed, $points kill points (SPOTRUN_FAULT_SEED=$seed to replay)"
RANDOM=$seed

# A job that commits forever: step N's checkpoint is "step" = N and an
# 2 MiB incompressible "data" file whose content follows from N, so any
# restored checkpoint can be checked for completeness.
cat >gen.py <<'GEN'
import random, sys
sys.stdout.buffer.write(random.Random(int(sys.argv[1])).randbytes(2 << 20))
GEN
cat >job.sh <<JOB
#!/bin/sh
i=\${SPOTRUN_STEP:-0}
while :; do
    i=\$((i + 1))
    $PY $TRASH/gen.py \$i >"\$SPOTRUN_CKPT_DIR/data"
    echo "\$i" >"\$SPOTRUN_CKPT_DIR/step"
    "\$SPOTRUN_BIN" commit --step "\$i" || exit 1
done
JOB
chmod +x job.sh
gen() { "$PY" gen.py "$1"; }

# check_store: every complete checkpoint restores and is internally
# consistent; prints the newest step.
check_store() {
    rm -rf out
    "$SPOTRUN" pull -q k out || return 1
    local step
    step=$(cat out/step) || return 1
    gen "$step" | cmp - out/data || return 1
    echo "$step"
}

newest_durable() { "$SPOTRUN" show k 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {s=$2} END {print s+0}'; }

test_expect_success 'prime: a first checkpoint is durable (then the kills start)' '
    "$SPOTRUN" run --run-id k --keep 2 --no-preload -- ./job.sh 2>prime.log &
    pid=$!
    wait_for prime.log "durable" 120
    kill -9 $pid
    wait $pid 2>/dev/null || :
    for _ in $(seq 50); do pgrep -f "$TRASH/job.sh" >/dev/null || break; sleep 0.05; done
    check_store >/dev/null
'

test_expect_success "kill -9 of the wrapper at $points random points loses nothing" '
    before=$(newest_durable)
    for n in $(seq "$points"); do
        "$SPOTRUN" run -q --run-id k --keep 2 --no-preload -- ./job.sh 2>>run.log &
        pid=$!
        sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
        kill -9 $pid
        wait $pid 2>/dev/null || :
        # The job dies with its wrapper (PR_SET_PDEATHSIG); wait until it has.
        for _ in $(seq 50); do pgrep -f "$TRASH/job.sh" >/dev/null || break; sleep 0.05; done
        after=$(newest_durable)
        if [ "$after" -gt 0 ]; then
            got=$(check_store) || { say "point $n: newest checkpoint does not restore"; exit 1; }
            [ "$got" -eq "$after" ] || { say "point $n: restored step $got, newest listed $after"; exit 1; }
        fi
        [ "$after" -ge "$before" ] || { say "point $n: lost checkpoint (step $before -> $after)"; exit 1; }
        before=$after
    done
    say "newest durable step after $points kills: $before"
'

cat >finish.sh <<JOB
#!/bin/sh
# one more step, committed at exit (the job never calls commit)
i=\$((\${SPOTRUN_STEP:-0} + 1))
$PY $TRASH/gen.py \$i >"\$SPOTRUN_CKPT_DIR/data"
echo "\$i" >"\$SPOTRUN_CKPT_DIR/step"
JOB
chmod +x finish.sh

test_expect_success 'a clean run afterwards leaves no debris: no temp dirs, no dead seqs' '
    "$SPOTRUN" run -q --run-id k --keep 2 --no-preload -- ./finish.sh &&
    test -z "$(ls -d work/k/ckpt.spotrun-tmp.* 2>/dev/null)" &&
    test -z "$(ls -A work/k/spool)" &&
    test "$(ls -A store/k/ckpt | wc -l)" -eq 2 &&
    check_store >/dev/null
'

test_expect_success 'kill -9 of push and gc leaves the previous checkpoints intact' '
    mkdir -p src
    for n in $(seq 20); do
        step=$((1000 + n))
        gen $step >src/data
        echo $step >src/step
        "$SPOTRUN" push -q k src --step $step &
        pid=$!
        sleep "0.0$((RANDOM % 10))"
        kill -9 $pid 2>/dev/null || :
        wait $pid 2>/dev/null || :
        "$SPOTRUN" gc -q k --keep 3 &
        pid=$!
        sleep "0.00$((RANDOM % 10))"
        kill -9 $pid 2>/dev/null || :
        wait $pid 2>/dev/null || :
        check_store >/dev/null || { say "iteration $n: store does not restore"; exit 1; }
    done
    # every complete checkpoint left restores and checks out
    for seq in $("$SPOTRUN" show k | awk "\$1 ~ /^[0-9]+\$/ {print \$1}"); do
        rm -rf one
        "$SPOTRUN" pull -q --seq "$seq" k one
        s=$(cat one/step)
        gen "$s" | cmp - one/data
    done
'

test_done
