"""Benchmark nested CV: parcv against scikit-learn's idioms, joblib-dask and dask-ml.

Run ``python scripts/bench/nested.py --help``; see scripts/bench/README.md.
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits
from tools import (
    LAST_COMPUTE,
    DaskCluster,
    Tool,
    Workload,
    make_tools,
    make_workload,
    run_serial,
    time_call,
    warm_up,
)

# Issue 3's targets on the ratio wall / ideal (W3: efficiency ideal / wall >= 0.9).
RATIO_TARGETS = {
    ("W1", "parcv-local"): 1.05,
    ("W1", "parcv-dask"): 1.15,
    ("W2", "parcv-local"): 1.2,
    ("W2", "parcv-dask"): 2.0,
}
EFFICIENCY_TARGET = 0.9
PARCV = ("parcv-local", "parcv-dask")
NOT_COMPARED = (*PARCV, "ideal", "parcv-serial", "floor-loky", "floor-dask")


_STARTED = time.perf_counter()


def _log(message: str) -> None:
    print(f"[{time.perf_counter() - _STARTED:7.1f}s] {message}", flush=True)


@dataclass
class Row:
    """Measurements of one tool on one workload, one entry per round."""

    tool: str
    walls: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    same: list[bool] = field(default_factory=list)
    busy: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def ran(self) -> bool:
        return bool(self.walls)

    def to_dict(self) -> dict[str, Any]:
        med = statistics.median
        return {
            "tool": self.tool,
            "ran": self.ran,
            "wall_median": med(self.walls) if self.ran else None,
            "ratio_median": med(self.ratios) if self.ran else None,
            "efficiency_median": med(1 / r for r in self.ratios) if self.ran else None,
            "same_scores": all(self.same) if self.same else None,
            "busy_median": med(self.busy) if self.busy else None,
            "busy": self.busy,
            "walls": self.walls,
            "ratios": self.ratios,
            "note": self.note,
        }


def _add(row: Row, wall: float, ideal: float, scores: np.ndarray | None, ref: np.ndarray) -> None:
    row.walls.append(wall)
    row.ratios.append(wall / ideal)
    same = "-" if scores is None else str(bool(np.array_equal(scores, ref)))
    if scores is not None:  # a floor computes no scores
        row.same.append(same == "True")
    _log(f"  {row.tool:14s} {wall:8.3f} s  ratio {wall / ideal:6.2f}  same_scores {same}")


def _measure(tool: Tool, workload: Workload, ideal: float, ref: np.ndarray, row: Row) -> None:
    try:
        warm_up(tool.run, workload.job)
        wall, scores = time_call(tool, workload.job)
    except Exception as err:  # a failing tool is reported, not hidden
        row.note = f"error: {type(err).__name__}: {err}"[:200]
        _log(f"  {tool.name:14s} {row.note}")
        return
    _add(row, wall, ideal, scores, ref)
    if tool.name in PARCV and workload.nominal_ideal is None:
        # The workers' own fit + score time over cores x wall: how busy parcv kept them,
        # whatever the machine's speed did since the serial reference was timed.
        row.busy.append(LAST_COMPUTE[0] / (workload.job.n_jobs * wall))
        _log(f"  {'':14s} busy {row.busy[-1]:.2f}")


def _serial_round(
    workload: Workload, rows: dict[str, Row], ref: np.ndarray | None
) -> tuple[np.ndarray, float]:
    """Run the serial reference when needed; return the reference scores and the ideal."""
    if workload.nominal_ideal is not None and ref is not None:
        return ref, workload.nominal_ideal  # W3: nothing drifts, one serial run suffices
    started = time.perf_counter()
    scores, compute = run_serial(workload.job)
    wall = time.perf_counter() - started
    ideal = workload.nominal_ideal or compute / workload.job.n_jobs
    ref = scores if ref is None else ref
    _add(rows["parcv-serial"], wall, ideal, scores, ref)
    return ref, ideal


def _blocks(
    runnable: list[Tool], cluster: DaskCluster | None, reverse: bool
) -> list[tuple[list[Tool], DaskCluster | None]]:
    """The tools in two blocks: the loky ones, then the dask ones with their cluster running.

    ``reverse`` runs everything in the opposite order (the dask block first).
    """
    blocks = [
        ([t for t in runnable if t.family != "dask"], None),
        ([t for t in runnable if t.family == "dask"], cluster),
    ]
    if reverse:
        blocks = [(tools[::-1], c) for tools, c in blocks[::-1]]
    return [(tools, c) for tools, c in blocks if tools]


def bench_workload(
    workload: Workload,
    tools: list[Tool],
    repeats: int,
    *,
    cluster: DaskCluster | None = None,
    first_round: int = 0,
) -> dict[str, Any]:
    """Time every tool on ``workload`` in ``repeats`` rounds, alternating their order.

    The dask ``cluster`` runs only while the dask tools run (it is paused otherwise): the
    serial reference and the loky tools run without its processes taking a share of the
    cores.
    ``first_round`` counts the rounds already run for earlier workloads, so the
    order keeps alternating across workloads (fewer loky pool hand-overs).
    """
    rows = {name: Row(name) for name in ("ideal", "parcv-serial", *(t.name for t in tools))}
    for tool in tools:
        rows[tool.name].note = tool.why_not
    runnable = [t for t in tools if not t.why_not]
    ref: np.ndarray | None = None
    _log(f"{workload.name}: {workload.title}")
    for round_ in range(repeats):
        _log(f" round {round_ + 1}/{repeats}")
        ref, ideal = _serial_round(workload, rows, ref)
        _add(rows["ideal"], ideal, ideal, ref, ref)
        # Reverse the order every other round: drift and pool hand-overs hit every tool alike.
        for block, up in _blocks(runnable, cluster, (first_round + round_) % 2 == 1):
            with up.running() if up is not None else contextlib.nullcontext():
                for tool in block:
                    _measure(tool, workload, ideal, ref, rows[tool.name])
    return {
        "workload": workload.name,
        "title": workload.title,
        "n_jobs": workload.job.n_jobs,
        "n_units": workload.n_units,
        "rows": [row.to_dict() for row in rows.values()],
    }


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(result: dict[str, Any], repeats: int) -> None:
    """Print one workload's table."""
    print()
    print(
        f"== {result['workload']}: {result['title']}; {result['n_jobs']} workers/cores, "
        f"{result['n_units']} fits, median of {repeats} round(s) =="
    )
    print(f"{'tool':14s} {'wall_s':>9s} {'ratio':>7s} {'eff':>6s} {'busy':>5s}  same_scores")
    for row in result["rows"]:
        same = "ref" if row["tool"] == "ideal" else _fmt(row["same_scores"], "")
        cells = [
            f"{_fmt(row['wall_median'], '.3f'):>9s}",
            f"{_fmt(row['ratio_median'], '.2f'):>7s}",
            f"{_fmt(row['efficiency_median'], '.2f'):>6s}",
            f"{_fmt(row['busy_median'], '.2f'):>5s}",
        ]
        line = f"{row['tool']:14s} {' '.join(cells)}  {same}"
        print(line + (f"  ({row['note']})" if row["note"] else ""))


def _limit_check(name: str, tool: str, ratio: float | None) -> dict[str, Any]:
    if name == "W3":
        value = None if ratio is None else 1 / ratio
        target, ok = f"efficiency >= {EFFICIENCY_TARGET:.2f}", (lambda v: v >= EFFICIENCY_TARGET)
    else:
        value, limit = ratio, RATIO_TARGETS[(name, tool)]
        target, ok = f"ratio <= {limit:.2f}", (lambda v: v <= limit)
    return {
        "target": f"{name} {tool} {target}",
        "measured": _fmt(value, ".2f"),
        "pass": None if value is None else bool(ok(value)),
    }


def _fastest_check(name: str, tool: str, ratio: float | None, rows: list[Any]) -> dict[str, Any]:
    others = [r for r in rows if r["ran"] and r["tool"] not in NOT_COMPARED]
    best = min(others, key=lambda r: r["ratio_median"], default=None)
    check: dict[str, Any] = {"target": f"{name} {tool} faster than every other tool"}
    if ratio is None or best is None:
        return {**check, "measured": "-", "pass": None}
    measured = f"{ratio:.2f} vs best other {best['tool']} {best['ratio_median']:.2f}"
    return {**check, "measured": measured, "pass": ratio < best["ratio_median"]}


def check_targets(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evaluate issue 3's targets on the median ratios; missing data gives ``None``."""
    checks = []
    for result in results:
        name, rows = result["workload"], result["rows"]
        for tool in PARCV:
            ratio = next(r["ratio_median"] for r in rows if r["tool"] == tool)
            checks.append(_limit_check(name, tool, ratio))
            checks.append(_fastest_check(name, tool, ratio, rows))
    return checks


def print_targets(checks: list[dict[str, Any]]) -> None:
    """Print every target with its measured value and PASS / FAIL / n/a."""
    print("\n== targets (issue 3; ratio = median over rounds of wall / same-round ideal) ==")
    for check in checks:
        verdict = {True: "PASS", False: "FAIL", None: "n/a"}[check["pass"]]
        print(f"{verdict:5s} {check['target']}: {check['measured']}")


def write_json(path: Path | None, results: list[dict[str, Any]]) -> None:
    """Write the results and the target checks so far to ``path`` (if given)."""
    if path is not None:
        report = {"results": results, "targets": check_targets(results)}
        path.write_text(json.dumps(report, indent=2))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=["W1", "W2", "W3", "all"], default="all")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (median reported)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="cores for W1/W2 (default: every core)",
    )
    parser.add_argument(
        "--w3-workers",
        type=int,
        default=None,
        help="workers for W3 (default 16; --n-jobs with --quick)",
    )
    parser.add_argument("--no-dask", action="store_true", help="skip the dask tools")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args(argv)
    if args.w3_workers is None:
        args.w3_workers = args.n_jobs if args.quick else 16
    return args


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run the chosen workloads; a dask cluster runs only for the dask tools.

    Workloads with the same number of workers share one cluster (W1 and W2; all three
    with ``--quick``): a new one would only add its start-up and its workers' imports.
    """
    names = ["W1", "W2", "W3"] if args.workload == "all" else [args.workload]
    results: list[dict[str, Any]] = []
    cluster: DaskCluster | None = None
    try:
        for name in names:
            workload = make_workload(
                name, quick=args.quick, n_jobs=args.n_jobs, w3_workers=args.w3_workers
            )
            if not args.no_dask and getattr(cluster, "n_workers", None) != workload.job.n_jobs:
                if cluster is not None:
                    cluster.close()
                cluster = None  # not left set to a closed cluster if the next one fails
                cluster = DaskCluster(workload.job.n_jobs)
            tools = make_tools(cluster, floors=name == "W3")
            first_round = len(results) * args.repeats
            result = bench_workload(
                workload, tools, args.repeats, cluster=cluster, first_round=first_round
            )
            results.append(result)
            write_json(args.json, results)  # after every workload: a crash keeps what ran
    finally:
        if cluster is not None:
            cluster.close()
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 if a tool failed or disagreed on the outer scores."""
    args = parse_args(argv)
    with threadpool_limits(limits=1):
        results = run(args)
    for result in results:
        print_table(result, args.repeats)
    checks = check_targets(results)
    print_targets(checks)
    print(
        "\nparcv runs with refit=False: nested CV only, the same fits as scikit-learn's "
        "nested idiom (no all-data search)."
    )
    write_json(args.json, results)
    bad = [
        r
        for res in results
        for r in res["rows"]
        if r["note"].startswith("error") or r["same_scores"] is False
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
