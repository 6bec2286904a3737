"""Check resume against fresh runs over many generated packages and random edits (issue 47).

Draws ``--cases`` cases (a generated user package and one edit of it, every choice
uniform) from the generator in ``tests/soundness_programs.py``, runs each into a store,
edits it, resumes and runs afresh (in fresh processes, and in one process reloading the
edited modules), and prints the counts and each violation with its package and edit.
Exits 1 on any violation or failed check. The parcv under test is the one the drivers
import: this checkout, or a source tree named first in ``PYTHONPATH``.

    python scripts/resume_soundness.py                    # 300 cases
    python scripts/resume_soundness.py --cases 40 --seed 1
    PYTHONPATH=/tmp/parcv-head python scripts/resume_soundness.py --cases 40
    python scripts/resume_soundness.py --cases 40 --keep /tmp/failing   # their packages
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.soundness_programs import check_cases, random_cases, report, write_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the check; 0 when every case holds, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=300, help="cases to draw (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--batch", type=int, default=25,
                        help="cases run in the same processes (default 25)")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None,
                        help="write failing case N's package here, as case-N/")  # fmt: skip
    args = parser.parse_args(argv)
    cases = random_cases(args.cases, random_seed=args.seed)
    outcomes = []
    for start in range(0, len(cases), args.batch):
        with tempfile.TemporaryDirectory(prefix="resume-soundness-") as folder:
            outcomes += check_cases(cases[start : start + args.batch], Path(folder))
        done = sum(bool(o.violations) for o in outcomes)
        print(f"{len(outcomes)} of {len(cases)} cases run; {done} with violations",
              file=sys.stderr, flush=True)  # fmt: skip
    print(report(outcomes))
    failing = [o for o in outcomes if o.violations or o.problems]
    for i, outcome in enumerate(failing if args.keep else [], 1):  # numbered as the report
        write_case(outcome.case, args.keep / f"case-{i}")
    return int(bool(failing))


if __name__ == "__main__":
    sys.exit(main())
