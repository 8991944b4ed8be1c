"""Unit tests of spotrun.optuna_driver's pure parts: the search space read
from a sweep's specs, how values are written into and read back from the
sweep, and which Optuna state each trial state of `sweep show --json`
becomes. Skipped without optuna (Debian: python3-optuna). The driver
against a real store: tests/e2e/t0930-sweep-optuna.sh.

    /usr/bin/python3 -m unittest discover -s python/tests -t python
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from spotrun import optuna_driver as drv  # noqa: E402

try:
    import optuna
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
        return drv.trial_record(optuna, t, "loss")

    def test_done_completes_with_the_last_value(self):
        self.assertEqual(self.record("done", 0.25), (self.TS.COMPLETE, 0.25, {}))

    def test_done_completes_with_its_best_step_under_best_step(self):
        t = {"state": "done", "end": None,
             "metrics": {"loss": {"last": 0.4, "last_step": 4, "best": 0.1, "best_step": 3}}}
        self.assertEqual(drv.trial_record(optuna, t, "loss", True), (self.TS.COMPLETE, 0.1, {}))
        self.assertEqual(drv.trial_record(optuna, t, "loss"), (self.TS.COMPLETE, 0.4, {}))

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


if __name__ == "__main__":
    unittest.main()
