"""Plots that tell the truth: slices of a 2-D grid, model families, log ticks, nothing clipped."""

from __future__ import annotations

import io

import matplotlib.image
import numpy as np
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
