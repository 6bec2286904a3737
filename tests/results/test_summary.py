from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from parcv.results.export import jsonable
from parcv.results.summary import (
    ScoreSummary,
    Selection,
    rank_means,
    select_candidate,
    summarize_rows,
    summarize_scores,
)

finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(arrays(np.float64, st.integers(2, 30), elements=finite))
def test_variance_of_mean_is_seed_004_formula_and_non_negative(scores):
    s = summarize_scores(scores)
    k = scores.size
    m = scores.mean()
    assert s.var_mean >= 0
    assert s.var_mean == pytest.approx(
        ((scores - m) ** 2).sum() / (k * (k - 1)), rel=1e-9, abs=1e-12
    )
    assert s.var_mean == pytest.approx(np.var(scores, ddof=1) / k, rel=1e-9, abs=1e-9)
    assert s.std == pytest.approx(np.std(scores), rel=1e-9, abs=1e-9)


@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 4)),
              elements=st.floats(-1e6, 1e6) | st.just(np.nan)))  # fmt: skip
def test_summarized_rows_read_as_the_list_of_each_rows_summary(scores):
    # The summaries a search result keeps per metric: one per candidate, as the list of
    # summarize_scores() of each row, however read (index, slice, order, pickle, repr).
    rows = summarize_rows(scores)
    each = [summarize_scores(row) for row in scores]
    as_text = [repr(s) for s in each]  # NaN != NaN: compared as text
    assert len(rows) == len(each)
    assert [repr(s) for s in rows] == as_text
    assert [repr(rows[i]) for i in range(-len(rows), len(rows))] == as_text * 2
    assert [repr(s) for s in rows[1::2]] == as_text[1::2]
    assert all(type(s) is ScoreSummary and type(s.mean) is float for s in rows)
    for back in (pickle.loads(pickle.dumps(rows)), copy.deepcopy(rows)):
        assert type(back) is list and [repr(s) for s in back] == as_text
    assert repr(rows) == repr(each)
    # As results.json writes them: the same text, keys in the same order.
    assert json.dumps(jsonable(rows)) == json.dumps(jsonable(each))
    if scores.shape[1] > 1 and not np.isnan(scores).any():  # NaN: unequal to itself
        assert rows == each and each == rows
    with pytest.raises(IndexError):
        rows[len(rows)]


def test_single_fold_has_undefined_variance():
    s = summarize_scores([0.5])
    assert s.mean == 0.5 and np.isnan(s.var_mean)


def test_rank_matches_gridsearch_convention():
    means = np.array([0.5, np.nan, 0.9, 0.9, 0.1])
    np.testing.assert_array_equal(rank_means(means), [3, 5, 1, 1, 4])


def test_one_se_rule_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(50):
        scores = rng.normal(size=(6, 5)) * 0.1 + rng.normal(size=(6, 1)) * 0.05
        params = [{"d": d} for d in range(6)]
        chosen = select_candidate(scores, params, Selection("one_se", complexity="d"))
        means = scores.mean(axis=1)
        best = int(np.argmax(means))
        se = np.sqrt(np.var(scores[best], ddof=1) / 5)
        assert chosen == min(c for c in range(6) if means[c] >= means[best] - se)


def test_all_nan_selection_raises():
    with pytest.raises(ValueError, match="every candidate failed"):
        select_candidate(np.full((2, 3), np.nan), [{}, {}], Selection())
