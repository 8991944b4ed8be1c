#!/usr/bin/env bash
# bench-save.sh - how long a checkpoint stops training with spotrun.torch.
#
#   scripts/bench-save.sh [BUILD_DIR]     (default: build; GIB="1" sizes,
#                                          SAVES=3 per mode; GIB="1 4" where
#                                          memory allows: 2 x the state + cache)
#
# A "model" whose state is GIB GiB of float32 noise (like trained weights:
# it barely compresses) trains at a steady rate on CPU (each step: a fixed
# matmul load plus an update of one slice of the big tensor) under
# `spotrun run` on the local file store. Measured in the same run, per size:
#
#   sync    State(background=False): the pause of a save is torch.save
#           into the checkpoint dir plus the commit (staged: packed and
#           compressed on local disk), as before
#   bg      State(background=True): the pause is the copy into host memory
#           (state.save_stats["pause_s"]); the write and the commit run in
#           a thread while training goes on
#   floor   copying the same state dict into preallocated CPU tensors, by
#           hand, with nothing else: no save can pause for less
#   slow    the steps' mean time while a background write is in flight,
#           against the steps' mean time with none (same run)
#   n2d     notice-to-durable of the background path: `spotrun notify` to
#           the wrapper's "checkpoint N durable" (the job polls, copies,
#           writes, commits; the wrapper stages and stores), twice: when
#           the notice's checkpoint is the run's first ("n2d 1st": the
#           wrapper copies the files into its snapshot, not having seen
#           them replaced by rename yet), and after one earlier checkpoint,
#           as in a job that has run a while ("n2d": hard links)
#
# Goals (issue 42): pause <= 1.3 x floor and >= 5 x shorter than sync at 1
# GiB; steps slowed <= 10 % while the write runs (2 cores: the write, the
# wrapper's compression and training share them); notice-to-durable <= 5 s.
# Needs /usr/bin/python3 with torch (scripts/deps.sh). DEVICE=cuda puts the
# model on the GPU (scripts/gpu-check.sh does where torch sees one): the
# copies go to pinned host memory, and the floor is the same copy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
sizes=${GIB:-1}
saves=${SAVES:-3}
py=/usr/bin/python3
spotrun=$build/runtime/spotrun
[ -x "$spotrun" ] || { echo "bench-save: build first ($spotrun missing)" >&2; exit 1; }
"$py" -c 'import torch' 2>/dev/null || { echo "bench-save: $py cannot import torch" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-save.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cd "$work"
export SPOTRUN_STORE=$work/store SPOTRUN_WORK_DIR=$work/work SPOTRUN_NO_PRELOAD=1
export PYTHONPATH=$root/python PYTHONDONTWRITEBYTECODE=1 BENCH_DEVICE=${DEVICE:-cpu}

cat >trainer.py <<'PY'
import os, statistics, sys, time
import torch
import spotrun
import spotrun.torch as st

mode, gib, saves = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
dev = torch.device(os.environ.get("BENCH_DEVICE", "cpu"))
torch.set_num_threads(1)
torch.manual_seed(0)


class Big(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        chunks = max(1, int(gib * 4))  # 256 MiB tensors, as a model's layers
        per = n // chunks
        self.w = torch.nn.ParameterList(torch.nn.Parameter(torch.randn(per), requires_grad=False)
                                        for _ in range(chunks))
        self.mlp = torch.nn.Linear(512, 512)


model = Big(int(gib * (1 << 30)) // 4).to(dev)
x = torch.randn(64, 512, device=dev)
state = st.State(model=model, background=(mode != "sync"))
step_i = [0]


def step():
    """A steady step: a fixed matmul load, then one slice of the state updated."""
    y = x
    for _ in range(12):
        y = torch.tanh(model.mlp(y))
    i = step_i[0] % len(model.w)
    with torch.no_grad():
        model.w[i][: 1 << 16].add_(y.mean())
    if dev.type == "cuda":
        torch.cuda.synchronize()  # a step's time is its GPU time
    step_i[0] += 1


def run(n, times):
    for _ in range(n):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)


if mode == "floor":
    sd = model.state_dict()
    pin = dev.type == "cuda"
    bufs = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=pin) for k, v in sd.items()}

    def copy():
        for k, v in model.state_dict().items():
            bufs[k].copy_(v, non_blocking=pin)
        if pin:
            torch.cuda.synchronize()
    copy()  # the buffers' pages in place, as a second save finds them
    got = []
    for _ in range(saves):
        run(20, [])
        t = time.perf_counter()
        copy()
        got.append(time.perf_counter() - t)
    print("floor %.4f" % statistics.median(got), flush=True)
    sys.exit(0)
if mode == "notice":
    for _ in range(saves - 1):  # checkpoints before the notice: a job in its steady state
        run(5, [])
        state.save()
        spotrun.wait_durable(state.wait())  # long done when a notice comes
    print("ready", flush=True)
    while True:  # until the notice's SIGTERM
        step()
        state.step_done()
quiet, busy, pauses = [], [], []
for k in range(saves):
    run(30, quiet)
    t = time.perf_counter()
    state.save()
    pauses.append(time.perf_counter() - t)
    while state._in_flight():
        t = time.perf_counter()
        step()
        busy.append(time.perf_counter() - t)
    state.wait()
    if k == 0:
        print("stats %r" % state.save_stats, file=sys.stderr)
print("pause %.4f" % statistics.median(pauses))
print("quiet %.5f" % statistics.mean(quiet))
print("busy %.5f %d" % (statistics.mean(busy) if busy else 0.0, len(busy)), flush=True)
PY

# field FILE KEY: the value after KEY in FILE's line "KEY value ..."
field() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }

now_ms() { date +%s%3N; }

printf "# bench-save: %s, %s cores, %s, %s saves per mode, load %s\n" "$(date -u +%Y-%m-%d)" "$(nproc)" \
    "$(uname -m)" "$saves" "$(cut -d" " -f1-3 /proc/loadavg)"
# n2d GIB SAVES NAME: notice-to-durable in ms of a trainer that made
# SAVES - 1 checkpoints before it steps until the notice's request
n2d() {
    local run="n2d-$1-$3" pid t0 t1
    "$spotrun" run --run-id "$run" -- "$py" trainer.py notice "$1" "$2" >"$run.out" \
        2>"$run.err" &
    pid=$!
    for _ in $(seq 600); do grep -q ready "$run.out" 2>/dev/null && break; sleep 0.1; done
    sleep 1
    t0=$(now_ms)
    "$spotrun" notify --run-id "$run" --deadline 60s >"$run.notify" 2>&1
    for _ in $(seq 6000); do grep -q "checkpoint $2 durable" "$run.err" && break; sleep 0.01; done
    t1=$(now_ms)
    wait $pid || true
    grep -q "checkpoint $2 durable" "$run.err" || { cat "$run.err" >&2; exit 1; }
    # where notice-to-durable went, as the wrapper says it
    sed -n '/notice from/,$p' "$run.err" | grep -E "notice|staged|durable" |
        sed "s/^/# n2d $1 GiB, $3: /" >>n2d-lines.txt
    echo $((t1 - t0))
}

printf '%-5s %-9s %-9s %-9s %-12s %-12s %-12s %-10s %-10s\n' GiB "sync s" "bg s" "floor s" \
    "bg/floor" "sync/bg" "slowdown" "n2d 1st s" "n2d s"
for g in $sizes; do
    for m in floor sync bg; do
        "$spotrun" run --run-id "$m-$g" -- "$py" trainer.py $m "$g" "$saves" >"$m-$g.out" \
            2>"$m-$g.err" || { cat "$m-$g.err" >&2; exit 1; }
    done
    floor=$(field floor-$g.out floor)
    sync=$(field sync-$g.out pause)
    bg=$(field bg-$g.out pause)
    quiet=$(field bg-$g.out quiet)
    busy=$(field bg-$g.out busy)
    n2d_first=$(n2d "$g" 1 first)   # the run's first checkpoint is the notice's
    n2d_steady=$(n2d "$g" 2 steady) # one checkpoint before it, as a long job has
    "$py" - "$g" "$sync" "$bg" "$floor" "$quiet" "$busy" "$n2d_first" "$n2d_steady" <<'PY'
import sys
g, sync, bg, floor, quiet, busy, first, steady = sys.argv[1:]
sync, bg, floor, quiet, busy, first, steady = map(float, (sync, bg, floor, quiet, busy, first,
                                                          steady))
slow = (busy / quiet - 1) * 100 if quiet else 0.0
print("%-5s %-9.3f %-9.3f %-9.3f %-12s %-12s %-12s %-10s %-10s" % (
    g, sync, bg, floor, "%.2fx" % (bg / floor), "%.1fx" % (sync / bg), "%+.0f%%" % slow,
    "%.1f" % (first / 1000), "%.1f" % (steady / 1000)))
PY
done
cat n2d-lines.txt 2>/dev/null || true
echo "# goals: bg/floor <= 1.3x; sync/bg >= 5x (1 GiB); slowdown <= 10%; n2d <= 5 s (1 GiB)"
echo "# n2d 1st: the notice's checkpoint is the run's first (the wrapper copies the files into"
echo "# its snapshot: it has not seen them replaced by rename yet); n2d: one checkpoint before"
echo "# sync: torch.save + commit (staged); bg: the copy (+ any wait); floor: copy_ into"
echo "# preallocated tensors; slowdown: steps during a background write vs steps without"
