"""A conditional search space for `python3 -m spotrun.optuna_driver --space
space:space` (Optuna's define-by-run): the optimizer is a choice, and only
SGD has a momentum. The driver calls space(trial) for every trial it asks
for, and again with each stored trial's values when it rebuilds the study,
so the function must be deterministic given what the trial suggests.

The sweep declares every parameter the space may suggest (the driver's
--param, the union of the branches); a trial the space gave no momentum
has it absent: `{momentum}` expands to "" and SPOTRUN_PARAM_MOMENTUM is
unset (docs/sweeps.md, "Conditional parameters").
"""


def space(trial):
    optimizer = trial.suggest_categorical("optimizer", ["adam", "sgd"])
    trial.suggest_float("lr", 1e-3, 0.5, log=True)
    if optimizer == "sgd":
        trial.suggest_float("momentum", 0.0, 0.95)
    return trial.params
