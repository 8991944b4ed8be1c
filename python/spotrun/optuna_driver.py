"""python3 -m spotrun.optuna_driver: Optuna's samplers drive a spotrun sweep.

    spotrun sweep init hp --random 0 --param lr=loguniform:1e-5,1e-2 \\
        --param layers=int:2,8 -- python3 train.py --lr {lr} --layers {layers}
    python3 -m spotrun.optuna_driver hp --sampler tpe --metric loss --trials 40
    spotrun sweep work hp --driver 'python3 -m spotrun.optuna_driver hp --trials 40'

The driver holds no state of its own. Each time it runs it rebuilds an
in-memory Optuna study from the store (`spotrun sweep show NAME --json`):
the search space is the sweep's (the random specs given to `sweep init
--random 0`, part 0's "spec"), each trial's parameters are the ones its
definition part records, and its state and value come from its end mark and
its last reported metric:

    done                  -> COMPLETE, value = the metric's last value (its
                             best step's with `sweep init --best best-step`,
                             "best_rule"; FAIL when the trial reported none)
    pruned                -> PRUNED (the last value as an intermediate value)
    failed, cancelled     -> FAIL
    queued, running, preempted, stopped, anything else -> RUNNING: a
                             preempted or stopped trial resumes, it never fails

Then it asks the sampler for new trials and appends each to the sweep
with `spotrun sweep init NAME --add --at N --param ...`: trial numbers are
create-only, and --at makes the append happen only while the sweep still has
N trials, so two drivers at once neither lose, duplicate nor overshoot: the
one that loses the race (exit 75) reads the store again and asks again.
It adds up to --trials in all, and keeps at most --ahead trials open (not
ended) at once, so the sampler sees results before it proposes more.

Exit: 0 (with --loop: once every one of --trials has ended), 64 for a bad
option or a sweep that is not a search space, 66 for a missing sweep, 69
when optuna is not installed, spotrun's code when a spotrun command fails.
"""
import argparse
import importlib
import json
import math
import os
import subprocess
import sys
import time
import warnings

FAIL_STATES = ("failed", "cancelled")


class DriverError(Exception):
    """A message for stderr and an exit code."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def spotrun_cmd(a, *args):
    cmd = [a.spotrun]
    if a.store:
        cmd += ["--store", a.store]
    return cmd + list(args)


def run_spotrun(a, *args, ok=(0,)):
    """Runs a spotrun command; its (exit code, stdout). Other codes than ok
    raise with spotrun's own message."""
    cmd = spotrun_cmd(a, *args)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise DriverError("cannot run %s: %s (put spotrun on PATH or give --spotrun)"
                          % (cmd[0], e.strerror), 69)
    if p.returncode not in ok:
        raise DriverError("%s failed (exit %d): %s" % (" ".join(cmd[:4]), p.returncode,
                                                       p.stderr.strip()), p.returncode)
    return p.returncode, p.stdout


def read_sweep(a):
    """The sweep as `sweep show NAME --json` gives it."""
    _, out = run_spotrun(a, "sweep", "show", a.name, "--json")
    return json.loads(out)


def split_spec(spec):
    name, _, rest = spec.partition("=")
    for kind in ("uniform", "loguniform", "int", "choice"):
        if rest.startswith(kind + ":"):
            return name, kind, rest[len(kind) + 1:]
    if ".." in rest:
        return name, "range", rest
    return name, "list", rest


def distribution(optuna, spec):
    """(name, an Optuna distribution) for one --param spec of the sweep."""
    from optuna import distributions as d
    name, kind, rest = split_spec(spec)
    if kind in ("uniform", "loguniform"):
        lo, hi = (float(x) for x in rest.split(","))
        return name, d.FloatDistribution(lo, hi, log=kind == "loguniform")
    if kind == "int":
        lo, hi = (int(x) for x in rest.split(","))
        return name, d.IntDistribution(lo, hi)
    if kind == "range":
        lo, hi = (int(x) for x in rest.split(".."))
        return name, d.IntDistribution(lo, hi)
    return name, d.CategoricalDistribution(rest.split(","))


def search_space(optuna, doc):
    spec = doc.get("spec") or {}
    specs = spec.get("param") or []
    if not specs:
        raise DriverError("sweep %s records no parameter specs (made by an older spotrun?): "
                          "define it with `spotrun sweep init %s --random 0 --param ...`"
                          % (doc["sweep"], doc["sweep"]), 64)
    return dict(distribution(optuna, s) for s in specs), int(spec.get("seed") or 0)


def param_value(dist, text):
    """The stored string as the distribution's value; ValueError when it is
    not one of it."""
    from optuna import distributions as d
    if isinstance(dist, d.CategoricalDistribution):
        v = text
    elif isinstance(dist, d.IntDistribution):
        v = int(text)
    else:
        v = float(text)
    if not dist._contains(dist.to_internal_repr(v)):
        raise ValueError("%s is outside %s" % (text, dist))
    return v


def value_text(dist, v):
    """How a sampled value is written into the sweep (a parameter value)."""
    from optuna import distributions as d
    if isinstance(dist, d.CategoricalDistribution):
        return str(v)
    if isinstance(dist, d.IntDistribution):
        return str(int(v))
    text = "%.10g" % v
    if float(text) < dist.low or float(text) > dist.high:  # rounding left the range
        text = repr(float(v))
    return text


def trial_record(optuna, t, metric, best_step=False):
    """(state, value, intermediate) of one trial of `sweep show --json`;
    best_step: a done trial's value is its best step's (the sweep's
    "best_rule"), as `sweep show` ranks it."""
    TS = optuna.trial.TrialState
    m = (t.get("metrics") or {}).get(metric)
    last = m.get("last") if m else None
    final = m.get("best" if best_step else "last") if m else None
    step = m.get("last_step") if m else None
    state = t.get("state")
    end = t.get("end") or {}
    if end.get("cause") in ("pruned", "cancelled"):  # an end mark a view may not name yet
        state = end["cause"]
    if state == "done":
        if final is None or not math.isfinite(final):
            return TS.FAIL, None, {}
        return TS.COMPLETE, final, {}
    if state == "pruned":
        inter = {int(step or 0): last} if last is not None and math.isfinite(last) else {}
        return TS.PRUNED, None, inter
    if state in FAIL_STATES:
        return TS.FAIL, None, {}
    return TS.RUNNING, None, {}


def rebuild(optuna, a, doc):
    """The study, rebuilt from the store's records; (study, space, seed,
    number of trials, open trials, skipped trials)."""
    space, seed = search_space(optuna, doc)
    study = optuna.create_study(direction="minimize" if a.direction == "min" else "maximize",
                                sampler=make_sampler(optuna, a, seed + len(doc["trials"])))
    open_, skipped = 0, []
    for t in sorted(doc["trials"], key=lambda t: t["trial"]):
        state, value, inter = trial_record(optuna, t, a.metric,
                                           doc.get("best_rule") == "best-step")
        open_ += state == optuna.trial.TrialState.RUNNING
        try:
            params = {k: param_value(space[k], t["params"][k]) for k in space}
        except (KeyError, ValueError) as e:  # not of the search space (added by hand)
            skipped.append((t["trial"], str(e)))
            continue
        study.add_trial(optuna.trial.create_trial(
            state=state, value=value, params=params, distributions=space,
            intermediate_values=inter, user_attrs={"spotrun_trial": t["trial"],
                                                   "spotrun_state": t.get("state")}))
    return study, space, len(doc["trials"]), open_, skipped


def make_sampler(optuna, a, seed):
    s = optuna.samplers
    if a.sampler == "tpe":  # the liar: open trials count, so parallel asks spread out
        return s.TPESampler(seed=seed, n_startup_trials=a.startup, constant_liar=True)
    if a.sampler == "cmaes":
        return s.CmaEsSampler(seed=seed, n_startup_trials=a.startup)
    if a.sampler == "random":
        return s.RandomSampler(seed=seed)
    module, _, cls = a.sampler.partition(":")
    try:
        factory = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as e:
        raise DriverError("--sampler %s: %s (tpe, cmaes, random or MODULE:CLASS)"
                          % (a.sampler, e), 64)
    try:
        return factory(seed=seed)
    except TypeError:  # a sampler without a seed
        return factory()


def study_json(study):
    """The rebuilt study as records: what --dry-run prints."""
    out = []
    for t in study.get_trials(deepcopy=False):
        out.append({"trial": t.user_attrs["spotrun_trial"], "number": t.number,
                    "state": t.state.name, "value": t.value,
                    "params": {k: v for k, v in sorted(t.params.items())}})
    return out


def ask_and_add(optuna, a, study, space, have):
    """Asks for one trial and appends it as trial `have`: True when added,
    False when another writer came first."""
    trial = study.ask(space)
    args = ["sweep", "init", a.name, "--add", "--at", str(have)]
    for k, dist in space.items():
        args += ["--param", "%s=%s" % (k, value_text(dist, trial.params[k]))]
    code, _ = run_spotrun(a, *args, ok=(0, 75))
    if code == 75:
        return False
    shown = " ".join(args[i + 1] for i in range(6, len(args), 2))
    print("sweep %s: trial %d: %s (%s)" % (a.name, have, shown, a.sampler), flush=True)
    return True


def one_round(optuna, a):
    """Reads the store, tells Optuna every result, adds what is due. Returns
    (trials in all, open trials, the rebuilt study)."""
    for _ in range(20):
        doc = read_sweep(a)
        study, space, have, open_, skipped = rebuild(optuna, a, doc)
        for k, why in skipped:
            print("sweep %s: trial %d is not in the search space (%s): not told to the sampler"
                  % (a.name, k, why), file=sys.stderr)
        if a.dry_run:
            return have, open_, study
        lost = False
        while have < a.trials and open_ < a.ahead:
            if not ask_and_add(optuna, a, study, space, have):
                lost = True  # another driver added trial `have`: read again
                break
            have, open_ = have + 1, open_ + 1
        if not lost:
            return have, open_, study
    raise DriverError("sweep %s: other writers kept adding trials; try again" % a.name, 75)


def summary(a, study, have):
    TS = sys.modules["optuna"].trial.TrialState
    trials = study.get_trials(deepcopy=False)
    n = {s: sum(t.state == s for t in trials) for s in TS}
    line = ("sweep %s: %d of %d trials: %d complete, %d pruned, %d failed, %d open"
            % (a.name, have, a.trials, n[TS.COMPLETE], n[TS.PRUNED], n[TS.FAIL], n[TS.RUNNING]))
    if n[TS.COMPLETE]:
        b = study.best_trial
        line += "; best trial %d: %s %.6g (%s)" % (
            b.user_attrs["spotrun_trial"], a.metric, b.value,
            " ".join("%s=%s" % kv for kv in sorted(b.params.items())))
    print(line, flush=True)


def parse(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m spotrun.optuna_driver",
        description="Keep an Optuna study in step with a spotrun sweep through the store: "
        "tell it each trial's result, ask its sampler for new trials, add them to the sweep.")
    p.add_argument("name", nargs="?", default=os.environ.get("SPOTRUN_SWEEP"),
                   help="the sweep (default $SPOTRUN_SWEEP, set by `sweep work --driver`)")
    p.add_argument("--trials", type=int, required=True, help="trials in all, at most")
    p.add_argument("--metric", default="loss", help="the metric trials report (default loss)")
    p.add_argument("--direction", choices=("min", "max"), default="min")
    p.add_argument("--sampler", default="tpe", help="tpe (default), cmaes, random or "
                   "MODULE:CLASS (any Optuna sampler; given seed= when it takes one)")
    p.add_argument("--startup", type=int, default=10,
                   help="tpe, cmaes: random trials before the model (default 10)")
    p.add_argument("--ahead", type=int, default=4,
                   help="at most this many trials open (not ended) at once (default 4)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=SPEC",
                   help="define the sweep first (`sweep init --random 0`, with the command "
                   "after --): a no-op when the same one is there, an error when another is")
    p.add_argument("--loop", action="store_true",
                   help="keep going until every trial has ended, reading the store every --poll")
    p.add_argument("--poll", type=float, default=10, help="seconds between rounds (--loop)")
    p.add_argument("--dry-run", action="store_true",
                   help="add nothing: print the rebuilt study as JSON (one record per trial)")
    p.add_argument("--store", default=None, help="the store (default $SPOTRUN_STORE)")
    p.add_argument("--spotrun", default=os.environ.get("SPOTRUN_BIN") or "spotrun",
                   help="the spotrun binary (default $SPOTRUN_BIN, else spotrun on PATH)")
    p.epilog = "-- COMMAND: the trials' command, with --param, to define the sweep"
    command = []
    if "--" in argv:
        command, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    a = p.parse_args(argv)
    a.command = command
    if not a.name:
        p.error("which sweep? give NAME (or set SPOTRUN_SWEEP)")
    if a.trials < 1 or a.ahead < 1 or a.startup < 0 or a.poll <= 0:
        p.error("--trials and --ahead must be at least 1, --startup at least 0, --poll > 0")
    return a


def define(a):
    """`sweep init NAME --random 0` from --param, when given (create-only:
    the same definition again is a no-op, another one an error)."""
    if not a.param:
        return
    args = ["sweep", "init", a.name, "--random", "0"]
    for spec in a.param:
        args += ["--param", spec]
    run_spotrun(a, *(args + (["--"] + a.command if a.command else [])))


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    try:
        import optuna
    except ImportError:
        print("spotrun.optuna_driver: optuna is not installed (Debian: apt install "
              "python3-optuna; else pip install optuna)", file=sys.stderr)
        return 69
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    try:
        define(a)
        while True:
            have, open_, study = one_round(optuna, a)
            if a.dry_run:
                print(json.dumps(study_json(study), indent=1))
                return 0
            summary(a, study, have)
            if not a.loop or (have >= a.trials and open_ == 0):
                return 0
            time.sleep(a.poll)
    except DriverError as e:
        print("spotrun.optuna_driver: %s" % e, file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
