"""Resampled units: the permuted targets of a permutation test and bootstrap draws.

A permutation test refits the model on every CV fold once per permutation of
the targets; each (permutation, fold) is a ``perm`` unit that fits ``X[train]``
on ``y[perm[train]]``. A bias-variance decomposition fits the model on
bootstrap samples of a training set; each round is a ``boot`` unit. The draws
are made once, in the driver, from the seed the user gave, in the order
scikit-learn's ``permutation_test_score`` and mlxtend's
``bias_variance_decomp`` make them: the same seed gives the same draws.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import check_random_state

from parcv.plan.splits import Fold

__all__ = ["Permutations", "check_seed", "draw_bootstrap", "draw_permutations"]


@dataclass(frozen=True, slots=True)
class Permutations:
    """The permuted targets of a permutation test and the CV folds of each.

    Parameters
    ----------
    indices : ndarray of shape (n_permutations, n_samples)
        Row ``p`` maps each sample to the row whose target it takes:
        permutation ``p`` fits on ``y[indices[p]]``.
    folds : tuple of tuple of Fold
        ``folds[p]``: the CV folds of permutation ``p`` (a stratified CV
        splits the permuted targets, as scikit-learn does).
    """

    indices: NDArray[np.intp] = field(repr=False)
    folds: tuple[tuple[Fold, ...], ...] = field(repr=False)

    @property
    def n_permutations(self) -> int:
        """Number of permutations."""
        return len(self.folds)

    def target_rows(self, permutation: int, rows: NDArray[np.intp]) -> NDArray[np.intp]:
        """The rows of ``y`` whose targets the rows ``rows`` of ``X`` take in ``permutation``."""
        return self.indices[permutation][rows]  # type: ignore[no-any-return]


def check_seed(name: str, value: Any) -> int:
    """Accept a non-negative int seed (not None: every run must draw the same).

    Examples
    --------
    >>> check_seed("random_state", 3)
    3
    >>> check_seed("random_state", None)
    Traceback (most recent call last):
    ...
    TypeError: random_state must be an int >= 0; got None. Pass a seed, e.g. random_state=0, \
so that every run (and every resume) draws the same samples.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        kind = TypeError if not isinstance(value, numbers.Integral) else ValueError
        raise kind(
            f"{name} must be an int >= 0; got {value!r}. Pass a seed, e.g. {name}=0, so that "
            "every run (and every resume) draws the same samples."
        )
    return int(value)


def draw_permutations(
    n_samples: int, groups: Any, n_permutations: int, random_state: int
) -> NDArray[np.intp]:
    """Draw the permutations scikit-learn's ``permutation_test_score`` draws.

    One ``RandomState(random_state)``, one permutation after another; with
    ``groups``, the targets are permuted within each group (groups in sorted
    order), as scikit-learn's ``_shuffle`` does.

    Examples
    --------
    >>> draw_permutations(4, None, 2, 0).tolist()
    [[2, 3, 1, 0], [0, 2, 1, 3]]
    >>> draw_permutations(4, np.array([0, 0, 1, 1]), 1, 0)[0].tolist()
    [1, 0, 2, 3]
    """
    rng = check_random_state(random_state)
    out = np.empty((n_permutations, n_samples), dtype=np.intp)
    labels = None if groups is None else np.asarray(groups)
    for p in range(n_permutations):
        if labels is None:
            out[p] = rng.permutation(n_samples)
            continue
        indices = np.arange(n_samples)
        for group in np.unique(labels):
            mask = labels == group
            indices[mask] = rng.permutation(indices[mask])
        out[p] = indices
    return out


def draw_bootstrap(n_samples: int, n_rounds: int, random_state: int) -> list[NDArray[np.intp]]:
    """Draw the bootstrap samples mlxtend's ``bias_variance_decomp`` draws.

    ``RandomState(random_state).choice(arange(n), size=n, replace=True)``,
    once per round, in order.

    Examples
    --------
    >>> [d.tolist() for d in draw_bootstrap(3, 2, 0)]
    [[0, 1, 0], [1, 1, 2]]
    """
    rng = np.random.RandomState(random_state)
    rows = np.arange(n_samples)
    return [rng.choice(rows, size=n_samples, replace=True).astype(np.intp) for _ in range(n_rounds)]
