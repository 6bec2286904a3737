"""Intervals for the cross-validation error that keep their coverage.

Pure numpy/scipy: nothing here fits a model. Every function takes losses that an engine
(parcv's task graph, or a plain loop over scikit-learn) produced.

* :func:`naive_cv_interval` -- the usual CV interval, per-sample or per-fold.
* :func:`plan_nested_cv`, :class:`NestedCVPlan`, :class:`NestedCVLosses`,
  :func:`ncv_interval` -- the nested cross-validation interval of Bates, Hastie &
  Tibshirani, "Cross-validation: what does it estimate and how well does it do it?",
  JASA 2023 (BHT below), Algorithm 1 with its bias correction and its bounds.
* :func:`bbc_cv`, :func:`bbc_bootstrap_indices` -- BBC-CV of Tsamardinos, Greasidou &
  Borboudakis, "Bootstrapping the out-of-sample predictions for efficient and accurate
  cross-validation", Machine Learning 2018.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

from parcv.stats.checks import check_confidence

__all__ = [
    "CVInterval",
    "FitUnit",
    "NestedCVLosses",
    "NestedCVPlan",
    "bbc_bootstrap_indices",
    "bbc_cv",
    "naive_cv_interval",
    "ncv_interval",
    "plan_nested_cv",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
Metric = Callable[[Any, Any], float]
RandomState = int | np.random.Generator | np.random.SeedSequence | None


@dataclass(frozen=True)
class CVInterval:
    """An interval for a cross-validated error or score.

    Parameters
    ----------
    method : str
        ``"naive"`` (usual CV interval), ``"ncv"`` (BHT nested CV) or ``"bbc"`` (BBC-CV).
    estimate : float
        Point estimate (for ``"ncv"``: bias-corrected; for ``"bbc"``: bootstrap mean).
    lower, upper : float
        Interval endpoints.
    confidence : float
        Nominal coverage, e.g. 0.9.
    se : float
        Standard error used for the width (``"naive"``, ``"ncv"``); for ``"bbc"`` the
        standard deviation of the bootstrap out-of-bag scores (the interval is percentile).
    n_fits : int or None
        Model fits the method needs; None when the caller did not say (BBC-CV without
        ``fold_ids``).
    naive : CVInterval or None
        The usual interval on the same data, for comparison.
    details : mapping of str to float
        Method-specific diagnostics (see each function's Returns).

    Examples
    --------
    >>> iv = CVInterval("naive", 1.0, 0.5, 1.5, 0.9, 0.3, 5)
    >>> iv.width, iv.covers(1.2)
    (1.0, True)
    """

    method: str
    estimate: float
    lower: float
    upper: float
    confidence: float
    se: float
    n_fits: int | None
    naive: CVInterval | None = None
    details: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A frozen result whose details could still be mutated would not be frozen.
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def width(self) -> float:
        """Return ``upper - lower``."""
        return self.upper - self.lower

    def covers(self, value: float) -> bool:
        """Return whether ``lower <= value <= upper``."""
        return self.lower <= value <= self.upper

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready view (``naive`` nested the same way)."""
        return {
            "method": self.method,
            "estimate": self.estimate,
            "lower": self.lower,
            "upper": self.upper,
            "confidence": self.confidence,
            "se": self.se,
            "n_fits": self.n_fits,
            "naive": None if self.naive is None else self.naive.to_dict(),
            "details": dict(self.details),
        }


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


def _show(value: object, limit: int = 160) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters (arrays can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_int(name: str, value: object, minimum: int, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {_show(value)}. {hint}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}. {hint}")
    return int(value)


def _float_array(name: str, value: object, ndim: int, shape: str) -> FloatArray:
    """Return ``value`` as a float array of ``ndim`` dimensions (finiteness not checked)."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must be an array of numbers of shape {shape}; got {_show(value)}. "
            "Convert it with np.asarray(..., dtype=float)."
        ) from err
    if arr.ndim != ndim:
        raise ValueError(
            f"{name} must be {ndim}-D of shape {shape}; got shape {arr.shape} from "
            f"{_show(value)}. Reshape it, or check which argument you passed."
        )
    return arr


def _check_finite(name: str, arr: FloatArray, mask: NDArray[np.bool_] | None = None) -> None:
    bad = ~np.isfinite(arr) if mask is None else mask & ~np.isfinite(arr)
    if bad.any():
        where = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:5]]
        raise ValueError(
            f"{name} must be finite; got NaN or inf at index {where} (first 5 shown) in "
            f"{_show(arr)}. A fit failed or a loss is undefined there: fix or drop those "
            "samples before computing the interval."
        )


def _check_fold_ids(name: str, value: object, n_samples: int | None) -> tuple[IntArray, int]:
    """Return (fold ids as intp, n_folds); folds are 0..K-1, each non-empty."""
    arr = np.asarray(value)
    if arr.ndim != 1 or not (arr.dtype.kind in "iu" or arr.size == 0):
        raise ValueError(
            f"{name} must be a 1-D integer array, the fold (0..K-1) of each sample; got "
            f"{_show(value)}. Build it e.g. with np.arange(n) % K, then shuffle."
        )
    if n_samples is not None and arr.size != n_samples:
        raise ValueError(
            f"{name} must have one fold id per sample ({n_samples}); got {arr.size} in "
            f"{_show(value)}. Pass the fold ids of the same samples as the losses."
        )
    k = int(arr.max()) + 1 if arr.size else 0
    counts = np.bincount(arr, minlength=k) if arr.size and arr.min() >= 0 else np.zeros(0)
    if k < 2 or counts.size != k or (counts == 0).any():
        raise ValueError(
            f"{name} must number the folds 0..K-1 with K >= 2 and every fold non-empty; got "
            f"{_show(value)}. Renumber with np.unique(fold_ids, return_inverse=True)[1]."
        )
    return arr.astype(np.intp), k


def _z(confidence: float) -> float:
    """Return the two-sided normal quantile z_{1 - alpha/2}, alpha = 1 - confidence."""
    return float(norm.ppf(0.5 + confidence / 2.0))


def _normal_interval(
    method: str,
    estimate: float,
    se: float,
    confidence: float,
    n_fits: int,
    *,
    naive: CVInterval | None = None,
    details: Mapping[str, float] | None = None,
) -> CVInterval:
    half = _z(confidence) * se
    return CVInterval(
        method,
        estimate,
        estimate - half,
        estimate + half,
        confidence,
        se,
        n_fits,
        naive,
        details or {},
    )


# ---------------------------------------------------------------------------
# naive CV interval
# ---------------------------------------------------------------------------


def naive_cv_interval(
    losses: ArrayLike,
    fold_ids: ArrayLike | None = None,
    confidence: float = 0.9,
    *,
    se_from: Literal["samples", "folds"] | None = None,
) -> CVInterval:
    """Return the usual cross-validation interval ``estimate +- z * se``.

    Parameters
    ----------
    losses : array-like of shape (n_folds,) or (n_samples,)
        Without ``fold_ids``: one value per fold (a loss or a score). With ``fold_ids``:
        one out-of-fold loss per sample.
    fold_ids : array-like of int of shape (n_samples,), optional
        Fold (0..K-1) of each sample; says that ``losses`` are per-sample.
    confidence : float, default=0.9
        Nominal coverage; the quantile is the normal ``z_{(1 + confidence) / 2}``.
    se_from : {"samples", "folds"}, optional
        ``"samples"`` (default with ``fold_ids``): ``estimate = mean(losses)``,
        ``se = sd(losses) / sqrt(n)`` -- the naive CV interval studied by BHT (their
        eq. for the naive interval; ``nestedcv::naive_cv``). ``"folds"`` (the only choice
        without ``fold_ids``): ``estimate = m = mean of the fold means s_k``,
        ``se = sqrt(sum (s_k - m)^2 / (K (K - 1)))`` -- parcv's ``summarize_scores``.

    Returns
    -------
    CVInterval
        ``method="naive"``, ``n_fits=K``, ``details`` with ``n_folds`` (and ``n_samples``).

    Raises
    ------
    TypeError
        If ``losses`` are not numbers or ``confidence`` is not a float.
    ValueError
        If shapes disagree, a value is not finite, fewer than 2 folds (or samples) are
        given, ``confidence`` is outside (0, 1), or ``se_from="samples"`` has no fold ids.

    Notes
    -----
    Both versions treat the K fold errors (or the n sample errors) as independent; they
    are not, because every sample is used for training in K - 1 fits. BHT show the
    interval can cover far below its nominal level; see :func:`ncv_interval`.

    Examples
    --------
    >>> iv = naive_cv_interval([1.0, 2.0, 3.0], confidence=0.9)
    >>> round(iv.estimate, 4), round(iv.se, 4), round(iv.upper, 4)
    (2.0, 0.5774, 2.9497)
    >>> iv = naive_cv_interval([1.0, 3.0, 2.0, 2.0], fold_ids=[0, 0, 1, 1])
    >>> round(iv.se, 4), iv.n_fits
    (0.4082, 2)
    """
    conf = check_confidence(confidence)
    if se_from not in (None, "samples", "folds"):
        raise ValueError(
            f"se_from must be 'samples', 'folds' or None; got {se_from!r}. Use 'samples' for "
            "sd/sqrt(n) over per-sample losses, 'folds' for the spread of the fold means."
        )
    if fold_ids is None:
        if se_from == "samples":
            raise ValueError(
                "se_from='samples' needs per-sample losses and their fold_ids; got "
                "fold_ids=None. Pass fold_ids=..., or pass one value per fold with se_from=None."
            )
        values = _float_array("losses", losses, 1, "(n_folds,)")
        _check_finite("losses", values)
        return _naive_from_folds(values, conf)
    sample_losses = _float_array("losses", losses, 1, "(n_samples,)")
    _check_finite("losses", sample_losses)
    folds, k = _check_fold_ids("fold_ids", fold_ids, sample_losses.size)
    if se_from == "folds":
        means = np.bincount(folds, weights=sample_losses, minlength=k) / np.bincount(folds)
        return _naive_from_folds(means, conf)
    n = sample_losses.size
    se = float(np.std(sample_losses, ddof=1)) / math.sqrt(n)
    details = {"n_folds": float(k), "n_samples": float(n)}
    return _normal_interval("naive", float(np.mean(sample_losses)), se, conf, k, details=details)


def _naive_from_folds(values: FloatArray, confidence: float) -> CVInterval:
    k = values.size
    if k < 2:
        raise ValueError(
            f"losses must hold at least 2 fold values for a standard error; got {k} in "
            f"{_show(values)}. Use K >= 2 folds."
        )
    mean = float(np.mean(values))
    se = math.sqrt(float(np.sum((values - mean) ** 2)) / (k * (k - 1)))
    return _normal_interval("naive", mean, se, confidence, k, details={"n_folds": float(k)})


# ---------------------------------------------------------------------------
# nested CV: the plan of fits (for an engine) and the losses it returns
# ---------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class FitUnit:
    """One model fit of the nested CV plan.

    Parameters
    ----------
    repetition : int
        Repetition r (each has its own random fold assignment).
    held_out : tuple of int
        ``(k,)``: the *outer* fit on all data minus fold k, evaluated on fold k (this is
        plain K-fold CV). ``(j, k)`` with ``j < k``: the *inner* fit on all data minus folds
        j and k, evaluated on both. Its losses on fold j are inner-CV losses of outer fold
        k, those on fold k inner-CV losses of outer fold j: BHT's fits "without folds
        {k, k'}" are the same fit for (k, k') and (k', k), so it is listed once.

    Examples
    --------
    >>> FitUnit(0, (1, 2)).is_outer, FitUnit(0, (2,)).is_outer
    (False, True)
    """

    repetition: int
    held_out: tuple[int, ...]

    @property
    def is_outer(self) -> bool:
        """Return whether this is the fit without a single fold (a plain CV fit)."""
        return len(self.held_out) == 1


def _held_out_sets(n_folds: int) -> Iterator[tuple[int, ...]]:
    for j in range(n_folds):
        for k in range(j + 1, n_folds):
            yield (j, k)
    for k in range(n_folds):
        yield (k,)


def _check_fold_matrix(fold_ids: object) -> tuple[IntArray, int]:
    """Validate (R, n) fold ids: every repetition uses folds 0..K-1, >= 2 samples each."""
    arr = np.asarray(fold_ids)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.dtype.kind not in "iu":
        raise ValueError(
            "fold_ids must be a 2-D integer array of shape (n_repetitions, n_samples); got "
            f"{_show(fold_ids)}. Stack one fold assignment per repetition with np.stack."
        )
    k = int(arr.max()) + 1
    for r, row in enumerate(arr):
        counts = np.bincount(row, minlength=k) if row.min() >= 0 else np.zeros(0)
        if k < 3 or counts.size != k or (counts < 2).any():
            raise ValueError(
                f"fold_ids[{r}] must number K >= 3 folds 0..K-1 with at least 2 samples each "
                f"(nested CV holds out 2 folds; a fold variance needs 2 samples); got fold "
                f"sizes {counts.tolist()} from {_show(row)}. Use fewer folds or more samples."
            )
    return arr.astype(np.intp), k


@dataclass(frozen=True, eq=False)
class NestedCVPlan:
    """The fits BHT nested CV needs: ``n_repetitions * K * (K + 1) / 2`` units.

    Build it with :func:`plan_nested_cv` or :meth:`from_fold_ids`. An engine runs every
    unit of :attr:`units` (in any order, in parallel): fit on
    :meth:`train_indices`, compute the per-sample loss on :meth:`test_indices` (in that
    order), then calls :meth:`assemble` with ``{unit: losses}``.

    Parameters
    ----------
    fold_ids : ndarray of int of shape (n_repetitions, n_samples)
        Fold of each sample in each repetition.
    n_folds : int
        K.
    units : tuple of FitUnit
        Per repetition: the K (K - 1) / 2 inner fits, then the K outer fits.

    Examples
    --------
    >>> plan = NestedCVPlan.from_fold_ids([[0, 0, 1, 1, 2, 2]])
    >>> plan.n_fits, plan.units[0], plan.train_indices(plan.units[0]).tolist()
    (6, FitUnit(repetition=0, held_out=(0, 1)), [4, 5])
    """

    fold_ids: IntArray
    n_folds: int
    units: tuple[FitUnit, ...]

    @classmethod
    def from_fold_ids(cls, fold_ids: ArrayLike) -> NestedCVPlan:
        """Return the plan for given fold assignments of shape (n_repetitions, n_samples).

        Use it to share repetition 0's outer fits with a plain CV that already ran: pass
        that CV's fold ids as row 0.
        """
        folds, k = _check_fold_matrix(fold_ids)
        folds.setflags(write=False)
        units = tuple(FitUnit(r, held) for r in range(folds.shape[0]) for held in _held_out_sets(k))
        return cls(folds, k, units)

    @property
    def n_repetitions(self) -> int:
        """Return R."""
        return int(self.fold_ids.shape[0])

    @property
    def n_samples(self) -> int:
        """Return n."""
        return int(self.fold_ids.shape[1])

    @property
    def n_fits(self) -> int:
        """Return the number of fits, ``R * K * (K + 1) / 2``."""
        return len(self.units)

    def _mask(self, unit: FitUnit) -> NDArray[np.bool_]:
        if not isinstance(unit, FitUnit) or not 0 <= unit.repetition < self.n_repetitions:
            raise ValueError(
                f"unit must be a FitUnit of this plan; got {unit!r}. Iterate over plan.units."
            )
        row = self.fold_ids[unit.repetition]
        mask = row == unit.held_out[0]
        for fold in unit.held_out[1:]:  # at most 2 folds: cheaper than np.isin per fit
            mask |= row == fold
        return np.asarray(mask, dtype=bool)

    def train_indices(self, unit: FitUnit) -> IntArray:
        """Return the sorted indices of the samples the unit is fitted on."""
        return np.flatnonzero(~self._mask(unit))

    def test_indices(self, unit: FitUnit) -> IntArray:
        """Return the sorted indices of the samples the unit's losses are computed on."""
        return np.flatnonzero(self._mask(unit))

    def assemble(self, unit_losses: Mapping[FitUnit, ArrayLike]) -> NestedCVLosses:
        """Return the :class:`NestedCVLosses` from every unit's per-sample test losses.

        Raises
        ------
        ValueError
            If a unit is missing or unknown, or its losses are not one per test sample
            (a fold-level metric such as ROC AUC or R^2 has no per-sample form: the nested
            CV interval is not available for it).
        """
        known = set(self.units)
        missing = [u for u in self.units if u not in unit_losses]
        extra = [u for u in unit_losses if u not in known]
        if missing or extra:
            raise ValueError(
                f"unit_losses must have exactly one entry per unit of the plan; missing "
                f"{missing[:3]}, unknown {extra[:3]} (first 3 shown). Run every unit of "
                "plan.units and key its losses by the unit."
            )
        inner = np.full((self.n_repetitions, self.n_folds, self.n_samples), np.nan)
        outer = np.full((self.n_repetitions, self.n_samples), np.nan)
        for unit in self.units:
            self._store(unit, unit_losses[unit], inner, outer)
        return NestedCVLosses(self.fold_ids, inner, outer)

    def _store(
        self, unit: FitUnit, losses: ArrayLike, inner: FloatArray, outer: FloatArray
    ) -> None:
        test = self.test_indices(unit)
        name = f"unit_losses[{unit!r}]"
        values = _float_array(name, losses, 1, f"({test.size},), one loss per test sample")
        if values.size != test.size:
            raise ValueError(
                f"{name} must hold one loss per test sample ({test.size}); got {values.size}. "
                "The nested CV interval needs per-sample losses (squared error, 0-1, log "
                "loss); a fold-level metric (ROC AUC, R^2, F1) has none, so use interval=None."
            )
        r = unit.repetition
        if unit.is_outer:
            outer[r, test] = values
            return
        j, k = unit.held_out
        # The fit without {j, k} scores fold j inside outer fold k's inner CV, and vice versa.
        on_j = self.fold_ids[r, test] == j
        inner[r, k, test[on_j]] = values[on_j]
        inner[r, j, test[~on_j]] = values[~on_j]


def plan_nested_cv(
    n_samples: int,
    n_folds: int = 10,
    n_repetitions: int = 50,
    random_state: RandomState = None,
) -> NestedCVPlan:
    """Return the fits of BHT nested CV for ``n_samples`` samples.

    Each repetition assigns the samples to ``n_folds`` folds at random (sizes differ by at
    most one) and needs K (K - 1) / 2 fits without two folds plus K fits without one fold.

    Parameters
    ----------
    n_samples : int
        n, at least ``2 * n_folds``.
    n_folds : int, default=10
        K >= 3 (two folds are held out at once). BHT use K = 10.
    n_repetitions : int, default=50
        R random fold assignments. More repetitions stabilise the MSE estimate: BHT's
        experiments use 200, ``nestedcv``'s default is 50.
    random_state : int, Generator, SeedSequence or None
        Seed of the fold assignments.

    Returns
    -------
    NestedCVPlan

    Raises
    ------
    TypeError, ValueError
        If an argument is not an integer or is too small.

    Examples
    --------
    >>> plan = plan_nested_cv(40, n_folds=4, n_repetitions=3, random_state=0)
    >>> plan.n_fits, plan.fold_ids.shape
    (30, (3, 40))
    """
    k = _check_int("n_folds", n_folds, 3, "Nested CV holds out two folds: use K >= 3 (BHT: 10).")
    n = _check_int("n_samples", n_samples, 2 * k, f"Each of the {k} folds needs 2 samples.")
    reps = _check_int("n_repetitions", n_repetitions, 1, "Use e.g. 50 (BHT use 200).")
    rng = np.random.default_rng(random_state)
    balanced = np.arange(n) % k
    return NestedCVPlan.from_fold_ids(np.stack([rng.permutation(balanced) for _ in range(reps)]))


@dataclass(frozen=True, eq=False)
class NestedCVLosses:
    """Per-sample losses of every nested-CV fit, as dense arrays.

    Parameters
    ----------
    fold_ids : ndarray of int of shape (R, n)
        Fold of sample i in repetition r.
    inner : ndarray of float of shape (R, K, n)
        ``inner[r, k, i]`` for ``fold_ids[r, i] = j != k``: loss of sample i under the fit
        on all data minus folds {j, k}. Entries with ``fold_ids[r, i] == k`` are ignored
        (NaN after :meth:`NestedCVPlan.assemble`). So ``e_in(r, k)``, BHT's inner-CV
        losses of outer fold k, are ``inner[r, k, fold_ids[r] != k]``.
    outer : ndarray of float of shape (R, n)
        ``outer[r, i]``: loss of sample i under the fit on all data minus its fold. Row r
        is a plain K-fold CV on all data (per-sample losses); ``e_out(r, k)`` are
        ``outer[r, fold_ids[r] == k]``.

    Examples
    --------
    >>> ids = np.array([[0, 0, 1, 1, 2, 2]])
    >>> inner = np.arange(18.0).reshape(1, 3, 6)
    >>> losses = NestedCVLosses(ids, inner, np.ones((1, 6)))
    >>> losses.e_in(0, 1).tolist(), losses.e_out(0, 1).tolist()
    ([6.0, 7.0, 10.0, 11.0], [1.0, 1.0])
    """

    fold_ids: IntArray
    inner: FloatArray
    outer: FloatArray

    def __post_init__(self) -> None:
        folds, k = _check_fold_matrix(self.fold_ids)
        reps, n = folds.shape
        inner = _float_array("inner", self.inner, 3, f"({reps}, {k}, {n})")
        outer = _float_array("outer", self.outer, 2, f"({reps}, {n})")
        if inner.shape != (reps, k, n) or outer.shape != (reps, n):
            raise ValueError(
                f"inner and outer must have shapes {(reps, k, n)} and {(reps, n)} to match "
                f"fold_ids {folds.shape} with K={k}; got {inner.shape} and {outer.shape}. "
                "Build them with NestedCVPlan.assemble."
            )
        _check_finite("inner", inner, self.in_mask_of(folds, k))
        _check_finite("outer", outer)
        for name, arr in (("fold_ids", folds), ("inner", inner), ("outer", outer)):
            arr = arr.copy()
            arr.setflags(write=False)  # frozen means frozen: no aliasing of caller arrays
            object.__setattr__(self, name, arr)

    @staticmethod
    def in_mask_of(fold_ids: IntArray, n_folds: int) -> NDArray[np.bool_]:
        """Return the (R, K, n) mask of the entries of ``inner`` that are used."""
        return np.not_equal(fold_ids[:, None, :], np.arange(n_folds)[None, :, None])

    @property
    def n_folds(self) -> int:
        """Return K."""
        return int(self.inner.shape[1])

    @property
    def n_repetitions(self) -> int:
        """Return R."""
        return int(self.fold_ids.shape[0])

    @property
    def n_samples(self) -> int:
        """Return n."""
        return int(self.fold_ids.shape[1])

    def e_in(self, r: int, k: int) -> FloatArray:
        """Return BHT's ``e_in`` of repetition r, outer fold k (sorted by sample)."""
        return np.asarray(self.inner[r, k, self.fold_ids[r] != k], dtype=np.float64)

    def e_out(self, r: int, k: int) -> FloatArray:
        """Return BHT's ``e_out`` of repetition r, outer fold k (sorted by sample)."""
        return np.asarray(self.outer[r, self.fold_ids[r] == k], dtype=np.float64)


# ---------------------------------------------------------------------------
# nested CV: the interval
# ---------------------------------------------------------------------------


def _ncv_terms(losses: NestedCVLosses) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Return BHT Algorithm 1's (a_list, b_list) over all (r, k), and all pooled e_in."""
    in_mask = losses.in_mask_of(losses.fold_ids, losses.n_folds)
    out_mask = ~in_mask
    mean_in = np.where(in_mask, losses.inner, 0.0).sum(-1) / in_mask.sum(-1)
    outer = np.broadcast_to(losses.outer[:, None, :], in_mask.shape)
    n_out = out_mask.sum(-1)
    mean_out = np.where(out_mask, outer, 0.0).sum(-1) / n_out
    dev2 = np.where(out_mask, (outer - mean_out[..., None]) ** 2, 0.0).sum(-1)
    a_list = (mean_in - mean_out) ** 2
    b_list = dev2 / (n_out - 1) / n_out  # var(e_out) / |I_k|, var with ddof=1 as R's var()
    return a_list.ravel(), b_list.ravel(), losses.inner[in_mask]


def ncv_interval(
    losses: NestedCVLosses,
    confidence: float = 0.9,
    *,
    bias_correction: bool = True,
) -> CVInterval:
    """Return the BHT nested-CV interval for the prediction error ``Err_XY``.

    What is estimated: ``Err_XY = E[loss(f_hat(X), Y) | data]``, the expected loss on a
    new sample of the model fit *on these n samples* -- not ``Err = E[Err_XY]``, the
    average over data sets that plain CV tracks more closely (BHT's main result). The width
    comes from an estimate of ``MSE = E[(Err_hat^CV - Err_XY)^2]``, so it accounts for the
    correlation between folds that the naive interval ignores.

    Parameters
    ----------
    losses : NestedCVLosses
        Per-sample losses of every fit of the plan (:meth:`NestedCVPlan.assemble`).
    confidence : float, default=0.9
        Nominal coverage; normal quantile ``z = z_{(1 + confidence) / 2}``.
    bias_correction : bool, default=True
        Subtract BHT's bias estimate from the centre (as BHT recommend).

    Returns
    -------
    CVInterval
        ``method="ncv"``; ``estimate = Err_NCV - bias``; ``lower/upper = estimate -+ z se``;
        ``n_fits = R K (K + 1) / 2``; ``naive``: the per-sample naive interval of
        repetition 0's plain CV (``cross_validate(interval="ncv")`` puts its
        own CV's naive interval there instead, so that a result has one).
        ``details``: ``err_ncv``, ``err_cv``, ``bias``,
        ``mse_hat`` (Algorithm 1's output), ``se_unclipped``, ``se_lower``, ``se_upper``,
        ``inflation`` (``se / se_lower``, ``nestedcv``'s ``sd_infl``), ``sd_inner``,
        ``n_folds``, ``n_repetitions``.

    Raises
    ------
    TypeError, ValueError
        For a ``confidence`` outside (0, 1) or ``losses`` of another type.

    Notes
    -----
    Not available for fold-level metrics (ROC AUC, R^2, F1, ...): every quantity below is
    a mean or variance of per-sample losses. With ``a_{rk} = (mean e_in(r,k) -
    mean e_out(r,k))^2`` and ``b_{rk} = var(e_out(r,k)) / |I_k|`` (BHT Algorithm 1):

    * ``MSE_hat = mean(a) - mean(b)``; it is the MSE of CV on n (K - 1) / K samples, so it
      is rescaled to n samples by (K - 1) / K: ``se_raw = sqrt(max(0, MSE_hat (K-1)/K))``.
    * ``se = clip(se_raw, s / sqrt(n), sqrt(K) s / sqrt(n))`` where s is the sd of all
      pooled e_in: between fold errors that are independent and fully dependent (BHT's
      bounds; ``nestedcv``'s ``max(1, min(sd_infl, sqrt(K)))``).
    * ``Err_NCV = mean of all e_in``: the error of a fit on n (K - 2) / K samples;
      ``Err_CV = mean of all e_out`` (R plain CVs, no extra fits): n (K - 1) / K samples.
      If the error decays like 1/n_train, extrapolating to n gives
      ``bias = (1 + (K - 2) / K) (Err_NCV - Err_CV)`` (BHT's bias correction; the R
      package ``nestedcv`` uses ``1 + ((K - 2) / K)^1.5`` and fresh CV runs for Err_CV).

    The interval is ``Err_NCV - bias -+ z se``. It is never narrower than ``z s / sqrt(n)``
    (pooled *inner* sd) but can be narrower than the naive interval when the outer losses
    vary more than the inner ones.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> plan = plan_nested_cv(30, n_folds=3, n_repetitions=2, random_state=rng)
    >>> units = {u: rng.exponential(size=plan.test_indices(u).size) for u in plan.units}
    >>> iv = ncv_interval(plan.assemble(units), confidence=0.9)
    >>> iv.method, iv.n_fits, iv.lower < iv.estimate < iv.upper
    ('ncv', 12, True)
    >>> bool(iv.details["se_lower"] <= iv.se <= iv.details["se_upper"])
    True
    """
    conf = check_confidence(confidence)
    if not isinstance(losses, NestedCVLosses):
        raise TypeError(
            f"losses must be a NestedCVLosses; got {_show(losses)}. Build it with "
            "plan_nested_cv(...).assemble({unit: per-sample losses})."
        )
    if not isinstance(bias_correction, bool | np.bool_):
        raise TypeError(f"bias_correction must be True or False; got {bias_correction!r}.")
    a_list, b_list, pooled_in = _ncv_terms(losses)
    k, n = losses.n_folds, losses.n_samples
    mse_hat = float(np.mean(a_list) - np.mean(b_list))
    sd_inner = float(np.std(pooled_in, ddof=1))
    se_lower = sd_inner / math.sqrt(n)
    se_upper = math.sqrt(k) * se_lower
    se_raw = math.sqrt(max(0.0, mse_hat * (k - 1) / k))
    se = min(max(se_raw, se_lower), se_upper)
    err_ncv, err_cv = float(np.mean(pooled_in)), float(np.mean(losses.outer))
    bias = (1.0 + (k - 2) / k) * (err_ncv - err_cv) if bias_correction else 0.0
    naive = naive_cv_interval(losses.outer[0], losses.fold_ids[0], conf)
    details = {
        "err_ncv": err_ncv,
        "err_cv": err_cv,
        "bias": bias,
        "mse_hat": mse_hat,
        "se_unclipped": se_raw,
        "se_lower": se_lower,
        "se_upper": se_upper,
        "inflation": se / se_lower if se_lower > 0 else 1.0,
        "sd_inner": sd_inner,
        "n_folds": float(k),
        "n_repetitions": float(losses.n_repetitions),
    }
    n_fits = losses.n_repetitions * k * (k + 1) // 2
    return _normal_interval("ncv", err_ncv - bias, se, conf, n_fits, naive=naive, details=details)


# ---------------------------------------------------------------------------
# BBC-CV
# ---------------------------------------------------------------------------


def bbc_bootstrap_indices(
    n_samples: int, n_bootstrap: int = 1000, random_state: RandomState = None
) -> IntArray:
    """Return bootstrap row indices of shape (n_bootstrap, n_samples) for :func:`bbc_cv`.

    Rows are drawn with replacement; a draw that contains every row (no out-of-bag row
    to evaluate on) is redrawn.

    Examples
    --------
    >>> idx = bbc_bootstrap_indices(5, n_bootstrap=3, random_state=0)
    >>> idx.shape, bool(all(len(set(row)) < 5 for row in idx.tolist()))
    ((3, 5), True)
    """
    n = _check_int("n_samples", n_samples, 2, "BBC-CV needs out-of-bag rows: use n >= 2.")
    b = _check_int("n_bootstrap", n_bootstrap, 1, "Use e.g. n_bootstrap=1000.")
    rng = np.random.default_rng(random_state)
    idx = rng.integers(0, n, size=(b, n))
    while True:
        ordered = np.sort(idx, axis=1)
        full = (np.diff(ordered, axis=1) != 0).all(axis=1)  # n distinct values: nothing OOB
        if not full.any():
            return idx.astype(np.intp)
        idx[full] = rng.integers(0, n, size=(int(full.sum()), n))


def _bbc_scores_per_sample(values: FloatArray, boot: IntArray, sign: float) -> FloatArray:
    n = values.shape[0]
    counts = np.zeros((boot.shape[0], n))
    np.add.at(counts, (np.repeat(np.arange(boot.shape[0]), n), boot.ravel()), 1.0)
    in_bag = counts @ values / n  # mean over the bootstrap sample, duplicates counted
    best = np.argmax(sign * in_bag, axis=1)  # ties: first candidate, as GridSearchCV
    oob = counts == 0
    chosen = values[:, best].T  # (B, n): column of each bootstrap's winner
    return np.asarray((oob * chosen).sum(axis=1) / oob.sum(axis=1), dtype=np.float64)


def _call_metric(metric: Metric, y: Any, pred: Any, where: str) -> float:
    try:
        return float(metric(y, pred))
    except Exception as err:  # name the bootstrap: an OOB set with one class breaks AUC
        raise ValueError(
            f"metric {metric!r} failed on {where}: {err!r}. Make it defined on every "
            "subset (e.g. use more samples, or a per-sample loss with metric=None)."
        ) from err


def _bbc_scores_metric(
    values: NDArray[Any], y: Any, metric: Metric, boot: IntArray, sign: float
) -> FloatArray:
    n, n_cand = values.shape[:2]
    scores = np.empty(boot.shape[0])
    for b, rows in enumerate(boot):
        in_bag = [
            _call_metric(metric, y[rows], values[rows, c], f"bootstrap {b}") for c in range(n_cand)
        ]
        best = int(np.argmax(sign * np.asarray(in_bag)))
        oob = np.setdiff1d(np.arange(n), rows)
        scores[b] = _call_metric(metric, y[oob], values[oob, best], f"bootstrap {b} (OOB)")
    return scores


def _bbc_inputs(values: ArrayLike, y: ArrayLike | None, metric: Metric | None) -> NDArray[Any]:
    """Return per-sample values as floats, or predictions as given (labels may be strings)."""
    if metric is None:
        arr = _float_array("values", values, 2, "(n_samples, n_candidates) of per-sample losses")
        if y is not None:
            raise ValueError(
                f"y is only used with metric=...; got y={_show(y)} with metric=None. Pass "
                "per-sample losses or scores without y, or out-of-fold predictions with "
                "y and metric."
            )
        _check_finite("values", arr)
        return arr
    preds = np.asarray(values)
    n_y = -1 if y is None else np.asarray(y).reshape(-1).size
    if preds.ndim < 2 or not callable(metric) or n_y != preds.shape[0]:
        raise ValueError(
            "with metric=..., values must be out-of-fold predictions of shape "
            "(n_samples, n_candidates, ...), y one target per sample and metric a "
            f"callable(y, pred) -> float; got values shape {preds.shape}, y={_show(y)}, "
            f"metric={metric!r}."
        )
    if preds.dtype.kind == "f":
        _check_finite("values", np.asarray(preds, dtype=np.float64))
    return preds


def bbc_cv(
    values: ArrayLike,
    y: ArrayLike | None = None,
    metric: Metric | None = None,
    *,
    greater_is_better: bool,
    n_bootstrap: int = 1000,
    confidence: float = 0.9,
    random_state: RandomState = None,
    fold_ids: ArrayLike | None = None,
) -> CVInterval:
    """Return the BBC-CV estimate of the selected candidate's performance, with interval.

    Tsamardinos et al. (2018), BBC-CV: for b = 1..B draw n rows with replacement; choose
    the candidate with the best performance on those in-bag rows; score it on the
    out-of-bag rows. The estimate is the mean of the B out-of-bag scores, the interval
    their percentile interval. No model is refitted: only the out-of-fold predictions (or
    per-sample losses) of all candidates from one CV are resampled.

    Parameters
    ----------
    values : array-like of shape (n_samples, n_candidates) or (n_samples, n_candidates, ...)
        With ``metric=None``: per-sample losses or scores of every candidate's
        out-of-fold prediction, performance = column mean. With ``metric``: the
        out-of-fold predictions themselves.
    y : array-like of shape (n_samples,), optional
        Targets; only with ``metric``.
    metric : callable(y, pred) -> float, optional
        Performance of predictions on a subset (may be a non-per-sample one: ROC AUC).
    greater_is_better : bool
        True for scores (accuracy, AUC), False for losses (squared error, 0-1 loss).
        Required: picking the wrong direction selects the worst candidate.
    n_bootstrap : int, default=1000
        B.
    confidence : float, default=0.9
        Coverage of the percentile interval.
    random_state : int, Generator, SeedSequence or None
        Seed of the bootstrap (:func:`bbc_bootstrap_indices` with the same seed gives the
        same rows).
    fold_ids : array-like of int of shape (n_samples,), optional
        CV folds of the predictions; if given, ``naive`` is the usual interval of the
        CV winner and ``n_fits = n_candidates * K``.

    Returns
    -------
    CVInterval
        ``method="bbc"``, ``se`` = sd of the out-of-bag scores. ``details``:
        ``raw_winner_score`` (the winner's CV performance on all rows), ``winner``,
        ``optimism`` (how much better the raw score looks than the BBC estimate; > 0
        means the raw score is optimistic), ``n_candidates``, ``n_bootstrap``.

    Raises
    ------
    TypeError, ValueError
        For malformed inputs (see messages), or a metric that fails on a bootstrap set.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> correct = (rng.random((60, 20)) < 0.7).astype(float)  # 20 equal candidates
    >>> iv = bbc_cv(correct, greater_is_better=True, n_bootstrap=200, random_state=1)
    >>> bool(iv.details["optimism"] > 0), bool(iv.lower < iv.estimate < iv.upper)
    (True, True)
    """
    conf = check_confidence(confidence)
    if not isinstance(greater_is_better, bool | np.bool_):
        raise TypeError(
            f"greater_is_better must be True or False; got {greater_is_better!r}. True for "
            "scores such as accuracy, False for losses such as squared error."
        )
    arr = _bbc_inputs(values, y, metric)
    sign = 1.0 if greater_is_better else -1.0
    boot = bbc_bootstrap_indices(arr.shape[0], n_bootstrap, random_state)
    if metric is None:
        scores = _bbc_scores_per_sample(arr, boot, sign)
        overall = arr.mean(axis=0)
    else:
        y_arr = np.asarray(y)
        scores = _bbc_scores_metric(arr, y_arr, metric, boot, sign)
        overall = np.array(
            [_call_metric(metric, y_arr, arr[:, c], "all rows") for c in range(arr.shape[1])]
        )
    return _bbc_result(arr, y, metric, scores, overall, sign, conf, fold_ids)


def _bbc_result(
    arr: NDArray[Any],
    y: ArrayLike | None,
    metric: Metric | None,
    scores: FloatArray,
    overall: FloatArray,
    sign: float,
    confidence: float,
    fold_ids: ArrayLike | None,
) -> CVInterval:
    winner = int(np.argmax(sign * overall))
    estimate = float(np.mean(scores))
    lower, upper = np.quantile(scores, [(1 - confidence) / 2, (1 + confidence) / 2])
    naive, n_fits = None, None
    if fold_ids is not None:
        folds, k = _check_fold_ids("fold_ids", fold_ids, arr.shape[0])
        n_fits = arr.shape[1] * k
        if metric is None:
            naive = naive_cv_interval(arr[:, winner], folds, confidence)
        else:
            y_arr = np.asarray(y)
            per_fold = [
                _call_metric(metric, y_arr[folds == f], arr[folds == f, winner], f"fold {f}")
                for f in range(k)
            ]
            naive = naive_cv_interval(per_fold, confidence=confidence)
    se = float(np.std(scores, ddof=1)) if scores.size > 1 else float("nan")
    details = {
        "raw_winner_score": float(overall[winner]),
        "winner": float(winner),
        "optimism": sign * (float(overall[winner]) - estimate),
        "n_candidates": float(arr.shape[1]),
        "n_bootstrap": float(scores.size),
    }
    return CVInterval(
        "bbc", estimate, float(lower), float(upper), confidence, se, n_fits, naive, details
    )
