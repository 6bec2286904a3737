"""The open store of a run: records committed by content key as they arrive.

:class:`Store` adds a batch of records in one transaction (a worker's
:class:`~parcv.plan.record_batch.RecordBatch` from its columns, without building its
records), with the units of the plan that took them, the code they ran and their
predictions; a resume finds stored records through it, by content key or by values
key. :func:`prune_store` drops the records no unit of the current plan uses.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parcv.errors import PlanMismatchError
from parcv.plan.code import Environment
from parcv.plan.kinds import Key
from parcv.plan.partition import PartitionFolds
from parcv.plan.record_batch import RecordBatch, RecordBlock
from parcv.plan.records import Record, Unit
from parcv.store.arrays import ARRAY_COLUMNS, encode_array
from parcv.store.readers import (
    Stored,
    _by_values,
    _n_unidentified,
    _read_predictions,
    _records,
    _stored_kinds,
    read_records,
)
from parcv.store.rows import (
    RoundRow,
    _index_blob,
    _key_texts,
    _Names,
    _row,
    _unit_row,
    _with_predictions,
    ckey_blob,
    key_text,
)
from parcv.store.schema import _COLUMNS, _N_COLUMNS, _has_table, _is_schema_1

__all__ = ["Store", "prune_store", "store_session"]


# The tables of shared strings: the columns an entry is found by, and its values.
_SHARED: dict[str, Callable[[Any], tuple[tuple[str, ...], tuple[Any, ...]]]] = {
    "labels": lambda label: (("candidate_id", "params"), tuple(label)),
    "workers": lambda name: (("name",), (name,)),
    "metrics": lambda names: (("names",), (json.dumps([list(n) for n in names]),)),
}


# A unit's values key, its code's digest and environment (see parcv.plan.keys), or None.
_Identity = Callable[[Unit], tuple[str, bytes, Environment]] | None
# The content keys, values keys and code (digest, environment) of units of one kind given
# as (outer, inner, candidate), as bytes (:meth:`parcv.plan.keys.ContentKeys.block_keys`).
_BlockKeys = (
    Callable[
        [str, list[tuple[Any, Any, int]]],
        tuple[list[bytes], list[bytes], list[tuple[bytes, Environment]]],
    ]
    | None
)


def _no_key(unit: Unit) -> str:
    raise ValueError(f"a store opened without content keys cannot add {unit!r}")


_UNITS_INSERT = "INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?, ?, ?)"


@dataclass
class Store:
    """An open store: the driver appends records in batches, one transaction each.

    Use :func:`open_store`; ``Store(None)`` is the in-memory store of a
    throw-away call (nothing persists). ``key_of`` gives a record's content
    key; ``labels`` the candidate id and parameters JSON written with it: of
    plan 0, the plan the store was opened with; the plans added to the run
    (:meth:`add_plan`) have their own.
    """

    path: Path | None
    conn: sqlite3.Connection | None = None
    labels: tuple[tuple[str, str], ...] = ()
    key_of: Callable[[Unit], str] = _no_key
    # A unit's values key and the code it runs (digest, entries), kept beside its record.
    identity_of: Callable[[Unit], tuple[str, bytes, Environment]] | None = None
    # Both for a block of a worker's plain records at once (without building their units).
    block_keys: _BlockKeys = None
    # Units (plan id, graph key) that took a stored record of other code (resume="values"):
    # the content key of that record; they are not written again under their own key.
    kept: dict[tuple[int, Key], str] = field(default_factory=dict, repr=False)
    _ids: dict[tuple[str, Any], int] = field(default_factory=dict, repr=False)
    _envs: dict[int, Environment | None] = field(default_factory=dict, repr=False)
    # Per plan id: its labels, content keys, identities and block keys (plan 0's: the fields
    # above).
    _plans: dict[
        int, tuple[tuple[tuple[str, str], ...], Callable[[Unit], str], _Identity, _BlockKeys]
    ] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._plans[0] = (self.labels, self.key_of, self.identity_of, self.block_keys)

    def add_plan(
        self,
        pid: int,
        *,
        labels: tuple[tuple[str, str], ...],
        key_of: Callable[[Unit], str],
        folds: list[tuple[Any, Any, Any, Any]],
        partitions: dict[int | None, PartitionFolds] | None = None,
        round: RoundRow | None = None,
        identity_of: _Identity = None,
        block_keys: _BlockKeys = None,
    ) -> None:
        """Describe another plan of the run (``pid`` > 0): its folds and its round."""
        self._plans[pid] = (labels, key_of, identity_of, block_keys)
        if self.conn is None:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            _insert_folds(self.conn, folds, partitions, pid)
            if round is not None:
                self.conn.execute(
                    "INSERT OR REPLACE INTO rounds VALUES (?, ?, ?, ?, ?, ?)",
                    (pid, round.search, round.round, round.part, round.plan, round.decision),
                )

    def key(self, unit: Unit, pid: int = 0) -> str:
        """The content key of a unit of plan ``pid``."""
        return self._plans[pid][1](unit)

    def _id(self, conn: sqlite3.Connection, table: str, value: Any) -> int:
        """The id of a label, worker or metric-name list, inserted when new (in a transaction)."""
        found = self._ids.get((table, value))
        if found is not None:
            return found
        columns, values = _SHARED[table](value)
        where = " AND ".join(f"{c} = ?" for c in columns)
        conn.execute(
            f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))})",
            values,
        )
        row = conn.execute(f"SELECT id FROM {table} WHERE {where}", values).fetchone()
        self._ids[(table, value)] = int(row[0])
        return int(row[0])

    def _row_ids(self, conn: sqlite3.Connection, record: Record, pid: int) -> tuple[int, int, int]:
        names = (tuple(record.test_scores), tuple(record.train_scores))
        return (
            self._id(conn, "labels", self._plans[pid][0][record.unit.candidate]),
            self._id(conn, "metrics", names),
            self._id(conn, "workers", record.worker),
        )

    def add(self, records: Iterable[Record], pid: int = 0) -> None:
        """Commit a batch of records (by content key) and plan ``pid``'s units, in one go.

        A worker's :class:`RecordBatch` is stored from its columns: its plain
        records are never built.
        """
        if self.conn is None:
            return
        blocks: tuple[RecordBlock, ...] = ()
        if isinstance(records, RecordBatch) and not self.kept:
            blocks, records = records.blocks, records.others
        records = [r for r in records if (pid, r.key) not in self.kept]
        key_of = self._plans[pid][1]
        ckeys = [key_of(r.unit) for r in records]
        try:
            self._add(self.conn, records, ckeys, pid, blocks)
        except BaseException:
            self._ids.clear()  # ids inserted by the rolled-back transaction do not exist
            raise

    def _add(
        self,
        conn: sqlite3.Connection,
        records: list[Record],
        ckeys: list[str],
        pid: int,
        blocks: Sequence[RecordBlock] = (),
    ) -> None:
        with conn:  # BEGIN ... COMMIT, or ROLLBACK on error
            conn.execute("BEGIN IMMEDIATE")
            # In the batch's order (its blocks, then the rest): of a key twice, the last counts.
            rows: list[tuple[Any, ...]] = []
            unit_rows: list[tuple[Any, ...]] = []
            identities: list[tuple[Any, ...]] = []
            for block in blocks:
                self._block_rows(conn, block, pid, rows, unit_rows, identities)
            rows += [_row(r, k, self._row_ids(conn, r, pid))
                     for r, k in zip(records, ckeys, strict=True)]  # fmt: skip
            unit_rows += [_unit_row(r, k, pid) for r, k in zip(records, ckeys, strict=True)]
            identities += self._identity_rows(conn, [r.unit for r in records], ckeys, pid)
            conn.executemany(
                f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES "
                f"({', '.join('?' * _N_COLUMNS)})",
                rows,
            )
            conn.executemany(_UNITS_INSERT, unit_rows)
            if identities:
                conn.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?)", identities)
            conn.executemany(
                f"INSERT OR REPLACE INTO predictions (ckey, method, {ARRAY_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (ckey_blob(k), method, *encode_array(array))
                    for r, k in zip(records, ckeys, strict=True)
                    if r.predictions is not None
                    for method, array in r.predictions.arrays.items()
                ],
            )

    def _block_rows(
        self,
        conn: sqlite3.Connection,
        block: RecordBlock,
        pid: int,
        rows: list[tuple[Any, ...]],
        unit_rows: list[tuple[Any, ...]],
        identities: list[tuple[Any, ...]],
    ) -> None:
        """The rows of a block of plain records, as :func:`_row` makes them, from its columns."""
        labels, key_of, identity_of, block_keys = self._plans[pid]
        kind, places = block.kind, block.places()
        if block_keys is not None:
            blobs, vkeys, codes = block_keys(kind, places)
            if identity_of is not None:
                known = zip(vkeys, blobs, codes, strict=True)
                identities += [(v, blob, self._env_id(conn, *code)) for v, blob, code in known]
        else:  # a store opened without block keys: each unit's own keys
            units = block.units()
            ckeys = [key_of(u) for u in units]
            blobs = [ckey_blob(k) for k in ckeys]
            identities += self._identity_rows(conn, units, ckeys, pid)
        label_ids = {c: self._id(conn, "labels", labels[c]) for c in {c for _, _, c in places}}
        metrics = self._id(conn, "metrics", (block.test_names, block.train_names))
        worker = self._id(conn, "workers", block.worker)
        # Each record's scores as _packed packs them: little-endian float64, in metric order.
        test = np.ascontiguousarray(block.test, dtype="<f8").tobytes()
        train = np.ascontiguousarray(block.train, dtype="<f8").tobytes()
        w_test, w_train = 8 * len(block.test_names), 8 * len(block.train_names)
        now = time.time()
        texts, times, sizes = _key_texts(kind, places), block.times.tolist(), block.sizes.tolist()
        columns = zip(places, blobs, texts, times, sizes, strict=True)
        for j, ((o, i, c), blob, text, (fit, score, start, end), (n_train, n_test, _)) in enumerate(
            columns
        ):
            rows.append((
                blob, kind, o, i, c, label_ids[c], "ok",
                metrics, test[j * w_test : (j + 1) * w_test],
                train[j * w_train : (j + 1) * w_train], fit, score, n_train, n_test,
                None, None, None, "[]", worker, start, end, now, None,
            ))  # fmt: skip
            unit_rows.append((pid, text, blob, kind, o, i, c))

    def _identity_rows(
        self, conn: sqlite3.Connection, units: list[Unit], ckeys: list[str], pid: int
    ) -> list[tuple[bytes, bytes, int | None]]:
        """Each unit's values key and the environment of the code it ran (in a transaction)."""
        identity_of = self._plans[pid][2]
        if identity_of is None:
            return []
        rows = []
        for unit, ckey in zip(units, ckeys, strict=True):
            vkey, digest, env = identity_of(unit)
            rows.append((ckey_blob(vkey), ckey_blob(ckey), self._env_id(conn, digest, env)))
        return rows

    def _add_identities(
        self, conn: sqlite3.Connection, records: list[Record], ckeys: list[str], pid: int
    ) -> None:
        """Each record's values key and the environment of the code it ran (in a transaction)."""
        rows = self._identity_rows(conn, [r.unit for r in records], ckeys, pid)
        conn.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?)", rows)

    def _env_id(self, conn: sqlite3.Connection, digest: bytes, env: Environment) -> int | None:
        if not digest:
            return None  # no code: its values key is its content key
        found = self._ids.get(("environments", digest))
        if found is None:
            conn.execute(
                "INSERT OR IGNORE INTO environments (digest, entries) VALUES (?, ?)",
                (digest, env.to_json()),
            )
            row = conn.execute("SELECT id FROM environments WHERE digest = ?", (digest,))
            found = self._ids[("environments", digest)] = int(row.fetchone()[0])
        return found

    def claim(self, records: Iterable[Record], pid: int = 0) -> None:
        """Mark stored records (reused, relabelled) as units of plan ``pid``."""
        if self.conn is None:
            return
        key_of = self._plans[pid][1]
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(
                _UNITS_INSERT,
                [
                    _unit_row(r, key_of(r.unit), pid)
                    for r in records
                    if (pid, r.key) not in self.kept
                ],
            )

    def keep(self, records: Iterable[tuple[Record, str]], pid: int = 0) -> None:
        """Make stored records of other code units of plan ``pid``: ``(record, its content key)``.

        The record stays under its own key, with the code it ran; the unit points to it,
        and ``kept`` says why it was not recomputed (``record.kept``).
        """
        pairs = list(records)
        self.kept.update(((pid, r.key), ckey) for r, ckey in pairs)
        if self.conn is None or not pairs:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(_UNITS_INSERT, [_unit_row(r, ckey, pid) for r, ckey in pairs])
            self.conn.executemany(
                "INSERT OR REPLACE INTO kept VALUES (?, ?, ?)",
                [(pid, key_text(r.key), json.dumps(list(r.kept))) for r, _ in pairs],
            )

    def by_values(self, vkeys: Iterable[str]) -> dict[str, Stored]:
        """The newest stored record of each values key among ``vkeys``, with the code it ran."""
        if self.conn is None:
            return {}
        return _by_values(self.conn, vkeys, self._envs)

    def n_unidentified(self) -> int:
        """Records stored without their values key (by a parcv before code identity)."""
        return 0 if self.conn is None else _n_unidentified(self.conn)

    def identify(self, records: Iterable[Record], pid: int = 0) -> None:
        """Keep the values key and code of stored records plan ``pid`` takes by content key.

        Records an earlier parcv stored without them: a later run can then say
        what changed when their code does.
        """
        records = list(records)
        _, key_of, identity_of, _ = self._plans[pid]
        if self.conn is None or identity_of is None or not records:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self._add_identities(self.conn, records, [key_of(r.unit) for r in records], pid)

    def stored(self, ckeys: Iterable[str]) -> dict[str, Record]:
        """Return the stored records among ``ckeys`` (labelled as the plan that stored them)."""
        if self.conn is None:
            return {}
        wanted = {ckey_blob(k) for k in ckeys}
        if len(wanted) <= 500:  # a refit's lookup: by the primary key
            marks = ", ".join("?" * len(wanted))
            query = f"SELECT {_COLUMNS} FROM records WHERE ckey IN ({marks})"
            cursor = self.conn.execute(query, sorted(wanted))
        else:
            cursor = self.conn.execute(f"SELECT {_COLUMNS} FROM records")
        rows = [row for row in cursor if row[0] in wanted]
        path = Path(str(self.path))
        found = _records(path, rows, None, _Names.read(self.conn))
        kept = _read_predictions(self.conn, path, wanted)
        return {
            row[0].hex(): _with_predictions(r, kept.get(row[0]))
            for row, r in zip(rows, found, strict=True)
        }

    def has_model(self, ckey: str) -> bool:
        """Whether a saved model of unit ``ckey`` is recorded."""
        if self.conn is None:
            return False
        found = self.conn.execute("SELECT 1 FROM models WHERE ckey = ?", (ckey_blob(ckey),))
        return found.fetchone() is not None

    def n_records(self) -> int:
        """Number of records the store holds, of any plan."""
        if self.conn is None:
            return 0
        return int(self.conn.execute("SELECT count(*) FROM records").fetchone()[0])

    def prune(self) -> int:
        """Drop the records (and saved models) no unit of the current plan uses; return how many."""
        if self.conn is None or self.path is None:
            return 0
        unused = "NOT IN (SELECT ckey FROM units)"
        files = [
            row[0] for row in self.conn.execute(f"SELECT file FROM models WHERE ckey {unused}")
        ]
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            cursor = self.conn.execute(f"DELETE FROM records WHERE ckey {unused}")
            self.conn.execute(f"DELETE FROM models WHERE ckey {unused}")
            if _has_table(self.conn, "identities"):
                self.conn.execute(
                    "DELETE FROM identities WHERE ckey NOT IN (SELECT ckey FROM records)"
                )
            if _has_table(self.conn, "predictions"):
                self.conn.execute(f"DELETE FROM predictions WHERE ckey {unused}")
        for file in files:
            (Path(f"{self.path}.models") / file).unlink(missing_ok=True)
        return cursor.rowcount

    def set_meta(self, items: Mapping[str, str]) -> None:
        """Add (or replace) entries of the meta table: what a run learnt as it went."""
        if self.conn is None:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", items.items())

    def record_model(self, ckey: str, file: str, sha256: str) -> None:
        """Record the saved model file of a unit with its digest."""
        if self.conn is None:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute(
                "INSERT OR REPLACE INTO models VALUES (?, ?, ?)", (ckey_blob(ckey), file, sha256)
            )

    def records(self, pid: int = 0) -> MutableMapping[Key, Record]:
        """Every record of plan ``pid`` of the current run, by graph key."""
        return {} if self.path is None else read_records(self.path, pid)

    def n_units(self) -> int:
        """Units of the current run (of every plan) whose record is stored."""
        if self.conn is None:
            return 0
        query = "SELECT count(*) FROM units u JOIN records r ON r.ckey = u.ckey"
        return int(self.conn.execute(query).fetchone()[0])

    def stored_kinds(self) -> dict[str, int]:
        """:meth:`n_units` by unit kind (what :func:`kept_kinds` says)."""
        return {} if self.conn is None else _stored_kinds(self.conn)

    def close(self) -> None:
        """Close the connection; leave no ``-wal`` / ``-shm`` file behind when it can.

        The write-ahead log is folded into the database and the journal
        switched back to the rollback journal, so readers that open the store
        read-only later (``load``, ``parcv report``) create no such files
        either; the next writer switches to WAL again. While another process
        reads the store the switch waits for nothing and is skipped.
        """
        if self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                conn.execute("PRAGMA busy_timeout=0")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.Error:  # a reader holds the WAL: it stays, and stays correct
                pass
            finally:
                # A second Ctrl-C during the checkpoint still closes the connection, and
                # SQLite folds the WAL in and removes it when its last connection closes.
                conn.close()


def _insert_folds(
    conn: sqlite3.Connection,
    folds: list[tuple[Any, Any, Any, Any]],
    partitions: dict[int | None, PartitionFolds] | None,
    pid: int,
) -> None:
    """Write a plan's fold index arrays (in a transaction of the caller's)."""
    conn.executemany(
        "INSERT INTO partitions VALUES (?, ?, ?, ?, ?, ?)",
        [(o, _index_blob(p.rows), _index_blob(p.tests), _index_blob(p.offsets),
          int(p.leave_one_out), pid) for o, p in (partitions or {}).items()],
    )  # fmt: skip
    conn.executemany(
        "INSERT INTO folds VALUES (?, ?, ?, ?, ?)",
        [(o, i, _index_blob(tr), _index_blob(te), pid) for o, i, tr, te in folds],
    )


@contextmanager
def store_session(store: Store) -> Iterator[Store]:
    """Close the store's connection on exit."""
    try:
        yield store
    finally:
        store.close()


def prune_store(path: Path) -> tuple[int, int]:
    """Drop the records no unit of the store's current plan uses; return (dropped, kept)."""
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        if _is_schema_1(conn):
            raise PlanMismatchError(
                f"store {str(path)!r} was written by parcv 0.1.0; it keeps only one plan's "
                "records, so there is nothing to prune."
            )
        store = Store(path, conn)
        dropped = store.prune()
        kept = store.n_records()
        conn.execute("VACUUM")
    finally:
        conn.close()
    return dropped, kept
