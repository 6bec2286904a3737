"""Count the Dask runs that survive losing their workers under CPU load (issue 52).

Each trial runs a sweep on the loopback ``LocalCluster`` parcv starts (two worker
processes with nannies), holds every core with busy loops once the cluster is up, and
either SIGKILLs both workers at once part-way (``kill``) or has one candidate segfault
every worker it touches (``segv``). A trial holds when the run finishes, every other
unit has a serial run's numbers and the killer's units are failed with their cause.
The trials are in ``tests/dask_survival.py``; the test suite runs one of each.

    python scripts/dask_survival.py                  # 10 trials of each case
    python scripts/dask_survival.py --trials 3 --cases segv
    python scripts/dask_survival.py --certain        # restarts slower than any timeout

Prints a line per trial and ``CASE: N of M finished, K held`` per case; exits 1
unless every trial held.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dask_survival import CASES, run_trial  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the trials; 0 when every one held, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10, help="trials per case (default 10)")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--certain", action="store_true",
                        help="make every restart slower than dask's lost-worker timeout "
                        "and no_worker_timeout, as the tests do")  # fmt: skip
    args = parser.parse_args(argv)
    lines, all_held = [], True
    with tempfile.TemporaryDirectory(prefix="dask-survival-") as folder:
        for case in args.cases:
            outcomes = []
            for trial in range(1, args.trials + 1):
                outcome = run_trial(case, Path(folder), certain=args.certain)
                outcomes.append(outcome)
                verdict = "held" if outcome.held else ("wrong" if outcome.finished else "stopped")
                detail = f": {outcome.problem}" if outcome.problem else ""
                print(f"{case} trial {trial}: {verdict} in {outcome.seconds:.0f} s{detail}",
                      flush=True)  # fmt: skip
            finished = sum(o.finished for o in outcomes)
            held = sum(o.held for o in outcomes)
            all_held &= held == len(outcomes)
            lines.append(f"{case}: {finished} of {len(outcomes)} finished, {held} held")
    print("\n".join(lines))
    return int(not all_held)


if __name__ == "__main__":
    sys.exit(main())
