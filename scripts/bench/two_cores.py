"""How much slower the same fits run when every core is busy: the bound under W1/W2's ratios.

Runs W1's or W2's serial reference alone, then one copy per core at once (no framework,
no scheduling, nothing shared), and prints each copy's summed fit + score time over the
lone run's. A ratio above 1 here is the machine's, not a tool's: with no scheduling cost
at all, a parallel run's wall / ideal would still be about this ratio.

    python scripts/bench/two_cores.py W2 --repeats 4
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import multiprocessing as mp
import os
import statistics
import sys
from typing import Any


def _compute(name: str, quick: bool, queue: Any) -> None:
    """Run the workload's serial reference; put its summed fit + score seconds."""
    from tools import make_workload, run_serial

    workload = make_workload(name, quick=quick, n_jobs=1, w3_workers=1)
    queue.put(run_serial(workload.job)[1])


def _at_once(ctx: Any, name: str, quick: bool, copies: int) -> list[float]:
    queue = ctx.Queue()
    procs = [ctx.Process(target=_compute, args=(name, quick, queue)) for _ in range(copies)]
    for proc in procs:
        proc.start()
    out = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    return out


def main(argv: list[str] | None = None) -> int:
    """Print, per repeat, the slowdown of one copy per core against one copy alone."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["W1", "W2"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--copies", type=int, default=os.cpu_count() or 1, help="default: cores")
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    args = parser.parse_args(argv)
    ctx = mp.get_context("spawn")
    ratios = []
    for _ in range(args.repeats):
        [alone] = _at_once(ctx, args.workload, args.quick, 1)
        together = _at_once(ctx, args.workload, args.quick, args.copies)
        ratios.append(statistics.mean(together) / alone)
        shown = ", ".join(f"{t:.4f}" for t in together)
        print(f"alone {alone:.4f} s; {args.copies} at once {shown} s; slowdown {ratios[-1]:.3f}")
    print(f"median slowdown {statistics.median(ratios):.3f} over {args.repeats} repeats")
    return 0


if __name__ == "__main__":
    sys.exit(main())
