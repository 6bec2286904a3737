"""Parity with scikit-learn on the same folds, and equality across backends."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn import model_selection as ms
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeRegressor

import parcv
from tests.reference import nested_reference

SPLITTERS = [
    ms.KFold(4, shuffle=True, random_state=1),
    ms.StratifiedKFold(3),
    ms.RepeatedKFold(n_splits=3, n_repeats=2, random_state=0),
    ms.ShuffleSplit(n_splits=4, test_size=0.25, random_state=0),
    ms.TimeSeriesSplit(n_splits=3),
    ms.LeaveOneOut(),
]


@pytest.mark.parametrize("cv", SPLITTERS, ids=lambda s: type(s).__name__)
def test_cross_validate_equals_sklearn_on_every_splitter(cv, clf_data):
    X, y = clf_data
    X, y = (X[:40], y[:40]) if isinstance(cv, ms.LeaveOneOut) else (X, y)
    est = LogisticRegression(C=0.5)
    # ROC AUC is undefined on the single test sample of leave-one-out.
    scoring = ["accuracy"] + ([] if isinstance(cv, ms.LeaveOneOut) else ["roc_auc"])
    ours = parcv.cross_validate(
        est, X, y, cv=cv, scoring=scoring, return_train_score=True, backend="serial"
    )
    ref = ms.cross_validate(est, X, y, cv=cv, scoring=scoring, return_train_score=True)
    for name in scoring:
        for key in (f"test_{name}", f"train_{name}"):
            np.testing.assert_array_equal(ours.scores[key], ref[key])


def test_cross_validate_groups_and_predefined_split(reg_data):
    X, y = reg_data
    groups = np.arange(len(y)) % 7
    ref = ms.cross_validate(Ridge(), X, y, cv=ms.GroupKFold(4), groups=groups)
    ours = parcv.cross_validate(Ridge(), X, y, cv=ms.GroupKFold(4), groups=groups, backend="serial")
    np.testing.assert_array_equal(ours.scores["test_score"], ref["test_score"])
    fold = np.arange(len(y)) % 3
    ref = ms.cross_validate(Ridge(), X, y, cv=ms.PredefinedSplit(fold))
    ours = parcv.cross_validate(Ridge(), X, y, cv=ms.PredefinedSplit(fold), backend="serial")
    np.testing.assert_array_equal(ours.scores["test_score"], ref["test_score"])


def test_cross_validate_int_cv_is_stratified_for_classifiers(clf_data, backend):
    X, y = clf_data
    ours = parcv.cross_validate(SVC(), X, y, cv=5, backend=backend)
    ref = ms.cross_validate(SVC(), X, y, cv=5)
    np.testing.assert_array_equal(ours.scores["test_score"], ref["test_score"])
    s = ours.summaries["score"]
    k = len(ref["test_score"])
    assert s.var_mean == pytest.approx(np.var(ref["test_score"], ddof=1) / k, rel=1e-12)
    assert s.se == pytest.approx(np.sqrt(s.var_mean))


GRID = {"C": [0.1, 1.0, 10.0], "gamma": ["scale", 0.05]}


def test_search_equals_grid_search_cv(clf_data, backend):
    X, y = clf_data
    ours = parcv.search(SVC(), GRID, X, y, cv=4, backend=backend, return_train_score=True)
    ref = ms.GridSearchCV(SVC(), GRID, cv=4, return_train_score=True).fit(X, y)
    for key in (
        "mean_test_score",
        "std_test_score",
        "rank_test_score",
        "split3_test_score",
        "mean_train_score",
    ):
        np.testing.assert_array_equal(ours.cv_results_[key], ref.cv_results_[key])
    assert ours.best_params_ == ref.best_params_
    assert ours.best_score_ == ref.best_score_
    assert ours.best_index_ == ref.best_index_
    np.testing.assert_array_equal(ours.best_estimator_.predict(X), ref.best_estimator_.predict(X))


def test_search_multimetric_refit_metric(clf_data):
    X, y = clf_data
    scoring = {"acc": "accuracy", "ll": "neg_log_loss"}
    est = LogisticRegression(max_iter=500)
    grid = {"C": [0.01, 0.1, 1.0, 10.0]}
    ours = parcv.search(est, grid, X, y, cv=3, scoring=scoring, refit="ll", backend="serial")
    ref = ms.GridSearchCV(est, grid, cv=3, scoring=scoring, refit="ll").fit(X, y)
    for key in ("mean_test_acc", "rank_test_acc", "mean_test_ll", "rank_test_ll"):
        np.testing.assert_array_equal(ours.cv_results_[key], ref.cv_results_[key])
    assert ours.best_params_ == ref.best_params_
    assert ours.best_score_ == ref.best_score_


def test_search_random_space_equals_randomized_search(reg_data, backend):
    X, y = reg_data
    dists = {"alpha": loguniform(1e-3, 1e3), "fit_intercept": [True, False]}
    ours = parcv.search(
        Ridge(), parcv.RandomSpace(dists, n_iter=7, random_state=3), X, y, cv=3, backend=backend
    )
    ref = ms.RandomizedSearchCV(Ridge(), dists, n_iter=7, random_state=3, cv=3).fit(X, y)
    assert ours.cv_results_["params"] == ref.cv_results_["params"]
    np.testing.assert_array_equal(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )
    assert ours.best_params_ == ref.best_params_


def test_search_over_model_families(reg_data):
    X, y = reg_data
    pipe = Pipeline([("scale", StandardScaler()), ("model", Ridge())])
    space = [
        {"model": [Ridge()], "model__alpha": [0.1, 10.0]},
        {"model": [SVR()], "model__C": [1.0, 100.0]},
        {"model": [DecisionTreeRegressor(random_state=0)], "model__max_depth": [2, 4]},
    ]
    ours = parcv.search(pipe, space, X, y, cv=3, backend="local", n_jobs=2)
    ref = ms.GridSearchCV(pipe, space, cv=3).fit(X, y)
    np.testing.assert_array_equal(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )
    assert repr(ours.best_params_) == repr(ref.best_params_)
    # Candidate parameters are never mutated by the fits (estimator-valued params are cloned).
    assert [repr(c["model"]) for c in ours.cv_results_["params"]] == [
        "Ridge()",
        "Ridge()",
        "SVR()",
        "SVR()",
        "DecisionTreeRegressor(random_state=0)",
        "DecisionTreeRegressor(random_state=0)",
    ]


@pytest.mark.parametrize("classifier", [True, False])
def test_nested_cv_equals_sklearn_idiom_and_reference(classifier, clf_data, reg_data, backend):
    X, y = clf_data if classifier else reg_data
    est, grid = (SVC(), GRID) if classifier else (Ridge(), {"alpha": [0.01, 1.0, 100.0]})
    scoring = "accuracy" if classifier else "neg_mean_squared_error"
    ours = parcv.nested_cv(est, grid, X, y, outer=4, inner=3, scoring=scoring, backend=backend)
    idiom = ms.cross_validate(
        ms.GridSearchCV(est, grid, cv=3, scoring=scoring), X, y, cv=4, scoring=scoring
    )
    np.testing.assert_array_equal(ours.outer_scores["score"], idiom["test_score"])
    ref = nested_reference(
        est, grid, X, y, outer=4, inner=3, scoring=scoring, classifier=classifier
    )
    np.testing.assert_array_equal(ours.outer_scores["score"], ref["outer_scores"])
    assert ours.chosen == ref["chosen"]
    assert ours.final is not None and ours.final.best_index_ == ref["final"]
    est_summary = ours.estimate["score"]
    assert est_summary.mean == pytest.approx(ref["outer_scores"].mean(), rel=1e-12)
    assert est_summary.var_mean == pytest.approx(np.var(ref["outer_scores"], ddof=1) / 4)
    assert sum(row.count for row in ours.stability) == 4


def test_nested_cv_with_groups_equals_sklearn(reg_data):
    X, y = reg_data
    groups = np.arange(len(y)) % 10
    grid = {"alpha": [0.1, 10.0]}
    ours = parcv.nested_cv(
        Ridge(),
        grid,
        X,
        y,
        groups=groups,
        outer=ms.GroupKFold(5),
        inner=ms.GroupKFold(3),
        backend="serial",
    )
    scores = []
    for tr, te in ms.GroupKFold(5).split(X, y, groups):
        gs = ms.GridSearchCV(Ridge(), grid, cv=ms.GroupKFold(3)).fit(
            X[tr], y[tr], groups=groups[tr]
        )
        scores.append(gs.score(X[te], y[te]))
    np.testing.assert_array_equal(ours.outer_scores["score"], np.array(scores))


def test_backends_agree_bit_for_bit(clf_data):
    X, y = clf_data
    results = [
        parcv.nested_cv(
            SVC(), GRID, X, y, outer=3, inner=3, backend=b, n_jobs=n, return_train_score=True
        )
        for b, n in (("serial", None), ("local", 1), ("local", 2))
    ]
    base = results[0]
    for other in results[1:]:
        assert [r.key for r in other.records] == [r.key for r in base.records]
        for a, b in zip(base.records, other.records, strict=True):
            assert a.test_scores == b.test_scores and a.train_scores == b.train_scores


def test_three_way_holdout_is_architecture_b(reg_data):
    X, y = reg_data
    scheme = parcv.ThreeWayHoldOut(0.6, 0.2, 0.2, random_state=4)
    grid = {"alpha": [0.01, 1.0, 100.0]}
    ours = parcv.nested_cv(Ridge(), grid, X, y, outer=scheme, inner=None, backend="serial")
    ((trval, test),) = scheme.split(X)
    ((tr, va),) = scheme.inner_splitter().split(X[trval])
    assert len(test) == 24 and len(trval) == 96 and len(va) == 24
    valid_scores = [
        Ridge(alpha=a).fit(X[trval][tr], y[trval][tr]).score(X[trval][va], y[trval][va])
        for a in grid["alpha"]
    ]
    best = int(np.argmax(valid_scores))
    expected = Ridge(alpha=grid["alpha"][best]).fit(X[trval], y[trval]).score(X[test], y[test])
    assert ours.chosen == [best]
    assert ours.outer_scores["score"][0] == expected


def test_one_standard_error_rule_picks_simplest_within_one_se(reg_data):
    X, y = reg_data
    grid = {"alpha": [0.001, 0.1, 10.0, 100.0, 1000.0]}
    ours = parcv.search(
        Ridge(),
        grid,
        X,
        y,
        cv=5,
        backend="serial",
        selection=parcv.Selection("one_se", complexity=lambda p: -p["alpha"]),
    )
    splits = np.column_stack([ours.cv_results_[f"split{i}_test_score"] for i in range(5)])
    means = splits.mean(axis=1)
    best = int(np.argmax(means))
    se = np.std(splits[best], ddof=1) / np.sqrt(5)
    eligible = [c for c in range(5) if means[c] >= means[best] - se]
    assert ours.best_index_ == max(eligible)  # largest alpha = simplest model
    assert ours.best_params_ == {"alpha": grid["alpha"][max(eligible)]}
    assert len(eligible) > 1  # the rule really moved away from the best mean


def test_results_export_to_json_and_dataframe(clf_data, tmp_path):
    import json

    import pandas as pd

    X, y = clf_data
    result = parcv.nested_cv(SVC(), GRID, X, y, outer=3, inner=3, backend="serial")
    frame = pd.DataFrame(result.final.cv_results_)
    assert list(frame["rank_test_score"]) == list(result.final.cv_results_["rank_test_score"])
    path = tmp_path / "r.json"
    result.to_json(str(path))
    loaded = json.loads(path.read_text())
    assert loaded["outer_scores"]["score"] == result.outer_scores["score"].tolist()
    # The JSON is the summary; per-unit records stay on the result (and in a store).
    assert "records" not in loaded and "records" not in loaded["final"]
    assert len(result.records) == 3 * 3 * 6 + 3 * 6 + 3 + 1
    back = [parcv.Record.from_dict(json.loads(json.dumps(r.to_dict()))) for r in result.records]
    assert [r.key for r in back] == [r.key for r in result.records]
    assert back[0].test_scores == result.records[0].test_scores
    table = result.final.best_vs_rest()
    columns = loaded["final"]["comparisons"]["columns"]
    assert columns["name_b"] == [t.name_b for t in table]
    assert columns["p_holm"] == list(table.adjusted_p_values)
    assert loaded["final"]["comparisons"]["best"] == table.best


def test_dir_of_parcv_shows_the_public_api_and_its_wings_only():
    # dir(parcv) listed "annotations", the __future__ import of parcv/__init__.py.
    import types

    shown = {name for name in dir(parcv) if not name.startswith("_")}
    others = shown - set(parcv.__all__)
    assert "annotations" not in shown
    assert all(isinstance(getattr(parcv, name), types.ModuleType) for name in others), others
    assert set(parcv.__all__) - {"__version__"} <= shown


@pytest.mark.parametrize("function", [parcv.cross_validate, parcv.search, parcv.nested_cv])
def test_docstrings_use_words_not_the_design_notes_labels(function):
    # nested_cv's said "(and to all data for A)": A is the design notes' name for select
    # and refit, defined nowhere a user reads.
    import re

    assert not re.search(r"\b(for|of|in|architecture) [ABC]\b", function.__doc__)


def test_public_api_is_pinned():
    assert sorted(parcv.__all__) == sorted(
        [
            "BackendError",
            "BiasVarianceResult",
            "CVResult",
            "DaskBackend",
            "FitFailedError",
            "FitFailedWarning",
            "GridSearchCV",
            "Iterations",
            "Halving",
            "HalvingGridSearchCV",
            "HalvingRandomSearchCV",
            "HalvingResult",
            "Hyperband",
            "HyperbandResult",
            "NestedCV",
            "NestedHalvingResult",
            "NestedRoundsResult",
            "RandomizedSearchCV",
            "RunInterrupted",
            "RunOptions",
            "LearningCurveResult",
            "LocalBackend",
            "ModelNotAvailableError",
            "NestedResult",
            "ParcvError",
            "TokenError",
            "register_token",
            "PartialResult",
            "PermutationTestResult",
            "PlanMismatchError",
            "Racing",
            "RandomSpace",
            "Record",
            "Sampler",
            "ScoreSummary",
            "SearchResult",
            "Selection",
            "SerialBackend",
            "ThreeWayHoldOut",
            "UnfinishedRunError",
            "Unit",
            "ValidationCurveResult",
            "__version__",
            "bias_variance",
            "cross_val_predict",
            "cross_val_score",
            "cross_validate",
            "learning_curve",
            "load",
            "nested_cv",
            "pareto_front",
            "permutation_test_score",
            "search",
            "summarize_scores",
            "trust_saved_model",
            "validation_curve",
            "write_report",
        ]
    )


def _journal_mode(path):
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]


class _JournalSpy:
    """A serial backend that notes the store's journal mode while the run holds it open."""

    def __init__(self, store):
        self.store, self.mode = store, None

    def open(self, plan, data):
        self.mode = _journal_mode(self.store)
        return parcv.SerialBackend().open(plan, data)


@pytest.mark.parametrize("call", ["cross_validate", "search", "nested_cv"])
def test_journal_sets_the_sqlite_journal_mode_of_the_store(reg_data, tmp_path, call):
    X, y = reg_data
    args = (Ridge(),) if call == "cross_validate" else (Ridge(), {"alpha": [0.1, 1.0]})
    run = getattr(parcv, call)
    for journal in ("delete", "wal", None):
        store = tmp_path / f"{journal}.sqlite"
        spy = _JournalSpy(store)
        options = {} if journal is None else {"journal": journal}
        run(*args, X, y, backend=spy, store=store, **options)
        assert spy.mode == (journal or "wal")  # as SQLite itself reports it, during the run
        # A clean close folds the write-ahead log back: no -wal / -shm file is left.
        assert not Path(f"{store}-wal").exists() and not Path(f"{store}-shm").exists()


class _NeverRuns:
    def open(self, plan, data):  # pragma: no cover - reaching it is the failure
        raise AssertionError("compute was dispatched despite a bad journal")


@pytest.mark.parametrize(
    ("journal", "error", "match"),
    [("WAL2", ValueError, r"journal must be one of \['wal', 'delete'\]; got 'WAL2'"),
     (None, TypeError, "journal must be a str")],
)  # fmt: skip
def test_bad_journal_is_refused_before_compute(reg_data, tmp_path, journal, error, match):
    X, y = reg_data
    calls = [
        (parcv.cross_validate, (Ridge(),)),
        (parcv.search, (Ridge(), {"alpha": [1.0]})),
        (parcv.nested_cv, (Ridge(), {"alpha": [1.0]})),
    ]
    for run, args in calls:
        with pytest.raises(error, match=match):
            run(*args, X, y, backend=_NeverRuns(), store=tmp_path / "s.sqlite", journal=journal)
        with pytest.raises(error, match=match):
            run(*args, X, y, backend=_NeverRuns(), journal=journal)
    assert not (tmp_path / "s.sqlite").exists()


# Every entry point, called on small data; the run options come as keywords.
ENTRY_POINTS = {
    "cross_validate": lambda X, y, **kw: parcv.cross_validate(Ridge(), X, y, cv=3, **kw),
    "search": lambda X, y, **kw: parcv.search(Ridge(), {"alpha": [1.0]}, X, y, cv=3, **kw),
    "nested_cv": lambda X, y, **kw: parcv.nested_cv(
        Ridge(), {"alpha": [1.0]}, X, y, outer=3, inner=2, **kw
    ),
    "cross_val_predict": lambda X, y, **kw: parcv.cross_val_predict(Ridge(), X, y, cv=3, **kw),
    "cross_val_score": lambda X, y, **kw: parcv.cross_val_score(Ridge(), X, y, cv=3, **kw),
    "learning_curve": lambda X, y, **kw: parcv.learning_curve(
        Ridge(), X, y, cv=3, train_sizes=[1.0], **kw
    ),
    "validation_curve": lambda X, y, **kw: parcv.validation_curve(
        Ridge(), X, y, param_name="alpha", param_range=[1.0], cv=3, **kw
    ),
    "permutation_test_score": lambda X, y, **kw: parcv.permutation_test_score(
        Ridge(), X, y, cv=3, n_permutations=2, **kw
    ),
    "bias_variance": lambda X, y, **kw: parcv.bias_variance(
        Ridge(), X[:80], y[:80], X[80:], y[80:], n_rounds=2, **kw
    ),
}
FINAL_MODEL = {"search", "nested_cv"}  # the entry points that fit a model to save


def _run_option_cases(store):
    """Each run option at a value other than its default, and where the engine must see it."""
    return {
        "backend": ({"backend": parcv.LocalBackend(n_jobs=1)},
                    lambda b, o: b == parcv.LocalBackend(n_jobs=1)),
        "n_jobs": ({"n_jobs": 3}, lambda b, o: b == parcv.LocalBackend(n_jobs=3)),
        "store": ({"store": store}, lambda b, o: o["store"] == store),
        "resume": ({"store": store, "resume": True}, lambda b, o: o["resume"] is True),
        "overwrite": ({"overwrite": True}, lambda b, o: o["overwrite"] is True),
        "retry_failed": ({"retry_failed": True}, lambda b, o: o["retry_failed"] is True),
        "progress": ({"progress": False}, lambda b, o: o["progress"] is False),
        "verbose": ({"verbose": 3}, lambda b, o: o["verbose"] == 3),
        "journal": ({"journal": "delete"}, lambda b, o: o["journal"] == "delete"),
        "timeout": ({"timeout": 7}, lambda b, o: b.timeout == 7),
        "save_models": ({"store": store, "save_models": True},
                        lambda b, o: o["save_models"] is True),
    }  # fmt: skip


def _as_dict(options):
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.init}


class _Reached(Exception):
    """Raised by the engine's stand-in: the options got there, nothing runs."""


def _stop_at_the_engine(monkeypatch):
    seen = []

    def stand_in(plan, data, kind, options):
        seen.append((options.resolved_backend, _as_dict(options)))
        raise _Reached

    monkeypatch.setattr(parcv.api, "execute_plan", stand_in)
    return seen


def test_the_cases_cover_every_run_option(tmp_path):
    names = [f.name for f in dataclasses.fields(parcv.RunOptions) if f.init]
    assert sorted(_run_option_cases(tmp_path)) == sorted(names)


@pytest.mark.parametrize("how", ["keywords", "options"])
@pytest.mark.parametrize(
    ("entry", "option"),
    [(entry, option) for entry in sorted(ENTRY_POINTS) for option in sorted(_run_option_cases(""))
     if option != "save_models" or entry in FINAL_MODEL],
)  # fmt: skip
def test_every_entry_point_takes_every_run_option(
    reg_data, tmp_path, monkeypatch, entry, option, how
):
    X, y = reg_data
    given, reached = _run_option_cases(tmp_path / "s.sqlite")[option]
    seen = _stop_at_the_engine(monkeypatch)
    kwargs = given if how == "keywords" else {"options": parcv.RunOptions(**given)}
    with pytest.raises(_Reached):
        ENTRY_POINTS[entry](X, y, **kwargs)
    backend, options = seen[0]
    assert reached(backend, options), (entry, option, backend, options)
    documented = inspect.getdoc(getattr(parcv, entry))
    assert f"\n{option} : " in documented
    assert option in inspect.signature(getattr(parcv, entry)).parameters


@pytest.mark.parametrize("entry", sorted(set(ENTRY_POINTS) - FINAL_MODEL))
def test_save_models_is_refused_where_no_final_model_is_fitted(reg_data, tmp_path, entry):
    X, y = reg_data
    with pytest.raises(TypeError, match=rf"{entry}\(\) got an unexpected keyword argument "
                       "'save_models': it fits no final model"):  # fmt: skip
        ENTRY_POINTS[entry](X, y, backend="serial", store=tmp_path / "s.sqlite", save_models=True)
    assert "save_models" not in inspect.signature(getattr(parcv, entry)).parameters


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_an_option_given_as_keyword_and_in_options_is_refused(reg_data, entry):
    X, y = reg_data
    with pytest.raises(ValueError, match=rf"{entry}\(\) got options= and the keyword n_jobs=2"):
        ENTRY_POINTS[entry](X, y, options=parcv.RunOptions(backend="serial"), n_jobs=2)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'jornal'\. Did you mean"):
        ENTRY_POINTS[entry](X, y, backend="serial", jornal="delete")


def test_search_extras_run_with_the_search_options(reg_data, tmp_path, monkeypatch):
    X, y = reg_data
    real = parcv.api.execute_plan
    seen = {}

    def spy(plan, data, kind, options):
        seen[kind] = _as_dict(options)
        return real(plan, data, kind, options)

    monkeypatch.setattr(parcv.api, "execute_plan", spy)
    store = tmp_path / "s.sqlite"
    result = parcv.search(
        Ridge(), {"alpha": [0.1, 10.0]}, X[:80], y[:80], cv=3, backend="serial", store=store,
        save_models=True, retry_failed=True, journal="delete", progress=False,
        learning_curve=[0.5, 1.0],
        bias_variance={"X_test": X[80:], "y_test": y[80:], "n_rounds": 3},
    )  # fmt: skip
    assert result.learning_curves is not None and result.bias_variance is not None
    assert sorted(seen) == ["bias_variance", "learning_curve", "search"]
    assert seen["search"]["save_models"] is True
    for kind in ("learning_curve", "bias_variance"):
        options = seen[kind]
        assert options["retry_failed"] is True, kind
        assert (options["journal"], options["progress"]) == ("delete", False)
        assert options["store"] == f"{store}.{kind}.sqlite"
        assert options["save_models"] is False  # a curve has no final model


@pytest.mark.parametrize(
    ("estimator", "scoring", "cv"),
    [
        (Ridge(alpha=0.5), None, 4),
        (Ridge(alpha=0.5), "neg_mean_absolute_error", ms.KFold(3, shuffle=True, random_state=0)),
        (LogisticRegression(), "balanced_accuracy", 5),  # an int is stratified for classifiers
    ],
)
def test_cross_val_score_equals_scikit_learns_on_every_backend(estimator, scoring, cv, backend):
    X, y = make_classification(n_samples=90, n_features=5, random_state=0)
    target = y if isinstance(estimator, LogisticRegression) else X[:, 0] + y
    expected = ms.cross_val_score(estimator, X, target, scoring=scoring, cv=cv)
    got = parcv.cross_val_score(estimator, X, target, scoring=scoring, cv=cv, backend=backend)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_cross_val_score_takes_one_metric_as_scikit_learn():
    X, y = make_classification(n_samples=40, random_state=0)
    with pytest.raises(ValueError):
        ms.cross_val_score(LogisticRegression(), X, y, scoring=["accuracy", "f1"])
    with pytest.raises(ValueError, match=r"one metric.*parcv\.cross_validate"):
        parcv.cross_val_score(LogisticRegression(), X, y, scoring=["accuracy", "f1"],
                              backend=_NeverRuns())  # fmt: skip
