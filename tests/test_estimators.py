"""parcv.GridSearchCV, RandomizedSearchCV and NestedCV against scikit-learn's on the same folds."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn import model_selection as ms
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import parcv

GRID = [{"C": [0.1, 1.0]}, {"C": [10.0], "kernel": ["linear"]}]
SCORES = ["mean_test_score", "std_test_score", "rank_test_score", "split0_test_score"]


def _same_results(ours, theirs, keys=SCORES):
    for key in keys:
        np.testing.assert_array_equal(ours.cv_results_[key], theirs.cv_results_[key])
    assert ours.cv_results_["params"] == theirs.cv_results_["params"]
    assert set(ours.cv_results_) == set(theirs.cv_results_)


def test_grid_search_equals_scikit_learn_on_every_backend(backend, clf_data):
    X, y = clf_data
    ours = parcv.GridSearchCV(SVC(), GRID, cv=4, backend=backend, return_train_score=True)
    theirs = ms.GridSearchCV(SVC(), GRID, cv=4, return_train_score=True)
    ours.fit(X, y)
    theirs.fit(X, y)
    _same_results(ours, theirs, [*SCORES, "mean_train_score"])
    assert (ours.best_index_, ours.best_params_, ours.best_score_) == (
        theirs.best_index_, theirs.best_params_, theirs.best_score_,
    )  # fmt: skip
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_array_equal(ours.decision_function(X), theirs.decision_function(X))
    assert ours.score(X, y) == theirs.score(X, y)
    assert (ours.n_splits_, ours.n_features_in_, ours.multimetric_) == (4, X.shape[1], False)
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
    assert ours.refit_time_ >= 0.0
    assert ours.result_.best_index_ == ours.best_index_


def test_randomized_search_draws_scikit_learns_candidates(reg_data):
    X, y = reg_data
    space = {"alpha": loguniform(1e-3, 1e3)}
    for seed in (0, np.random.RandomState(3)):
        ours = parcv.RandomizedSearchCV(Ridge(), space, n_iter=4, random_state=seed, cv=3,
                                        backend="serial")  # fmt: skip
        same_seed = 0 if seed == 0 else np.random.RandomState(3)
        theirs = ms.RandomizedSearchCV(Ridge(), space, n_iter=4, cv=3, random_state=same_seed)
        _same_results(ours.fit(X, y), theirs.fit(X, y))
        assert ours.best_score_ == theirs.best_score_


def test_multimetric_refit_by_name_and_without_refit(clf_data):
    X, y = clf_data
    scoring = {"acc": "accuracy", "f1": "f1"}
    grid = {"C": [0.01, 1.0]}
    ours = parcv.GridSearchCV(LogisticRegression(), grid, scoring=scoring, refit="f1", cv=3,
                              backend="serial").fit(X, y)  # fmt: skip
    theirs = ms.GridSearchCV(LogisticRegression(), grid, scoring=scoring, refit="f1", cv=3)
    theirs.fit(X, y)
    _same_results(ours, theirs, ["mean_test_acc", "rank_test_f1", "split2_test_f1"])
    assert ours.best_score_ == theirs.best_score_
    assert ours.score(X, y) == theirs.score(X, y)
    assert set(ours.scorer_) == {"acc", "f1"}
    no_refit = parcv.GridSearchCV(LogisticRegression(), grid, scoring=scoring, refit=False,
                                  cv=3, backend="serial").fit(X, y)  # fmt: skip
    assert not hasattr(no_refit, "best_index_") and not hasattr(no_refit, "best_estimator_")
    with pytest.raises(AttributeError, match="has no attribute 'predict'") as raised:
        no_refit.predict(X)
    assert "refit=False" in str(raised.value.__cause__)
    with pytest.raises(ValueError, match="refit must be set to a scorer key"):
        parcv.GridSearchCV(LogisticRegression(), grid, scoring=scoring, backend="serial").fit(X, y)


def test_refit_callable_has_scikit_learns_semantics(clf_data):
    X, y = clf_data

    def lowest_c(cv_results):
        return int(np.argmin([p["C"] for p in cv_results["params"]]))

    grid = {"C": [1.0, 0.01, 0.1]}
    ours = parcv.GridSearchCV(LogisticRegression(), grid, refit=lowest_c, cv=3, backend="serial")
    theirs = ms.GridSearchCV(LogisticRegression(), grid, refit=lowest_c, cv=3)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert ours.best_index_ == theirs.best_index_ == 1
    assert not hasattr(ours, "best_score_")
    np.testing.assert_array_equal(ours.predict_proba(X), theirs.predict_proba(X))
    bad = parcv.GridSearchCV(LogisticRegression(), grid, refit=lambda r: 7, cv=3,
                             backend="serial")  # fmt: skip
    with pytest.raises(IndexError, match="best_index_ index out of range"):
        bad.fit(X, y)


def test_clone_pickle_and_pipeline(clf_data):
    X, y = clf_data
    search = parcv.GridSearchCV(SVC(), {"C": [0.5, 2.0]}, cv=3, backend="serial", racing=None)
    twin = clone(search)
    assert repr(twin.get_params(deep=False)) == repr(search.get_params(deep=False))
    assert not hasattr(twin, "result_")  # no work in __init__
    pipe = make_pipeline(StandardScaler(), search).fit(X, y)
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again.predict(X), pipe.predict(X))
    # A search as the model of scikit-learn's own cross-validation: nested CV the long way.
    scores = ms.cross_val_score(clone(search), X, y, cv=3)
    assert scores.shape == (3,)


def test_bad_refit_and_missing_methods_are_clear(reg_data):
    X, y = reg_data
    with pytest.raises(TypeError, match="refit must be True, False, a metric name or a callable"):
        parcv.GridSearchCV(Ridge(), {"alpha": [1.0]}, refit=3, backend="serial").fit(X, y)
    search = parcv.GridSearchCV(Ridge(), {"alpha": [1.0]}, cv=3, backend="serial").fit(X, y)
    assert not hasattr(search, "predict_proba") and hasattr(search, "predict")


def test_nested_cv_equals_parcv_nested_cv_and_ships_the_all_data_search(reg_data):
    X, y = reg_data
    grid = {"alpha": [0.1, 10.0, 100.0]}
    nested = parcv.NestedCV(Ridge(), grid, outer=3, inner=3, backend="serial").fit(X, y)
    reference = parcv.nested_cv(Ridge(), grid, X, y, outer=3, inner=3, backend="serial")
    np.testing.assert_array_equal(nested.outer_scores_["score"], reference.outer_scores["score"])
    assert nested.result_.chosen == reference.chosen
    theirs = ms.GridSearchCV(Ridge(), grid, cv=3).fit(X, y)
    _same_results(nested, theirs)
    np.testing.assert_array_equal(nested.predict(X), theirs.predict(X))
    assert nested.score(X, y) == theirs.score(X, y)


def test_parcv_options_pass_through_racing_store_resume(reg_data, tmp_path):
    X, y = reg_data
    grid = {"alpha": [0.01, 1.0, 1e4, 1e5]}
    racing = parcv.Racing(burn_in=3)
    store = tmp_path / "run.sqlite"
    face = parcv.GridSearchCV(Ridge(), grid, cv=6, racing=racing, store=store, backend="serial")
    face.fit(X, y)
    direct = parcv.search(Ridge(), grid, X, y, cv=6, racing=racing, backend="serial")
    np.testing.assert_array_equal(
        face.cv_results_["race_eliminated_after"], direct.cv_results_["race_eliminated_after"]
    )
    assert face.best_params_ == direct.best_params_
    again = clone(face).set_params(resume=True).fit(X, y)
    assert again.best_params_ == face.best_params_
    np.testing.assert_array_equal(again.cv_results_["split0_test_score"],
                                  face.cv_results_["split0_test_score"])  # fmt: skip


def test_feature_names_follow_the_refitted_model(reg_data):
    pandas = pytest.importorskip("pandas")
    X, y = reg_data
    frame = pandas.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    search = parcv.GridSearchCV(Ridge(), {"alpha": [1.0]}, cv=3, backend="serial").fit(frame, y)
    assert list(search.feature_names_in_) == list(frame.columns)
    assert search.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("make", [
    lambda options, **kw: parcv.GridSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, cv=3,
                                             options=options, **kw),
    lambda options, **kw: parcv.RandomizedSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, n_iter=2,
                                                   random_state=0, cv=3, options=options, **kw),
    lambda options, **kw: parcv.NestedCV(Ridge(), {"alpha": [0.1, 10.0]}, outer=3,
                                         options=options, **kw),
], ids=["grid", "randomized", "nested"])  # fmt: skip
def test_the_estimators_take_every_run_option_as_one_object(reg_data, tmp_path, make):
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    options = parcv.RunOptions(backend="serial", store=store, save_models=True, journal="delete",
                               retry_failed=True, progress=False)  # fmt: skip
    fitted = make(options).fit(X, y)
    assert clone(fitted).get_params()["options"] == options
    assert store.exists() and any(tmp_path.glob("run.sqlite.models/final-*.joblib"))
    loaded = parcv.load(store, load_models=True)
    saved = (loaded.final if isinstance(loaded, parcv.NestedResult) else loaded).best_estimator_
    np.testing.assert_array_equal(fitted.predict(X), saved.predict(X))
    name = type(fitted).__name__
    with pytest.raises(ValueError, match=rf"{name}\(\) got options= and the keyword n_jobs=2"):
        make(options, n_jobs=2).fit(X, y)
    with pytest.raises(ValueError, match=r"got options= and the keyword verbose=1"):
        make(options, verbose=1).fit(X, y)


class _Recorder:
    """A callback (scikit-learn's FitCallback protocol) that records every hook it gets."""

    def __init__(self):
        self.calls = []

    def setup(self, estimator, context):
        self.calls.append(("setup", context.task_name, context.task_id, None, estimator))

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None, metadata=None):
        self.calls.append(("begin", context.task_name, context.task_id, (X, y, metadata),
                           estimator))  # fmt: skip

    def on_fit_task_end(self, estimator, context, *, X=None, y=None, metadata=None):
        self.calls.append(("end", context.task_name, context.task_id, (X, y, metadata),
                           estimator))  # fmt: skip

    def teardown(self, estimator, context):
        self.calls.append(("teardown", context.task_name, context.task_id, None, estimator))


@pytest.mark.parametrize("refit", [True, False])
def test_search_calls_scikit_learns_callback_tasks(clf_data, backend, refit):
    X, y = clf_data
    weights = np.random.RandomState(0).randint(1, 4, size=len(y)).astype(float)
    grid = {"C": [0.1, 1.0, 10.0]}
    options = dict(cv=ms.KFold(3, shuffle=True, random_state=0), refit=refit)
    ours, theirs = _Recorder(), _Recorder()
    search = parcv.GridSearchCV(LogisticRegression(), grid, backend=backend, **options)
    search.set_callbacks(ours).fit(X, y, sample_weight=weights)
    ms.GridSearchCV(LogisticRegression(), grid, **options).set_callbacks(theirs).fit(
        X, y, sample_weight=weights
    )
    assert all(call[4] is search for call in ours.calls)  # every hook gets the search

    def tasks(calls):
        return sorted((hook, name, task_id) for hook, name, task_id, *_ in calls)

    assert tasks(ours.calls) == tasks(theirs.calls)
    assert len(ours.calls) == 2 + 2 * (1 + 1 + 9 + refit)
    assert ours.calls[0][0] == "setup" and ours.calls[-1][0] == "teardown"
    for (hook, name, task_id, args, _), other in zip(
        sorted(ours.calls, key=lambda c: c[:3]), sorted(theirs.calls, key=lambda c: c[:3]),
        strict=True,
    ):  # fmt: skip
        assert (hook, name, task_id) == other[:3]
        if name == "candidate-split-evaluation":  # its training rows and their weights
            np.testing.assert_array_equal(args[0], other[3][0])
            np.testing.assert_array_equal(args[1], other[3][1])
            np.testing.assert_array_equal(args[2]["sample_weight"], other[3][2]["sample_weight"])
    # Torn down after fit: the fitted search holds no context (it pickles as before).
    assert not {"_callback_fit_ctx", "_skl_callbacks_to_teardown"} & set(vars(search))


def test_set_callbacks_refuses_what_is_not_a_callback():
    with pytest.raises(TypeError, match="FitCallback protocol"):
        parcv.GridSearchCV(Ridge(), {"alpha": [1.0]}).set_callbacks(object())
