"""Bad input gets a clear error before any compute is dispatched."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import model_selection as ms
from sklearn.linear_model import LogisticRegression, Ridge

import parcv
from parcv.backends.base import Executor


class NeverRuns:
    """A backend that fails the test if any work reaches it."""

    def open(self, plan, data):  # pragma: no cover - reaching it is the failure
        raise AssertionError("compute was dispatched despite bad input")


NO = NeverRuns()
X = np.random.default_rng(0).normal(size=(30, 3))
Y = X[:, 0] + 0.1 * np.arange(30)
Y_CLS = (np.arange(30) % 2).astype(int)


def test_length_mismatch_names_both_sizes():
    with pytest.raises(ValueError, match="X has 30 rows, y has 29"):
        parcv.cross_validate(Ridge(), X, Y[:29], backend=NO)


def test_empty_data():
    with pytest.raises(ValueError, match="the data is empty"):
        parcv.cross_validate(Ridge(), np.empty((0, 3)), np.empty(0), backend=NO)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_y_names_the_row(bad):
    y = Y.copy()
    y[7] = bad
    with pytest.raises(ValueError, match="first at index 7"):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, y, backend=NO)


@pytest.mark.parametrize("k", [0, 1, 31])
def test_fold_count_out_of_range(k):
    with pytest.raises(ValueError, match=r"cv|folds") as info:
        parcv.cross_validate(Ridge(), X, Y, cv=k, backend=NO)
    assert repr(k) in str(info.value) or str(k) in str(info.value)


def test_stratified_split_with_a_rare_class():
    y = Y_CLS.copy()
    y[:3] = 2  # class 2 has 3 members, fewer than 5 folds
    with pytest.raises(ValueError, match=r"class 2 has only 3 member\(s\)"):
        parcv.cross_validate(LogisticRegression(), X, y, cv=5, backend=NO)


def test_rare_class_inside_an_outer_fold_is_caught_before_compute():
    y = Y_CLS.copy()
    y[:4] = 2
    with pytest.raises(ValueError, match="inner is stratified"):
        parcv.nested_cv(LogisticRegression(), {"C": [1.0]}, X, y, outer=2, inner=4, backend=NO)


def test_group_splitter_without_groups():
    with pytest.raises(ValueError, match="splits by group, but groups=None"):
        parcv.cross_validate(Ridge(), X, Y, cv=ms.GroupKFold(3), backend=NO)


@pytest.mark.parametrize("space", [[], {"alpha": []}])
def test_empty_space(space):
    with pytest.raises(ValueError, match="empty"):
        parcv.search(Ridge(), space, X, Y, backend=NO)


def test_unknown_parameter_lists_valid_names():
    with pytest.raises(ValueError, match=r"\['alpah'\].*Valid names: \[.*'alpha'"):
        parcv.search(Ridge(), {"alpah": [1.0]}, X, Y, backend=NO)


def test_unknown_scorer_lists_close_matches():
    with pytest.raises(ValueError, match=r"'accuarcy' is not a known scorer.*'accuracy'"):
        parcv.cross_validate(LogisticRegression(), X, Y_CLS, scoring="accuarcy", backend=NO)


def test_estimator_without_fit():
    with pytest.raises(TypeError, match="estimator must be a scikit-learn compatible"):
        parcv.cross_validate(object(), X, Y, backend=NO)
    with pytest.raises(TypeError, match=r"pass Ridge\(\)"):
        parcv.cross_validate(Ridge, X, Y, backend=NO)


def test_bad_error_score_and_backend_and_n_jobs():
    with pytest.raises(ValueError, match="error_score must be 'raise' or a number"):
        parcv.cross_validate(Ridge(), X, Y, error_score="ignore", backend=NO)
    with pytest.raises(ValueError, match="backend must be one of"):
        parcv.cross_validate(Ridge(), X, Y, backend="ray")
    with pytest.raises(ValueError, match="n_jobs must be a positive int"):
        parcv.cross_validate(Ridge(), X, Y, backend="local", n_jobs=0)


def test_multimetric_needs_a_refit_metric():
    with pytest.raises(ValueError, match="refit must name the one that selects"):
        parcv.search(
            Ridge(), {"alpha": [1.0, 2.0]}, X, Y, scoring=["r2", "neg_max_error"], backend=NO
        )


def test_holdout_fractions_must_sum_to_one():
    with pytest.raises(ValueError, match="must sum to 1"):
        parcv.ThreeWayHoldOut(0.6, 0.3, 0.3)


def test_selection_one_se_needs_complexity():
    with pytest.raises(ValueError, match="needs complexity="):
        parcv.Selection("one_se")


ARGUMENTS = st.sampled_from(["X", "y", "cv", "space", "scoring", "groups", "error_score"])
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(argument=ARGUMENTS, value=JUNK)
def test_fuzzed_arguments_get_a_parcv_style_error(argument, value):
    kwargs = {
        "X": X,
        "y": Y,
        "cv": 3,
        "space": {"alpha": [1.0]},
        "scoring": None,
        "groups": None,
        "error_score": np.nan,
    }
    kwargs[argument] = value
    try:
        parcv.search(
            Ridge(), kwargs.pop("space"), kwargs.pop("X"), kwargs.pop("y"), backend=NO, **kwargs
        )
    except (ValueError, TypeError) as err:
        assert len(str(err)) > 20  # a sentence, not a bare numpy message
    except AssertionError:
        # The junk value happened to be valid input, so compute was (rightly) dispatched.
        pass


def test_backend_protocol_is_small():
    assert {"submit", "wait", "cancel"} <= set(dir(Executor))
