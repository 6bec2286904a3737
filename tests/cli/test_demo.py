"""The polynomial example and the demo job, end to end."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import parcv
from parcv.cli import main
from parcv.cli.demo import DEMO_SPECS
from parcv.store.readers import read_records

ROOT = Path(__file__).resolve().parents[2]


def test_polynomial_degree_example_selects_a_sensible_degree(capsys):
    module = runpy.run_path(str(ROOT / "examples" / "polynomial_degree.py"))
    result = module["main"]()
    degrees = [p["polynomialfeatures__degree"] for p in result.chosen_params]
    # sin(2 pi x) needs at least a cubic; noise 0.3 makes degree 12 overfit.
    assert all(3 <= d <= 11 for d in degrees)
    mse = -result.estimate["score"].mean
    assert 0.09 * 0.8 < mse < 0.09 * 2  # close to the noise variance 0.3^2, not below it
    assert "MSE of the whole selection procedure" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_demo_writes_run_directories_and_a_report_with_the_result_numbers(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--quick", "--n-jobs", "2"]) == 0
    printed = capsys.readouterr().out
    assert f"Report: {out / 'report.md'}" in printed
    report = (out / "report.md").read_text()
    for name in DEMO_SPECS:
        run = out / name
        for file in ("store.sqlite", "results.json", "report.md"):
            assert (run / file).is_file(), (name, file)
        result = parcv.load(run / "store.sqlite")
        est = result.estimate[result.refit_metric]
        assert f"| {result.refit_metric} | {est.mean:.6g} | {est.se:.3g} |" in report
        assert f"{est.mean:.6g} ± {est.se:.3g}" in printed
        if (run / "validation_curve.png").is_file():  # with the plot extra
            assert f"]({name}/validation_curve.png)" in report
        saved = json.loads((run / "results.json").read_text())
        assert saved["estimate"][result.refit_metric]["mean"] == est.mean
    poly = parcv.load(out / "polynomial" / "store.sqlite")
    assert "mean_train_neg_mean_squared_error" in poly.final.cv_results_  # the training curve
    # Running the demo again resumes from the stores: no fit of any fold is recomputed (the
    # final model is refitted, since the store keeps no fitted models without save_models).
    store = out / "polynomial" / "store.sqlite"
    stamps = {k: r.finished for k, r in read_records(store).items() if k != ("final",)}
    assert main(["demo", "--out", str(out), "--quick", "--n-jobs", "2"]) == 0
    assert {k: r.finished for k, r in read_records(store).items() if k != ("final",)} == stamps
    assert (out / "report.md").read_text() == report


@pytest.mark.slow
def test_console_script_entry_point_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "parcv.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.startswith("parcv ")
