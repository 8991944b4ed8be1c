#!/usr/bin/env bash
# bench-delta.sh - what delta checkpoints save (docs/archive-format.md,
# format 2): the second checkpoint of a run, made at a preemption notice,
# uploaded whole (--full-every 1, what every checkpoint cost before) and as
# a delta (the default), on the local S3 test server.
#
#   scripts/bench-delta.sh [BUILD_DIR]     (default: build; SIZE_MB=1000 FILES=50)
#
# 1. a checkpoint directory of FILES files (SIZE_MB in all, incompressible);
#    at the notice the job rewrites one of them (2 % of the bytes);
# 2. a real torch.save of a model with a frozen part (a 200 MB embedding
#    that never trains, a small head trained with Adam); at the notice the
#    job takes one more step and saves again.
# For each: bytes uploaded by the second checkpoint, and notice -> durable
# (from `spotrun notify` to the wrapper's "checkpoint 2 durable" line), full
# vs delta, measured in the same run (goal: <= 5 % of the bytes, >= 10x
# faster); also commit -> durable, spotrun's own part, and the job's own
# reaction to the request (its save: the same in both, and a floor that
# no wrapper can lower: with torch.save of 200 MB it is most of the delta's
# notice -> durable).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/bench-data.sh"
bench_work bench-delta "${1:-}" s3
size_mb=${SIZE_MB:-1000} files=${FILES:-50}
# f07.bin is the file the job rewrites at the notice: it must be one of them.
[ "$files" -ge 8 ] || { echo "bench-delta: FILES must be at least 8 (f07.bin is rewritten)" >&2; exit 64; }
export SPOTRUN_NOTICE=none SPOTRUN_PRELOAD=$build/preload/libspotrun.so SPOTRUN_WORK_DIR=$work/w

. "$root/scripts/lib-bench-s3.sh"
bench_s3_start "$work"

now_ms() { date +%s%3N; }

# The directory job: copies the base in and commits step 1; asked, rewrites
# one file and commits step 2.
cat >dirjob.sh <<'JOB'
#!/bin/bash
want=0
trap 'want=1' USR1
cp "$BASE"/* "$SPOTRUN_CKPT_DIR"/
"$SPOTRUN_BIN" commit --step 1
echo ready
while [ $want = 0 ]; do sleep 0.01; done
cp "$CHANGED" "$SPOTRUN_CKPT_DIR/f07.bin"
"$SPOTRUN_BIN" commit --step 2
sleep 600
JOB
# The torch job: a frozen embedding and a trained head.
cat >torchjob.py <<'JOB'
import os, signal, subprocess, sys, time
import torch
torch.manual_seed(0)
want = []
signal.signal(signal.SIGUSR1, lambda *a: want.append(1))
emb = torch.nn.Embedding(200_000, 256)
emb.weight.requires_grad_(False)
head = torch.nn.Linear(256, 10)
opt = torch.optim.Adam(head.parameters(), lr=1e-3)
def step():
    x = emb(torch.randint(0, 200_000, (64,)))
    loss = torch.nn.functional.cross_entropy(head(x), torch.randint(0, 10, (64,)))
    opt.zero_grad(); loss.backward(); opt.step()
def save(n):
    d = os.environ["SPOTRUN_CKPT_DIR"]
    torch.save({"emb": emb.state_dict(), "head": head.state_dict(), "opt": opt.state_dict()},
               os.path.join(d, "model.pt"))
    subprocess.run([os.environ["SPOTRUN_BIN"], "commit", "--step", str(n)], check=True)
step(); save(1)
print("ready", flush=True)
while not want:
    time.sleep(0.01)
step(); save(2)
time.sleep(600)
JOB
chmod +x dirjob.sh torchjob.py

# measure NAME MODE CMD...: one run to its second checkpoint at a notice;
# prints "uploaded_bytes ms" of checkpoint 2.
measure() {
    local name=$1 mode=$2
    shift 2
    local run=$name-$mode opts=() log=$work/$name-$mode.log
    [ "$mode" = full ] && opts=(--full-every 1)
    "$spotrun" run --run-id "$run" --log-format json "${opts[@]}" -- "$@" >"$log" 2>&1 &
    local pid=$!
    until grep -qs '^ready' "$log" && grep -qs 'checkpoint 1 durable' "$log"; do sleep 0.05; done
    local t0
    t0=$(now_ms)
    "$spotrun" notify -q --run-id "$run" --deadline 10m
    wait "$pid" || true
    python3 - "$log" "$t0" <<'PY'
import datetime, json, re, sys
t0 = int(sys.argv[2])
def ms_of(o):
    t = datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
staged = durable = None
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    o = json.loads(line)
    m = re.match(r"checkpoint 2 \(step 2\) staged: .* in ([0-9.]+)s", o["msg"])
    if m:  # logged when staging ends: the commit came that long before
        staged = ms_of(o) - int(float(m.group(1)) * 1000)
    if o["msg"].startswith("checkpoint 2 durable"):
        durable = ms_of(o)
if staged is None or durable is None:
    sys.exit("no 'checkpoint 2' staged/durable lines in " + sys.argv[1])
print(durable - t0, durable - staged)
PY
    "$spotrun" show "$run" --json | python3 -c '
import json, sys
c = [c for c in json.load(sys.stdin)["checkpoints"] if c["step"] == 2][0]
print(c["uploaded_bytes"], c["raw_bytes"])'
}

report() { # NAME: the table row of both modes
    python3 - "$work/$1" <<'PY'
import sys
p = sys.argv[1]
full = open(p + "-full.out").read().split()
delta = open(p + "-delta.out").read().split()
fms, fcm, fup, raw = int(full[0]), int(full[1]), int(full[2]), int(full[3])
dms, dcm, dup = int(delta[0]), int(delta[1]), int(delta[2])
print("  raw %.0f MB; full: %.1f MB uploaded, notice -> durable %d ms (commit -> durable %d ms)"
      % (raw / 1e6, fup / 1e6, fms, fcm))
print("  delta: %.1f MB uploaded (%.2f %% of full, goal <= 5 %%), notice -> durable %d ms (%.1fx "
      "faster, goal >= 10x; commit -> durable %d ms, %.1fx)"
      % (dup / 1e6, 100.0 * dup / fup, dms, fms / max(dms, 1), dcm, fcm / max(dcm, 1)))
print("  the job's own reaction (notice -> its commit: its save, the same in both): "
      "%d ms full, %d ms delta" % (fms - fcm, dms - dcm))
PY
}

echo "== 1: $files files, $size_mb MB, one file rewritten at the notice (local S3 server)"
mkdir base
per=$((size_mb / files))
for i in $(seq 0 $((files - 1))); do head -c "${per}M" /dev/urandom >"base/$(printf 'f%02d' "$i").bin"; done
head -c "${per}M" /dev/urandom >changed.bin
export BASE=$work/base CHANGED=$work/changed.bin
for mode in full delta; do measure dir "$mode" ./dirjob.sh | tr '\n' ' ' >"dir-$mode.out"; done
report dir

echo "== 1b: restoring that checkpoint 2 (spotrun pull, best of 3): delta vs full vs aws s3 cp"
# The delta reads 49 files' frames from checkpoint 1's object and one from
# its own; the full one reads its own object whole; `aws s3 cp` only
# downloads the full object (no decompression, no extraction).
best_ms() { # CMD...: the fastest of 3 runs, in ms
    local best= t0 ms
    for _ in 1 2 3; do
        rm -rf "$work/restored"
        t0=$(now_ms)
        "$@" >/dev/null
        ms=$(($(now_ms) - t0))
        [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
    done
    echo "$best"
}
rdelta=$(best_ms "$spotrun" pull -q dir-delta "$work/restored" --seq 2)
cmp "$work/restored/f07.bin" changed.bin && cmp "$work/restored/f00.bin" base/f00.bin
rfull=$(best_ms "$spotrun" pull -q dir-full "$work/restored" --seq 2)
aws=/usr/bin/aws # Debian's awscli; another one may come first on PATH
[ -x "$aws" ] || aws=aws
raws=$(best_ms "$aws" --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --quiet \
    s3://bkt/bench/dir-full/ckpt/0000000002/data.tar.zst "$work/restored.obj")
rm -f "$work/restored.obj"
echo "  delta $rdelta ms, full $rfull ms (delta/full $(python3 -c "print(round($rdelta / $rfull, 2))")x);" \
    "aws s3 cp of the full object $raws ms (delta restore / aws $(python3 -c "print(round($rdelta / $raws, 2))")x)"

echo "== 2: torch.save, frozen 200 MB embedding + trained head (local S3 server)"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    for mode in full delta; do
        measure torch "$mode" /usr/bin/python3 torchjob.py | tr '\n' ' ' >"torch-$mode.out"
    done
    report torch
else
    echo "  skipped: torch is not importable by /usr/bin/python3 (apt-get install python3-torch)"
fi
