"""``params=`` and scikit-learn's metadata routing: the same numbers and errors as scikit-learn.

Without routing, ``params`` of the validation functions go to ``fit``; a search's
``fit(X, y, sample_weight=w)`` also weights the scores of the scorers that accept it.
With ``sklearn.config_context(enable_metadata_routing=True)``, the driver routes
``params`` with scikit-learn's machinery and the units fit and score with what it
routed, on every backend (the workers do not share the driver's config).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import sklearn
from sklearn import model_selection as sk
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import get_scorer, make_scorer
from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import parcv
from parcv.plan.build import build_plan, fingerprint
from parcv.plan.data import check_dataset, data_token
from parcv.plan.routing import RoutedParams, rows_of_params

CV = KFold(4, shuffle=True, random_state=0)


def _weights(n: int) -> np.ndarray:
    return np.random.RandomState(1).uniform(0.1, 3.0, n)


def _routing():
    return sklearn.config_context(enable_metadata_routing=True)


# --- params= without routing: to fit only, as scikit-learn -------------------------------


@pytest.mark.parametrize(
    "name, extra",
    [
        ("cross_validate", {"return_train_score": True}),
        ("cross_val_score", {}),
        ("cross_val_predict", {}),
        ("learning_curve", {"train_sizes": [0.5, 1.0]}),
        ("validation_curve", {"param_name": "alpha", "param_range": [0.1, 10.0]}),
        ("permutation_test_score", {"n_permutations": 3}),
    ],
)
def test_params_go_to_fit_as_scikit_learns(name, extra, reg_data, backend):
    X, y = reg_data
    params = {"sample_weight": _weights(len(y))}
    ours = getattr(parcv, name)(Ridge(), X, y, cv=CV, params=params, backend=backend, **extra)
    theirs = getattr(sk, name)(Ridge(), X, y, cv=CV, params=params, **extra)
    unweighted = getattr(sk, name)(Ridge(), X, y, cv=CV, **extra)
    if name == "cross_validate":
        for key in ("test_score", "train_score"):
            np.testing.assert_array_equal(ours.scores[key], theirs[key])
        assert not np.array_equal(theirs["test_score"], unweighted["test_score"])
        return
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert any(
        not np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(theirs, unweighted, strict=True)
    )


def test_params_and_fit_params_together_are_refused(reg_data):
    X, y = reg_data
    with pytest.raises(TypeError, match=r"params= .*or fit_params= .*not both"):
        parcv.cross_validate(Ridge(), X, y, params={"a": 1}, fit_params={"b": 2},
                             backend="serial")  # fmt: skip
    with pytest.raises(TypeError, match="params must be a dict"):
        parcv.cross_val_score(Ridge(), X, y, params=[1], backend="serial")


def test_sparse_and_scalar_params_are_split_as_scikit_learn():
    from scipy import sparse

    rows = np.array([3, 0])
    split = rows_of_params(
        {"w": sparse.coo_matrix(np.eye(4)), "n": 4, "s": "abcd", "l": [0, 1, 2, 3]}, rows, 4
    )
    np.testing.assert_array_equal(split["w"].toarray(), np.eye(4)[rows])
    assert (split["n"], split["s"], split["l"]) == (4, "abcd", [3, 0])


# --- metadata routing on: to fit, each scorer and the splitter -----------------------------


def _weighted_pipeline():
    # A Pipeline routes its fit arguments only with routing on: it fails in a worker without it.
    return make_pipeline(
        StandardScaler().set_fit_request(sample_weight=False),
        LogisticRegression().set_fit_request(sample_weight=True),
    )


def test_routing_weights_fit_and_each_scorer_as_scikit_learn(clf_data, backend):
    X, y = clf_data
    w = _weights(len(y))
    with _routing():
        scoring = {
            "weighted": get_scorer("accuracy").set_score_request(sample_weight=True),
            "plain": get_scorer("accuracy").set_score_request(sample_weight=False),
        }
        kwargs = dict(cv=CV, scoring=scoring, params={"sample_weight": w},
                      return_train_score=True)  # fmt: skip
        ours = parcv.cross_validate(_weighted_pipeline(), X, y, backend=backend, **kwargs)
        theirs = sk.cross_validate(_weighted_pipeline(), X, y, **kwargs)
    for key in ("test_weighted", "test_plain", "train_weighted", "train_plain"):
        np.testing.assert_array_equal(ours.scores[key], theirs[key])
    assert not np.array_equal(theirs["test_weighted"], theirs["test_plain"])


def test_routing_sends_groups_to_the_splitter(clf_data, backend):
    X, y = clf_data
    groups = np.arange(len(y)) % 5
    with _routing():
        ours = parcv.cross_val_score(LogisticRegression(), X, y, cv=GroupKFold(5),
                                     params={"groups": groups}, backend=backend)  # fmt: skip
        theirs = sk.cross_val_score(LogisticRegression(), X, y, cv=GroupKFold(5),
                                    params={"groups": groups})  # fmt: skip
    np.testing.assert_array_equal(ours, theirs)


def test_routing_refuses_groups_given_directly(clf_data):
    X, y = clf_data
    with _routing(), pytest.raises(ValueError, match="`groups` can only be passed if"):
        parcv.cross_validate(LogisticRegression(), X, y, groups=np.zeros(len(y)),
                             backend="serial")  # fmt: skip


@pytest.mark.parametrize(
    "name", ["cross_validate", "cross_val_score", "learning_curve", "permutation_test_score"]
)
def test_unrequested_metadata_raises_scikit_learns_error_before_any_fit(name, clf_data):
    X, y = clf_data
    fitted = []

    class Spy(LogisticRegression):
        def fit(self, X, y, sample_weight=None):
            fitted.append(1)
            return super().fit(X, y, sample_weight=sample_weight)

    with _routing():
        with pytest.raises(UnsetMetadataPassedError, match=r"Spy\.fit, which is used within"):
            getattr(parcv, name)(Spy(), X, y, params={"sample_weight": np.ones(len(y))},
                                 backend="serial")  # fmt: skip
        requested = Spy().set_fit_request(sample_weight=True)
        with pytest.raises(UnsetMetadataPassedError, match=r"Spy\.score, which is used within"):
            getattr(parcv, name)(requested, X, y, params={"sample_weight": np.ones(len(y))},
                                 backend="serial")  # fmt: skip
    assert not fitted


def test_routing_with_no_params_runs_as_without(clf_data, backend):
    X, y = clf_data
    with _routing():
        ours = parcv.cross_val_score(LogisticRegression(), X, y, cv=CV, backend=backend)
    np.testing.assert_array_equal(ours, sk.cross_val_score(LogisticRegression(), X, y, cv=CV))


def test_routing_weights_an_incremental_curve_s_partial_fit_as_scikit_learn(clf_data, backend):
    from sklearn.linear_model import SGDClassifier

    X, y = clf_data
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    options = dict(cv=CV, train_sizes=[0.4, 1.0], exploit_incremental_learning=True,
                   params={"sample_weight": w})  # fmt: skip
    with _routing():
        # Requested by partial_fit only: only the partial_fit routing carries the weights.
        sgd = SGDClassifier(random_state=0).set_fit_request(sample_weight=False)
        sgd = sgd.set_partial_fit_request(sample_weight=True).set_score_request(sample_weight=False)
        ours = parcv.learning_curve(sgd, X, y, backend=backend, **options)
        theirs = sk.learning_curve(sgd, X, y, **options)
        unweighted = sk.learning_curve(sgd, X, y, **{**options, "params": None})
    np.testing.assert_array_equal(ours.test_scores, theirs[2])
    assert not np.array_equal(theirs[2], unweighted[2])  # the weights reached partial_fit


# --- searches: sample_weight to the scorers that accept it (scikit-learn 1.9) --------------


def test_search_fit_weights_the_scores_as_scikit_learn(clf_data, backend):
    X, y = clf_data
    w = _weights(len(y))
    grid = {"C": [0.01, 1.0, 100.0]}
    cv = StratifiedKFold(4)
    ours = parcv.GridSearchCV(LogisticRegression(), grid, cv=cv, backend=backend,
                              return_train_score=True).fit(X, y, sample_weight=w)  # fmt: skip
    theirs = sk.GridSearchCV(LogisticRegression(), grid, cv=cv,
                             return_train_score=True).fit(X, y, sample_weight=w)  # fmt: skip
    for key in ("mean_test_score", "mean_train_score", "rank_test_score"):
        np.testing.assert_array_equal(ours.cv_results_[key], theirs.cv_results_[key])
    assert (ours.best_index_, ours.best_score_) == (theirs.best_index_, theirs.best_score_)
    fit_only = parcv.search(LogisticRegression(), grid, X, y, cv=cv, backend=backend,
                            fit_params={"sample_weight": w})  # fmt: skip
    assert not np.array_equal(fit_only.cv_results_["mean_test_score"],
                              theirs.cv_results_["mean_test_score"])  # fmt: skip


def test_search_warns_for_a_scorer_without_sample_weight(clf_data):
    X, y = clf_data
    fake = make_scorer(lambda y_true, y_pred: 0.5)
    scoring = {"fake": fake, "accuracy": "accuracy"}
    search = parcv.GridSearchCV(LogisticRegression(), {"C": [1.0]}, cv=3, backend="serial",
                                scoring=scoring, refit=False)  # fmt: skip
    with pytest.warns(UserWarning, match=r"The scoring fake=.* does not support sample_weight"):
        search.fit(X, y, sample_weight=np.ones(len(y)))


def test_search_score_takes_metadata_only_with_routing(clf_data):
    X, y = clf_data
    w = _weights(len(y))
    search = parcv.GridSearchCV(LogisticRegression(), {"C": [1.0]}, cv=3, backend="serial")
    search.fit(X, y)
    with pytest.raises(ValueError, match="is only supported if enable_metadata_routing=True"):
        search.score(X, y, sample_weight=w)
    with _routing():
        weighted = search.set_params(scoring=get_scorer("accuracy").set_score_request(
            sample_weight=True)).fit(X, y).score(X, y, sample_weight=w)  # fmt: skip
    expected = get_scorer("accuracy")(search.best_estimator_, X, y, sample_weight=w)
    assert weighted == expected != search.best_estimator_.score(X, y)


def test_search_params_send_groups_to_the_splitter(clf_data, backend):
    X, y = clf_data
    groups = np.arange(len(y)) % 4
    grid = {"C": [0.01, 1.0]}
    ours = parcv.search(LogisticRegression(), grid, X, y, cv=GroupKFold(4),
                        params={"groups": groups}, backend=backend)  # fmt: skip
    theirs = sk.GridSearchCV(LogisticRegression(), grid, cv=GroupKFold(4)).fit(X, y, groups=groups)
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"],
                                  theirs.cv_results_["mean_test_score"])  # fmt: skip
    with _routing(), pytest.raises(ValueError, match="`groups` can only be passed if"):
        parcv.search(LogisticRegression(), grid, X, y, cv=GroupKFold(4), groups=groups,
                     params={}, backend=backend)  # fmt: skip


# --- identity: a weighted score is another record ------------------------------------------


def test_resume_never_reuses_unweighted_scores_for_a_weighted_scorer(
    clf_data, backend, tmp_path, caplog
):
    X, y = clf_data
    w = _weights(len(y))
    grid = {"C": [0.01, 1.0]}
    store = tmp_path / "run.sqlite"
    parcv.search(LogisticRegression(), grid, X, y, cv=CV, backend=backend, store=store,
                 fit_params={"sample_weight": w})  # fmt: skip
    with caplog.at_level(logging.INFO, logger="parcv"):
        weighted = parcv.search(LogisticRegression(), grid, X, y, cv=CV, backend=backend,
                                store=store, resume=True, params={"sample_weight": w})  # fmt: skip
    assert "reusing 0 of" in caplog.text or "reusing" not in caplog.text
    theirs = sk.GridSearchCV(LogisticRegression(), grid, cv=CV).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(weighted.cv_results_["mean_test_score"],
                                  theirs.cv_results_["mean_test_score"])  # fmt: skip


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
