"""Pure views of a plan's records: score matrices, selections, cv_results_."""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import (
    FitFailedError,
    FitFailedWarning,
    Worded,
    error_score_setting,
    warn_at_caller,
)
from parcv.plan.build import Plan
from parcv.plan.iterations import path_stopped
from parcv.plan.kinds import Key, kind_of
from parcv.plan.record_table import RecordTable
from parcv.plan.records import Record
from parcv.results.summary import rank_means, select_candidate
from parcv.stats.racing import RaceResult, run_race

__all__ = [
    "fold_scores",
    "fit_ok",
    "race_mask",
    "race_of",
    "failure_message",
    "raised_error",
    "select_for",
    "build_cv_results",
    "param_columns",
    "reemit_unit_warnings",
    "report_fit_failures",
    "resolve_metrics",
    "score_of",
    "warn_non_finite",
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
        matrix = records.fit_matrix(outer, shape, column)
        if column.startswith(("test:", "train:")) and isinstance(plan.error_score, float):
            # A failed fit may hold no score of the metric: it reads as error_score.
            failed = (records.fit_matrix(outer, shape, "ok") == 0) & np.isnan(matrix)
            which, metric = column.split(":", 1)
            for c, i in zip(*np.nonzero(failed), strict=True):
                record = records[("fit", outer, int(i), int(c))]
                matrix[c, i] = score_of(plan, record, metric=metric, which=which)
        return matrix
    value = _FIT_VALUE.get(column)
    if value is None:
        which, metric = column.split(":", 1)
        value = partial(score_of, plan, metric=metric, which=which)
    grid = _fit_grid(plan, records, outer)
    values = (np.nan if r is None else value(r) for r in grid)
    return np.fromiter(values, dtype=np.float64, count=len(grid)).reshape(shape)


def score_of(plan: Plan, record: Record, *, metric: str, which: str = "test") -> float:
    """A record's score of ``metric``; one it lacks is ``error_score`` if it failed, else NaN.

    A failed fit of a callable ``scoring`` that returns a dict holds no metric
    by name (they are known from the fits that scored): as scikit-learn's
    ``_insert_error_scores``, each is ``error_score``.
    """
    scores = record.test_scores if which == "test" else record.train_scores
    found = scores.get(metric)
    if found is not None:
        return found
    failed = not record.ok and isinstance(plan.error_score, float)
    return plan.error_score if failed else math.nan  # type: ignore[return-value]


def resolve_metrics(plan: Plan, records: Mapping[Key, Record]) -> Plan:
    """The plan with the metrics a callable ``scoring`` named by returning a dict.

    The names are the keys of the first fit (in plan order, whatever order the
    records arrived in) that scored; with a metric per scorer, the plan as is.
    """
    if plan.scoring.multimetric or plan.fast_cv:
        return plan
    for unit in plan.units:
        record = records.get(unit.key)
        if record is not None and record.ok and kind_of(unit).selects:
            names = list(record.test_scores)
            if names and names != ["score"]:
                return replace(plan, scoring=plan.scoring.named(names))
            return plan
    return plan


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


def raised_error(plan: Plan, record: Record) -> Exception:
    """The error a failed unit raises with ``error_score="raise"``: the unit's own exception.

    As scikit-learn, the estimator's or scorer's exception is raised with its
    type and message, and parcv's context (candidate, fold, the worker's
    traceback) as a note. A failure without its exception (a worker that died,
    a timeout, an exception that does not pickle) raises :class:`FitFailedError`.
    """
    original = None if record.error is None else record.error.original()
    if not isinstance(original, Exception):
        return FitFailedError(failure_message(plan, record))
    original.add_note(f"parcv: {failure_message(plan, record)}")
    return original


def failed_everywhere(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> list[int]:
    """Candidates whose every fit on this outer fold failed."""
    return [int(c) for c in np.flatnonzero(~fit_ok(plan, records, outer).any(axis=1))]


def select_for(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> int:
    """Select the candidate of one outer fold (``None``: all data) from its fit records.

    Candidates that failed in every fold are excluded, whatever ``error_score``
    put in their place (:func:`report_fit_failures` names them). When every
    candidate's mean score is NaN but some fit succeeded, the first candidate
    is selected, as scikit-learn's ``GridSearchCV`` does (its ``cv_results_``
    show the NaN, and a ``UserWarning`` says so). A plan of one candidate and
    no inner fold (the refit of a winner a strategy chose) selects it.
    """
    if len(plan.candidates) == 1 and not plan.inner_folds[outer]:
        return 0
    scores = fold_scores(plan, records, outer, plan.scoring.refit)
    excluded = failed_everywhere(plan, records, outer)
    scores[excluded] = np.nan
    try:
        return select_candidate(scores, [c.params for c in plan.candidates], plan.selection)
    except ValueError as err:
        where = "all data" if outer is None else f"outer fold {outer}"
        if len(excluded) < len(plan.candidates):
            return 0  # no fit failed everywhere: the scores are NaN, as scikit-learn picks
        raise all_failed_error(
            plan, records, outer, f"every candidate failed on {where}", "nothing can be selected"
        ) from err


def _fits(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> list[Record]:
    """The fit records that select on ``outer``, in plan order."""
    keys = plan.fit_record_keys(outer)
    return [records[k] for k in keys if k in records]


def failure_details(failed: Iterable[Record]) -> str:
    """scikit-learn's list of failures: each distinct error once, with its count.

    Errors are told apart by type and message (scikit-learn: by traceback, which in
    parcv can differ for one error, e.g. a Pipeline step fitted once for several
    units); each shows the traceback of its first failure.
    """
    counts: Counter[tuple[str, str]] = Counter()
    shown: dict[tuple[str, str], str] = {}
    for r in failed:
        if r.error is not None:
            key = (r.error.type, r.error.message)
            counts[key] += 1
            shown.setdefault(key, r.error.traceback or f"{key[0]}: {key[1]}")
    delimiter = "-" * 80 + "\n"
    return "\n".join(
        f"{delimiter}{n} fits failed with the following error:\n{shown[key]}"
        for key, n in counts.items()
    )


def all_failed_error(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, what: str, outcome: str
) -> FitFailedError:
    """The error of a run whose every fit on ``outer`` failed, worded as scikit-learn's.

    A ``ValueError`` (as scikit-learn's): "All the N fits failed. ...", then
    parcv's line (``what``: count; ``outcome``), then each distinct failure.
    """
    failed = sorted((r for r in _fits(plan, records, outer) if not r.ok), key=lambda r: r.unit.key)
    return FitFailedError(Worded((
        f"\nAll the {len(failed)} fits failed.\n"
        "It is very likely that your model is misconfigured.\n"
        "You can try to debug the error by setting ", error_score_setting("raise"), ".\n"
        f"parcv: {what}: {len(failed)} failed fits; {outcome}.\n\n"
        f"Below are more details about the failures:\n{failure_details(failed)}",
    )))  # fmt: skip


def report_fit_failures(plan: Plan, records: Mapping[Key, Record], *, alone: bool = True) -> None:
    """Warn about failed fits and scorers as scikit-learn does; raise when every fit failed.

    For each outer fold (``None``: all data) whose fits partly failed, a
    ``FitFailedWarning`` in scikit-learn's words ("N fits failed out of a
    total of M. ...") with parcv's line (the failed folds of one candidate,
    or the candidates excluded from selection) and each distinct failure.
    A scorer that raised on a fit that succeeded gives scikit-learn's
    ``UserWarning`` ("Scoring failed. ..."), once per distinct error with its
    count. A run with every fit failed is an error. Warnings raised inside the
    units (a ``ConvergenceWarning`` ...) are :func:`reemit_unit_warnings`'s, once
    for all the plans of a run.

    With ``alone=False`` the plan is one part of a search in rounds (a
    sampler's trial): a part whose every fit failed is warned about as any
    other failure, its search having nothing to select only when every part
    failed (which the driver checks over all of them).
    """
    columns = isinstance(records, RecordTable) and not (plan.fast_cv or plan.paths or plan.prefixes)
    fit_keys = {} if columns else plan.fit_record_keys_by_outer()
    for outer in plan.inner_folds:
        ran = race_mask(plan, records, outer)
        if columns:
            n_fits, failed = _fit_failures(plan, records, outer, ran)  # type: ignore[arg-type]
        else:
            fits = [records[k] for k in fit_keys.get(outer, ()) if k in records]
            fits = [r for r in fits if _ran(ran, r)]
            n_fits, failed = len(fits), [r for r in fits if not r.ok]
        if alone and n_fits and len(failed) == n_fits:
            where = "all data" if outer is None else f"outer fold {outer}"
            what = (
                "cross_validate failed on every fold"
                if len(plan.candidates) == 1
                else f"every candidate failed on {where}"
            )
            raise all_failed_error(plan, records, outer, what, "nothing was scored")
        if failed:
            _warn_fit_failures(plan, records, outer, (len(failed), n_fits), failed)
        if n_fits and plan.scoring.refit in plan.scoring.scorers:
            _warn_nothing_finite(plan, records, outer)
    _warn_score_failures(plan, records)


def _fit_failures(
    plan: Plan, records: RecordTable, outer: int | None, ran: NDArray[np.bool_] | None
) -> tuple[int, list[Record]]:
    """The fits of ``outer`` that count (a race's dropped folds do not), and the failed ones.

    Read from the table's ``ok`` column: only the failed records are built, in
    plan order (inner fold, then candidate).
    """
    shape = (len(plan.candidates), len(plan.inner_folds[outer]))
    ok = records.fit_matrix(outer, shape, "ok")
    counted = ~np.isnan(ok) if ran is None else ~np.isnan(ok) & ran
    inner, candidate = np.nonzero((counted & (ok == 0)).T)
    failed = [records[("fit", outer, i, c)]
              for i, c in zip(inner.tolist(), candidate.tolist(), strict=True)]  # fmt: skip
    return int(counted.sum()), failed


def reemit_unit_warnings(tables: Iterable[Mapping[Key, Record]]) -> None:
    """Warn once per category raised inside the units one run (a call of the user's) computed.

    ``tables`` are the records of every plan the call ran (a search in rounds
    runs one per part of each round, bracket and outer fold): a category is
    shown once for them all, with its first message (tables in order, records
    in key order, so alike on every backend) and how many times the call's
    fits raised it. Records read from a store are not counted: their warnings
    were shown when they were computed.
    """
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for records in tables:
        if isinstance(records, RecordTable):
            if not records.computed_now:
                continue
            warned = list(records.records(records.column("warned").astype(bool)))
        else:
            warned = [r for r in records.values() if r.warnings or r.first_warnings]
        for record in sorted(warned, key=lambda r: repr(r.unit.key)):
            counts.update(record.warnings)
            for path, text in record.first_warnings.items():
                first.setdefault(path, text)
    for path, text in first.items():
        category = _warning_category(path)
        n = counts.get(category.__name__, 1)
        times = "once" if n == 1 else f"{n} times"
        shown = "" if n == 1 else "; shown once"
        note = f"(parcv: raised {times} inside the fits of this run{shown}.)"
        warn_at_caller(f"{text}\n{note}", category)


def _warning_category(path: str) -> type[Warning]:
    """The warning class ``module:QualName`` names (``UserWarning`` if it cannot be found)."""
    module, _, qualname = path.partition(":")
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


def _warn_nothing_finite(plan: Plan, records: Mapping[Key, Record], outer: int | None) -> None:
    """Say so when every candidate's mean score is NaN: :func:`select_for` took the first.

    Not for one point (a pruned trial's window of checkpoints): nothing was chosen.
    """
    if plan.n_points < 2:
        return
    scores = fold_scores(plan, records, outer, plan.scoring.refit)
    if not np.isnan(scores.mean(axis=1)).all():
        return
    where = "all data" if outer is None else f"outer fold {outer}"
    warn_at_caller(
        f"every candidate's mean score (metric {plan.scoring.refit!r}) on {where} is NaN: "
        f"the first, {plan.candidates[0].label}, is selected, as scikit-learn's GridSearchCV "
        "selects. A scorer returned NaN in some fold (e.g. R^2 on a one-sample test fold), or "
        "fits failed; use a scoring that is defined on every test fold of this data.",
        UserWarning,
    )


def _ran(ran: NDArray[np.bool_] | None, record: Record) -> bool:
    """Whether a fit record counts: a race (``ran``, its fold's :func:`race_mask`) may have
    dropped its candidate before its fold."""
    inner = record.unit.inner
    return ran is None or inner is None or bool(ran[record.unit.candidate, inner])


def _warn_fit_failures(
    plan: Plan,
    records: Mapping[Key, Record],
    outer: int | None,
    counts: tuple[int, int],
    failed: list[Record],
) -> None:
    where = "" if outer is None else f" (outer fold {outer})"
    if len(plan.candidates) == 1:
        folds = ", ".join(str(r.unit.inner) for r in failed)
        detail = f"{counts[0]} of {counts[1]} fits failed (folds {folds})"
    else:
        excluded = failed_everywhere(plan, records, outer)
        names = ", ".join(plan.candidates[c].label for c in excluded)
        detail = (
            f"candidate(s) {names} failed in every fold and are excluded from selection"
            if excluded
            else "no candidate failed in every fold"
        )
    text = Worded((
        f"\n{counts[0]} fits failed out of a total of {counts[1]}{where}.\n"
        "The score on these train-test partitions for these parameters will be set to "
        f"{plan.error_score}.\n"
        "If these failures are not expected, you can try to debug them by setting ",
        error_score_setting("raise"), f".\nparcv: {detail}; their scores are ",
        error_score_setting(plan.error_score), ".\n\n"
        f"Below are more details about the failures:\n{failure_details(failed)}",
    ))  # fmt: skip
    warn_at_caller(FitFailedWarning(text), FitFailedWarning)


def _warn_score_failures(plan: Plan, records: Mapping[Key, Record]) -> None:
    """scikit-learn's "Scoring failed" warning, once per distinct error, with its count."""
    errors: Counter[tuple[str, str]] = Counter()
    for record in _with_score_errors(records):
        for key, info in record.score_errors.items():
            errors[(key, info.traceback)] += 1
    for (key, tb), n in errors.items():
        which, name = key.split(":", 1)
        warn_at_caller(
            "Scoring failed. The score on this train-test partition for these parameters will "
            f"be set to {plan.error_score}. Details: \n{tb}\n"
            f"parcv: scorer {name!r} failed this way on the {which} rows of {n} fit(s); "
            "their other scores are kept.",
            UserWarning,
        )


def warn_non_finite(cv_results: Mapping[str, Any]) -> None:
    """scikit-learn's ``UserWarning`` for each ``mean_test_*``/``mean_train_*`` with a non-finite.

    Candidates a race dropped are left out (their means are NaN by design).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_non_finite({"mean_test_score": np.array([1.0, np.nan])})
    >>> str(caught[0].message)
    'One or more of the test scores are non-finite: [ 1. nan]'
    """
    # A candidate a race dropped has NaN means by design: not a score that went wrong; so
    # has a checkpoint after its path stopped early.
    dropped = cv_results.get("race_eliminated_after")
    kept: Any = slice(None) if dropped is None else np.asarray(dropped) < 0
    stopped = cv_results.get("path_stopped")
    if stopped is not None:
        kept = ~np.asarray(stopped, dtype=bool)
    for key, means in cv_results.items():
        name = key.removeprefix("mean_")
        scores = key.startswith("mean_") and name.startswith(("train_", "test_"))
        if scores and np.any(~np.isfinite(np.asarray(means)[kept])):
            warn_at_caller(
                f"One or more of the {name.split('_')[0]} scores are non-finite: {means}",
                UserWarning,
            )


def _with_score_errors(records: Mapping[Key, Record]) -> Iterable[Record]:
    if isinstance(records, RecordTable):
        # A record with a failed scorer is kept whole by a table that grew in a run.
        ok = records.column("ok").astype(bool)
        found = records.records(ok).built() if records.computed_now else records.records(ok)
        return (r for r in found if r.score_errors)
    return (r for r in records.values() if r.score_errors)


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
    return param_columns([c.params for c in plan.candidates])


def param_columns(params: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``param_*`` columns of ``cv_results_`` for candidates with these parameters.

    Masked arrays, as scikit-learn's: masked where a candidate does not set the name.

    Examples
    --------
    >>> param_columns([{"a": 1}, {"b": "x"}])["param_a"].mask.tolist()
    [False, True]
    """
    names = sorted({name for p in params for name in p})
    n = len(params)
    columns: dict[str, Any] = {}
    for name in names:
        given = {i: p[name] for i, p in enumerate(params) if name in p}
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
    if plan.iterations is not None:
        refit = f"mean_test_{plan.scoring.suffix(plan.scoring.refit)}"
        stopped = path_stopped(plan.iterations, plan.paths, results[refit])
        unscored = _unscored_tail(plan.paths, _fit_values(plan, records, outer, "ok"))
        results["path_stopped"] = stopped | unscored
        # A checkpoint never fitted because its path stopped is not a failed fit.
        results["n_failed_fits"] = np.where(unscored, 0, results["n_failed_fits"])
    return results


def _unscored_tail(paths: Sequence[Sequence[int]], ok: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Per candidate: a checkpoint after the last one its path has a record of, with none itself.

    A strategy in rounds that scores windows of checkpoints (early stopping, or one's own)
    stopped such a path there: its later checkpoints were never fitted, by design.

    Examples
    --------
    >>> ok = np.array([[1.0], [0.0], [np.nan], [np.nan]])
    >>> _unscored_tail([(0, 1, 2, 3)], ok).tolist()
    [False, False, True, True]
    """
    never: NDArray[np.bool_] = np.asarray(np.isnan(ok).all(axis=1), dtype=np.bool_)
    tail: NDArray[np.bool_] = np.zeros(never.shape[0], dtype=np.bool_)
    for path in paths:
        scored = [j for j, c in enumerate(path) if not never[c]]
        if scored:
            after = list(path[scored[-1] + 1 :])
            tail[after] = never[after]
    return tail


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
