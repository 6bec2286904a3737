"""Readable labels: continuous values rounded for a reader, two candidates never alike."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from parcv.plan.space import format_params
from parcv.results.labels import SIGNIFICANT_DIGITS, readable_labels


def test_readable_labels_round_continuous_values_and_keep_short_ones():
    params = [{"C": 0.13572804957316492, "kernel": "rbf"}, {"C": 10.0, "kernel": "linear"},
              {"C": np.float64(77.80155576901412), "kernel": "rbf"}]  # fmt: skip
    shown = readable_labels(params)
    assert [shown[format_params(p)] for p in params] == [
        "C=0.1357, kernel='rbf'",
        "C=10.0, kernel='linear'",
        "C=77.8, kernel='rbf'",
    ]


def test_candidates_that_differ_beyond_the_rounding_are_told_apart():
    params = [{"alpha": 0.123456}, {"alpha": 0.123457}, {"alpha": 2.718281828459045}]
    shown = readable_labels(params)
    assert [shown[format_params(p)] for p in params] == [
        "alpha=0.123456",
        "alpha=0.123457",
        "alpha=2.718",
    ]


def test_floats_inside_tuples_and_lists_are_rounded_and_the_rest_is_the_label():
    params = [{"sizes": (0.33333333333333331, 2), "w": [1.4142135623730951], "k": "a", "n": 3},
              {"sizes": (0.5,), "w": [], "k": None, "n": 4}]  # fmt: skip
    shown = readable_labels(params)
    assert shown[format_params(params[0])] == "k='a', n=3, sizes=(0.3333, 2), w=[1.414]"
    assert shown[format_params(params[1])] == format_params(params[1])


floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).filter(lambda v: v != 0.0)


@given(st.lists(floats, min_size=1, max_size=30))
def test_distinct_candidates_keep_distinct_readable_labels(values):
    params = [{"alpha": v} for v in values]
    shown = readable_labels(params)
    assert len(set(shown.values())) == len(shown) == len({format_params(p) for p in params})
    for p in params:
        text = shown[format_params(p)].removeprefix("alpha=")
        assert float(text) == p["alpha"] or np.isclose(
            float(text), p["alpha"], rtol=10.0 ** (1 - SIGNIFICANT_DIGITS), atol=0.0
        )
