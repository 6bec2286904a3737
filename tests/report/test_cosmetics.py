"""What a user reads: one fold numbering, readable values, honest names, readable halving plots."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

import parcv
from parcv.plan.space import format_params
from parcv.report.plots import (
    fold_scores,
    halving_rungs,
    paired_differences,
    race,
    selection_frequency,
)
from parcv.report.run_dir import rebuild_report
from parcv.report.text import RunInfo, render_report, render_summary

X, Y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)


def _digits(text):
    """The most significant digits of a decimal number in ``text`` (a float's repr has 17)."""
    numbers = re.findall(r"\d*\.\d+", text)
    return max((len(n.replace(".", "").lstrip("0")) for n in numbers), default=0)


# Scores have 6 significant digits, labels 4 or as many as tell two candidates apart.
MOST = 7


def _ticks(ax):
    return [t.get_text() for t in ax.get_xticklabels()]


# --- (a) folds: numbered from 0 everywhere, as the tables and cv_results_ (split0_) ---------


def test_plots_number_the_folds_as_the_tables_and_cv_results_do():
    r = parcv.nested_cv(Ridge(), {"alpha": [0.1, 10.0]}, X, Y, outer=3, inner=3, backend="serial")
    table = render_report(r, RunInfo("n"))
    assert "| 0 |" in table and "| 3 |" not in table.split("## Selection")[1].split("Model")[0]
    ax = fold_scores(r).axes[0]
    assert _ticks(ax) == ["0", "1", "2"]
    assert "numbered from 0" in ax.get_xlabel()
    assert list(ax.lines[-1].get_xdata()) == [0, 1, 2]
    left = paired_differences(r.final).axes[0]
    assert list(left.lines[0].get_xdata()) == [0, 1, 2]
    assert "split0_test_score" in r.final.cv_results_  # scikit-learn's names are kept


def test_the_race_plot_numbers_folds_from_0_as_race_eliminated_after():
    s = parcv.search(Ridge(), {"alpha": [0.01, 1.0, 1e5, 1e6]}, X, Y, cv=KFold(6),
                     racing=parcv.Racing(burn_in=3), backend="serial")  # fmt: skip
    ax = race(s).axes[0]
    assert _ticks(ax)[:3] == ["0", "1", "2"]


# --- (b) continuous values: rounded in every text, told apart, exact in the data ----------


def test_the_report_the_summary_and_the_plots_round_while_the_data_stay_exact():
    alphas = [0.123456, 0.123457, 2.718281828459045, 31.41592653589793]
    s = parcv.search(Ridge(), {"alpha": alphas}, X, Y, cv=3, backend="serial")
    texts = {
        "report": render_report(s, RunInfo("r")),
        "summary": render_summary(s, RunInfo("r")),
        "to_text": s.to_text(),
        "repr": repr(s),
    }
    for name, text in texts.items():
        assert _digits(text) <= MOST, name
    assert "alpha=2.718" in texts["report"] and "alpha=31.42" in texts["report"]
    assert "alpha=0.123456" in texts["report"] and "alpha=0.123457" in texts["report"]
    fig = paired_differences(s)
    assert _digits(fig.get_suptitle()) <= MOST
    best, runner = (s.candidates[c] for c in np.argsort(-s.cv_results_["mean_test_score"])[:2])
    drawn = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert drawn[0] != drawn[1]  # 0.123456 and 0.123457 both rank high: still two names
    # The data keep every digit.
    assert s.cv_results_["param_alpha"].tolist() == alphas
    frame = s.to_frame()
    assert frame["param_alpha"].tolist() == alphas
    assert frame["candidate"].tolist() == [f"alpha={a!r}" for a in alphas]
    assert {best.label, runner.label} <= set(frame["candidate"])


def test_a_nested_report_rounds_the_selected_candidates_and_tells_them_apart():
    space = {"alpha": [0.0123456, 0.0123457, 1e4 + 1 / 3]}
    r = parcv.nested_cv(Ridge(), space, X, Y, outer=3, inner=3, backend="serial")
    text = render_report(r, RunInfo("n")) + render_summary(r, RunInfo("n")) + r.to_text()
    assert _digits(text) <= MOST
    ticks = [t.get_text() for t in selection_frequency(r).axes[0].get_yticklabels()]
    assert len(set(ticks)) == len(r.stability)
    assert r.to_frame()["label"].tolist() == [format_params(p) for p in r.chosen_params]


def test_the_report_of_an_unfinished_run_rounds_its_candidates_too():
    from parcv.results.partial import PartialResult

    params = [{"alpha": 0.123456}, {"alpha": 0.123457}, {"alpha": 31.41592653589793}, {}]
    partial = PartialResult(kind="search", n_done=2, n_units=12, missing=["10 fits"],
                            params=params, metric="score", n_folds_done=np.array([1, 1, 0, 0]),
                            n_folds=3, mean_test_score=np.array([0.5, 0.6, np.nan, np.nan]),
                            std_test_score=np.zeros(4), outer_test_scores={})  # fmt: skip
    text = partial.to_markdown()
    assert _digits(text) <= MOST
    for label in ("alpha=0.123456", "alpha=0.123457", "alpha=31.42", "(as given)"):
        assert f"| {label} |" in text
    assert partial.to_frame()["params"].tolist()[2] == "{'alpha': 31.41592653589793}"


# --- (c) a nested run in rounds is named for what it is; a Python store reads as a spec's --


@pytest.fixture(scope="module")
def nested_sampler_dir(tmp_path_factory):
    pytest.importorskip("optuna")
    out = tmp_path_factory.mktemp("python-made")
    ran = parcv.nested_cv(Ridge(), {"alpha": loguniform(1e-3, 1e3)}, X, Y, outer=3, inner=3,
                          strategy=parcv.Sampler("tpe", n_trials=3, seed=0), backend="serial",
                          store=out / "store.sqlite")  # fmt: skip
    return out, ran


def test_a_nested_sampler_run_is_a_nested_rounds_result(nested_sampler_dir):
    out, ran = nested_sampler_dir
    loaded = parcv.load(out / "store.sqlite")
    for result in (ran, loaded):
        assert type(result).__name__ == "NestedRoundsResult"
        assert isinstance(result, parcv.NestedRoundsResult)
        assert isinstance(result, parcv.NestedHalvingResult)  # the old name still works
    assert parcv.NestedHalvingResult is parcv.NestedRoundsResult
    assert loaded.to_dict()["kind"] == "nested_rounds"


def test_a_python_made_store_reports_its_mode_as_a_spec_run_does(nested_sampler_dir):
    out, _ = nested_sampler_dir
    result, info, _ = rebuild_report(out)
    assert info.mode == ""  # no run.json: nothing said the mode
    assert render_summary(result, info).startswith(f"{out.name}: nested, ")
    spec_made = render_report(result, RunInfo(out.name, mode="nested"))
    mode_row = next(line for line in spec_made.splitlines() if line.startswith("| mode |"))
    assert mode_row in (out / "report.md").read_text(encoding="utf-8")
    assert _digits((out / "report.md").read_text(encoding="utf-8")) <= MOST


# --- (d) the halving plot's y axis is the later rungs', not rung 0's worst ----------------


def test_the_halving_plot_scales_to_the_upper_rungs_and_marks_the_rest_at_the_edge():
    alphas = [0.01, 0.1, 1.0, 10.0, 1e5, 1e6, 1e7, 1e8, 1e9]
    s = parcv.search(Ridge(), {"alpha": alphas}, X, Y, cv=3,
                     halving=parcv.Halving(random_state=0), backend="serial")  # fmt: skip
    fig = halving_rungs(s)
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    rung0 = np.asarray(s.rungs[0].cv_results_["mean_test_score"])
    upper = np.concatenate([r.cv_results_["mean_test_score"] for r in s.rungs[1:]])
    went_on = [p in s.rungs[1].cv_results_["params"] for p in s.rungs[0].cv_results_["params"]]
    kept = np.concatenate([rung0[went_on], upper])  # the paths of the candidates past rung 0
    assert low < kept.min() and kept.max() < high  # every later rung is on the axis
    assert high - low <= 1.1 * (kept.max() - kept.min()) + 1e-12  # and sets it
    assert low > rung0.min()  # rung 0's worst do not stretch it
    assert high - low < 0.5 * (upper.max() - rung0.min())
    # The rung-0 points below the axis are drawn at its lower edge, and counted.
    below = int((rung0 < low).sum())
    assert below > 0
    edge = [ln for ln in ax.lines if ln.get_marker() == "v"]
    assert edge and sum(len(ln.get_ydata()) for ln in edge) == below
    assert all(np.allclose(ln.get_ydata(), low) for ln in edge)
    assert f"{below} below the axis" in fig.get_suptitle()
