"""Benchmark the size of stored predictions: 100 candidates x 10 folds x 10,000 rows.

Issue 22's target: the store of such a search with ``return_predictions=True`` stays under
twice the size of its predictions as float32 (100 x 10,000 x 4 bytes = 4 MB, so < 8 MB for
the whole store), and reading it back unpickles nothing. The estimator is
``DummyClassifier(strategy="constant")`` (three classes; the candidates vary the constant
and an unused ``random_state``), so the fits cost nothing and the run measures the store.

Printed: the store's size against the target, the bytes per stored prediction, the size of
each table (SQLite's ``dbstat`` when it is compiled in), the run and load times, and
whether ``parcv.load`` gave the same predictions with ``pickle.loads`` disabled.

Run: python scripts/bench/predictions_size.py [--candidates 100] [--rows 10000] [--backend serial]
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import pickle
import sqlite3
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.dummy import DummyClassifier

import parcv


def _table_sizes(path: Path) -> dict[str, int]:
    with closing(sqlite3.connect(path)) as conn:
        try:
            rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        except sqlite3.OperationalError:  # SQLite built without dbstat
            return {}
    return {name: int(size) for name, size in rows}


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a store read unpickled something")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--backend", default="serial")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, 2))
    y = rng.integers(0, 3, size=args.rows)
    space = {
        "strategy": ["constant"],
        "constant": [0, 1, 2],
        "random_state": list(range(-(-args.candidates // 3))),
    }
    store = Path(tempfile.mkdtemp(prefix="parcv-bench-")) / "run.sqlite"
    start = time.perf_counter()
    result = parcv.search(DummyClassifier(), space, X, y, cv=10, backend=args.backend,
                          store=store, refit=False, return_predictions=True)  # fmt: skip
    run_s = time.perf_counter() - start
    n_candidates = len(result.candidates)
    n_predictions = n_candidates * args.rows
    float32 = n_predictions * 4
    size = store.stat().st_size
    loads, load = pickle.loads, pickle.load
    pickle.loads, pickle.load = _refuse, _refuse  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        loaded = parcv.load(store)
        load_s = time.perf_counter() - start
    finally:
        pickle.loads, pickle.load = loads, load  # type: ignore[assignment]
    same = all(
        loaded.predictions.by_candidate[c] == result.predictions.by_candidate[c]  # type: ignore[union-attr]
        for c in range(n_candidates)
    )
    print(f"search: {n_candidates} candidates x 10 folds x {args.rows:,} rows "
          f"({n_predictions:,} predictions) in {run_s:.1f} s on {args.backend}")  # fmt: skip
    print(f"{'predictions as float32':28}{float32 / 1e6:>10.2f} MB")
    print(f"{'store (whole file)':28}{size / 1e6:>10.2f} MB   target < {2 * float32 / 1e6:.2f} MB"
          f" ({size / float32:.2f}x float32)")  # fmt: skip
    print(f"{'bytes per prediction':28}{size / n_predictions:>10.2f}")
    for name, table_size in sorted(_table_sizes(store).items(), key=lambda t: -t[1])[:6]:
        print(f"  {name:26}{table_size / 1e6:>10.2f} MB")
    print(f"load (pickle disabled): {load_s:.2f} s, same predictions: {same}")
    return 0 if size < 2 * float32 and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
