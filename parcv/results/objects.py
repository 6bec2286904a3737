"""Result objects of cross_validate, search and nested_cv."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import ModelNotAvailableError
from parcv.plan.iterations import Iterations
from parcv.plan.record_table import RecordList
from parcv.plan.records import Record
from parcv.plan.space import Candidate
from parcv.plan.splits import Fold
from parcv.results import labels
from parcv.results.aggregate import FailureSummary
from parcv.results.compare import (
    best_vs_rest,
    best_vs_rest_columns,
    best_vs_rest_marked,
    candidate_index,
    cochran_q_candidates,
    compare_all_candidates,
    compare_candidates,
    compare_procedures,
    confusion_table,
)
from parcv.results.criteria_table import CriteriaTable
from parcv.results.curves import BiasVarianceTradeoff, LearningCurveResult
from parcv.results.export import Exportable
from parcv.results.predictions import OutOfFold, StoredPredictions, no_predictions
from parcv.results.summary import ScoreSummary, StabilityRow
from parcv.results.trials import count_trials
from parcv.stats import ComparisonTable, TestResult
from parcv.stats.intervals import CVInterval
from parcv.stats.mcnemar import CochranQResult
from parcv.stats.result import import_pandas

__all__ = [
    "CVResult",
    "SearchResult",
    "NestedResult",
    "FAST_CV_NOTE",
    "FinalModel",
    "cv_results_frame",
    "kept_note",
]

FAST_CV_NOTE = (
    "fast CV: the held-out predictions were computed exactly in closed form (linear smoother, "
    "one decomposition per batch of candidates, no refit per fold). They equal scikit-learn's "
    "refits to rounding (~1e-12 relative), not bit for bit; the serial, local and dask "
    "backends agree with each other bit for bit. Fit and score times are the batch's, spread "
    "evenly over its candidates and folds."
)


@dataclass
class FinalModel:
    """The fitted final model of a search, or why there is none.

    Parameters
    ----------
    estimator : object or None
        The fitted model, when it is at hand.
    loader : callable or None
        Loads it on first use (a saved model, once its tag verifies with the
        user's model key); called only when ``best_estimator_`` is read.
    reason : str
        Why there is no model, and how to get one (when both are None).

    Examples
    --------
    >>> FinalModel(reason="refit=False").get()
    Traceback (most recent call last):
    ...
    parcv.errors.ModelNotAvailableError: refit=False
    """

    estimator: Any = None
    loader: Callable[[], Any] | None = None
    reason: str = ""

    def get(self) -> Any:
        """Return the model; raise ModelNotAvailableError saying why there is none."""
        if self.estimator is None and self.loader is not None:
            self.estimator = self.loader()
            self.loader = None
        if self.estimator is None:
            raise ModelNotAvailableError(self.reason)
        return self.estimator


# The loss the intervals average, as a reader names its mean.
_LOSS_WORDS = {"0-1 loss": "error rate (mean 0-1 loss)"}


def _interval_text(interval: CVInterval) -> str:
    return f"{interval.estimate:.6g} [{interval.lower:.6g}, {interval.upper:.6g}]"


def kept_note(records: Sequence[Record]) -> str:
    """Say which units took a stored record of other code (``resume="values"``); "" if none.

    Examples
    --------
    >>> from parcv.plan.records import Unit
    >>> kept = Record(Unit("fit", None, 0, 0), "ok", {}, {}, 0.0, 0.0, 1, 1,
    ...               kept=("scikit-learn 1.9.1 → 1.9.2",))
    >>> kept_note([kept]).split(":")[0]
    "1 of 1 units took a stored record computed by other code or versions (resume='values')"
    """
    # Of a store's table, only the records built so far: load builds those it marks kept.
    seen = records.built() if isinstance(records, RecordList) else records
    kept = [r for r in seen if r.kept]
    if not kept:
        return ""
    causes = sorted({cause for r in kept for cause in r.kept})
    return (
        f"{len(kept):,} of {len(records):,} units took a stored record computed by other code "
        f"or versions (resume='values'): {'; '.join(causes)}. Their numbers are that code's; "
        "resume=True recomputes them with this code."
    )


# What each interval is, after its numbers (a nested CV's, and a cross_validate's NCV).
_INTERVAL_WORDS = {
    "ncv": ("nested CV", "bias-corrected estimate"),
    "bbc": ("BBC-CV", "the selection on all data; no extra fits"),
}


def _interval_lines(
    naive: CVInterval | None,
    interval: CVInterval | None,
    *,
    loss: str,
    note: str,
    of: str = "",
) -> list[str]:
    """The interval of the error first, then the naive one, in words (empty: none asked).

    ``of`` says whose error it is (a nested CV's: the selection procedure's).
    """
    if naive is None:
        return []
    words = _LOSS_WORDS.get(loss, f"mean {loss}".strip())
    lines = [f"  {words or 'error'}{of} (loss scale, lower is better; not the score above):"]
    if interval is not None:
        name, why = _INTERVAL_WORDS.get(interval.method, (interval.method, ""))
        lines.append(f"    {name} {interval.confidence:.0%} interval: {_interval_text(interval)} "
                     f"({why})")  # fmt: skip
    folds = "outer fold" if of else "fold"
    lines.append(f"    naive {naive.confidence:.0%} interval: {_interval_text(naive)} "
                 f"({folds} losses' mean ± z se)")  # fmt: skip
    return lines + ([f"  {note}"] if note else [])


def _notes(fast_cv: bool, records: Sequence[Record] = ()) -> list[str]:
    kept = kept_note(records)
    return [FAST_CV_NOTE] * fast_cv + [kept] * bool(kept)


@dataclass(frozen=True, repr=False)
class CVResult(Exportable, dict[str, Any]):
    """K-fold cross-validation of one model.

    It is the dict ``sklearn.model_selection.cross_validate`` returns (a
    ``dict``, its keys in scikit-learn's order: ``result["test_score"]``,
    ``"estimator" in result``, ``dict(result)``), with the attributes below.

    Attributes
    ----------
    scores : dict of str to ndarray
        The dict ``sklearn.model_selection.cross_validate`` returns
        (``test_score`` or ``test_<metric>``, ``fit_time``, ``score_time``,
        ``train_*`` when asked).
    summaries : dict of str to ScoreSummary
        Mean, std, variance of the mean and standard error per metric.
    records : sequence of Record
        One record per fold (with fast CV, one record holding every fold).
    fast_cv : bool
        Whether the held-out predictions came from fast CV (see ``notes``).
    interval : CVInterval or None
        With ``interval="ncv"``: the nested cross-validation interval (Bates,
        Hastie & Tibshirani) for the error of the model fitted on these data.
        It is on the loss scale (e.g. the mean squared error, positive, lower
        is better), not the score scale of ``test_score`` (e.g. its negative),
        and its ``estimate`` is bias-corrected, so it differs a little from
        the CV mean. ``interval.naive`` is ``naive_interval``.
    naive_interval : CVInterval or None
        With ``interval="ncv"``: the usual interval of this run's own CV,
        beside it for comparison (it can cover far too rarely): the mean of
        the fold losses ± z times their standard error, i.e. ``-mean ± z se``
        of the score summary for a ``neg_*`` metric (``1 - mean`` for
        accuracy). The same object as ``interval.naive``.
    interval_loss : str
        The per-sample loss both intervals average (``"squared error"``,
        ``"absolute error"``, ``"0-1 loss"``, ``"log loss"``); empty without
        an interval.
    interval_note : str
        Why ``interval`` is None although it was asked for.
    predictions : StoredPredictions or None
        With ``return_predictions``: the outputs on every fold's test rows
        (:meth:`out_of_fold`).
    estimators : list of estimator or None
        With ``return_estimator``: the estimator fitted on each fold (None
        where its fit failed), as the ``"estimator"`` key.
    indices : dict or None
        With ``return_indices``: ``{"train": (...), "test": (...)}``, each
        fold's train and test rows, as the ``"indices"`` key.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> from parcv import cross_validate
    >>> X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    >>> result = cross_validate(Ridge(), X, y, cv=4, return_indices=True, backend="serial")
    >>> list(result)
    ['fit_time', 'score_time', 'indices', 'test_score']
    >>> result["test_score"] is result.scores["test_score"], len(result["indices"]["test"])
    (True, 4)
    """

    scores: dict[str, NDArray[np.float64]]
    summaries: dict[str, ScoreSummary]
    records: Sequence[Record] = field(repr=False)
    failures: FailureSummary = field(repr=False)
    warning_counts: dict[str, dict[str, int]] = field(repr=False)
    fast_cv: bool = False
    interval: CVInterval | None = None
    naive_interval: CVInterval | None = None
    interval_note: str = ""
    interval_loss: str = ""
    predictions: StoredPredictions | None = field(default=None, repr=False)
    estimators: list[Any] | None = field(default=None, repr=False)
    indices: dict[str, tuple[NDArray[np.intp], ...]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # The dict of scikit-learn's cross_validate, its keys in its order.
        self.update(fit_time=self.scores["fit_time"], score_time=self.scores["score_time"])
        if self.estimators is not None:
            self["estimator"] = self.estimators
        if self.indices is not None:
            self["indices"] = self.indices
        self.update(self.scores)

    @property
    def notes(self) -> list[str]:
        """How the numbers were computed, where that matters (fast CV, records kept)."""
        return _notes(self.fast_cv, self.records)

    def out_of_fold(self, method: str = "predict") -> OutOfFold:
        """The stored outputs on every fold's test rows, with their rows and target.

        Raises
        ------
        ParcvError
            The run kept no predictions (the message says how to keep them).
        """
        if self.predictions is None:
            raise no_predictions("out_of_fold")
        return self.predictions.out_of_fold(0, method)

    def to_text(self) -> str:
        """One-screen summary: mean ± se per metric, fast-CV note, failures."""
        n = next(iter(self.summaries.values())).n
        lines = [f"cross_validate: {n} folds"]
        lines += [f"  {name}: {s.mean:.6g} ± {s.se:.3g} (mean ± se)"
                  for name, s in self.summaries.items()]  # fmt: skip
        return "\n".join([*lines, *self.interval_lines(), *self.notes, self.failures.text])

    def interval_lines(self) -> list[str]:
        """The nested CV interval first, then the naive one, in words (empty: none asked)."""
        return _interval_lines(self.naive_interval, self.interval, loss=self.interval_loss,
                               note=self.interval_note)  # fmt: skip

    def __repr__(self) -> str:
        """A few lines: the folds, mean ± se per metric, the intervals, failures if any."""
        n = next(iter(self.summaries.values())).n
        lines = [f"CVResult: {n} folds" + (", fast CV" if self.fast_cv else "")]
        lines += [f"  {name}: {s.mean:.6g} ± {s.se:.3g} (mean ± se)"
                  for name, s in self.summaries.items()]  # fmt: skip
        return "\n".join([*lines, *self.interval_lines(), *_failure_line(self.failures)])

    def to_frame(self) -> Any:
        """Return the fold scores as a pandas DataFrame, one row per fold.

        Returns
        -------
        pandas.DataFrame
            The columns of ``scores`` (``test_score`` or ``test_<metric>``,
            ``fit_time``, ``score_time``, ``train_*``), indexed by fold.

        Examples
        --------
        >>> from sklearn.datasets import make_regression
        >>> from sklearn.linear_model import Ridge
        >>> from parcv import cross_validate
        >>> X, y = make_regression(n_samples=40, n_features=3, random_state=0)
        >>> frame = cross_validate(Ridge(), X, y, cv=4, backend="serial").to_frame()
        >>> frame.shape, frame.index.name
        ((4, 3), 'fold')
        """
        pandas = import_pandas("CVResult.to_frame")
        frame = pandas.DataFrame({k: np.asarray(v) for k, v in self.scores.items()})
        frame.index.name = "fold"
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: fold scores and their summaries; records: ``self.records``."""
        return {
            "kind": "cross_validate",
            "fast_cv": self.fast_cv,
            "interval": None if self.interval is None else self.interval.to_dict(),
            "naive_interval": None
            if self.naive_interval is None
            else self.naive_interval.to_dict(),
            "interval_loss": self.interval_loss,
            "notes": self.notes,
            "scores": self.scores,
            "summaries": self.summaries,
            "failures": self.failures,
            "warnings": self.warning_counts,
        }


# Per comparison, the values that differ from row to row; the rest is said once.
_COMPARISON_COLUMNS = (
    "name_b", "mean_difference", "ci_low", "ci_high", "statistic", "p_value", "p_holm",
    "rejected", "note",
)  # fmt: skip


def _written_comparisons(found: dict[str, Any]) -> dict[str, Any]:
    """results.json's best-vs-rest entry, from a table's shared values (``best``,
    ``alpha``, ``confidence``, ``n``, ``assumptions``, ``left_out``) and its ``columns``;
    a column it has not (``note``, where every pair was tested) is None in every row."""
    columns, rows = found["columns"], len(found["columns"]["name_b"])
    return {
        "test": "corrected_t",
        "best": found["best"],
        "alpha": found["alpha"],
        "confidence": found["confidence"],
        "n_folds": found["n"],
        "assumptions": found["assumptions"],
        **({"left_out": found["left_out"]} if found["left_out"] else {}),
        "columns": {name: columns.get(name, [None] * rows) for name in _COMPARISON_COLUMNS},
    }


@dataclass(frozen=True, repr=False)
class SearchResult(Exportable):
    """Select and refit: candidates scored by CV on all data, best refitted.

    Attributes follow ``GridSearchCV``: ``cv_results_``, ``best_index_``,
    ``best_params_``, ``best_score_``, ``best_estimator_`` (reading it raises
    :class:`~parcv.errors.ModelNotAvailableError` when there is no final
    model), ``n_splits_``, plus ``summaries`` (per candidate, per metric
    :class:`ScoreSummary`) and the tidy ``records``.

    ``fast_cv`` says whether the held-out predictions came from fast CV
    (``notes`` explains what that means for the numbers);
    ``criteria_table`` (when ``criteria=`` was given) puts each candidate's
    CV mean ± se next to its criteria and names the candidate each method
    selects. ``bbc`` (with ``bbc=True``) is the BBC-CV estimate of the
    selected candidate's error (loss scale) with its bootstrap interval:
    ``best_score_`` is optimistic, since the candidate was selected on the
    same folds; BBC-CV removes most of that optimism without any extra fit.
    ``predictions`` (with ``return_predictions``) holds every fit's outputs
    on its test rows: :meth:`out_of_fold`, ``compare(a, b, test="mcnemar")``
    and :meth:`cochran_q` read them, with no refit. ``splits`` holds each
    fold's train and test rows (:class:`~parcv.plan.splits.Fold`).

    ``learning_curves`` (with ``learning_curve=``) maps a candidate's index
    (the winner's, or every one's) to its learning curve;
    ``bias_variance`` (with ``bias_variance=``) holds every candidate's
    bias-variance decomposition on the hold-out test set.
    """

    cv_results_: dict[str, Any] = field(repr=False)
    best_index_: int
    best_params_: dict[str, Any]
    best_score_: float
    final_model: FinalModel = field(repr=False)
    n_splits_: int
    refit_metric: str
    summaries: dict[str, Sequence[ScoreSummary]] = field(repr=False)
    records: Sequence[Record] = field(repr=False)
    failures: FailureSummary = field(repr=False)
    warning_counts: dict[str, dict[str, int]] = field(repr=False)
    candidates: tuple[Candidate, ...] = field(repr=False)
    metrics: tuple[str, ...] = field(repr=False)
    multimetric: bool = field(repr=False)
    fast_cv: bool = False
    criteria_table: CriteriaTable | None = field(default=None, repr=False)
    bbc: CVInterval | None = None
    predictions: StoredPredictions | None = field(default=None, repr=False)
    learning_curves: dict[int, LearningCurveResult] | None = field(default=None, repr=False)
    bias_variance: BiasVarianceTradeoff | None = field(default=None, repr=False)
    splits: Sequence[Fold] = field(default=(), repr=False)
    # With iterations=: the iteration parameter and each point's candidates, by checkpoint.
    iterations: Iterations | None = field(default=None, repr=False)
    paths: tuple[tuple[int, ...], ...] = field(default=(), repr=False)
    # A search in rounds: its strategy's settings (its config()), e.g. a sampler's.
    strategy: dict[str, Any] | None = field(default=None, repr=False)
    # The best-vs-rest table, computed once: a report reads it three times, and with
    # thousands of candidates each reading costs a t-test per candidate. Its text
    # table is rendered only when asked (results.json has the rows).
    _comparisons: dict[str, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def out_of_fold(self, candidate: int | str, method: str = "predict") -> OutOfFold:
        """A candidate's stored outputs on every fold's test rows, with their rows and target.

        Parameters
        ----------
        candidate : int or str
            Index, label or id, as in :meth:`compare`.
        method : str, default="predict"
            One of the methods the run kept.

        Raises
        ------
        ParcvError
            The run kept no predictions (the message says how to keep them).
        """
        if self.predictions is None:
            raise no_predictions("out_of_fold")
        return self.predictions.out_of_fold(candidate_index(self, candidate), method)

    def cochran_q(self, candidates: Any = None) -> CochranQResult:
        """Cochran's Q test of equal accuracy of several candidates, on stored predictions.

        Parameters
        ----------
        candidates : sequence of int or str, default=None
            At least two candidates (index, label or id); all by default.

        Returns
        -------
        CochranQResult
            Over the pooled test rows of every fold (no refit).

        Raises
        ------
        ParcvError
            The run kept no predictions (the message says how to keep them).
        """
        return cochran_q_candidates(self, candidates)

    @property
    def notes(self) -> list[str]:
        """How the numbers were computed, where that matters (fast CV, records kept)."""
        return _notes(self.fast_cv, self.records)

    @cached_property
    def readable_labels(self) -> dict[str, str]:
        """Each candidate's label, as the texts and plots show it.

        Its floats are rounded to 4 significant digits, or to as many more as
        tell two candidates apart; ``candidates[c].label`` (which
        :meth:`compare` takes), ``cv_results_`` and :meth:`to_frame` keep
        every digit.

        Examples
        --------
        >>> from sklearn.datasets import make_regression
        >>> from sklearn.linear_model import Ridge
        >>> from parcv import search
        >>> X, y = make_regression(n_samples=40, n_features=3, noise=5.0, random_state=0)
        >>> r = search(Ridge(), {"alpha": [0.123456789, 10.0]}, X, y, cv=3, backend="serial")
        >>> r.readable_labels
        {'alpha=0.123456789': 'alpha=0.1235', 'alpha=10.0': 'alpha=10.0'}
        """
        return labels.readable_candidate_labels(self.candidates)

    def readable_label(self, candidate: int) -> str:
        """The readable label of the candidate at index ``candidate`` (:attr:`readable_labels`)."""
        return self.readable_labels[self.candidates[candidate].label]

    @property
    def best_estimator_(self) -> Any:
        """The selected candidate refitted on all data.

        Of a loaded store, the model its run saved (``save_models=True``),
        unpickled only when its tag verifies with your model key: unpickling
        runs code, so only a model your own parcv saved is loaded
        (:func:`parcv.load`).

        Raises
        ------
        ModelNotAvailableError
            No final model: ``refit=False``, a loaded store whose run did not
            save it, or a saved model whose tag does not verify (another
            user's, or changed since); the message says how to get one.
        """
        return self.final_model.get()

    def compare(
        self,
        a: int | str,
        b: int | str,
        test: Any = "corrected_t",
        *,
        metric: str | None = None,
        **options: Any,
    ) -> TestResult:
        """Test whether two candidates differ on the same folds.

        Parameters
        ----------
        a, b : int or str
            Candidate index, label (``"alpha=0.1"``) or id: any row of
            ``cv_results_``. Of a pruned sampler's search, a pruned trial's rows
            are checkpoints of a model its pruner stopped early
            (``cv_results_["trial_state"]``); :meth:`best_vs_rest` and
            :meth:`compare_all` compare the complete trials only.
        test : str or callable, default="corrected_t"
            A name of :data:`parcv.stats.TESTS`; the Nadeau-Bengio corrected
            t-test by default because CV training sets overlap. Fold sizes
            are passed to the tests that need them. ``"mcnemar"`` runs
            McNemar's test on the two candidates' stored predictions, pooled
            over the test rows of every fold (needs ``return_predictions``;
            no refit): see :func:`parcv.stats.mcnemar_test`, whose options
            (``exact``, ``confidence``) it takes.
        metric : str, default=None
            Defaults to the refit metric.
        **options
            Passed to the test (e.g. ``rope=0.01``).

        Returns
        -------
        TestResult
            The test's statistic and p-value for ``a`` against ``b``.
        """
        return compare_candidates(self, a, b, test, metric=metric, **options)

    def compare_all(
        self,
        test: Any = "corrected_t",
        *,
        metric: str | None = None,
        correction: str | None = "holm",
        **options: Any,
    ) -> ComparisonTable:
        """Compare every pair of candidates; see :meth:`compare`.

        ``correction`` (``"holm"``, ``"bonferroni"`` or None) adjusts the
        p-values for the number of pairs. Of a pruned sampler's search, the
        pairs are of its complete trials, each at its last checkpoint (the
        value its study holds); the table's ``left_out`` counts the pruned
        and failed trials it leaves out.
        """
        return compare_all_candidates(self, test, metric=metric, correction=correction, **options)

    def best_vs_rest(
        self,
        test: Any = "corrected_t",
        *,
        metric: str | None = None,
        correction: str | None = "holm",
        **options: Any,
    ) -> ComparisonTable:
        """Compare the best-mean candidate with every other (Holm-adjusted by default).

        Of a pruned sampler's search, the candidates are its complete trials,
        each at its last checkpoint, as in :meth:`compare_all`.
        """
        return best_vs_rest(self, test, metric=metric, correction=correction, **options)

    def __repr__(self) -> str:
        """A few lines: the selection and the best-ranked candidates."""
        suffix = self.refit_metric if self.multimetric else "score"
        ranks = self.cv_results_[f"rank_test_{suffix}"]
        order = sorted(range(len(self.candidates)), key=lambda c: (ranks[c], c))
        lines = [
            f"SearchResult: {len(self.candidates)} candidates x {self.n_splits_} folds, "
            f"selected {self.readable_label(self.best_index_)} "
            f"({self.refit_metric} {self.best_score_:.6g})",
            *_trial_lines(self),
            f"rank  mean ± se ({self.refit_metric})  candidate",
        ]
        for c in order[:_REPR_ROWS]:
            s = self.summaries[self.refit_metric][c]
            lines.append(f"{ranks[c]:>4}  {s.mean:.6g} ± {s.se:.3g}  {self.readable_label(c)}")
        if len(order) > _REPR_ROWS:
            lines.append(f"... {len(order) - _REPR_ROWS} more candidates: to_text() or to_frame()")
        return "\n".join([*lines, *_failure_line(self.failures)])

    def to_frame(self) -> Any:
        """Return ``cv_results_`` as a pandas DataFrame, one row per candidate.

        Returns
        -------
        pandas.DataFrame
            A ``candidate`` label column, then every key of ``cv_results_``
            (parameters a candidate does not set are missing: NaN or None).

        Examples
        --------
        >>> from sklearn.datasets import make_regression
        >>> from sklearn.linear_model import Ridge
        >>> from parcv import search
        >>> X, y = make_regression(n_samples=40, n_features=3, noise=5.0, random_state=0)
        >>> r = search(Ridge(), {"alpha": [0.1, 10.0]}, X, y, cv=3, backend="serial")
        >>> r.to_frame()[["candidate", "rank_test_score"]].values.tolist()
        [['alpha=0.1', 1], ['alpha=10.0', 2]]
        """
        return cv_results_frame(self.cv_results_, [c.label for c in self.candidates])

    def to_text(self) -> str:
        """One-screen summary: candidates by rank with mean ± se, best-vs-rest table, failures."""
        suffix = self.refit_metric if self.multimetric else "score"
        ranks = self.cv_results_[f"rank_test_{suffix}"]
        lines = [
            f"search: {len(self.candidates)} candidates x {self.n_splits_} folds, "
            f"selected {self.readable_label(self.best_index_)} "
            f"({self.refit_metric} {self.best_score_:.6g})",
            *_trial_lines(self),
            "",
            "rank  mean ± se (" + self.refit_metric + ")  candidate",
        ]
        for c in sorted(range(len(self.candidates)), key=lambda c: (ranks[c], c)):
            s = self.summaries[self.refit_metric][c]
            lines.append(f"{ranks[c]:>4}  {s.mean:.6g} ± {s.se:.3g}  {self.readable_label(c)}")
        table = self.comparison_table()
        lines += [
            "",
            "best vs rest, corrected resampled t-test, Holm-adjusted:",
            *([table["left_out"]] if "left_out" in table else []),
            table.get("text", table.get("note", "")),
        ]
        if self.criteria_table is not None:
            lines += [
                "",
                "criteria (smaller is better; log evidence: larger is better):",
                labels.readable_criteria(self.criteria_table, self.readable_labels).to_text(),
            ]
        lines += [
            "",
            *self.notes,
            labels.readable_failures(self.failures, self.readable_labels).text,
        ]
        return "\n".join(lines)

    def comparison_table(self, *, text: bool = True) -> dict[str, Any]:
        """Best versus rest by the corrected t-test, or why it cannot be computed.

        ``text=False`` leaves out the aligned text table (``"text"``), which
        takes as long to render as the tests with thousands of candidates.
        ``"left_out"``, where the table leaves candidates out (a pruned
        sampler's unfinished trials), says which and why.
        """
        table = self._comparison_rows()
        if not text:
            return table
        if table["rows"] and "text" not in self._comparisons:
            named = labels.readable_comparisons(self._comparisons["table"], self.readable_labels)
            self._comparisons["text"] = named.to_text()
        return table if not table["rows"] else {**table, "text": self._comparisons["text"]}

    def comparison_columns(self) -> dict[str, Any]:
        """:meth:`comparison_table` as results.json writes it: each value of the rows as a
        list, and the values every row shares (test, alpha, folds, assumptions) once.

        ``{"test", "rows": [], "note"}`` when there is no table, as
        ``comparison_table()``. Made from the tests without a dict per row: with
        thousands of candidates, those rows took more memory than the tests.
        """
        if not {"columns", "table", "note"} & set(self._comparisons):
            self._comparisons.update(self._comparison_columns_at_once())
        found = self._comparisons if "columns" in self._comparisons else self._found_comparisons()
        if "columns" not in found and "table" not in found:
            return {"test": "corrected_t", "rows": [], "note": found["note"]}
        if "columns" not in found:
            table = found["table"]
            columns = table.columns([*_COMPARISON_COLUMNS, "confidence", "n", "assumptions"])
            tested = next((i for i, p in enumerate(columns["p_value"]) if p is not None), 0)
            shared = {k: columns.pop(k)[tested] for k in ("confidence", "n", "assumptions")}
            tables = {"best": table.best, "alpha": table.alpha, "left_out": table.left_out}
            found["columns"] = _written_comparisons({**tables, **shared, "columns": columns})
        written: dict[str, Any] = found["columns"]
        return written

    def _comparison_columns_at_once(self) -> dict[str, Any]:
        """``{"columns": ...}`` made in one numpy pass, or ``{}`` where the table must be
        made test by test (or says why there is none): as :meth:`comparison_columns` has
        them from the table, without 220,000 :class:`TestResult` first."""
        if len(self.candidates) < 2:
            return {}
        try:
            found = best_vs_rest_columns(self)
        except ValueError:  # too few to compare: the table's path says so, with its note
            return {}
        return {} if found is None else {"columns": _written_comparisons(found)}

    def _comparison_rows(self) -> dict[str, Any]:
        """``comparison_table()`` without its text."""
        found = self._found_comparisons()
        if "table" not in found:
            return {"test": "corrected_t", "rows": [], "note": found["note"]}
        table = found["table"]
        if "rows" not in found:
            found["rows"] = table.to_dict()
        left_out = {"left_out": table.left_out} if table.left_out else {}
        return {"test": "corrected_t", "best": table.best, "rows": found["rows"], **left_out}

    def _found_comparisons(self) -> dict[str, Any]:
        """The best-vs-rest table (``"table"``), or why there is none (``"note"``), once."""
        if "table" not in self._comparisons and "note" not in self._comparisons:
            self._comparisons.update(self._comparison_table())
        return self._comparisons

    def _comparison_table(self) -> dict[str, Any]:
        if len(self.candidates) < 2:
            return {"rows": [], "note": "one candidate: nothing to compare"}
        try:
            table = self.best_vs_rest()
        except ValueError as err:
            # One pair without a statistic (identical fold scores) must not hide the others.
            marked = best_vs_rest_marked(self)
            if marked is None:
                return {"rows": [], "note": str(err)}
            table = marked
        return {"table": table}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: per candidate scores, ranks and tests, and the selection.

        The fitted estimator and the per-unit records are left out: the records
        are ``self.records`` (and, from a store, ``parcv.load(store).records``).
        """
        return {
            "kind": "search",
            "fast_cv": self.fast_cv,
            "notes": self.notes,
            "criteria": None if self.criteria_table is None else self.criteria_table.to_dict(),
            "comparisons": self.comparison_columns(),
            "best_index": self.best_index_,
            "best_params": self.best_params_,
            "best_score": self.best_score_,
            "refit_metric": self.refit_metric,
            "cv_results": self.cv_results_,
            "summaries": self.summaries,
            "failures": self.failures,
            "warnings": self.warning_counts,
        }


@dataclass(frozen=True, repr=False)
class NestedResult(Exportable):
    """Nested CV and, if asked, the all-data search (select and refit).

    Attributes
    ----------
    outer_scores : dict of str to ndarray of shape (n_outer_splits,)
        Score of each outer fold's selected-and-refitted candidate.
    estimate : dict of str to ScoreSummary
        Mean, variance of the mean and standard error of ``outer_scores``:
        the estimate of the whole selection procedure's performance.
    chosen : list of int
        Candidate index selected in each outer fold.
    chosen_params : list of dict
    stability : list of StabilityRow
        How often each candidate was selected over the outer folds.
    inner_cv_results : list of dict
        ``cv_results_`` of the inner search of each outer fold.
    final : SearchResult or None
        The search on all data and its refit: the model to ship.
    records : sequence of Record
    fast_cv : bool
        Whether the inner CVs ran as fast CV (see ``notes``).
    criteria_table : CriteriaTable or None
        The all-data criteria table (``final.criteria_table``).
    criteria_choices : dict of str to list
        With ``criteria=``: per method (``"cv"``, ``"one_se"``, each
        criterion), the candidate it selects on each outer-train part; how
        stable each method's choice is.
    outer_predictions : StoredPredictions or None
        With ``return_predictions``: each outer refit's outputs on its outer
        test rows (:meth:`out_of_fold`, :meth:`confusion_matrix`).
    interval : CVInterval or None
        The interval of the error of the whole procedure, select by inner CV
        and refit, applied to these data (the model ``final`` ships). With
        ``interval="ncv"``: the nested cross-validation interval of Bates,
        Hastie & Tibshirani, bias-corrected, from ``interval.details
        ["n_selections"]`` more selections (``interval.n_fits`` fits). With
        ``interval="bbc"`` (or ``bbc=True``): BBC-CV of the selection on all
        data (``final.bbc``; no extra fits). On the loss scale (e.g. the mean
        squared error, positive), not the score scale of ``outer_scores``.
        ``interval.naive`` is ``naive_interval``.
    naive_interval : CVInterval or None
        With an interval: the usual one of the outer folds beside it (it can
        cover far too rarely), the mean of the outer fold losses ± z times
        their standard error: ``-mean ± z se`` of ``estimate`` for a
        ``neg_*`` metric (``1 - mean`` for accuracy).
    interval_loss : str
        The per-sample loss both intervals average (``"squared error"``,
        ``"0-1 loss"``, ...); empty without an interval.
    interval_note : str
        Why ``interval`` is None although it was asked for.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> from parcv import nested_cv
    >>> X, y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
    >>> r = nested_cv(Ridge(), {"alpha": [0.1, 10.0]}, X, y, outer=3, inner=3,
    ...               scoring="neg_mean_squared_error", interval="ncv", ncv_repetitions=2,
    ...               backend="serial")
    >>> r.interval.method, r.interval.details["n_selections"], r.interval.n_fits
    ('ncv', 12.0, 84)
    >>> bool(r.interval.lower < r.interval.estimate < r.interval.upper)
    True
    """

    outer_scores: dict[str, NDArray[np.float64]]
    estimate: dict[str, ScoreSummary]
    chosen: list[int]
    chosen_params: list[dict[str, Any]]
    stability: list[StabilityRow]
    inner_cv_results: list[dict[str, Any]] = field(repr=False)
    final: SearchResult | None
    refit_metric: str
    records: Sequence[Record] = field(repr=False)
    failures: FailureSummary = field(repr=False)
    warning_counts: dict[str, dict[str, int]] = field(repr=False)
    outer_folds_digest: str = field(repr=False)
    fast_cv: bool = False
    criteria_table: CriteriaTable | None = field(default=None, repr=False)
    criteria_choices: dict[str, list[int | None]] = field(default_factory=dict, repr=False)
    outer_predictions: StoredPredictions | None = field(default=None, repr=False)
    interval: CVInterval | None = None
    naive_interval: CVInterval | None = None
    interval_note: str = ""
    interval_loss: str = ""

    @property
    def notes(self) -> list[str]:
        """How the numbers were computed, where that matters (fast CV, records kept)."""
        return _notes(self.fast_cv, self.records)

    def interval_lines(self) -> list[str]:
        """The interval of the procedure's error first, then the naive one (empty: none)."""
        return _interval_lines(
            self.naive_interval,
            self.interval,
            loss=self.interval_loss,
            note=self.interval_note,
            of=" of the selection procedure",
        )

    def out_of_fold(self, method: str = "predict") -> OutOfFold:
        """The outer refits' stored outputs on every outer test part, with rows and target.

        Raises
        ------
        ParcvError
            The run kept no predictions (the message says how to keep them).
        """
        if self.outer_predictions is None:
            raise no_predictions("out_of_fold")
        return self.outer_predictions.out_of_fold(0, method)

    def confusion_matrix(self) -> tuple[NDArray[Any], NDArray[np.int64]]:
        """The pooled confusion matrix of the outer refits' stored predictions.

        Returns
        -------
        labels : ndarray
            The sorted labels of the target and predictions.
        matrix : ndarray of shape (n_labels, n_labels)
            Row: true label, column: predicted label, summed over the outer
            test parts (as ``sklearn.metrics.confusion_matrix``).

        Raises
        ------
        ParcvError
            The run kept no predictions (the message says how to keep them).
        """
        if self.outer_predictions is None:
            raise no_predictions("confusion_matrix")
        return confusion_table(self.outer_predictions.pooled(0, "predict"))

    def compare(
        self,
        other: NestedResult,
        test: Any = "corrected_t",
        *,
        metric: str | None = None,
        names: tuple[str, str] = ("A", "B"),
        **options: Any,
    ) -> TestResult:
        """Compare this selection procedure with another on the same outer folds.

        Parameters
        ----------
        other : NestedResult
            Another nested CV on the same data and outer splits (e.g. another
            model family).
        test : str or callable, default="corrected_t"
        metric : str, default=None
        names : tuple of str, default=("A", "B")
        **options
            Passed to the test.

        Returns
        -------
        TestResult
            The test's statistic and p-value for this procedure against ``other``.

        Raises
        ------
        TypeError, ValueError
            ``other`` is not a NestedResult, ``metric`` not a metric of both,
            ``names`` not two str, or the outer folds differ.
        """
        if not isinstance(other, NestedResult):
            hint = (
                " A SearchResult has no outer folds: run nested_cv for both procedures, or "
                "compare candidates of one search with result.compare(a, b)."
                if isinstance(other, SearchResult)
                else " Pass the result of another parcv.nested_cv on the same data and outer folds."
            )
            raise TypeError(
                f"other must be a NestedResult (from parcv.nested_cv); got a "
                f"{type(other).__name__}.{hint}"
            )
        return compare_procedures(self, other, test, metric=metric, names=names, **options)

    def to_text(self) -> str:
        """One-screen summary: the estimate, choices per outer fold, stability, failures."""
        est = self.estimate[self.refit_metric]
        lines = [
            f"nested CV: {est.n} outer folds, {self.refit_metric} "
            f"{est.mean:.6g} ± {est.se:.3g} (mean ± se of the outer scores)",
            *self.interval_lines(),
            *_trial_lines(self, outer_only=True),
            "",
            "outer fold  score  selected",
        ]
        scores = self.outer_scores[self.refit_metric]
        named = self.readable_labels
        lines += [
            f"{o:>10}  {scores[o]:.6g}  {named[self.stability_labels[c]]}"
            for o, c in enumerate(self.chosen)
        ]
        lines += ["", "selection stability:"]
        lines += [f"  {row.count}/{est.n} folds  {named[row.label]}" for row in self.stability]
        if self.criteria_choices:
            lines += ["", "candidate selected on each outer-train part, by method:"]
            lines += [f"  {method:>8}: {choices}" for method, choices in
                      self.criteria_choices.items()]  # fmt: skip
        if self.final is None:
            lines += [*self.notes]
        if self.final is not None:
            lines += ["", self.final.to_text()]
        else:
            lines += ["", labels.readable_failures(self.failures, named).text]
        return "\n".join(lines)

    @property
    def stability_labels(self) -> dict[int, str]:
        """Label of every selected candidate."""
        return {row.candidate: row.label for row in self.stability}

    @cached_property
    def readable_labels(self) -> dict[str, str]:
        """Each candidate's label, as the texts and plots show it.

        Over the candidates of every outer fold's search and of the search on
        all data: floats rounded to 4 significant digits, or to as many more
        as tell two candidates apart, as ``SearchResult.readable_labels``.
        ``stability``, ``chosen_params`` and :meth:`to_frame` keep every digit.
        """
        params = [*self.chosen_params]
        for table in self.inner_cv_results:
            params += table["params"]
        if self.final is not None:
            params += [c.params for c in self.final.candidates]
        return labels.readable_labels(params)

    def compare_all(
        self,
        test: Any = "corrected_t",
        *,
        metric: str | None = None,
        correction: str | None = "holm",
        **options: Any,
    ) -> ComparisonTable:
        """Compare every pair of candidates of the all-data search (needs ``refit``)."""
        if self.final is None:
            raise ValueError(
                "compare_all needs the all-data search: run nested_cv with refit=True, or "
                "compare whole procedures with compare(other)."
            )
        return self.final.compare_all(test, metric=metric, correction=correction, **options)

    def __repr__(self) -> str:
        """A few lines: the estimate, how often each candidate was selected, the final choice."""
        est = self.estimate[self.refit_metric]
        lines = [
            f"{type(self).__name__}: {est.n} outer folds, {self.refit_metric} {est.mean:.6g} ± "
            f"{est.se:.3g} (mean ± se of the outer scores)",
            *self.interval_lines(),
            *_trial_lines(self),
            "selected in the outer folds: "
            + ", ".join(
                f"{self.readable_labels[row.label]} ({row.count}/{est.n})"
                for row in self.stability[:4]
            )
            + (f", ... {len(self.stability) - 4} more" if len(self.stability) > 4 else ""),
        ]
        if self.final is not None:
            best = self.final.candidates[self.final.best_index_].label
            lines.append(f"select and refit on all data: {self.readable_labels[best]}")
        return "\n".join([*lines, *_failure_line(self.failures)])

    def to_frame(self) -> Any:
        """Return the outer folds as a pandas DataFrame, one row per outer fold.

        Returns
        -------
        pandas.DataFrame
            Indexed by ``outer_fold``: the outer score per metric
            (``score`` or the metric names), the ``selected`` candidate's
            index and its ``label``.

        Examples
        --------
        >>> from sklearn.datasets import make_regression
        >>> from sklearn.linear_model import Ridge
        >>> from parcv import nested_cv
        >>> X, y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
        >>> r = nested_cv(Ridge(), {"alpha": [0.1, 10.0]}, X, y, outer=3, backend="serial")
        >>> r.to_frame()[["selected", "label"]].values.tolist()
        [[0, 'alpha=0.1'], [0, 'alpha=0.1'], [0, 'alpha=0.1']]
        """
        pandas = import_pandas("NestedResult.to_frame")
        columns: dict[str, Any] = {k: np.asarray(v) for k, v in self.outer_scores.items()}
        columns["selected"] = list(self.chosen)
        columns["label"] = [self.stability_labels[c] for c in self.chosen]
        frame = pandas.DataFrame(columns)
        frame.index.name = "outer_fold"
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: estimate, choices, inner searches; records: ``self.records``."""
        return {
            "kind": "nested_cv",
            "fast_cv": self.fast_cv,
            "interval": None if self.interval is None else self.interval.to_dict(),
            "naive_interval": None
            if self.naive_interval is None
            else self.naive_interval.to_dict(),
            "interval_loss": self.interval_loss,
            "notes": self.notes,
            "criteria_choices": self.criteria_choices,
            "refit_metric": self.refit_metric,
            "outer_scores": self.outer_scores,
            "estimate": self.estimate,
            "chosen": self.chosen,
            "chosen_params": self.chosen_params,
            "stability": [row.to_dict() for row in self.stability],
            "inner_cv_results": self.inner_cv_results,
            "final": None if self.final is None else self.final.to_dict(),
            "failures": self.failures,
            "warnings": self.warning_counts,
        }


_REPR_ROWS = 5


def _trial_lines(result: SearchResult | NestedResult, *, outer_only: bool = False) -> list[str]:
    """A pruned sampler's trials by how they ended, a line per search; none for other runs.

    ``outer_only``: the outer folds' searches alone (the search on all data tells its own).
    """
    return [c.line() for c in count_trials(result) if not (outer_only and c.where == "all data")]


def _failure_line(failures: FailureSummary) -> list[str]:
    """One line when fits failed, none otherwise."""
    return [f"{failures.n_failed} of {failures.n_total} fits failed"] if failures.n_failed else []


def cv_results_frame(cv_results: dict[str, Any], labels: list[str]) -> Any:
    """``cv_results_`` as a DataFrame: masked parameter entries become missing values.

    Examples
    --------
    >>> cv = {"param_a": np.ma.MaskedArray([1, 0], mask=[False, True]), "mean_test_score": [1, 2]}
    >>> cv_results_frame(cv, ["a=1", "b=2"])["param_a"].isna().tolist()
    [False, True]
    """
    pandas = import_pandas("SearchResult.to_frame")
    columns: dict[str, Any] = {"candidate": labels}
    for key, value in cv_results.items():
        if isinstance(value, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(value).tolist()
            value = [None if m else v for v, m in zip(value.data.tolist(), mask, strict=True)]
        columns[key] = list(value) if key == "params" else value
    return pandas.DataFrame(columns)
