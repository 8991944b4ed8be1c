#!/usr/bin/env bash
# Every ```python block of docs/python.md runs: each in a fresh interpreter,
# after the prelude its `<!-- snippet: prelude=NAME -->` comment names (the
# tiny dataset, model and optimizer a partial snippet takes from context),
# outside spotrun. A block marked `<!-- snippet: not run: REASON -->` is
# skipped and listed; an unmarked block runs as it is. README.md's block is
# the first one of docs/python.md, word for word.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1
DOC=$SRCDIR/docs/python.md

mkdir preludes
# mlp: what the training snippets take from their context.
cat >preludes/mlp.py <<\PY
import torch
from torch import nn
from torch.utils.data import TensorDataset
torch.manual_seed(0)
torch.set_num_threads(1)
_g = torch.Generator().manual_seed(1)
dataset = TensorDataset(torch.randn(96, 8, generator=_g), torch.randint(0, 3, (96,), generator=_g))
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
loss_fn = nn.functional.cross_entropy
steps, epochs, B, SEED = 5, 2, 16, 0

def train_step():
    x, y = dataset[torch.randint(0, 96, (B,))]
    loss = loss_fn(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
PY
# ddp: the torch.distributed snippet, one process without a process group
# (spotrun.distributed then falls back to the plain calls).
cat >preludes/ddp.py <<\PY
import torch
rank, start, steps = 0, 0, 5
def train_step(): pass
def rank_state(): return {"step": 0}
PY

# snippets.py DOC OUTDIR: writes OUTDIR/NN.py for each block (the prelude,
# then the block) and prints "NN run LINE" or "NN skip LINE REASON" (LINE:
# the line of the block's opening fence).
cat >snippets.py <<\PY
import os, re, sys
doc, out = sys.argv[1], sys.argv[2]
lines = open(doc).read().split("\n")
n, i, mark = 0, 0, None
while i < len(lines):
    line = lines[i]
    m = re.fullmatch(r"<!-- snippet: (.*) -->", line.strip())
    if m:
        mark = m.group(1)
    elif line.strip() == "```python":
        start = i + 1
        j = start
        while lines[j].strip() != "```":
            j += 1
        n += 1
        code = "\n".join(lines[start:j]) + "\n"
        name = "%02d" % n
        if mark and mark.startswith("not run: "):
            print("%s skip %d %s" % (name, start, mark[len("not run: "):]))
        else:
            prelude = ""
            if mark:
                p = re.fullmatch(r"prelude=([a-z0-9_-]+)", mark)
                if not p:
                    sys.exit("%s:%d: bad snippet mark %r" % (doc, start - 1, mark))
                prelude = open(os.path.join("preludes", p.group(1) + ".py")).read()
            with open(os.path.join(out, name + ".py"), "w") as f:
                f.write(prelude + "\n# ---- docs/python.md line %d\n" % start + code)
            print("%s run %d" % (name, start))
        i, mark = j, None
    elif line.strip():
        mark = None  # a mark names the block right after it
    i += 1
PY

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'every python block of docs/python.md runs (or says why not)' '
    mkdir out &&
    "$PY" snippets.py "$DOC" out >list.txt &&
    cat list.txt &&
    test "$(grep -c " run " list.txt)" -ge 4 &&
    # the only block not run is the framework callbacks one, and it says so
    test "$(grep -c " skip " list.txt)" -eq 1 &&
    grep " skip .* framework absent" list.txt &&
    for f in out/*.py; do
        (cd out && timeout 120 "$PY" "$(basename "$f")") >"$f.log" 2>&1 ||
            { say "$f failed:"; cat "$f" "$f.log"; exit 1; }
    done
'

test_expect_success 'the README shows the same five lines as docs/python.md' '
    mkdir readme &&
    "$PY" snippets.py "$SRCDIR/README.md" readme >readme.txt &&
    grep -x "01 run [0-9]*" readme.txt &&
    tail -n +$(($(grep -n "^# ---- " out/01.py | cut -d: -f1) + 1)) out/01.py >doc1.py &&
    tail -n +3 readme/01.py >readme1.py &&
    diff doc1.py readme1.py
'

test_expect_success 'the extractor sees a block it was not told about' '
    printf "%s\n" "text" "\`\`\`python" "raise SystemExit(3)" "\`\`\`" >fake.md &&
    mkdir fake && "$PY" snippets.py fake.md fake >fake.txt &&
    grep -x "01 run 2" fake.txt && # the line of its fence
    expect_code 3 "$PY" fake/01.py
'

test_done
