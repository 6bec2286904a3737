"""Pure views of a plan's records: score matrices, selections, cv_results_."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import FitFailedWarning, ParcvError
from parcv.plan.build import Plan
from parcv.plan.records import Key, Record
from parcv.results.summary import rank_means, select_candidate

__all__ = [
    "fold_scores",
    "fit_ok",
    "failure_message",
    "select_for",
    "build_cv_results",
    "report_fit_failures",
]


def fit_ok(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> NDArray[np.bool_]:
    """Return the (n_candidates, n_inner_folds) matrix of fits that succeeded."""
    n_inner = len(plan.inner_folds[outer])
    if plan.fast_cv:
        # One fast-CV record covers every inner fold of its candidate.
        ok = [records[("fit", outer, None, c.index)].ok for c in plan.candidates]
        return np.repeat(np.array(ok, dtype=bool)[:, np.newaxis], n_inner, axis=1)
    return np.array(
        [[records[("fit", outer, i, c.index)].ok for i in range(n_inner)]
         for c in plan.candidates], dtype=bool,
    ).reshape(len(plan.candidates), n_inner)  # fmt: skip


def fold_scores(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, metric: str, which: str = "test"
) -> NDArray[np.float64]:
    """Return the (n_candidates, n_inner_folds) score matrix of one outer fold.

    Fast-CV records hold every fold's score of a candidate in one array;
    other records hold one fold's score each.
    """
    n_inner = len(plan.inner_folds[outer])
    if plan.fast_cv and which == "test":
        return np.vstack(
            [records[("fit", outer, None, c.index)].folds.test[metric]  # type: ignore[union-attr]
             for c in plan.candidates]
        ).reshape(len(plan.candidates), n_inner)  # fmt: skip
    out = np.empty((len(plan.candidates), n_inner), dtype=np.float64)
    for c in range(len(plan.candidates)):
        for i in range(n_inner):
            rec = records[("fit", outer, i, c)]
            out[c, i] = (rec.test_scores if which == "test" else rec.train_scores)[metric]
    return out


def failure_message(plan: Plan, record: Record, *, raised: bool = True) -> str:
    """Describe a failed unit: candidate, fold and the original traceback.

    ``raised`` says the failure stops the run (``error_score='raise'``).
    """
    unit = record.unit
    where = "all data" if unit.outer is None else f"outer fold {unit.outer}"
    if unit.inner is not None:
        where += f", inner fold {unit.inner}"
    elif unit.kind == "fit":
        where += ", every inner fold (fast CV)"
    err = record.error
    detail = (
        "" if err is None else f"{err.type}: {err.message}\n\nOriginal traceback:\n{err.traceback}"
    )
    why = " (error_score='raise')" if raised else ""
    return (
        f"The {unit.kind} of candidate {plan.candidates[unit.candidate].label} on {where} "
        f"failed{why}. {detail}"
    )


def failed_everywhere(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> list[int]:
    """Candidates whose every fit on this outer fold failed."""
    return [int(c) for c in np.flatnonzero(~fit_ok(plan, records, outer).any(axis=1))]


def select_for(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, *, warn: bool = False
) -> int:
    """Select the candidate of one outer fold (``None``: all data) from its fit records.

    Candidates that failed in every fold are excluded, whatever ``error_score``
    put in their place; with ``warn`` a warning names them.
    """
    scores = fold_scores(plan, records, outer, plan.scoring.refit)
    excluded = failed_everywhere(plan, records, outer)
    scores[excluded] = np.nan
    if warn and excluded and len(excluded) < len(plan.candidates):
        where = "all data" if outer is None else f"outer fold {outer}"
        names = ", ".join(plan.candidates[c].label for c in excluded)
        warnings.warn(
            f"excluded from selection on {where}: candidate(s) {names} failed in every "
            "fold (see the records' tracebacks).",
            FitFailedWarning,
            stacklevel=2,
        )
    try:
        return select_candidate(scores, [c.params for c in plan.candidates], plan.selection)
    except ValueError as err:
        where = "all data" if outer is None else f"outer fold {outer}"
        if all(r.ok for r in records.values() if r.unit.outer == outer):
            raise ParcvError(
                f"no candidate can be selected on {where}: no fit failed, but every candidate's "
                f"mean score (metric {plan.scoring.refit!r}) is NaN: the scorer returned NaN in "
                "some fold. Use a scoring that is defined on every test fold of this data."
            ) from err
        raise all_failed_error(
            plan, records, outer, f"every candidate failed on {where}", "nothing can be selected"
        ) from err


def all_failed_error(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, what: str, outcome: str
) -> ParcvError:
    """The error of a run whose every fit on ``outer`` failed: count, hint, first failure."""
    failed = sorted((r for r in records.values() if r.unit.outer == outer and not r.ok),
                    key=lambda r: r.started)  # fmt: skip
    first = failure_message(plan, failed[0], raised=False) if failed else ""
    return ParcvError(
        f"{what}: {len(failed)} failed fits; {outcome}. The estimator, its parameters, the "
        "data or the scoring is likely misconfigured; pass error_score='raise' to stop at "
        f"the first failure with its traceback. First failure: {first}"
    )


def report_fit_failures(plan: Plan, records: Mapping[Key, Record], *, stacklevel: int) -> None:
    """Warn when some folds of a one-candidate plan failed; raise when every one did.

    As scikit-learn's ``cross_validate`` with a numeric ``error_score``: a
    ``FitFailedWarning`` summarises partial failures (their scores are
    ``error_score``) and a run with nothing scored is an error.
    """
    ok = fit_ok(plan, records, None)[0]
    n_failed = int(np.count_nonzero(~ok))
    if n_failed == 0:
        return
    if n_failed == ok.size:
        what = "cross_validate failed on every fold"
        raise all_failed_error(plan, records, None, what, "nothing was scored")
    summary = summarize_failures(plan, {k: r for k, r in records.items() if r.unit.kind == "fit"})
    folds = ", ".join(str(i) for i in np.flatnonzero(~ok))
    warnings.warn(
        f"{n_failed} of {ok.size} fits failed (folds {folds}); their scores are "
        f"error_score={plan.error_score!r}. First error: {summary.first_error}. Pass "
        "error_score='raise' to stop at the first failure with its traceback.",
        FitFailedWarning,
        stacklevel=stacklevel + 1,
    )


def _fold_times(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, attr: str
) -> NDArray[np.float64]:
    n_inner = len(plan.inner_folds[outer])
    if plan.fast_cv:
        # A fast-CV record times its candidate's share of the batch: spread it over the folds.
        per_fold = [getattr(records[("fit", outer, None, c)], attr) / n_inner
                    for c in range(len(plan.candidates))]  # fmt: skip
        return np.repeat(np.array(per_fold)[:, np.newaxis], n_inner, axis=1)
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
        # The same column views as GridSearchCV's array[:, split], made in one pass.
        names = [f"split{i}_{key}" for i in range(array.shape[1])]
        results.update(zip(names, array.T, strict=True))
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
    results["n_failed_fits"] = (~fit_ok(plan, records, outer)).sum(axis=1)
    return results


@dataclass(frozen=True, slots=True)
class FailureSummary:
    """How many units failed, where, and the first error."""

    n_failed: int
    n_total: int
    by_candidate: dict[str, int]
    first_error: str | None

    @property
    def text(self) -> str:
        """One sentence, e.g. ``"3 of 120 fits failed (candidate 'alpha=-1': 3); first ..."``."""
        if not self.n_failed:
            return f"0 of {self.n_total} fits failed."
        where = ", ".join(f"candidate {k!r}: {v}" for k, v in self.by_candidate.items())
        return (
            f"{self.n_failed} of {self.n_total} fits failed ({where}); "
            f"first error: {self.first_error}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "n_failed": self.n_failed,
            "n_total": self.n_total,
            "by_candidate": dict(self.by_candidate),
            "first_error": self.first_error,
            "text": self.text,
        }


def summarize_failures(plan: Plan, records: Mapping[Key, Record]) -> FailureSummary:
    """Count failed units per candidate; keep the first error's type and message."""
    failed = sorted((r for r in records.values() if not r.ok), key=lambda r: r.started)
    counts = Counter(plan.candidates[r.unit.candidate].label for r in failed)
    first = (
        None
        if not failed or failed[0].error is None
        else (f"{failed[0].error.type}: {failed[0].error.message}")
    )
    return FailureSummary(len(failed), len(records), dict(counts), first)


def count_warnings(plan: Plan, records: Mapping[Key, Record]) -> dict[str, dict[str, int]]:
    """Warnings raised inside fits, counted per candidate and category."""
    counts: dict[str, Counter[str]] = {}
    for r in records.values():
        if r.warnings:
            label = plan.candidates[r.unit.candidate].label
            counts.setdefault(label, Counter()).update(r.warnings)
    return {label: dict(c) for label, c in counts.items()}
