"""A candidate's parameters as the store keeps them: the JSON text, and its plain values."""

from __future__ import annotations

import enum
import json
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from parcv.store.rows import CandidateLabels, params_json, params_plain


class _Level(enum.IntEnum):
    LOW = 1


class _Named(str):
    pass


class _Weird(float):
    def __float__(self) -> float:  # a subclass may say otherwise; JSON writes its double
        return 0.0


def _json_value_before(value: Any) -> Any:
    """The conversion the stores written before this one used (their text must not change)."""
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else repr(value)
    if isinstance(value, np.generic):
        return _json_value_before(value.item())
    return repr(value)


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_nan=True).map(np.float64),
    st.floats(-1e3, 1e3, width=32).map(np.float32),
    st.integers(-100, 100).map(np.int64),
    st.booleans().map(np.bool_),
    st.text(max_size=3),
    st.text(max_size=3).map(_Named),
    st.floats(-1.0, 1.0).map(_Weird),
    st.just(_Level.LOW),
    st.lists(st.integers(0, 3), max_size=2),
    st.just(np.array([0.5])),
)


@settings(max_examples=300, deadline=None)
@given(params=st.dictionaries(st.text(max_size=4), _VALUES, max_size=4))
def test_params_json_text_is_unchanged_and_plain_is_its_round_trip(params):
    before = json.dumps({k: _json_value_before(v) for k, v in sorted(params.items())},
                        sort_keys=True)  # fmt: skip
    assert params_json(params) == before
    loaded, plain = json.loads(before), params_plain(params)
    assert list(plain) == list(loaded)
    assert json.dumps(plain) == json.dumps(loaded) == params_json(params)  # as plan_meta writes
    assert [type(v) for v in plain.values()] == [type(v) for v in loaded.values()]


@settings(max_examples=100, deadline=None)
@given(spaces=st.lists(st.dictionaries(st.text(max_size=3), _VALUES, max_size=3), max_size=6))
def test_candidate_labels_are_each_candidates_id_and_json_as_tuples(spaces):
    # The labels a store keeps, as one text and its ends: what a tuple per candidate
    # held, read by index (negative too), by slice and in order.
    from parcv.plan.space import Candidate

    candidates = [Candidate(i, params) for i, params in enumerate(spaces)]
    as_tuples = tuple((c.id, params_json(c.params)) for c in candidates)
    labels = CandidateLabels(candidates)
    assert len(labels) == len(as_tuples)
    assert tuple(labels) == as_tuples
    assert [labels[i] for i in range(-len(labels), len(labels))] == [*as_tuples, *as_tuples]
    assert [labels[np.int64(i)] for i in range(len(labels))] == list(as_tuples)
    assert labels[1:-1:2] == list(as_tuples[1:-1:2])
    for past in (len(labels), -len(labels) - 1):
        try:
            labels[past]
        except IndexError:
            continue
        raise AssertionError(f"index {past} of {len(labels)} labels read a label")


def test_a_plan_described_from_its_labels_json_is_the_text_its_candidates_dicts_give():
    # A store's plan description writes each candidate's parameters from the JSON its
    # labels already hold, without a dict per candidate: byte for byte the same text.
    from sklearn.linear_model import Ridge

    from parcv.engine.session import plan_meta
    from parcv.plan.build import build_plan
    from parcv.plan.data import check_dataset

    rng = np.random.default_rng(0)
    data = check_dataset(rng.normal(size=(30, 3)), rng.normal(size=30))
    space = [{"alpha": [0.5, np.float64(1e-300), float("nan"), 2**70],
              "solver": ["auto", "s\u00e9"]},
             {"alpha": [np.float32(0.25)], "fit_intercept": [False, np.bool_(True)]},
             {"alpha": [1.0], "positive": [None]}]  # fmt: skip
    plan = build_plan(Ridge(), space, data, inner=3, outer=2)
    labels = CandidateLabels(plan.candidates)
    whole, spliced = plan_meta(plan, "nested", "d"), plan_meta(plan, "nested", "d", labels)
    assert len(plan.candidates) == 11
    assert spliced["plan"] == whole["plan"]
    assert {k: v for k, v in spliced.items() if k != "created"} == {
        k: v for k, v in whole.items() if k != "created"
    }
