"""Take units' records out of a store, as a run stopped before they finished would leave it.

Most records of a schema-6 store are entries of a chunk (``parcv.store.chunks``), not
rows: a test that removes some units' records removes their entries from their chunks
(the rest of each chunk stays, as a chunk is written whole), their ``records`` rows and
their ``units`` rows. Each also takes the store's seal away (``parcv.store.seal``): a run
stopped before it closed the store, or an older parcv, leaves none, and a store changed
by hand with its seal in place reads as damaged.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import numpy as np

from parcv.plan.records import Unit
from parcv.store.chunks import find, read_run_units, read_stored_keys
from parcv.store.rows import key_text
from parcv.store.writer import _keep_in_chunks


def unseal(store: Path) -> None:
    """Remove a store's seal, as a run killed before it closed the store leaves it."""
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("DELETE FROM meta WHERE name = 'seal'")


def drop_units(store: Path, dropped: Callable[[Unit], bool]) -> int:
    """Remove the records of the current run's units for which ``dropped`` holds; how many."""
    with closing(sqlite3.connect(store, isolation_level=None)) as conn:
        units, stored = read_run_units(conn), read_stored_keys(conn)
        gone = np.array(
            [dropped(Unit(units.kinds[k], None if o < 0 else o, None if i < 0 else i, c))
             for k, o, i, c in zip(units.kind.tolist(), units.outer.tolist(),
                                   units.inner.tolist(), units.candidate.tolist(), strict=True)],
            dtype=bool,
        )  # fmt: skip
        live = np.flatnonzero(stored.live)
        place = find(stored.keys[live], units.keys[gone])
        keep = np.ones(len(stored.keys), dtype=bool)
        keep[live[place[place >= 0]]] = False
        # Entries of the dropped keys stored before (superseded) go with them.
        keep &= find(np.unique(units.keys[gone]), stored.keys) < 0
        conn.execute("BEGIN IMMEDIATE")
        _keep_in_chunks(conn, stored, keep)
        rows = stored.keys[(stored.chunk < 0) & ~keep]
        conn.executemany("DELETE FROM records WHERE ckey = ?", [(k.tobytes(),) for k in rows])
        names = [
            (key_text(Unit(units.kinds[k], None if o < 0 else o, None if i < 0 else i, c).key),)
            for k, o, i, c in zip(units.kind[gone].tolist(), units.outer[gone].tolist(),
                                  units.inner[gone].tolist(), units.candidate[gone].tolist(),
                                  strict=True)
        ]  # fmt: skip
        conn.executemany("DELETE FROM units WHERE key = ?", names)
        conn.execute("DELETE FROM meta WHERE name = 'seal'")
        conn.execute("COMMIT")
    return int(gone.sum())


def as_rows(store: Path) -> None:
    """Rewrite a schema-6 store as schema 5 kept it: every record a row, its units rows too."""
    with closing(sqlite3.connect(store, isolation_level=None)) as conn:
        stored = read_stored_keys(conn)
        run = int(conn.execute("SELECT value FROM meta WHERE name = 'run'").fetchone()[0])
        live = {(c, a) for c, a in zip(stored.chunk[stored.live].tolist(),
                                       stored.at[stored.live].tolist(), strict=True)}  # fmt: skip
        rows, units, identities = [], [], []
        query = (
            "SELECT id, run, pid, kind, n, metrics, worker, stored, ckeys, times, places, labels, "
            "vkeys, envs, sizes, test_scores, train_scores FROM chunks ORDER BY id"
        )
        for (id_, chunk_run, pid, kind, n, metrics, worker, when, ckeys, times, places, labels,
             vkeys, envs, sizes, test, train) in conn.execute(query).fetchall():  # fmt: skip
            times = np.frombuffer(times, "<f8").reshape(n, 4).tolist()
            places = np.frombuffer(places, "<i8").reshape(n, 3).tolist()
            labels = np.frombuffer(labels, "<i8").tolist()
            sizes = np.frombuffer(sizes, "<i8").reshape(n, 2).tolist()
            width_test, width_train = len(test) // n, len(train) // n
            for j in range(n):
                if (id_, j) not in live:
                    continue
                ckey = ckeys[16 * j : 16 * j + 16]
                c = places[j][2]
                o, i = tuple(None if v < 0 else v for v in places[j][:2])
                fit, score, started, finished = times[j]
                rows.append((
                    ckey, kind, o, i, c, labels[j], "ok", metrics,
                    test[j * width_test : (j + 1) * width_test],
                    train[j * width_train : (j + 1) * width_train], fit, score, *sizes[j],
                    None, None, None, "[]", worker, started, finished, when, None,
                ))  # fmt: skip
                if chunk_run == run:
                    key = key_text(Unit(kind, o, i, c).key)
                    units.append((pid, key, ckey, kind, o, i, c))
                if vkeys is not None:
                    env = int(np.frombuffer(envs, "<i8")[j])
                    identities.append((vkeys[16 * j : 16 * j + 16], ckey, None if env < 0 else env))
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DROP TABLE chunks")
        conn.execute("DELETE FROM meta WHERE name IN ('run', 'seal')")
        conn.execute("UPDATE meta SET value = '5' WHERE name = 'schema'")
        marks = ", ".join("?" * 23)
        conn.executemany(f"INSERT OR REPLACE INTO records VALUES ({marks}, NULL)", rows)
        conn.executemany("INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?, ?, ?)", units)
        conn.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?)", identities)
        conn.execute("ALTER TABLE records DROP COLUMN seq")
        conn.execute("COMMIT")
