"""A pruned sampler's trials, read from its search's table: how each ended, and its value.

A sampler with a pruner (``parcv.Sampler(..., pruner=...)``) scores each trial at
the checkpoints of an iteration path, so its search's ``cv_results_`` has a row per
(trial, checkpoint), with the columns ``trial``, ``trial_state`` (Optuna's
``"COMPLETE"``, ``"PRUNED"`` or ``"FAIL"``) and ``reported`` (written by
:mod:`parcv.results.rounds`). Every consumer that counts the trials or compares them
reads them here: the report, ``parcv inspect``, a result's text and its comparisons.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["TrialCounts", "complete_trial_rows", "count_trials"]


@dataclass(frozen=True)
class TrialCounts:
    """The trials of one search of a sampler with a pruner, by how each ended.

    Parameters
    ----------
    where : str
        The search: ``"all data"`` or ``"outer fold 0"``, ...
    n_trials : int
    n_complete, n_pruned, n_failed : int
        The trials Optuna's study holds as complete, pruned and failed. A finished
        run tells every trial, so these add up to ``n_trials``.

    Examples
    --------
    >>> TrialCounts("all data", 8, 5, 2, 1).text()
    '8 trials: 5 complete, 2 pruned, 1 failed'
    """

    where: str
    n_trials: int
    n_complete: int
    n_pruned: int
    n_failed: int

    def text(self) -> str:
        """The counts in words."""
        untold = self.n_trials - self.n_complete - self.n_pruned - self.n_failed
        return (
            f"{self.n_trials} trials: {self.n_complete} complete, {self.n_pruned} pruned, "
            f"{self.n_failed} failed" + (f", {untold} not finished" if untold else "")
        )

    def line(self) -> str:
        """The counts as a result's text and the run's summary show them."""
        return f"trials of the search on {self.where}: {self.text()}"

    def left_out(self) -> str:
        """What a comparison of the complete trials leaves out, in words."""
        return (
            f"Complete trials only: {self.n_complete} compared, each at its last checkpoint "
            f"(its value); {self.n_pruned} pruned and {self.n_failed} failed trials left out "
            "(cv_results_ columns trial and trial_state mark their rows)."
        )


def _table(search: Any) -> dict[str, Any] | None:
    """A pruned sampler's ``cv_results_``, or None for any other search (or none)."""
    cv = getattr(search, "cv_results_", None)
    return cv if cv is not None and "trial_state" in cv else None


def count_trials(result: Any) -> tuple[TrialCounts, ...]:
    """Count the trials of each search of a run by a sampler with a pruner.

    Parameters
    ----------
    result : SearchResult or NestedResult
        A nested run's searches are its outer folds' (``inner``), then its
        search on all data (``final``), where it has them.

    Returns
    -------
    tuple of TrialCounts
        One per search of a sampler with a pruner; empty for any other run.
    """
    if hasattr(result, "outer_scores"):
        searches = [(f"outer fold {o}", s) for o, s in enumerate(getattr(result, "inner", ()))]
        searches.append(("all data", getattr(result, "final", None)))
    else:
        searches = [("all data", result)]
    found = []
    for where, search in searches:
        cv = _table(search)
        if cv is None:
            continue
        states = dict(zip(np.asarray(cv["trial"]).tolist(), cv["trial_state"], strict=True))
        counts = Counter(states.values())
        found.append(TrialCounts(where, len(states), counts["COMPLETE"], counts["PRUNED"],
                                 counts["FAIL"]))  # fmt: skip
    return tuple(found)


def complete_trial_rows(search: Any) -> NDArray[np.intp] | None:
    """The row of each complete trial's value (its last checkpoint), in trial order.

    These are the candidates a pruned sampler's search compares: a pruned
    trial's rows are checkpoints of a model its pruner stopped early, and
    the earlier rows of a complete trial are its way to its value. None for
    a search of no pruned sampler (every row is a candidate).
    """
    cv = _table(search)
    if cv is None:
        return None
    param = ((getattr(search, "strategy", None) or {}).get("resource") or {}).get("param")
    last: dict[int, tuple[Any, int]] = {}
    for row, (number, state) in enumerate(zip(np.asarray(cv["trial"]).tolist(),
                                              cv["trial_state"], strict=True)):  # fmt: skip
        count = cv["params"][row].get(param, row)
        if state == "COMPLETE" and (number not in last or count > last[number][0]):
            last[number] = (count, row)
    return np.asarray([last[n][1] for n in sorted(last)], dtype=np.intp)
