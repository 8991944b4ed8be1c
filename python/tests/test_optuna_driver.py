"""Unit tests of spotrun.optuna_driver's pure parts: the search space read
from a sweep's specs, how values are written into and read back from the
sweep, and which Optuna state each trial state of `sweep show --json`
becomes. Skipped without optuna (Debian: python3-optuna). The driver
against a real store: tests/e2e/t0930-sweep-optuna.sh.

    /usr/bin/python3 -m unittest discover -s python/tests -t python
"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from spotrun import optuna_driver as drv  # noqa: E402

try:
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
except ImportError:
    optuna = None


@unittest.skipUnless(optuna, "python3-optuna is not installed")
class SearchSpace(unittest.TestCase):
    def test_each_spec_kind_is_a_distribution(self):
        d = optuna.distributions
        want = {
            "lr=loguniform:1e-5,1e-2": d.FloatDistribution(1e-5, 1e-2, log=True),
            "p=uniform:-1,0.5": d.FloatDistribution(-1, 0.5),
            "n=int:2,8": d.IntDistribution(2, 8),
            "seed=0..3": d.IntDistribution(0, 3),
            "opt=choice:adam,sgd": d.CategoricalDistribution(["adam", "sgd"]),
            "act=relu,gelu": d.CategoricalDistribution(["relu", "gelu"]),
            "batch=int:16,256,step=16": d.IntDistribution(16, 256, step=16),
            "width=int:8,1024,log": d.IntDistribution(8, 1024, log=True),
            "momentum=absent:": None,
        }
        for spec, dist in want.items():
            self.assertEqual(drv.distribution(optuna, spec), (spec.split("=")[0], dist))

    def test_values_round_trip_through_the_sweep(self):
        d = optuna.distributions
        lr = d.FloatDistribution(1e-5, 1e-2, log=True)
        self.assertEqual(drv.value_text(lr, 0.000123456789012), "0.000123456789")
        self.assertEqual(drv.param_value(lr, "0.000123456789"), 0.000123456789)
        self.assertEqual(drv.value_text(d.IntDistribution(2, 8), 4), "4")
        self.assertEqual(drv.param_value(d.IntDistribution(2, 8), "4"), 4)
        opt = d.CategoricalDistribution(["adam", "sgd"])
        self.assertEqual(drv.param_value(opt, "sgd"), "sgd")
        # a value rounded out of a narrow range is written exactly instead
        narrow = d.FloatDistribution(1.00000000001, 1.00000000002)
        self.assertEqual(float(drv.value_text(narrow, 1.000000000015)), 1.000000000015)

    def test_a_value_the_sweep_cannot_store_is_refused(self):
        self.assertEqual(drv.writable("opt", "adam"), "adam")
        self.assertEqual(drv.writable("lr", "-1e-05"), "-1e-05")
        for bad in ("", "a,b", "1..3", "int:2", "absent:"):
            with self.assertRaises(drv.DriverError) as e:
                drv.writable("opt", bad)
            self.assertEqual(e.exception.code, 64)

    def test_a_value_outside_the_space_is_refused(self):
        d = optuna.distributions
        with self.assertRaises(ValueError):
            drv.param_value(d.IntDistribution(2, 8), "9")
        with self.assertRaises(ValueError):
            drv.param_value(d.CategoricalDistribution(["adam"]), "sgd")


@unittest.skipUnless(optuna, "python3-optuna is not installed")
class TrialStates(unittest.TestCase):
    TS = optuna.trial.TrialState if optuna else None

    def record(self, state, last=None, end=None):
        t = {"state": state, "end": end, "metrics": {}}
        if last is not None:
            t["metrics"]["loss"] = {"last": last, "last_step": 9}
        return drv.trial_record(optuna, t, ["loss"])

    def test_done_completes_with_the_last_value(self):
        self.assertEqual(self.record("done", 0.25), (self.TS.COMPLETE, [0.25], {}))

    def test_done_completes_with_its_best_step_under_best_step(self):
        t = {"state": "done", "end": None,
             "metrics": {"loss": {"last": 0.4, "last_step": 4, "best": 0.1, "best_step": 3}}}
        self.assertEqual(drv.trial_record(optuna, t, ["loss"], True), (self.TS.COMPLETE, [0.1], {}))
        self.assertEqual(drv.trial_record(optuna, t, ["loss"]), (self.TS.COMPLETE, [0.4], {}))

    def test_done_without_the_metric_fails(self):
        self.assertEqual(self.record("done"), (self.TS.FAIL, None, {}))

    def test_pruned_keeps_its_last_value_at_its_step(self):
        self.assertEqual(self.record("pruned", 0.5), (self.TS.PRUNED, None, {9: 0.5}))
        end = {"cause": "pruned", "exit_code": 124}
        self.assertEqual(self.record("stopped", 0.5, end), (self.TS.PRUNED, None, {9: 0.5}))

    def test_failed_and_cancelled_fail(self):
        for state in ("failed", "cancelled"):
            self.assertEqual(self.record(state, 0.1)[0], self.TS.FAIL)

    def test_preempted_and_open_trials_are_running_never_failed(self):
        for state in ("queued", "running", "preempted", "stopped", "vanished"):
            self.assertEqual(self.record(state, 0.1), (self.TS.RUNNING, None, {}))

    def test_several_metrics_complete_with_every_value_or_fail(self):
        t = {"state": "done", "metrics": {"loss": {"last": 0.5, "last_step": 3},
                                          "size": {"last": 20.0, "last_step": 3}}}
        self.assertEqual(drv.trial_record(optuna, t, ["loss", "size"]),
                         (self.TS.COMPLETE, [0.5, 20.0], {}))
        self.assertEqual(drv.trial_record(optuna, t, ["size", "loss"])[1], [20.0, 0.5])
        del t["metrics"]["size"]
        self.assertEqual(drv.trial_record(optuna, t, ["loss", "size"]), (self.TS.FAIL, None, {}))
        t["metrics"]["size"] = {"last": float("nan"), "last_step": 3}
        self.assertEqual(drv.trial_record(optuna, t, ["loss", "size"])[0], self.TS.FAIL)
        t["state"] = "pruned"  # no intermediate values in a multi-objective study
        self.assertEqual(drv.trial_record(optuna, t, ["loss", "size"]),
                         (self.TS.PRUNED, None, {}))


class Options(unittest.TestCase):
    def parse(self, *args):
        return drv.parse(["hp", "--trials", "4"] + list(args))

    def test_one_metric_keeps_direction_and_tpe(self):
        a = self.parse("--metric", "acc", "--direction", "max")
        self.assertEqual((a.objectives, a.sampler), ([("acc", "max")], "tpe"))
        self.assertEqual(self.parse().objectives, [("loss", "min")])

    def test_several_metrics_are_objectives_with_nsga2(self):
        a = self.parse("--metric", "loss:min", "--metric", "acc:max", "--metric", "size")
        self.assertEqual(a.objectives, [("loss", "min"), ("acc", "max"), ("size", "min")])
        self.assertEqual(a.sampler, "nsga2")
        self.assertEqual(self.parse("--metric", "a:min", "--metric", "b:max",
                                    "--sampler", "tpe").sampler, "tpe")

    def test_a_bad_metric_is_refused(self):
        for bad in (["--metric", "loss:up"], ["--metric", ":min"],
                    ["--metric", "a", "--metric", "a:max"]):
            with self.assertRaises(SystemExit), open(os.devnull, "w") as null:
                stderr, sys.stderr = sys.stderr, null
                try:
                    self.parse(*bad)
                finally:
                    sys.stderr = stderr

    def test_spotrun_python_is_the_only_interpreter_tried(self):
        old = os.environ.get("SPOTRUN_PYTHON")
        os.environ["SPOTRUN_PYTHON"] = "/opt/py/bin/python3"
        try:
            self.assertEqual(drv.interpreters(), ["/opt/py/bin/python3"])
        finally:
            if old is None:
                del os.environ["SPOTRUN_PYTHON"]
            else:
                os.environ["SPOTRUN_PYTHON"] = old


class Define(unittest.TestCase):
    """--param defines the sweep; the objectives go with it (--objective)
    only where spotrun's sweep init has that option."""

    def define(self, helps):
        with tempfile.TemporaryDirectory() as d:
            fake, log = os.path.join(d, "spotrun"), os.path.join(d, "args")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nif [ \"$3\" = --help ]; then echo '%s'; exit 0; fi\n"
                        "echo \"$@\" >>%s\n" % (helps, log))
            os.chmod(fake, 0o755)
            a = drv.parse(["hp", "--trials", "4", "--metric", "loss:min", "--metric", "acc:max",
                           "--param", "x=uniform:0,1", "--spotrun", fake, "--", "train", "{x}"])
            drv.define(a)
            with open(log) as f:
                return f.read().strip()

    def test_objectives_are_recorded_where_sweep_init_takes_them(self):
        self.assertEqual(self.define("--objective METRIC:min|max"),
                         "sweep init hp --random 0 --param x=uniform:0,1 --objective loss:min "
                         "--objective acc:max -- train {x}")

    def test_an_older_spotrun_defines_the_sweep_without(self):
        self.assertEqual(self.define("--param NAME=VALUES"),
                         "sweep init hp --random 0 --param x=uniform:0,1 -- train {x}")


def conditional_space(trial):
    """The shape of examples/optuna/space.py: momentum only for sgd."""
    opt = trial.suggest_categorical("optimizer", ["adam", "sgd"])
    trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    if opt == "sgd":
        trial.suggest_float("momentum", 0.0, 0.99)
    return trial.params


@unittest.skipUnless(optuna, "python3-optuna is not installed")
class Studies(unittest.TestCase):
    def doc(self, trials, specs=("x=uniform:0,1", "y=uniform:0,1")):
        return {"sweep": "hp", "params": [s.split("=")[0] for s in specs],
                "spec": {"param": list(specs), "seed": 1, "random": 0, "search": True},
                "trials": [dict(t, trial=k) for k, t in enumerate(trials)]}

    def done(self, params, **metrics):
        return {"state": "done", "params": params,
                "metrics": {m: {"last": v, "last_step": 1} for m, v in metrics.items()}}

    def test_two_objectives_give_their_pareto_front(self):
        a = drv.parse(["hp", "--trials", "4", "--metric", "loss:min", "--metric", "acc:max"])
        self.assertIsInstance(drv.make_sampler(optuna, a, 0), optuna.samplers.NSGAIISampler)
        doc = self.doc([self.done({"x": "0.1", "y": "0.1"}, loss=1.0, acc=0.9),
                        self.done({"x": "0.2", "y": "0.2"}, loss=0.5, acc=0.5),
                        self.done({"x": "0.3", "y": "0.3"}, loss=2.0, acc=0.4),  # dominated
                        self.done({"x": "0.4", "y": "0.4"}, loss=0.5)])  # no acc: FAIL
        study, _, have, open_, skipped = drv.rebuild(optuna, a, doc)
        self.assertEqual((have, open_, skipped), (4, 0, []))
        self.assertEqual([t.values for t in study.trials], [[1.0, 0.9], [0.5, 0.5],
                                                             [2.0, 0.4], None])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            drv.summary(a, study, have)
        self.assertEqual(out.getvalue().strip(),
                         "sweep hp: 4 of 4 trials: 3 complete, 0 pruned, 1 failed, 0 open; "
                         "pareto front (loss min, acc max): trial 0: loss 1 acc 0.9 "
                         "(x=0.1 y=0.1); trial 1: loss 0.5 acc 0.5 (x=0.2 y=0.2)")

    def test_cmaes_is_refused_for_several_objectives(self):
        a = drv.parse(["hp", "--trials", "4", "--metric", "a", "--metric", "b",
                       "--sampler", "cmaes"])
        with self.assertRaises(drv.DriverError) as e:
            drv.make_sampler(optuna, a, 0)
        self.assertEqual(e.exception.code, 64)

    def test_a_conditional_space_replays_each_trials_own_parameters(self):
        specs = ("optimizer=choice:adam,sgd", "lr=loguniform:1e-4,1e-1",
                 "momentum=uniform:0,0.99")
        sgd = {"optimizer": "sgd", "lr": "0.01", "momentum": "0.9"}
        adam = {"optimizer": "adam", "lr": "0.001", "momentum": ""}
        space = dict(drv.distribution(optuna, s) for s in specs)
        params, dists = drv.trial_params(space, conditional_space, {"params": sgd})
        self.assertEqual(params, {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9})
        params, dists = drv.trial_params(space, conditional_space, {"params": adam})
        self.assertEqual(params, {"optimizer": "adam", "lr": 0.001})
        self.assertEqual(set(dists), {"optimizer", "lr"})
        # sgd without its momentum is not of the space
        with self.assertRaises(drv.NotInTrial):
            drv.trial_params(space, conditional_space, {"params": dict(sgd, momentum="")})
        with self.assertRaises(ValueError):  # outside what the space suggests
            drv.trial_params(space, conditional_space, {"params": dict(sgd, lr="0.5")})

    def test_a_conditional_study_rebuilds_and_asks(self):
        a = drv.parse(["hp", "--trials", "4", "--sampler", "random"])
        a.space = "test_optuna_driver:conditional_space"
        sys.modules.setdefault("test_optuna_driver", sys.modules[__name__])
        specs = ("optimizer=choice:adam,sgd", "lr=loguniform:1e-4,1e-1",
                 "momentum=uniform:0,0.99")
        doc = self.doc([self.done({"optimizer": "adam", "lr": "0.001", "momentum": ""},
                                  loss=0.3)], specs)
        study, space, have, open_, skipped = drv.rebuild(optuna, a, doc)
        self.assertEqual(skipped, [])
        self.assertEqual(study.trials[0].params, {"optimizer": "adam", "lr": 0.001})
        self.assertEqual(study.trials[0].values, [0.3])
        for _ in range(10):
            t = study.ask()
            conditional_space(t)
            self.assertEqual("momentum" in t.params, t.params["optimizer"] == "sgd")


if __name__ == "__main__":
    unittest.main()
