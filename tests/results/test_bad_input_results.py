"""Bad input to splits, stores, loading and comparisons: clear errors, nothing lost."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn import model_selection as ms
from sklearn.datasets import make_regression
from sklearn.exceptions import FitFailedWarning as SklearnFitFailedWarning
from sklearn.linear_model import LogisticRegression, Ridge

import parcv
from parcv.cli import main
from parcv.plan.splits import check_scheme, materialize_folds
from parcv.store.readers import read_store
from tests.estimators import FailsOnAlpha


class NeverRuns:
    """A backend that fails the test if any work reaches it."""

    def open(self, plan, data):  # pragma: no cover - reaching it is the failure
        raise AssertionError("compute was dispatched despite bad input")


NO = NeverRuns()
X, Y = make_regression(n_samples=60, n_features=3, random_state=0)
# KFold(3) without shuffle: the last fold trains on rows 0-39, all of class 0.
Y_LAST_FOLD_ONE_CLASS = np.r_[np.zeros(40), np.ones(20)]


def _search(space=None, **options):
    space = {"alpha": [0.1, 1.0]} if space is None else space
    return parcv.search(Ridge(), space, X, Y, cv=3, backend="serial", **options)


# 1. failed fits of cross_validate are reported as scikit-learn reports them


def test_cross_validate_with_every_fit_failing_raises_like_search():
    # (A single-class y, which used to fail every fit, is now refused before any fit.)
    with pytest.raises(ValueError, match="All the 3 fits failed"):
        ms.cross_validate(FailsOnAlpha(alpha=-1.0), X, Y, cv=ms.KFold(3))
    with pytest.raises(parcv.ParcvError) as info:
        parcv.cross_validate(FailsOnAlpha(alpha=-1.0), X, Y, cv=ms.KFold(3), backend="serial")
    message = str(info.value)
    assert "cross_validate failed on every fold: 3 failed fits; nothing was scored" in message
    assert "error_score='raise'" in message
    assert "alpha must be >= 0" in message  # the first failure, with its traceback


def test_cross_validate_with_a_scorer_failing_everywhere_scores_error_score_as_sklearn():
    # The fits succeeded: as scikit-learn, each failed score is error_score, with a warning.
    def needs_proba(estimator, X, y):  # a user's scorer: not checked before the fits
        return estimator.predict_proba(X)[:, 1].mean()

    with pytest.warns(UserWarning, match="Scoring failed"):
        expected = ms.cross_validate(Ridge(), X, Y, cv=ms.KFold(3), scoring=needs_proba)
    with pytest.warns(UserWarning, match=r"(?s)Scoring failed.*AttributeError.*predict_proba"):
        got = parcv.cross_validate(
            Ridge(), X, Y, cv=ms.KFold(3), scoring=needs_proba, backend="serial"
        )
    np.testing.assert_array_equal(got.scores["test_score"], expected["test_score"])


def test_cross_validate_with_some_fits_failing_warns_and_scores_as_sklearn():
    with pytest.warns(SklearnFitFailedWarning, match="1 fits failed out of a total of 3"):
        expected = ms.cross_validate(LogisticRegression(), X, Y_LAST_FOLD_ONE_CLASS, cv=ms.KFold(3))
    with pytest.warns(parcv.FitFailedWarning, match=r"1 of 3 fits failed \(folds 2\)") as caught:
        got = parcv.cross_validate(
            LogisticRegression(), X, Y_LAST_FOLD_ONE_CLASS, cv=ms.KFold(3), backend="serial"
        )
    assert "error_score=nan" in str(caught[0].message)
    assert caught[0].filename == __file__  # points at the caller's line
    np.testing.assert_array_equal(got.scores["test_score"], expected["test_score"])


def test_cross_validate_partial_failure_with_a_numeric_error_score_matches_sklearn():
    with pytest.warns(SklearnFitFailedWarning):
        expected = ms.cross_validate(
            LogisticRegression(), X, Y_LAST_FOLD_ONE_CLASS, cv=ms.KFold(3), error_score=-1.0
        )
    with pytest.warns(parcv.FitFailedWarning, match="error_score=-1.0"):
        got = parcv.cross_validate(
            LogisticRegression(),
            X,
            Y_LAST_FOLD_ONE_CLASS,
            cv=ms.KFold(3),
            error_score=-1.0,
            backend="serial",
        )
    np.testing.assert_array_equal(got.scores["test_score"], expected["test_score"])


def test_cross_validate_warning_is_caught_as_sklearns_category():
    with pytest.warns(SklearnFitFailedWarning):
        parcv.cross_validate(
            LogisticRegression(), X, Y_LAST_FOLD_ONE_CLASS, cv=ms.KFold(3), backend="serial"
        )


def test_cross_validate_error_score_raise_raises_the_estimators_own_error():
    with pytest.raises(ValueError, match="alpha must be >= 0") as expected:
        ms.cross_validate(FailsOnAlpha(alpha=-1.0), X, Y, cv=3, error_score="raise")
    with pytest.raises(ValueError, match="alpha must be >= 0") as info:
        parcv.cross_validate(
            FailsOnAlpha(alpha=-1.0), X, Y, cv=3, error_score="raise", backend="serial"
        )
    assert type(info.value) is type(expected.value)
    assert str(info.value) == str(expected.value)
    assert "error_score='raise'" in "".join(info.value.__notes__)


def test_all_failed_cross_validate_keeps_its_records_in_the_store(tmp_path):
    store = tmp_path / "run.sqlite"
    with pytest.raises(parcv.ParcvError, match="every fold"):
        parcv.cross_validate(
            FailsOnAlpha(alpha=-1.0), X, Y, cv=ms.KFold(3), backend="serial", store=store
        )
    loaded = parcv.load(store)  # loading reports nothing again: it runs no fit
    assert loaded.failures.n_failed == 3
    assert np.isnan(loaded.scores["test_score"]).all()


# 2. explicit splits are bounds-checked before anything runs


def test_split_index_beyond_the_data_names_split_index_and_n_samples():
    cv = [(np.arange(50), np.arange(50, 70))]
    with pytest.raises(ValueError) as info:
        parcv.cross_validate(Ridge(), X, Y, cv=cv, backend=NO)
    message = str(info.value)
    assert "cv (a list of 1 splits): split 0: test index 60 is out of range" in message
    assert "for 60 samples" in message
    assert "array([" not in message  # the splits are described, not dumped


def test_split_index_below_minus_n_samples_is_refused():
    cv = [(np.arange(40), np.array([-61, 50]))]
    with pytest.raises(ValueError, match="test index -61 is out of range for 60 samples"):
        parcv.cross_validate(Ridge(), X, Y, cv=cv, backend=NO)


def test_float_split_indices_are_refused_with_their_dtype():
    cv = [(np.arange(40.0), np.arange(40, 60))]
    with pytest.raises(TypeError, match=r"split 0: the train indices must be integers.*'float64'"):
        parcv.cross_validate(Ridge(), X, Y, cv=cv, backend=NO)


def test_empty_train_set_is_refused():
    cv = [(np.arange(40), np.arange(40, 60)), ([], np.arange(10))]
    with pytest.raises(ValueError, match="split 1 has 0 train and 10 test samples"):
        parcv.cross_validate(Ridge(), X, Y, cv=cv, backend=NO)


def test_boolean_mask_of_the_wrong_length_is_refused():
    mask = np.zeros(50, dtype=bool)
    mask[:30] = True
    with pytest.raises(ValueError, match="train boolean mask has 50 entries for 60 samples"):
        parcv.cross_validate(Ridge(), X, Y, cv=[(mask, np.arange(50, 60))], backend=NO)


def test_two_dimensional_split_indices_are_refused():
    cv = [(np.arange(40).reshape(20, 2), np.arange(40, 60))]
    with pytest.raises(ValueError, match=r"train indices must be a 1-D array; got shape \(20, 2\)"):
        parcv.cross_validate(Ridge(), X, Y, cv=cv, backend=NO)


@pytest.mark.parametrize(
    "cv",
    [
        [(np.arange(60) < 40, np.arange(60) >= 40)],  # boolean masks
        [(np.arange(-60, -20), np.arange(40, 60))],  # negative indices count from the end
        [(list(range(20, 60)), list(range(20)))],  # plain lists
    ],
    ids=["mask", "negative", "lists"],
)
def test_splits_sklearn_accepts_give_sklearns_scores(cv):
    expected = ms.cross_validate(Ridge(), X, Y, cv=cv)["test_score"]
    got = parcv.cross_validate(Ridge(), X, Y, cv=cv, backend="serial").scores["test_score"]
    np.testing.assert_array_equal(got, expected)


@given(data=st.data(), n=st.integers(2, 50))
def test_explicit_splits_become_the_rows_numpy_would_take(data, n):
    index = st.lists(st.integers(-n, n - 1), min_size=1, max_size=2 * n)
    train, test = np.array(data.draw(index)), np.array(data.draw(index))
    y = np.zeros(n)
    (fold,) = materialize_folds(
        check_scheme([(train, test)], y, classifier=False), np.zeros((n, 1)), y, None
    )
    np.testing.assert_array_equal(fold.train, np.arange(n)[train])
    np.testing.assert_array_equal(fold.test, np.arange(n)[test])
    assert fold.train.dtype == np.intp and (fold.train >= 0).all()


# 3. a splitter class or a float number of folds


def test_splitter_class_instead_of_instance():
    with pytest.raises(TypeError) as info:
        parcv.cross_validate(Ridge(), X, Y, cv=ms.KFold, backend=NO)
    assert str(info.value) == (
        "cv must be a splitter instance such as KFold(5); got the class KFold. Pass KFold(5)."
    )


def test_splitter_class_without_n_splits_suggests_its_own_call():
    with pytest.raises(TypeError, match=r"got the class LeaveOneOut\. Pass LeaveOneOut\(\)\."):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=ms.LeaveOneOut, backend=NO)


@pytest.mark.parametrize(
    ("cv", "fix"), [(5.0, "Pass cv=5."), (np.float64(3.0), "Pass cv=3."), (2.5, "e.g. cv=5")]
)
def test_float_cv_gets_parcvs_message(cv, fix):
    with pytest.raises(TypeError) as info:
        parcv.cross_validate(Ridge(), X, Y, cv=cv, backend=NO)
    message = str(info.value)
    assert message.startswith("cv must be an int >= 2")
    assert f"got the float {cv!r}" in message
    assert fix in message


def test_object_that_cannot_split_gets_parcvs_message():
    with pytest.raises(TypeError, match=r"cv must be an int >= 2.*got <object object"):
        parcv.cross_validate(Ridge(), X, Y, cv=object(), backend=NO)


# 4. store paths are checked before anything runs


@pytest.mark.parametrize("entry", ["cross_validate", "search", "nested_cv"])
@pytest.mark.parametrize(
    ("store", "error", "message"),
    [
        ("/proc/run.sqlite", ValueError, r"store='/proc/run.sqlite' cannot be created: the "
                                         r"directory '/proc' is not writable"),
        ("/proc/no/such/run.sqlite", ValueError, r"'/proc' \(above the missing '/proc/no/such'\)"),
        ("", ValueError, r"got the empty path ''"),
        (123, TypeError, r"store must be a file path \(str or pathlib.Path\) or None; got 123"),
    ],
)  # fmt: skip
def test_bad_store_path_is_refused_before_dispatch(entry, store, error, message):
    call = {
        "cross_validate": lambda **kw: parcv.cross_validate(Ridge(), X, Y, **kw),
        "search": lambda **kw: parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, **kw),
        "nested_cv": lambda **kw: parcv.nested_cv(Ridge(), {"alpha": [1.0]}, X, Y, **kw),
    }[entry]
    with pytest.raises(error, match=message):
        call(backend=NO, store=store)


def test_directory_as_store_suggests_a_file_in_it(tmp_path):
    with pytest.raises(ValueError, match="is a directory; store is the SQLite file itself") as info:
        parcv.cross_validate(Ridge(), X, Y, backend=NO, store=tmp_path)
    assert repr(str(tmp_path / "run.sqlite")) in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_store_below_a_file_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    store = tmp_path / "notes.txt" / "run.sqlite"
    with pytest.raises(ValueError, match=r"notes.txt' is a file, not a directory"):
        parcv.cross_validate(Ridge(), X, Y, backend=NO, store=store)


def test_missing_parent_directories_are_still_created(tmp_path):
    store = tmp_path / "a" / "b" / "run.sqlite"
    parcv.cross_validate(Ridge(), X, Y, cv=3, backend="serial", store=store)
    assert store.is_file()


def test_load_refuses_a_non_path_and_points_a_run_directory_to_its_store(tmp_path):
    with pytest.raises(TypeError, match="got 123 of type int"):
        parcv.load(123)
    _search(store=tmp_path / "store.sqlite")
    with pytest.raises(ValueError, match=r"is a directory.*Pass '.*store\.sqlite'"):
        parcv.load(tmp_path)


# 5. NestedResult.compare and SearchResult.compare misuse


@pytest.fixture(scope="module")
def nested_pair():
    run = lambda alphas: parcv.nested_cv(  # noqa: E731
        Ridge(), {"alpha": alphas}, X, Y, outer=3, inner=3, backend="serial"
    )
    return run([0.1, 1.0]), run([10.0, 100.0])


def test_compare_procedure_with_a_search_result(nested_pair):
    with pytest.raises(TypeError, match=r"other must be a NestedResult.*got a SearchResult"):
        nested_pair[0].compare(_search())


def test_compare_procedures_with_an_unknown_metric(nested_pair):
    with pytest.raises(ValueError, match=r"metrics of both results \['score'\].*metric='r3'"):
        nested_pair[0].compare(nested_pair[1], metric="r3")


@pytest.mark.parametrize(
    ("names", "error", "message"),
    [(("A",), ValueError, r"1 name\(s\): names=\('A',\)"), ("AB", TypeError, "names='AB'")],
)
def test_compare_procedures_with_bad_names(nested_pair, names, error, message):
    with pytest.raises(error, match=message):
        nested_pair[0].compare(nested_pair[1], names=names)


@pytest.mark.parametrize("method", ["compare", "compare_all", "best_vs_rest"])
def test_single_metric_search_refuses_an_unknown_metric(method):
    result = _search()
    args = (0, 1) if method == "compare" else ()
    with pytest.raises(ValueError, match=r"\['score'\].*got metric='r3'"):
        getattr(result, method)(*args, metric="r3")
    assert result.compare(0, 1, metric="score").p_value == result.compare(0, 1).p_value


# 6. load_models=True without saved models


def test_load_models_without_saved_models_says_how_to_get_one(tmp_path):
    store = tmp_path / "run.sqlite"
    _search(store=store)
    with pytest.raises(ValueError, match=r"keeps no fitted final model.*resume=True"):
        parcv.load(store, load_models=True)
    _search(store=store, resume=True, save_models=True)  # the advice works: only the refit runs
    assert parcv.load(store, load_models=True).best_estimator_ is not None


def test_load_models_of_a_run_without_a_final_model(tmp_path):
    store = tmp_path / "run.sqlite"
    parcv.cross_validate(Ridge(), X, Y, cv=3, backend="serial", store=store)
    with pytest.raises(ValueError, match="cross_validate fits no final model"):
        parcv.load(store, load_models=True)


# 7. a store of another plan: what differs and the ways out


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"return_train_score": True}, "return_train_score (stored False, now True)"),
        ({"refit": False}, "refit (stored True, now False)"),
        ({"space": {"alpha": [0.1, 2.0]}}, "space (stored"),
    ],
)
def test_plan_mismatch_says_what_differs_and_how_to_proceed(tmp_path, change, shown):
    store = tmp_path / "run.sqlite"
    _search(store=store)
    before = read_store(store)
    with pytest.raises(parcv.PlanMismatchError) as info:
        _search(store=store, **change)
    message = str(info.value)
    assert shown in message
    assert "Nothing was changed" in message
    assert "another --out" in message and "overwrite=True (--overwrite)" in message
    # Resuming reuses the units the edited sweep shares with the stored one.
    assert "resume=True (--resume) to reuse the stored units" in message
    assert len(read_store(store)[1]) == len(before[1])


def test_corrupt_store_message_suggests_no_run_flags(tmp_path):
    store = tmp_path / "run.sqlite"
    store.write_text("not a database")
    with pytest.raises(parcv.PlanMismatchError) as info:
        parcv.load(store)
    assert "is not a parcv store" in str(info.value)
    assert "--resume" not in str(info.value) and "--overwrite" not in str(info.value)
    assert store.read_text() == "not a database"


def test_report_of_a_corrupt_store_suggests_no_run_flags(tmp_path, capsys):
    (tmp_path / "store.sqlite").write_text("not a database")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is not a parcv store" in err
    assert "--resume" not in err


def test_plan_mismatch_of_an_old_store_without_description(tmp_path):
    store = tmp_path / "run.sqlite"
    _search(store=store)
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM meta WHERE name = 'plan'")
    conn.close()
    with pytest.raises(parcv.PlanMismatchError, match="different plan"):
        _search(store=store, return_train_score=True)


def test_scores_all_nan_without_failed_fits_select_the_first_as_sklearn_and_say_why():
    # scikit-learn's GridSearchCV selects candidate 0 when every mean is NaN; parcv too,
    # and says that the scorer returned NaN.
    def nan_scorer(estimator, X, y):
        return float("nan")

    space = {"alpha": [1.0, 2.0]}
    with pytest.warns(UserWarning, match="non-finite"):
        expected = ms.GridSearchCV(Ridge(), space, cv=3, scoring=nan_scorer).fit(X, Y)
    with pytest.warns(UserWarning, match=r"mean score .* is NaN.*scorer returned NaN"):
        got = parcv.search(Ridge(), space, X, Y, cv=3, scoring=nan_scorer, backend="serial")
    assert got.best_index_ == expected.best_index_ == 0
