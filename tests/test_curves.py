"""Learning curves, validation curves, permutation tests and bias-variance on the graph.

Each is compared with its independent reference -- scikit-learn's
``learning_curve``, ``validation_curve`` and ``permutation_test_score``, and
mlxtend's ``bias_variance_decomp`` -- given the same folds and seeds, with ``==``
on every backend.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from mlxtend.evaluate import bias_variance_decomp
from sklearn import model_selection as ms
from sklearn.exceptions import FitFailedWarning as SklearnFitFailedWarning
from sklearn.linear_model import LogisticRegression, Ridge, SGDClassifier, SGDRegressor
from sklearn.model_selection import GroupKFold, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import parcv
from parcv.errors import FitFailedError
from parcv.store.readers import read_counts, read_meta


def _equal(expected, got):
    assert len(expected) == len(got)
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_learning_curve_equals_scikit_learn(reg_data, backend):
    X, y = reg_data
    cv = KFold(4, shuffle=True, random_state=1)
    sizes = [0.1, 0.325, 0.55, 0.775, 1.0]
    expected = ms.learning_curve(Ridge(), X, y, cv=cv, train_sizes=sizes, shuffle=True,
                                 random_state=3, scoring="neg_mean_squared_error")  # fmt: skip
    got = parcv.learning_curve(Ridge(), X, y, cv=cv, train_sizes=sizes, shuffle=True,
                               random_state=3, scoring="neg_mean_squared_error",
                               backend=backend)  # fmt: skip
    _equal(expected, tuple(got))
    assert got.fit_times.shape == got.test_scores.shape == (5, 4)


def test_learning_curve_classifier_counts_and_times(clf_data):
    X, y = clf_data
    model = make_pipeline(StandardScaler(), LogisticRegression())
    expected = ms.learning_curve(model, X, y, cv=3, train_sizes=[20, 50, 99], return_times=True)
    got = parcv.learning_curve(model, X, y, cv=3, train_sizes=[20, 50, 99], return_times=True,
                               backend="serial")  # fmt: skip
    _equal(expected[:3], tuple(got)[:3])
    fit_times, score_times = tuple(got)[3:]
    assert fit_times.shape == expected[3].shape and (fit_times > 0).all()
    assert (score_times > 0).all()


def test_validation_curve_equals_scikit_learn(clf_data, backend):
    X, y = clf_data
    values = np.logspace(-3, 2, 4)
    expected = ms.validation_curve(LogisticRegression(), X, y, param_name="C",
                                   param_range=values, cv=4)  # fmt: skip
    got = parcv.validation_curve(LogisticRegression(), X, y, param_name="C", param_range=values,
                                 cv=4, backend=backend)  # fmt: skip
    _equal(expected, tuple(got))
    assert got.param_range == values.tolist()


@pytest.mark.parametrize("grouped", [False, True])
def test_permutation_test_equals_scikit_learn(clf_data, backend, grouped):
    X, y = clf_data
    groups = np.arange(len(y)) % 5 if grouped else None
    cv = GroupKFold(3) if grouped else 3  # stratified folds of each permuted target
    expected = ms.permutation_test_score(LogisticRegression(), X, y, groups=groups, cv=cv,
                                         n_permutations=6, random_state=7)  # fmt: skip
    got = parcv.permutation_test_score(LogisticRegression(), X, y, groups=groups, cv=cv,
                                       n_permutations=6, random_state=7,
                                       backend=backend)  # fmt: skip
    assert got.score == expected[0]
    np.testing.assert_array_equal(got.permutation_scores, expected[1])
    assert got.pvalue == expected[2]
    assert tuple(got)[2] == expected[2]


def test_permutation_test_takes_an_iterator_of_splits_once(reg_data):
    X, y = reg_data
    splits = KFold(3).split(X)  # a one-shot iterator
    expected = ms.permutation_test_score(Ridge(), X, y, cv=KFold(3).split(X), n_permutations=3)
    got = parcv.permutation_test_score(Ridge(), X, y, cv=splits, n_permutations=3,
                                       backend="serial")  # fmt: skip
    assert got.score == expected[0] and got.pvalue == expected[2]
    np.testing.assert_array_equal(got.permutation_scores, expected[1])


def test_permutation_of_a_real_signal_has_a_small_p_value(clf_data):
    X, y = clf_data
    result = parcv.permutation_test_score(LogisticRegression(), X, y, cv=3, n_permutations=19,
                                          backend="serial")  # fmt: skip
    assert result.pvalue == pytest.approx(1 / 20)
    noise = np.random.default_rng(0).normal(size=X.shape)
    chance = parcv.permutation_test_score(LogisticRegression(), noise, y, cv=3,
                                          n_permutations=19, backend="serial")  # fmt: skip
    assert chance.pvalue > result.pvalue


@pytest.mark.parametrize("loss", ["mse", "0-1"])
def test_bias_variance_equals_mlxtend(reg_data, clf_data, backend, loss):
    X, y = reg_data if loss == "mse" else clf_data
    model = (
        DecisionTreeRegressor(random_state=0)
        if loss == "mse"
        else DecisionTreeClassifier(max_depth=3, random_state=0)
    )
    split = 80
    parts = (X[:split], y[:split], X[split:], y[split:])
    mlx_loss = "mse" if loss == "mse" else "0-1_loss"
    expected = bias_variance_decomp(model, *parts, loss=mlx_loss, num_rounds=25, random_seed=4)
    got = parcv.bias_variance(model, *parts, loss=loss, n_rounds=25, random_state=4,
                              backend=backend)  # fmt: skip
    assert tuple(got) == tuple(float(v) for v in expected)
    assert got.predictions.shape == (25, len(y) - split)


def test_bias_variance_squared_loss_adds_up(reg_data):
    import json

    X, y = reg_data
    r = parcv.bias_variance(Ridge(alpha=50.0), X[:80], y[:80], X[80:], y[80:], n_rounds=30,
                            backend="serial")  # fmt: skip
    assert json.loads(r.to_json())["avg_var"] == r.avg_var
    assert r.avg_expected_loss == pytest.approx(r.avg_bias + r.avg_var, rel=1e-12)
    assert r.avg_var > 0 and r.avg_bias > 0


def test_curves_are_stored_and_resumed(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "curve.sqlite"
    options = dict(cv=3, train_sizes=[0.5, 1.0], backend="serial", store=store)
    first = parcv.learning_curve(Ridge(), X, y, **options)
    again = parcv.learning_curve(Ridge(), X, y, resume=True, **options)
    _equal(tuple(first), tuple(again))
    np.testing.assert_array_equal(first.fit_times, again.fit_times)  # read back, not refitted
    perm_store = tmp_path / "perm.sqlite"
    perm = dict(cv=3, n_permutations=4, backend="serial", store=perm_store)
    p1 = parcv.permutation_test_score(Ridge(), X, y, **perm)
    p2 = parcv.permutation_test_score(Ridge(), X, y, resume=True, **perm)
    np.testing.assert_array_equal(p1.permutation_scores, p2.permutation_scores)
    boot_store = tmp_path / "boot.sqlite"
    boot = dict(n_rounds=5, backend="serial", store=boot_store)
    b1 = parcv.bias_variance(Ridge(), X[:80], y[:80], X[80:], y[80:], **boot)
    b2 = parcv.bias_variance(Ridge(), X[:80], y[:80], X[80:], y[80:], resume=True, **boot)
    assert tuple(b1) == tuple(b2)
    np.testing.assert_array_equal(b1.predictions, b2.predictions)
    with pytest.raises(parcv.ParcvError, match="resume=True"):
        parcv.load(store)


def test_another_seed_reuses_only_the_same_fits(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "perm.sqlite"
    options = dict(cv=3, n_permutations=3, backend="serial")
    first = parcv.permutation_test_score(Ridge(), X, y, random_state=0, store=store, **options)
    fresh = parcv.permutation_test_score(Ridge(), X, y, random_state=1, **options)
    grown = parcv.permutation_test_score(Ridge(), X, y, random_state=1, store=store,
                                         resume=True, **options)  # fmt: skip
    np.testing.assert_array_equal(grown.permutation_scores, fresh.permutation_scores)
    assert grown.score == first.score
    # 3 CV fits + 9 permuted fits, then only the 9 new permuted fits: the CV fits are reused.
    assert read_counts(store)[0] == 3 + 9 + 9
    assert not np.array_equal(first.permutation_scores, fresh.permutation_scores)


class _NeedsRows(Ridge):
    """Fails on fewer than 30 training rows (the small sizes of a learning curve)."""

    def fit(self, X, y, sample_weight=None):
        if len(y) < 30:
            raise ValueError("too few rows")
        return super().fit(X, y, sample_weight)


def test_learning_curve_fit_failures_cost_their_units_as_in_scikit_learn(reg_data):
    X, y = reg_data
    sizes = [0.2, 0.5, 1.0]
    with pytest.warns(SklearnFitFailedWarning):
        expected = ms.learning_curve(_NeedsRows(), X, y, cv=3, train_sizes=sizes)
    with pytest.warns(parcv.FitFailedWarning, match="3 of 9 fits failed"):
        got = parcv.learning_curve(_NeedsRows(), X, y, cv=3, train_sizes=sizes, backend="serial")
    _equal(expected, tuple(got))
    assert np.isnan(got.test_scores[0]).all() and not np.isnan(got.test_scores[1:]).any()


class _NeedsSignal(Ridge):
    """Fails when its first feature does not follow the targets (permuted targets)."""

    def fit(self, X, y, sample_weight=None):
        if abs(np.corrcoef(X[:, 0], y)[0, 1]) < 0.4:
            raise ValueError("no signal")
        return super().fit(X, y, sample_weight)


def test_permutation_and_bootstrap_failures_say_where(reg_data):
    # The estimator's own error, as scikit-learn's permutation_test_score raises it; where
    # it failed is parcv's note on it.
    X, y = reg_data
    with pytest.raises(ValueError, match="no signal") as info:
        parcv.permutation_test_score(_NeedsSignal(), X, y, cv=2, n_permutations=2,
                                     backend="serial")  # fmt: skip
    assert "fold 0 of permutation 0 of the targets" in "".join(info.value.__notes__)
    with pytest.raises(ValueError, match="too few rows") as info:
        parcv.bias_variance(_NeedsRows(), X[:20], y[:20], X[20:], y[20:], n_rounds=2,
                            backend="serial")  # fmt: skip
    assert "bootstrap round 0" in "".join(info.value.__notes__)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda X, y: parcv.learning_curve(Ridge(), X, y, train_sizes=[0.0, 1.0]), r"\(0, 1\]"),
        (lambda X, y: parcv.learning_curve(Ridge(), X, y, train_sizes=[5, 1000]), r"\[1, 96\]"),
        (
            lambda X, y: parcv.learning_curve(Ridge(), X, y, shuffle=True, random_state=-1),
            "random_state",
        ),
        (
            lambda X, y: parcv.learning_curve(Ridge(), X, y, scoring=["r2", "max_error"]),
            "one metric",
        ),
        (
            lambda X, y: parcv.validation_curve(Ridge(), X, y, param_name=3, param_range=[1]),
            "param_name",
        ),
        (
            lambda X, y: parcv.validation_curve(Ridge(), X, y, param_name="alpha", param_range=[]),
            "param_range",
        ),
        (
            lambda X, y: parcv.validation_curve(
                Ridge(), X, y, param_name="alpah", param_range=[1.0]
            ),
            "alpah",
        ),
        (
            lambda X, y: parcv.permutation_test_score(Ridge(), X, y, n_permutations=0),
            "n_permutations",
        ),
        (
            lambda X, y: parcv.permutation_test_score(Ridge(), X, y, random_state=None),
            "random_state",
        ),
        (lambda X, y: parcv.bias_variance(Ridge(), X, y, X, y, loss="log"), "loss"),
        (lambda X, y: parcv.bias_variance(Ridge(), X, y, X, y, loss="0-1"), "non-negative ints"),
        (lambda X, y: parcv.bias_variance(Ridge(), X, y, X[:5], y, n_rounds=3), "X_test"),
        (lambda X, y: parcv.bias_variance(Ridge(), X, y, X, y, n_rounds=1.5), "n_rounds"),
    ],
)
def test_bad_input_is_refused_before_any_fit(reg_data, call, match):
    X, y = reg_data
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing ran: no fit warning either
        with pytest.raises((TypeError, ValueError), match=match):
            call(X, y)


def test_repeated_sizes_warn_as_scikit_learn(reg_data):
    X, y = reg_data
    with pytest.warns(RuntimeWarning, match="Removed duplicate entries from 'train_sizes'"):
        got = parcv.learning_curve(Ridge(), X, y, cv=3, train_sizes=[0.5, 0.5, 1.0],
                                   backend="serial")  # fmt: skip
    assert got.train_sizes_abs.tolist() == [40, 80]


def test_permutation_failures_stop_the_run(clf_data):
    X, y = clf_data
    with pytest.raises((FitFailedError, ValueError)):
        parcv.permutation_test_score(LogisticRegression(solver="bogus"), X, y, cv=3,
                                     n_permutations=2, backend="serial")  # fmt: skip


def test_search_learning_curves_equal_scikit_learn(reg_data):
    X, y = reg_data
    space = {"max_depth": [1, 3, 6]}
    sizes = [0.1, 0.325, 0.55, 0.775, 1.0]
    options = dict(cv=4, scoring="neg_mean_squared_error", backend="serial", learning_curve=sizes)
    best = parcv.search(DecisionTreeRegressor(random_state=0), space, X, y, **options)
    assert list(best.learning_curves) == [best.best_index_]
    every = parcv.search(DecisionTreeRegressor(random_state=0), space, X, y,
                         learning_curve_for="all", **options)  # fmt: skip
    assert sorted(every.learning_curves) == [0, 1, 2]
    for c, depth in enumerate(space["max_depth"]):
        model = DecisionTreeRegressor(random_state=0, max_depth=depth)
        expected = ms.learning_curve(model, X, y, cv=4, train_sizes=sizes,
                                     scoring="neg_mean_squared_error")  # fmt: skip
        _equal(expected, tuple(every.learning_curves[c]))
    _equal(tuple(every.learning_curves[best.best_index_]),
           tuple(best.learning_curves[best.best_index_]))  # fmt: skip


def test_search_bias_variance_equals_mlxtend_per_candidate(reg_data, tmp_path):
    X, y = reg_data
    space = {"max_depth": [1, 4]}
    hold_out = (X[80:], y[80:])
    options = dict(cv=3, backend="serial", store=tmp_path / "s.sqlite")
    result = parcv.search(DecisionTreeRegressor(random_state=0), space, X[:80], y[:80],
                          bias_variance={"X_test": X[80:], "y_test": y[80:], "n_rounds": 15,
                                         "random_state": 2}, **options)  # fmt: skip
    for c, depth in enumerate(space["max_depth"]):
        model = DecisionTreeRegressor(random_state=0, max_depth=depth)
        expected = bias_variance_decomp(model, X[:80], y[:80], *hold_out, loss="mse",
                                        num_rounds=15, random_seed=2)  # fmt: skip
        assert tuple(result.bias_variance.results[c]) == tuple(float(v) for v in expected)
    np.testing.assert_array_equal(
        result.bias_variance.avg_var, [r.avg_var for r in result.bias_variance.results]
    )
    again = parcv.search(DecisionTreeRegressor(random_state=0), space, X[:80], y[:80],
                         bias_variance={"X_test": X[80:], "y_test": y[80:], "n_rounds": 15,
                                        "random_state": 2}, resume=True, **options)  # fmt: skip
    np.testing.assert_array_equal(
        again.bias_variance.results[1].predictions, result.bias_variance.results[1].predictions
    )
    assert (tmp_path / "s.sqlite.bias_variance.sqlite").is_file()


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"learning_curve": [0.1, 1.0], "learning_curve_for": "winner"}, ValueError,
         "learning_curve_for"),
        ({"learning_curve": [0.0, 1.0]}, ValueError, "train_sizes"),
        ({"bias_variance": True}, TypeError, "hold-out test set"),
        ({"bias_variance": {"X_test": 1, "y_test": 2, "rounds": 3}}, ValueError, "rounds"),
    ],
)  # fmt: skip
def test_search_extras_are_checked_before_the_search(reg_data, options, error, match):
    X, y = reg_data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error, match=match):
            parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, **options)


def test_search_extras_are_equal_on_every_backend(reg_data, backend):
    X, y = reg_data
    options = dict(cv=3, learning_curve=[0.5, 1.0], learning_curve_for="all",
                   bias_variance={"X_test": X[80:], "y_test": y[80:], "n_rounds": 6})  # fmt: skip
    model, space = DecisionTreeRegressor(random_state=0), {"max_depth": [2, 5]}
    serial = parcv.search(model, space, X[:80], y[:80], backend="serial", **options)
    got = parcv.search(model, space, X[:80], y[:80], backend=backend, **options)
    for c in (0, 1):
        _equal(tuple(serial.learning_curves[c]), tuple(got.learning_curves[c]))
        assert tuple(serial.bias_variance.results[c]) == tuple(got.bias_variance.results[c])


def test_search_report_plots_the_curves_and_the_tradeoff(reg_data):
    pytest.importorskip("matplotlib")
    from parcv.report.plots import bias_variance_tradeoff, learning_curves, render_plots

    X, y = reg_data
    result = parcv.search(DecisionTreeRegressor(random_state=0), {"max_depth": [1, 2, 4]},
                          X[:80], y[:80], cv=3, scoring="neg_mean_squared_error",
                          backend="serial", learning_curve=[0.5, 1.0],
                          bias_variance=(X[80:], y[80:]))  # fmt: skip
    assert {"learning_curve.png", "bias_variance.png"} <= set(render_plots(result))
    curve = result.learning_curves[result.best_index_]
    test_line = learning_curves(result).axes[0].lines[0]
    np.testing.assert_allclose(test_line.get_xdata(), curve.train_sizes_abs)
    # neg_* scores are plotted as scikit-learn scores them, as the report's text shows them.
    np.testing.assert_allclose(test_line.get_ydata(), curve.test_scores.mean(axis=1))
    lines = bias_variance_tradeoff(result).axes[0].lines
    np.testing.assert_allclose(lines[0].get_xdata(), [1, 2, 4])
    np.testing.assert_allclose(lines[0].get_ydata(), result.bias_variance.avg_expected_loss)
    np.testing.assert_allclose(lines[1].get_ydata(), result.bias_variance.avg_bias)
    np.testing.assert_allclose(lines[2].get_ydata(), result.bias_variance.avg_var)


def test_shuffle_without_seed_draws_one_records_it_and_resumes_with_it(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "curve.sqlite"
    options = dict(cv=3, train_sizes=[0.3, 1.0], shuffle=True, backend="serial")
    first = parcv.learning_curve(Ridge(), X, y, store=store, **options)
    seed = first.random_state_
    assert isinstance(seed, int) and 0 <= seed < 2**32
    expected = ms.learning_curve(Ridge(), X, y, cv=3, train_sizes=[0.3, 1.0], shuffle=True,
                                 random_state=seed)  # fmt: skip
    _equal(expected, tuple(first))
    # The resume reuses the recorded seed: the same rows, every fit read back from the store.
    again = parcv.learning_curve(Ridge(), X, y, store=store, resume=True, **options)
    assert again.random_state_ == seed
    np.testing.assert_array_equal(again.fit_times, first.fit_times)
    assert read_counts(store)[0] == 6
    other = parcv.learning_curve(Ridge(), X, y, **options)  # no store to resume: a new draw
    assert other.random_state_ != seed
    given = parcv.learning_curve(Ridge(), X, y, random_state=5, **options)
    assert given.random_state_ == 5
    assert parcv.learning_curve(Ridge(), X, y, cv=3, backend="serial").random_state_ is None


@pytest.mark.parametrize("classifier", [True, False])
def test_incremental_learning_curve_equals_scikit_learn(clf_data, reg_data, backend, classifier):
    X, y = clf_data if classifier else reg_data
    model = (SGDClassifier if classifier else SGDRegressor)(max_iter=1, tol=None, shuffle=False,
                                                            random_state=0)  # fmt: skip
    options = dict(cv=KFold(3, shuffle=True, random_state=0), train_sizes=[0.1, 0.4, 1.0],
                   shuffle=True, random_state=2, return_times=True)  # fmt: skip
    expected = ms.learning_curve(model, X, y, exploit_incremental_learning=True, **options)
    got = parcv.learning_curve(model, X, y, exploit_incremental_learning=True, backend=backend,
                               **options)  # fmt: skip
    _equal(expected[:3], tuple(got)[:3])
    assert got.fit_times.shape == got.score_times.shape == expected[3].shape == (3, 3)


def test_incremental_learning_curve_is_stored_apart_and_resumed(clf_data, tmp_path):
    X, y = clf_data
    store = tmp_path / "curve.sqlite"
    model = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    options = dict(cv=3, train_sizes=[0.5, 1.0], backend="serial", store=store)
    first = parcv.learning_curve(model, X, y, exploit_incremental_learning=True, **options)
    assert read_counts(store)[0] == 3  # one unit per fold
    again = parcv.learning_curve(model, X, y, exploit_incremental_learning=True, resume=True,
                                 **options)  # fmt: skip
    _equal(tuple(first), tuple(again))
    np.testing.assert_array_equal(first.fit_times, again.fit_times)  # read back, not refitted
    parcv.learning_curve(model, X, y, resume=True, **options)
    assert read_counts(store)[0] == 3 + 6  # the batch curve's fits are other records


def test_incremental_learning_needs_partial_fit(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match="must support the partial_fit interface"):
        parcv.learning_curve(Ridge(), X, y, exploit_incremental_learning=True, backend="serial")
    with pytest.raises(TypeError, match="exploit_incremental_learning must be True or False"):
        parcv.learning_curve(Ridge(), X, y, exploit_incremental_learning=1, backend="serial")


def test_verbose_turns_on_progress_and_an_explicit_progress_wins(reg_data, capsys):
    X, y = reg_data
    parcv.learning_curve(Ridge(), X, y, cv=3, train_sizes=[0.5, 1.0], verbose=1,
                         backend="serial")  # fmt: skip
    shown = capsys.readouterr()
    assert "6/6" in shown.err
    # scikit-learn's line, on stdout as it prints it (logged on parcv.verbose).
    assert "[learning_curve] Training set sizes: [40 80]" in shown.out
    parcv.learning_curve(Ridge(), X, y, cv=3, train_sizes=[0.5, 1.0], verbose=1,
                         progress=False, backend="serial")  # fmt: skip
    assert "6/6" not in capsys.readouterr().err
    parcv.learning_curve(Ridge(), X, y, cv=3, train_sizes=[0.5, 1.0], backend="serial")
    assert capsys.readouterr().out == ""  # verbose=0: nothing on stdout


def test_a_stopped_run_records_its_drawn_seed_for_the_resume(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "curve.sqlite"
    options = dict(cv=3, train_sizes=[0.3, 1.0], shuffle=True, backend="serial", store=store)
    with pytest.raises(ValueError, match="too few rows"):  # stops at its first unit
        parcv.learning_curve(_NeedsRows(), X, y, error_score="raise", **options)
    seed = json.loads(read_meta(store)["plan"])["random_state"]
    resumed = parcv.learning_curve(Ridge(), X, y, resume=True, **options)
    assert resumed.random_state_ == seed  # the rows the stopped run drew, not new ones
    expected = ms.learning_curve(Ridge(), X, y, cv=3, train_sizes=[0.3, 1.0], shuffle=True,
                                 random_state=seed)  # fmt: skip
    _equal(expected, tuple(resumed))
