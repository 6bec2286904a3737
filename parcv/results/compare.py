"""Significance tests applied to result objects: candidates and procedures."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import did_you_mean
from parcv.plan.kinds import KINDS
from parcv.plan.record_table import RecordList
from parcv.plan.records import Record, Unit
from parcv.plan.splits import Fold
from parcv.results.predictions import OutOfFold, no_predictions
from parcv.results.trials import complete_trial_rows, count_trials
from parcv.stats import (
    ComparisonTable,
    TestResult,
    compare,
    compare_all,
    holm_adjust,
    holm_best_vs_rest,
)
from parcv.stats.mcnemar import CochranQResult, cochran_q_test, mcnemar_test
from parcv.stats.multiple import best_vs_rest_columns as _best_vs_rest_columns
from parcv.stats.result import UndefinedComparison

if TYPE_CHECKING:
    from parcv.results.objects import NestedResult, SearchResult

__all__ = [
    "candidate_index",
    "cochran_q_candidates",
    "confusion_table",
    "compare_candidates",
    "compare_all_candidates",
    "best_vs_rest",
    "best_vs_rest_columns",
    "best_vs_rest_marked",
    "compare_procedures",
]

# Tests that correct for overlapping training sets need the fold sizes.
_SIZE_AWARE = ("corrected_t", "bayesian_correlated_t")


def _fold_sizes(records: Sequence[Record], outer: int | None) -> tuple[float, float]:
    def first_candidate(unit: Unit) -> bool:
        return KINDS[unit.kind].selects and unit.outer == outer and unit.candidate == 0

    if isinstance(records, RecordList):  # read from a store: build only these records
        fits = records.of_fold([k for k, kind in KINDS.items() if kind.selects], outer, 0)
    else:
        fits = [r for r in records if first_candidate(r.unit)]
    return (float(np.mean([r.n_train for r in fits])), float(np.mean([r.n_test for r in fits])))


def _options(test: Any, sizes: tuple[float, float], options: dict[str, Any]) -> dict[str, Any]:
    if isinstance(test, str) and test in _SIZE_AWARE:
        return {"n_train": sizes[0], "n_test": sizes[1], **options}
    return options


def candidate_index(result: SearchResult, candidate: int | str) -> int:
    """The index of a candidate named by index, label, id or a part of its label.

    A part of the label names a candidate when it matches that candidate only: some of
    its ``name=value`` parts (``"C=1"``), or any text of the label from the start of a
    word, a number written whole (``"RandomForest"``, ``"model=LogisticRegression"``,
    ``"LogisticRegression(max_iter=2000)"``, ``"max_depth=3"``). Whole ``name=value``
    parts are tried first, so ``"C=1"`` names ``C=1`` beside ``C=1.5``.
    """
    return _index(result, candidate)


def _index(result: SearchResult, candidate: int | str) -> int:
    params = result.cv_results_["params"]
    number = isinstance(candidate, (int, np.integer)) and not isinstance(candidate, bool)
    if number and 0 <= int(candidate) < len(params):
        return int(candidate)  # no labels nor ids made: a report asks thousands of times
    labels = [r.label for r in result.candidates]
    if isinstance(candidate, str) and candidate in labels:
        return labels.index(candidate)
    ids = [r.id for r in result.candidates]
    if isinstance(candidate, str) and candidate in ids:
        return ids.index(candidate)
    if isinstance(candidate, str) and _parts(candidate):
        for matches in (_has_parts, _has_words):
            hits = [c for c, label in enumerate(labels) if matches(candidate, label)]
            if len(hits) == 1:
                return hits[0]
            if hits:
                names = ", ".join(repr(labels[c]) for c in hits[:6])
                more = f" and {len(hits) - 6} more" if len(hits) > 6 else ""
                raise ValueError(
                    f"candidate {candidate!r} matches {len(hits)} candidates: {names}{more}. "
                    "Name more parameters (e.g. the whole label), or pass an index or id."
                )
    raise ValueError(
        f"candidate {candidate!r} is not in this result; use an index 0..{len(params) - 1}, "
        f"a label such as {labels[0]!r}, or an id such as {ids[0]!r}. "
        + did_you_mean(candidate, labels)
    )


def _has_parts(name: str, label: str) -> bool:
    """Every ``name=value`` part of ``name`` is a whole part of ``label``."""
    return _parts(name) <= _parts(label)


# A part of a label names a candidate from the start of a word (a name or a number; after a
# nested parameter's "__" too), so "Forest" is no part of "RandomForestClassifier", and, when
# it ends in a number, to the end of that number, so "C=1" is no part of "C=10" or "C=1.5".
_START = r"(?:(?<![\w.])|(?<=__))"
_NUMBER_END = r"(?![\d.])"


def _has_words(name: str, label: str) -> bool:
    """Each top-level part of ``name`` is in one part of ``label``, from a word's start.

    Examples
    --------
    >>> label = "model=RandomForestClassifier(n_estimators=20), model__max_depth=3"
    >>> [_has_words(n, label) for n in ("RandomForest", "model=RandomForestClassifier",
    ...  "RandomForestClassifier(n_estimators=20)", "Forest", "max_depth=3, n_estimators=20")]
    [True, True, True, False, True]
    >>> _has_words("alpha=1", "alpha=10"), _has_words("Ridge", "model=KernelRidge()")
    (False, False)
    """
    parts = _parts(label)

    def found(want: str) -> bool:
        end = _NUMBER_END if want[-1].isdigit() or want[-1] == "." else ""
        pattern = re.compile(_START + re.escape(want) + end)
        return any(pattern.search(part) for part in parts)

    return all(found(want) for want in _parts(name))


def _parts(label: str) -> set[str]:
    """The ``name=value`` parts of a label, split at top-level commas.

    Examples
    --------
    >>> sorted(_parts("C=1, model=SVC(C=1, gamma=2)"))
    ['C=1', 'model=SVC(C=1, gamma=2)']
    """
    parts, depth, start = [], 0, 0
    for i, char in enumerate(label):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(label[start:i])
            start = i + 1
    parts.append(label[start:])
    return {p.strip() for p in parts if p.strip()}


def _check_metric(metric: Any, metrics: Sequence[str], whose: str = "this result") -> None:
    """``metric`` must name one of the metrics a result holds."""
    if metric not in metrics:
        one = " (single-metric results name their metric 'score')" if "score" in metrics else ""
        raise ValueError(
            f"metric must be one of the metrics of {whose} {list(metrics)!r}{one}; got "
            f"metric={metric!r}. {did_you_mean(metric, metrics, end=' ')}Pass one of them, or "
            "metric=None for the refit metric."
        )


def candidate_scores(result: SearchResult, metric: str | None = None) -> NDArray[np.float64]:
    """Per-fold scores, shape (n_candidates, n_splits), of one metric."""
    metric = result.refit_metric if metric is None else metric
    _check_metric(metric, result.metrics)
    suffix = metric if result.multimetric else "score"
    keys = [f"split{i}_test_{suffix}" for i in range(result.n_splits_)]
    return np.column_stack([result.cv_results_[k] for k in keys]).astype(np.float64)


def _compared_rows(result: SearchResult, what: str) -> tuple[NDArray[np.intp] | None, str]:
    """The rows a table of comparisons reads (None: every candidate), and what it leaves out.

    A pruned sampler's search compares its complete trials, each at its last
    checkpoint (the value its study holds, the row it can select): a pruned
    trial's rows are checkpoints of a model its pruner stopped early, so a test
    against one would not tell how its parameters compare, and the earlier
    checkpoints of a complete trial are its way to its value, not competitors.

    Raises
    ------
    ValueError
        Fewer than two trials completed: there is no pair to compare.
    """
    rows = complete_trial_rows(result)
    if rows is None:
        return None, ""
    counts = count_trials(result)[0]
    if len(rows) < 2:
        raise ValueError(
            f"{what} compares the complete trials of a pruned sampler's search (each at its "
            f"last checkpoint); this search has {counts.text()}, so there is no pair to "
            "compare. Run more trials (n_trials=) or a pruner that stops fewer, or name two "
            "rows of cv_results_ with compare(a, b)."
        )
    return rows, counts.left_out()


def compare_candidates(
    result: SearchResult,
    a: int | str,
    b: int | str,
    test: Any = "corrected_t",
    *,
    metric: str | None = None,
    **options: Any,
) -> TestResult:
    """Test whether candidates ``a`` and ``b`` differ, on the same CV folds.

    ``corrected_t`` (default) and ``bayesian_correlated_t`` get the fold
    sizes of the search automatically.
    """
    if test == "mcnemar":
        return _mcnemar_candidates(result, a, b, **options)
    if test in ("5x2cv_t", "5x2cv_f"):
        _check_five_by_two_folds(result.splits, test)
    scores = candidate_scores(result, metric)
    i, j = _index(result, a), _index(result, b)
    labels = [c.label for c in result.candidates]
    sizes = _fold_sizes(result.records, None)
    return compare(
        scores[i],
        scores[j],
        test,
        name_a=labels[i],
        name_b=labels[j],
        **_options(test, sizes, options),
    )


def _pooled(result: SearchResult, candidate: int, what: str) -> OutOfFold:
    if result.predictions is None:
        raise no_predictions(what)
    return result.predictions.pooled(candidate, "predict")


def _check_five_by_two_folds(splits: Sequence[Fold], test: str) -> None:
    """Refuse a 5x2cv test on folds that are not 5 repeats of 2-fold CV, before any test.

    The test's variance estimate assumes that the two folds of each repeat swap train and
    test rows; on other folds it returns a number that means nothing.
    """
    pairs = [splits[i : i + 2] for i in range(0, len(splits), 2)]
    swapped = len(splits) == 10 and all(
        np.array_equal(np.sort(first.test), np.sort(second.train))
        and np.array_equal(np.sort(first.train), np.sort(second.test))
        for first, second in pairs
    )
    if not swapped:
        raise ValueError(
            f"test={test!r} needs the search's folds to be 5 repeats of 2-fold CV, each "
            "repeat's second fold the first one's train and test rows swapped; this search "
            f"has {len(splits)} folds that are not. Search with "
            "cv=RepeatedKFold(n_splits=2, n_repeats=5) (or RepeatedStratifiedKFold), or use "
            "test='corrected_t', which is made for other designs."
        )


def _mcnemar_candidates(
    result: SearchResult, a: int | str, b: int | str, **options: Any
) -> TestResult:
    """McNemar's test of two candidates on their stored predictions, pooled over the folds."""
    i, j = _index(result, a), _index(result, b)
    first = _pooled(result, i, 'compare(..., test="mcnemar")')
    second = _pooled(result, j, 'compare(..., test="mcnemar")')
    labels = [c.label for c in result.candidates]
    outcome = mcnemar_test(first.y_true, first.values, second.values, **options)  # type: ignore[arg-type]
    return replace(outcome, name_a=labels[i], name_b=labels[j])


def cochran_q_candidates(result: SearchResult, candidates: Any = None) -> CochranQResult:
    """Cochran's Q of several candidates (all by default) on their stored predictions."""
    rows, _ = (None, "") if candidates is not None else _compared_rows(result, "cochran_q")
    everyone = range(len(result.candidates)) if rows is None else rows.tolist()
    chosen = everyone if candidates is None else candidates
    if isinstance(chosen, (str, int)) or len(chosen) < 2:
        raise ValueError(
            f"candidates must list at least two candidates (index, label or id); got "
            f"{candidates!r}. Pass e.g. candidates=[0, 1, 2], or None for all of them."
        )
    indices = [_index(result, c) for c in chosen]
    pooled = [_pooled(result, c, "cochran_q") for c in indices]
    names = [result.candidates[c].label for c in indices]
    return cochran_q_test(pooled[0].y_true, [p.values for p in pooled], names)  # type: ignore[arg-type]


def confusion_table(pooled: OutOfFold) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """(labels, counts): row the true label, column the predicted one, over pooled rows."""
    truth, predicted = np.asarray(pooled.y_true), np.asarray(pooled.values)
    labels, codes = np.unique(np.concatenate([truth, predicted]), return_inverse=True)
    matrix = np.zeros((labels.size, labels.size), dtype=np.int64)
    np.add.at(matrix, (codes[: truth.size], codes[truth.size :]), 1)
    return labels, matrix


def compare_all_candidates(
    result: SearchResult,
    test: Any = "corrected_t",
    *,
    metric: str | None = None,
    correction: str | None = "holm",
    **options: Any,
) -> ComparisonTable:
    """Every pair of candidates, p-values adjusted by ``correction`` (Holm by default)."""
    if test in ("5x2cv_t", "5x2cv_f"):
        _check_five_by_two_folds(result.splits, test)
    scores = candidate_scores(result, metric)
    rows, left_out = _compared_rows(result, "compare_all")
    compared = result.candidates if rows is None else [result.candidates[r] for r in rows]
    named = {c.label: scores[c.index] for c in compared}
    sizes = _fold_sizes(result.records, None)
    table = compare_all(named, test, correction=correction, **_options(test, sizes, options))
    return replace(table, left_out=left_out)


def best_vs_rest(
    result: SearchResult,
    test: Any = "corrected_t",
    *,
    metric: str | None = None,
    correction: str | None = "holm",
    **options: Any,
) -> ComparisonTable:
    """The best-mean candidate against each other one, adjusted by ``correction``."""
    if test in ("5x2cv_t", "5x2cv_f"):
        _check_five_by_two_folds(result.splits, test)
    scores, names, left_out, sizes = _best_and_rest(result, metric)
    table = holm_best_vs_rest(
        scores.T, names, test=test, correction=correction, **_options(test, sizes, options)
    )
    return replace(table, left_out=left_out)


def _best_and_rest(
    result: SearchResult, metric: str | None
) -> tuple[NDArray[np.float64], list[str], str, tuple[float, float]]:
    """What a best-vs-rest table compares: the scores and names of the candidates it
    reads, what it leaves out (in words), and the mean train and test fold sizes."""
    scores = candidate_scores(result, metric)
    names = [c.label for c in result.candidates]
    rows, left_out = _compared_rows(result, "best_vs_rest")
    if rows is not None:
        scores, names = scores[rows], [names[r] for r in rows]
    return scores, names, left_out, _fold_sizes(result.records, None)


def best_vs_rest_columns(result: SearchResult) -> dict[str, Any] | None:
    """:func:`best_vs_rest` at its defaults (the corrected t-test, the refit metric, Holm),
    as columns, without a :class:`TestResult` per candidate; None where the table must be
    made pair by pair (:func:`parcv.stats.multiple.best_vs_rest_columns` says when).

    Raises
    ------
    ValueError
        Where :func:`best_vs_rest` raises before any test: fewer than two candidates
        (or complete trials) to compare.
    """
    scores, names, left_out, sizes = _best_and_rest(result, None)
    found = _best_vs_rest_columns(scores.T, names, **_options("corrected_t", sizes, {}))
    return None if found is None else {**found, "left_out": left_out}


def compare_procedures(
    a: NestedResult,
    b: NestedResult,
    test: Any = "corrected_t",
    *,
    metric: str | None = None,
    names: tuple[str, str] = ("A", "B"),
    **options: Any,
) -> TestResult:
    """Compare two whole selection procedures on the same outer folds (nested CV).

    Raises
    ------
    TypeError
        If ``b`` is not a NestedResult or ``names`` is not two strings.
    ValueError
        If the two results were not computed on the same outer folds, or
        ``metric`` is not a metric of both.
    """
    _check_procedures(b, metric, names, a.outer_scores)
    if a.outer_folds_digest != b.outer_folds_digest:
        raise ValueError(
            "the two nested results were computed on different outer folds, so their outer "
            "scores are not paired. Run both with the same data and outer= splitter (with a "
            "fixed random_state)."
        )
    metric_a = a.refit_metric if metric is None else metric
    metric_b = b.refit_metric if metric is None else metric
    if isinstance(test, str) and test in _SIZE_AWARE and not {"n_train", "n_test"} <= set(options):
        options = _options(test, _outer_fold_sizes(a, metric_a), options)
    return compare(
        a.outer_scores[metric_a],
        b.outer_scores[metric_b],
        test,
        name_a=names[0],
        name_b=names[1],
        **options,
    )


def _outer_fold_sizes(result: NestedResult, metric: str) -> tuple[float, float]:
    """Mean train and test rows of a nested CV's outer folds, from their refits' records.

    Every strategy's nested result keeps its outer refits as ``("refit", o)``
    records; those of a nested CV interval's selections (outer folds after the
    nested CV's own, on other rows) are left out.
    """
    n_outer = len(result.outer_scores[metric])

    def own_refit(unit: Unit) -> bool:
        return unit.kind == "refit" and unit.outer is not None and unit.outer < n_outer

    records = result.records
    if isinstance(records, RecordList):  # read from a store: build only these records
        refits = records.of_units(own_refit, kinds=("refit",))
    else:
        refits = [r for r in records if own_refit(r.unit)]
    if not refits:
        raise ValueError(
            "the records of this nested result hold no refit of its outer folds, whose "
            "sizes the test needs. Pass test='paired_t', or n_train= and n_test= (the mean "
            "rows of an outer fold's training and test parts)."
        )
    return (float(np.mean([r.n_train for r in refits])), float(np.mean([r.n_test for r in refits])))


def _check_procedures(
    other: Any, metric: Any, names: Any, scores: dict[str, NDArray[np.float64]]
) -> None:
    """``other`` (a NestedResult, checked by the caller) shares ``metric``; two ``names``."""
    if metric is not None:
        _check_metric(metric, [m for m in scores if m in other.outer_scores], "both results")
    pair = not isinstance(names, str) and isinstance(names, Sequence)
    if not pair or not all(isinstance(n, str) for n in names):
        raise TypeError(
            f"names must be a pair of str naming the two procedures; got names={names!r}. "
            "Pass e.g. names=('ridge', 'svr')."
        )
    if len(names) != 2:
        raise ValueError(
            f"names must name the two procedures, self then other; got {len(names)} "
            f"name(s): names={names!r}. Pass e.g. names=('ridge', 'svr')."
        )


def best_vs_rest_marked(result: SearchResult) -> ComparisonTable | None:
    """Best vs rest with pairs of constant fold differences marked, or None if that fails."""
    scores = candidate_scores(result)
    labels = [c.label for c in result.candidates]
    try:
        rows, left_out = _compared_rows(result, "best_vs_rest")
    except ValueError:  # no pair of complete trials: best_vs_rest said so
        return None
    if rows is not None:
        scores, labels = scores[rows], [labels[r] for r in rows]
    means = scores.mean(axis=1)
    if not np.isfinite(scores).all():
        return None
    best = int(np.argmax(means))
    # The scores and fold sizes once, not per pair: per pair, a store's records were
    # walked once for each candidate (10,000 candidates: minutes).
    options = _options("corrected_t", _fold_sizes(result.records, None), {})
    tested: list[TestResult] = []
    marked: list[UndefinedComparison] = []
    for other in range(len(labels)):
        if other == best:
            continue
        try:
            pair = (labels[best], labels[other])
            tested.append(compare(scores[best], scores[other], "corrected_t",
                                  name_a=pair[0], name_b=pair[1], **options))  # fmt: skip
        except ValueError:
            difference = scores[best] - scores[other]
            scale = float(np.max(np.abs(scores[[best, other]])))
            if np.ptp(difference) > 8.0 * np.finfo(np.float64).eps * scale:
                return None  # refused for another reason: report that reason instead
            same = bool(np.array_equal(scores[best], scores[other]))
            note = "identical fold scores" if same else "same difference on every fold"
            mean = float(np.mean(difference))
            marked.append(UndefinedComparison("corrected_t", labels[best], labels[other],
                                              mean, difference.size, note))  # fmt: skip
    p_values = [float(r.p_value) for r in tested if r.p_value is not None]
    adjusted: list[float] = list(holm_adjust(p_values)) if p_values else []
    return ComparisonTable(tuple(tested), tuple(float(p) for p in adjusted), 0.05,
                           labels[best], tuple(marked), left_out=left_out)  # fmt: skip
