"""``params=`` and scikit-learn's metadata routing: the same numbers and errors as scikit-learn.

Without routing, ``params`` of the validation functions go to ``fit``; a search's
``fit(X, y, sample_weight=w)`` also weights the scores of the scorers that accept it.
With ``sklearn.config_context(enable_metadata_routing=True)``, the driver routes
``params`` with scikit-learn's machinery and the units fit and score with what it
routed, on every backend (the workers do not share the driver's config).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

from parcv.plan.build import build_plan, fingerprint
from parcv.plan.data import check_dataset, data_token
from parcv.plan.routing import RoutedParams, rows_of_params

CV = KFold(4, shuffle=True, random_state=0)


def _weights(n: int) -> np.ndarray:
    return np.random.RandomState(1).uniform(0.1, 3.0, n)


# --- params= without routing: to fit only, as scikit-learn -------------------------------


def test_sparse_and_scalar_params_are_split_as_scikit_learn():
    from scipy import sparse

    rows = np.array([3, 0])
    split = rows_of_params(
        {"w": sparse.coo_matrix(np.eye(4)), "n": 4, "s": "abcd", "l": [0, 1, 2, 3]}, rows, 4
    )
    np.testing.assert_array_equal(split["w"].toarray(), np.eye(4)[rows])
    assert (split["n"], split["s"], split["l"]) == (4, "abcd", [3, 0])


# --- metadata routing on: to fit, each scorer and the splitter -----------------------------


# --- searches: sample_weight to the scorers that accept it (scikit-learn 1.9) --------------


# --- identity: a weighted score is another record ------------------------------------------


def test_content_keys_and_fingerprint_name_the_scorers_metadata(reg_data):
    X, y = reg_data
    w = _weights(len(y))
    plain = check_dataset(X, y, fit_params={"sample_weight": w})
    scored = check_dataset(X, y, fit_params={"sample_weight": w},
                           score_params={"score": {"sample_weight": w}})  # fmt: skip
    routed = check_dataset(X, y, fit_params={"sample_weight": w}, routed=True)
    assert len({data_token(plain), data_token(scored), data_token(routed)}) == 3
    # Without metadata the token is the one stores written before routing existed hold.
    assert data_token(check_dataset(X, y)) == data_token(check_dataset(X, y, score_params={}))
    plans = [build_plan(Ridge(), None, d, inner=3, refit=False) for d in (plain, scored)]
    assert fingerprint(plans[0], plain) != fingerprint(plans[1], scored)


def test_score_params_need_one_weight_per_row(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match="sample_weight of scorer 'score' has 3 values"):
        check_dataset(X, y, score_params={"score": {"sample_weight": [1.0, 2.0, 3.0]}})


def test_routed_params_default_to_nothing():
    routed = RoutedParams()
    assert (routed.fit, routed.score, routed.split, routed.groups) == ({}, {}, {}, None)
    assert not routed.enabled
