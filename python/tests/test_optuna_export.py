"""Unit tests of spotrun.optuna_export's pure parts: which objective(s) and
directions a sweep's `sweep show --json` gives, a curve as intermediate
values, and which Optuna state and values each trial becomes. The export
against real storage: tests/e2e/t0982-sweep-export-optuna.sh.

    /usr/bin/python3 -m unittest discover -s python/tests
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from spotrun import optuna_export as exp  # noqa: E402


class Objectives(unittest.TestCase):
    def test_metric_option_wins_with_the_sweeps_direction(self):
        doc = {"maximize": ["acc"], "best": {"metric": "loss", "maximize": False}}
        self.assertEqual(exp.objectives(doc, "acc"), [("acc", "maximize")])
        self.assertEqual(exp.objectives(doc, "loss"), [("loss", "minimize")])
        self.assertEqual(exp.objectives(doc, "loss:max"), [("loss", "maximize")])
        self.assertEqual(exp.objectives(doc, "a:b:min"), [("a:b", "minimize")])

    def test_the_definitions_objectives_make_a_multi_objective_study(self):
        doc = {"objectives": [{"metric": "loss", "direction": "min"},
                              {"metric": "acc", "direction": "max"}],
               "best": {"metric": "loss", "maximize": False}}
        self.assertEqual(exp.objectives(doc, None), [("loss", "minimize"), ("acc", "maximize")])

    def test_else_the_best_metric_then_the_sort_then_the_early_stop_rule(self):
        self.assertEqual(exp.objectives({"best": {"metric": "acc", "maximize": True}}, None),
                         [("acc", "maximize")])
        self.assertEqual(exp.objectives({"best": None, "sort": "f1", "maximize": ["f1"]}, None),
                         [("f1", "maximize")])
        self.assertEqual(exp.objectives({"early_stop": {"metric": "loss"}}, None),
                         [("loss", "minimize")])

    def test_no_objective_is_a_usage_error(self):
        with self.assertRaises(exp.ExportError) as e:
            exp.objectives({"sweep": "sw", "best": None}, None)
        self.assertEqual(e.exception.code, 64)
        self.assertIn("give --metric NAME", str(e.exception))


class Records(unittest.TestCase):
    OBJ = [("loss", "minimize")]

    def trial(self, state, last=0.5, curve=None, end=None):
        return {"state": state, "end": end, "metrics": {"loss": {"last": last}},
                "curves": {"loss": curve if curve is not None else [[1, 0.9], [2, last]]}}

    def test_a_curve_is_step_to_value_and_a_null_step_its_rank(self):
        self.assertEqual(exp.intermediate([[1, 0.9], [4, 0.5]]), {1: 0.9, 4: 0.5})
        self.assertEqual(exp.intermediate([[None, 0.9], [None, 0.5]]), {0: 0.9, 1: 0.5})
        self.assertEqual(exp.intermediate(None), {})

    def test_each_state(self):
        self.assertEqual(exp.record(self.trial("done"), self.OBJ),
                         ("COMPLETE", [0.5], {1: 0.9, 2: 0.5}))
        self.assertEqual(exp.record(self.trial("pruned"), self.OBJ)[:2], ("PRUNED", None))
        for s in ("failed", "cancelled"):
            self.assertEqual(exp.record(self.trial(s), self.OBJ)[:2], ("FAIL", None))
        for s in ("queued", "running", "preempted", "stopped"):
            self.assertEqual(exp.record(self.trial(s), self.OBJ)[:2], ("RUNNING", None))

    def test_an_end_mark_the_view_has_not_named_yet_counts(self):
        t = self.trial("running", end={"cause": "pruned"})
        self.assertEqual(exp.record(t, self.OBJ)[0], "PRUNED")

    def test_a_done_trial_without_the_objective_failed(self):
        t = self.trial("done")
        t["metrics"] = {}
        self.assertEqual(exp.record(t, self.OBJ)[:2], ("FAIL", None))

    def test_best_step_rule_exports_the_best_steps_value(self):
        t = self.trial("done")
        t["metrics"]["loss"]["best"] = 0.25
        self.assertEqual(exp.record(t, self.OBJ)[1], [0.5])
        self.assertEqual(exp.record(t, self.OBJ, True)[1], [0.25])

    def test_several_objectives_give_several_values(self):
        t = self.trial("done")
        t["metrics"]["acc"] = {"last": 0.75}
        self.assertEqual(exp.record(t, [("loss", "minimize"), ("acc", "maximize")])[1],
                         [0.5, 0.75])


if __name__ == "__main__":
    unittest.main()
