"""Fit a Pipeline's shared prefix once for the units of a chunk that share it.

Units on one fold whose candidates set the same parameters on steps ``0..j``
(:mod:`parcv.plan.prefix`) would each fit those steps on the same rows. A
:class:`PrefixCache` fits each such prefix once, exactly as ``Pipeline.fit``
would (``fit_transform`` of each step on the output of the one before), and
hands the fitted steps to every unit that shares them: the unit then fits only
its own remaining steps, and is scored as a whole ``Pipeline`` on its test rows,
so its scores are those of an unshared fit, bit for bit.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PrefixCache", "PrefixFit", "fit_with_prefix"]


@dataclass(frozen=True, slots=True)
class _Fitted:
    """One fitted step of a prefix, the data it outputs, and what fitting it cost."""

    step: Any
    output: Any
    seconds: float
    warnings: tuple[str, ...]
    error: BaseException | None = None


@dataclass
class PrefixCache:
    """Fitted prefixes of the fold a chunk is on, keyed by (depth, prefix id).

    The cache holds one fold at a time: units of a chunk come fold by fold,
    so a new fold drops the transformed data of the last one.
    """

    fold: tuple[Any, ...] | None = None
    steps: dict[tuple[int, int], _Fitted] = field(default_factory=dict)

    def on_fold(self, fold: tuple[Any, ...]) -> None:
        """Start caching for ``fold`` (forgetting another fold's prefixes)."""
        if fold != self.fold:
            self.fold, self.steps = fold, {}


def _shareable(pipeline: Any, depth: int) -> bool:
    """Every prefix step is a real transformer (no passthrough), as Pipeline would fit it."""
    for _, step in pipeline.steps[:depth]:
        if step is None or isinstance(step, str):
            return False
        if not hasattr(step, "transform") or not hasattr(step, "fit"):
            return False
    return True


def _fit_transform(step: Any, X: Any, y: Any) -> Any:
    # What scikit-learn's Pipeline does for each step before the last (_fit_transform_one).
    if hasattr(step, "fit_transform"):
        return step.fit_transform(X, y)
    return step.fit(X, y).transform(X)


def _fit_step(step: Any, X: Any, y: Any) -> _Fitted:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            output = _fit_transform(step, X, y)
        except Exception as err:
            names = tuple(w.category.__name__ for w in caught)
            return _Fitted(None, None, time.perf_counter() - t0, names, err)
    names = tuple(w.category.__name__ for w in caught)
    return _Fitted(step, output, time.perf_counter() - t0, names)


@dataclass(frozen=True, slots=True)
class PrefixFit:
    """What fitting a unit through a shared prefix did.

    Parameters
    ----------
    fit_time : float
        Seconds this unit spent fitting: the steps it fitted itself, the
        shared prefix steps only if this unit was the one that fitted them.
    reused : int
        How many leading steps it took already fitted from another unit.
    warnings : tuple of str
        Warning categories raised while fitting its prefix steps (the same
        warnings an unshared fit of the unit would record).
    """

    fit_time: float
    reused: int
    warnings: tuple[str, ...]


def fit_with_prefix(
    pipeline: Any, ids: tuple[int, ...], X: Any, y: Any, cache: PrefixCache
) -> PrefixFit | None:
    """Fit ``pipeline`` on ``X, y``, taking the steps of its prefix from ``cache``.

    Parameters
    ----------
    pipeline : Pipeline
        The unit's configured, unfitted pipeline; fitted in place.
    ids : tuple of int
        The candidate's prefix ids, one per step before the last.
    X, y
        The unit's training rows.
    cache : PrefixCache
        The chunk's cache, already on the unit's fold.

    Returns
    -------
    PrefixFit or None
        None when the pipeline has a passthrough step: fit it as usual.

    Raises
    ------
    Exception
        Whatever fitting a prefix step or the last step raised (a failed
        shared step fails every unit that shares it, as it would unshared).
    """
    if not _shareable(pipeline, len(ids)):
        return None
    Xt, spent, reused = X, 0.0, 0
    names: list[str] = []
    for j, prefix in enumerate(ids):
        fitted = cache.steps.get((j, prefix))
        if fitted is None:
            fitted = _fit_step(pipeline.steps[j][1], Xt, y)
            cache.steps[(j, prefix)] = fitted
            spent += fitted.seconds
        elif reused == j:
            reused += 1
        names += fitted.warnings
        if fitted.error is not None:
            raise fitted.error
        pipeline.steps[j] = (pipeline.steps[j][0], fitted.step)
        Xt = fitted.output
    t0 = time.perf_counter()
    final = pipeline.steps[-1][1]
    if final is not None and final != "passthrough":
        final.fit(Xt, y)
    return PrefixFit(spent + time.perf_counter() - t0, reused, tuple(names))
