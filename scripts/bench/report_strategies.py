"""The report of a sampler's search beside a grid search's of the same size (issue 48).

Target: a sampler run's report within 1.5x a grid run's with the same number of fits.
Each case runs two searches of diabetes (442 rows) with ``cv=5`` into stores: a grid of
N candidates, and ``Sampler("tpe", n_trials=N, seed=0)`` over the same parameters as
distributions, so both store N x 5 fits + 1 refit. Then, in this one process and
alternating grid and sampler in each round, it times ``rebuild_report`` (``parcv report
DIR``: load the store, write results.json, report.md and report.html) three ways per
run: in this process as text only (``[report] plots = false``) and with every plot, and
as ``parcv report DIR`` in a fresh process (imports included, as a user runs it). Printed:
each report's CPU seconds (user + system, which waiting for a shared machine does not
inflate; the fastest of the rounds) and wall seconds, and the ratio sampler / grid.

Cases: ``1 param`` (Ridge, alpha: the case the issue measured, where fANOVA's parameter
importances of a one-parameter space took 22 of 41 s) and ``2 params`` (ElasticNet, alpha x
l1_ratio: fANOVA runs, at Optuna's defaults of 64 trees).

    python scripts/bench/report_strategies.py                 # N = 60, 3 rounds (~2 min)
    python scripts/bench/report_strategies.py --n 200 --repeats 2
    python scripts/bench/report_strategies.py --quick         # smoke run: N = 6, one round
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import loguniform, uniform
from sklearn.datasets import load_diabetes
from sklearn.linear_model import ElasticNet, Ridge

import parcv
from parcv.report.run_dir import rebuild_report
from parcv.report.text import RunInfo

TARGET = 1.5


@dataclass(frozen=True)
class Case:
    """Two searches of the same size: ``grid`` and a sampler over ``space``."""

    name: str
    estimator: Any
    grid: dict[str, list[float]]
    space: dict[str, Any]


def _cases(n: int) -> list[Case]:
    side = max(2, round(n**0.5))
    return [
        Case("1 param", Ridge(), {"alpha": list(np.geomspace(1e-3, 1e3, n))},
             {"alpha": loguniform(1e-3, 1e3)}),
        Case("2 params", ElasticNet(max_iter=5000),
             {"alpha": list(np.geomspace(1e-3, 1.0, side)),
              "l1_ratio": list(np.linspace(0.05, 1.0, max(2, n // side)))},
             {"alpha": loguniform(1e-3, 1.0), "l1_ratio": uniform(0.05, 0.95)}),
    ]  # fmt: skip


def _run(case: Case, strategy: str, out: Path) -> int:
    """Run one search into ``out/store.sqlite``; return its number of fits."""
    X, y = load_diabetes(return_X_y=True)
    n_fits = len(case.grid["alpha"]) * len(case.grid.get("l1_ratio", [None])) * 5
    if strategy == "grid":
        space, options = case.grid, {}
    else:
        sampler = parcv.Sampler("tpe", n_trials=n_fits // 5, seed=0)
        space, options = case.space, {"strategy": sampler}
    out.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ElasticNet's convergence warnings at tiny alphas
        parcv.search(case.estimator, space, X, y, cv=5, backend="serial",
                     store=out / "store.sqlite", **options)  # fmt: skip
    return n_fits


def _write_info(run: Path, *, plots: bool) -> None:
    info = RunInfo(run.name, plots=plots)
    (run / "run.json").write_text(json.dumps(info.to_dict()), encoding="utf-8")


def _time_report(run: Path, way: str) -> tuple[float, float]:
    """CPU and wall seconds of the report of ``run``, made ``way`` (a key of :data:`WAYS`)."""
    _write_info(run, plots=way != "text")
    if way == "cli":  # a fresh process, as a user runs it: its own usage (os.wait4)
        wall = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "parcv.cli", "report", str(run)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"parcv report {run} failed")
        return usage.ru_utime + usage.ru_stime, time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rebuild_report(run)
    return time.process_time() - cpu, time.perf_counter() - wall


WAYS = {
    "text": "in process, no plots",
    "plots": "in process, plots",
    "cli": "parcv report DIR",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="candidates / trials (default 60)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="smoke run: --n 6 --repeats 1")
    args = parser.parse_args()
    n, repeats = (6, 1) if args.quick else (args.n, args.repeats)
    work = Path(tempfile.mkdtemp(prefix="parcv-bench-"))
    try:
        cases = _cases(n)
        runs = {(c.name, s): work / f"{c.name.replace(' ', '-')}-{s}" for c in cases
                for s in ("grid", "sampler")}  # fmt: skip
        fits = {key: _run(c, key[1], run) for c in cases for key, run in runs.items()
                if key[0] == c.name}  # fmt: skip
        _time_report(next(iter(runs.values())), "plots")  # warm-up: imports, fonts
        best: dict[tuple[str, str, str], tuple[float, float]] = {}
        for _ in range(repeats):
            for key, run in runs.items():  # grid and sampler alternate, case by case
                for way in WAYS:
                    took = _time_report(run, way)
                    was = best.get((*key, way), (np.inf, np.inf))
                    best[(*key, way)] = (min(was[0], took[0]), min(was[1], took[1]))
        print(f"diabetes, cv=5, serial; fastest of {repeats} round(s); BLAS threads pinned to 1")
        print(f"{'case':10}{'report':22}{'fits':>6}{'grid CPU s':>12}{'sampler CPU s':>15}"
              f"{'ratio':>8}{'grid wall s':>13}{'sampler wall s':>16}")  # fmt: skip
        worst = dict.fromkeys(WAYS, 0.0)
        for case in cases:
            for way, shown in WAYS.items():
                g, s = best[(case.name, "grid", way)], best[(case.name, "sampler", way)]
                ratio = s[0] / g[0]
                worst[way] = max(worst[way], ratio)
                print(f"{case.name:10}{shown:22}{fits[(case.name, 'grid')]:>6}{g[0]:>12.3f}"
                      f"{s[0]:>15.3f}{ratio:>8.2f}{g[1]:>13.3f}{s[1]:>16.3f}")  # fmt: skip
        for way in ("cli", "plots"):
            met = "met" if worst[way] <= TARGET else "MISSED"
            print(f"worst ratio sampler / grid, {WAYS[way]}: {worst[way]:.2f} "
                  f"(target <= {TARGET}: {met})")  # fmt: skip
        print("(in process: load the store, write results.json, report.md, report.html and the "
              "plots, imports done; the sampler's report draws 4 plots, the grid's 2. parcv "
              "report DIR: the same in a fresh process, imports included)")  # fmt: skip
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
