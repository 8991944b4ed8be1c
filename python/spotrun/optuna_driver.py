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

    done                  -> COMPLETE, values = each --metric's last value
                             (its best step's with `sweep init --best
                             best-step`, "best_rule"; FAIL when the trial
                             reported none of one)
    pruned                -> PRUNED (one metric: the last value as an
                             intermediate value)
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

Several `--metric NAME:min|max` make the study multi-objective (NSGA-II
unless --sampler says otherwise); the summary then names the Pareto front.
`--space MODULE:FUNCTION` is a define-by-run space: FUNCTION(trial) calls
trial.suggest_* for the parameters that apply; one it leaves out is added
absent (`--param NAME=absent:`, the empty value), and a stored trial is
replayed through it (ReplayTrial) to learn its distributions.

Run by a python3 that cannot import optuna, the driver runs itself again
under one that can ($SPOTRUN_PYTHON, else python3 on PATH, /usr/bin/python3,
/usr/local/bin/python3), so `--driver 'python3 -m spotrun.optuna_driver'`
works under pyenv or a venv beside Debian's python3-optuna.

Exit: 0 (with --loop: once every one of --trials has ended), 64 for a bad
option or a sweep that is not a search space, 66 for a missing sweep, 69
when no interpreter tried can import optuna, spotrun's code when a spotrun command fails.
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
SPEC_KINDS = ("uniform", "loguniform", "int", "choice", "absent")


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
    for kind in SPEC_KINDS:
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
    if kind == "int":  # int:LO,HI[,step=S|,log]
        lo, hi, *opt = rest.split(",")
        step = int(opt[0][5:]) if opt and opt[0].startswith("step=") else 1
        return name, d.IntDistribution(int(lo), int(hi), step=step, log=opt == ["log"])
    if kind == "absent":  # a value no trial has: not a distribution
        return name, None
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
    space = dict(distribution(optuna, s) for s in specs)
    return {k: v for k, v in space.items() if v is not None}, int(spec.get("seed") or 0)


def param_value(dist, text):
    """The stored string as the distribution's value; ValueError when it is
    not one of it."""
    from optuna import distributions as d
    if isinstance(dist, d.CategoricalDistribution):  # the choice written so (str(choice))
        v = next((c for c in dist.choices if str(c) == text), text)
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


def trial_record(optuna, t, metrics, best_step=False):
    """(state, values, intermediate) of one trial of `sweep show --json`:
    values has one entry per metric (the objectives, in order); best_step:
    a done trial's values are its best steps' (the sweep's "best_rule"), as
    `sweep show` ranks it."""
    TS = optuna.trial.TrialState
    last, final, step = [], [], None
    for name in metrics:
        m = (t.get("metrics") or {}).get(name)
        v = m.get("last") if m else None
        f = m.get("best" if best_step else "last") if m else None
        last.append(v if v is not None and math.isfinite(v) else None)
        final.append(f if f is not None and math.isfinite(f) else None)
        if step is None and m:
            step = m.get("last_step")
    state = t.get("state")
    end = t.get("end") or {}
    if end.get("cause") in ("pruned", "cancelled"):  # an end mark a view may not name yet
        state = end["cause"]
    if state == "done":
        if None in final:  # a metric it never reported: no result to tell
            return TS.FAIL, None, {}
        return TS.COMPLETE, final, {}
    if state == "pruned":  # intermediate values are single-objective in Optuna
        inter = {int(step or 0): last[0]} if len(last) == 1 and last[0] is not None else {}
        return TS.PRUNED, None, inter
    if state in FAIL_STATES:
        return TS.FAIL, None, {}
    return TS.RUNNING, None, {}


class NotInTrial(Exception):
    """The space asked for a parameter the trial has no value of."""


class ReplayTrial:
    """What a --space function gets when the driver rebuilds a stored trial:
    each suggest_* returns the trial's stored value (checked against the
    distribution asked for) and records the distribution, so that the study
    learns every trial's own conditional space."""

    def __init__(self, stored):
        self._stored = stored
        self.params, self.distributions = {}, {}

    def _take(self, name, dist):
        text = self._stored.get(name)
        if not text:  # absent (the empty value) or not a parameter of the sweep
            raise NotInTrial("it has no value of %s" % name)
        v = param_value(dist, text)
        self.params[name], self.distributions[name] = v, dist
        return v

    def suggest_float(self, name, low, high, *, step=None, log=False):
        from optuna import distributions as d
        return self._take(name, d.FloatDistribution(low, high, step=step, log=log))

    def suggest_int(self, name, low, high, step=1, log=False):
        from optuna import distributions as d
        return self._take(name, d.IntDistribution(low, high, step=step, log=log))

    def suggest_categorical(self, name, choices):
        from optuna import distributions as d
        return self._take(name, d.CategoricalDistribution(choices))

    def suggest_uniform(self, name, low, high):
        return self.suggest_float(name, low, high)

    def suggest_loguniform(self, name, low, high):
        return self.suggest_float(name, low, high, log=True)


def load_space(a):
    """The --space MODULE:FUNCTION function, None without --space."""
    if not a.space:
        return None
    module, _, func = a.space.partition(":")
    try:
        fn = getattr(importlib.import_module(module), func or "space")
    except (ImportError, AttributeError) as e:
        raise DriverError("--space %s: %s (MODULE:FUNCTION, the module importable: "
                          "on PYTHONPATH or in the current directory)" % (a.space, e), 64)
    if not callable(fn):
        raise DriverError("--space %s: not a function" % a.space, 64)
    return fn


def trial_params(space, space_fn, t):
    """(params, distributions) of a stored trial: from the sweep's specs, or
    replayed through the --space function. KeyError/ValueError/NotInTrial
    when the trial is not of the space."""
    stored = t["params"]
    if space_fn is None:
        return {k: param_value(space[k], stored[k]) for k in space}, space
    replay = ReplayTrial(stored)
    space_fn(replay)
    return replay.params, replay.distributions


def rebuild(optuna, a, doc):
    """The study, rebuilt from the store's records; (study, space, number
    of trials, open trials, skipped trials)."""
    space, seed = search_space(optuna, doc)
    space_fn = load_space(a)
    directions = ["minimize" if d == "min" else "maximize" for _, d in a.objectives]
    study = optuna.create_study(directions=directions,
                                sampler=make_sampler(optuna, a, seed + len(doc["trials"])))
    metrics = [m for m, _ in a.objectives]
    open_, skipped = 0, []
    for t in sorted(doc["trials"], key=lambda t: t["trial"]):
        state, values, inter = trial_record(optuna, t, metrics,
                                            doc.get("best_rule") == "best-step")
        open_ += state == optuna.trial.TrialState.RUNNING
        try:
            params, dists = trial_params(space, space_fn, t)
        except (KeyError, ValueError, NotInTrial) as e:  # not of the space (added by hand)
            skipped.append((t["trial"], str(e)))
            continue
        study.add_trial(optuna.trial.create_trial(
            state=state, values=values, params=params, distributions=dists,
            intermediate_values=inter, user_attrs={"spotrun_trial": t["trial"],
                                                   "spotrun_state": t.get("state")}))
    return study, (space, space_fn, doc.get("params") or list(space)), len(doc["trials"]), \
        open_, skipped


def make_sampler(optuna, a, seed):
    s = optuna.samplers
    if a.sampler == "tpe":  # the liar: open trials count, so parallel asks spread out
        return s.TPESampler(seed=seed, n_startup_trials=a.startup, constant_liar=True)
    if a.sampler == "nsga2":  # several objectives: their Pareto front
        return s.NSGAIISampler(seed=seed)
    if a.sampler == "cmaes":
        if len(a.objectives) > 1:
            raise DriverError("--sampler cmaes optimizes one metric; for %d use nsga2 (the "
                              "default), tpe or random" % len(a.objectives), 64)
        return s.CmaEsSampler(seed=seed, n_startup_trials=a.startup)
    if a.sampler == "random":
        return s.RandomSampler(seed=seed)
    module, _, cls = a.sampler.partition(":")
    try:
        factory = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as e:
        raise DriverError("--sampler %s: %s (tpe, nsga2, cmaes, random or MODULE:CLASS)"
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
                    "state": t.state.name, "values": t.values,
                    "value": t.values[0] if t.values and len(t.values) == 1 else None,
                    "params": {k: v for k, v in sorted(t.params.items())}})
    return out


def writable(name, text):
    """text, when `sweep init --add --param NAME=text` stores exactly it: one
    value (a comma would make a list, ".." a range, "KIND:" a spec)."""
    if (not text or "," in text or ".." in text
            or any(text.startswith(k + ":") for k in SPEC_KINDS)):
        raise DriverError("%s=%r cannot be a sweep value (empty, or with a comma, \"..\" or "
                          "a leading \"KIND:\"): choose other choices in the --space "
                          "function" % (name, text), 64)
    return text


def ask_and_add(optuna, a, study, space, have):
    """Asks for one trial and appends it as trial `have`: True when added,
    False when another writer came first. A parameter of the sweep that the
    trial has not (a --space function that did not suggest it) is written
    absent (`NAME=absent:`, the empty value)."""
    dists, space_fn, names = space
    if space_fn is None:
        trial = study.ask(dists)
    else:
        trial = study.ask()
        space_fn(trial)
        dists = trial.distributions
        extra = sorted(set(dists) - set(names))
        if extra:
            raise DriverError("--space %s suggested %s, not a parameter of sweep %s (%s): "
                              "define the sweep with every parameter the space may suggest"
                              % (a.space, ", ".join(extra), a.name, ", ".join(names)), 64)
    args = ["sweep", "init", a.name, "--add", "--at", str(have)]
    for k in names:
        if k in trial.params:
            args += ["--param", "%s=%s" % (k, writable(k, value_text(dists[k], trial.params[k])))]
        else:
            args += ["--param", "%s=absent:" % k]
    code, _ = run_spotrun(a, *args, ok=(0, 75))
    if code == 75:
        return False
    shown = " ".join(args[i + 1] for i in range(6, len(args), 2)
                     if not args[i + 1].endswith("=absent:"))
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

    def params(t):
        return " ".join("%s=%s" % kv for kv in sorted(t.params.items()))
    if n[TS.COMPLETE] and len(a.objectives) == 1:
        b = study.best_trial
        line += "; best trial %d: %s %.6g (%s)" % (
            b.user_attrs["spotrun_trial"], a.objectives[0][0], b.value, params(b))
    elif n[TS.COMPLETE]:  # the non-dominated trials, by trial number
        front = sorted(study.best_trials, key=lambda t: t.user_attrs["spotrun_trial"])
        line += "; pareto front (%s): %s" % (
            ", ".join("%s %s" % o for o in a.objectives),
            "; ".join("trial %d: %s (%s)" % (
                t.user_attrs["spotrun_trial"],
                " ".join("%s %.6g" % (m, v) for (m, _), v in zip(a.objectives, t.values)),
                params(t)) for t in front))
    print(line, flush=True)


def parse(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m spotrun.optuna_driver",
        description="Keep an Optuna study in step with a spotrun sweep through the store: "
        "tell it each trial's result, ask its sampler for new trials, add them to the sweep.")
    p.add_argument("name", nargs="?", default=os.environ.get("SPOTRUN_SWEEP"),
                   help="the sweep (default $SPOTRUN_SWEEP, set by `sweep work --driver`)")
    p.add_argument("--trials", type=int, required=True, help="trials in all, at most")
    p.add_argument("--metric", action="append", default=[], metavar="NAME[:min|max]",
                   help="a metric the trials report, to minimize or maximize (default "
                   "--direction); repeat for several objectives (default loss)")
    p.add_argument("--direction", choices=("min", "max"), default="min",
                   help="the sense of a --metric given without :min or :max (default min)")
    p.add_argument("--sampler", default=None, help="tpe (the default for one metric), nsga2 "
                   "(the default for several), cmaes, random or MODULE:CLASS (any Optuna "
                   "sampler; given seed= when it takes one)")
    p.add_argument("--space", default=None, metavar="MODULE:FUNCTION",
                   help="a define-by-run space: FUNCTION(trial) calls trial.suggest_* for "
                   "the parameters that apply (conditional ones only when relevant); "
                   "every name it suggests must be a parameter of the sweep")
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
    a.objectives = []
    for m in a.metric or ["loss"]:
        name, colon, sense = m.rpartition(":") if ":" in m else (m, "", a.direction)
        if not name or sense not in ("min", "max"):
            p.error("--metric %s: NAME, NAME:min or NAME:max" % m)
        if name in (o[0] for o in a.objectives):
            p.error("--metric %s given twice" % name)
        a.objectives.append((name, sense))
    if a.sampler is None:
        a.sampler = "nsga2" if len(a.objectives) > 1 else "tpe"
    return a


def define(a):
    """`sweep init NAME --random 0` from --param, when given (create-only:
    the same definition again is a no-op, another one an error)."""
    if not a.param:
        return
    args = ["sweep", "init", a.name, "--random", "0"]
    for spec in a.param:
        args += ["--param", spec]
    if takes_objectives(a):  # the sweep's views then rank and front by them too
        for o in a.objectives:
            args += ["--objective", "%s:%s" % o]
    run_spotrun(a, *(args + (["--"] + a.command if a.command else [])))


def takes_objectives(a):
    """Whether this spotrun's `sweep init` records objectives (--objective:
    spotrun after issue 41); an older one defines the sweep without."""
    try:
        p = subprocess.run(spotrun_cmd(a, "sweep", "init", "--help"), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    except OSError:
        return False
    return "--objective" in p.stdout


REEXEC = "SPOTRUN_OPTUNA_DRIVER_REEXEC"


def interpreters():
    """The interpreters that may have optuna when this one has not:
    $SPOTRUN_PYTHON alone when set, else every python3 on PATH, then
    /usr/bin/python3 and /usr/local/bin/python3 (Debian's python3-optuna is
    in the system one, often not first on PATH under pyenv or a venv)."""
    if os.environ.get("SPOTRUN_PYTHON"):
        return [os.environ["SPOTRUN_PYTHON"]]
    out = []
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin", "/usr/local/bin"]:
        c = os.path.join(d or ".", "python3")
        if c not in out and os.path.isfile(c) and os.access(c, os.X_OK):
            out.append(c)
    return out


def reexec_with_optuna(argv):
    """This interpreter cannot import optuna: runs the driver under the
    first of interpreters() that can (the same spotrun package first on its
    PYTHONPATH); returns (only when none can) the message to print."""
    me = sys.executable or "python3"
    tried = [] if os.environ.get(REEXEC) else interpreters()
    for c in tried:
        try:
            ok = subprocess.run([c, "-c", "import optuna"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                timeout=120).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            env = dict(os.environ)
            env[REEXEC] = c
            here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            env["PYTHONPATH"] = os.pathsep.join(
                [here] + [x for x in [env.get("PYTHONPATH")] if x])
            sys.stdout.flush()
            sys.stderr.flush()
            os.execve(c, [c, "-m", "spotrun.optuna_driver"] + list(argv), env)
    if os.environ.get(REEXEC):
        return "optuna is not importable by %s either" % os.environ[REEXEC]
    others = [c for c in tried if c != me]
    return ("optuna is not importable by %s (the python3 that ran this driver)%s: install "
            "it there (Debian: apt install python3-optuna; else pip install optuna), or "
            "set SPOTRUN_PYTHON to a python3 that has it"
            % (me, ", nor by %s" % ", ".join(others) if others else ""))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse(argv)
    try:
        import optuna
    except ImportError:
        print("spotrun.optuna_driver: %s" % reexec_with_optuna(argv), file=sys.stderr)
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
