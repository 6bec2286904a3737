"""Run every cell of the strategy matrix (issue 48) and print its table.

Rows are the strategies (parcv's strategy classes, each sampler kind, grid and random
search, strategies of one's own), columns the entry points and the consumers of a
result, on the serial backend and the local pool; see ``tests/strategy_matrix.py``.
Prints one line per cell, then the counts, the refusals with their documented reason
and the cells that do not apply. Exits 1 when a cell fails. CI runs a slice of it
(``tests/strategies/test_matrix.py``).

    python scripts/strategy_matrix.py                       # every cell
    python scripts/strategy_matrix.py --backend serial --case grid --case "sampler tpe"
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(name, "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import strategy_matrix as matrix  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the cells asked for; 0 when none fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help="only these rows (by name)")
    parser.add_argument("--entry", action="append", choices=matrix.ENTRIES)
    parser.add_argument("--backend", action="append", choices=matrix.BACKENDS)
    args = parser.parse_args(argv)
    cases = [c for c in matrix.matrix_cases() if not args.case or c.name in args.case]
    import parcv.strategies as package

    modules = [importlib.import_module(f"{package.__name__}.{info.name}")
               for info in pkgutil.iter_modules(package.__path__)]  # fmt: skip
    uncovered = matrix.uncovered_strategies(matrix.matrix_cases(), modules)
    if uncovered:
        print(f"strategy classes without a row: {uncovered}")
        return 1
    start = time.perf_counter()
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sys.path.insert(0, str(folder))
        matrix.write_module(folder)
        backends = tuple(args.backend or matrix.BACKENDS)
        for n, (case, entry, backend) in enumerate(matrix.cells(cases, backends)):
            if args.entry and entry not in args.entry:
                continue
            cell = matrix.Cell(case, entry, backend, folder / f"cell-{n}")
            for consumer in matrix.CONSUMERS:
                o = matrix.check_cell(cell, consumer)
                outcomes.append(o)
                why = f"\n         {o.detail[:400]}" if o.status == "failed" else ""
                line = f"{o.status:8} {o.seconds:6.1f}s  {case.name} | {entry} | {consumer}"
                print(f"{line} | {backend}{why}", flush=True)
    took = time.perf_counter() - start
    counts = Counter(o.status for o in outcomes)
    print(f"\n{len(outcomes)} cells in {took:.0f} s: " +
          ", ".join(f"{counts[s]} {s}" for s in ("equal", "refused", "n/a", "failed")))  # fmt: skip
    for status in ("refused", "n/a"):
        reasons = Counter((o.consumer, o.detail) for o in outcomes if o.status == status)
        if reasons:
            print(f"\n{status}:")
        for (consumer, detail), n in sorted(reasons.items()):
            where = matrix.documented(detail) if status == "refused" else None
            doc = f" [documented: {where[1]}]" if where else ""
            print(f"  {n:3} x {consumer}: {detail[:300]}{doc}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
