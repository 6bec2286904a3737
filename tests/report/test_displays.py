"""Issue 49, item 5: scikit-learn style displays of the report's plots, from Python.

Each display draws into the Axes it is given (``figure_`` is that Axes' figure), draws the
result's numbers (read back from the Axes and checked against scikit-learn or against
the result's own per-fold scores), and draws what the report's PNG of it draws.
"""

from __future__ import annotations

from collections import Counter

import matplotlib

matplotlib.use("Agg")  # no window: the tests read the Axes back

import matplotlib.pyplot as plt
import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_score

import parcv
from parcv.report import (
    FoldScoresDisplay,
    HalvingRungsDisplay,
    PairedDifferencesDisplay,
    ParamImportanceDisplay,
    SamplerTrialsDisplay,
    SelectionFrequencyDisplay,
    ValidationCurveDisplay,
    plots,
)

X, Y = make_regression(n_samples=45, n_features=3, noise=10.0, random_state=0)
ALPHAS = [0.01, 1.0, 100.0, 1e4]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def search():
    return parcv.search(Ridge(), {"alpha": ALPHAS}, X, Y, cv=3, return_train_score=True,
                        backend="serial")  # fmt: skip


@pytest.fixture(scope="module")
def nested():
    return parcv.nested_cv(Ridge(), {"alpha": [0.1, 1e4]}, X, Y, outer=3, inner=3,
                           backend="serial")  # fmt: skip


def _sklearn_means(alphas, cv=3):
    return [cross_val_score(Ridge(alpha=a), X, Y, cv=KFold(cv)).mean() for a in alphas]


def _drawn(axes):
    """What a set of Axes shows: every line's data, bar sizes, texts, scales and limits."""
    out = []
    for ax in axes:
        legend = ax.get_legend()
        out.append((
            [(ln.get_marker(), np.asarray(ln.get_xdata()).tolist(),
              np.asarray(ln.get_ydata()).tolist()) for ln in ax.lines],
            [(round(p.get_width(), 12), round(p.get_height(), 12)) for p in ax.patches],
            ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(),
            [t.get_text() for t in ax.get_xticklabels()],
            [t.get_text() for t in legend.get_texts()] if legend else [],
        ))  # fmt: skip
    return out


def _same_as_report(display, figure):
    """The display draws what the report's figure of it draws, suptitle included."""
    report_axes = [a for a in figure.axes if a.get_label() != "<colorbar>"]
    assert _drawn(display.axes_) == _drawn(report_axes)
    assert display.figure_.get_suptitle() == figure.get_suptitle()


def test_validation_curve_draws_the_cv_means_into_the_given_axes(search):
    fig, ax = plt.subplots()
    display = ValidationCurveDisplay.from_result(search, ax=ax)
    assert display.ax_ is ax and display.figure_ is fig and list(display.axes_) == [ax]
    test, train = (c for c in ax.containers if c.get_label().startswith(("validation", "train")))
    x, y = test.lines[0].get_data()
    assert x.tolist() == ALPHAS
    np.testing.assert_allclose(y, _sklearn_means(ALPHAS), rtol=1e-12)
    # ± se: the sample std of the fold scores over sqrt(folds), from the per-fold scores.
    folds = np.array([search.cv_results_[f"split{k}_test_score"] for k in range(3)])
    se = folds.std(axis=0, ddof=1) / np.sqrt(3)
    bars = test.lines[2][0].get_segments()
    np.testing.assert_allclose([b[1, 1] - b[0, 1] for b in bars], 2 * se, rtol=1e-9)
    np.testing.assert_allclose(train.lines[0].get_ydata(), search.cv_results_["mean_train_score"])
    star = next(ln for ln in ax.lines if ln.get_marker() == "*")
    best = int(np.argmax(_sklearn_means(ALPHAS)))
    assert star.get_xdata().tolist() == [ALPHAS[best]]


def test_validation_curve_without_ax_is_a_new_figure_of_the_reports_size(search):
    display = ValidationCurveDisplay.from_result(search)
    assert tuple(display.figure_.get_size_inches()) == (7.2, 4.8)
    assert display.ax_.figure is display.figure_
    _same_as_report(display, plots.validation_curve(search))


def test_a_nested_runs_validation_curve_is_its_search_on_all_datas(nested):
    display = ValidationCurveDisplay.from_result(nested)
    y = display.ax_.containers[0].lines[0].get_ydata()
    np.testing.assert_allclose(y, _sklearn_means([0.1, 1e4]), rtol=1e-12)


def test_validation_curve_of_a_one_candidate_search_says_why_there_is_none():
    one = parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=3, backend="serial")
    with pytest.raises(ValueError, match="no validation curve to draw: no parameter"):
        ValidationCurveDisplay.from_result(one)


def test_paired_differences_split_one_given_axes_or_take_two(search):
    fig, ax = plt.subplots()
    display = PairedDifferencesDisplay.from_result(search, ax=ax)
    assert display.figure_ is fig and display.bounding_ax_ is ax and not ax.axison
    left, right = display.axes_
    assert left.figure is fig and right.figure is fig
    # The best and the runner-up by mean, their fold scores and the differences.
    means = np.array(_sklearn_means(ALPHAS))
    best, runner = np.argsort(-means)[:2]
    folds = np.array([search.cv_results_[f"split{k}_test_score"] for k in range(3)]).T
    np.testing.assert_allclose(left.lines[0].get_ydata(), folds[best])
    np.testing.assert_allclose(left.lines[1].get_ydata(), folds[runner])
    heights = [p.get_height() for p in right.patches]
    np.testing.assert_allclose(heights, folds[best] - folds[runner])

    _, two = plt.subplots(1, 2)
    display = PairedDifferencesDisplay.from_result(search, ax=two)
    assert list(display.axes_) == list(two) and display.bounding_ax_ is None
    _same_as_report(display, plots.paired_differences(search))
    with pytest.raises(ValueError, match="ax must be None, one matplotlib Axes or 2 of them"):
        PairedDifferencesDisplay.from_result(search, ax=[two[0]])


def test_selection_frequency_counts_the_outer_folds_choices(nested):
    fig, ax = plt.subplots()
    display = SelectionFrequencyDisplay.from_result(nested, ax=ax)
    assert display.ax_ is ax and display.figure_ is fig
    counts = Counter(nested.chosen)
    assert sorted(p.get_width() for p in ax.patches) == sorted(counts.values())
    assert sum(display.counts.values()) == 3
    _same_as_report(display, plots.selection_frequency(nested))
    with pytest.raises(TypeError, match=r"needs the result of parcv\.nested_cv"):
        SelectionFrequencyDisplay.from_result(nested.final)


def test_fold_scores_are_scikit_learns_fold_scores(nested):
    cv = parcv.cross_validate(Ridge(), X, Y, cv=3, backend="serial")
    fig, ax = plt.subplots()
    display = FoldScoresDisplay.from_result(cv, ax=ax)
    assert display.ax_ is ax and display.figure_ is fig
    points = next(ln for ln in ax.lines if ln.get_marker() == "o")
    reference = cross_val_score(Ridge(), X, Y, cv=KFold(3))
    np.testing.assert_allclose(points.get_ydata(), reference, rtol=1e-12)
    mean = next(ln for ln in ax.lines if ln.get_linestyle() == "--")
    np.testing.assert_allclose(mean.get_ydata(), reference.mean(), rtol=1e-12)
    _same_as_report(display, plots.fold_scores(cv))
    outer = FoldScoresDisplay.from_result(nested)
    drawn = np.concatenate([ln.get_ydata() for ln in outer.ax_.lines if ln.get_marker() != "None"])
    np.testing.assert_allclose(np.sort(drawn), np.sort(nested.outer_scores["score"]))
    with pytest.raises(TypeError, match=r"needs the result of parcv\.cross_validate"):
        FoldScoresDisplay.from_result(nested.final)


def test_halving_rungs_draw_each_rungs_means_and_star_the_winner():
    halving = parcv.Halving(min_resources=15, random_state=0)
    r = parcv.search(Ridge(), {"alpha": ALPHAS}, X, Y, cv=3, halving=halving, backend="serial")
    fig, ax = plt.subplots()
    display = HalvingRungsDisplay.from_result(r, ax=ax)
    assert display.ax_ is ax and display.figure_ is fig
    last = len(r.rungs) - 1
    finals = np.asarray(r.rungs[-1].cv_results_["mean_test_score"])
    points = [zip(ln.get_xdata(), ln.get_ydata(), strict=True)
              for ln in ax.lines if ln.get_marker() == "o"]  # fmt: skip
    at_last = [y for line in points for x, y in line if x == last]
    np.testing.assert_allclose(sorted(at_last), sorted(finals))
    star = next(ln for ln in ax.lines if ln.get_marker() == "*")
    assert star.get_xdata().tolist() == [last]
    np.testing.assert_allclose(star.get_ydata(), [finals[r.rungs[-1].best_index_]])
    _same_as_report(display, plots.halving_rungs(r))
    with pytest.raises(TypeError, match="needs a successive halving or Hyperband search"):
        HalvingRungsDisplay.from_result(parcv.search(Ridge(), {"alpha": ALPHAS}, X, Y, cv=3,
                                                     backend="serial"))  # fmt: skip


def test_hyperband_has_a_panel_per_bracket():
    from scipy.stats import loguniform
    from sklearn.linear_model import SGDRegressor

    space = parcv.RandomSpace({"alpha": loguniform(1e-4, 1.0)}, n_iter=4, random_state=0)
    hyperband = parcv.Hyperband("max_iter", max_resources=9)
    r = parcv.search(SGDRegressor(random_state=0, tol=None), space, X, Y, cv=2,
                     halving=hyperband, backend="serial")  # fmt: skip
    display = HalvingRungsDisplay.from_result(r)
    assert len(display.axes_) == len(r.brackets) > 1
    _same_as_report(display, plots.halving_rungs(r))


@pytest.fixture(scope="module")
def sampled():
    pytest.importorskip("optuna")
    from scipy.stats import loguniform

    space = {"alpha": loguniform(1e-3, 1e4)}
    return parcv.search(Ridge(), space, X, Y, cv=3, backend="serial",
                        strategy=parcv.Sampler("tpe", n_trials=6, seed=0))  # fmt: skip


def test_sampler_trials_draw_each_trials_mean_and_the_best_so_far(sampled):
    fig, ax = plt.subplots()
    display = SamplerTrialsDisplay.from_result(sampled, ax=ax)
    assert display.ax_ is ax and display.figure_ is fig
    means = np.asarray(sampled.cv_results_["mean_test_score"])
    alphas = [p["alpha"] for p in sampled.cv_results_["params"]]
    np.testing.assert_allclose(means, _sklearn_means(alphas), rtol=1e-12)
    best, trials = ax.lines[0], ax.lines[1]
    np.testing.assert_allclose(trials.get_ydata(), means)
    np.testing.assert_allclose(best.get_ydata(), np.maximum.accumulate(means))
    report = plots.figures(sampled)["sampler_trials.png"]
    _same_as_report(display, report)


def test_param_importance_of_a_sampler_search(sampled):
    fig, ax = plt.subplots()
    display = ParamImportanceDisplay.from_result(sampled, ax=ax)
    assert display.ax_ is ax and display.figure_ is fig
    assert display.importances == {"alpha": 1.0}  # the one parameter explains it all
    assert [p.get_width() for p in ax.patches] == [1.0]
    _same_as_report(display, plots.figures(sampled)["param_importance.png"])
    with pytest.raises(TypeError, match="needs a search run by a sampler"):
        SamplerTrialsDisplay.from_result(parcv.search(Ridge(), {"alpha": ALPHAS}, X, Y, cv=3,
                                                      backend="serial"))  # fmt: skip


def test_the_report_wing_exports_every_display():
    import parcv.report as wing

    assert set(wing.__all__) == {d.__name__ for d in plots.DISPLAYS}
    assert set(wing.__all__) <= set(dir(wing))
