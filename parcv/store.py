"""Durable record store: one SQLite file per plan fingerprint, no pickles.

Records are rows of plain columns and JSON text. A fast-CV record also
keeps its per-fold test scores as JSON (``fold_scores``); leave-one-out
folds are kept compactly in ``partitions`` (rows, concatenated test rows,
offsets) rather than as one train array of ``n - 1`` rows per fold.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parcv._store_checks import (
    JOURNAL_MODES,
    changed_choice,
    check_journal,
    check_store,
    mismatch_message,
)
from parcv.errors import PlanMismatchError
from parcv.partition import PartitionFolds
from parcv.records import CHOSEN_KINDS, ErrorInfo, FoldScores, Key, Record, Unit

__all__ = ["JOURNAL_MODES", "Store", "check_journal", "open_store", "read_store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS folds (
    outer INTEGER, inner INTEGER, train BLOB NOT NULL, test BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS partitions (
    outer INTEGER, rows BLOB NOT NULL, tests BLOB NOT NULL, offsets BLOB NOT NULL,
    leave_one_out INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY, kind TEXT NOT NULL, outer INTEGER, inner INTEGER,
    candidate INTEGER NOT NULL, candidate_id TEXT NOT NULL, params TEXT NOT NULL,
    status TEXT NOT NULL, test_scores TEXT NOT NULL, train_scores TEXT NOT NULL,
    fit_time REAL NOT NULL, score_time REAL NOT NULL, n_train INTEGER NOT NULL,
    n_test INTEGER NOT NULL, error_type TEXT, error_message TEXT, traceback TEXT,
    warnings TEXT NOT NULL, worker TEXT NOT NULL, started REAL NOT NULL,
    finished REAL NOT NULL, stored REAL NOT NULL, fold_scores TEXT);
"""

_COLUMNS = (
    "key, kind, outer, inner, candidate, candidate_id, params, status, test_scores, "
    "train_scores, fit_time, score_time, n_train, n_test, error_type, error_message, "
    "traceback, warnings, worker, started, finished, stored, fold_scores"
)
_N_COLUMNS = _COLUMNS.count(",") + 1


def key_text(key: Key) -> str:
    """Serialise a task key as compact JSON (the primary key of a record row)."""
    return json.dumps(list(key), separators=(",", ":"))


def _json_value(value: Any) -> Any:
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else repr(value)
    if isinstance(value, np.generic):
        return _json_value(value.item())
    return repr(value)


def params_json(params: dict[str, Any]) -> str:
    """Parameters as JSON; objects (estimators, distributions) stored as their repr."""
    return json.dumps({k: _json_value(v) for k, v in sorted(params.items())}, sort_keys=True)


def _connect(path: Path, journal: str) -> sqlite3.Connection:
    try:  # check_store vetted the path: what fails here is the file system itself
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    except (OSError, sqlite3.OperationalError) as err:
        raise ValueError(
            f"store={str(path)!r} cannot be created ({err}). Pass a path in a directory you "
            "can write to."
        ) from err
    try:
        conn.execute(f"PRAGMA journal_mode={journal}")
    except sqlite3.OperationalError as err:
        conn.close()
        raise ValueError(
            f"store={str(path)!r} cannot be opened for writing ({err}). Pass a path on a "
            "local, writable file system, or journal='delete' on NFS or Lustre."
        ) from err
    conn.execute("PRAGMA synchronous=NORMAL" if journal == "wal" else "PRAGMA synchronous=FULL")
    return conn


def _row(record: Record, cand_id: str, params: str) -> tuple[Any, ...]:
    u, err = record.unit, record.error
    return (
        key_text(record.key),
        u.kind,
        u.outer,
        u.inner,
        u.candidate,
        cand_id,
        params,
        record.status,
        json.dumps(record.test_scores),
        json.dumps(record.train_scores),
        record.fit_time,
        record.score_time,
        record.n_train,
        record.n_test,
        None if err is None else err.type,
        None if err is None else err.message,
        None if err is None else err.traceback,
        json.dumps(list(record.warnings)),
        record.worker,
        record.started,
        record.finished,
        time.time(),
        None if record.folds is None else json.dumps(record.folds.to_dict()),
    )


def _record(row: sqlite3.Row) -> Record:
    err = (
        None
        if row["error_type"] is None
        else ErrorInfo(row["error_type"], row["error_message"] or "", row["traceback"] or "")
    )
    return Record(
        unit=Unit(row["kind"], row["outer"], row["inner"], row["candidate"]),
        status=row["status"],
        test_scores={k: float(v) for k, v in json.loads(row["test_scores"]).items()},
        train_scores={k: float(v) for k, v in json.loads(row["train_scores"]).items()},
        fit_time=row["fit_time"],
        score_time=row["score_time"],
        n_train=row["n_train"],
        n_test=row["n_test"],
        error=err,
        warnings=tuple(json.loads(row["warnings"])),
        worker=row["worker"],
        started=row["started"],
        finished=row["finished"],
        folds=None
        if row["fold_scores"] is None
        else FoldScores.from_dict(json.loads(row["fold_scores"])),
    )


@dataclass
class Store:
    """An open store: the driver appends records in batches, one transaction each.

    Use :func:`open_store`; ``Store(None)`` is the in-memory store of a
    throw-away call (nothing persists).
    """

    path: Path | None
    conn: sqlite3.Connection | None = None
    labels: tuple[tuple[str, str], ...] = ()
    rechosen: bool = False  # opened with another choice: choice-dependent records dropped

    def add(self, records: Iterable[Record]) -> None:
        """Commit a batch of records in one transaction."""
        if self.conn is None:
            return
        rows = [_row(r, *self.labels[r.unit.candidate]) for r in records]
        with self.conn:  # BEGIN ... COMMIT, or ROLLBACK on error
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(
                f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES "
                f"({', '.join('?' * _N_COLUMNS)})",
                rows,
            )

    def records(self) -> dict[Key, Record]:
        """Every stored record by key."""
        return {} if self.path is None else read_records(self.path)

    def close(self) -> None:
        """Close the connection."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def read_meta(path: Path) -> dict[str, str]:
    """Read the meta table (fingerprint, plan description) without writing anything."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as conn:
        try:
            return dict(conn.execute("SELECT name, value FROM meta").fetchall())
        except sqlite3.DatabaseError as err:
            raise PlanMismatchError(
                f"store {str(path)!r} is not a parcv store ({err}); it was left unchanged. "
                "Check the path: pass a store written by parcv, or a new path."
            ) from err


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def read_records(path: Path) -> dict[Key, Record]:
    """Read every record of a store, read-only."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as conn:
        conn.row_factory = sqlite3.Row
        # Stores written before fast CV have no fold_scores column: read it as NULL.
        columns = (
            _COLUMNS
            if _has_column(conn, "records", "fold_scores")
            else (_COLUMNS.replace("fold_scores", "NULL AS fold_scores"))
        )
        rows = conn.execute(f"SELECT {columns} FROM records").fetchall()
    records = [_record(row) for row in rows]
    return {r.key: r for r in records}


def read_folds(path: Path) -> list[tuple[int | None, int | None, np.ndarray, np.ndarray]]:
    """Read the fold index arrays, in the order they were written."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as conn:
        rows = conn.execute("SELECT outer, inner, train, test FROM folds ORDER BY rowid").fetchall()
    return [
        (
            o,
            i,
            np.frombuffer(tr, dtype="<i8").astype(np.intp),
            np.frombuffer(te, dtype="<i8").astype(np.intp),
        )
        for o, i, tr, te in rows
    ]


def read_partitions(path: Path) -> dict[int | None, PartitionFolds]:
    """Read the compact (leave-one-out) fold sets, by outer fold."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as conn:
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'partitions'"
        ).fetchone():
            return {}
        rows = conn.execute("SELECT outer, rows, tests, offsets, leave_one_out FROM partitions "
                            "ORDER BY rowid").fetchall()  # fmt: skip
    return {
        o: PartitionFolds(_blob_index(r), _blob_index(t), _blob_index(off), bool(loo))
        for o, r, t, off, loo in rows
    }


def _blob_index(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<i8").astype(np.intp)


def _index_blob(array: Any) -> bytes:
    return np.asarray(array, dtype="<i8").tobytes()


def read_store(path: str | Path) -> tuple[dict[str, str], dict[Key, Record]]:
    """Read a store's meta and records without running or writing anything."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no parcv store at {str(p)!r}.")
    return read_meta(p), read_records(p)


def _check_fingerprint(path: Path, meta: dict[str, str], overwrite: bool, resume: bool) -> str:
    """What to do with the existing file: "wipe", "keep" or "rechoose"; raise if another plan's.

    "rechoose": the same fits, chosen from by another refit metric, selection rule or
    error_score; the records that depend on the choice are dropped, the others kept.
    """
    old = read_meta(path)
    n_old = len(read_records(path)) if old else 0
    if not old or overwrite:
        return "wipe"
    if old.get("fingerprint") != meta["fingerprint"]:
        raise PlanMismatchError(mismatch_message(path, old, meta, n_old))
    rechoose = old.get("choice") != meta.get("choice")
    if n_old and not resume:
        changed = (
            f" This call chooses differently: {changed_choice(old, meta)}. Resuming keeps the "
            "fits and redoes only the refits and the failed fits."
            if rechoose
            else ""
        )
        raise PlanMismatchError(
            f"store {str(path)!r} already holds {n_old} records of this plan.{changed} Pass "
            "resume=True (command line: --resume) to compute only the missing units, or "
            "overwrite=True (--overwrite) to start again."
        )
    return "rechoose" if rechoose else "keep"


def open_store(
    path: str | Path | None,
    meta: dict[str, str],
    folds: list[tuple[Any, Any, Any, Any]],
    *,
    labels: tuple[tuple[str, str], ...],
    partitions: dict[int | None, PartitionFolds] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    journal: str = "wal",
) -> Store:
    """Open (or create) the store of one plan; refuse another plan's store.

    Parameters
    ----------
    path : str, Path or None
        SQLite file; ``None`` keeps nothing (in-memory, throw-away).
    meta : dict of str to str
        Must hold ``fingerprint``; written when the store is created.
    folds : list of (outer, inner, train, test)
        Fold index arrays, stored as little-endian int64 blobs.
    labels : tuple of (candidate id, params JSON)
        Per candidate, written with each record.
    partitions : dict of outer fold to PartitionFolds, default=None
        Compact fold sets (leave-one-out), stored as index blobs.
    resume : bool, default=False
        Keep this plan's records (the run computes only missing units). If
        the refit metric, selection or error_score changed, the refit records
        and failed fits are dropped first: they depend on those.
    overwrite : bool, default=False
        Discard whatever the file holds.
    journal : {"wal", "delete"}, default="wal"
        SQLite journal mode; use "delete" on network file systems (NFS,
        Lustre), where WAL is unsafe.

    Returns
    -------
    Store

    Raises
    ------
    PlanMismatchError
        The file holds another plan's records, or records of this plan
        without ``resume=True``; the file is left untouched.
    TypeError, ValueError
        ``journal`` is not one of :data:`JOURNAL_MODES`, or ``path`` is not
        a path to a file that can be created or written (see
        :func:`parcv._store_checks.check_store`).
    """
    journal = check_journal(journal)
    p = check_store(path)
    if p is None:
        return Store(None, None, labels)
    action = _check_fingerprint(p, meta, overwrite, resume) if p.exists() else "wipe"
    conn = _connect(p, journal)
    os.chmod(p, 0o600)  # results are the user's only
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                conn.execute(statement)
        if not _has_column(conn, "records", "fold_scores"):
            conn.execute("ALTER TABLE records ADD COLUMN fold_scores TEXT")
        if action == "rechoose":
            # Refits depend on the choice, failed fits' scores on error_score: redo them.
            # As Record.depends_on_choice says, in SQL.
            conn.execute(f"DELETE FROM records WHERE kind IN {CHOSEN_KINDS} OR status != 'ok'")
            conn.execute("DELETE FROM meta")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        if action == "wipe":
            for table in ("meta", "folds", "partitions", "records"):
                conn.execute(f"DELETE FROM {table}")
            conn.executemany(
                "INSERT INTO partitions VALUES (?, ?, ?, ?, ?)",
                [(o, _index_blob(p.rows), _index_blob(p.tests), _index_blob(p.offsets),
                  int(p.leave_one_out)) for o, p in (partitions or {}).items()],
            )  # fmt: skip
            conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
            conn.executemany(
                "INSERT INTO folds VALUES (?, ?, ?, ?)",
                [(o, i, _index_blob(tr), _index_blob(te)) for o, i, tr, te in folds],
            )
    return Store(p, conn, labels, rechosen=action == "rechoose")


@contextmanager
def store_session(store: Store) -> Iterator[Store]:
    """Close the store's connection on exit."""
    try:
        yield store
    finally:
        store.close()
