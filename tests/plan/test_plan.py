from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge

from parcv.plan.build import build_plan, fingerprint
from parcv.plan.data import check_dataset

X = np.random.default_rng(0).normal(size=(60, 2))
Y = X[:, 0] + np.random.default_rng(1).normal(size=60)


@settings(max_examples=30, deadline=None)
@given(
    outer=st.integers(2, 6), inner=st.integers(2, 5), n_cand=st.integers(1, 5), final=st.booleans()
)
def test_unit_count_equals_distinct_fits(outer, inner, n_cand, final):
    data = check_dataset(X, Y)
    space = {"alpha": [float(a) for a in range(1, n_cand + 1)]}
    plan = build_plan(Ridge(), space, data, inner=inner, outer=outer, refit=final)
    keys = [u.key for u in plan.units]
    assert len(keys) == len(set(keys))
    expected_fits = (outer + int(final)) * inner * n_cand
    assert len(plan.units) == expected_fits
    assert plan.n_units == expected_fits + outer + int(final)
    for o in range(outer):
        for fold in plan.inner_folds[o]:
            outer_train = plan.outer_folds[o].train
            assert np.isin(fold.train, outer_train).all() and np.isin(fold.test, outer_train).all()


def test_fingerprint_covers_numbers_not_backend():
    data = check_dataset(X, Y)
    a = build_plan(Ridge(), {"alpha": [1.0, 2.0]}, data, inner=3, outer=3)
    b = build_plan(Ridge(), {"alpha": [1.0, 2.0]}, data, inner=3, outer=3)
    c = build_plan(Ridge(), {"alpha": [1.0, 3.0]}, data, inner=3, outer=3)
    y2 = Y.copy()
    y2[0] += 1e-9
    d_data = check_dataset(X, y2)
    d = build_plan(Ridge(), {"alpha": [1.0, 2.0]}, d_data, inner=3, outer=3)
    assert fingerprint(a, data) == fingerprint(b, data)
    assert fingerprint(a, data) != fingerprint(c, data)
    assert fingerprint(a, data) != fingerprint(d, d_data)


def test_a_candidate_pickles_as_its_index_and_params_and_names_itself_the_same():
    import pickle

    from parcv.plan.space import Candidate

    cand = Candidate(3, {"alpha": np.float64(0.25), "fit_intercept": False})
    label, cid = cand.label, cand.id
    back = pickle.loads(pickle.dumps(cand))
    assert back == cand and back.index == 3 and back.params == cand.params
    assert (back.label, back.id) == (label, cid) == ("alpha=0.25, fit_intercept=False", cid)
    assert label.encode() not in pickle.dumps(cand)  # worked out again where it is read


_SHIPPED_VALUES = st.one_of(
    st.floats(allow_nan=True).map(np.float64),
    st.floats(allow_nan=True),
    st.integers(-5, 5),
    st.integers(-5, 5).map(np.int32),
    st.booleans().map(np.bool_),
    st.text(max_size=2),
    st.none(),
    st.just(Ridge(alpha=2.0)),  # not plain: pickled candidate by candidate
)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.dictionaries(st.sampled_from(["b", "a", "c"]), _SHIPPED_VALUES, max_size=3),
        max_size=6,
    ),
    same_names=st.booleans(),
)
def test_shipped_candidates_unpickle_as_the_same_candidates_bit_for_bit(rows, same_names):
    import pickle

    import cloudpickle

    from parcv.plan.space import Candidate, shipped_candidates

    if same_names and rows:  # the columns path: every candidate names the same, in one order
        rows = [{k: row.get(k, np.float64(i)) for k in rows[0]} for i, row in enumerate(rows)]
    cands = tuple(Candidate(i * 2, row) for i, row in enumerate(rows))
    for dumps in (pickle.dumps, cloudpickle.dumps):
        back = pickle.loads(dumps(shipped_candidates(cands)))
        assert type(back) is tuple and len(back) == len(cands)
        for got, want in zip(back, cands, strict=True):
            assert type(got) is Candidate and got.index == want.index
            assert list(got.params) == list(want.params)
            for name, value in want.params.items():
                assert type(got.params[name]) is type(value)
                if isinstance(value, (float, np.generic)):
                    assert np.asarray(got.params[name]).tobytes() == np.asarray(value).tobytes()
                elif not isinstance(value, Ridge):
                    assert got.params[name] == value
