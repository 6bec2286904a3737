"""Each unit's test scores as the run that wrote a store stored them, read by SQL alone.

The reference a fixture store is read against: its numbers come from the machine that wrote
it (Ridge's LAPACK solve differs in the last bit between CPUs), so a run on another machine
may not give them, and parcv's own readers are what is being tested.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np

from parcv.plan.records import Unit


def stored_scores(store: Path) -> list[tuple[tuple[Any, ...], dict[str, float]]]:
    """Every ``records`` row of a store of schema 1 to 5: its unit's key and test scores."""
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
        metrics = ", metrics" if "metrics" in columns else ""
        rows = conn.execute(
            f"SELECT kind, outer, inner, candidate, test_scores{metrics} FROM records"
        ).fetchall()
        if not metrics:  # schemas 1 and 2: JSON text
            return [(Unit(*row[:4]).key, json.loads(row[4])) for row in rows]
        names = {
            i: json.loads(text)[0] for i, text in conn.execute("SELECT id, names FROM metrics")
        }
    # Schemas 3 to 5: the metrics' names, and their scores as little-endian doubles.
    return [
        (Unit(*row[:4]).key,
         dict(zip(names[row[5]], np.frombuffer(row[4], "<f8").tolist(), strict=True)))
        for row in rows
    ]  # fmt: skip
