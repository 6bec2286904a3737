"""Pure views of a plan's records: score matrices, selections, cv_results_."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import ParcvError
from parcv.plan import Plan
from parcv.records import Key, Record
from parcv.summary import rank_means, select_candidate

__all__ = ["fold_scores", "failure_message", "select_for", "build_cv_results"]


def fold_scores(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, metric: str, which: str = "test"
) -> NDArray[np.float64]:
    """Return the (n_candidates, n_inner_folds) score matrix of one outer fold."""
    n_inner = len(plan.inner_folds[outer])
    out = np.empty((len(plan.candidates), n_inner), dtype=np.float64)
    for c in range(len(plan.candidates)):
        for i in range(n_inner):
            rec = records[("fit", outer, i, c)]
            out[c, i] = (rec.test_scores if which == "test" else rec.train_scores)[metric]
    return out


def failure_message(plan: Plan, record: Record) -> str:
    """Describe a failed unit: candidate, fold and the original traceback."""
    unit = record.unit
    where = "all data" if unit.outer is None else f"outer fold {unit.outer}"
    if unit.inner is not None:
        where += f", inner fold {unit.inner}"
    err = record.error
    detail = (
        "" if err is None else f"{err.type}: {err.message}\n\nOriginal traceback:\n{err.traceback}"
    )
    return (
        f"The {unit.kind} of candidate {plan.candidates[unit.candidate].label} on {where} "
        f"failed (error_score='raise'). {detail}"
    )


def select_for(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> int:
    """Select the candidate of one outer fold (``None``: all data) from its fit records."""
    scores = fold_scores(plan, records, outer, plan.scoring.refit)
    try:
        return select_candidate(scores, [c.params for c in plan.candidates], plan.selection)
    except ValueError as err:
        failed = [r for r in records.values() if r.unit.outer == outer and not r.ok]
        first = failure_message(plan, failed[0]) if failed else ""
        where = "all data" if outer is None else f"outer fold {outer}"
        raise ParcvError(
            f"every candidate failed on {where}: {len(failed)} failed fits; nothing can be "
            f"selected. First failure: {first}"
        ) from err


def _fold_times(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, attr: str
) -> NDArray[np.float64]:
    n_inner = len(plan.inner_folds[outer])
    return np.array(
        [
            [getattr(records[("fit", outer, i, c)], attr) for i in range(n_inner)]
            for c in range(len(plan.candidates))
        ],
        dtype=np.float64,
    )


def _store(
    results: dict[str, Any],
    key: str,
    array: NDArray[np.float64],
    *,
    rank: bool,
    splits: bool = True,
) -> None:
    # Same operations, in the same order, as GridSearchCV's _format_results: == parity.
    if splits:
        for split in range(array.shape[1]):
            results[f"split{split}_{key}"] = array[:, split]
    means = np.average(array, axis=1)
    results[f"mean_{key}"] = means
    results[f"std_{key}"] = np.sqrt(np.average((array - means[:, np.newaxis]) ** 2, axis=1))
    if rank:
        results[f"rank_{key}"] = rank_means(means)


def _param_columns(plan: Plan) -> dict[str, Any]:
    names = sorted({name for c in plan.candidates for name in c.params})
    n = len(plan.candidates)
    columns: dict[str, Any] = {}
    for name in names:
        values = np.ma.MaskedArray(np.empty(n, dtype=object), mask=True)
        for c in plan.candidates:
            if name in c.params:
                values[c.index] = c.params[name]
        columns[f"param_{name}"] = values
    return columns


def build_cv_results(
    plan: Plan, records: Mapping[Key, Record], outer: int | None
) -> dict[str, Any]:
    """Build ``cv_results_`` of one outer fold in scikit-learn's layout.

    Parameters
    ----------
    plan : Plan
    records : mapping of key to Record
    outer : int or None
        ``None`` for the search on all data.

    Returns
    -------
    dict
        The keys of ``GridSearchCV.cv_results_`` (``mean_test_score``,
        ``rank_test_score``, ``split0_test_score``, ``params`` ...); with
        several metrics ``score`` is replaced by each metric's name.
    """
    results: dict[str, Any] = {}
    _store(
        results, "fit_time", _fold_times(plan, records, outer, "fit_time"), rank=False, splits=False
    )
    _store(
        results,
        "score_time",
        _fold_times(plan, records, outer, "score_time"),
        rank=False,
        splits=False,
    )
    results.update(_param_columns(plan))
    results["params"] = [dict(c.params) for c in plan.candidates]
    for name in plan.scoring.scorers:
        suffix = plan.scoring.suffix(name)
        _store(results, f"test_{suffix}", fold_scores(plan, records, outer, name), rank=True)
        if plan.return_train_score:
            train = fold_scores(plan, records, outer, name, which="train")
            _store(results, f"train_{suffix}", train, rank=False)
    results["n_failed_fits"] = np.array(
        [
            sum(
                not records[("fit", outer, i, c.index)].ok
                for i in range(len(plan.inner_folds[outer]))
            )
            for c in plan.candidates
        ]
    )
    return results
