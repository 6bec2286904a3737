"""Random-search draws: scikit-learn's ``ParameterSampler`` candidates, in one pass where exact.

``ParameterSampler`` draws candidate after candidate, and within one candidate
parameter after parameter in sorted name order, each value by a separate
``rvs(random_state=rng)`` call; scipy's per-call checks cost about 100 us, so
100,000 candidates took ten seconds before a run could start. Where every
parameter is a distribution that takes exactly one uniform double of the
stream per value, candidate ``i``'s parameter ``j`` is the ``i * k + j``-th
double of the stream, so all of them come from one ``rng.uniform(size=(n, k))``
and each value is computed from its double as scipy's own ``rvs`` computes it:

- a frozen ``rv_continuous`` whose class draws by inverse CDF (scipy's default
  ``_rvs``: ``U = rng.uniform(size=())``, then ``_ppf(U, *args)``; loguniform,
  cauchy, truncnorm, ... ): ``_ppf`` is called on each double as the same 0-d
  array ``rvs`` passes it, never on the whole vector (a vector may take another
  code path, e.g. AVX-512 ``exp``, that differs in the last bit);
- a frozen ``uniform``: the double itself;

then ``* scale + loc``, exactly rounded operations, as ``rvs`` does. The shape
parameters, ``loc`` and ``scale`` are the ones ``rvs`` parses, checked as it
checks them.

Anything else (a list among the values, whose draw takes a variable count of
32-bit words; ``norm``, ``expon``, ``randint``, a subclass of one's own, more
than one dict, a distribution with array parameters) is drawn by
``ParameterSampler`` itself. The one-pass draw is also checked against
``ParameterSampler`` on its first candidates at every call, so that a scipy or
scikit-learn release that draws otherwise falls back rather than drawing other
candidates. ``tests/plan/test_draws.py`` checks it bit for bit against
``ParameterSampler`` over distributions, lists, names, seeds and sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.stats
from sklearn.model_selection import ParameterSampler
from sklearn.utils import check_random_state

__all__ = ["draw_candidates"]

# Candidates the one-pass draw is compared with ParameterSampler's on, at every call.
_CHECKED = 16

# How a value follows from its uniform double, per class ``_rvs`` (function identity: a
# class that overrides ``_rvs`` draws otherwise and is not listed).
_Value = Callable[[Any, Any, tuple[Any, ...]], Any]


def _by_ppf(gen: Any, u: Any, args: tuple[Any, ...]) -> Any:
    return gen._ppf(u, *args)


def _as_drawn(gen: Any, u: Any, args: tuple[Any, ...]) -> Any:
    return u


_FROZEN = type(scipy.stats.uniform())
_ONE_DOUBLE: dict[Any, _Value] = {
    scipy.stats.rv_continuous._rvs: _by_ppf,
    type(scipy.stats.uniform)._rvs: _as_drawn,
}


def draw_candidates(distributions: Any, n_iter: int, random_state: int) -> list[dict[str, Any]]:
    """Return ``list(ParameterSampler(distributions, n_iter, random_state=random_state))``.

    Parameters
    ----------
    distributions : dict or list of dict
        As ``ParameterSampler``'s ``param_distributions``.
    n_iter : int
        Number of candidates.
    random_state : int
        Seed of the draw.

    Returns
    -------
    list of dict
        The sampler's candidates, equal bit for bit (values, their types, the
        order of candidates and of names); drawn in one pass where that is exact
        (see the module's notes).

    Raises
    ------
    TypeError, ValueError
        As ``ParameterSampler`` raises for invalid distributions.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> space = {"alpha": loguniform(1e-3, 1e3)}
    >>> draw_candidates(space, 3, 0) == list(ParameterSampler(space, 3, random_state=0))
    True
    """
    drawn = _one_pass(distributions, n_iter, random_state)
    if drawn is not None:
        n_head = min(n_iter, _CHECKED)
        head = list(ParameterSampler(distributions, n_head, random_state=random_state))
        if all(_same(a, b) for a, b in zip(head, drawn, strict=False)):
            return drawn
    return list(ParameterSampler(distributions, n_iter=n_iter, random_state=random_state))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two candidates are equal bit for bit: names in order, value types and bytes."""
    return list(a) == list(b) and all(
        type(a[k]) is type(b[k]) and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes()
        for k in a
    )


def _one_pass(distributions: Any, n_iter: int, random_state: int) -> list[dict[str, Any]] | None:
    """The candidates drawn in one pass, or None where that is not known to be exact."""
    if isinstance(distributions, list) and len(distributions) == 1:
        distributions = distributions[0]  # rng.choice of one dict draws nothing
    if type(distributions) is not dict or not distributions:
        return None
    names = sorted(distributions)
    if not all(isinstance(name, str) for name in names):
        return None
    found = [_draw_of(distributions[name]) for name in names]
    draws = [d for d in found if d is not None]
    if len(draws) < len(found):
        return None
    rng = check_random_state(random_state)
    doubles = rng.uniform(size=(n_iter, len(names)))
    columns = []
    for j, (value, gen, args, loc, scale) in enumerate(draws):
        # Each value as rvs computes it from its 0-d double; the affine step is exact.
        drawn = np.array([value(gen, u.reshape(()), args) for u in doubles[:, j : j + 1]])
        columns.append(list(drawn * scale + loc))
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _draw_of(dist: Any) -> tuple[_Value, Any, tuple[Any, ...], Any, Any] | None:
    """How rvs makes a value of ``dist`` from one uniform double, or None if not so."""
    if type(dist) is not _FROZEN or "rvs" in vars(dist):
        return None
    gen = dist.dist
    value = _ONE_DOUBLE.get(type(gen)._rvs)
    if value is None or "_rvs" in vars(gen) or "rvs" in vars(gen):
        return None
    if type(gen).rvs is not scipy.stats.rv_continuous.rvs:
        return None
    try:
        args, loc, scale, size = gen._parse_args_rvs(*dist.args, **dist.kwds)
        valid = np.all(np.logical_and(gen._argcheck(*args), scale >= 0))
    except Exception:  # what rvs would raise: the sampler raises it
        return None
    if size != () or not valid or np.all(scale == 0) or np.ndim(loc) or np.ndim(scale):
        return None
    if any(np.ndim(a) for a in args):
        return None
    return value, gen, tuple(args), loc, scale
