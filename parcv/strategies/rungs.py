"""The windows a pruned trial is scored over, round by round: they end where its pruner decides.

A pruned trial reports its mean over the folds at every checkpoint of its path,
and asks its pruner after each report. parcv scores a trial a window of
checkpoints per round and then replays the reports and questions one by one, so
a window is a schedule only: whatever its windows, a trial is reported, pruned
and told the same (the checkpoints scored past the pruner's first yes are never
reported). A window that runs past a checkpoint where the trial is pruned fits
for nothing; a window that stops short costs a round trip.

Successive halving, and each bracket of Hyperband, decides only once a trial
reaches a rung, ``min_resource * reduction_factor ** (rate + k)``: asked at an
earlier step, its ``prune`` returns False and records nothing. So each window
ends at the first checkpoint on or past the next rung, or at the path's end: no
fit past a decision, no round between two. Any other pruner may decide at every
step, and its windows double (:func:`prune_windows`), trading a few fits past a
decision for fewer rounds.

Optuna keeps the rungs' settings (and Hyperband the bracket of a trial) in
private attributes. Read where present (Optuna 3.6 to 4.x); where absent, or
where a resource is ``"auto"`` (known only once a trial completes), the windows
double: the numbers are the same either way.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from parcv.plan.iterations import Iterations
from parcv.strategies.early_stopping import doubling_windows

__all__ = ["TrialWindows", "decision_steps", "prune_windows", "windows_ending_at"]


def prune_windows(iterations: Iterations) -> list[tuple[int, ...]]:
    """The checkpoints each round of a pruned trial scores: the first alone, then doubling.

    Where a warm start continues a path exactly (the shortcut table's
    ``"continuation"`` rows: GradientBoosting, HistGradientBoosting, forests),
    each window grows the last one's fits, so a trial the pruner stops at
    checkpoint ``t`` grew each fold once, to its window's end (below ``2 t``).
    Elsewhere (an xgboost or lightgbm booster, a fit read back from a store)
    each window is fitted from scratch to its last checkpoint, the earlier ones
    read from it where a shortcut allows: at most about ``4 t`` iterations, and
    about twice ``up_to`` for a trial that runs to the end.

    Examples
    --------
    >>> prune_windows(Iterations("n", up_to=16))
    [(1,), (2,), (3, 4), (5, 6, 7, 8), (9, 10, 11, 12, 13, 14, 15, 16)]
    >>> prune_windows(Iterations("n", up_to=20, every=5))
    [(5,), (10,), (15, 20)]
    """
    checkpoints = iterations.all_checkpoints
    return doubling_windows(checkpoints, checkpoints[0])


def windows_ending_at(checkpoints: Sequence[int], steps: Sequence[int]) -> list[tuple[int, ...]]:
    """The checkpoints cut into windows, each ending at a step of ``steps`` or at the last.

    Examples
    --------
    >>> windows_ending_at([5, 10, 15, 20, 25, 30], [5, 15])
    [(5,), (10, 15), (20, 25, 30)]
    """
    ends = set(steps) | {checkpoints[-1]}
    out: list[tuple[int, ...]] = []
    window: list[int] = []
    for count in checkpoints:
        window.append(count)
        if count in ends:
            out.append(tuple(window))
            window = []
    return out


def _rungs(pruner: Any, checkpoints: Sequence[int]) -> tuple[int, ...] | None:
    """The checkpoints where a successive-halving pruner decides; None where unknown."""
    low = getattr(pruner, "_min_resource", None)
    factor = getattr(pruner, "_reduction_factor", None)
    rate = getattr(pruner, "_min_early_stopping_rate", None)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, factor, rate)):
        return None  # "auto", or not the attributes this reads
    steps: list[int] = []
    k = 0
    while (rung := low * factor ** (rate + k)) <= checkpoints[-1]:  # type: ignore[operator]
        first = next(c for c in checkpoints if c >= rung)
        if first not in steps:
            steps.append(first)
        k += 1
    return tuple(steps)


def decision_steps(
    pruner: Any, study_name: str, number: int, checkpoints: Sequence[int]
) -> tuple[int, ...] | None:
    """The checkpoints at which ``pruner`` may stop trial ``number``; None: at any of them.

    ``pruner`` is a fresh copy, never the study's own: Hyperband is set up on it
    (as its first ``prune`` would set up the study's, the same way, from its
    ``max_resource``).

    Examples
    --------
    >>> import optuna
    >>> sh = optuna.pruners.SuccessiveHalvingPruner(min_resource=5, reduction_factor=3)
    >>> decision_steps(sh, "parcv", 0, list(range(5, 101, 5)))
    (5, 15, 45)
    >>> decision_steps(optuna.pruners.MedianPruner(), "parcv", 0, [1, 2, 3]) is None
    True
    """
    import optuna

    kind = type(pruner)
    if kind is optuna.pruners.SuccessiveHalvingPruner:
        return _rungs(pruner, checkpoints)
    hyperband: Any = pruner  # its private attributes, read where present
    if kind is not optuna.pruners.HyperbandPruner:
        return None
    maximum = getattr(hyperband, "_max_resource", None)
    if not isinstance(maximum, int) or not hasattr(hyperband, "_get_bracket_id"):
        return None
    if not getattr(hyperband, "_pruners", None):
        hyperband._try_initialization(SimpleNamespace())  # reads the study only for "auto"
    # The bracket of a trial is a hash of the study's name and the trial's number.
    bracket = hyperband._get_bracket_id(SimpleNamespace(study_name=study_name),
                                        SimpleNamespace(number=number))  # fmt: skip
    return _rungs(hyperband._pruners[bracket], checkpoints)


class TrialWindows:
    """The windows of each trial of one study: ending at its pruner's rungs, or doubling."""

    def __init__(self, pruner: Any, study_name: str, iterations: Iterations) -> None:
        self._pruner = copy.deepcopy(pruner)  # set up here, apart from the study's
        self._study_name = study_name
        self._checkpoints = iterations.all_checkpoints
        self._doubling = prune_windows(iterations)

    def of(self, number: int) -> list[tuple[int, ...]]:
        """Trial ``number``'s windows, in order."""
        steps = decision_steps(self._pruner, self._study_name, number, self._checkpoints)
        if steps is None:
            return self._doubling
        return windows_ending_at(self._checkpoints, steps)
