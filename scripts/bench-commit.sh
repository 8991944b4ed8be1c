#!/usr/bin/env bash
# bench-commit.sh - what a commit costs the job, before and after the
# snapshot (docs/runtime.md, "Commit"), in one run on the same data.
#
#   scripts/bench-commit.sh [BUILD_DIR [BASE_SPOTRUN]]
#        (default: build; BASE_SPOTRUN: a spotrun binary of the commit
#        before the snapshot, e.g. built from `git worktree add /tmp/base
#        8f248ac`; without one only "after" is measured)
#
# A job whose checkpoint dir holds FILES files of 1 GiB in all (float32
# noise, like tensors) commits COMMITS times (default 5), each time after
# replacing every file by a rename (as spotrun.saving() does). Per binary it
# prints: the commit latency the job sees (spotrun.commit() returning; the
# first commit after a start copies every file, later ones link them) and
# the time from the commit call to durable (spotrun.wait_durable(), which
# polls STATUS: works against either binary), on the local file store.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
base=${2:-}
commits=${COMMITS:-5}
files=${FILES:-4}
new=$build/runtime/spotrun
[ -x "$new" ] || { echo "bench-commit: build first ($new missing)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-commit.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
export PYTHONPATH=$root/python SPOTRUN_NO_PRELOAD=1

# Two sets of the files (A and B): each commit links one set's files into
# the checkpoint dir under a temporary name and renames them over the last.
python3 - "$files" <<'PY'
import array, os, random, sys
n = int(sys.argv[1])
size = (1 << 30) // n
rnd = random.Random(1)
for s in "AB":
    os.makedirs(s, exist_ok=True)
    for i in range(n):
        a = array.array("f", (rnd.gauss(0, 1) for _ in range(1 << 16)))
        blk = a.tobytes()
        with open("%s/t%d.bin" % (s, i), "wb") as f:
            for k in range(size // len(blk)):
                f.write(blk[:-4] + k.to_bytes(4, "little"))  # no two blocks alike
PY

cat >job.py <<'PY'
import os, sys, time
import spotrun
d, work, n = spotrun.ckpt_dir(), sys.argv[1], int(sys.argv[2])
names = sorted(os.listdir(os.path.join(work, "A")))
for i in range(1, n + 1):
    src = os.path.join(work, "AB"[i % 2])
    for name in names:  # replaced by a rename, as spotrun.saving() does
        os.link(os.path.join(src, name), os.path.join(d, name + ".tmp"))
        os.rename(os.path.join(d, name + ".tmp"), os.path.join(d, name))
    t0 = time.monotonic()
    seq = spotrun.commit(i)
    t1 = time.monotonic()
    spotrun.wait_durable(seq)
    t2 = time.monotonic()
    print("commit %d seq %d: returned %.3fs durable %.3fs" % (i, seq, t1 - t0, t2 - t0),
          flush=True)
PY

measure() { # label spotrun
    local label=$1 bin=$2
    rm -rf store wk
    SPOTRUN_STORE=$work/store SPOTRUN_WORK_DIR=$work/wk "$bin" run --run-id bench \
        --keep 2 -- python3 job.py "$work" "$commits" >"$label.log" 2>&1 ||
        { cat "$label.log"; exit 1; }
    python3 - "$label" "$label.log" <<'PY'
import re, statistics, sys
rows = [tuple(map(float, m.groups())) for m in
        re.finditer(r"returned ([0-9.]+)s durable ([0-9.]+)s", open(sys.argv[2]).read())]
later = rows[1:] or rows
print("%-7s first commit: returned %6.3fs, durable %6.3fs | later (median of %d): "
      "returned %6.3fs, durable %6.3fs" % (sys.argv[1], rows[0][0], rows[0][1], len(later),
      statistics.median(r[0] for r in later), statistics.median(r[1] for r in later)))
PY
}

echo "1 GiB checkpoint dir, $files files, $commits commits, each file replaced by a rename;"
echo "$(nproc) CPUs; local file store; time from the commit call"
[ -z "$base" ] || measure before "$base"
measure after "$new"
