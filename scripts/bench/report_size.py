"""Benchmark a large run directory: its size on disk and the cost of ``parcv report``.

Issue 20's target is a 100,001-unit run (a search of 20,000 candidates x 5 folds plus the
final refit): directory < 30 MB, ``parcv report`` < 5 s and < 500 MB. The estimator is
``DummyRegressor(strategy="constant")`` with one candidate per constant, so the fits cost
nothing and the run measures parcv's own bookkeeping. ``--candidates`` sets the size
(default 4,000: a 20,001-unit run; 20,000 gives the 100,001-unit run itself); the printed
per-unit figures extrapolate linearly to 100,001 units.

Each step is a fresh ``parcv`` process: ``parcv run`` (``--backend serial`` by default: with
fits this cheap the driver is the bottleneck, and a 100,001-unit run takes a few minutes),
then ``parcv report`` on the run directory (with its plots unless ``--no-plots``), measured
by ``os.wait4`` of that child alone: wall clock, CPU time (user + system, which waiting
for a busy shared machine does not inflate) and peak RSS. Printed side by side: the
directory's files and sizes, and the report's time and memory, measured and extrapolated.

Run: python scripts/bench/report_size.py [--candidates 20000] [--backend local] [--keep DIR]
     python scripts/bench/report_size.py --report-only DIR   (a directory kept before)
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET_UNITS = 100_001


def _spec(n_candidates: int, *, plots: bool) -> str:
    constants = ", ".join(f"{c / 10:.1f}" for c in range(n_candidates))
    return (
        '[data]\nsource = "sklearn:diabetes"\n\n'
        '[estimator]\nclass = "sklearn.dummy.DummyRegressor"\n'
        'params = { strategy = "constant" }\n\n'
        f"[space]\nconstant = [{constants}]\n\n"
        f"[cv]\ncv = 5\n\n[report]\nplots = {'true' if plots else 'false'}\n"
    )


@dataclass(frozen=True)
class Usage:
    """What one child process cost: wall seconds, CPU seconds and peak RSS."""

    wall: float
    cpu: float
    peak_mb: float


def _child(cmd: list[str]) -> Usage:
    """Run a parcv command; return its own usage (``os.wait4`` of that child alone)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return Usage(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def _count_units(store: Path) -> int:
    """The units of the store's run: its ``units`` rows, and its chunks' (schema 6 on)."""
    from parcv.store.readers import read_counts

    return read_counts(store)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=4_000)
    parser.add_argument("--backend", default="serial", choices=["serial", "local"])
    parser.add_argument("--no-plots", dest="plots", action="store_false",
                        help="leave out the report's plots ([report] plots = false)")  # fmt: skip
    parser.add_argument("--keep", help="run directory to keep (default: a temporary one)")
    parser.add_argument(
        "--report-only",
        metavar="DIR",
        help="measure only `parcv report` on a run directory kept before",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="parcv-bench-"))
    out = Path(args.report_only or args.keep or work / "run")
    parcv = [sys.executable, "-m", "parcv.cli"]
    if args.report_only:
        n_units, run = _count_units(out / "store.sqlite"), None
    else:
        spec = work / "big.toml"
        spec.write_text(_spec(args.candidates, plots=args.plots))
        n_units = args.candidates * 5 + 1
        jobs = ["--n-jobs", "2"] if args.backend == "local" else []
        run = _child([*parcv, "run", str(spec), "--out", str(out), "--backend", args.backend,
                      *jobs, "--quiet", "--overwrite"])  # fmt: skip
    report = _child([*parcv, "report", str(out)])
    sizes = {p.name: p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
    total = sum(sizes.values())
    scale = TARGET_UNITS / n_units
    took = "" if run is None else f" in {run.wall:.1f} s ({args.backend})"
    print(f"run: {n_units:,} units{took}; {out}")
    print(f"{'file':32}{'MB':>10}{'x100,001/n MB':>16}")
    for name, size in sizes.items():
        print(f"{name[:31]:32}{size / 1e6:>10.2f}{size * scale / 1e6:>16.1f}")
    print(f"{'run directory':32}{total / 1e6:>10.2f}{total * scale / 1e6:>16.1f}   target < 30")
    print(f"{'parcv report wall (s)':32}{report.wall:>10.2f}{report.wall * scale:>16.1f}   "
          "target < 5")  # fmt: skip
    print(f"{'parcv report CPU (s)':32}{report.cpu:>10.2f}{report.cpu * scale:>16.1f}")
    print(f"{'parcv report peak RSS (MB)':32}{report.peak_mb:>10.0f}{'':>16}   target < 500")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time "
          "includes waiting for the CPU; CPU time does not)")  # fmt: skip
    print("(extrapolated columns scale linearly with the units, an upper bound for the parts "
          "that do not grow; RSS is not extrapolated.)")  # fmt: skip
    if not (args.keep or args.report_only):
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
