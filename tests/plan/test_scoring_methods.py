"""Metrics the estimator or the target cannot serve are refused before any fit, as sklearn fails."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn import model_selection as ms
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.ensemble import VotingClassifier
from sklearn.linear_model import LogisticRegression, Ridge, SGDClassifier
from sklearn.metrics import accuracy_score, get_scorer, get_scorer_names, make_scorer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.model_selection import cross_validate as sklearn_cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import parcv
import parcv.plan.scoring


class Dispatched(Exception):
    """Raised by the backend below: the checks passed and work was about to start."""


class StopAtDispatch:
    def open(self, plan, data):
        raise Dispatched


GO = StopAtDispatch()
RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = (X[:, 0] + 0.5 * RNG.normal(size=60) > 0).astype(int)

ESTIMATORS = {
    "ridge": lambda: Ridge(),
    "logistic": lambda: LogisticRegression(),
    "svc": lambda: SVC(),
    "sgd_hinge": lambda: SGDClassifier(random_state=0),
    "sgd_log": lambda: SGDClassifier(loss="log_loss", random_state=0),
    "pipe_svc": lambda: Pipeline([("scale", StandardScaler()), ("svc", SVC())]),
    "kmeans": lambda: KMeans(n_clusters=2, n_init=2, random_state=0),
    "pca": lambda: PCA(n_components=2),
}
METRICS = ["roc_auc", "neg_log_loss", "average_precision", "accuracy", "r2"]


def _sklearn_lacks_method(estimator, metric):
    """Whether scikit-learn's scorer fails on the fitted estimator for want of a method."""
    fitted = estimator.fit(X, Y)
    try:
        get_scorer(metric)(fitted, X, Y)
    except AttributeError:
        return True
    except ValueError:
        return False  # a target-type problem, not a missing method: not parcv's check
    return False


# Ridge with accuracy also warns that its predictions are continuous: tested below.
@pytest.mark.filterwarnings("ignore:.* is a regressor:UserWarning")
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_refused_up_front_exactly_when_sklearn_scoring_lacks_the_method(name, metric):
    lacks = _sklearn_lacks_method(ESTIMATORS[name](), metric)
    estimator = ESTIMATORS[name]()
    if lacks:
        with pytest.raises(ValueError, match=f"scoring '{metric}' calls the estimator's"):
            parcv.cross_validate(estimator, X, Y, cv=3, scoring=metric, backend=GO)
    else:
        with pytest.raises(Dispatched):
            parcv.cross_validate(estimator, X, Y, cv=3, scoring=metric, backend=GO)


def test_a_candidate_that_lacks_the_method_stops_only_an_error_score_raise_run():
    space = {"loss": ["hinge", "log_loss"]}  # predict_proba needs a probabilistic loss
    est = SGDClassifier(random_state=0)
    with pytest.raises(Dispatched):
        parcv.search(est, space, X, Y, cv=3, scoring="neg_log_loss", backend=GO)
    with pytest.raises(ValueError, match=r"candidate \{'loss': 'hinge'\} does not have.*"
                       r"error_score=float\('nan'\)"):  # fmt: skip
        parcv.search(
            est, space, X, Y, cv=3, scoring="neg_log_loss", error_score="raise", backend=GO
        )


def test_no_candidate_with_the_method_is_refused_whatever_error_score():
    space = {"alpha": [1e-4, 1e-3], "loss": ["hinge"]}
    with pytest.raises(ValueError, match=r"predict_proba, which no candidate has \(the first: "):
        parcv.search(SGDClassifier(), space, X, Y, cv=3, scoring="neg_log_loss", backend=GO)


def test_swapped_model_families_are_each_checked():
    pipe = Pipeline([("scale", StandardScaler()), ("model", Ridge())])
    space = [{"model": [Ridge()]}, {"model": [LogisticRegression()]}]
    with pytest.raises(Dispatched):
        parcv.search(pipe, space, X, Y, cv=3, scoring="roc_auc", backend=GO)
    with pytest.raises(ValueError, match=r"candidate \{'model': Ridge\(\)\} does not have"):
        parcv.search(pipe, space, X, Y, cv=3, scoring="roc_auc", error_score="raise", backend=GO)


def test_several_metrics_name_the_one_that_cannot_score():
    with pytest.raises(ValueError, match="scoring metric 'auc' calls the estimator's"):
        parcv.cross_validate(
            Ridge(), X, Y, cv=3, scoring={"r2": "r2", "auc": "roc_auc"}, backend=GO
        )


def test_user_callables_are_not_second_guessed():
    def scorer(estimator, X, y):
        return 0.0

    with pytest.raises(Dispatched):
        parcv.cross_validate(Ridge(), X, Y, cv=3, scoring=scorer, backend=GO)


def test_accepted_run_scores_like_gridsearchcv_with_the_failing_candidate_nan():
    space = {"loss": ["hinge", "log_loss"]}
    cv = KFold(3, shuffle=True, random_state=0)
    est = SGDClassifier(random_state=0)
    # The fits of hinge succeed and its scorer fails: scikit-learn's "Scoring failed" warning.
    with pytest.warns(UserWarning, match="(?s)Scoring failed.*predict_proba"):
        result = parcv.search(est, space, X, Y, cv=cv, scoring="neg_log_loss", backend="serial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's own Scoring failed and NaN warnings
        ref = GridSearchCV(est, space, cv=cv, scoring="neg_log_loss").fit(X, Y)
    got = result.cv_results_["mean_test_score"]
    want = ref.cv_results_["mean_test_score"]
    assert math.isnan(got[0]) and math.isnan(want[0])
    assert got[1] == want[1]
    assert result.best_params_ == ref.best_params_ == {"loss": "log_loss"}


class AllMethods(ClassifierMixin, BaseEstimator):
    """Has every method a scorer may call, and predicts whatever y it was given."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)

    def decision_function(self, X):
        return np.asarray(X)[:, 0]

    def predict_proba(self, X):
        p = 1 / (1 + np.exp(-np.asarray(X)[:, 0]))
        return np.c_[1 - p, p]


Y_CONT = X @ np.array([1.0, -2.0, 0.5]) + 0.1


@pytest.mark.parametrize("metric", sorted(get_scorer_names()))
def test_continuous_y_refused_exactly_when_sklearn_says_continuous(metric):
    """scikit-learn's scorer on a fitted estimator is the reference, for every scorer name."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # clustering metrics warn, and score
            get_scorer(metric)(AllMethods().fit(X, Y_CONT), X, Y_CONT)
        sklearn_refuses = False
    except ValueError as err:  # its messages for a continuous y_true
        sklearn_refuses = any(s in str(err) for s in ("continuous", "Unknown label type"))
    if sklearn_refuses:
        with pytest.raises(ValueError, match=f"scoring '{metric}' is a classification metric"):
            parcv.cross_validate(AllMethods(), X, Y_CONT, cv=3, scoring=metric, backend=GO)
    else:
        with pytest.raises(Dispatched):
            parcv.cross_validate(AllMethods(), X, Y_CONT, cv=3, scoring=metric, backend=GO)


Y_WORDS = np.array(["no", "yes"])[Y]
Y_THREE = np.array(["a", "b", "c"])[np.arange(len(X)) % 3]


def _sklearn_needs_numbers(metric):
    """Reference: scikit-learn's scorer refuses class labels that are words, as numbers.

    A regression metric converts y to float; every other scorer takes words as labels
    (or fails for another reason, such as a missing pos_label).
    """
    numbers = ("could not convert string to float", "is not compatible with arrays of bytes")
    refused = []
    for y in (Y_WORDS, Y_THREE):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                get_scorer(metric)(LogisticRegression().fit(X, y), X, y)
            refused.append(False)
        except ValueError as err:
            refused.append(any(s in str(err) for s in numbers))
    return all(refused)


@pytest.mark.parametrize("metric", sorted(get_scorer_names()))
def test_a_regression_metric_on_a_classifier_is_refused_before_any_fit(metric):
    """Refused exactly for the scorers scikit-learn computes on class labels as numbers."""
    grid = {"C": [0.1, 1.0]}
    if _sklearn_needs_numbers(metric):
        with pytest.raises(ValueError) as info:
            parcv.search(SVC(), grid, X, Y, cv=3, scoring=metric, backend=GO)
        text = str(info.value)
        assert text.startswith(f"scoring '{metric}' is a regression metric (")
        assert "SVC is a classifier" in text
        assert "'accuracy'" in text and "'neg_log_loss'" in text  # what to use instead
        assert "make_scorer(" in text  # the way to keep it on purpose
        assert "would rank the candidates by the distance between class labels" in text
        # Labels that are words: every fit would fail to be scored, selecting or not.
        with pytest.raises(ValueError, match=r"class labels of y are words \(e.g. 'yes'\)"):
            parcv.cross_validate(SVC(), X, Y_WORDS, cv=3, scoring=metric, backend=GO)
    else:  # a classification metric: some may be refused, never as a regression metric
        try:
            parcv.search(SVC(probability=True), grid, X, Y, cv=3, scoring=metric, backend=GO)
        except Dispatched:
            pass
        except ValueError as err:
            assert "regression metric" not in str(err)


def test_the_reference_finds_sklearns_regression_scorers():
    """The behavioural reference above is not vacuous: it finds the documented ones."""
    found = {m for m in get_scorer_names() if _sklearn_needs_numbers(m)}
    assert {"r2", "neg_mean_squared_error", "neg_mean_absolute_error", "neg_max_error",
            "explained_variance", "neg_mean_poisson_deviance"} <= found  # fmt: skip
    assert not found & {"accuracy", "f1_macro", "roc_auc", "neg_log_loss", "adjusted_rand_score"}


def test_a_regression_metric_is_refused_on_a_pipeline_ending_in_a_classifier_with_words():
    pipe = Pipeline([("scale", StandardScaler()), ("svc", SVC())])
    words = r"scoring metric 'mse' \('neg_mean_squared_error'\) is a regression metric "
    with pytest.raises(ValueError, match=words + ".*Pipeline ending in SVC is a classifier"):
        parcv.search(
            pipe,
            {"svc__C": [1.0]},
            X,
            Y_THREE,
            cv=3,
            backend=GO,
            scoring={"acc": "accuracy", "mse": "neg_mean_squared_error"},
            refit="acc",
        )
    with pytest.raises(ValueError, match="scoring metric 'r2' is a regression metric"):
        parcv.cross_validate(pipe, X, Y_THREE, cv=3, scoring=["accuracy", "r2"], backend=GO)


def test_a_regression_metric_only_reported_on_number_labels_is_computed_as_sklearn_does():
    # scikit-learn's own test_cross_validate: "It's okay to evaluate regression metrics on
    # classification too"; for labels 0/1, the squared error is the error rate.
    cv = KFold(3, shuffle=True, random_state=0)
    metrics = ["accuracy", "r2", "neg_mean_squared_error"]
    ours = parcv.cross_validate(SVC(), X, Y, cv=cv, scoring=metrics, backend="serial")
    theirs = sklearn_cross_validate(SVC(), X, Y, cv=cv, scoring=metrics)
    for name in metrics:
        assert ours.scores[f"test_{name}"].tolist() == theirs[f"test_{name}"].tolist()
    grid = {"C": [0.1, 1.0]}
    with pytest.raises(Dispatched):  # reported beside the metric that selects
        parcv.search(SVC(), grid, X, Y, cv=3, scoring=metrics, refit="accuracy", backend=GO)
    with pytest.raises(ValueError, match="scoring metric 'r2' is a regression metric"):
        parcv.search(SVC(), grid, X, Y, cv=3, scoring=metrics, refit="r2", backend=GO)


def test_a_regression_metric_on_a_regressor_or_a_users_scorer_runs():
    with pytest.raises(Dispatched):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y_CONT, cv=3, scoring="r2", backend=GO)
    # Built by the user on purpose (e.g. ordered classes): not second-guessed.
    from sklearn.metrics import mean_absolute_error

    mae = make_scorer(mean_absolute_error, greater_is_better=False)
    with pytest.raises(Dispatched):
        parcv.search(SVC(), {"C": [1.0]}, X, Y, cv=3, scoring=mae, backend=GO)
    with pytest.raises(Dispatched):
        parcv.search(SVC(), {"C": [1.0]}, X, Y, cv=3, scoring={"mae": mae}, refit="mae",
                     backend=GO)  # fmt: skip


def test_a_regression_metric_names_the_classifier_among_model_families():
    pipe = Pipeline([("scale", StandardScaler()), ("model", Ridge())])
    space = [{"model": [Ridge()], "model__alpha": [1.0]}, {"model": [SVC()], "model__C": [1.0]}]
    with pytest.raises(ValueError, match=r"candidate \{'model': SVC\(\), 'model__C': 1.0\}"
                       r" is a classifier"):  # fmt: skip
        parcv.search(pipe, space, X, Y, cv=3, scoring="r2", backend=GO)
    regressors = [{"model": [Ridge()]}, {"model": [Ridge(alpha=2.0)]}]
    with pytest.raises(Dispatched):
        parcv.search(pipe, regressors, X, Y_CONT, cv=3, scoring="r2", backend=GO)


def test_class_labels_as_floats_are_not_continuous():
    with pytest.raises(Dispatched):
        parcv.cross_validate(
            LogisticRegression(), X, Y.astype(float), cv=3, scoring="accuracy", backend=GO
        )


def test_accuracy_on_a_regression_target_names_the_value():
    with pytest.raises(ValueError, match=r"accuracy_score\), but y is continuous \(y\[0\] = "):
        parcv.search(Ridge(), {"alpha": [1.0, 2.0]}, X, Y_CONT, cv=3, scoring="accuracy",
                     backend=GO)  # fmt: skip


def _brute_first_lacking(estimator, params, methods):
    """Reference: each candidate's own estimator, one clone each."""
    for p in params:
        est = clone(estimator).set_params(**clone(p, safe=False))
        if not any(hasattr(est, m) for m in methods):
            return p
    return None


SPACES = {
    "sgd": (
        SGDClassifier(),
        [
            {"loss": loss, "alpha": a, "penalty": pen}
            for loss in ["hinge", "log_loss", "modified_huber", "squared_hinge"]
            for a in [1e-4, 1e-3]
            for pen in ["l2", "l1"]
        ],
    ),
    "sgd_from_log_loss": (  # the estimator as given has predict_proba, some candidates not
        SGDClassifier(loss="log_loss"),
        [{"loss": loss, "alpha": a} for loss in ["log_loss", "hinge"] for a in [1e-4, 1e-3]],
    ),
    "soft_voting": (
        VotingClassifier([("lr", LogisticRegression()), ("sgd", SGDClassifier())], voting="soft"),
        [{"voting": v, "lr__C": c} for v in ["soft", "hard"] for c in [0.1, 1.0]],
    ),
    "voting": (
        VotingClassifier([("lr", LogisticRegression()), ("sgd", SGDClassifier())]),
        [{"voting": v, "lr__C": c} for v in ["hard", "soft"] for c in [0.1, 1.0]],
    ),
    "families": (
        Pipeline([("scale", StandardScaler()), ("model", SVC())]),
        [
            {"model": SVC(), "model__C": 1.0},
            {"model": SGDClassifier(), "model__loss": "hinge"},
            {"model": SGDClassifier(), "model__loss": "log_loss"},
            {"model": LogisticRegression()},
        ],
    ),
}


@pytest.mark.parametrize("order", range(4))
@pytest.mark.parametrize("space", sorted(SPACES))
def test_grouped_check_agrees_with_a_clone_per_candidate(space, order):
    estimator, params = SPACES[space]
    params = [params[i] for i in np.random.default_rng(order).permutation(len(params))]
    scoring = parcv.plan.scoring.check_scoring_spec(estimator, "neg_log_loss", True)
    first = _brute_first_lacking(estimator, params, ["predict_proba"])
    if first is None:
        parcv.plan.scoring.check_response_methods(estimator, params, scoring, each=True)
    else:
        with pytest.raises(ValueError, match="does not have") as info:
            parcv.plan.scoring.check_response_methods(estimator, params, scoring, each=True)
        assert f"candidate {first!r} does not have" in str(info.value)
    every = all(_brute_first_lacking(estimator, [p], ["predict_proba"]) for p in params)
    if every:
        with pytest.raises(ValueError, match="no candidate has"):
            parcv.plan.scoring.check_response_methods(estimator, params, scoring, each=False)
    else:
        parcv.plan.scoring.check_response_methods(estimator, params, scoring, each=False)


Y_COUNTS = np.round(np.exp(1 + 0.5 * X[:, 0])).astype(int)  # whole numbers: not continuous


def test_a_label_metric_on_a_regressor_warns_as_sklearn_would_fail_at_every_fit():
    with pytest.raises(ValueError, match="can't handle a mix of multiclass and continuous"):
        ms.cross_validate(Ridge(), X, Y_COUNTS, cv=3, scoring="accuracy", error_score="raise")
    warned = r"'accuracy' is a classification metric \(accuracy_score\), but Ridge is a regressor"
    with pytest.warns(UserWarning, match=warned) as caught, pytest.raises(Dispatched):
        parcv.cross_validate(Ridge(), X, Y_COUNTS, cv=3, scoring="accuracy", backend=GO)
    assert caught[0].filename == __file__  # points at the caller's line


def test_no_warning_for_a_classifier_or_model_families():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Dispatched):
            parcv.cross_validate(
                LogisticRegression(), X, Y_COUNTS, cv=KFold(3), scoring="accuracy", backend=GO
            )
        pipe = Pipeline([("model", Ridge())])
        space = [{"model": [Ridge()]}, {"model": [LogisticRegression()]}]
        with pytest.raises(Dispatched):
            parcv.search(pipe, space, X, Y_COUNTS, cv=KFold(3), scoring="accuracy", backend=GO)


@pytest.mark.parametrize(
    "metric", ["roc_auc", "roc_auc_ovr", "roc_auc_ovo", "roc_auc_ovr_weighted"]
)
def test_multiclass_roc_auc_refused_before_fits_exactly_when_sklearn_refuses(metric):
    """Reference: scikit-learn's scorer on a fitted multiclass LogisticRegression."""
    y3 = np.arange(len(X)) % 3
    try:
        get_scorer(metric)(LogisticRegression().fit(X, y3), X, y3)
        sklearn_refuses = False
    except ValueError:
        sklearn_refuses = True
    if sklearn_refuses:
        with pytest.raises(ValueError, match=r"'roc_auc_ovr' .*'roc_auc_ovo'"):
            parcv.search(LogisticRegression(), {"C": [1.0]}, X, y3, cv=3, scoring=metric,
                         backend=GO)  # fmt: skip
    else:
        with pytest.raises(Dispatched):
            parcv.search(LogisticRegression(), {"C": [1.0]}, X, y3, cv=3, scoring=metric,
                         backend=GO)  # fmt: skip


@pytest.mark.parametrize(
    "scoring",
    [
        [make_scorer(accuracy_score), make_scorer(accuracy_score)],  # a list of callables
        {0: "accuracy", 1: "balanced_accuracy"},  # a dict whose keys are not names
    ],
)
def test_scorers_not_named_by_str_are_a_value_error_as_in_scikit_learn(scoring):
    X, y = np.arange(40.0).reshape(20, 2), np.arange(20) % 2
    with pytest.raises(ValueError) as theirs:
        sklearn_cross_validate(LogisticRegression(), X, y, scoring=scoring, cv=2)
    with pytest.raises(ValueError) as ours:
        parcv.cross_validate(LogisticRegression(), X, y, scoring=scoring, cv=2, backend="serial")
    # scikit-learn's sentence first (up to the value it shows), then parcv's advice.
    assert _words(ours).startswith(_words(theirs).split(" Got ")[0].split(" scoring=")[0])
    assert "in a dict" in str(ours.value) or "keys name the metrics" in str(ours.value)


@pytest.mark.parametrize("scoring", [(), ("f1", "f1"), {}, [["accuracy"]]])
def test_bad_lists_of_metrics_are_refused_as_scikit_learn_refuses_them(scoring):
    X, y = np.arange(40.0).reshape(20, 2), np.arange(20) % 2
    with pytest.raises(ValueError) as theirs:
        sklearn_cross_validate(LogisticRegression(), X, y, scoring=scoring, cv=2)
    with pytest.raises(ValueError) as ours:
        parcv.cross_validate(LogisticRegression(), X, y, scoring=scoring, cv=2, backend="serial")
    assert _words(ours).startswith(_words(theirs).split(" {}")[0].split(" ()")[0][:60])


def _words(raised):
    return " ".join(str(raised.value).split())  # scikit-learn's text has a double space
