"""results.json, written in pieces, is the text that one ``json.dumps`` per entry gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.report.run_dir import _json_parts, _summary, summary_json
from parcv.results.export import jsonable

_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4) | st.integers(-5, 5), inner, max_size=4)
    ),
    max_leaves=25,
)


@given(_VALUES, st.integers(0, 3))
def test_the_pieces_of_any_value_join_to_the_text_of_one_dumps(value, depth):
    assert "".join(_json_parts(value, depth=depth)) == json.dumps(jsonable(value))


def _one_call_text(result) -> str:
    """results.json as it was written before it came in pieces: the reference."""
    data = _summary(result.to_dict())
    entries = (f"  {json.dumps(str(k))}: {json.dumps(jsonable(v))}" for k, v in data.items())
    return "{\n" + ",\n".join(entries) + "\n}\n"


@pytest.mark.parametrize("call", ["cross_validate", "search", "nested_cv"])
def test_results_json_of_each_kind_of_result_is_the_one_call_text(tmp_path, call):
    X, y = make_regression(n_samples=40, n_features=3, noise=1.0, random_state=0)
    space = {"alpha": [0.1, 1.0, 10.0]}
    result = {
        "cross_validate": lambda: parcv.cross_validate(Ridge(), X, y, cv=3, backend="serial"),
        "search": lambda: parcv.search(Ridge(), space, X, y, cv=3, backend="serial"),
        "nested_cv": lambda: parcv.nested_cv(
            Ridge(), space, X, y, outer=3, inner=2, backend="serial"
        ),
    }[call]()
    parcv.write_report(result, tmp_path, title="t")
    written = (tmp_path / "results.json").read_text()
    assert written == _one_call_text(result) == summary_json(result)
    assert set(json.loads(written)) == set(_summary(result.to_dict()))
