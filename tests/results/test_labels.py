"""Readable labels: continuous values rounded for a reader, two candidates never alike."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from parcv.plan.space import Candidate, format_params
from parcv.results.labels import (
    _EXACT,
    SIGNIFICANT_DIGITS,
    _label,
    readable_candidate_labels,
    readable_labels,
)


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


def _plain_rounds(params):
    """The rule, plainly: every round, one more digit for each label that reads as another."""
    exact = {}
    for p in params:
        exact.setdefault(format_params(p), p)
    digits = dict.fromkeys(exact, SIGNIFICANT_DIGITS)
    shown = {label: _label(p, SIGNIFICANT_DIGITS) for label, p in exact.items()}
    while True:
        alike = {}
        for label, text in shown.items():
            alike.setdefault(text, []).append(label)
        clashes = [labels for labels in alike.values() if len(labels) > 1]
        if not clashes:
            return shown
        for labels in clashes:
            for label in labels:
                digits[label] = min(digits[label] + 1, _EXACT)
                shown[label] = _label(exact[label], digits[label])


# Values a few units apart in their 4th to 16th digit: labels that take several rounds.
close = st.builds(lambda base, step, k: base * (1.0 + k * 10.0**-step),
                  st.sampled_from([0.1, 1.0, 123.456, 1e-5, 0.30000000000000004]),
                  st.integers(3, 16), st.integers(-3, 3))  # fmt: skip
values = close | st.sampled_from([0.1, 1, "a", None, (0.1, 0.1000001), [0.5, 2]])


@given(st.lists(st.fixed_dictionaries({"a": values}, optional={"b": close}), max_size=30))
def test_readable_labels_follow_the_plain_rounds_and_candidates_give_the_same(params):
    # Only the texts a round touched are grouped again (a 220,000-candidate grid took
    # seconds grouping all of them each round): the same texts, in the same order.
    shown = readable_labels(params)
    assert list(shown.items()) == list(_plain_rounds(params).items())
    candidates = [Candidate(i, p) for i, p in enumerate(params)]
    assert list(readable_candidate_labels(candidates).items()) == list(shown.items())
