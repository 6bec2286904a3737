"""Bad input gets a clear error before any compute is dispatched."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import model_selection as ms
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.svm import SVR

import parcv
from parcv.engine.backends.base import Executor
from parcv.plan.build import build_plan, fingerprint
from parcv.plan.data import check_dataset
from parcv.plan.space import check_candidate_values, check_space


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


DISPATCHED = "compute was dispatched"  # NeverRuns was reached: the input was accepted
ONE_SE = parcv.Selection("one_se", complexity="alpah")


@pytest.mark.parametrize(
    "call",
    [
        lambda sel: parcv.search(Ridge(), {"alpha": [1.0, 2.0]}, X, Y, selection=sel, backend=NO),
        lambda sel: parcv.nested_cv(
            Ridge(), {"alpha": [1.0, 2.0]}, X, Y, outer=3, selection=sel, backend=NO
        ),
    ],
    ids=["search", "nested_cv"],
)
def test_one_se_complexity_must_be_a_parameter_of_the_space(call):
    with pytest.raises(ValueError, match=r"complexity='alpah' is not a parameter.*\['alpha'\]"):
        call(ONE_SE)
    with pytest.raises(TypeError, match=r"selection must be a parcv\.Selection; got 'one_se'"):
        call("one_se")


def test_one_se_complexity_must_be_numeric_and_set_by_every_candidate():
    by_solver = parcv.Selection("one_se", complexity="solver")
    with pytest.raises(ValueError, match=r"numeric parameter.*solver='auto'"):
        parcv.search(Ridge(), {"solver": ["auto", "svd"]}, X, Y, selection=by_solver, backend=NO)
    two_grids = [{"alpha": [1.0]}, {"fit_intercept": [False]}]
    by_alpha = parcv.Selection("one_se", complexity="alpha")
    with pytest.raises(ValueError, match=r"not set by candidate \{'fit_intercept': False\}"):
        parcv.search(Ridge(), two_grids, X, Y, selection=by_alpha, backend=NO)
    # A callable complexity cannot be checked before the fits: it reaches the backend.
    by_callable = parcv.Selection("one_se", complexity=lambda p: p["alpha"])
    with pytest.raises(AssertionError, match=DISPATCHED):
        parcv.search(Ridge(), {"alpha": [1.0, 2.0]}, X, Y, selection=by_callable, backend=NO)


def test_a_failing_complexity_callable_is_named_not_reported_as_failed_fits():
    def complexity(params):
        raise ValueError("no complexity here")

    rule = parcv.Selection("one_se", complexity=complexity)
    with pytest.raises(parcv.ParcvError, match=r"complexity=<function.*\{'alpha': 1.0\}") as info:
        parcv.search(Ridge(), {"alpha": [1.0, 2.0]}, X, Y, cv=3, selection=rule, backend="serial")
    assert "failed fits" not in str(info.value)


def test_selection_type_and_complexity_type():
    with pytest.raises(TypeError, match=r"got 'best'. Use parcv.Selection\('best'\)"):
        parcv.search(Ridge(), {"alpha": [1.0, 2.0]}, X, Y, selection="best", backend=NO)
    with pytest.raises(
        TypeError, match=r"complexity must be a parameter name or a callable.*got 5"
    ):
        parcv.Selection("one_se", complexity=5)


def test_rejected_value_raises_before_dispatch_when_error_score_is_raise():
    grid = {"alpha": [1.0, -1.0]}
    with pytest.raises(ValueError, match=r"candidate alpha=-1.0 is rejected.*'alpha' parameter"):
        parcv.search(Ridge(), grid, X, Y, error_score="raise", backend=NO)
    with pytest.raises(ValueError, match=r"candidate alpha='0.1'.*error_score=float\('nan'\)"):
        parcv.search(Ridge(), {"alpha": ["0.1"]}, X, Y, error_score="raise", backend=NO)
    pipe = make_pipeline(PolynomialFeatures(), Ridge())
    with pytest.raises(ValueError, match=r"polynomialfeatures__degree=-2.*PolynomialFeatures"):
        parcv.nested_cv(
            pipe, {"polynomialfeatures__degree": [1, -2]}, X, Y, error_score="raise", backend=NO
        )
    with pytest.raises(ValueError, match=r"the estimator as given \(Ridge\(alpha=-1"):
        parcv.cross_validate(Ridge(alpha=-1), X, Y, error_score="raise", backend=NO)


def test_rejected_values_with_a_numeric_error_score():
    # Some candidates valid: the others' fits run, fail and are recorded (as GridSearchCV).
    with pytest.raises(AssertionError, match=DISPATCHED):
        parcv.search(Ridge(), {"alpha": [1.0, -1.0]}, X, Y, backend=NO)
    # None valid: nothing could ever be selected, so say so before any fit.
    with pytest.raises(ValueError, match=r"every candidate is rejected.*alpha=-1.0"):
        parcv.search(Ridge(), {"alpha": [-1.0, -2.0]}, X, Y, backend=NO)


def test_model_family_values_are_checked_in_the_swapped_step():
    pipe = Pipeline([("scale", StandardScaler()), ("model", Ridge())])
    space = [{"model": [Ridge()], "model__alpha": [-1.0]}, {"model": [SVR()], "model__C": [-1.0]}]
    with pytest.raises(ValueError, match=r"every candidate is rejected.*model__alpha=-1.0"):
        parcv.search(pipe, space, X, Y, backend=NO)
    assert repr(space[0]["model"][0]) == "Ridge()"  # the check never mutates the space


def test_checking_thousands_of_candidates_is_cheap():
    candidates = check_space({"alpha": np.logspace(-3, 3, 5000), "fit_intercept": [True, False]})
    start = time.perf_counter()
    check_candidate_values(make_pipeline(StandardScaler(), Ridge()), candidates)
    assert time.perf_counter() - start < 1.0  # about 0.1 s: each distinct value once


def test_resume_and_overwrite_contradict(tmp_path):
    store = tmp_path / "run.sqlite"
    with pytest.raises(ValueError, match="resume=True and overwrite=True contradict"):
        parcv.search(
            Ridge(), {"alpha": [1.0]}, X, Y, store=store, resume=True, overwrite=True, backend=NO
        )
    assert not store.exists()  # nothing was opened, so nothing was wiped
    with pytest.raises(ValueError, match=r"resume=True needs store=\.\.\..*got store=None"):
        parcv.cross_validate(Ridge(), X, Y, resume=True, backend=NO)


def test_refit_must_be_a_bool_or_a_metric_name():
    grid = {"alpha": [1.0, 2.0]}
    with pytest.raises(ValueError, match=r"refit must be True, False.*got refit='nonsense'"):
        parcv.search(Ridge(), grid, X, Y, refit="nonsense", backend=NO)
    with pytest.raises(ValueError, match="refit='nonsense'"):
        parcv.nested_cv(Ridge(), grid, X, Y, refit="nonsense", scoring="r2", backend=NO)
    with pytest.raises(TypeError, match="got refit=<function"):
        parcv.search(Ridge(), grid, X, Y, refit=lambda results: 0, backend=NO)
    with pytest.raises(AssertionError, match=DISPATCHED):  # the one metric by its name
        parcv.search(Ridge(), grid, X, Y, scoring="r2", refit="r2", backend=NO)


@pytest.mark.parametrize("bad", ["abc", 5, [("sample_weight", 1)]])
def test_fit_params_must_be_a_dict(bad):
    with pytest.raises(TypeError, match=rf"fit_params must be a dict.*got {re.escape(repr(bad))}"):
        parcv.cross_validate(Ridge(), X, Y, fit_params=bad, backend=NO)
    with pytest.raises(TypeError, match=r"fit_params keys must be the str names.*got the key 1"):
        parcv.cross_validate(Ridge(), X, Y, fit_params={1: np.ones(30)}, backend=NO)


def test_grid_values_may_be_arrays_tuples_and_ranges():
    array_grid = parcv.search(Ridge(), {"alpha": np.logspace(-2, 2, 5)}, X, Y, backend="serial")
    list_grid = parcv.search(
        Ridge(), {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0]}, X, Y, backend="serial"
    )
    ref = ms.GridSearchCV(Ridge(), {"alpha": np.logspace(-2, 2, 5)}).fit(X, Y)
    for key in ("mean_test_score", "std_test_score", "rank_test_score", "split0_test_score"):
        np.testing.assert_array_equal(array_grid.cv_results_[key], list_grid.cv_results_[key])
        np.testing.assert_array_equal(array_grid.cv_results_[key], ref.cv_results_[key])
    assert array_grid.cv_results_["params"] == ref.cv_results_["params"]
    assert array_grid.best_params_ == ref.best_params_ == {"alpha": 0.01}
    assert type(array_grid.best_params_["alpha"]) is float  # Python scalars, as from a list
    assert (
        check_space({"a": (1, 2)})
        == check_space({"a": range(1, 3)})
        == check_space({"a": np.arange(1, 3)})
    )


def test_array_grid_and_list_grid_share_fingerprint_and_store(tmp_path):
    data = check_dataset(X, Y)
    plans = [
        build_plan(Ridge(), {"alpha": v}, data, inner=3)
        for v in (np.logspace(-1, 1, 3), [0.1, 1.0, 10.0])
    ]
    assert [c.label for c in plans[0].candidates] == [c.label for c in plans[1].candidates]
    assert fingerprint(plans[0], data) == fingerprint(plans[1], data)
    store = tmp_path / "run.sqlite"
    first = parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, Y, store=store, backend="serial")
    # The same plan: the store accepts the array grid (another plan's store is refused).
    again = parcv.search(
        Ridge(), {"alpha": np.logspace(-1, 1, 3)}, X, Y, store=store, resume=True, backend="serial"
    )
    assert parcv.load(store).best_params_ == again.best_params_ == first.best_params_


@pytest.mark.parametrize(
    ("values", "error", "words"),
    [
        (
            np.ones((2, 2)),
            ValueError,
            "must be a 1-D list or array of values; got an array of shape (2, 2)",
        ),
        (np.float64(1.0), TypeError, "Single values need to be wrapped in a list"),
        (np.array(1.0), TypeError, "Single values need to be wrapped in a list"),
        ("abc", TypeError, "parameter 'alpha' needs to be a list or a numpy array, but got 'abc'"),
        (np.array([]), ValueError, "parameter 'alpha' need to be a non-empty sequence, got: []"),
    ],
)
def test_grid_values_that_are_not_a_1d_sequence(values, error, words):
    with pytest.raises(error, match=re.escape(words)):
        parcv.search(Ridge(), {"alpha": values}, X, Y, backend=NO)


def test_summarize_scores_names_its_argument():
    with pytest.raises(TypeError, match=r"scores must be numbers, one per fold; got \['a', 'b'\]"):
        parcv.summarize_scores(["a", "b"])
    with pytest.raises(ValueError, match=r"scores must be 1-D.*shape \(2, 2\)"):
        parcv.summarize_scores([[1.0, 2.0], [3.0, 4.0]])


def test_backend_protocol_is_small():
    assert {"submit", "wait", "cancel"} <= set(dir(Executor))


def _text_scorer(estimator, X, y):  # a user's scorer: what it returns is known only after a fit
    return "high"


@pytest.mark.parametrize("backend", ["serial", "local"])
def test_a_first_wave_failing_alike_stops_the_run_with_one_message(tmp_path, backend):
    from parcv.store.readers import read_store

    store = tmp_path / "run.sqlite"
    space = {"alpha": list(np.logspace(-3, 3, 12))}  # 12 candidates x 5 folds = 60 fits
    with pytest.raises(parcv.FitFailedError) as info:
        n_jobs = None if backend == "serial" else 2
        parcv.search(Ridge(), space, X, Y, cv=5, scoring=_text_scorer, backend=backend,
                     n_jobs=n_jobs, store=store, progress=False)  # fmt: skip
    message = str(info.value)
    assert "all failed with the same" in message and "stored none of these" in message
    assert "'high'" in message or "high" in message  # the cause, once
    n_run = int(message.split("the first ")[1].split()[0])
    assert 8 <= n_run < 60  # stopped after the first candidates, not after every fit
    assert not read_store(store)[1]  # nothing failed is kept: the fixed run computes them


def test_failures_that_name_their_candidate_never_stop_a_run_early():
    from tests.estimators import FailsOnAlpha

    space = {"alpha": [-float(a) for a in range(1, 10)] + [1.0]}  # each message names its alpha
    with pytest.warns(parcv.FitFailedWarning):
        result = parcv.search(FailsOnAlpha(), space, X, Y, cv=3, backend="serial",
                              progress=False)  # fmt: skip
    assert result.best_params_ == {"alpha": 1.0}
