"""Smoke test of the nested-CV benchmark (scripts/bench/nested.py) in --quick mode."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench" / "nested.py"
TOOLS = [
    "ideal",
    "parcv-serial",
    "parcv-local",
    "parcv-dask",
    "sklearn-inner",
    "sklearn-outer",
    "sklearn-both",
    "joblib-dask",
    "dask-ml",
]


def _run_script(script: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a benchmark script; fail with its output unless it exits 0."""
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.slow
@pytest.mark.cluster
def test_bench_quick_runs_every_tool_with_the_same_outer_scores(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    # Two workers whatever the machine: small dask clusters, quick to start.
    args = ["--quick", "--repeats", "1", "--n-jobs", "2", "--json", str(out)]
    proc = _run_script(SCRIPT, args, tmp_path)
    report = json.loads(out.read_text())
    assert [r["workload"] for r in report["results"]] == ["W1", "W2", "W3"]
    # dask-ml is the optional 'bench' extra: without it its row says why it did not run.
    must_run = [t for t in TOOLS if t != "dask-ml" or importlib.util.find_spec("dask_ml")]
    for result in report["results"]:
        rows = {row["tool"]: row for row in result["rows"]}
        floors = ["floor-loky", "floor-dask"] if result["workload"] == "W3" else []
        assert list(rows) == TOOLS + floors
        for floor in floors:  # bounds without scores: they ran, and nothing was compared
            assert rows[floor]["ran"] and rows[floor]["same_scores"] is None
        for tool in must_run:
            assert rows[tool]["ran"], (result["workload"], tool, rows[tool]["note"])
            assert rows[tool]["same_scores"] is True, (result["workload"], tool)
            assert rows[tool]["wall_median"] > 0
    for tool in TOOLS:
        assert f"\n{tool} " in proc.stdout, f"no table row for {tool}"
    assert "== targets" in proc.stdout


@pytest.mark.slow
def test_two_cores_prints_the_slowdown_of_copies_run_at_once(tmp_path: Path) -> None:
    args = ["W2", "--repeats", "1", "--copies", "2"]
    proc = _run_script(SCRIPT.with_name("two_cores.py"), args, tmp_path)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("alone "))
    alone = float(line.split()[1])
    together = [float(t) for t in line.split("at once ")[1].split(" s;")[0].split(", ")]
    slowdown = float(line.rsplit(" ", 1)[1])
    assert len(together) == 2 and alone > 0
    assert slowdown == pytest.approx(sum(together) / 2 / alone, rel=1e-2)  # printed rounded
