"""Smoke tests of the benchmarks in scripts/bench/ (nested.py, iterations.py, ...), --quick."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

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
    args = ["W2", "--quick", "--repeats", "1", "--copies", "2"]
    proc = _run_script(SCRIPT.with_name("two_cores.py"), args, tmp_path)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("alone "))
    alone = float(line.split()[1])
    together = [float(t) for t in line.split("at once ")[1].split(" s;")[0].split(", ")]
    slowdown = float(line.rsplit(" ", 1)[1])
    assert len(together) == 2 and alone > 0
    assert slowdown == pytest.approx(sum(together) / 2 / alone, rel=1e-2)  # printed rounded


def _bench_module(monkeypatch: pytest.MonkeyPatch, name: str) -> Any:
    """Import scripts/bench/<name>.py; what its ``_setup`` import changes is undone after."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONPATH"):
        monkeypatch.setenv(var, os.environ.get(var, ""))  # restored (or removed) afterwards
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # sys.path is restored afterwards
    spec = importlib.util.spec_from_file_location(name, SCRIPT.with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_timeline_spans_count_units_gaps_and_the_wave_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    timeline = _bench_module(monkeypatch, "timeline")
    rec = SimpleNamespace
    records = [
        rec(worker="a", started=10.0, finished=10.5),
        rec(worker="a", started=10.6, finished=11.1),
        rec(worker="a", started=11.1, finished=11.6),
        rec(worker="b", started=10.2, finished=10.7),
        # Two records of one fast-CV unit: one unit.
        rec(worker="b", started=10.9, finished=11.4),
        rec(worker="b", started=10.9, finished=11.4),
    ]
    a, b = timeline.spans(records, 10.0)
    assert (a.worker, a.first_start, a.n_units) == ("a", 0.0, 3)
    assert (a.last_end, a.gaps, a.busy) == pytest.approx((1.6, 0.1, 1.5))
    assert (b.worker, b.first_start, b.n_units) == ("b", pytest.approx(0.2), 2)
    assert (b.last_end, b.gaps, b.busy) == pytest.approx((1.4, 0.2, 1.0))
    # 5 units on 2 workers: 3 waves of the mean unit (0.5 s) after the earliest start.
    assert timeline.wave_bound([a, b]) == pytest.approx(1.5)


@pytest.mark.slow
def test_timeline_prints_every_unit_of_the_run_once(tmp_path: Path) -> None:
    args = ["W3", "--quick", "--runs", "1", "--n-jobs", "2"]
    proc = _run_script(SCRIPT.with_name("timeline.py"), args, tmp_path)
    lines = proc.stdout.splitlines()
    head = next(x for x in lines if x.startswith("wall "))
    n_units, n_workers = int(head.split("units ")[1].split()[0]), int(head.rsplit(" ", 1)[1])
    assert n_units == 3 * 2 * 6 + 3  # quick W3: 3 outer x 2 inner x 6 candidates + 3 refits
    assert 1 <= n_workers <= 2
    rows = lines[lines.index(head) + 2 : lines.index(head) + 2 + n_workers]
    assert sum(int(row.split()[2]) for row in rows) == n_units
    assert "waves bound" in lines[lines.index(head) + 2 + n_workers]


@pytest.mark.slow
def test_coverage_study_quick_prints_every_interval_of_both_settings(tmp_path: Path) -> None:
    script = SCRIPT.parent / "interval_coverage.py"
    # The nested CV interval's study only: BBC-CV is checked against its reference elsewhere.
    args = ["--quick", "--n-jobs", "1", "--replications", "3", "--study", "ncv"]
    proc = _run_script(script, args, tmp_path)
    rows = [line.split() for line in proc.stdout.splitlines() if line[:3] in ("ols", "log")]
    methods = sorted((row[0], row[3]) for row in rows)
    assert methods == sorted(
        (setting, method)
        for setting in ("ols", "logistic")
        for method in ("naive-folds", "naive-samples", "ncv")
    )
    for row in rows:  # a coverage in [0, 1] and a positive mean width, for every method
        assert 0.0 <= float(row[4]) <= 1.0 and float(row[9]) > 0.0


@pytest.mark.slow
def test_coverage_study_quick_prints_every_interval_of_the_nested_settings(tmp_path: Path) -> None:
    script = SCRIPT.parent / "interval_coverage.py"
    args = ["--quick", "--n-jobs", "1", "--replications", "2", "--study", "nested"]
    proc = _run_script(script, args, tmp_path)
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("nested-")]
    methods = sorted((row[0], row[3]) for row in rows)
    assert methods == sorted(
        (setting, method)
        for setting in ("nested-sparse", "nested-decay")
        for method in ("naive-folds", "naive-samples", "bbc", "ncv")
    )
    for row in rows:  # a coverage in [0, 1] and a positive mean width, for every method
        assert 0.0 <= float(row[4]) <= 1.0 and float(row[9]) > 0.0
    assert "30 NCV selections = 630 fits each" in proc.stdout  # R = 2: 2 x 15 x (4 x 5 + 1)


@pytest.mark.slow
def test_report_size_bench_measures_a_small_run_and_its_report(tmp_path: Path) -> None:
    script = SCRIPT.parent / "report_size.py"
    run = tmp_path / "run"
    args = ["--candidates", "20", "--no-plots", "--keep", str(run)]
    printed = _run_script(script, args, tmp_path).stdout
    assert "run: 101 units in" in printed and "parcv report CPU (s)" in printed
    saved = json.loads((run / "results.json").read_text())
    assert saved["kind"] == "search" and "records" not in saved  # summaries only
    again = _run_script(script, ["--report-only", str(run)], tmp_path).stdout
    assert "run: 101 units;" in again and "parcv report peak RSS (MB)" in again


@pytest.mark.slow
def test_report_strategies_quick_times_both_reports_every_way(tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    script = SCRIPT.parent / "report_strategies.py"
    printed = _run_script(script, ["--quick"], tmp_path).stdout
    rows = [line.split() for line in printed.splitlines() if line.startswith(("1 param", "2 p"))]
    assert len(rows) == 6, printed  # 2 cases x (text, plots, parcv report DIR)
    for row in rows:  # grid and sampler: CPU seconds and their ratio, measured
        grid, sampler, ratio = (float(v) for v in row[-5:-2])
        assert grid > 0 and sampler > 0 and ratio > 0
    assert "worst ratio sampler / grid, parcv report DIR:" in printed


ITERATION_METHODS = [
    "full-grid",
    "parcv-early-stop",
    "parcv-halving",
    "parcv-hyperband",
    "sklearn-halving",
    "dask-ml-hyperband",
    "optuna-tpe-hyperband",
    "parcv-tpe-hyperband",
    "parcv-tpe-hyperband-b2",
    "optuna",
    "parcv-tpe",
    "parcv-tpe-b2",
]
OPTUNA_ROWS = ["optuna-tpe-hyperband", "parcv-tpe-hyperband", "parcv-tpe-hyperband-b2",
               "optuna", "parcv-tpe", "parcv-tpe-b2"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.cluster
def test_iterations_quick_prints_a_row_per_method_for_every_model(tmp_path: Path) -> None:
    import importlib.util

    import parcv

    # optuna and dask-ml are the 'bench' extra: without them, their rows say so.
    missing = {m for m, name in [*((m, "optuna") for m in OPTUNA_ROWS),
                                 ("dask-ml-hyperband", "dask_ml")]
               if importlib.util.find_spec(name) is None}  # fmt: skip

    out = tmp_path / "iterations.json"
    proc = _run_script(SCRIPT.with_name("iterations.py"), ["--quick", "--json", str(out)], tmp_path)
    report = json.loads(out.read_text())
    assert [(w["model"], w["data"]) for w in report["results"]] == [
        ("hgb", "classification"),
        ("sgd", "classification"),
        ("xgb", "classification"),
    ]
    planned = {"parcv-early-stop": "Iterations", "parcv-halving": "Halving",
               "parcv-hyperband": "Hyperband", "parcv-tpe": "Sampler",
               "parcv-tpe-b2": "Sampler", "parcv-tpe-hyperband": "Sampler",
               "parcv-tpe-hyperband-b2": "Sampler"}  # fmt: skip
    for workload in report["results"]:
        rows = {row["method"]: row for row in workload["rows"]}
        assert list(rows) == ITERATION_METHODS
        for method, row in rows.items():
            name = (workload["model"], method, row["note"])
            if method in planned and not hasattr(parcv, planned[method]):
                assert row["note"] == "not available in this parcv", name
            elif method in missing and (
                method != "dask-ml-hyperband" or workload["model"] == "sgd"
            ):
                assert row["note"].endswith("not installed (pip install '.[bench]')"), name
            elif method == "dask-ml-hyperband" and workload["model"] != "sgd":
                assert row["note"] == "n/a (needs partial_fit)", name
            elif method == "dask-ml-hyperband":  # runs, or says why dask-ml cannot here
                assert row["ran"] or row["note"].startswith(("n/a", "dask-ml not")), name
            else:
                assert row["ran"], name
            if row["ran"]:
                assert len(row["outer_scores"]) == len(row["winners"]) == 2, name
                assert 0.0 <= row["outer_score"] <= 1.0 and row["fit_time"] > 0, name
                assert isinstance(row["tied"], bool), name
        assert rows["full-grid"]["ratio"] == 1.0 and rows["full-grid"]["tied"] is True
        if rows["parcv-tpe"]["ran"] and rows["optuna"]["ran"]:  # batch 1: Optuna's own trials
            same = workload["tpe"]["parcv-tpe"]
            assert same["same_trials"] == same["same_winner"] == same["n_outer"] == 2, workload
            tpe, optuna = rows["parcv-tpe"], rows["optuna"]
            assert tpe["trials"] == optuna["trials"]  # every trial, every fold
            assert [len(t["params"]) for t in optuna["trials"]] == [12, 12]  # --quick: 12
            assert tpe["winners"] == optuna["winners"]
            assert tpe["outer_scores"] == optuna["outer_scores"]
            assert isinstance(workload["tpe"]["parcv-tpe-b2"]["tied"], bool)
        pruned, optuna = rows["parcv-tpe-hyperband"], rows["optuna-tpe-hyperband"]
        if pruned["ran"] and optuna["ran"]:  # batch 1: Optuna's study, pruned trials and all
            same = workload["tpe_hyperband"]["parcv-tpe-hyperband"]
            assert same["same_trials"] == same["same_winner"] == same["n_outer"] == 2, workload
            assert pruned["trials"] == optuna["trials"]
            assert [len(t["states"]) for t in optuna["trials"]] == [4, 4]  # a trial a candidate
            assert isinstance(workload["tpe_hyperband"]["parcv-tpe-hyperband-b2"]["tied"], bool)
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("== ") for line in lines) == 3 + 1  # a table each, a summary
    for method in ITERATION_METHODS:
        assert sum(line.startswith(f"{method} ") for line in lines) == 3 + 1, method
    assert "target 1" in proc.stdout or "targets: no parcv method" in proc.stdout
    assert set(report["summary"]["methods"]) == set(ITERATION_METHODS)
    if "parcv-tpe-hyperband" not in missing and hasattr(parcv, "Sampler"):  # issue 51's
        assert "target 5 (parcv-tpe-hyperband, batch 1: wall <= 0.7x" in proc.stdout
        assert "target 6 (parcv-tpe-hyperband-b2, batch 2: wall <= 0.6x" in proc.stdout


def test_tpe_rows_are_compared_with_optuna_fold_by_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    iterations = _bench_module(monkeypatch, "iterations")
    Row = iterations.Row
    trials = [{"params": [{"a": 1}, {"a": 2}], "values": [0.5, 0.7]},
              {"params": [{"a": 2}, {"a": 1}], "values": [0.6, 0.8]}]  # fmt: skip
    other = [trials[0], {"params": [{"a": 2}, {"a": 2}], "values": [0.6, 0.6]}]
    optuna = Row("optuna", ran=True, fit_time=10.0, wall_time=20.0, outer_scores=[0.9, 0.8],
                 winners=[{"a": 2}, {"a": 1}], trials=trials)  # fmt: skip
    equal = Row("parcv-tpe", ran=True, fit_time=10.0, wall_time=12.0, outer_scores=[0.9, 0.8],
                winners=[{"a": 2}, {"a": 1}], trials=trials)  # fmt: skip
    batched = Row("parcv-tpe-b2", ran=True, fit_time=11.0, wall_time=11.0,
                  outer_scores=[0.95, 0.7], winners=[{"a": 2}, {"a": 2}], trials=other)  # fmt: skip
    compared = iterations.compare_tpe([optuna, equal, batched], 2)
    assert compared["parcv-tpe"] == {"batch": 1, "n_outer": 2, "same_trials": 2,
                                     "same_winner": 2, "wall_ratio": 0.6, "fit_ratio": 1.0,
                                     "tied": True, "busy": 10.0 / (2 * 12.0), "bound": None,
                                     "target_met": None}  # fmt: skip
    b2 = compared["parcv-tpe-b2"]
    assert (b2["same_trials"], b2["same_winner"], b2["wall_ratio"]) == (1, 1, 0.55)
    assert (b2["bound"], b2["target_met"]) == (0.6, True)  # target 4 on this workload
    # d = (0.05, -0.1): |mean| 0.025 is within one paired standard error (0.075).
    assert b2["tied"] is True
    assert iterations.compare_tpe([equal, batched], 2) == {}  # no Optuna row: nothing to compare
    summary = iterations.summarize_tpe([{"tpe": compared}, {"tpe": {}}])
    assert (summary["equal"], summary["equal_runs"], summary["target_equal"]) == (1, 1, False)
    assert (summary["fast_and_tied"], summary["target_fast"]) == (1, False)
    alone = iterations.summarize_tpe([{"tpe": compared}])
    assert alone["target_equal"] and alone["target_fast"] and alone["median_wall_ratio"] == 0.55


def test_one_outer_fold_apart_is_tied_whatever_the_rounding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With one outer fold of 3 apart by x (one test row of n), |mean(d)| = x / 3 is the
    # paired standard error exactly: at the boundary, tied. Compared as floats, 282 of these
    # 2,700 comparisons were not.
    iterations = _bench_module(monkeypatch, "iterations")
    for n in range(150, 600):
        for fold in range(3):
            a = [0.95, 0.96, 0.97]
            b = list(a)
            b[fold] += 1 / n
            assert iterations.tied(a, b) and iterations.tied(b, a), (n, fold)
    assert not iterations.tied([0.9421, 0.9684, 0.9683], [0.9474, 0.9737, 0.9683])
    assert iterations.tied([0.9867, 0.99, 0.99], [0.9867, 0.9933, 0.99])


def test_tpe_hyperband_rows_are_compared_with_optunas_pruned_study(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    iterations = _bench_module(monkeypatch, "iterations")
    Row = iterations.Row
    # A pruned trial's record: its state and reports too, not only its parameters and value.
    study = {
        "params": [{"a": 1}, {"a": 2}],
        "states": ["COMPLETE", "PRUNED"],
        "intermediate": [[[10, 0.5], [20, 0.7]], [[10, 0.4]]],
        "values": [0.7, 0.4],
    }
    pruned_later = {**study, "states": ["COMPLETE", "COMPLETE"],
                    "intermediate": [[[10, 0.5], [20, 0.7]], [[10, 0.4], [20, 0.6]]],
                    "values": [0.7, 0.6]}  # fmt: skip
    optuna = Row("optuna-tpe-hyperband", ran=True, fit_time=10.0, wall_time=20.0,
                 outer_scores=[0.9, 0.8, 0.85], winners=[{"a": 1}] * 3,
                 trials=[study] * 3)  # fmt: skip
    b1 = Row("parcv-tpe-hyperband", ran=True, fit_time=8.0, wall_time=10.0,
             outer_scores=[0.9, 0.8, 0.85], winners=[{"a": 1}] * 3,
             trials=[study, study, pruned_later])  # fmt: skip
    b2 = Row("parcv-tpe-hyperband-b2", ran=True, fit_time=9.0, wall_time=13.0,
             outer_scores=[0.8, 0.7, 0.75], winners=[{"a": 2}] * 3, trials=[study] * 3)  # fmt: skip
    other_study = Row("parcv-tpe", ran=True, wall_time=1.0, fit_time=1.0)
    compared = iterations.compare_tpe([optuna, b1, b2, other_study], 2, "tpe_hyperband")
    assert list(compared) == ["parcv-tpe-hyperband", "parcv-tpe-hyperband-b2"]
    assert compared["parcv-tpe-hyperband"] == {"batch": 1, "n_outer": 3, "same_trials": 2,
                                               "same_winner": 3, "wall_ratio": 0.5,
                                               "fit_ratio": 0.8, "tied": True, "busy": 0.4,
                                               "bound": 0.7, "target_met": True}  # fmt: skip
    # Batch 2: 0.65x Optuna's wall (bound 0.6) and 0.1 lower in every outer fold.
    c2 = compared["parcv-tpe-hyperband-b2"]
    assert (c2["wall_ratio"], c2["tied"], c2["target_met"]) == (0.65, False, False)
    assert iterations.compare_tpe([b1, b2], 2, "tpe_hyperband") == {}  # no Optuna study

    # The summary: two workloads, the second without the batch-2 row.
    workloads = [
        {"tpe_hyperband": compared},
        {
            "tpe_hyperband": {
                "parcv-tpe-hyperband": {
                    **compared["parcv-tpe-hyperband"],
                    "same_trials": 3,
                    "wall_ratio": 0.9,
                }
            }
        },
    ]
    summary = iterations.summarize_tpe_hyperband(workloads)
    s1, s2 = summary["parcv-tpe-hyperband"], summary["parcv-tpe-hyperband-b2"]
    assert (s1["runs"], s1["equal"], s1["met"], s1["tied"]) == (2, 1, 1, 2)
    assert (s1["median_wall_ratio"], s1["max_wall_ratio"]) == (pytest.approx(0.7), 0.9)
    assert not s1["equal_everywhere"] and not s1["met_everywhere"]
    assert (s2["runs"], s2["met"], s2["met_everywhere"]) == (1, 0, False)  # fmt: skip
    assert iterations.summarize_tpe_hyperband(workloads[:1])["parcv-tpe-hyperband"][
        "met_everywhere"
    ]
    iterations._print_tpe_hyperband_targets(summary, 2)
    printed = capsys.readouterr().out
    assert "target 5 (parcv-tpe-hyperband, batch 1: wall <= 0.7x optuna-tpe-hyperband's, " \
           "outer tied): 1/2 workloads" in printed  # fmt: skip
    assert "target 6 (parcv-tpe-hyperband-b2, batch 2: wall <= 0.6x" in printed
    assert printed.count("met: False") == 2
    # Equality with Optuna's study is counted for batch 1 only: batch 2 proposes others.
    assert printed.count("Optuna's trials and winner in every outer fold: 1/2") == 1


def test_study_trials_keeps_states_reports_and_a_pruned_trials_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    optuna = pytest.importorskip("optuna")
    iterations = _bench_module(monkeypatch, "iterations")
    study = optuna.create_study(direction="maximize", study_name="parcv")
    space = {"a": optuna.distributions.CategoricalDistribution([1, 2])}
    for a, reports, state in ((1, [(20, 0.7), (10, 0.5)], "COMPLETE"), (2, [(10, 0.4)], "PRUNED")):
        study.enqueue_trial({"a": a})
        trial = study.ask(space)
        for step, value in reports:
            trial.report(value, step)
        if state == "PRUNED":
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, 0.7)
    assert iterations.study_trials(study) == {
        "params": [{"a": 1}, {"a": 2}],
        "states": ["COMPLETE", "PRUNED"],
        "intermediate": [[[10, 0.5], [20, 0.7]], [[10, 0.4]]],  # by step
        "values": [0.7, 0.4],  # Optuna gives a pruned trial its last report
    }


@pytest.mark.slow
def test_driver_quick_splits_a_search_call_and_measures_its_report_load_and_the_big_plan(
    tmp_path: Path,
) -> None:
    import pstats

    script = SCRIPT.parent / "driver.py"
    saved, prof = tmp_path / "driver.json", tmp_path / "prof"
    args = ["--quick", "--backends", "local", "--call", "search", "--split"]
    args += ["--json", str(saved), "--profile", str(prof)]
    printed = _run_script(script, args, tmp_path).stdout
    report = json.loads(saved.read_text())
    (run,) = report["runs"]  # parcv.search: 4 candidates x 5 folds + 1, by this checkout
    assert run["units"] == 21 and run["call"] == "search"
    assert run["load"]["finished"] and run["report"]["rc"] == 0
    assert Path(run["driver"]["parcv"]).parent == SCRIPT.parents[2] / "parcv"
    assert run["driver"]["cpu"] > 0 and run["driver"]["peak_mb"] >= run["driver"]["base_mb"]
    split, cpu = run["driver"]["split"], run["driver"]["cpu"]
    assert set(split) == {"plan", "keys", "store", "loop", "results"}
    # Each stage's own CPU, the stages inside it left out: together at most the call's.
    assert all(v > 0 for v in split.values()) and sum(split.values()) <= cpu
    assert "21 units, parcv.search, local pool" in printed and "|   store (us/unit) |" in printed
    assert "| units stored | 21 |" in printed and "| driver CPU (us/unit) |" in printed
    (plan,) = report["plans"]  # 20 draws x (10 x 10 + 10) + 11 units
    assert plan["units"] == 2211 and plan["inspect"]["rc"] == 0
    assert plan["first_unit"]["first_s"] > 0
    assert "| parcv inspect wall (s) |" in printed
    (stats,) = prof.glob("*.pstats")  # a cProfile of the driver, its top printed
    assert pstats.Stats(str(stats)).total_calls > 0
    assert "top 25 by tottime" in printed


@pytest.mark.slow
def test_code_digest_keys_every_module_of_the_generated_package(tmp_path: Path) -> None:
    proc = _run_script(SCRIPT.with_name("code_digest.py"), ["--modules", "12"], tmp_path)
    row = next(x for x in proc.stdout.splitlines() if x.startswith("now "))
    first, again, modules = row.split()[1:4]
    # The package's 12 modules and its __init__: the estimator reaches every one.
    assert int(modules) == 13 and float(first) > 0 and float(again) > 0
    assert "target: < 1 s per run" in proc.stdout


def test_store_layout_writes_the_same_units_each_way(tmp_path: Path) -> None:
    args = ["--units", "1000", "--chunk", "100"]
    printed = _run_script(SCRIPT.with_name("store_layout.py"), args, tmp_path).stdout
    rows = {line.split(" | ")[0].strip("| "): line for line in printed.splitlines() if "|" in line}
    assert {"per unit (schema 5)", "per chunk", "per chunk + key index"} <= set(rows)
    assert "1,000 units in chunks of 100" in printed


@pytest.mark.slow
def test_pruning_quick_rows_equal_optunas_study_at_batch_one(tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    out = tmp_path / "pruning.json"
    proc = _run_script(SCRIPT.with_name("pruning.py"), ["--quick", "--json", str(out)], tmp_path)
    rows = json.loads(out.read_text())
    assert list(rows) == ["optuna-tpe-hyperband", "parcv-tpe-hyperband", "parcv-tpe-hyperband-b2"]
    # Batch 1: each outer fold's study (trials, states, intermediate values) is Optuna's.
    assert rows["parcv-tpe-hyperband"]["same"] == 3
    assert rows["parcv-tpe-hyperband"]["outer"] == rows["optuna-tpe-hyperband"]["outer"]
    assert all(len(r["outer"]) == 3 and r["wall"] > 0 for r in rows.values())
    assert "targets: batch 1 wall <= 0.7x" in proc.stdout
