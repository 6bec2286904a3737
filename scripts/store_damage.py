"""Damage and tamper with a finished run's store many times; count what load, report and resume do.

Each case damages a copy of one run's store (``tests/store/damage_cases.py``: pages
truncated, zeroed or flipped; tables emptied; rows of rounds, units, folds, chunks,
records and meta deleted, duplicated or edited), then loads it, reports it and resumes it.
Each must give the untampered result or one parcv error. Prints the counts and each
violation; exits 1 on any.

    python scripts/store_damage.py                 # 60 cases
    python scripts/store_damage.py --cases 200 --seed 1
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.store.damage_cases import (  # noqa: E402
    check_damage,
    make_template,
    random_damages,
    summarize,
)


def main(argv: list[str] | None = None) -> int:
    """Run the cases; 0 when every one holds, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=60, help="cases to draw (default 60)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # a damaged run's warnings are not what is counted
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="store-damage-") as folder:
        template = make_template(Path(folder))
        for i, damage in enumerate(random_damages(args.cases, args.seed)):
            case = Path(folder) / f"case-{i}"
            case.mkdir()
            outcomes.append(check_damage(template, damage, case))
            print(f"{i + 1} of {args.cases}: {damage} {outcomes[-1].verdicts}",
                  file=sys.stderr, flush=True)  # fmt: skip
    print(summarize(outcomes))
    return int(any(o.violations for o in outcomes))


if __name__ == "__main__":
    sys.exit(main())
