"""Open a store for a run: refuse a file it may not add to, else describe its plan.

:func:`open_store` checks the path and the journal mode, then decides what to do
with an existing file: refuse it (an older schema, another plan, this plan's
records without ``resume``), keep its records, or wipe it. It makes the tables and
writes the plan's meta, folds and target in one transaction, and returns the
:class:`~parcv.store.writer.Store` the run adds its records to.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from parcv.errors import PlanMismatchError
from parcv.plan.code import Environment
from parcv.plan.partition import PartitionFolds
from parcv.plan.records import Unit
from parcv.store.arrays import ARRAY_COLUMNS, encode_array
from parcv.store.checks import check_journal, check_store
from parcv.store.messages import _count_records, changed_choice, mismatch_message
from parcv.store.readers import read_meta
from parcv.store.schema import (
    _PLAN_TABLES,
    SCHEMA_VERSION,
    _connect,
    _is_schema_1,
    _is_schema_2,
    _make_tables,
    _reading,
    never_created,
)
from parcv.store.seal import check_seal
from parcv.store.writer import Store, _BlockKeys, _insert_folds, _no_key

__all__ = ["open_store"]


def open_store(
    path: str | Path | None,
    meta: dict[str, str],
    folds: list[tuple[Any, Any, Any, Any]],
    *,
    labels: Sequence[tuple[str, str]],
    key_of: Callable[[Unit], str] = _no_key,
    identity_of: Callable[[Unit], tuple[str, bytes, Environment]] | None = None,
    block_keys: _BlockKeys = None,
    partitions: dict[int | None, PartitionFolds] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    journal: str = "wal",
    target: Any = None,
) -> Store:
    """Open (or create) a store for one plan; its records are kept by content key.

    Parameters
    ----------
    path : str, Path or None
        SQLite file; ``None`` keeps nothing (in-memory, throw-away).
    meta : dict of str to str
        Must hold ``fingerprint``; the description of the plan that runs now.
    folds : list of (outer, inner, train, test)
        Fold index arrays, stored as little-endian int64 blobs.
    labels : tuple of (candidate id, params JSON)
        Per candidate, written with each record.
    key_of : callable, default raises
        Content key of a record's unit (:meth:`parcv.plan.keys.ContentKeys.key`).
    identity_of : callable, default=None
        A unit's values key, and the digest and entries of the code it runs
        (:meth:`parcv.plan.keys.ContentKeys.values_key` and ``environment``),
        kept beside each record it adds.
    block_keys : callable, default=None
        Both of units of one kind given by their folds and candidates
        (:meth:`parcv.plan.keys.ContentKeys.block_keys`): how the records a
        worker sent as columns are stored without building their units.
    partitions : dict of outer fold to PartitionFolds, default=None
        Compact fold sets (leave-one-out), stored as index blobs.
    resume : bool, default=False
        Keep the stored records: the run reuses those whose content key it
        needs, whichever plan stored them, and computes the rest.
    overwrite : bool, default=False
        Discard whatever the file holds.
    journal : {"wal", "delete"}, default="wal"
        SQLite journal mode; use "delete" on network file systems (NFS,
        Lustre), where WAL is unsafe.
    target : array-like or None, default=None
        The plan's ``y``, kept (as plain bytes) when its units keep
        predictions, so that tests on them need no data at load time.

    Returns
    -------
    Store

    Raises
    ------
    PlanMismatchError
        The file holds records and ``resume=True`` was not passed, or it was
        written by parcv 0.1.0 (schema 1); the file is left untouched.
    TypeError, ValueError
        ``journal`` is not one of :data:`JOURNAL_MODES`, or ``path`` is not
        a path to a file that can be created or written (see
        :func:`parcv.store.checks.check_store`).
    """
    journal = check_journal(journal)
    p = check_store(path)
    if p is None:
        return Store(None, None, labels, key_of, identity_of, block_keys)
    fresh = not p.exists() or never_created(p)
    action = "wipe" if fresh else _check_existing(p, meta, overwrite, resume)
    if overwrite and not fresh:
        _remove_store_file(p)  # damaged pages or a foreign schema would refuse DROP TABLE
    conn = _connect(p, journal)
    try:
        run = _write_plan(conn, p, meta, folds, action=action, partitions=partitions,
                          target=target)  # fmt: skip
    except BaseException:
        # Ctrl-C while the plan is written: the transaction is rolled back; close the
        # connection now, or its -wal and -shm files outlive the process.
        conn.close()
        raise
    return Store(p, conn, labels, key_of, identity_of, block_keys, run=run)


def _check_existing(path: Path, meta: dict[str, str], overwrite: bool, resume: bool) -> str:
    """What to do with the existing file: "wipe" or "keep"; raise when a run may not add to it.

    "keep": the run reuses every stored record whose content key it needs (any plan's).
    """
    if overwrite:
        return "wipe"
    old = read_meta(path)
    if not old:
        return "wipe"  # creation was interrupted before the meta table was written
    with _reading(path) as conn:
        if _is_schema_1(conn):
            raise PlanMismatchError(
                f"store {str(path)!r} was written by parcv 0.1.0, which kept records by their "
                "place in one plan rather than by content; this version cannot add to it. "
                "parcv.load() still reads it. Use a new store path (command line: another "
                "--out), or overwrite=True (--overwrite) to start again."
            )
        if _is_schema_2(conn):
            raise PlanMismatchError(
                f"store {str(path)!r} was written by an earlier parcv (store schema 2, which "
                f"kept every record as text); this version writes schema {SCHEMA_VERSION}, "
                "a third of the size, and cannot add to it. parcv.load() and `parcv report` "
                "still read it. Use a new store path (command line: another --out), or "
                "overwrite=True (--overwrite) to start again."
            )
    if old.get("schema") == "3":
        raise PlanMismatchError(
            f"store {str(path)!r} was written by an earlier parcv (store schema 3), whose "
            "keys could give two different candidates one record (a numpy array of more "
            "than 1,000 entries, or closures of one factory, as parameter values); this "
            f"version keys every unit by its exact values (schema {SCHEMA_VERSION}) and will "
            "not reuse records it cannot tell apart. parcv.load() and `parcv report` still "
            "read it. Use a new store path (command line: another --out), or overwrite=True "
            "(--overwrite) to start again."
        )
    # A run adds to what the store verifies only: a changed table of records is refused.
    check_seal(path, resume=True)
    n_old = _count_records(path)
    if not n_old or resume:
        return "keep"
    if old.get("fingerprint") != meta["fingerprint"]:
        raise PlanMismatchError(
            mismatch_message(path, old, meta, n_old)
            + " Or pass resume=True (--resume) to reuse the stored units this plan shares "
            "and compute the rest."
        )
    changed = ""
    if old.get("choice") != meta.get("choice"):
        changed = (
            f" This call chooses differently: {changed_choice(old, meta)}. Resuming keeps the "
            "fits and redoes only the refits whose choice changed."
        )
    raise PlanMismatchError(
        f"store {str(path)!r} already holds {n_old} records of this plan.{changed} Pass "
        "resume=True (command line: --resume) to compute only the missing units, or "
        "overwrite=True (--overwrite) to start again."
    )


def _remove_store_file(path: Path) -> None:
    """Remove a store file and SQLite's files beside it (overwrite=True discards them all)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _write_plan(
    conn: sqlite3.Connection,
    p: Path,
    meta: dict[str, str],
    folds: list[tuple[Any, Any, Any, Any]],
    *,
    action: str,
    partitions: dict[int | None, PartitionFolds] | None,
    target: Any,
) -> int:
    """Describe the plan that runs now in the store, in one transaction; return its run's id.

    A store of schema 4 or 5 gains the tables and columns of this schema in the same
    transaction (:func:`_make_tables`): a kill leaves it as it was, or migrated.
    """
    os.chmod(p, 0o600)  # results are the user's only
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        _make_tables(conn, action)
        # The chunks this run stores are its units: they name it (see parcv.store.chunks).
        run = int(conn.execute("SELECT IFNULL(max(run), 0) + 1 FROM chunks").fetchone()[0])
        # The store now describes this run: its folds, its units (claimed as reused or run).
        for table in _PLAN_TABLES:
            conn.execute(f"DELETE FROM {table}")
        if target is not None:  # None: an unsupervised run has no target to store
            # A sparse y (multilabel indicator) is stored as the dense labels it holds.
            dense = target.toarray() if hasattr(target, "toarray") else target
            conn.execute(
                f"INSERT INTO target (name, {ARRAY_COLUMNS}) VALUES ('y', ?, ?, ?, ?, ?)",
                encode_array(dense),
            )
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            sorted({**meta, "schema": SCHEMA_VERSION, "run": str(run)}.items()),
        )
        _insert_folds(conn, folds, partitions, 0)
    return run
