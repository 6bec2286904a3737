"""Assemble result objects from a plan and its records (pure; no backend, no store)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.plan.build import Plan
from parcv.plan.kinds import KINDS, Key, kind_order
from parcv.plan.record_table import RecordTable
from parcv.plan.records import Record
from parcv.plan.tokens import token_hex
from parcv.results.aggregate import (
    build_cv_results,
    count_warnings,
    resolve_metrics,
    score_of,
    select_for,
    summarize_failures,
)
from parcv.results.criteria_table import build_criteria_table, criteria_choices
from parcv.results.objects import CVResult, FinalModel, NestedResult, SearchResult
from parcv.results.predictions import StoredPredictions, stored_predictions
from parcv.results.summary import (
    ScoreSummary,
    selection_stability,
    summarize_rows,
    summarize_scores,
)
from parcv.stats.intervals import CVInterval, bbc_cv, naive_cv_interval, ncv_interval

__all__ = [
    "fold_indices",
    "make_cv_result",
    "make_nested_result",
    "make_search_result",
    "nested_intervals",
]


def _sorted_records(records: Mapping[Key, Record]) -> Sequence[Record]:
    """Records by kind, outer fold, inner fold and candidate (of a table: built when read)."""
    order = kind_order()
    if isinstance(records, RecordTable):
        return records.sorted_records(order)
    return sorted(
        records.values(),
        key=lambda r: (
            order[r.unit.kind],
            -1 if r.unit.outer is None else r.unit.outer,
            -1 if r.unit.inner is None else r.unit.inner,
            r.unit.candidate,
        ),
    )


def _fold_columns(plan: Plan, records: Mapping[Key, Record]) -> dict[str, NDArray[np.float64]]:
    """Per-fold times and scores of the one candidate of a cross_validate plan."""
    n_folds = len(plan.inner_folds[None])
    if plan.fast_cv:
        record = records[("fit", None, None, 0)]
        scores = {
            "fit_time": np.full(n_folds, record.fit_time / n_folds),
            "score_time": np.full(n_folds, record.score_time / n_folds),
        }
        for name in plan.scoring.scorers:
            scores[f"test_{plan.scoring.suffix(name)}"] = record.folds.test[name]  # type: ignore[union-attr]
        return scores
    folds = [records[("fit", None, i, 0)] for i in range(n_folds)]
    scores = {
        "fit_time": np.array([r.fit_time for r in folds]),
        "score_time": np.array([r.score_time for r in folds]),
    }
    for name in plan.scoring.scorers:
        suffix = plan.scoring.suffix(name)
        scores[f"test_{suffix}"] = np.array([score_of(plan, r, metric=name) for r in folds])
        if plan.return_train_score:
            scores[f"train_{suffix}"] = np.array(
                [score_of(plan, r, metric=name, which="train") for r in folds]
            )
    return scores


def _search_predictions(
    plan: Plan, records: Mapping[Key, Record], y_true: Any
) -> StoredPredictions | None:
    """Every candidate's stored outputs on the all-data folds (None: none were kept)."""
    folds = plan.inner_folds.get(None)
    if not plan.predictions or folds is None:
        return None
    by_candidate = {}
    for c in range(len(plan.candidates)):
        kept = [records.get(("fit", None, i, c)) for i in range(len(folds))]
        by_candidate[c] = [None if r is None else r.predictions for r in kept]
    tests = [np.asarray(folds[i].test) for i in range(len(folds))]
    return stored_predictions(plan.predictions, tests, by_candidate, y_true)


def _outer_predictions(
    plan: Plan, records: Mapping[Key, Record], y_true: Any
) -> StoredPredictions | None:
    """The outer refits' stored outputs, as "candidate" 0 over the outer folds."""
    if not plan.predictions or not plan.outer_folds:
        return None
    kept = [records.get(("refit", o)) for o in plan.nested_outers]
    tests = [np.asarray(plan.outer_folds[o].test) for o in plan.nested_outers]
    by_fold = [None if r is None else r.predictions for r in kept]
    return stored_predictions(plan.predictions, tests, {0: by_fold}, y_true)


def make_cv_result(plan: Plan, records: Mapping[Key, Record], *, y_true: Any = None) -> CVResult:
    """Assemble a :class:`CVResult` from the records of a one-candidate plan.

    ``y_true`` (the run's target) comes with stored predictions, for the
    tests and tables built on them.

    See Also
    --------
    make_search_result : An example.
    """
    plan = resolve_metrics(plan, records)
    scores = _fold_columns(plan, records)
    summaries = {
        name: summarize_scores(scores[f"test_{plan.scoring.suffix(name)}"])
        for name in plan.scoring.scorers
    }
    interval, naive, note = _intervals(plan, records, scores)
    return CVResult(
        scores, summaries, _sorted_records(records), summarize_failures(plan, records),
        count_warnings(plan, records), fast_cv=plan.fast_cv, interval=interval,
        naive_interval=naive, interval_note=note,
        interval_loss="" if plan.interval is None else plan.interval.loss,
        predictions=_search_predictions(plan, records, y_true),
        estimators=_fold_estimators(plan, records),
    )  # fmt: skip


def _fold_estimators(plan: Plan, records: Mapping[Key, Record]) -> list[Any] | None:
    """The estimator fitted on each fold, when the plan kept them (None: a failed fit)."""
    if not plan.estimators:
        return None
    n_folds = len(plan.inner_folds[None])
    return [records[("fit", None, i, 0)].estimator for i in range(n_folds)]


def fold_indices(plan: Plan) -> dict[str, tuple[NDArray[np.intp], ...]]:
    """Each fold's train and test rows of a one-candidate plan, as scikit-learn's ``indices``.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from parcv.plan.build import build_plan
    >>> from parcv.plan.data import check_dataset
    >>> data = check_dataset(np.arange(8.0).reshape(4, 2), np.arange(4.0))
    >>> plan = build_plan(Ridge(), None, data, inner=2, refit=False)
    >>> [t.tolist() for t in fold_indices(plan)["test"]]
    [[0, 1], [2, 3]]
    """
    folds = plan.inner_folds[None]
    return {
        "train": tuple(np.asarray(f.train) for f in folds),
        "test": tuple(np.asarray(f.test) for f in folds),
    }


def _intervals(
    plan: Plan, records: Mapping[Key, Record], scores: dict[str, NDArray[np.float64]]
) -> tuple[CVInterval | None, CVInterval | None, str]:
    """The nested CV interval of the error, the naive one of the same CV, and why one is missing.

    Both are on the loss scale: the mean squared error, the error rate (0-1 loss), ...
    """
    request, ncv = plan.interval, plan.ncv
    if request is None or ncv is None:
        return None, None, ""
    test = scores[f"test_{plan.scoring.suffix(next(iter(plan.scoring.scorers)))}"]
    fold_losses = 1.0 - test if request.metric == "accuracy" else -test
    naive = naive_cv_interval(fold_losses, confidence=request.confidence)
    losses = {}
    for i, fit in enumerate(ncv.units):
        record = records.get(("ncv", i))
        if record is None or not record.ok or record.folds is None:
            n_bad = sum(1 for j in range(ncv.n_fits) if not _usable(records.get(("ncv", j))))
            return (
                None,
                naive,
                (
                    f"the nested CV interval is not available: {n_bad} of its {ncv.n_fits} fits "
                    "failed or did not run (see the failures)"
                ),
            )
        losses[fit] = record.folds.test["loss"]
    # One naive interval per result: the run's own CV's (its estimate is -mean test score,
    # its se the summary's), not the one ncv_interval computes on its own first random
    # fold assignment, which differs from it and would leave two "naive" intervals.
    interval = replace(ncv_interval(ncv.assemble(losses), request.confidence), naive=naive)
    return interval, naive, ""


def _usable(record: Record | None) -> bool:
    return record is not None and record.ok and record.folds is not None


_NO_FINAL = (
    "no final model: the search ran with refit=False, or its final refit has not run yet. "
    "Run it with refit=True (and resume=True to reuse the stored fits)."
)


def _final_model(plan: Plan, final: Record | None) -> FinalModel:
    """The final record's model: fitted, a loader of a saved one, or why there is none."""
    if final is None:
        return FinalModel(reason=_NO_FINAL)
    if isinstance(final.estimator, FinalModel):
        return final.estimator
    return FinalModel(estimator=final.estimator, reason=_NO_FINAL)


def make_search_result(
    plan: Plan, records: Mapping[Key, Record], *, y_true: Any = None, best: int | None = None
) -> SearchResult:
    """Assemble a :class:`SearchResult` from the all-data records of a plan.

    Parameters
    ----------
    plan : Plan
    records : mapping of key to Record
    best : int or None, default=None
        The row the caller chose (a part of a search in rounds, whose search
        chooses over all its rounds); None: the refit's candidate, or the
        plan's selection (an error when every candidate failed).

    Returns
    -------
    SearchResult

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from parcv.engine.backends import SerialBackend
    >>> from parcv.plan.data import check_dataset
    >>> from parcv.plan.build import build_plan
    >>> from parcv.engine.runner import run_plan
    >>> data = check_dataset(np.arange(20.0).reshape(10, 2), np.arange(10.0))
    >>> plan = build_plan(Ridge(), {"alpha": [0.1, 10.0]}, data, inner=3)
    >>> make_search_result(plan, run_plan(plan, data, SerialBackend())).best_index_
    0
    """
    plan = resolve_metrics(plan, records)
    cv_results = build_cv_results(plan, records, None)
    final = records.get(("final",))
    # The refit records which candidate was selected; recompute only when there was no refit.
    if best is None:
        best = final.unit.candidate if final is not None else select_for(plan, records, None)
    metric = plan.scoring.refit
    mine = (
        records.of_outer(None)
        if isinstance(records, RecordTable)
        else {k: r for k, r in records.items() if r.unit.outer is None}
    )
    n_splits = len(plan.inner_folds[None])
    # From cv_results_'s split columns: fold_scores again would read every record.
    summaries: dict[str, Sequence[ScoreSummary]] = {
        name: summarize_rows(_split_scores(cv_results, plan.scoring.suffix(name), n_splits))
        for name in plan.scoring.scorers
    }
    return SearchResult(
        cv_results_=cv_results,
        best_index_=best,
        best_params_=dict(plan.candidates[best].params),
        best_score_=float(cv_results[f"mean_test_{plan.scoring.suffix(metric)}"][best]),
        final_model=_final_model(plan, final),
        n_splits_=len(plan.inner_folds[None]),
        refit_metric=metric,
        summaries=summaries,
        records=_sorted_records(mine),
        failures=summarize_failures(plan, mine),
        warning_counts=count_warnings(plan, mine),
        candidates=plan.candidates,
        metrics=tuple(plan.scoring.scorers),
        multimetric=plan.scoring.multimetric,
        fast_cv=plan.fast_cv,
        criteria_table=build_criteria_table(plan, records, None),
        bbc=_bbc(plan, records, best),
        predictions=_search_predictions(plan, records, y_true),
        splits=plan.inner_folds[None],
        iterations=plan.iterations,
        paths=plan.paths,
    )


def _split_scores(cv_results: dict[str, Any], suffix: str, n_splits: int) -> NDArray[np.float64]:
    """The (n_candidates, n_splits) test scores ``cv_results_`` holds, as fold_scores gives them."""
    return np.column_stack([cv_results[f"split{i}_test_{suffix}"] for i in range(n_splits)])


def _bbc(plan: Plan, records: Mapping[Key, Record], best: int) -> CVInterval | None:
    """BBC-CV of the all-data search from its fits' out-of-fold per-sample losses.

    ``details["raw"]`` is the selected candidate's own out-of-fold mean loss (its
    optimistic CV error). None when not asked for, or when a fit failed (its
    losses are missing).
    """
    request = plan.bbc
    if request is None:
        return None
    folds = plan.inner_folds[None]
    values = np.full((plan.n_samples, len(plan.candidates)), np.nan)
    fold_ids = np.empty(plan.n_samples, dtype=np.intp)
    for i, fold in enumerate(folds):
        fold_ids[fold.test] = i
        for c in range(len(plan.candidates)):
            record = records.get(("fit", None, i, c))
            if record is None or record.folds is None or "loss" not in record.folds.test:
                return None
            values[fold.test, c] = record.folds.test["loss"]
    found = bbc_cv(
        values,
        greater_is_better=False,
        n_bootstrap=request.n_bootstrap,
        confidence=request.confidence,
        random_state=request.random_state,
        fold_ids=fold_ids,
    )
    return replace(found, details={**found.details, "raw": float(np.mean(values[:, best]))})


def _outer_choices(plan: Plan, records: Mapping[Key, Record]) -> dict[str, list[int | None]]:
    """Per method, the candidate it selects on each outer fold's training part."""
    if plan.criteria is None:
        return {}
    per_fold = [criteria_choices(plan, records, o) for o in plan.nested_outers]
    methods = dict.fromkeys(m for choice in per_fold for m in choice)
    return {m: [choice.get(m) for choice in per_fold] for m in methods}


def make_nested_result(
    plan: Plan, records: Mapping[Key, Record], *, y_true: Any = None
) -> NestedResult:
    """Assemble a :class:`NestedResult` from every record of a nested plan.

    The outer folds of the nested CV interval's selections (after the nested
    CV's own, :attr:`~parcv.plan.build.Plan.nested_outers`) give its
    ``interval``; they are not outer folds of the result.

    See Also
    --------
    make_search_result : An example.
    """
    plan = resolve_metrics(plan, records)
    refits = [records[("refit", o)] for o in plan.nested_outers]
    outer_scores = {
        name: np.array([score_of(plan, r, metric=name) for r in refits])
        for name in plan.scoring.scorers
    }
    chosen = [r.unit.candidate for r in refits]
    labels = [c.label for c in plan.candidates]
    final = make_search_result(plan, records, y_true=y_true) if plan.final else None
    intervals = nested_intervals(plan, records, outer_scores, final)
    return NestedResult(
        outer_scores=outer_scores,
        estimate={name: summarize_scores(s) for name, s in outer_scores.items()},
        chosen=chosen,
        chosen_params=[dict(plan.candidates[c].params) for c in chosen],
        stability=selection_stability(chosen, labels),
        inner_cv_results=[build_cv_results(plan, records, o) for o in plan.nested_outers],
        final=final,
        refit_metric=plan.scoring.refit,
        records=_sorted_records(records),
        failures=summarize_failures(plan, records),
        warning_counts=count_warnings(plan, records),
        outer_folds_digest=_folds_digest(plan),
        fast_cv=plan.fast_cv,
        criteria_table=None if final is None else final.criteria_table,
        criteria_choices=_outer_choices(plan, records),
        outer_predictions=_outer_predictions(plan, records, y_true),
        **intervals,
    )


def nested_intervals(
    plan: Plan,
    records: Mapping[Key, Record],
    outer_scores: dict[str, NDArray[np.float64]],
    final: SearchResult | None,
    *,
    n_fits: int | None = None,
) -> dict[str, Any]:
    """A nested CV's interval of its error (NCV, else BBC-CV) and the naive one beside it.

    On the loss scale, as :func:`make_cv_result`'s; empty without an interval.
    ``records`` holds (at least) the refits of the interval's selections, keyed
    ``("refit", o)`` for the outer folds after :attr:`Plan.nested_outers`;
    ``n_fits``: the fits those selections took (None: counted from ``records``,
    where they are the units of those outer folds). A nested CV in rounds
    (:mod:`parcv.results.rounds`) passes both.

    Returns
    -------
    dict
        ``interval``, ``naive_interval``, ``interval_note`` and ``interval_loss``,
        as :class:`~parcv.results.objects.NestedResult` takes them.
    """
    bbc = None if final is None else final.bbc
    request = plan.interval or plan.bbc
    if request is None:
        return {}
    scores = outer_scores[plan.scoring.refit]
    fold_losses = 1.0 - scores if request.metric == "accuracy" else -scores
    naive = naive_cv_interval(fold_losses, confidence=request.confidence)
    found: CVInterval | None
    note = ""
    if plan.interval is not None:
        found, note = _selection_interval(plan, records, n_fits)
    elif bbc is not None:
        found = bbc
    else:
        found = None
        note = "the BBC-CV interval is not available: a fit on all data failed or did not run"
    return {
        "interval": None if found is None else replace(found, naive=naive),
        "naive_interval": naive,
        "interval_note": note,
        "interval_loss": request.loss,
    }


def _selection_interval(
    plan: Plan, records: Mapping[Key, Record], n_fits: int | None = None
) -> tuple[CVInterval | None, str]:
    """The NCV interval of a nested CV's selection, from its selections' refit losses.

    ``n_fits`` counts every fit it took: each selection's inner fits and refit
    (``details["n_selections"]``: how many selections); None: count them in ``records``.
    """
    ncv, request = plan.ncv, plan.interval
    if ncv is None or request is None:
        return None, ""
    first = len(plan.nested_outers)
    kept = [records.get(("refit", first + i)) for i in range(ncv.n_fits)]
    losses = {}
    for fit, record in zip(ncv.units, kept, strict=True):
        if record is None or not _usable(record) or "loss" not in record.folds.test:  # type: ignore[union-attr]
            n_bad = sum(1 for r in kept if r is None or not _usable(r))
            return None, (
                f"the nested CV interval is not available: {n_bad} of its {ncv.n_fits} "
                "selections failed or did not run (see the failures)"
            )
        losses[fit] = record.folds.test["loss"]  # type: ignore[union-attr]
    found = ncv_interval(ncv.assemble(losses), request.confidence)
    if n_fits is None:
        outers = (KINDS[key[0]].unit_fields(key)["outer"] for key in records)
        n_fits = sum(1 for o in outers if o is not None and o >= first)
    details = {**found.details, "n_selections": float(ncv.n_fits)}
    return replace(found, n_fits=n_fits, details=details), ""


def _folds_digest(plan: Plan) -> str:
    """Token of the outer folds: two results are compared fold by fold only when equal."""
    return token_hex([(plan.outer_folds[o].train, plan.outer_folds[o].test)
                      for o in plan.nested_outers])  # fmt: skip
