"""Plots that tell the truth: slices of a 2-D grid, model families, log ticks, nothing clipped."""

from __future__ import annotations

import io

import matplotlib.image
import matplotlib.text
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.ticker import NullFormatter
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC

import parcv
from parcv.report.plots import _png, render_plots, validation_curve

X, Y = make_classification(n_samples=90, n_features=4, random_state=0)


def _validation_lines(fig):
    ax = fig.axes[0]
    return [ln for ln in ax.get_legend().get_texts() if ln.get_text().startswith("validation")]


def test_a_2d_grid_draws_one_line_per_value_of_the_other_parameter():
    grid = {"C": [0.1, 1.0, 10.0], "gamma": ["scale", 0.01, 0.1]}
    s = parcv.search(SVC(), grid, X, Y, cv=3, backend="serial")
    fig = validation_curve(s)
    labels = sorted(t.get_text() for t in _validation_lines(fig))
    assert labels == [
        "validation: gamma='scale'",
        "validation: gamma=0.01",
        "validation: gamma=0.1",
    ]
    assert "one line per value of the other parameters" in fig.axes[0].get_title()
    best = s.candidates[s.best_index_].label
    assert any(t.get_text() == f"selected: {best}" for t in fig.axes[0].get_legend().get_texts())


def test_model_families_get_one_line_each_and_a_selected_family_off_the_axis_is_named():
    pipe = Pipeline([("model", LogisticRegression())])
    space = [
        {"model": [LogisticRegression(max_iter=500)], "model__C": [0.01, 1.0, 100.0]},
        {"model": [SVC()], "model__C": [0.01, 1.0, 100.0]},
        {"model": [KNeighborsClassifier()], "model__n_neighbors": [1]},
    ]
    s = parcv.search(pipe, space, X, Y, cv=3, backend="serial")
    fig = validation_curve(s, param="model__C")
    labels = sorted(t.get_text() for t in _validation_lines(fig))
    assert labels == ["validation: LogisticRegression", "validation: SVC"]
    title = fig.axes[0].get_title()
    if "KNeighbors" in s.candidates[s.best_index_].label:
        assert "selected: KNeighborsClassifier, n_neighbors=1 (not on this plot)" in title
    else:
        assert "not on this plot" not in title


def test_log_axes_label_no_minor_ticks_and_nothing_is_clipped():
    s = parcv.search(
        LogisticRegression(), {"C": list(np.logspace(-3, 3, 13))}, X, Y, cv=3, backend="serial"
    )
    fig = validation_curve(s)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert isinstance(ax.xaxis.get_minor_formatter(), NullFormatter)
    png = _png(fig)
    image = matplotlib.image.imread(io.BytesIO(png))
    # bbox_inches="tight": the drawing reaches close to every edge, and no text is cut.
    ink = np.argwhere(image[..., :3].min(axis=2) < 0.9)
    h, w = image.shape[:2]
    assert ink[:, 0].min() < 0.05 * h and ink[:, 1].min() < 0.05 * w
    assert ink[:, 0].max() > 0.95 * h and ink[:, 1].max() > 0.95 * w
    for name, data in render_plots(s).items():
        assert data.startswith(b"\x89PNG"), name


def test_a_curve_of_many_candidates_draws_a_band_not_error_bars():
    from matplotlib.collections import PolyCollection
    from matplotlib.container import ErrorbarContainer
    from sklearn.dummy import DummyRegressor

    from parcv.report.plots import DENSE_POINTS

    few = parcv.search(LogisticRegression(), {"C": [0.1, 1.0, 10.0]}, X, Y, cv=3, backend="serial")
    ax = validation_curve(few).axes[0]
    assert any(isinstance(c, ErrorbarContainer) for c in ax.containers)
    grid = {"strategy": ["constant"], "constant": [float(c) for c in range(DENSE_POINTS + 50)]}
    many = parcv.search(DummyRegressor(), grid, X, X[:, 0], cv=3, backend="serial")
    ax = validation_curve(many).axes[0]
    assert not ax.containers  # no error bars ...
    assert any(isinstance(c, PolyCollection) for c in ax.collections)  # ... a ± se band
    assert any(t.get_text().endswith(", ± se") for t in ax.get_legend().get_texts())
    # Its legend beside the axes: placed "best", it is tried against every point drawn.
    FigureCanvasAgg(ax.figure).draw()
    assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1


def _drawn_figures(result):
    """Every figure of a result's report (the same ones render_plots saves), drawn."""
    from parcv.report.plots import figures

    drawn = figures(result)
    for fig in drawn.values():
        FigureCanvasAgg(fig).draw()
    return drawn


def _legend_texts(ax):
    legend = ax.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def test_an_evenly_spaced_integer_grid_gets_a_linear_axis_and_a_logspace_grid_a_log_one():
    from sklearn.neighbors import KNeighborsRegressor

    from parcv.report.plots import _geometric

    even = parcv.search(
        KNeighborsRegressor(), {"n_neighbors": list(range(1, 30, 4))}, X, X[:, 0], cv=3,
        backend="serial",
    )  # fmt: skip
    assert validation_curve(even).axes[0].get_xscale() == "linear"
    wide = parcv.search(
        LogisticRegression(), {"C": [0.01, 0.1, 1.0, 10.0]}, X, Y, cv=3, backend="serial"
    )
    assert validation_curve(wide).axes[0].get_xscale() == "log"
    # The rule: positive, a span of two decades at least, and log-spaced rather than even.
    assert _geometric(np.logspace(-3, 3, 7)) and _geometric(np.array([0.1, 10.0]))
    assert not _geometric(np.arange(1.0, 30.0, 4.0))  # 1..29: under two decades
    assert not _geometric(np.arange(1.0, 1001.0, 111.0))  # 1..1000, evenly spaced
    assert not _geometric(np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0]))  # one and a half decades
    assert not _geometric(np.array([0.0, 1.0, 100.0, 10000.0]))  # not all positive


def _raced_search(return_train_score=False):
    from sklearn.dummy import DummyRegressor

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 2)), rng.normal(size=60)
    grid = {"strategy": ["mean", "constant"], "constant": [100.0, 200.0]}
    return parcv.search(
        DummyRegressor(), grid, x, y, cv=5, backend="serial",
        racing=parcv.Racing(burn_in=3), return_train_score=return_train_score,
    )  # fmt: skip


def test_candidates_dropped_by_racing_are_noted_never_a_bare_legend_entry():
    s = _raced_search()
    dropped = np.asarray(s.cv_results_["race_eliminated_after"])
    # The constant 100 and 200: their last fold run is fold 3 (numbered from 0, as
    # race_eliminated_after and the tables); the others survive.
    assert list(dropped) == [-1, 3, -1, 3]
    ax = validation_curve(s).axes[0]
    assert not any("strategy='constant'" in t for t in _legend_texts(ax))
    assert "not drawn: 2 candidates dropped by racing after fold 3 (race.png)" in ax.get_title()
    for line in ax.get_lines():  # every line drawn has points
        assert np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any()


def test_every_line_of_a_validation_curve_gets_its_training_curve():
    from matplotlib.container import ErrorbarContainer

    grid = {"C": [0.1, 1.0, 10.0], "class_weight": [None, "balanced"]}
    s = parcv.search(
        LogisticRegression(), grid, X, Y, cv=3, backend="serial", return_train_score=True
    )
    ax = validation_curve(s).axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 4  # validation and training, for each of the 2 lines
    train = [c for c in bars if c.lines[0].get_linestyle() == "--"]
    means = np.asarray(s.cv_results_["mean_train_score"])
    assert sorted(tuple(np.round(c.lines[0].get_ydata(), 12)) for c in train) == sorted(
        tuple(np.round(means[[i for i, p in enumerate(s.cv_results_["params"])
                              if p["class_weight"] == w]], 12))
        for w in (None, "balanced")
    )  # fmt: skip
    assert "training folds (dashed, in each line's colour)" in _legend_texts(ax)


def test_a_hold_out_fold_plot_has_no_legend_for_an_undrawn_band_and_labels_inside():
    from sklearn.neighbors import KNeighborsRegressor

    grid = {"n_neighbors": [1, 5, 9], "weights": ["uniform", "distance"]}
    r = parcv.nested_cv(
        KNeighborsRegressor(), grid, X, X[:, 0] + X[:, 1],
        outer=parcv.ThreeWayHoldOut(0.6, 0.2, 0.2), backend="serial",
    )  # fmt: skip
    drawn = _drawn_figures(r)
    assert "selection_frequency.png" not in drawn  # one outer split selects once: no bar chart
    fig = drawn["fold_scores.png"]
    ax = fig.axes[0]
    assert not any("se" in t.split() for t in _legend_texts(ax))
    assert not ax.patches  # no band
    assert "hold-out test set" in ax.get_title()
    box = ax.get_window_extent()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_text()]
    assert labels  # the selected candidate is written at its point ...
    for text in labels:  # ... inside the axes
        extent = text.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, text.get_text()
        assert box.y0 <= extent.y0 and extent.y1 <= box.y1, text.get_text()


def test_neg_metrics_have_the_same_name_and_sign_in_plots_and_report_text():
    from sklearn.linear_model import Ridge

    from parcv.report.text import headline

    y = X[:, 0] * 3 + 1
    s = parcv.search(
        Ridge(), {"alpha": [0.1, 10.0, 1000.0]}, X, y, cv=3, backend="serial",
        scoring=["neg_mean_squared_error"], refit="neg_mean_squared_error",
    )  # fmt: skip
    # The name the user gave, and scikit-learn's sign, in the report's headline and the plots.
    assert headline(s)[0].startswith("neg_mean_squared_error: -")
    ax = validation_curve(s).axes[0]
    assert ax.get_ylabel().startswith("neg_mean_squared_error")
    line = ax.containers[0].lines[0]
    means = s.cv_results_["mean_test_neg_mean_squared_error"]
    np.testing.assert_allclose(line.get_ydata(), means)
    assert np.all(np.asarray(line.get_ydata()) < 0)
    cv = parcv.cross_validate(Ridge(), X, y, cv=3, backend="serial",
                              scoring=["neg_mean_squared_error"])  # fmt: skip
    ax = _drawn_figures(cv)["fold_scores.png"].axes[0]
    mean = headline(cv)[0].split(": ")[1].split(" ± ")[0]
    assert f"mean {mean}" in _legend_texts(ax)
    assert ax.get_ylabel().startswith("neg_mean_squared_error")


def test_legends_and_labels_on_every_plot_are_at_least_9_points_and_inside_the_figure():
    from matplotlib.axis import Tick

    s = _raced_search(return_train_score=True)
    r = parcv.nested_cv(LogisticRegression(), {"C": [0.01, 1.0]}, X, Y, outer=3, inner=3,
                        backend="serial")  # fmt: skip
    drawn = {**_drawn_figures(s), **{f"nested {k}": v for k, v in _drawn_figures(r).items()}}
    assert {"validation_curve.png", "race.png", "nested fold_scores.png"} <= set(drawn)
    for name, fig in drawn.items():
        for ax in fig.axes:
            legend = ax.get_legend()
            for text in ([] if legend is None else legend.get_texts()) + ax.texts:
                assert text.get_fontsize() >= 9, (name, text.get_text())
        # Titles, axis labels, legends, annotations: inside the figure, before any
        # bbox_inches="tight" (tick labels beyond the axis limits are never drawn).
        ticks = {id(t) for tick in fig.findobj(Tick) for t in (tick.label1, tick.label2)}
        renderer, edge = fig.canvas.get_renderer(), fig.bbox
        texts = [
            t for t in fig.findobj(matplotlib.text.Text) if t.get_text() and id(t) not in ticks
        ]
        assert texts, name
        for text in texts:
            box = text.get_window_extent(renderer)
            assert edge.x0 - 1 <= box.x0 and box.x1 <= edge.x1 + 1, (name, text.get_text())
            assert edge.y0 - 1 <= box.y0 and box.y1 <= edge.y1 + 1, (name, text.get_text())


def test_a_search_over_model_families_shows_the_selected_one_whatever_its_parameter():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(120, 2))
    y = (x[:, 0] * x[:, 1] > 0).astype(int)  # XOR: no linear model does better than chance
    pipe = Pipeline([("model", LogisticRegression())])
    space = [
        {"model": [LogisticRegression()], "model__C": [0.01, 1.0, 100.0]},
        {"model": [KNeighborsClassifier()], "model__n_neighbors": [3, 7]},
    ]
    s = parcv.search(pipe, space, x, y, cv=3, backend="serial")
    assert "KNeighbors" in s.candidates[s.best_index_].label
    fig = validation_curve(s)
    assert [ax.get_xlabel() for ax in fig.axes] == ["model__C", "model__n_neighbors"]
    assert "not on this plot" not in (fig.get_suptitle() + fig.axes[0].get_title())
    best = s.cv_results_["params"][s.best_index_]
    stars = [ln for ln in fig.axes[1].get_lines() if ln.get_marker() == "*"]
    assert len(stars) == 1
    assert stars[0].get_xdata()[0] == best["model__n_neighbors"]
    assert stars[0].get_ydata()[0] == s.cv_results_["mean_test_score"][s.best_index_]


def test_scattered_points_say_so_in_the_title():
    # Every other parameter varies with C (as in a random search): points, not lines.
    space = [{"C": [c], "tol": [t]} for c, t in ((0.1, 1e-3), (1.0, 1e-4), (10.0, 1e-5))]
    s = parcv.search(LogisticRegression(), space, X, Y, cv=3, backend="serial")
    title = validation_curve(s).axes[0].get_title()
    assert title.startswith("Validation scores (other parameters vary too): mean ± se over 3")


def test_a_none_value_of_the_curve_parameter_is_drawn_at_its_own_tick_not_dropped():
    from sklearn.datasets import make_regression
    from sklearn.tree import DecisionTreeRegressor

    Xr, yr = make_regression(n_samples=200, n_features=2, noise=0, random_state=0)
    tree = DecisionTreeRegressor(random_state=0)
    # 16 and None tie (a tree of depth 16 is fully grown): both are on the curve.
    s = parcv.search(tree, {"max_depth": [4, 8, 16, None]}, Xr, yr, cv=3, backend="serial")
    ax = validation_curve(s).axes[0]
    ticks = {t.get_text(): x for t, x in zip(ax.get_xticklabels(), ax.get_xticks(), strict=True)}
    assert list(ticks) == ["4", "8", "16", "None"]
    points = np.concatenate([c.lines[0].get_xdata() for c in ax.containers])
    np.testing.assert_array_equal(np.sort(points), [4.0, 8.0, 16.0, ticks["None"]])
    lines = [c.lines[0] for c in ax.containers]
    heights = {float(x): y for ln in lines for x, y in zip(*ln.get_data(), strict=True)}
    means = s.cv_results_["mean_test_score"]
    assert heights[ticks["None"]] == means[3] == means[2]
    # When None is selected, the star is at its tick.
    s = parcv.search(tree, {"max_depth": [2, 4, None]}, Xr, yr, cv=3, backend="serial")
    assert s.best_params_ == {"max_depth": None}
    ax = validation_curve(s).axes[0]
    star = next(ln for ln in ax.get_lines() if ln.get_marker() == "*")
    none = dict(zip([t.get_text() for t in ax.get_xticklabels()], ax.get_xticks(), strict=True))
    assert star.get_xdata()[0] == none["None"]


def _overlapping_texts(fig):
    import itertools

    FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text() and t.get_visible()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    return [(a, b) for (a, x), (b, y) in itertools.combinations(boxes, 2) if x.overlaps(y)]


def test_the_outer_fold_plot_names_each_selected_candidate_once_with_no_text_overlapping():
    import dataclasses

    from sklearn.ensemble import RandomForestClassifier

    from parcv.report.plots import fold_scores

    pipe = Pipeline([("model", LogisticRegression())])
    space = [
        {"model": [LogisticRegression(max_iter=2000)], "model__C": [0.01, 1.0]},
        {"model": [RandomForestClassifier(n_estimators=5, random_state=0)],
         "model__max_depth": [2, None]},
    ]  # fmt: skip
    Xs, ys = make_classification(n_samples=150, n_features=6, flip_y=0.1, random_state=1)
    r = parcv.nested_cv(pipe, space, Xs, ys, outer=10, inner=3, backend="serial")
    # Neighbouring folds a little apart: text written at the points would run into each other.
    r = dataclasses.replace(r, outer_scores={"score": np.array([0.80, 0.83] * 5)})
    fig = fold_scores(r)
    assert _overlapping_texts(fig) == []
    names = {r.stability_labels[c] for c in r.chosen}
    shown = [t for t in _legend_texts(fig.axes[0]) if t.startswith("selected ")]
    assert len(shown) == len(names) >= 2
    assert not fig.axes[0].texts  # nothing written at the points
