"""Pure views of a plan's records: score matrices, selections, cv_results_."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import FitFailedWarning, ParcvError, warn_at_caller
from parcv.plan.build import Plan
from parcv.plan.kinds import KINDS, kind_of
from parcv.plan.record_table import RecordTable
from parcv.plan.records import Key, Record
from parcv.results.summary import rank_means, select_candidate
from parcv.stats.racing import RaceResult, run_race

__all__ = [
    "fold_scores",
    "fit_ok",
    "race_mask",
    "race_of",
    "failure_message",
    "select_for",
    "build_cv_results",
    "report_fit_failures",
]


def fit_ok(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> NDArray[np.bool_]:
    """Return the (n_candidates, n_inner_folds) matrix of fits that succeeded.

    A fit a race never ran (its candidate was dropped before) did not succeed.
    """
    n_inner = len(plan.inner_folds[outer])
    if plan.fast_cv:
        # One fast-CV record covers every inner fold of its candidate.
        ok = [records[("fit", outer, None, c.index)].ok for c in plan.candidates]
        return np.repeat(np.array(ok, dtype=bool)[:, np.newaxis], n_inner, axis=1)
    ran = race_mask(plan, records, outer)
    matrix: NDArray[np.bool_] = _fit_values(plan, records, outer, "ok") == 1.0
    return matrix if ran is None else matrix & ran


def _fit_grid(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> list[Record | None]:
    """The fit records of one outer fold, candidate-major (None: not run), looked up once.

    The matrices below are read from this flat list in one pass each: with
    100,000 fits, a lookup by key per cell per matrix took most of a report.
    """
    get, n_inner = records.get, len(plan.inner_folds[outer])
    return [get(("fit", outer, i, c)) for c in range(len(plan.candidates)) for i in range(n_inner)]


def _fit_values(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, column: str
) -> NDArray[np.float64]:
    """A (n_candidates, n_inner_folds) matrix of one value of each fit (NaN: not run).

    ``column``: ``ok`` (1.0 or 0.0), ``fit_time``, ``score_time``, ``test:<metric>``
    or ``train:<metric>``. Records read from a store come as a table: its column,
    in one numpy step.
    """
    shape = (len(plan.candidates), len(plan.inner_folds[outer]))
    if isinstance(records, RecordTable):
        return records.fit_matrix(outer, shape, column)
    value = _FIT_VALUE.get(column)
    if value is None:
        which, metric = column.split(":", 1)
        value = (
            (lambda r: r.test_scores[metric])
            if which == "test"
            else (lambda r: r.train_scores[metric])
        )
    grid = _fit_grid(plan, records, outer)
    values = (np.nan if r is None else value(r) for r in grid)
    return np.fromiter(values, dtype=np.float64, count=len(grid)).reshape(shape)


_FIT_VALUE: dict[str, Callable[[Record], float]] = {
    "ok": lambda r: 1.0 if r.ok else 0.0,
    "fit_time": lambda r: r.fit_time,
    "score_time": lambda r: r.score_time,
}


def _n_failed(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> NDArray[np.int64]:
    """Failed fits per candidate (a fit a race never ran is not one)."""
    if plan.racing is None:
        return np.asarray((~fit_ok(plan, records, outer)).sum(axis=1), dtype=np.int64)
    ran = race_mask(plan, records, outer)
    failed = _fit_values(plan, records, outer, "ok") == 0.0
    return (failed & ran).sum(axis=1)  # type: ignore[no-any-return]


def race_of(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> RaceResult | None:
    """Replay the race of one outer fold's inner CV from its records (None: no race).

    The race decides after folds ``burn_in - 1`` to ``n_folds - 2`` (0-based),
    on the refit metric's scores of the folds up to each: a fit that was not
    run reads as NaN, which no decision it takes part in ever sees. The same
    records give the same eliminations whatever order they arrived in.
    """
    if plan.racing is None:
        return None
    scores = _raw_fold_scores(plan, records, outer, plan.scoring.refit, "test")
    folds = plan.inner_folds[outer]
    n_train = float(np.mean([f.train.size for f in folds]))
    n_test = float(np.mean([f.test.size for f in folds]))
    return run_race(scores[:, :-1], plan.racing, n_train=n_train, n_test=n_test)


def race_mask(
    plan: Plan, records: Mapping[Key, Record], outer: int | None
) -> NDArray[np.bool_] | None:
    """The (n_candidates, n_inner_folds) folds a race keeps (None: no race).

    A dropped candidate keeps the folds up to the one after which it was
    dropped; a fold it ran early, before the decision, is left out all the same,
    so results do not depend on timing.
    """
    race = race_of(plan, records, outer)
    if race is None:
        return None
    n_inner = len(plan.inner_folds[outer])
    last = np.asarray(race.eliminated_after, dtype=np.int64)
    last = np.where(last < 0, n_inner - 1, last)
    return np.arange(n_inner)[np.newaxis, :] <= last[:, np.newaxis]


def fold_scores(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, metric: str, which: str = "test"
) -> NDArray[np.float64]:
    """Return the (n_candidates, n_inner_folds) score matrix of one outer fold.

    Fast-CV records hold every fold's score of a candidate in one array;
    other records hold one fold's score each. With a race, the folds after
    a candidate was dropped are NaN.
    """
    scores = _raw_fold_scores(plan, records, outer, metric, which)
    ran = race_mask(plan, records, outer)
    if ran is not None:
        scores[~ran] = np.nan
    return scores


def _raw_fold_scores(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, metric: str, which: str
) -> NDArray[np.float64]:
    """The score matrix as recorded: NaN where no fit was run."""
    n_inner = len(plan.inner_folds[outer])
    if plan.fast_cv and which == "test":
        return np.vstack(
            [records[("fit", outer, None, c.index)].folds.test[metric]  # type: ignore[union-attr]
             for c in plan.candidates]
        ).reshape(len(plan.candidates), n_inner)  # fmt: skip
    return _fit_values(plan, records, outer, f"{which}:{metric}")


def failure_message(plan: Plan, record: Record, *, raised: bool = True) -> str:
    """Describe a failed unit: candidate, fold and the original traceback.

    ``raised`` says the failure stops the run (``error_score='raise'``).
    """
    unit = record.unit
    kind = kind_of(unit)
    err = record.error
    detail = (
        "" if err is None else f"{err.type}: {err.message}\n\nOriginal traceback:\n{err.traceback}"
    )
    why = " (error_score='raise')" if raised else ""
    return (
        f"The {kind.noun} of candidate {plan.candidates[unit.candidate].label} on "
        f"{kind.describe(unit)} failed{why}. {detail}"
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
        warn_at_caller(
            f"excluded from selection on {where}: candidate(s) {names} failed in every "
            "fold (see the records' tracebacks).",
            FitFailedWarning,
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


def report_fit_failures(plan: Plan, records: Mapping[Key, Record]) -> None:
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
    fits = {k: r for k, r in records.items() if KINDS[r.unit.kind].selects}
    summary = summarize_failures(plan, fits)
    folds = ", ".join(str(i) for i in np.flatnonzero(~ok))
    warn_at_caller(
        f"{n_failed} of {ok.size} fits failed (folds {folds}); their scores are "
        f"error_score={plan.error_score!r}. First error: {summary.first_error}. Pass "
        "error_score='raise' to stop at the first failure with its traceback.",
        FitFailedWarning,
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
    times = _fit_values(plan, records, outer, attr)
    ran = race_mask(plan, records, outer)
    if ran is not None:
        times[~ran] = np.nan
    return times


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
        given = {c.index: c.params[name] for c in plan.candidates if name in c.params}
        values = np.ma.MaskedArray(np.empty(n, dtype=_param_dtype(list(given.values()))), mask=True)
        for index, value in given.items():
            values[index] = value
        columns[f"param_{name}"] = values
    return columns


def _param_dtype(values: list[Any]) -> np.dtype[Any]:
    """scikit-learn's dtype of a ``param_*`` column: numbers keep theirs, the rest is object.

    Examples
    --------
    >>> _param_dtype([1, 2]).kind, _param_dtype(["a", "b"]).kind, _param_dtype([[1], [2, 3]]).kind
    ('i', 'O', 'O')
    """
    try:
        array = np.array(values)
    except ValueError:  # sequences of different lengths
        return np.dtype(object)
    return array.dtype if array.dtype.kind != "U" and array.ndim == 1 else np.dtype(object)


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
    results["n_failed_fits"] = _n_failed(plan, records, outer)
    race = race_of(plan, records, outer)
    if race is not None:
        results.update(race.to_columns())
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
    failed = sorted(_failed(records), key=lambda r: r.started)
    counts = Counter(plan.candidates[r.unit.candidate].label for r in failed)
    first = (
        None
        if not failed or failed[0].error is None
        else (f"{failed[0].error.type}: {failed[0].error.message}")
    )
    return FailureSummary(len(failed), len(records), dict(counts), first)


def _failed(records: Mapping[Key, Record]) -> Iterable[Record]:
    """The failed records (of a table: only those are built)."""
    if isinstance(records, RecordTable):
        return records.records(~records.column("ok").astype(bool))
    return (r for r in records.values() if not r.ok)


def count_warnings(plan: Plan, records: Mapping[Key, Record]) -> dict[str, dict[str, int]]:
    """Warnings raised inside fits, counted per candidate and category."""
    counts: dict[str, Counter[str]] = {}
    warned = (
        records.records(records.column("warned").astype(bool))
        if isinstance(records, RecordTable)
        else records.values()
    )
    for r in warned:
        if r.warnings:
            label = plan.candidates[r.unit.candidate].label
            counts.setdefault(label, Counter()).update(r.warnings)
    return {label: dict(c) for label, c in counts.items()}
