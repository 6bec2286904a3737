"""The seeds' example and the demo job, end to end."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from parcv.cli import main

ROOT = Path(__file__).resolve().parents[1]


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
def test_cli_demo_writes_report_with_the_result_numbers(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["demo", "--out", str(out), "--quick", "--n-jobs", "2"]) == 0
    report = (out / "report.md").read_text()
    assert "nested CV estimate" in report
    import json

    poly = json.loads((out / "polynomial_results.json").read_text())
    mean = poly["estimate"]["score"]["mean"]
    assert f"{mean:.4f}" in report
    assert "Report:" in capsys.readouterr().out


@pytest.mark.slow
def test_console_script_entry_point_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "parcv.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert proc.stdout.startswith("parcv ")
