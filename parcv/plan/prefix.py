"""Pipeline prefixes that candidates share: which fitted steps a fold can fit once.

Candidates of a ``Pipeline`` that set the same parameters on steps ``0..j``
fit the same transformers on a fold. The plan names each distinct prefix with
a small integer per depth, so that units on one fold can be ordered next to
each other and a worker fits each prefix once (:mod:`parcv.engine.shared_prefix`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags

from parcv.plan.data import Dataset
from parcv.plan.space import Candidate
from parcv.plan.tokens import TokenError, Tokenizer, token_of_entries

__all__ = ["prefix_ids", "sharing_problem"]


def sharing_problem(estimator: Any, data: Dataset) -> str:
    """Return why units of this estimator cannot share fitted prefixes, or ''.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from parcv.plan.data import check_dataset
    >>> data = check_dataset(np.ones((4, 2)), np.ones(4))
    >>> sharing_problem(make_pipeline(PCA(), Ridge()), data)
    ''
    >>> sharing_problem(Ridge(), data)
    'not a Pipeline'
    """
    if not isinstance(estimator, Pipeline):
        return "not a Pipeline"
    if len(estimator.steps) < 2:
        return "a Pipeline of one step has no prefix"
    if estimator.memory is not None:
        return "the Pipeline caches its own steps (memory=)"
    if getattr(estimator, "transform_input", None) is not None:
        return "the Pipeline transforms fit parameters (transform_input=)"
    if data.fit_params:
        # Routed fit parameters could reach any step; sharing would have to route them too.
        return "fit parameters are given"
    if get_tags(estimator).input_tags.pairwise:
        return "the estimator takes a precomputed kernel"
    return ""


def _owner(name: str, steps: Mapping[str, int]) -> int:
    """Index of the step a parameter sets; -1 for the Pipeline's own (every prefix)."""
    return steps.get(name.split("__", 1)[0], -1)


def prefix_ids(estimator: Any, candidates: Sequence[Candidate]) -> tuple[tuple[int, ...], ...]:
    """Name each candidate's transformer prefixes: one id per depth, equal ids = equal steps.

    Parameters
    ----------
    estimator : Pipeline
        The template (checked by :func:`sharing_problem`).
    candidates : sequence of Candidate

    Returns
    -------
    tuple of tuple of int
        For candidate ``c``, ``ids[c][j]`` names the parameters of steps
        ``0..j`` (every step but the last): two candidates with equal
        ``ids[c][j]`` fit the same steps ``0..j`` on a fold.

    Examples
    --------
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from parcv.plan.space import check_space
    >>> pipe = make_pipeline(StandardScaler(), PCA(), Ridge())
    >>> space = {"pca__n_components": [1, 2], "ridge__alpha": [0.1, 1.0]}
    >>> prefix_ids(pipe, check_space(space))
    ((0, 0), (0, 0), (0, 1), (0, 1))
    """
    steps = {name: j for j, (name, _) in enumerate(estimator.steps)}
    depth = len(estimator.steps) - 1
    # Ids are compared within this plan only, where every candidate shares the template's
    # steps: the parameters each sets on steps 0..j tell their prefixes apart. (The steps
    # themselves are identified with the estimator, by the plan's content keys.) One
    # tokenizer for the plan: code in the parameters is read once.
    tokenizer = Tokenizer()
    names: list[dict[bytes, int]] = [{} for _ in range(depth)]
    ids = []
    for candidate in candidates:
        owned = sorted(candidate.params.items())
        row = []
        for j in range(depth):
            mine = [(k, v) for k, v in owned if _owner(k, steps) <= j]
            try:
                digest = tokenizer.token(mine)
            except TokenError:
                token_of_entries(f"candidate {candidate.index}", candidate.params)  # by name
                raise
            row.append(names[j].setdefault(digest, len(names[j])))
        ids.append(tuple(row))
    return tuple(ids)
