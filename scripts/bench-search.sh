#!/usr/bin/env bash
# bench-search.sh - how much paid instance time each search strategy needs
# to find a good trial, through real sweeps (docs/sweeps.md).
#
# The objective has a known optimum: a trial with parameters lr (log scale)
# and dropout has the floor
#     f = 1 + 0.5 (log10 lr - log10 3e-3)^2 + 1.4 (dropout - 0.13)^2
# (optimum 1.0), and its job reports a noisy learning curve
#     loss(step) = f + 1/sqrt(step) + noise,  noise uniform in +-0.02,
# step 1..27, with `spotrun metric --step`; the noise is seeded by (seed,
# trial, step). Each strategy runs as a sweep on the local file store under
# one `sweep work --slots K` worker until a trial has ENDED done with
# f <= 1.01 (within 1 % of the optimum); its cost is the trial-steps
# reported by every trial up to that moment (= paid instance time: the
# steps of trials still running then count too, as far as they got).
#
#   grid        a 7 x 6 grid (lr 1e-4..1e-1 by half decades, dropout 0..0.5)
#   random      sweep init --random 300 --seed S
#   random+es   the same with --early-stop loss:min,grace=1,eta=3,max=27
#               (rungs 1, 3, 9, 27; a rung's first trials go on only while
#               they are the best so far there)
#   random+esp  the same with ,patient (every first trial goes on: the rule
#               before the first-trials rule, for comparison)
#   tpe         Optuna's TPE (python3 -m spotrun.optuna_driver, run by the
#               worker: sweep work --driver), 8 random startup trials
#   tpe+es      TPE with the same early stopping
#   tpe+esp     TPE with ,patient
#   optuna      the reference, no spotrun: in-process Optuna (one Python
#               process, optuna.create_study, TPESampler(seed=S,
#               n_startup_trials=8), SuccessiveHalvingPruner(min_resource=1,
#               reduction_factor=3): the same rungs; a trial at step 27 is
#               complete, as at spotrun's max), trials one after another,
#               the same objective and noise (the same awk program); its
#               trial-steps are the steps reported up to the end of the
#               first complete trial with f <= 1.01
#
# The schedule objective (rows sched:*): a trainer whose loss x obeys
#     x(0) = 1,  x(step) = (1 - lr)^2 x(step - 1) + lr^2
# (SGD on a quadratic with gradient noise: a large lr falls fast to a high
# floor lr/(2 - lr), a small one slowly to a low one), step 1..300, lr
# drawn log-uniform in [1e-3, 1]; the goal is a report of loss <= 0.01,
# and the cost the trial-steps reported by every trial up to it. The best
# fixed lr (~0.017, and only 0.009..0.02 within 1.5x of its steps) needs
# 191 steps and looks worse than larger ones at every rung before step
# 190 (early stopping's short-horizon bias); a decaying lr needs fewer
# steps: the optimum is a schedule. The trial commits every 2 steps.
#   sched:tpe     TPE (8 startup trials), every trial to the end
#   sched:tpe+es  TPE (8 startup trials) with --early-stop
#                 loss:min,grace=1,eta=3,max=300, as tpe+es above
#   sched:pbt     --random SLOTS trials (the population) with --pbt
#                 loss:min,interval=2,quantile=0.5 --perturb lr=0.5,0.8,1.2
# The goal: PBT >= 1.5x fewer trial-steps than TPE + early stopping.
#
# The table ends with each strategy's mean against random and against
# in-process Optuna, and the ratio of spotrun's best strategy (the lowest
# mean of the sweep rows) to in-process Optuna's (the goal: <= 0.7x).
#
# The +es rows need `sweep init --early-stop` (asynchronous successive
# halving; +esp its ,patient); a spotrun without it prints them as "n/a".
# The tpe and optuna rows need python3-optuna (scripts/deps.sh).
#
# Environment:
#   BUILD       build directory holding runtime/spotrun (default: build)
#   SPOTRUN     the spotrun binary (default: $BUILD/runtime/spotrun)
#   SEEDS       seeds to run (default: "1 2 3 4 5")
#   SLOTS       trials at once (default: 4)
#   STRATEGIES  rows to run (default: "grid random random+es random+esp tpe
#               tpe+es tpe+esp optuna sched:tpe sched:tpe+es sched:pbt")
#   LIMIT       seconds per sweep before it counts as not reached (default: 240)
#   BENCH_DIR   scratch directory (default: a temp dir, removed at the end)
set -euo pipefail

BUILD=${BUILD:-build}
SEEDS=${SEEDS:-"1 2 3 4 5"}
SLOTS=${SLOTS:-4}
STRATEGIES=${STRATEGIES:-"grid random random+es random+esp tpe tpe+es tpe+esp optuna sched:tpe sched:tpe+es sched:pbt"}
LIMIT=${LIMIT:-240}
SPOTRUN=$(cd "$(dirname "${SPOTRUN:-$BUILD/runtime/spotrun}")" 2>/dev/null && pwd)/spotrun
PY=${PY:-/usr/bin/python3}
SRC=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "bench-search: $*" >&2; exit 1; }
[ -x "$SPOTRUN" ] || die "no spotrun binary at $SPOTRUN (build first, or set BUILD)"
BENCH_DIR=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$BENCH_DIR"
workers=()
cleanup() {
    for p in "${workers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$BENCH_DIR"
}
trap cleanup EXIT
cd "$BENCH_DIR"
export SPOTRUN_STORE=$BENCH_DIR/store SPOTRUN_BIN=$SPOTRUN PYTHONPATH=$SRC/python
export MAX_STEPS=27 SCHED_STEPS=300 SCHED_TARGET=0.01

has_es=0 has_patient=0
"$SPOTRUN" sweep init --help >help.txt 2>&1 || true
grep -- --early-stop help.txt >/dev/null && has_es=1
grep -- patient help.txt >/dev/null && has_patient=1
has_pbt=0
grep -- --pbt help.txt >/dev/null && has_pbt=1
has_optuna=0
"$PY" -c 'import optuna' 2>/dev/null && has_optuna=1

# The trial: a noisy learning curve; it commits when asked (a stop at a
# rung, a notice) and resumes from the step it committed.
cat >trial.sh <<\EOF
#!/bin/bash
ask=
trap 'ask=1' USR1
d=$SPOTRUN_CKPT_DIR step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt "$MAX_STEPS" ]; do
    step=$((step + 1))
    loss=$(awk -v lr="$SPOTRUN_PARAM_LR" -v p="$SPOTRUN_PARAM_DROPOUT" -v s="$step" \
        -v seed=$((BENCH_SEED * 1000003 + SPOTRUN_TRIAL * 1009 + step)) 'BEGIN {
        srand(seed); u = log(lr) / log(10) - log(3e-3) / log(10)
        printf "%.6f", 1 + 0.5 * u * u + 1.4 * (p - 0.13) ^ 2 + 1 / sqrt(s) + 0.02 * (2 * rand() - 1) }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss"
    if [ -n "$ask" ]; then
        echo "$step" >"$d/step" && "$SPOTRUN_BIN" commit --step "$step"
        ask=
    fi
done
EOF
chmod +x trial.sh

# The schedule objective's trial (see the top): commits every 2 steps and
# when asked; resumes from the state it committed (its own or, under PBT,
# the donor's), with the lr it is given now.
cat >sched.sh <<\EOF
#!/bin/bash
ask=
trap 'ask=1' USR1
d=$SPOTRUN_CKPT_DIR step=0 x=1
[ -f "$d/state" ] && read -r step x <"$d/state"
while [ "$step" -lt "$SCHED_STEPS" ]; do
    step=$((step + 1))
    x=$(awk -v x="$x" -v lr="$SPOTRUN_PARAM_LR" 'BEGIN { printf "%.9g", (1 - lr) ^ 2 * x + lr * lr }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$x"
    if [ -n "$ask" ] || [ $((step % 2)) = 0 ]; then
        echo "$step $x" >"$d/state" && "$SPOTRUN_BIN" commit --step "$step"
        ask=
    fi
done
EOF
chmod +x sched.sh

# losses.py: losses(RUN_DIR), the (unix_ms, value) of each loss the run
# reported, from its event logs; both measures below import it.
cat >losses.py <<\EOF
import glob, json, os
def losses(run):
    for ev_file in glob.glob(os.path.join(run, "events", "*.jsonl")):
        for line in open(ev_file):
            try:
                ev = json.loads(line)
            except ValueError:  # a line being written
                continue
            if ev.get("event") == "metric" and ev.get("name") == "loss":
                yield ev["unix_ms"], ev["value"]
EOF

# sched_measure.py STORE NAME: reached (0/1), trial-steps up to the first
# report of loss <= SCHED_TARGET (all of them when none), trials started.
cat >sched_measure.py <<\EOF
import glob, os, sys
from losses import losses
store, name, target = sys.argv[1], sys.argv[2], float(os.environ["SCHED_TARGET"])
steps, when, started = [], None, 0
for run in glob.glob(os.path.join(store, name + "-[0-9]*")):
    started += 1
    for ms, value in losses(run):
        steps.append(ms)
        if value <= target and (when is None or ms < when):
            when = ms
used = sum(1 for ms in steps if when is None or ms <= when)
print(int(when is not None), used, started)
EOF

# measure.py STORE NAME: reached (0/1), trial-steps up to the first done
# trial with f <= 1.01 (all of them when none), trials started.
cat >measure.py <<\EOF
import glob, json, math, os, sys
from losses import losses
store, name = sys.argv[1], sys.argv[2]
def f(t):
    u = math.log10(float(t["lr"])) - math.log10(3e-3)
    return 1 + 0.5 * u * u + 1.4 * (float(t["dropout"]) - 0.13) ** 2
trials = []
for part in sorted(glob.glob(os.path.join(store, "sweeps", name, "def", "[0-9]*.json"))):
    trials += json.load(open(part))["trials"]
steps, when = [], None  # (unix_ms) of every metric; when: the first good trial's end
for k, t in enumerate(trials):
    last = [ms for ms, _ in losses(os.path.join(store, "%s-%d" % (name, k)))]
    steps += last
    done = os.path.exists(os.path.join(store, "sweeps", name, "end", "%d.done" % k))
    if done and last and f(t) <= 1.01 and (when is None or max(last) < when):
        when = max(last)
started = sum(os.path.isdir(os.path.join(store, "%s-%d" % (name, k))) for k in range(len(trials)))
used = sum(1 for ms in steps if when is None or ms <= when)
print(int(when is not None), used, started)
EOF

# optuna_ref.py SEED: in-process Optuna on the same objective (trial.sh's
# awk program, so the same noise): reached (0/1), trial-steps, trials.
cat >optuna_ref.py <<\EOF
import math, os, subprocess, sys
import optuna
seed, max_steps = int(sys.argv[1]), int(os.environ["MAX_STEPS"])
optuna.logging.set_verbosity(optuna.logging.WARNING)
AWK = """BEGIN {
    srand(seed); u = log(lr) / log(10) - log(3e-3) / log(10)
    printf "%.6f", 1 + 0.5 * u * u + 1.4 * (p - 0.13) ^ 2 + 1 / sqrt(s) + 0.02 * (2 * rand() - 1) }"""
def curve(lr, p, trial):  # the trial's values, as trial.sh's awk computes them
    out = []
    for s in range(1, max_steps + 1):
        v = subprocess.run(["awk", "-v", "lr=%r" % lr, "-v", "p=%r" % p, "-v", "s=%d" % s,
                            "-v", "seed=%d" % (seed * 1000003 + trial * 1009 + s), AWK],
                           capture_output=True, text=True, check=True).stdout
        out.append(float(v))
    return out
def f(lr, p):
    u = math.log10(lr) - math.log10(3e-3)
    return 1 + 0.5 * u * u + 1.4 * (p - 0.13) ** 2
steps, reached = 0, False
def objective(trial):
    global steps, reached
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    p = trial.suggest_float("dropout", 0, 0.5)
    values = curve(lr, p, trial.number)
    for s, v in enumerate(values, 1):
        steps += 1
        trial.report(v, s)
        if s < max_steps and trial.should_prune():  # a trial at max is complete
            raise optuna.TrialPruned()
    if f(lr, p) <= 1.01:
        reached = True
        trial.study.stop()
    return values[-1]
study = optuna.create_study(
    direction="minimize",
    sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=8),
    pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3))
study.optimize(objective, n_trials=300)
print(int(reached), steps, len(study.trials))
EOF

define() { # NAME STRATEGY SEED
    local es=()
    case $2 in
    *+es) es=(--early-stop "loss:min,grace=1,eta=3,max=$MAX_STEPS") ;;
    *+esp) es=(--early-stop "loss:min,grace=1,eta=3,max=$MAX_STEPS,patient") ;;
    esac
    local space=(--param lr=loguniform:1e-4,1e-1 --param dropout=uniform:0,0.5)
    case $2 in
    sched:tpe+es) "$SPOTRUN" sweep init "$1" --random 0 --seed "$3" --param lr=loguniform:1e-3,1 \
        --early-stop "loss:min,grace=1,eta=3,max=$SCHED_STEPS" -- ./sched.sh ;;
    sched:tpe) "$SPOTRUN" sweep init "$1" --random 0 --seed "$3" --param lr=loguniform:1e-3,1 \
        -- ./sched.sh ;;
    sched:pbt) "$SPOTRUN" sweep init "$1" --random "$SLOTS" --seed "$3" --param lr=loguniform:1e-3,1 \
        --pbt loss:min,interval=2,quantile=0.5 --perturb lr=0.5,0.8,1.2 -- ./sched.sh ;;
    grid) "$SPOTRUN" sweep init "$1" --param lr=1e-4,3.162e-4,1e-3,3.162e-3,1e-2,3.162e-2,1e-1 \
        --param dropout=0,0.1,0.2,0.3,0.4,0.5 -- ./trial.sh ;;
    random*) "$SPOTRUN" sweep init "$1" --random 300 --seed "$3" "${space[@]}" "${es[@]}" -- ./trial.sh ;;
    tpe*) "$SPOTRUN" sweep init "$1" --random 0 --seed "$3" "${space[@]}" "${es[@]}" -- ./trial.sh ;;
    esac >/dev/null
}

# run NAME STRATEGY SEED: the sweep until the goal or LIMIT; prints the
# measurement.
run() {
    local driver=() measure=measure.py
    case $2 in sched:*) measure=sched_measure.py ;; esac
    case $2 in
    tpe* | sched:tpe*) driver=(--driver "$PY -m spotrun.optuna_driver --trials 300 --ahead $SLOTS --startup 8 >/dev/null") ;;
    esac
    BENCH_SEED=$3 SPOTRUN_WORK_DIR=$BENCH_DIR/work-$1 "$SPOTRUN" sweep work "$1" --slots "$SLOTS" \
        --poll 200ms "${driver[@]}" -- --notice none --grace 10s >"log-$1" 2>&1 &
    local pid=$! t0=$SECONDS
    workers+=("$pid")
    while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - t0)) -lt "$LIMIT" ]; do
        [ "$("$PY" "$measure" "$SPOTRUN_STORE" "$1" | cut -d" " -f1)" = 1 ] && break
        sleep 0.3
    done
    local code=0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    else # it stopped by itself before the goal: say why
        wait "$pid" || code=$?
    fi
    local m
    m=$("$PY" "$measure" "$SPOTRUN_STORE" "$1")
    if [ "${m%% *}" != 1 ]; then
        echo "bench-search: $1 did not reach the goal (worker exit $code); its log ends:" >&2
        tail -n 5 "log-$1" >&2
    fi
    echo "$m"
}

results=$BENCH_DIR/results
: >"$results"
printf '%-10s %5s %8s %12s %s\n' strategy seed trials trial-steps reached
for s in $STRATEGIES; do
    for seed in $SEEDS; do
        why=
        case $s in *+es*) [ "$has_es" = 1 ] || why="n/a (this spotrun has no sweep init --early-stop)" ;; esac
        case $s in *+esp) [ "$has_patient" = 1 ] || why="n/a (this spotrun has no --early-stop ...,patient)" ;; esac
        case $s in sched:pbt) [ "$has_pbt" = 1 ] || why="n/a (this spotrun has no sweep init --pbt)" ;; esac
        case $s in tpe* | optuna | sched:tpe*) [ "$has_optuna" = 1 ] || why="n/a (python3-optuna is not installed)" ;; esac
        if [ -n "$why" ]; then
            printf '%-10s %5s %s\n' "$s" "$seed" "$why"
            continue
        fi
        if [ "$s" = optuna ]; then
            read -r reached used started < <("$PY" optuna_ref.py "$seed")
        else
            name=b-$(echo "$s" | tr ':+' '--')-$seed
            define "$name" "$s" "$seed"
            read -r reached used started < <(run "$name" "$s" "$seed")
        fi
        verdict=yes
        if [ "$reached" != 1 ]; then # which cap it hit: the trials or the time
            verdict="no (in ${LIMIT}s)"
            [ "${started:-0}" -lt 300 ] 2>/dev/null || verdict="no (all 300 trials)"
        fi
        printf '%-10s %5s %8s %12s %s\n' "$s" "$seed" "$started" "$used" "$verdict"
        echo "$s $seed $reached $used" >>"$results"
    done
done

echo
"$PY" - "$results" <<\EOF
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    s, seed, reached, used = line.split()
    rows.setdefault(s, []).append((int(reached), int(used)))
mean = {s: statistics.mean(u for _, u in r) for s, r in rows.items()}
base, ref = mean.get("random"), mean.get("optuna")
sched = lambda s: s.startswith("sched:")  # another objective: not against random or optuna
print("%-10s %6s %16s %15s %15s" % ("strategy", "seeds", "mean trial-steps", "random / this",
                                     "this / optuna"))
for s, r in rows.items():
    missed = sum(1 for ok, _ in r if not ok)
    print("%-10s %6d %16.0f %15s %15s%s" % (
        s, len(r), mean[s], "%.2fx" % (base / mean[s]) if base and mean[s] and not sched(s) else "-",
        "%.2fx" % (mean[s] / ref) if ref and not sched(s) else "-",
        "  (%d not reached: a lower bound)" % missed if missed else ""))
ours = {s: m for s, m in mean.items() if s != "optuna" and not sched(s)}
if ref and ours:
    best = min(ours, key=ours.get)
    print("\nspotrun's best strategy: %s, %.0f trial-steps = %.2fx in-process Optuna's %.0f "
          "(goal <= 0.7x: %s)" % (best, ours[best], ours[best] / ref, ref,
                                  "met" if ours[best] <= 0.7 * ref else "not met"))
pbt, tpe = mean.get("sched:pbt"), mean.get("sched:tpe+es")
if pbt and tpe:
    missed = any(not ok for ok, _ in rows["sched:tpe+es"])
    print("\nschedule objective: PBT %.0f trial-steps, TPE + early stopping %.0f%s: %.2fx fewer "
          "(goal >= 1.5x: %s)" % (pbt, tpe, " (a lower bound)" if missed else "", tpe / pbt,
                                 "met" if tpe >= 1.5 * pbt else "not met"))
alone = mean.get("sched:tpe")
if pbt and alone:
    print("schedule objective: PBT %.0f trial-steps, TPE alone %.0f: %.2fx fewer" % (
        pbt, alone, alone / pbt))
EOF
