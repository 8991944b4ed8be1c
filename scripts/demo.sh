#!/usr/bin/env bash
# demo.sh - spotrun end to end on a fresh machine: installs what is missing,
# builds, then trains a real PyTorch model under spotrun, preempts it with a
# notice, resumes it, and checks that the resumed run's final weights are
# bit-identical to an uninterrupted run's. Uses a local store in DEMO_DIR
# (default: a fresh temp dir, kept so you can look at it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh" "$root/build" >/dev/null

spotrun=$root/build/runtime/spotrun
train=$root/examples/pytorch/train.py
py=/usr/bin/python3 # Debian's python3-torch lives here
steps=${DEMO_STEPS:-300}
demo=${DEMO_DIR:-$(mktemp -d /tmp/spotrun-demo.XXXXXX)}
mkdir -p "$demo"
cd "$demo"
export SPOTRUN_STORE=$demo/store SPOTRUN_WORK_DIR=$demo/work
bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

bold "1. reference: train $steps steps without interruption"
"$py" "$train" --steps "$steps" --out ref.sha256 | tail -n 1

bold "2. the same job under spotrun; a preemption notice arrives mid-run"
set +e
"$spotrun" run --run-id demo --keep 3 -- "$py" "$train" --steps "$steps" --pace 0.02 \
    --out resumed.sha256 2>&1 | tee run1.log &
set -e
for _ in $(seq 600); do grep -q "^step 120 " run1.log 2>/dev/null && break; sleep 0.1; done
"$spotrun" notify --run-id demo --deadline 30s
wait %1 || true
code=$(grep -c "exit 75 (requeue me)" run1.log || true)
[ "$code" = 1 ] || { echo "demo: expected the wrapper to exit 75" >&2; exit 1; }
echo "-> spotrun exited 75: preempted, checkpoint durable, requeue me"

bold "3. what the store holds"
"$spotrun" show demo

bold "4. rerun the same command (on any node with the store): it resumes"
"$spotrun" run --run-id demo --keep 3 -- "$py" "$train" --steps "$steps" --pace 0.02 \
    --out resumed.sha256 2>&1 | grep -v "^step" || true

bold "5. result"
ref=$(cat ref.sha256)
got=$(cat resumed.sha256)
echo "uninterrupted run: final weights sha256 $ref"
echo "preempted+resumed: final weights sha256 $got"
if [ "$ref" = "$got" ]; then
    echo "identical: the preemption cost no work and changed nothing"
else
    echo "MISMATCH" >&2
    exit 1
fi
echo "(store and logs in $demo)"
