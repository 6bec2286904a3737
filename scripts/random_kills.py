"""SIGKILL a resumed sweep's driver many times; check its store and result after each round.

The long run of ``tests/store/test_lock.py``'s random-kill property, whose test runs a
slice of 6 kills: each round kills the driver of a nested-CV sweep (a subprocess, serial
backend, 80 units) ``--kills`` times at random moments, some while it starts and some
after it has stored a record, then resumes it once more and checks that the store passes
SQLite's integrity check, holds every unit, and gives the outer scores of a run never
killed. Prints each round's records after each kill, and exits 1 on any failed check.

    python scripts/random_kills.py                          # 5 rounds of 20 kills
    python scripts/random_kills.py --rounds 20 --kills 10 --seed 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.store.test_lock import (  # noqa: E402
    check_resumes_to_the_uninterrupted_result,
    random_kills,
)


def main(argv: list[str] | None = None) -> int:
    """Run the rounds; 0 when every one holds, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="stores to kill (default 5)")
    parser.add_argument("--kills", type=int, default=20, help="kills per store (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    failed = 0
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="random-kills-") as folder:
            store = Path(folder) / "run.sqlite"
            counts = random_kills(store, args.kills, seed=args.seed * 1000 + r)
            try:
                check_resumes_to_the_uninterrupted_result(store, Path(folder))
                outcome = "ok"
            except AssertionError:
                failed += 1
                outcome = "FAILED\n" + traceback.format_exc()
            print(f"round {r}: records after each kill {counts}: {outcome}", flush=True)
    print(f"{args.rounds - failed} of {args.rounds} rounds held, {failed} failed")
    return int(bool(failed))


if __name__ == "__main__":
    sys.exit(main())
