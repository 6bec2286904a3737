"""Plans of learning curves, validation curves, permutation tests and bias-variance.

Each is a plan of ordinary units run by the engine like any other:

- a learning curve is a CV whose splits are (the first ``n`` rows of each
  fold's train part, its test part), one ``fit`` unit per train size x fold;
- a validation curve is a search without refit over one parameter, one
  ``fit`` unit per value x fold;
- a permutation test is a CV of the model (``fit`` units) and one ``perm``
  unit per permutation x fold;
- a bias-variance decomposition is one ``boot`` unit per bootstrap round on
  the training rows followed by the test rows.

The splits and draws are scikit-learn's (and mlxtend's) for the same ``cv``
and seed, so the numbers are theirs.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import is_classifier

from parcv.errors import warn_at_caller
from parcv.plan.build import Plan, build_plan
from parcv.plan.data import Dataset, check_dataset
from parcv.plan.records import Unit
from parcv.plan.resampling import Permutations, check_seed, draw_bootstrap, draw_permutations
from parcv.plan.splits import Fold, check_scheme, materialize_folds

__all__ = [
    "BIAS_VARIANCE_LOSSES",
    "CurvePlan",
    "bias_variance_data",
    "candidate_space",
    "draw_seed",
    "for_candidates",
    "plan_bias_variance",
    "plan_learning_curve",
    "plan_permutation_test",
    "plan_validation_curve",
    "translate_train_sizes",
]

#: The losses of a bias-variance decomposition, as mlxtend names them.
BIAS_VARIANCE_LOSSES = {"mse": "mse", "0-1": "0-1_loss", "0-1_loss": "0-1_loss"}


@dataclass(frozen=True, slots=True)
class CurvePlan:
    """A plan, and what its records mean along the curve.

    Parameters
    ----------
    plan : Plan
    train_sizes : ndarray of int
        Learning curve: the absolute train sizes; empty otherwise.
    n_folds : int
        CV folds per point of the curve (bootstrap rounds for bias-variance).
    metric : str, default="score"
        The metric's name as the user gave it (``"score"``: ``estimator.score``
        or a callable).
    random_state : int or None, default=None
        The seed that shuffled a learning curve's train rows (None: not shuffled).
    """

    plan: Plan
    train_sizes: NDArray[np.intp]
    n_folds: int
    metric: str = "score"
    random_state: int | None = None


def _check_single_scoring(scoring: Any, where: str) -> str:
    """Refuse several metrics; return the metric's name (``"score"`` unless a str)."""
    if isinstance(scoring, (list, tuple, set, dict)):
        raise ValueError(
            f"{where} takes one metric, as scikit-learn's does; got scoring={scoring!r}. Pass "
            "one scorer name or callable, e.g. scoring='accuracy'."
        )
    return scoring if isinstance(scoring, str) else "score"


def _base_folds(estimator: Any, data: Dataset, cv: Any) -> tuple[Fold, ...]:
    splitter = check_scheme(cv, data.y, classifier=is_classifier(estimator))
    return materialize_folds(splitter, data.X, data.y, data.groups, params=data.split_params)


def translate_train_sizes(train_sizes: Any, n_max: int) -> NDArray[np.intp]:
    """Absolute train sizes, as scikit-learn's ``learning_curve`` computes them.

    Fractions in (0, 1] are of ``n_max`` (the first fold's train rows),
    truncated and clipped to [1, n_max]; ints are absolute, in [1, n_max].
    Duplicates are removed (with a ``RuntimeWarning``) and the sizes sorted.

    Examples
    --------
    >>> translate_train_sizes([0.1, 0.55, 1.0], 40).tolist()
    [4, 22, 40]
    >>> translate_train_sizes([0.0, 1.0], 40)
    Traceback (most recent call last):
    ...
    ValueError: train_sizes as fractions of the 40 train rows of a fold must be in (0, 1]; \
got [0.0, 1.0]. Pass e.g. train_sizes=[0.1, 0.325, 0.55, 0.775, 1.0].
    """
    sizes = np.asarray(train_sizes)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.number):
        raise ValueError(
            f"train_sizes must be a non-empty 1-D list of fractions or counts; got "
            f"{train_sizes!r}. Pass e.g. train_sizes=[0.1, 0.325, 0.55, 0.775, 1.0]."
        )
    shown = sizes.tolist()
    if np.issubdtype(sizes.dtype, np.floating):
        if sizes.min() <= 0.0 or sizes.max() > 1.0:
            raise ValueError(
                f"train_sizes as fractions of the {n_max} train rows of a fold must be in "
                f"(0, 1]; got {shown!r}. Pass e.g. train_sizes=[0.1, 0.325, 0.55, 0.775, 1.0]."
            )
        sizes = np.clip((sizes * n_max).astype(int), 1, n_max)
    elif sizes.min() <= 0 or sizes.max() > n_max:
        raise ValueError(
            f"train_sizes as counts of rows must be in [1, {n_max}] (the train rows of the "
            f"first fold); got {shown!r}. Pass counts up to {n_max}, or fractions in (0, 1]."
        )
    unique = np.unique(sizes).astype(np.intp)
    if unique.size < sizes.size:
        warn_at_caller(
            "Removed duplicate entries from 'train_sizes'. Number of ticks will be less than "
            f"the size of 'train_sizes': {unique.size} instead of {sizes.size} "
            f"(train_sizes {shown!r} repeat a size on {n_max} train rows; pass distinct sizes "
            "to keep every point).",
            RuntimeWarning,
        )
    return unique


def plan_learning_curve(
    estimator: Any,
    data: Dataset,
    *,
    train_sizes: Any,
    cv: Any,
    scoring: Any,
    shuffle: bool,
    random_state: Any,
    error_score: Any = math.nan,
    space: Any = None,
    drawn: bool = False,
    incremental: bool = False,
) -> CurvePlan:
    """Plan a learning curve: one ``fit`` unit per (fold, train size), fold-major.

    As scikit-learn: the train rows of each fold are (with ``shuffle``,
    permuted by one ``RandomState(random_state)`` fold after fold, then) cut
    to their first ``n`` rows for every size ``n``; train scores are on those rows.
    With a ``space`` (a search's candidates), every candidate has its curve.
    ``drawn``: parcv drew ``random_state`` (see :func:`draw_seed`); the plan
    records it for the store, so that a resume draws the same rows.
    ``incremental``: one ``incr`` unit per (fold, candidate) instead, which
    ``partial_fit``s the fold's train rows size after size (scikit-learn's
    ``exploit_incremental_learning``); a failing ``partial_fit`` stops the run,
    as in scikit-learn.
    """
    metric = _check_single_scoring(scoring, "learning_curve")
    folds = _base_folds(estimator, data, cv)
    sizes = translate_train_sizes(train_sizes, folds[0].train.size)
    seed = check_seed("random_state", random_state) if shuffle else None
    if seed is not None:
        rng = np.random.RandomState(seed)
        folds = tuple(Fold(rng.permutation(f.train).astype(np.intp), f.test) for f in folds)
    if incremental:
        curve = _incremental_curve(estimator, data, folds, sizes, scoring=scoring, space=space,
                                   seed=seed, drawn=drawn)  # fmt: skip
        return replace(curve, metric=metric)
    splits = [(f.train[:n], f.test) for f in folds for n in sizes]
    plan = build_plan(estimator, space, data, inner=splits, scoring=scoring, refit=False,
                      error_score=error_score, return_train_score=True, fast_cv=False)  # fmt: skip
    if drawn:
        plan = replace(plan, random_state=seed)
    return CurvePlan(plan, sizes, len(folds), metric, seed)


def _incremental_curve(
    estimator: Any,
    data: Dataset,
    folds: tuple[Fold, ...],
    sizes: NDArray[np.intp],
    *,
    scoring: Any,
    space: Any,
    seed: int | None,
    drawn: bool,
) -> CurvePlan:
    """The plan of an incremental learning curve: one ``incr`` unit per (fold, candidate)."""
    if not callable(getattr(estimator, "partial_fit", None)):
        raise ValueError(
            f"exploit_incremental_learning=True needs an estimator with partial_fit; "
            f"{type(estimator).__name__} has none. An estimator must support the partial_fit "
            "interface to exploit incremental learning; pass exploit_incremental_learning=False."
        )
    plan = build_plan(estimator, space, data, inner=[(f.train, f.test) for f in folds],
                      scoring=scoring, refit=False, error_score="raise", fast_cv=False)  # fmt: skip
    units = tuple(Unit("incr", None, i, c.index) for i in range(len(folds))
                  for c in plan.candidates)  # fmt: skip
    plan = replace(plan, units=units, increments=tuple(int(n) for n in sizes),
                   random_state=seed if drawn else None)  # fmt: skip
    return CurvePlan(plan, sizes, len(folds), random_state=seed)


def draw_seed() -> int:
    """Draw a seed from the operating system's entropy (once per run, in the driver).

    For a caller that asks for randomness without a seed, as scikit-learn's
    ``random_state=None``; the plan records the seed, so the run can be
    repeated and resumed.

    Examples
    --------
    >>> 0 <= draw_seed() < 2**32
    True
    """
    return int(np.random.SeedSequence().generate_state(1)[0])


def candidate_space(params: list[dict[str, Any]]) -> list[dict[str, list[Any]]]:
    """A space whose candidates are exactly ``params``, in order (a search's candidates).

    Examples
    --------
    >>> candidate_space([{"alpha": 1.0}, {}])
    [{'alpha': [1.0]}, {}]
    """
    return [{name: [value] for name, value in p.items()} for p in params]


def for_candidates(curve: CurvePlan, candidates: list[int]) -> CurvePlan:
    """The curve plan with only the units of ``candidates`` (e.g. a search's winner)."""
    keep = set(candidates)
    units = tuple(u for u in curve.plan.units if u.candidate in keep)
    return replace(curve, plan=replace(curve.plan, units=units))


def plan_validation_curve(
    estimator: Any,
    data: Dataset,
    *,
    param_name: Any,
    param_range: Any,
    cv: Any,
    scoring: Any,
    error_score: Any = math.nan,
) -> CurvePlan:
    """Plan a validation curve: one ``fit`` unit per (value of ``param_name``, fold)."""
    metric = _check_single_scoring(scoring, "validation_curve")
    if not isinstance(param_name, str):
        raise TypeError(
            f"param_name must be the str name of a parameter; got {param_name!r}. Pass e.g. "
            "param_name='alpha' (or 'step__alpha' inside a Pipeline)."
        )
    values = list(
        np.asarray(param_range).tolist() if hasattr(param_range, "dtype") else param_range
    )
    if not values:
        raise ValueError(
            f"param_range must hold at least one value of {param_name!r}; got {param_range!r}."
        )
    plan = build_plan(estimator, {param_name: values}, data, inner=cv, scoring=scoring,
                      refit=False, error_score=error_score, return_train_score=True,
                      fast_cv=False)  # fmt: skip
    return CurvePlan(plan, np.empty(0, dtype=np.intp), len(plan.inner_folds[None]), metric)


def _check_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an int >= 1; got {value!r}. Pass e.g. {name}=100.")
    return int(value)


def plan_permutation_test(
    estimator: Any,
    data: Dataset,
    *,
    cv: Any,
    scoring: Any,
    n_permutations: Any,
    random_state: Any,
) -> CurvePlan:
    """Plan a permutation test: a CV of the model, then ``perm`` units per permutation x fold.

    The permutations are scikit-learn's for ``random_state`` (within groups
    when ``groups`` is given); each permutation's folds come from the same
    splitter applied to the permuted targets, as scikit-learn does.
    """
    metric = _check_single_scoring(scoring, "permutation_test_score")
    n = _check_count("n_permutations", n_permutations)
    seed = check_seed("random_state", random_state)
    # Check (and for an iterator of splits, consume) cv once, as scikit-learn does.
    splitter = check_scheme(cv, data.y, classifier=is_classifier(estimator))
    plan = build_plan(estimator, None, data, inner=splitter, scoring=scoring, refit=False,
                      error_score="raise", fast_cv=False)  # fmt: skip
    indices = draw_permutations(data.n_samples, data.groups, n, seed)
    base = tuple(plan.inner_folds[None])
    folds = []
    for p in range(n):
        y = np.asarray(data.y)[indices[p]]
        made = materialize_folds(splitter, data.X, y, data.groups, params=data.split_params)
        # Folds that do not depend on y (KFold, GroupKFold) are the CV's own: one object,
        # which a plan sent to the workers pickles once, not once per permutation.
        folds.append(base if _same_folds(made, base) else made)
    units = tuple(Unit("perm", p, i, 0) for p in range(n) for i in range(len(folds[p])))
    permutations = Permutations(indices, tuple(folds))
    planned = replace(plan, units=plan.units + units, permutations=permutations)
    return CurvePlan(planned, np.empty(0, dtype=np.intp), len(plan.inner_folds[None]), metric)


def _same_folds(a: tuple[Fold, ...], b: tuple[Fold, ...]) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(f.train, g.train) and np.array_equal(f.test, g.test)
        for f, g in zip(a, b, strict=True)
    )


def bias_variance_data(X_train: Any, y_train: Any, X_test: Any, y_test: Any) -> Dataset:
    """The training rows followed by the test rows, as one checked data set."""
    import scipy.sparse as sp

    parts = [X_train, X_test]
    if all(sp.issparse(p) for p in parts):
        X: Any = sp.vstack(parts, format="csr")
    else:
        X = np.concatenate([np.asarray(p) for p in parts])
    y = np.concatenate([np.asarray(y_train), np.asarray(y_test)])
    for name, Xp, yp in (("train", X_train, y_train), ("test", X_test, y_test)):
        if Xp.shape[0] != len(yp):
            raise ValueError(
                f"X_{name} has {Xp.shape[0]} rows but y_{name} has {len(yp)}; pass X_{name} "
                f"and y_{name} of the same rows."
            )
    return check_dataset(X, y, None, None)


def plan_bias_variance(
    estimator: Any,
    data: Dataset,
    n_train: int,
    *,
    loss: Any,
    n_rounds: Any,
    random_state: Any,
    space: Any = None,
) -> CurvePlan:
    """Plan a bias-variance decomposition: one ``boot`` unit per bootstrap round.

    ``data`` holds the ``n_train`` training rows then the test rows; round
    ``r`` fits on mlxtend's ``r``-th bootstrap sample of the training rows.
    With a ``space``, every candidate is decomposed on the same samples.
    """
    if loss not in BIAS_VARIANCE_LOSSES:
        raise ValueError(
            f"loss must be 'mse' (squared error, regression) or '0-1' (0-1 loss, "
            f"classification); got {loss!r}."
        )
    if BIAS_VARIANCE_LOSSES[loss] == "0-1_loss":
        y = np.asarray(data.y)
        if not np.issubdtype(y.dtype, np.integer) or (y.size and y.min() < 0):
            raise ValueError(
                "loss='0-1' takes the most frequent prediction per test row by counting "
                f"labels, so the targets must be non-negative ints; got dtype {y.dtype.name!r}"
                f"{'' if y.size == 0 else f' (smallest {y.min()!r})'}. Encode the classes as "
                "0..k-1, e.g. with sklearn.preprocessing.LabelEncoder."
            )
    rounds = _check_count("n_rounds", n_rounds)
    seed = check_seed("random_state", random_state)
    test = np.arange(n_train, data.n_samples, dtype=np.intp)
    if n_train < 1 or test.size < 1:
        raise ValueError(
            f"bias_variance needs training and test rows; got {n_train} and {test.size}."
        )
    splits = [(rows, test) for rows in draw_bootstrap(n_train, rounds, seed)]
    plan = build_plan(estimator, space, data, inner=splits, refit=False, error_score="raise",
                      fast_cv=False)  # fmt: skip
    units = tuple(Unit("boot", None, r, c) for c in range(len(plan.candidates))
                  for r in range(rounds))  # fmt: skip
    return CurvePlan(replace(plan, units=units), np.empty(0, dtype=np.intp), rounds)
