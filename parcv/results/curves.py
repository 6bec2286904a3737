"""Results of learning curves, validation curves, permutation tests and bias-variance.

Each result reads like the tuple scikit-learn (or mlxtend) returns -- it
unpacks, indexes (``curve[1]``), has its ``len`` and converts with
``np.asarray`` -- so ``train_sizes, train_scores, test_scores =
parcv.learning_curve(...)`` works as a drop-in; the fields name the same arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.plan.build import Plan
from parcv.plan.curves import BIAS_VARIANCE_LOSSES, CurvePlan
from parcv.plan.kinds import Key
from parcv.plan.records import Record
from parcv.results.export import Exportable

__all__ = [
    "BiasVarianceResult",
    "BiasVarianceTradeoff",
    "LearningCurveResult",
    "PermutationTestResult",
    "ValidationCurveResult",
    "decompose_bias_variance",
    "make_bias_variance",
    "make_bias_variance_tradeoff",
    "make_learning_curve",
    "make_permutation_test",
    "make_validation_curve",
]


def _table(rows: list[tuple[str, str]]) -> str:
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name:<{width}}  {value}" for name, value in rows)


def _mean_se(scores: NDArray[np.float64]) -> str:
    """Per row: mean ± standard error over the folds."""
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(scores, axis=1) if scores.size else scores
        n = np.maximum(np.sum(~np.isnan(scores), axis=1), 1)
        se = np.nanstd(scores, axis=1, ddof=1) / np.sqrt(n) if scores.shape[1] > 1 else mean * 0
    return ", ".join(f"{m:.4g}±{s:.2g}" for m, s in zip(mean, se, strict=True))


class _Tuple(Exportable):
    """Mixin: read as the tuple of ``_items()`` (unpack, index, ``len``, ``np.asarray``)."""

    def _items(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __getitem__(self, index: Any) -> Any:
        return self._items()[index]


@dataclass(frozen=True, eq=False)
class LearningCurveResult(_Tuple):
    """Train and test scores for growing training sets, as scikit-learn's ``learning_curve``.

    Reads as the tuple ``(train_sizes_abs, train_scores, test_scores)``, and with
    ``return_times=True`` also ``fit_times, score_times``, like scikit-learn.

    Parameters
    ----------
    train_sizes_abs : ndarray of shape (n_sizes,)
        Rows each training set holds.
    train_scores, test_scores : ndarray of shape (n_sizes, n_folds)
        Scores on the training rows used and on the fold's test rows.
    fit_times, score_times : ndarray of shape (n_sizes, n_folds)
        Seconds, measured in the worker.
    metric : str
        The metric's name.
    return_times : bool
        Whether unpacking yields the times too.
    random_state_ : int or None
        The seed that shuffled the train rows (``shuffle=True``): the one
        given, or the one parcv drew when none was given (pass it back as
        ``random_state`` to repeat the curve). None without shuffle.
    """

    train_sizes_abs: NDArray[np.intp]
    train_scores: NDArray[np.float64]
    test_scores: NDArray[np.float64]
    fit_times: NDArray[np.float64]
    score_times: NDArray[np.float64]
    metric: str = "score"
    return_times: bool = field(default=False, repr=False)
    random_state_: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (``to_json`` writes it)."""
        names = ("train_sizes_abs", "train_scores", "test_scores", "fit_times", "score_times")
        return {"metric": self.metric, **{n: getattr(self, n) for n in names}}

    def _items(self) -> tuple[NDArray[Any], ...]:
        sizes = (self.train_sizes_abs, self.train_scores, self.test_scores)
        return (*sizes, self.fit_times, self.score_times) if self.return_times else sizes

    def __repr__(self) -> str:
        rows = [("train sizes", ", ".join(map(str, self.train_sizes_abs.tolist()))),
                (f"train {self.metric}", _mean_se(self.train_scores)),
                (f"test {self.metric}", _mean_se(self.test_scores))]  # fmt: skip
        folds = self.test_scores.shape[1]
        return f"LearningCurveResult ({folds} folds, mean ± se)\n{_table(rows)}"


@dataclass(frozen=True, eq=False)
class ValidationCurveResult(_Tuple):
    """Train and test scores along one parameter, as scikit-learn's ``validation_curve``.

    Reads as the tuple ``(train_scores, test_scores)``.

    Parameters
    ----------
    param_name : str
    param_range : list
        The values, in the order of the rows.
    train_scores, test_scores : ndarray of shape (n_values, n_folds)
    fit_times, score_times : ndarray of shape (n_values, n_folds)
    metric : str
    """

    param_name: str
    param_range: list[Any]
    train_scores: NDArray[np.float64]
    test_scores: NDArray[np.float64]
    fit_times: NDArray[np.float64]
    score_times: NDArray[np.float64]
    metric: str = "score"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (``to_json`` writes it)."""
        names = ("param_name", "param_range", "train_scores", "test_scores", "fit_times",
                 "score_times", "metric")  # fmt: skip
        return {n: getattr(self, n) for n in names}

    def _items(self) -> tuple[NDArray[np.float64], ...]:
        return self.train_scores, self.test_scores

    def __repr__(self) -> str:
        rows = [(self.param_name, ", ".join(repr(v) for v in self.param_range)),
                (f"train {self.metric}", _mean_se(self.train_scores)),
                (f"test {self.metric}", _mean_se(self.test_scores))]  # fmt: skip
        folds = self.test_scores.shape[1]
        return f"ValidationCurveResult ({folds} folds, mean ± se)\n{_table(rows)}"


@dataclass(frozen=True, eq=False)
class PermutationTestResult(_Tuple):
    """Whether a CV score beats chance, as scikit-learn's ``permutation_test_score``.

    Reads as the tuple ``(score, permutation_scores, pvalue)``.

    Parameters
    ----------
    score : float
        Mean CV score on the true targets.
    permutation_scores : ndarray of shape (n_permutations,)
        Mean CV score on each permutation of the targets.
    pvalue : float
        ``(#{permutation_scores >= score} + 1) / (n_permutations + 1)``: the
        chance that a model of targets unrelated to ``X`` scores as well.
    fold_scores : ndarray of shape (n_folds,)
        The per-fold scores on the true targets.
    metric : str
    """

    score: float
    permutation_scores: NDArray[np.float64]
    pvalue: float
    fold_scores: NDArray[np.float64] = field(repr=False)
    metric: str = "score"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (``to_json`` writes it)."""
        names = ("score", "permutation_scores", "pvalue", "fold_scores", "metric")
        return {n: getattr(self, n) for n in names}

    def _items(self) -> tuple[Any, ...]:
        return self.score, self.permutation_scores, self.pvalue

    def __repr__(self) -> str:
        perm = self.permutation_scores
        rows = [(self.metric, f"{self.score:.4g}"),
                (f"permuted (n={perm.size})", f"mean {perm.mean():.4g}, max {perm.max():.4g}"),
                ("p-value", f"{self.pvalue:.4g}")]  # fmt: skip
        return f"PermutationTestResult\n{_table(rows)}"


@dataclass(frozen=True, eq=False)
class BiasVarianceResult(_Tuple):
    """The bias-variance decomposition of a model's expected loss on a test set.

    For squared error, the expected loss over training sets is bias² +
    variance + noise; the noise (the irreducible error of the targets) is
    not separated from the bias here, as in mlxtend: ``avg_bias`` is the
    squared bias of the mean prediction against the observed test targets,
    which holds the noise, and ``avg_expected_loss = avg_bias + avg_var``
    exactly. For 0-1 loss (mlxtend's definition) the bias is the loss of the
    main (most frequent) prediction and the variance how often a round
    disagrees with it; they need not add up to the expected loss.

    Reads as the tuple ``(avg_expected_loss, avg_bias, avg_var)``, like mlxtend's
    ``bias_variance_decomp``.

    Parameters
    ----------
    avg_expected_loss, avg_bias, avg_var : float
        Averages over the test rows.
    loss : {"mse", "0-1"}
    n_rounds : int
        Bootstrap rounds.
    predictions : ndarray of shape (n_rounds, n_test)
        Every round's predictions on the test rows.
    """

    avg_expected_loss: float
    avg_bias: float
    avg_var: float
    loss: str
    n_rounds: int
    predictions: NDArray[Any] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view without the predictions (``to_json`` writes it)."""
        names = ("avg_expected_loss", "avg_bias", "avg_var", "loss", "n_rounds")
        return {n: getattr(self, n) for n in names}

    def _items(self) -> tuple[float, ...]:
        return self.avg_expected_loss, self.avg_bias, self.avg_var

    def __repr__(self) -> str:
        bias = "bias²" if self.loss == "mse" else "bias"
        rows = [("expected loss", f"{self.avg_expected_loss:.6g}"), (bias, f"{self.avg_bias:.6g}"),
                ("variance", f"{self.avg_var:.6g}")]  # fmt: skip
        return f"BiasVarianceResult ({self.loss}, {self.n_rounds} bootstrap rounds)\n{_table(rows)}"


def _grid(
    plan: Plan, records: Mapping[Key, Record], keys: NDArray[Any], attr: str, train: bool = False
) -> NDArray[np.float64]:
    """Values of ``attr`` (or the metric's test/train score) for a grid of fit keys."""
    metric = plan.scoring.refit
    out = np.empty(keys.shape[:2], dtype=np.float64)
    for index in np.ndindex(out.shape):
        record = records[tuple(keys[index])]
        if attr == "score":
            out[index] = (record.train_scores if train else record.test_scores)[metric]
        else:
            out[index] = getattr(record, attr)
    return out


def make_learning_curve(
    curve: CurvePlan, records: Mapping[Key, Record], *, return_times: bool, candidate: int = 0
) -> LearningCurveResult:
    """Assemble a learning curve from its records (fold-major units, as scikit-learn)."""
    n_sizes, n_folds = curve.train_sizes.size, curve.n_folds
    if curve.plan.increments:
        return _incremental_curve(curve, records, return_times, candidate)
    keys = np.empty((n_sizes, n_folds, 4), dtype=object)
    for f in range(n_folds):
        for s in range(n_sizes):
            keys[s, f] = ("fit", None, f * n_sizes + s, candidate)
    plan = curve.plan
    return LearningCurveResult(
        curve.train_sizes.copy(),
        _grid(plan, records, keys, "score", train=True),
        _grid(plan, records, keys, "score"),
        _grid(plan, records, keys, "fit_time"),
        _grid(plan, records, keys, "score_time"),
        curve.metric,
        return_times,
        curve.random_state,
    )


def _incremental_curve(
    curve: CurvePlan, records: Mapping[Key, Record], return_times: bool, candidate: int
) -> LearningCurveResult:
    """An incremental curve: each fold's record holds its column, one value per size."""
    kept = []
    for f in range(curve.n_folds):
        folds = records[("incr", f, candidate)].folds
        assert folds is not None  # an ok incr record keeps its steps (failures stop the run)
        kept.append(folds.test)
    columns = {name: np.column_stack([k[name] for k in kept]).astype(np.float64)
               for name in ("train", "test", "fit_time", "score_time")}  # fmt: skip
    return LearningCurveResult(
        curve.train_sizes.copy(), columns["train"], columns["test"], columns["fit_time"],
        columns["score_time"], curve.metric, return_times, curve.random_state,
    )  # fmt: skip


def make_validation_curve(
    curve: CurvePlan, records: Mapping[Key, Record], param_name: str
) -> ValidationCurveResult:
    """Assemble a validation curve from its records (one candidate per value)."""
    plan = curve.plan
    n_values = len(plan.candidates)
    keys = np.empty((n_values, curve.n_folds, 4), dtype=object)
    for c in range(n_values):
        for i in range(curve.n_folds):
            keys[c, i] = ("fit", None, i, c)
    return ValidationCurveResult(
        param_name,
        [c.params[param_name] for c in plan.candidates],
        _grid(plan, records, keys, "score", train=True),
        _grid(plan, records, keys, "score"),
        _grid(plan, records, keys, "fit_time"),
        _grid(plan, records, keys, "score_time"),
        curve.metric,
    )


def make_permutation_test(curve: CurvePlan, records: Mapping[Key, Record]) -> PermutationTestResult:
    """Assemble a permutation test: mean fold scores, and scikit-learn's p-value."""
    plan = curve.plan
    metric = plan.scoring.refit
    assert plan.permutations is not None  # a permutation test's plan
    fold_scores = [records[("fit", None, i, 0)].test_scores[metric] for i in range(curve.n_folds)]
    score = np.mean(fold_scores)
    permuted = np.array(
        [
            np.mean([records[("perm", p, i)].test_scores[metric] for i in range(len(folds))])
            for p, folds in enumerate(plan.permutations.folds)
        ]
    )
    pvalue = (np.sum(permuted >= score) + 1.0) / (permuted.size + 1)
    return PermutationTestResult(
        float(score), permuted, float(pvalue), np.asarray(fold_scores), curve.metric
    )


def decompose_bias_variance(
    predictions: NDArray[Any], y_test: NDArray[Any], loss: str
) -> tuple[float, float, float]:
    """Expected loss, bias and variance of bootstrap predictions, as mlxtend computes them.

    Parameters
    ----------
    predictions : ndarray of shape (n_rounds, n_test)
    y_test : ndarray of shape (n_test,)
    loss : {"mse", "0-1"}

    Examples
    --------
    >>> decompose_bias_variance(np.array([[1.0, 2.0], [3.0, 2.0]]), np.array([2.0, 2.0]), "mse")
    (0.5, 0.0, 0.5)
    """
    y_test = np.asarray(y_test)
    if BIAS_VARIANCE_LOSSES[loss] == "0-1_loss":
        pred = np.asarray(predictions).astype(np.int64)
        main = np.apply_along_axis(lambda x: np.argmax(np.bincount(x)), axis=0, arr=pred)
        expected = np.apply_along_axis(lambda x: (x != y_test).mean(), axis=1, arr=pred).mean()
        bias = np.sum(main != y_test) / y_test.size
        var = np.zeros(pred.shape[1])
        for row in pred:
            var += (row != main).astype(np.int_)
        var /= pred.shape[0]
        return float(expected), float(bias), float(var.sum() / y_test.shape[0])
    pred = np.asarray(predictions, dtype=np.float64)
    expected = np.apply_along_axis(lambda x: ((x - y_test) ** 2).mean(), axis=1, arr=pred).mean()
    main = np.mean(pred, axis=0)
    bias = np.sum((main - y_test) ** 2) / y_test.size
    return float(expected), float(bias), float(np.sum((main - pred) ** 2) / pred.size)


def make_bias_variance(
    curve: CurvePlan,
    records: Mapping[Key, Record],
    y_test: NDArray[Any],
    loss: str,
    candidate: int = 0,
) -> BiasVarianceResult:
    """Assemble the decomposition from every round's stored predictions."""
    rows = []
    for r in range(curve.n_folds):
        folds = records[("boot", r, candidate)].folds
        assert folds is not None  # an ok boot record keeps its predictions
        rows.append(folds.test["prediction"])
    predictions = np.vstack(rows)
    name = "mse" if BIAS_VARIANCE_LOSSES[loss] == "mse" else "0-1"
    if name == "0-1":
        predictions = predictions.astype(np.int64)
    expected, bias, var = decompose_bias_variance(predictions, y_test, loss)
    return BiasVarianceResult(expected, bias, var, name, curve.n_folds, predictions)


@dataclass(frozen=True, eq=False)
class BiasVarianceTradeoff(Exportable):
    """Bias-variance decompositions of every candidate of a search, on one hold-out test set.

    Parameters
    ----------
    params : list of dict
        Each candidate's parameters, in the search's order.
    results : list of BiasVarianceResult
        Each candidate's decomposition, on the same bootstrap samples.
    """

    params: list[dict[str, Any]]
    results: list[BiasVarianceResult] = field(repr=False)

    @property
    def avg_expected_loss(self) -> NDArray[np.float64]:
        """Expected loss per candidate."""
        return np.array([r.avg_expected_loss for r in self.results])

    @property
    def avg_bias(self) -> NDArray[np.float64]:
        """Bias (squared, for squared error) per candidate."""
        return np.array([r.avg_bias for r in self.results])

    @property
    def avg_var(self) -> NDArray[np.float64]:
        """Variance per candidate."""
        return np.array([r.avg_var for r in self.results])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view: each candidate's parameters and decomposition."""
        pairs = zip(self.params, self.results, strict=True)
        return {"candidates": [{"params": p, **r.to_dict()} for p, r in pairs]}

    def __repr__(self) -> str:
        first = self.results[0]
        bias = "bias²" if first.loss == "mse" else "bias"
        lines = [f"BiasVarianceTradeoff ({first.loss}, {first.n_rounds} bootstrap rounds)"]
        labels = [", ".join(f"{k}={v!r}" for k, v in p.items()) or "(as given)"
                  for p in self.params]  # fmt: skip
        width = max(len(text) for text in labels)
        lines.append(f"  {'candidate':<{width}}  {'loss':>10}  {bias:>10}  {'variance':>10}")
        for text, r in zip(labels, self.results, strict=True):
            lines.append(f"  {text:<{width}}  {r.avg_expected_loss:>10.4g}  {r.avg_bias:>10.4g}  "
                         f"{r.avg_var:>10.4g}")  # fmt: skip
        return "\n".join(lines)


def make_bias_variance_tradeoff(
    curve: CurvePlan, records: Mapping[Key, Record], y_test: NDArray[Any], loss: str
) -> BiasVarianceTradeoff:
    """Assemble every candidate's decomposition of a search's bias-variance plan."""
    candidates = curve.plan.candidates
    results = [make_bias_variance(curve, records, y_test, loss, c.index) for c in candidates]
    return BiasVarianceTradeoff([dict(c.params) for c in candidates], results)
