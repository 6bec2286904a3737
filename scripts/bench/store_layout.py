"""Benchmark the store's layout (issue 50): a row per unit against a row per chunk.

What a run's store costs the driver per unit is mostly its writes: each chunk of
records is one transaction that inserts three rows per unit (``records``, ``units``,
``identities``) at random content keys, so every unit touches the pages of three
B-trees and their indexes. This script measures only that SQL, side by side in one
run, for the same units and bytes:

* **per unit** (schema 5, today's): the tables of ``parcv.store.schema`` made by
  its own ``_make_tables``; each chunk an ``executemany`` of its rows into the three
  tables, as ``Store.add`` writes a chunk of plain records;
* **per chunk** (a layout issue 50 asks for): one table with one row per chunk whose
  columns hold the chunk's units as arrays (content keys, values keys, places, scores,
  times, sizes), inserted at the next rowid;
* **per chunk + key index**: the same, plus a ``(ckey, chunk)`` row per unit in a
  ``WITHOUT ROWID`` table, for a resume that finds a stored unit by its key in SQL
  rather than by reading every chunk's keys;
* **schema 6 (Store.add)**: the store of this checkout (``parcv.store.opening.open_store``)
  adding each chunk as a worker's ``RecordBatch`` of one block, its keys given (as a run's
  ``ContentKeys.block_keys`` gives them, hashing left out), with a label per 5 units (a
  candidate's folds) and the code's environment: the whole of ``Store.add``, Python and SQL.

Each layout writes ``--units`` units in chunks of ``--chunk``, one transaction per
chunk, on a fresh file with the store's pragmas (WAL, ``synchronous=NORMAL``, 64 MiB
cache). Each layout's Python that turns a chunk's columns into its rows is counted, as
``Store.add`` does it (``--split`` in driver.py measures the whole store stage of a real
run). Printed: CPU per unit of the process (``time.process_time``: SQLite runs in this
process), wall per unit, and the file's bytes per unit.

Run: python scripts/bench/store_layout.py [--units 1100000] [--chunk 185]
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np

from parcv.store.schema import _COLUMNS, _N_COLUMNS, _make_tables

_CHUNKS = """
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, kind TEXT NOT NULL, n INTEGER NOT NULL,
    ckeys BLOB NOT NULL, vkeys BLOB NOT NULL, places BLOB NOT NULL, labels BLOB NOT NULL,
    metrics INTEGER NOT NULL, test_scores BLOB NOT NULL, train_scores BLOB NOT NULL,
    times BLOB NOT NULL, sizes BLOB NOT NULL, worker INTEGER NOT NULL, stored REAL NOT NULL)
"""
_KEY_INDEX = "CREATE TABLE chunk_keys (ckey BLOB PRIMARY KEY, chunk INTEGER) WITHOUT ROWID"


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode=wal")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA cache_size=-65536")
    return conn


def _chunk(rng: np.random.Generator, start: int, n: int) -> dict[str, np.ndarray]:
    """The columns of ``n`` units: random 16-byte keys, as content digests are."""
    return {
        "ckeys": rng.bytes(16 * n),
        "vkeys": rng.bytes(16 * n),
        "candidate": np.arange(start, start + n, dtype=np.int64),
        "test": rng.random(n),
        "train": rng.random(n),
        "times": rng.random((n, 4)),
        "sizes": np.full((n, 2), 100, dtype=np.int64),
    }


def per_unit(conn: sqlite3.Connection, cols: dict[str, np.ndarray], n: int) -> None:
    now, ck, vk = time.time(), cols["ckeys"], cols["vkeys"]
    records, units, identities = [], [], []
    for j in range(n):
        blob, c = ck[16 * j : 16 * j + 16], int(cols["candidate"][j])
        fit, score, start, end = cols["times"][j].tolist()
        records.append((
            blob, "search", None, j % 5, c, 1, "ok", 1, cols["test"][j].tobytes(),
            cols["train"][j].tobytes(), fit, score, 100, 20, None, None, None, "[]", 1,
            start, end, now, None,
        ))  # fmt: skip
        units.append((0, f'["search",null,{j % 5},{c}]', blob, "search", None, j % 5, c))
        identities.append((vk[16 * j : 16 * j + 16], blob, 1))
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        marks = ", ".join("?" * _N_COLUMNS)
        conn.executemany(f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES ({marks})", records)
        conn.executemany("INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?, ?, ?)", units)
        conn.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?)", identities)


def per_chunk(conn: sqlite3.Connection, cols: dict[str, np.ndarray], n: int, index: bool) -> None:
    places = np.stack([np.full(n, -1), np.arange(n) % 5, cols["candidate"]], axis=1)
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        cursor = conn.execute(
            "INSERT INTO chunks VALUES (NULL, 0, 'search', ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, 1, ?)",
            (
                n, cols["ckeys"], cols["vkeys"], places.astype("<i8").tobytes(),
                np.ones(n, "<i8").tobytes(), cols["test"].tobytes(), cols["train"].tobytes(),
                cols["times"].tobytes(), cols["sizes"].tobytes(), time.time(),
            ),
        )  # fmt: skip
        if index:
            chunk, ck = cursor.lastrowid, cols["ckeys"]
            keys = [(ck[16 * j : 16 * j + 16], chunk) for j in range(n)]
            conn.executemany("INSERT OR REPLACE INTO chunk_keys VALUES (?, ?)", keys)


def store_add(args: Any) -> tuple[str, float, float, int]:
    """The schema-6 row: this checkout's ``Store.add`` of one block per chunk."""
    from parcv.plan.code import Environment
    from parcv.plan.record_batch import RecordBatch, RecordBlock
    from parcv.store.opening import open_store

    env, current = Environment(), [{}]

    def block_keys(kind: str, places: list[Any]) -> Any:
        ck, vk, n = current[0]["ckeys"], current[0]["vkeys"], len(places)
        return ([ck[16 * j : 16 * j + 16] for j in range(n)],
                [vk[16 * j : 16 * j + 16] for j in range(n)], [(b"code", env)] * n)  # fmt: skip

    def identity_of(unit: Any) -> Any:
        raise AssertionError("every chunk is stored by its block keys")

    rng = np.random.default_rng(0)
    chunks = [
        _chunk(rng, s, min(args.chunk, args.units - s)) for s in range(0, args.units, args.chunk)
    ]
    labels = tuple((f"c{c}", "{}") for c in range(args.units // 5 + 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.sqlite"
        store = open_store(path, {"fingerprint": "bench"}, [], labels=labels,
                           identity_of=identity_of, block_keys=block_keys)  # fmt: skip
        batches = []
        for cols in chunks:
            n = len(cols["candidate"])
            folds = np.stack([np.full(n, -1), np.arange(n) % 5, cols["candidate"] // 5], axis=1)
            block = RecordBlock("search", "host:1", ("score",), ("score",), folds,
                                cols["test"].reshape(n, 1), cols["train"].reshape(n, 1),
                                cols["times"], np.full((n, 3), 100, dtype=np.int64))  # fmt: skip
            batches.append(RecordBatch([block], []))
        cpu, wall = time.process_time(), time.perf_counter()
        for cols, batch in zip(chunks, batches, strict=True):
            current[0] = cols
            store.add(batch)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        store.close()
        size = path.stat().st_size + sum(
            p.stat().st_size for p in path.parent.glob("store.sqlite-*")
        )
    return "schema 6 (Store.add)", 1e6 * cpu / args.units, 1e6 * wall / args.units, size


def measure(
    name: str, make: Callable[[sqlite3.Connection], None], write: Callable[..., None], args: Any
) -> tuple[str, float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.sqlite"
        with closing(_connect(path)) as conn:
            with conn:
                conn.execute("BEGIN")
                make(conn)
            rng = np.random.default_rng(0)
            chunks = [
                _chunk(rng, s, min(args.chunk, args.units - s))
                for s in range(0, args.units, args.chunk)
            ]
            cpu, wall = time.process_time(), time.perf_counter()
            for cols in chunks:
                write(conn, cols, len(cols["candidate"]))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        size = path.stat().st_size + sum(
            p.stat().st_size for p in path.parent.glob("store.sqlite-*")
        )
    return name, 1e6 * cpu / args.units, 1e6 * wall / args.units, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=185, help="units per chunk (transaction)")
    args = parser.parse_args()
    rows = [
        measure("per unit (schema 5)", lambda c: _make_tables(c, "make"), per_unit, args),
        measure(
            "per chunk",
            lambda c: c.execute(_CHUNKS),
            lambda conn, cols, n: per_chunk(conn, cols, n, index=False),
            args,
        ),
        measure(
            "per chunk + key index",
            lambda c: (c.execute(_CHUNKS), c.execute(_KEY_INDEX)),
            lambda conn, cols, n: per_chunk(conn, cols, n, index=True),
            args,
        ),
        store_add(args),
    ]
    print(f"{args.units:,} units in chunks of {args.chunk}, one transaction per chunk\n")
    print("| layout | CPU (us/unit) | wall (us/unit) | file (B/unit) | CPU / per unit |")
    print("|---|---|---|---|---|")
    base = rows[0][1]
    for name, cpu, wall, size in rows:
        print(f"| {name} | {cpu:.2f} | {wall:.2f} | {size / args.units:.0f} | {cpu / base:.2f} |")
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
