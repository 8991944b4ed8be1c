"""python3 -m spotrun.optuna_export: a spotrun sweep as a study in Optuna's storage.

    spotrun sweep show hp --json | python3 -m spotrun.optuna_export \\
        --storage sqlite:///hp.db --study hp

`spotrun sweep export NAME --optuna URL` runs this with the interpreter
that has Optuna and the sweep's `sweep show --json` document on stdin
(docs/sweeps.md, "Exporting to Optuna"). Each trial becomes one Optuna
trial, written through Optuna's public API (create_study, create_trial,
add_trial; the storage's own methods to finish a trial it holds as
RUNNING), so every Optuna tool reads the study:

    parameters      the trial's values, with the distributions of the
                    sweep's specs (spotrun.optuna_driver maps them: uniform
                    and loguniform -> FloatDistribution, int and A..B ->
                    IntDistribution, a list or choice -> Categorical; with
                    --space MODULE:FUNCTION, the driver's replay of that
                    define-by-run space); a parameter without a spec gets a
                    categorical of the values; an empty (absent) value is
                    left out
    state           done -> COMPLETE (FAIL when it reported no objective),
                    pruned -> PRUNED, failed and cancelled -> FAIL, anything
                    else (queued, running, preempted, stopped) -> RUNNING
    values          the objective metric's last value (each objective's,
                    with the definition's "objectives")
    intermediate    the objective's learning curve ("curves"): step ->
                    value (the point's rank when values had no step)
    user attrs      spotrun_trial (the trial number: how a re-export finds
                    it), spotrun_state, spotrun_run

Exporting again to the same study adds the trials it lacks and finishes
those it holds as RUNNING that have ended since; a trial Optuna holds as
finished is left as it is (a study never changes a finished trial).

Exit: 0, 64 for a bad option or a document without an objective, 65 for a
study whose directions differ from the sweep's, 69 when optuna is missing,
74 when the storage cannot be opened.
"""
import argparse
import json
import math
import sys

STATES = {"done": "COMPLETE", "pruned": "PRUNED", "failed": "FAIL", "cancelled": "FAIL"}


class ExportError(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def objectives(doc, metric):
    """[(metric, "minimize"|"maximize")]: --metric (NAME:min|max, or NAME
    in the direction sweep show gives it), else the definition's
    objectives, else the metric of its best trial, else the sort metric,
    else the early-stopping rule's."""
    maxed = set(doc.get("maximize") or [])
    if metric:  # NAME, NAME:min or NAME:max
        name, sep, mode = metric.rpartition(":")
        if sep and mode in ("min", "max"):
            return [(name, "maximize" if mode == "max" else "minimize")]
        return [(metric, "maximize" if metric in maxed else "minimize")]
    objs = doc.get("objectives") or []
    if objs:
        return [(o["metric"], "maximize" if o.get("direction") in ("max", "maximize")
                 else "minimize") for o in objs]
    best = doc.get("best") or {}
    name = best.get("metric") or doc.get("sort")
    if not name:
        es = doc.get("early_stop") or {}
        name = es.get("metric")
    if not name:
        raise ExportError("sweep %s names no objective (no trial reported a metric yet): "
                          "give --metric NAME" % doc.get("sweep"), 64)
    if best.get("metric") == name and "maximize" in best:
        return [(name, "maximize" if best["maximize"] else "minimize")]
    return [(name, "maximize" if name in maxed else "minimize")]


def space_of(optuna, doc):
    """{param: distribution}: the driver's mapping of the sweep's specs
    (an "absent:" spec is none), a categorical of the trials' values for a
    parameter without one."""
    from optuna import distributions as d
    from spotrun.optuna_driver import distribution
    space = {}
    for spec in ((doc.get("spec") or {}).get("param") or []):
        try:
            name, dist = distribution(optuna, spec)
        except (ValueError, TypeError):
            continue
        if dist is not None and name not in space:
            space[name] = dist
    for p in doc.get("params") or []:
        if p not in space:
            seen = sorted({t["params"].get(p) for t in doc.get("trials") or []
                           if t.get("params", {}).get(p)})
            if seen:
                space[p] = d.CategoricalDistribution(seen)
    return space


def trial_params(space, space_fn, t):
    """(params, distributions) of one trial: each stored value in its
    parameter's distribution (an empty value, a parameter the trial does
    not have, and a value outside its spec are left out), or, with a
    --space function, its replay (spotrun.optuna_driver's)."""
    from spotrun import optuna_driver as drv
    if space_fn is not None:
        try:
            return drv.trial_params(space, space_fn, t)
        except (KeyError, ValueError, drv.NotInTrial):
            return {}, {}
    params, dists = {}, {}
    for p, text in (t.get("params") or {}).items():
        if not text or p not in space:
            continue
        try:
            params[p] = drv.param_value(space[p], text)
            dists[p] = space[p]
        except ValueError:
            pass
    return params, dists


def intermediate(curve):
    """{step: value} of a curve [[step, value], ...]; a null step is the
    point's rank."""
    out = {}
    for i, (step, value) in enumerate(curve or []):
        if value is None or not math.isfinite(value):
            continue
        out[int(step) if step is not None else i] = float(value)
    return out


def record(t, objs, best_step=False):
    """(state name, values or None, intermediate values) of one trial;
    best_step: a done trial's values are its best steps' (the sweep's
    "best_rule" best-step), as `sweep show` ranks it."""
    state = t.get("state")
    end = t.get("end") or {}
    if end.get("cause") in ("pruned", "cancelled"):
        state = end["cause"]
    st = STATES.get(state, "RUNNING")
    inter = intermediate((t.get("curves") or {}).get(objs[0][0]))
    values = None
    if st == "COMPLETE":
        values = []
        for name, _ in objs:
            m = (t.get("metrics") or {}).get(name) or {}
            final = m.get("best" if best_step else "last")
            if final is None or not math.isfinite(final):
                return "FAIL", None, inter
            values.append(float(final))
    return st, values, inter


def export(optuna, doc, storage_url, study_name, metric=None, space_fn=None):
    """Writes doc's trials into the study; (added, finished, kept)."""
    objs = objectives(doc, metric)
    directions = [d for _, d in objs]
    try:
        if storage_url.startswith("journal:"):
            from optuna.storages import JournalFileStorage, JournalStorage
            storage = JournalStorage(JournalFileStorage(storage_url[len("journal:"):]))
        else:
            storage = optuna.storages.get_storage(storage_url)
        study = optuna.create_study(storage=storage, study_name=study_name,
                                    directions=directions, load_if_exists=True)
    except Exception as e:  # sqlalchemy's, the journal's: one line, not a traceback
        raise ExportError("cannot open the Optuna storage %s: %s (sqlite:///REL.db is relative "
                          "to the current directory, sqlite:////ABS.db absolute)"
                          % (storage_url, str(e).splitlines()[0] if str(e) else
                             type(e).__name__), 74)
    want = [getattr(optuna.study.StudyDirection, d.upper()) for d in directions]
    if list(study.directions) != want:
        raise ExportError("study %s already exists with directions %s, not %s (the sweep's "
                          "objective %s): export to another --study"
                          % (study_name, [d.name.lower() for d in study.directions],
                             directions, ", ".join(n for n, _ in objs)), 65)
    study.set_user_attr("spotrun_sweep", doc.get("sweep"))
    study.set_user_attr("spotrun_objectives", [n for n, _ in objs])
    have = {}
    for ft in study.get_trials(deepcopy=False):
        k = ft.user_attrs.get("spotrun_trial")
        if isinstance(k, int) and k not in have:
            have[k] = ft
    space = space_of(optuna, doc)
    TS = optuna.trial.TrialState
    added = finished = kept = 0
    study_id = storage.get_study_id_from_name(study_name)
    for t in sorted(doc.get("trials") or [], key=lambda t: t["trial"]):
        st, values, inter = record(t, objs, doc.get("best_rule") == "best-step")
        state = getattr(TS, st)
        old = have.get(t["trial"])
        if old is not None and old.state != TS.RUNNING:
            kept += 1  # finished in the study: never changed
            continue
        if old is not None:  # RUNNING there: its new steps, and its end
            tid = storage.get_trial_id_from_study_id_trial_number(study_id, old.number)
            for step, v in inter.items():
                if step not in old.intermediate_values:
                    storage.set_trial_intermediate_value(tid, step, v)
            storage.set_trial_user_attr(tid, "spotrun_state", t.get("state"))
            if state != TS.RUNNING:
                storage.set_trial_state_values(tid, state, values)
                finished += 1
            else:
                kept += 1
            continue
        params, dists = trial_params(space, space_fn, t)
        kw = dict(state=state, params=params, distributions=dists,
                  intermediate_values=inter,
                  user_attrs={"spotrun_trial": t["trial"], "spotrun_state": t.get("state"),
                              "spotrun_run": t.get("run_id")})
        if values is not None:
            kw["values"] = values
        study.add_trial(optuna.trial.create_trial(**kw))
        added += 1
    return added, finished, kept


def main(argv=None):
    p = argparse.ArgumentParser(prog="spotrun.optuna_export",
                                description="Write a spotrun sweep (sweep show --json on "
                                            "stdin) as an Optuna study.")
    p.add_argument("--storage", required=True,
                   help="an RDB URL (sqlite:///study.db) or journal:PATH")
    p.add_argument("--study", required=True, help="the study's name")
    p.add_argument("--metric", help="the objective, NAME[:min|max] (default: the sweep's)")
    p.add_argument("--space", help="MODULE:FUNCTION, the define-by-run space the sweep was "
                                   "driven with (its conditional parameters' distributions)")
    p.add_argument("--input", help="the document (default: stdin)")
    a = p.parse_args(argv)
    try:
        import optuna
    except ImportError:
        print("spotrun sweep export: %s cannot import optuna: install python3-optuna (Debian) "
              "or `pip install optuna`" % sys.executable, file=sys.stderr)
        return 69
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        from spotrun import optuna_driver as drv
        try:
            space_fn = drv.load_space(a)
        except drv.DriverError as e:
            raise ExportError(str(e), e.code)
        doc = json.load(open(a.input) if a.input else sys.stdin)
        added, finished, kept = export(optuna, doc, a.storage, a.study, a.metric, space_fn)
    except ExportError as e:
        print("spotrun sweep export: %s" % e, file=sys.stderr)
        return e.code
    except ValueError as e:
        print("spotrun sweep export: %s" % e, file=sys.stderr)
        return 65
    print("sweep %s -> study %s in %s: %d trial%s added, %d finished, %d already there"
          % (doc.get("sweep"), a.study, a.storage, added, "" if added == 1 else "s", finished,
             kept))
    return 0


if __name__ == "__main__":
    sys.exit(main())
