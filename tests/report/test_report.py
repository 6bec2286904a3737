"""Reports and plots: rebuilt from the store without any fit, valid PNGs, every result kind."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge

import parcv
from parcv.cli import main
from parcv.report.run_dir import (
    RunInfo,
    cv_results_csv,
    num,
    render_report,
    render_summary,
    small,
    write_outputs,
)

SPEC = """\
name = "report-fixture"
description = "A small nested CV with training scores."

[data]
source = "sklearn:make_regression"
params = { n_samples = 60, n_features = 3, noise = 10.0, random_state = 0 }

[estimator]
class = "sklearn.linear_model.Ridge"

[space]
alpha = { logspace = [-1, 3, 5] }

[cv]
outer = 3
inner = 3

[scoring]
metrics = ["neg_mean_squared_error", "r2"]
refit = "neg_mean_squared_error"
return_train_score = true

[report]
cv_results = true
"""

PLOTS = (
    "validation_curve.png",
    "paired_differences.png",
    "selection_frequency.png",
    "fold_scores.png",
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    (folder / "spec.toml").write_text(SPEC)
    out = folder / "run"
    assert (
        main(
            ["run", str(folder / "spec.toml"), "--out", str(out), "--backend", "serial", "--quiet"]
        )
        == 0
    )
    return out


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def test_plots_are_valid_non_trivial_pngs(run_dir):
    imread = pytest.importorskip("matplotlib.image").imread

    for name in PLOTS:
        path = run_dir / name
        width, height = _png_size(path)
        assert width >= 400 and height >= 200, name
        assert path.stat().st_size > 10_000, name
        pixels = imread(path)
        assert pixels[..., :3].std() > 0.05, f"{name} looks blank"
        assert f"]({name})" in (run_dir / "report.md").read_text()


def test_report_rebuilds_identical_files_without_any_fit(run_dir, monkeypatch, capsys):
    plots = tuple(name for name in PLOTS if (run_dir / name).exists())
    names = ("report.md", "results.json", "cv_results.csv", *plots)  # run.json is an input
    before = {name: (run_dir / name).read_bytes() for name in names}
    for name in names:
        (run_dir / name).unlink()

    def no_fit(*args, **kwargs):
        raise AssertionError("parcv report must not fit anything")

    import parcv.engine.runner
    import parcv.engine.session
    import parcv.engine.work

    for module, name in (
        (parcv.engine.work, "run_units"),
        (parcv.engine.runner, "run_plan"),
        (parcv.engine.session, "run_plan"),
    ):
        monkeypatch.setattr(module, name, no_fit, raising=False)
    assert main(["report", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"Rebuilt {5 + len(plots)} files from the store (no fit ran)." in out
    for name in names:
        assert (run_dir / name).read_bytes() == before[name], name


def test_report_shows_estimate_selection_stability_significance_and_failures(run_dir):
    result = parcv.load(run_dir / "store.sqlite")
    report = (run_dir / "report.md").read_text()
    est = result.estimate["neg_mean_squared_error"]
    assert f"| neg_mean_squared_error | {est.mean:.6g} | {est.se:.3g} |" in report
    for o, c in enumerate(result.chosen):
        score = result.outer_scores["neg_mean_squared_error"][o]
        assert f"| {o} | {score:.6g} | {result.stability_labels[c]} |" in report
    for row in result.stability:
        assert f"| {row.label} | {row.count}/3 |" in report
    table = result.final.best_vs_rest()
    assert f"Best: {table.best}. Each row tests it" in report
    for test in table:
        assert f"| {test.name_b} | {test.mean_difference:.6g} |" in report
    assert "0 of 64 fits failed." in report
    for heading in (
        "## Estimate",
        "## Selection",
        "## Selection stability over outer folds",
        "## Significance: best vs rest",
        "## Failures",
    ):
        assert heading in report


def test_cross_validate_and_failing_search_reports(tmp_path):
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    cv = parcv.cross_validate(
        LogisticRegression(), X, y, cv=4, scoring=["accuracy", "f1"], backend="serial"
    )
    text = render_report(cv, RunInfo("cv", mode="cross_validate"))
    assert f"| accuracy | {cv.summaries['accuracy'].mean:.6g} |" in text
    assert "## Selection" not in text and "Significance" not in text
    assert cv_results_csv(cv).splitlines()[0].startswith("fold,fit_time,score_time,test_accuracy")
    Xr, yr = make_regression(n_samples=40, n_features=2, random_state=0)
    with pytest.warns(parcv.FitFailedWarning):
        failing = parcv.search(Ridge(), {"alpha": [1.0, -1.0, 3.0]}, Xr, yr, cv=3, backend="serial")
    files = write_outputs(tmp_path, failing, RunInfo("failing", mode="search"))
    report = (tmp_path / "report.md").read_text()
    assert "3 of 10 fits failed (candidate 'alpha=-1.0': 3)" in report
    assert {f.name for f in files} >= {"validation_curve.png", "paired_differences.png"}
    assert "model to ship: alpha=1.0" in render_summary(failing, RunInfo("failing"))


def test_report_of_a_store_written_by_the_python_api(tmp_path, capsys):
    X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    store = tmp_path / "store.sqlite"
    result = parcv.nested_cv(
        Ridge(), {"alpha": [0.1, 1.0]}, X, y, outer=3, inner=3, backend="serial", store=store
    )
    assert main(["report", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith(f"{tmp_path.name}: ")
    report = (tmp_path / "report.md").read_text()
    assert f"| score | {result.estimate['score'].mean:.6g} |" in report
    np.testing.assert_array_equal(
        parcv.load(store).outer_scores["score"], result.outer_scores["score"]
    )


def _cubic(n=40):
    rng = np.random.default_rng(3)
    X = rng.uniform(-1.0, 1.0, size=(n, 1))
    return X, X[:, 0] ** 3 - X[:, 0] + rng.normal(0.0, 0.2, n)


def test_search_report_shows_criteria_next_to_cv_and_each_methods_choice():
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    X, y = _cubic()
    space = {"polynomialfeatures__degree": [1, 3, 5]}
    model = make_pipeline(PolynomialFeatures(), LinearRegression())
    r = parcv.search(model, space, X, y, cv=4, criteria=["aic", "bic", "cp"], backend="serial")
    text = render_report(r, RunInfo("criteria"))
    table = r.criteria_table
    assert "## Selection methods side by side" in text
    assert "| candidate | CV score mean | ± se | AIC | BIC | Cp | n_params | selected by |" in text
    for row in table.rows:
        cells = [row.values[n] for n in ("aic", "bic", "cp", "n_params")]
        want = f"| {row.label} | {num(row.mean)} | {small(row.se)} | "
        assert want + " | ".join(num(v) for v in cells) + " |" in text
    for method, title in (("cv", "CV best"), ("one_se", "one-SE"), ("bic", "BIC"), ("cp", "Cp")):
        assert f"| {title} | {table.label_of(method)} |" in text
    assert "selected by CV best: " in render_summary(r, RunInfo("criteria"))
    plain = parcv.search(model, space, X, y, cv=4, backend="serial")
    assert "side by side" not in render_report(plain, RunInfo("plain"))


def test_nested_report_without_refit_shows_the_choices_per_outer_fold():
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    X, y = _cubic(60)
    model = make_pipeline(PolynomialFeatures(), LinearRegression())
    r = parcv.nested_cv(model, {"polynomialfeatures__degree": [1, 3]}, X, y, outer=3, inner=3,
                        refit=False, criteria=["bic"], backend="serial")  # fmt: skip
    text = render_report(r, RunInfo("nested"))
    labels = ["polynomialfeatures__degree=1", "polynomialfeatures__degree=3"]
    bic = " | ".join(labels[c] for c in r.criteria_choices["bic"])
    assert f"| BIC | - | {bic} |" in text
    nested = " | ".join(labels[c] for c in r.chosen)
    assert f"| **nested CV** | - | {nested} |" in text
    assert "| candidate | CV" not in text  # no all-data fits without refit


def test_a_raced_search_reports_its_race_and_the_fits_it_saved(reg_data):
    from sklearn.model_selection import KFold

    from parcv.report.plots import render_plots
    from parcv.report.text import RunInfo, render_report

    X, y = reg_data
    grid = {"alpha": [0.01, 1.0, 1e3, 1e4, 1e5]}
    result = parcv.search(Ridge(), grid, X, y, cv=KFold(8, shuffle=True, random_state=0),
                          racing=parcv.Racing(), backend="serial")  # fmt: skip
    assert "race.png" in render_plots(result)
    dropped = result.cv_results_["race_eliminated_after"]
    n_run = sum(1 for r in result.records if r.unit.kind == "fit")
    text = render_report(result, RunInfo("raced"))
    assert f"Racing skipped {5 * 8 - n_run} of {5 * 8} fits" in text
    assert f"| all data | {int((dropped >= 0).sum())} of 5 | {n_run} of 40 |" in text


def test_the_report_puts_the_nested_cv_interval_first(reg_data):
    from parcv.report.text import RunInfo, render_report

    X, y = reg_data
    result = parcv.cross_validate(Ridge(), X, y, cv=5, scoring="neg_mean_squared_error",
                                  interval="ncv", ncv_repetitions=2, backend="serial")  # fmt: skip
    text = render_report(result, RunInfo("interval"))
    estimate = text[text.index("## Estimate") :]
    ncv = estimate.index("| nested CV (Bates, Hastie & Tibshirani), 90% |")
    assert ncv < estimate.index("| usual: mean ± z se of the fold losses, 90% |")
    assert ncv < estimate.index("| metric | mean |")
    assert f"{result.interval.n_fits} more fits" in estimate


def test_a_large_search_shows_only_the_closest_competitors_in_the_report(reg_data):
    X, y = reg_data
    alphas = [float(a) for a in np.logspace(-3, 3, 24)]
    r = parcv.search(Ridge(), {"alpha": alphas}, X, y, cv=4, backend="serial")
    text = render_report(r, RunInfo("large"))
    section = text.split("## Significance: best vs rest")[1].split("## ")[0]
    table = r.best_vs_rest()
    closest = sorted(table, key=lambda t: t.mean_difference)
    named = r.readable_labels  # the report rounds the alphas; results.json keeps them
    for test in closest[:15]:
        assert f"| {named[test.name_b]} | {num(test.mean_difference)} |" in section
    for test in closest[15:]:  # farther from the best: in results.json only
        assert f"| {named[test.name_b]} |" not in section
    assert f"... {len(table) - 15} more (farther from the best) in results.json |" in section
    columns = r.to_dict()["comparisons"]["columns"]
    assert sorted(columns["name_b"]) == sorted(t.name_b for t in table)


@pytest.mark.parametrize(
    ("cv", "words"),
    [(5, "selected by 5-fold CV on all data"),
     ("repeated", "selected by 5-fold CV repeated 2 times on all data")],
)  # fmt: skip
def test_report_names_the_cv_that_selected_as_the_user_set_it(cv, words, tmp_path):
    # The report said "selected by 10-fold CV" for RepeatedKFold(n_splits=5, n_repeats=2).
    from sklearn.model_selection import RepeatedKFold

    X, y = make_regression(n_samples=40, n_features=3, noise=5.0, random_state=0)
    scheme = RepeatedKFold(n_splits=5, n_repeats=2, random_state=0) if cv == "repeated" else cv
    store = tmp_path / "s.sqlite"
    r = parcv.search(Ridge(), {"alpha": [0.1, 10.0]}, X, y, cv=scheme, backend="serial",
                     store=store)  # fmt: skip
    assert words in render_report(r, RunInfo("repeated"))
    assert words in render_report(parcv.load(store), RunInfo("repeated"))  # parcv report


def test_the_best_vs_rest_table_names_the_long_best_label_once():
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline

    X, y = make_classification(n_samples=90, n_features=4, random_state=0)
    pipe = Pipeline([("model", LogisticRegression())])
    space = [
        {"model": [LogisticRegression(max_iter=2000)], "model__C": [0.01, 1.0]},
        {"model": [RandomForestClassifier(n_estimators=5, random_state=0)]},
    ]
    s = parcv.search(pipe, space, X, y, cv=4, backend="serial")
    section = render_report(s, RunInfo("families")).split("## Significance: best vs rest")[1]
    section = section.split("## ")[0]
    best = s.candidates[s.best_index_].label
    assert section.count(best) == 1 and f"Best: {best}." in section
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert rows[0].startswith("| other | mean diff |") and len(rows) == 1 + 2
