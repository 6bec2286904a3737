"""A pruned trial's windows end where its pruner decides: checked against Optuna's pruners.

Successive halving (and each bracket of Hyperband) records a ``completed_rung_k``
on the trial whenever it decides; asked anywhere else, it answers False and
records nothing. An Optuna study run the way its users run one (a report and a
question at every checkpoint) shows where each trial was decided: those steps
must be the ends of the trial's windows, and every such end the trial reached
must be one.
"""

from __future__ import annotations

import numpy as np
import pytest

import parcv
from parcv.strategies.rungs import TrialWindows, decision_steps, windows_ending_at

optuna = pytest.importorskip("optuna")

PRUNERS = {
    "sh-1-2": lambda: optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=2),
    "sh-2-3-rate1": lambda: optuna.pruners.SuccessiveHalvingPruner(
        min_resource=2, reduction_factor=3, min_early_stopping_rate=1),
    "hyperband-1-16-2": lambda: optuna.pruners.HyperbandPruner(1, 16, reduction_factor=2),
    "hyperband-5-100-3": lambda: optuna.pruners.HyperbandPruner(5, 100, reduction_factor=3),
}  # fmt: skip
PATHS = {"sh-1-2": (16, 1), "sh-2-3-rate1": (40, 2), "hyperband-1-16-2": (16, 1),
         "hyperband-5-100-3": (100, 5)}  # fmt: skip


def _decided(pruner: str, n_trials: int = 40) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Optuna's own study: each trial's steps where the pruner decided, and its last step."""
    up_to, every = PATHS[pruner]
    checkpoints = list(range(every, up_to + 1, every))
    decided: dict[int, list[int]] = {}
    last: dict[int, int] = {}

    def objective(trial):
        rng = np.random.default_rng(trial.number)
        storage, tid = trial.study._storage, trial._trial_id
        value = 0.0
        for step in checkpoints:
            value = float(rng.normal())
            trial.report(value, step)
            before = len(storage.get_trial_system_attrs(tid))
            pruned = trial.should_prune()
            last[trial.number] = step
            if pruned or len(storage.get_trial_system_attrs(tid)) > before:
                decided.setdefault(trial.number, []).append(step)
            if pruned:
                raise optuna.TrialPruned
        return value

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(direction="maximize", study_name="parcv",
                                sampler=optuna.samplers.RandomSampler(seed=0),
                                pruner=PRUNERS[pruner]())  # fmt: skip
    study.optimize(objective, n_trials=n_trials)
    assert {t.state.name for t in study.trials} == {"COMPLETE", "PRUNED"}
    return decided, last


@pytest.mark.parametrize("pruner", sorted(PRUNERS))
def test_each_trial_is_decided_exactly_at_the_ends_of_its_windows_it_reached(pruner):
    decided, last = _decided(pruner)
    up_to, every = PATHS[pruner]
    windows = TrialWindows(PRUNERS[pruner](), "parcv", parcv.Iterations("n", up_to, every=every))
    checkpoints = list(range(every, up_to + 1, every))
    for number, reached in last.items():
        ends = {w[-1] for w in windows.of(number)}
        assert set(decided.get(number, [])) <= ends  # never decided inside a window
        # Every rung it reached was a decision, the path's end included.
        steps = decision_steps(PRUNERS[pruner](), "parcv", number, checkpoints)
        assert decided.get(number, []) == [s for s in steps if s <= reached], number


def test_any_other_pruner_may_decide_anywhere_and_its_windows_double():
    steps = decision_steps(optuna.pruners.MedianPruner(), "parcv", 0, [1, 2, 3, 4])
    assert steps is None
    windows = TrialWindows(optuna.pruners.MedianPruner(), "parcv", parcv.Iterations("n", 8))
    assert windows.of(3) == [(1,), (2,), (3, 4), (5, 6, 7, 8)]
    # A resource Optuna knows only once a trial completes: doubling too.
    auto = optuna.pruners.HyperbandPruner(min_resource="auto", max_resource="auto")
    assert decision_steps(auto, "parcv", 0, [1, 2, 3, 4]) is None


def test_windows_end_at_the_first_checkpoint_on_or_past_each_rung():
    # Rungs 2 * 3 ** (1 + k) = 6, 18, 54 on checkpoints every 4: decided at 8, 20, and 56.
    sh = optuna.pruners.SuccessiveHalvingPruner(2, 3, min_early_stopping_rate=1)
    checkpoints = list(range(4, 61, 4))
    assert decision_steps(sh, "parcv", 0, checkpoints) == (8, 20, 56)
    assert windows_ending_at(checkpoints, (8, 20, 56))[:2] == [(4, 8), (12, 16, 20)]
