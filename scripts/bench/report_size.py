"""Benchmark a large run directory: its size on disk and the cost of ``parcv report``.

Issue 20's target is a 100,001-unit run (a search of 20,000 candidates x 5 folds plus the
final refit): directory < 30 MB, ``parcv report`` < 5 s and < 500 MB. The estimator is
``DummyRegressor(strategy="constant")`` with one candidate per constant, so the fits cost
nothing and the run measures parcv's own bookkeeping. ``--candidates`` sets the size
(default 4,000: a 20,001-unit run, quick on a shared 2-core machine); the printed
per-unit figures extrapolate linearly to 100,001 units (size and report time grow with the
number of records).

Each step is a fresh ``parcv`` process: ``parcv run`` (local pool, 2 workers), then
``parcv report`` on the run directory, timed by wall clock with its peak RSS
(``ru_maxrss`` of the child). Printed side by side: the directory's files and sizes, and
the report's time and memory, measured and extrapolated.

Run: python scripts/bench/report_size.py [--candidates 4000] [--keep DIR]
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_UNITS = 100_001


def _spec(n_candidates: int) -> str:
    constants = ", ".join(f"{c / 10:.1f}" for c in range(n_candidates))
    return (
        '[data]\nsource = "sklearn:diabetes"\n\n'
        '[estimator]\nclass = "sklearn.dummy.DummyRegressor"\n'
        'params = { strategy = "constant" }\n\n'
        f"[space]\nconstant = [{constants}]\n\n"
        "[cv]\ncv = 5\n\n[report]\nplots = false\n"
    )


def _child(cmd: list[str]) -> tuple[float, float]:
    """Run a parcv command; return (wall seconds, peak RSS MB of that child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(after, before) / 1024  # the largest child so far: report runs last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=4_000)
    parser.add_argument("--keep", help="run directory to keep (default: a temporary one)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="parcv-bench-"))
    out = Path(args.keep) if args.keep else work / "run"
    spec = work / "big.toml"
    spec.write_text(_spec(args.candidates))
    parcv = [sys.executable, "-m", "parcv.cli"]
    n_units = args.candidates * 5 + 1
    run_s, _ = _child([*parcv, "run", str(spec), "--out", str(out), "--backend", "local",
                       "--n-jobs", "2", "--quiet", "--overwrite"])  # fmt: skip
    report_s, report_mb = _child([*parcv, "report", str(out)])
    sizes = {p.name: p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
    total = sum(sizes.values())
    scale = TARGET_UNITS / n_units
    print(f"run: {n_units:,} units in {run_s:.1f} s ({out})")
    print(f"{'file':32}{'MB':>10}{'x100,001/n MB':>16}")
    for name, size in sizes.items():
        print(f"{name:32}{size / 1e6:>10.2f}{size * scale / 1e6:>16.1f}")
    print(f"{'run directory':32}{total / 1e6:>10.2f}{total * scale / 1e6:>16.1f}   target < 30")
    print(f"{'parcv report (s)':32}{report_s:>10.2f}{report_s * scale:>16.1f}   target < 5")
    print(f"{'parcv report peak RSS (MB)':32}{report_mb:>10.0f}{'':>16}   target < 500")
    print("(extrapolated columns scale linearly with the units; RSS is not extrapolated.)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
