"""The store's tables: their definitions, the schema versions, older schemas, connections.

A record is kept in plain columns and JSON text. A fast-CV record also
keeps its per-fold test scores as JSON (``fold_scores``); leave-one-out
folds are kept compactly in ``partitions`` (rows, concatenated test rows,
offsets) rather than as one train array of ``n - 1`` rows per fold.
The test-fold predictions of a run with ``return_predictions`` are kept in
``predictions`` (one row per record and method) and the target they are
compared with in ``target``, as plain arrays (:mod:`parcv.store.arrays`).

Most records are not rows of their own: a chunk of plain records is one row of ``chunks``
(:mod:`parcv.store.chunks`); the rest are rows of ``records``. A run makes the tables of
this schema (:func:`_make_tables`, which also migrates a schema-4 or 5 store in place,
and remakes a schema-4 store's plan tables); a reader tells the older schemas apart
(:func:`_is_schema_1`, :func:`_is_schema_2`, :func:`_of_plan`). A run writes
through :func:`_connect`'s connection, every reader through a read-only one
(:func:`reading`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext, suppress
from pathlib import Path

from parcv.errors import StoreDamagedError

__all__ = ["SCHEMA_VERSION", "never_created", "reading"]


# Schema 6 (this version) keeps a chunk of plain records (a worker's block: one kind,
# worker and set of metrics, ok, no warning, error, fold scores or predictions) as ONE row
# of ``chunks``: its units' content keys end to end, values keys, environments, places,
# labels, scores, times and sizes as packed arrays (parcv.store.chunks), at the next rowid.
# Storing a chunk of n units then costs one row at a sequential key, not 3 n rows at random
# content keys (records, units, identities: 60 us of CPU per unit at a million units). A
# chunk says which plan and run (``run``, the meta entry of the run that wrote last) stored
# it: the units of the current run's chunks are units of its plans without a ``units`` row.
# Every other record (rare) stays a row of ``records``, with ``seq``, the id of the last
# chunk stored before it (NULL: stored by schema 3 to 5, before every chunk): a content key
# stored more than once (a unit rescored, retried) reads as the one stored last, chunks
# in id order, a records row after the chunk ``seq`` names. ``identities`` keeps the values
# keys of records rows only. A run adds to a store of schema 4 or 5 in place: the new table
# and column are added in its first transaction; the rows it holds stay as they are, read
# by the same code, and no row is copied.
# Schema 5 describes a run of several plans: a strategy's rounds and the
# refits after them are plans 1, 2, ... beside plan 0, the plan the run started with. Its
# plan tables (folds, partitions, units) carry the plan id ``pid`` and ``rounds`` says
# which search, round and part each later plan is, with its description and the decision
# that made it, so ``load`` rebuilds every round. Its records are those of schema 4: a run
# adds to a schema-4 store, remaking only the plan tables, which every run rewrites.
# Schema 4 has the tables of schema 3; its content keys are tokens of the
# exact values (parcv.plan.tokens). Schema 3 keyed units by a repr that numpy elides past
# 1,000 entries and that names a closure without its captured values, so two different
# candidates could share a key: ``load`` and ``parcv report`` read it, a run refuses to add
# to it (its keys cannot be trusted, so no record of it may be reused).
# Schema 3: records are kept by content key (see parcv.plan.keys), whatever
# plan stored them; ``units`` maps the graph keys of the plan that last ran to content keys,
# and ``models`` records each saved model file with its SHA-256. Content keys are their 16
# bytes (not 32 hex digits); what repeats from row to row is kept once and referred to by
# id: a candidate's id and parameters (``labels``), the worker (``workers``) and the names
# of the metrics (``metrics``), whose scores are packed little-endian float64 (a third of a
# large store's size). ``units`` is a WITHOUT ROWID table, kept in the order of its key;
# ``records`` and ``identities`` are kept in the order they were stored, with an index of
# their content keys: a batch's random keys then touch the index's small pages only, not
# the rows' (a store of schema 3 to 5 made before keeps its layout: the SQL is the same).
# Schema 2 (the releases before) kept the same records as text and JSON: ``load`` and
# ``parcv report`` read it, a run refuses to add to it. Schema 1 (parcv 0.1.0) kept records
# by graph key: read by ``load``, refused by a run.
# Schema 5 adds, beside each record, what its key was made of: its values key (the key
# with code only named) and the environment of the code it ran (distribution versions,
# user-code digests: ``identities``, ``environments``), so that a run can say which code
# change made a stored record stale, and keep it if asked (``kept``: the current plan's
# units that took a record of other code, with why). A schema-4 store gains the tables when
# a run opens it; its records keep their old keys, which no unit has any more.
SCHEMA_VERSION = "6"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS folds (
    outer INTEGER, inner INTEGER, train BLOB NOT NULL, test BLOB NOT NULL,
    pid INTEGER NOT NULL DEFAULT 0);
-- A run in rounds reads its plans' folds a plan at a time (a sampler's: one per trial)
CREATE INDEX IF NOT EXISTS folds_of_plan ON folds (pid);
CREATE TABLE IF NOT EXISTS partitions (
    outer INTEGER, rows BLOB NOT NULL, tests BLOB NOT NULL, offsets BLOB NOT NULL,
    leave_one_out INTEGER NOT NULL, pid INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY, candidate_id TEXT NOT NULL, params TEXT NOT NULL,
    UNIQUE (candidate_id, params));
CREATE TABLE IF NOT EXISTS workers (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS metrics (id INTEGER PRIMARY KEY, names TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS records (
    ckey BLOB NOT NULL UNIQUE, kind TEXT NOT NULL, outer INTEGER, inner INTEGER,
    candidate INTEGER NOT NULL, label INTEGER NOT NULL, status TEXT NOT NULL,
    metrics INTEGER NOT NULL, test_scores BLOB NOT NULL, train_scores BLOB NOT NULL,
    fit_time REAL NOT NULL, score_time REAL NOT NULL, n_train INTEGER NOT NULL,
    n_test INTEGER NOT NULL, error_type TEXT, error_message TEXT, traceback TEXT,
    warnings TEXT NOT NULL, worker INTEGER NOT NULL, started REAL NOT NULL,
    finished REAL NOT NULL, stored REAL NOT NULL, fold_scores TEXT, seq INTEGER);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run INTEGER NOT NULL, pid INTEGER NOT NULL,
    kind TEXT NOT NULL, n INTEGER NOT NULL, metrics INTEGER NOT NULL, worker INTEGER NOT NULL,
    stored REAL NOT NULL, ckeys BLOB NOT NULL, times BLOB NOT NULL, places BLOB NOT NULL,
    labels BLOB NOT NULL, vkeys BLOB, envs BLOB, sizes BLOB NOT NULL,
    test_scores BLOB NOT NULL, train_scores BLOB NOT NULL);
-- A run reads its own chunks' units (those of its run, by plan)
CREATE INDEX IF NOT EXISTS chunks_of_run ON chunks (run, pid);
CREATE TABLE IF NOT EXISTS units (
    pid INTEGER NOT NULL DEFAULT 0, key TEXT NOT NULL, ckey BLOB NOT NULL, kind TEXT NOT NULL,
    outer INTEGER, inner INTEGER, candidate INTEGER NOT NULL,
    PRIMARY KEY (pid, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rounds (
    pid INTEGER PRIMARY KEY, search TEXT NOT NULL, round INTEGER NOT NULL,
    part INTEGER NOT NULL, plan TEXT NOT NULL, decision TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
    ckey BLOB PRIMARY KEY, file TEXT NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS predictions (
    ckey BLOB NOT NULL, method TEXT NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL,
    data BLOB NOT NULL, codes TEXT, uniques BLOB, PRIMARY KEY (ckey, method));
CREATE TABLE IF NOT EXISTS target (
    name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL,
    codes TEXT, uniques BLOB);
CREATE TABLE IF NOT EXISTS environments (
    id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, entries TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS identities (
    vkey BLOB NOT NULL, ckey BLOB NOT NULL, env INTEGER, UNIQUE (vkey, ckey));
CREATE TABLE IF NOT EXISTS kept (
    pid INTEGER NOT NULL DEFAULT 0, key TEXT NOT NULL, causes TEXT NOT NULL,
    PRIMARY KEY (pid, key)) WITHOUT ROWID;
"""
_TABLES = (
    "meta", "folds", "partitions", "labels", "workers", "metrics", "records", "chunks", "units",
    "models",
    "predictions", "target", "rounds", "environments", "identities", "kept",
)  # fmt: skip
# The tables that describe the run that wrote last (its plans), rewritten by every run.
_PLAN_TABLES = ("meta", "folds", "partitions", "units", "target", "rounds", "kept")

_COLUMNS = (
    "ckey, kind, outer, inner, candidate, label, status, metrics, test_scores, "
    "train_scores, fit_time, score_time, n_train, n_test, error_type, error_message, "
    "traceback, warnings, worker, started, finished, stored, fold_scores"
)
_N_COLUMNS = _COLUMNS.count(",") + 1
# The same, as read for the units of a plan: what the unit or nobody reads is left NULL
# (no Python object per row for it), and so is an empty list of warnings.
_UNIT_COLUMNS = (
    _COLUMNS.replace("kind, outer, inner, candidate, label,", "NULL, NULL, NULL, 0, NULL,")
    .replace("warnings,", "NULLIF(warnings, '[]'),")
    .replace("stored,", "NULL,")
)
# Schemas 1 and 2: the same columns, with scores as JSON text and labels in every row.
_V2_COLUMNS = _COLUMNS.replace("label,", "candidate_id, params,").replace("metrics, ", "")
_V1_COLUMNS = _V2_COLUMNS.replace("ckey,", "key,", 1)


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return found.fetchone() is not None


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def _is_schema_1(conn: sqlite3.Connection) -> bool:
    return _has_column(conn, "records", "key")


def _is_schema_2(conn: sqlite3.Connection) -> bool:
    """Records with their labels and JSON scores in every row (schema 2)."""
    return _has_column(conn, "records", "params") and not _is_schema_1(conn)


def _of_plan(conn: sqlite3.Connection, table: str, pid: int) -> tuple[str, tuple[int, ...]]:
    """The WHERE clause and its parameters that pick plan ``pid``'s rows of ``table``.

    A store written before plans had ids (schema 4 and older) holds plan 0 only.
    """
    if _has_column(conn, table, "pid"):
        return " WHERE pid = ?", (pid,)
    return ("", ()) if pid == 0 else (" WHERE 0", ())


def _make_tables(conn: sqlite3.Connection, action: str) -> None:
    """Make this schema's tables (in a transaction of the caller's); ``"wipe"`` drops all first."""
    if action == "wipe":
        for table in _TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    if _has_table(conn, "units") and not _has_column(conn, "units", "pid"):
        # Schema 4: its plan tables have no plan ids. They describe only the run that
        # wrote last, which this run replaces anyway: made again in schema 5.
        for table in ("folds", "partitions", "units"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    if _has_table(conn, "records") and not _has_column(conn, "records", "seq"):
        # Schema 4 or 5: its records rows were stored before every chunk (seq NULL).
        conn.execute("ALTER TABLE records ADD COLUMN seq INTEGER")
    for statement in _SCHEMA.strip().split(";"):
        if statement.strip():
            conn.execute(statement)


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
    # A run's plain records are appended a chunk a row; only the rest (failures, warnings,
    # predictions) are keyed by content digests all over their tables. A cache of 8 MiB
    # (SQLite's default is 2 MiB) keeps the inner pages those and the labels' index touch;
    # it held 64 MiB, a tenth of a million-unit run's driver, when every record was a row.
    conn.execute("PRAGMA cache_size=-8192")
    return conn


@contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a store file.

    A store whose writer was killed (SIGKILL, power loss) in a transaction, or while it
    switched the store back from WAL at its close, can leave a hot ``-journal`` (or a
    ``-wal``) beside it, which only a connection that may write can roll back or recover.
    With such a file beside a writable store, one such connection reads the store first,
    as any reader would, and SQLite puts the store back to its last commit.
    """
    if os.access(path, os.W_OK) and any(
        Path(f"{path}-{suffix}").is_file() for suffix in ("journal", "wal")
    ):
        with suppress(sqlite3.Error), closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True,
                                                               timeout=30.0)) as conn:  # fmt: skip
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as conn:
        try:
            yield conn
        except sqlite3.DatabaseError as err:
            if getattr(err, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED"):
                raise  # a writer holds it: not damage
            # A reader met what SQLite cannot read (a damaged page, a table gone): say so
            # once, here, rather than in every reader that might meet it.
            raise StoreDamagedError(
                f"store {str(path)!r} is damaged: SQLite cannot read it ({err}). It was left "
                "unchanged. Restore it from a copy, or run again with overwrite=True "
                "(--overwrite) to recompute every unit."
            ) from err


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a store file, for many reads in a row.

    The ``read_*`` functions that take ``conn=`` read through it: a load of a run in
    rounds reads each of its plans (a sampler's trial each), and a connection per
    read (opened, its schema parsed, closed) cost more than the reads.
    """
    with _reading(path) as conn:
        yield conn


def _read_with(
    path: Path, conn: sqlite3.Connection | None
) -> AbstractContextManager[sqlite3.Connection]:
    """``conn`` (left open), or a read-only connection of its own to ``path``."""
    return _reading(path) if conn is None else nullcontext(conn)


def never_created(path: Path) -> bool:
    """Whether ``path`` is an empty file or a SQLite file whose creation was interrupted.

    parcv writes the tables and the meta rows in one transaction, so a store
    without a meta table, or with neither meta rows nor records, holds
    nothing of value and is recreated by the next run.
    """
    if path.stat().st_size == 0:
        return True
    try:
        with _reading(path) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            if "meta" not in tables:
                return not tables - {"folds", "partitions", "records"} and not (
                    "records" in tables and conn.execute("SELECT 1 FROM records LIMIT 1").fetchone()
                )
            empty = not conn.execute("SELECT 1 FROM meta LIMIT 1").fetchone()
            return empty and not any(
                conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone()
                for table in ("records", "chunks")
                if table in tables
            )
    except (sqlite3.DatabaseError, StoreDamagedError):
        return False  # not SQLite, or damaged: refused with its own message
