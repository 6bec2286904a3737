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
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import PlanMismatchError
from parcv.plan.code import Environment
from parcv.plan.kinds import Key
from parcv.plan.partition import PartitionFolds
from parcv.plan.record_batch import RecordBatch, RecordBlock
from parcv.plan.records import Record, Unit
from parcv.store.arrays import ARRAY_COLUMNS, encode_array
from parcv.store.chunks import CHUNK_INSERT, ChunkIds, StoredKeys, chunk_row
from parcv.store.messages import _n_records
from parcv.store.readers import (
    Stored,
    _by_values,
    _n_unidentified,
    _run_records,
    _stored_kinds,
    _stored_records,
    read_records,
)
from parcv.store.rows import (
    RoundRow,
    _index_blob,
    _row,
    _unit_row,
    ckey_blob,
    key_text,
)
from parcv.store.schema import _COLUMNS, _N_COLUMNS, _has_table, _is_schema_1, _is_schema_2
from parcv.store.seal import check_seal, is_sealed, write_seal

__all__ = ["Store", "prune_store", "store_session"]


# The tables of shared strings: the columns an entry is found by, and its values.
_SHARED: dict[str, Callable[[Any], tuple[tuple[str, ...], tuple[Any, ...]]]] = {
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
    labels: Sequence[tuple[str, str]] = ()
    key_of: Callable[[Unit], str] = _no_key
    # A unit's values key and the code it runs (digest, entries), kept beside its record.
    identity_of: Callable[[Unit], tuple[str, bytes, Environment]] | None = None
    # Both for a block of a worker's plain records at once (without building their units).
    block_keys: _BlockKeys = None
    # Units (plan id, graph key) that took a stored record of other code (resume="values"):
    # the content key of that record; they are not written again under their own key.
    kept: dict[tuple[int, Key], str] = field(default_factory=dict, repr=False)
    # The run the store is open for: its chunks are its units (see parcv.store.chunks).
    run: int = 0
    _ids: dict[tuple[str, Any], int] = field(default_factory=dict, repr=False)
    # Per plan id, each candidate's label id once known (-1: not yet), by candidate index.
    _label_of: dict[int, NDArray[np.int64]] = field(default_factory=dict, repr=False)
    _envs: dict[int, Environment | None] = field(default_factory=dict, repr=False)
    # Per plan id: its labels, content keys, identities and block keys (plan 0's: the fields
    # above).
    _plans: dict[
        int, tuple[Sequence[tuple[str, str]], Callable[[Unit], str], _Identity, _BlockKeys]
    ] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._plans[0] = (self.labels, self.key_of, self.identity_of, self.block_keys)

    def add_plan(
        self,
        pid: int,
        *,
        labels: Sequence[tuple[str, str]],
        key_of: Callable[[Unit], str],
        folds: list[tuple[Any, Any, Any, Any]],
        partitions: dict[int | None, PartitionFolds] | None = None,
        round: RoundRow | None = None,
        identity_of: _Identity = None,
        block_keys: _BlockKeys = None,
    ) -> None:
        """Describe another plan of the run (``pid`` > 0): its folds and its round."""
        self._plans[pid] = (labels, key_of, identity_of, block_keys)
        self._label_of.pop(pid, None)
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
            int(self._candidate_label_ids(conn, pid, np.array([record.unit.candidate]))[0]),
            self._id(conn, "metrics", names),
            self._id(conn, "workers", record.worker),
        )

    def add(self, records: Iterable[Record], pid: int = 0) -> None:
        """Commit a batch of records (by content key) and plan ``pid``'s units, in one go.

        Its plain records are stored as chunks, one row per block of one kind, worker
        and metrics (a worker's :class:`RecordBatch` from its columns, without
        building them); every other record as a row of its own.
        """
        if self.conn is None:
            return
        if isinstance(records, RecordBatch) and not self.kept:
            batch = records
        else:
            batch = RecordBatch.pack(r for r in records if (pid, r.key) not in self.kept)
        others = list(batch.others)
        key_of = self._plans[pid][1]
        ckeys = [key_of(r.unit) for r in others]
        try:
            self._add(self.conn, others, ckeys, pid, batch.blocks)
        except BaseException:
            # ids inserted by the rolled-back transaction do not exist
            self._ids.clear()
            self._label_of.clear()
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
            now = time.time()
            conn.executemany(CHUNK_INSERT, [self._chunk(conn, b, pid, now) for b in blocks])
            if not records:
                return
            seq = conn.execute("SELECT IFNULL(max(id), 0) FROM chunks").fetchone()[0]
            rows = [(*_row(r, k, self._row_ids(conn, r, pid)), seq)
                    for r, k in zip(records, ckeys, strict=True)]  # fmt: skip
            conn.executemany(
                f"INSERT OR REPLACE INTO records ({_COLUMNS}, seq) VALUES "
                f"({', '.join('?' * (_N_COLUMNS + 1))})",
                rows,
            )
            conn.executemany(
                _UNITS_INSERT, [_unit_row(r, k, pid) for r, k in zip(records, ckeys, strict=True)]
            )
            identities = self._identity_rows(conn, [r.unit for r in records], ckeys, pid)
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

    def _chunk(
        self, conn: sqlite3.Connection, block: RecordBlock, pid: int, now: float
    ) -> tuple[Any, ...]:
        """The row of ``chunks`` of a block of plain records (in a transaction)."""
        _, key_of, identity_of, block_keys = self._plans[pid]
        identities: tuple[bytes, list[int | None]] | None = None
        if block_keys is not None:
            blobs, vkeys, codes = block_keys(block.kind, block.places())
            if identity_of is not None:
                identities = (b"".join(vkeys), self._env_ids(conn, codes))
        else:  # a store opened without block keys: each unit's own keys
            units = block.units()
            blobs = [ckey_blob(key_of(u)) for u in units]
            if identity_of is not None:
                known = [identity_of(u) for u in units]
                identities = (b"".join(ckey_blob(v) for v, _, _ in known),
                              self._env_ids(conn, [(d, e) for _, d, e in known]))  # fmt: skip
        candidates, at = np.unique(block.folds[:, 2], return_inverse=True)
        label_ids = self._candidate_label_ids(conn, pid, candidates)
        ids = ChunkIds(
            self.run, pid, self._id(conn, "metrics", (block.test_names, block.train_names)),
            self._id(conn, "workers", block.worker), now,
        )  # fmt: skip
        return chunk_row(block, ids, b"".join(blobs), label_ids[at], identities)

    def _candidate_label_ids(
        self, conn: sqlite3.Connection, pid: int, candidates: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """The label ids of plan ``pid``'s candidates (by index), those not known yet inserted."""
        labels = self._plans[pid][0]
        known = self._label_of.get(pid)
        if known is None:
            known = self._label_of[pid] = np.full(len(labels), -1, dtype=np.int64)
        ids = known[candidates]
        missing = ids < 0
        if missing.any():
            new = candidates[missing].tolist()
            known[new] = self._label_ids(conn, [labels[c] for c in new])
            ids = known[candidates]
        return ids

    def _label_ids(self, conn: sqlite3.Connection, labels: list[tuple[str, str]]) -> list[int]:
        """The ids of ``labels``, inserted where new: two statements a chunk, not two a label.

        Kept by candidate index (:meth:`_candidate_label_ids`), not by their text: the
        texts of a million-unit run's candidates are in its plan already.
        """
        conn.executemany("INSERT OR IGNORE INTO labels (candidate_id, params) VALUES (?, ?)",
                         labels)  # fmt: skip
        wanted, found = set(labels), {}
        for start in range(0, len(labels), 500):
            part = [c for c, _ in labels[start : start + 500]]
            query = (f"SELECT id, candidate_id, params FROM labels WHERE candidate_id "
                     f"IN ({', '.join('?' * len(part))})")  # fmt: skip
            for id_, candidate_id, params in conn.execute(query, part):
                if (candidate_id, params) in wanted:
                    found[(candidate_id, params)] = int(id_)
        return [found[label] for label in labels]

    def _env_ids(
        self, conn: sqlite3.Connection, codes: Sequence[tuple[bytes, Environment]]
    ) -> list[int | None]:
        """:meth:`_env_id` of each unit's code (most units of a chunk share theirs)."""
        found: dict[bytes, int | None] = {}
        return [
            found[digest]
            if digest in found
            else found.setdefault(digest, self._env_id(conn, digest, env))
            for digest, env in codes
        ]

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
        return _stored_records(self.conn, Path(str(self.path)), ckeys)

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
        return _n_records(self.conn, Path(str(self.path)))

    def prune(self) -> int:
        """Drop the records (and saved models) no unit of the current plan uses; return how many."""
        if self.conn is None or self.path is None:
            return 0
        found = _run_records(self.conn, self.path)
        used = np.zeros(len(found.stored.keys), dtype=bool)
        used[found.entry[found.entry >= 0]] = True
        n_dropped = int(np.count_nonzero(found.stored.live & ~used))
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("CREATE TEMP TABLE used (ckey BLOB PRIMARY KEY) WITHOUT ROWID")
            keys = found.stored.keys[used]
            self.conn.executemany("INSERT OR IGNORE INTO used VALUES (?)",
                                  ((k.tobytes(),) for k in keys))  # fmt: skip
            unused = "NOT IN (SELECT ckey FROM temp.used)"
            files = [
                row[0] for row in self.conn.execute(f"SELECT file FROM models WHERE ckey {unused}")
            ]
            rows = found.stored.keys[(found.stored.chunk < 0) & ~used]
            self.conn.executemany("DELETE FROM records WHERE ckey = ?",
                                  ((k.tobytes(),) for k in rows))  # fmt: skip
            _keep_in_chunks(self.conn, found.stored, used)
            for table in ("models", "identities", "predictions"):
                if _has_table(self.conn, table):
                    self.conn.execute(f"DELETE FROM {table} WHERE ckey {unused}")
            self.conn.execute("DROP TABLE temp.used")
        for file in files:
            (Path(f"{self.path}.models") / file).unlink(missing_ok=True)
        return n_dropped

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
        return int(np.count_nonzero(_run_records(self.conn, Path(str(self.path))).entry >= 0))

    def stored_kinds(self) -> dict[str, int]:
        """:meth:`n_units` by unit kind (what :func:`kept_kinds` says)."""
        return {} if self.conn is None else _stored_kinds(self.conn, Path(str(self.path)))

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
                # What this session wrote, sealed: a later read finds any change but parcv's.
                # A store that cannot take it (a full disk) stays unsealed, as a killed run's.
                with suppress(sqlite3.Error):
                    write_seal(conn)
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


def _keep_in_chunks(conn: sqlite3.Connection, stored: StoredKeys, used: NDArray[np.bool_]) -> None:
    """Drop the chunks none of whose units is ``used``; rewrite the rest with those that are."""
    in_chunks = stored.chunk >= 0
    ids, starts = np.unique(stored.chunk[in_chunks], return_index=True)
    kept = np.split(used[in_chunks], starts[1:]) if len(ids) else []
    for id_, keep in zip(ids.tolist(), kept, strict=True):
        if keep.all():
            continue
        if not keep.any():
            conn.execute("DELETE FROM chunks WHERE id = ?", (id_,))
            continue
        row = conn.execute(f"SELECT n, {_PER_UNIT} FROM chunks WHERE id = ?", (id_,)).fetchone()
        n, blobs = row[0], row[1:]
        # Each array holds the same bytes per unit: keep those of the units used.
        parts = [None if b is None else np.frombuffer(b, f"V{len(b) // n}")[keep].tobytes()
                 if len(b) else b for b in blobs]  # fmt: skip
        assignments = ", ".join(f"{c} = ?" for c in _PER_UNIT.split(", "))
        conn.execute(f"UPDATE chunks SET n = ?, {assignments} WHERE id = ?",
                     (int(keep.sum()), *parts, id_))  # fmt: skip


# The columns of a chunk that hold an array of its units (see parcv.store.chunks).
_PER_UNIT = "ckeys, times, places, labels, vkeys, envs, sizes, test_scores, train_scores"


@contextmanager
def store_session(store: Store) -> Iterator[Store]:
    """Close the store's connection on exit."""
    try:
        yield store
    finally:
        store.close()


def retag_models(path: Path, tags: Mapping[str, str]) -> None:
    """Record new tags of saved models (by content key as hex); keep a sealed store sealed.

    The caller holds the store's lock. A store that differs from its seal is refused
    first: sealing it again would vouch for what changed.
    """
    if not tags:
        return
    check_seal(path)
    sealed = is_sealed(path)
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        schema_2 = _is_schema_2(conn)
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "UPDATE models SET sha256 = ? WHERE ckey = ?",
                [(tag, ckey if schema_2 else ckey_blob(ckey)) for ckey, tag in tags.items()],
            )
        if sealed:
            write_seal(conn)
    finally:
        conn.close()


def prune_store(path: Path) -> tuple[int, int]:
    """Drop the records no unit of the store's current plan uses; return (dropped, kept)."""
    check_seal(path)  # pruning a changed store would seal its changes as parcv's
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
        write_seal(conn)
    finally:
        conn.close()
    return dropped, kept
