"""Random-search draws equal scikit-learn's ``ParameterSampler`` bit for bit.

The one-pass draw (:mod:`parcv.plan.draws`) is a shortcut: it is taken only where
it gives exactly the sampler's candidates. Hypothesis draws the spaces that could
break it: distributions it draws in one pass (loguniform, uniform, cauchy,
truncnorm, frozen with ``loc``/``scale``) mixed with ones it leaves to the sampler
(norm, expon, randint) and with lists, one to four names in any order, one dict
or a list of dicts, all-list spaces (the sampler's draw without replacement),
seeds and sizes; and checks the shortcut itself (where it answers) and
``check_space`` (always) against the sampler: the same names in the same order,
values of the same types and the same bytes, candidates in the same order.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import scipy.stats
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.model_selection import ParameterSampler

from parcv.plan import draws
from parcv.plan.draws import draw_candidates
from parcv.plan.space import RandomSpace, check_space

_NAMES = ["C", "alpha", "b", "gamma", "l1_ratio", "a_b", "Z"]
_SCALES = st.floats(1e-3, 1e3)
_LOCS = st.floats(-1e3, 1e3)


@st.composite
def _one_double(draw: Any) -> Any:
    """A distribution the one-pass draw takes: one uniform double per value."""
    kind = draw(st.sampled_from(["loguniform", "uniform", "cauchy", "truncnorm", "shifted"]))
    if kind == "loguniform":
        low = draw(st.floats(1e-6, 1.0))
        return scipy.stats.loguniform(low, low * draw(st.floats(1.5, 1e9)))
    if kind == "uniform":
        return scipy.stats.uniform(draw(_LOCS), draw(_SCALES))
    if kind == "cauchy":
        return scipy.stats.cauchy(draw(_LOCS), draw(_SCALES))
    if kind == "truncnorm":
        low = draw(st.floats(-3.0, 1.0))
        return scipy.stats.truncnorm(low, low + draw(st.floats(0.5, 4.0)))
    low = draw(st.floats(1e-4, 1.0))  # a frozen dist with loc and scale besides its shapes
    return scipy.stats.loguniform(low, low * 100, loc=draw(_LOCS), scale=draw(_SCALES))


@st.composite
def _other(draw: Any) -> Any:
    """A value the sampler draws otherwise: a list, norm, expon, randint."""
    kind = draw(st.sampled_from(["list", "norm", "expon", "randint"]))
    if kind == "norm":
        return scipy.stats.norm(draw(_LOCS), draw(_SCALES))
    if kind == "expon":
        return scipy.stats.expon(draw(_LOCS), draw(_SCALES))
    if kind == "randint":
        low = draw(st.integers(-10, 10))
        return scipy.stats.randint(low, low + draw(st.integers(1, 1000)))
    return _list_values(draw)


def _list_values(draw: Any) -> list[Any]:
    items = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.floats(-1.0, 1.0))
    return draw(st.lists(items, min_size=1, max_size=7))


@st.composite
def _space(draw: Any, values: Any) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4, unique=True))
    return {name: draw(values) for name in names}  # insertion order is not sorted order


_VALUES = st.one_of(_one_double(), _one_double(), _other())
_SPACES = st.one_of(
    _space(_VALUES),
    _space(_one_double()),
    _space(_one_double()).map(lambda d: [d]),
    st.lists(_space(_VALUES), min_size=2, max_size=3),
    _space(st.builds(list, st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))),
)


def _assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert list(a) == list(b), f"candidate {i}: names {list(a)} != {list(b)}"
        for name in b:
            assert type(a[name]) is type(b[name]), (i, name, type(a[name]), type(b[name]))
            same = np.asarray(a[name]).tobytes() == np.asarray(b[name]).tobytes()
            assert same and a[name] == b[name], (i, name, a[name], b[name])


def _sampled(space: Any, n_iter: int, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drawn = list(ParameterSampler(space, n_iter, random_state=seed))
    return drawn, [str(w.message) for w in caught]


_SIZES = st.one_of(st.integers(1, 40), st.integers(1, 600))  # and 2000, 3000 below
_SEEDS = st.integers(0, 2**32 - 1)
_HEALTH = [HealthCheck.too_slow]


@settings(max_examples=30, deadline=None, suppress_health_check=_HEALTH)
@given(space=_SPACES, n_iter=_SIZES, seed=_SEEDS)
@example(space={"alpha": scipy.stats.loguniform(1e-3, 1e3)}, n_iter=3000, seed=0)
@example(
    space={"b": scipy.stats.uniform(2.0, 3.0), "a": scipy.stats.loguniform(0.1, 10.0)},
    n_iter=2000,
    seed=7,
)
def test_one_pass_draw_is_the_samplers_where_taken(space: Any, n_iter: int, seed: int) -> None:
    """The shortcut itself, without the check at every call: where it answers, it is exact."""
    drawn = draws._one_pass(space, n_iter, seed)
    if drawn is not None:
        _assert_same(drawn, _sampled(space, n_iter, seed)[0])


@settings(max_examples=15, deadline=None, suppress_health_check=_HEALTH)
@given(space=_SPACES, n_iter=_SIZES, seed=_SEEDS)
def test_random_space_candidates_are_the_samplers(space: Any, n_iter: int, seed: int) -> None:
    want, warned = _sampled(space, n_iter, seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = check_space(RandomSpace(space, n_iter=n_iter, random_state=seed))
    _assert_same([c.params for c in got], want)
    assert [str(w.message) for w in caught] == warned
    assert [c.index for c in got] == list(range(len(want)))


@pytest.mark.parametrize(
    "space",
    [
        {"alpha": scipy.stats.loguniform(1e-3, 1e3)},
        [{"alpha": scipy.stats.loguniform(1e-3, 1e3)}],
        {"l1_ratio": scipy.stats.uniform(0, 1), "alpha": scipy.stats.loguniform(1e-3, 1e3)},
        {"x": scipy.stats.cauchy(loc=2.0, scale=0.5), "a": scipy.stats.truncnorm(-1, 2)},
    ],
)
def test_one_pass_draw_is_taken_for_one_double_distributions(space: Any) -> None:
    """So that the properties above exercise the shortcut, not only the sampler."""
    assert draws._one_pass(space, 5, 0) is not None


@pytest.mark.parametrize(
    "space",
    [
        {"alpha": scipy.stats.norm()},  # Box-Muller: two doubles for two values, cached
        {"alpha": scipy.stats.expon()},
        {"alpha": scipy.stats.randint(0, 4)},
        {"alpha": scipy.stats.loguniform(1e-3, 1e3), "fit_intercept": [True, False]},
        {"alpha": [0.1, 1.0]},  # all lists: drawn without replacement
        [{"alpha": scipy.stats.uniform()}, {"alpha": scipy.stats.uniform()}],
        {"alpha": scipy.stats.uniform(loc=[0.0, 1.0])},  # array parameters
        {},
    ],
)
def test_one_pass_draw_leaves_the_rest_to_the_sampler(space: Any) -> None:
    assert draws._one_pass(space, 5, 0) is None


def test_a_one_pass_draw_unlike_the_samplers_is_not_used(monkeypatch: Any) -> None:
    """The check at every call: a release that draws otherwise falls back to the sampler."""
    space = {"alpha": scipy.stats.loguniform(1e-3, 1e3)}
    real = draws._one_pass

    def reversed_draw(*args: Any) -> Any:
        drawn = real(*args)
        return None if drawn is None else drawn[::-1]

    monkeypatch.setattr(draws, "_one_pass", reversed_draw)
    _assert_same(draw_candidates(space, 50, 3), _sampled(space, 50, 3)[0])


def test_invalid_distributions_raise_as_the_sampler() -> None:
    with pytest.raises(TypeError, match=r"RandomSpace\.distributions is not valid"):
        check_space(RandomSpace({"alpha": 1.0}, n_iter=3))
