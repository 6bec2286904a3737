"""A chunk of plain records as one row of ``chunks``; the stored records found by content key.

A block of plain records (:class:`~parcv.plan.record_batch.RecordBlock`: one kind,
worker and set of metrics, each a success holding only numbers) is stored as one row
whose columns hold its units as packed little-endian arrays (:func:`chunk_row`), read
back by :class:`Chunk`. Every other record is a row of ``records``. A content key stored
more than once (a unit rescored or retried) reads as the one stored last
(:func:`read_stored_keys`): chunks in id order, a ``records`` row after the chunk its
``seq`` names (NULL: before every chunk, as schema 3 to 5 stored it). The units of a run
are its ``units`` rows and the units of its own chunks (:func:`read_run_units`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.plan.record_batch import RecordBlock
from parcv.plan.records import Record, Unit
from parcv.store.schema import _has_column, _of_plan

__all__: list[str] = []


# The names of the test and train metrics of each id of the ``metrics`` table.
_Metrics = dict[int, tuple[list[str], list[str]]]
_KEY = 16  # bytes of a content key
_NONE = -1  # a fold of None (all data), or no environment, in an int64 array

CHUNK_INSERT = (
    "INSERT INTO chunks (run, pid, kind, n, metrics, worker, stored, ckeys, times, places, "
    "labels, vkeys, envs, sizes, test_scores, train_scores) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _i8(values: Any) -> bytes:
    return np.ascontiguousarray(values, dtype="<i8").tobytes()


def _f8(values: Any) -> bytes:
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


@dataclass(frozen=True)
class ChunkIds:
    """What a chunk's row refers to: its run, plan, and the ids of its metrics and worker."""

    run: int
    pid: int
    metrics: int
    worker: int
    stored: float


def chunk_row(
    block: RecordBlock,
    ids: ChunkIds,
    ckeys: bytes,
    labels: NDArray[np.int64],
    identities: tuple[bytes, Sequence[int | None]] | None,
) -> tuple[Any, ...]:
    """The row of ``chunks`` of a block: ``ckeys`` its units' content keys end to end.

    ``identities`` are the units' values keys end to end and the ids of their code's
    environments (None: no code), or None when the store keeps no identities.
    """
    vkeys, envs = (None, None) if identities is None else identities
    env_ids = None if envs is None else _i8([_NONE if e is None else e for e in envs])
    return (
        ids.run, ids.pid, block.kind, len(block), ids.metrics, ids.worker, ids.stored,
        ckeys, _f8(block.times), _i8(block.folds), _i8(labels), vkeys, env_ids,
        _i8(block.sizes[:, :2]), _f8(block.test), _f8(block.train),
    )  # fmt: skip


_CHUNK_COLUMNS = (
    "id, pid, kind, n, metrics, worker, stored, ckeys, times, places, labels, sizes, "
    "test_scores, train_scores"
)


def _has_chunks(conn: sqlite3.Connection) -> bool:
    """Whether the store keeps chunks (schema 6); a ``chunks`` that is no table is damage."""
    row = conn.execute("SELECT type FROM sqlite_master WHERE name = 'chunks'").fetchone()
    if row is not None and row[0] != "table":
        raise sqlite3.DatabaseError(f"its chunks are a {row[0]}, not a table")
    return row is not None


def _array(blob: Any, dtype: str, shape: tuple[int, ...]) -> NDArray[Any]:
    """A packed array of a chunk's row; ValueError when it does not hold ``shape``."""
    if type(blob) is not bytes or len(blob) != 8 * int(np.prod(shape)):
        raise ValueError(f"a chunk's array {blob!r:.60} does not hold {shape} numbers")
    return np.frombuffer(blob, dtype=dtype).reshape(shape)


@dataclass(frozen=True)
class Chunk:
    """A row of ``chunks`` read back: its units' columns (see :func:`chunk_row`)."""

    id: int
    pid: int
    kind: str
    metrics: int
    worker: int
    ckeys: bytes
    places: NDArray[np.int64]  # (n, 3): outer, inner (-1: None), candidate
    times: NDArray[np.float64]  # (n, 4): fit_time, score_time, started, finished
    sizes: NDArray[np.int64]  # (n, 2): n_train, n_test
    test: NDArray[np.float64]  # (n, test metrics)
    train: NDArray[np.float64]  # (n, train metrics)

    @classmethod
    def read(cls, row: Sequence[Any], metrics: _Metrics) -> Chunk:
        """A row of :data:`_CHUNK_COLUMNS`; ValueError or KeyError for one parcv did not write."""
        id_, pid, kind, n, metric, worker, _, ckeys, times, places, _, sizes, test, train = row
        test_names, train_names = metrics[metric]
        if type(ckeys) is not bytes or len(ckeys) != _KEY * n:
            raise ValueError(f"chunk {id_} holds {n} units but not their {n} content keys")
        return cls(
            int(id_), int(pid), str(kind), int(metric), int(worker), ckeys,
            _array(places, "<i8", (n, 3)), _array(times, "<f8", (n, 4)),
            _array(sizes, "<i8", (n, 2)), _array(test, "<f8", (n, len(test_names))),
            _array(train, "<f8", (n, len(train_names))),
        )  # fmt: skip

    def __len__(self) -> int:
        return len(self.places)

    def unit(self, j: int) -> Unit:
        """The unit of the chunk's ``j``-th record."""
        outer, inner, candidate = self.places[j].tolist()
        return Unit(self.kind, None if outer < 0 else outer, None if inner < 0 else inner,
                    candidate)  # fmt: skip

    def record(self, j: int, metrics: _Metrics, workers: dict[int, str]) -> Record:
        """The chunk's ``j``-th record, equal to the one stored."""
        test_names, train_names = metrics[self.metrics]
        fit, score, started, finished = self.times[j].tolist()
        n_train, n_test = self.sizes[j].tolist()
        return Record(
            self.unit(j), "ok",
            dict(zip(test_names, self.test[j].tolist(), strict=True)),
            dict(zip(train_names, self.train[j].tolist(), strict=True)),
            fit, score, n_train, n_test, worker=workers[self.worker],
            started=started, finished=finished,
        )  # fmt: skip


def read_chunks(
    conn: sqlite3.Connection, ids: Sequence[int] | None, metrics: _Metrics
) -> list[Chunk]:
    """The chunks ``ids`` (None: every chunk), in id order."""
    if not _has_chunks(conn) or (ids is not None and not len(ids)):
        return []
    query = f"SELECT {_CHUNK_COLUMNS} FROM chunks"
    if ids is None:
        return [Chunk.read(row, metrics) for row in conn.execute(query + " ORDER BY id")]
    wanted = sorted({int(i) for i in ids})
    found = []
    for start in range(0, len(wanted), 500):
        part = wanted[start : start + 500]
        marks = ", ".join("?" * len(part))
        found += [
            Chunk.read(r, metrics) for r in conn.execute(f"{query} WHERE id IN ({marks})", part)
        ]
    return sorted(found, key=lambda chunk: chunk.id)


def as_keys(blob: bytes) -> NDArray[np.void]:
    """Content keys end to end as an array of 16-byte keys (sortable, comparable)."""
    return np.frombuffer(blob, dtype=f"V{_KEY}")


@dataclass(frozen=True)
class StoredKeys:
    """Every stored record's content key and where it is: chunks, then ``records`` rows.

    ``chunk`` is the id of its chunk (-1: a ``records`` row, found by its key), ``at``
    its place in the chunk; ``live`` marks the entries a read finds, the last one
    stored of each key.
    """

    keys: NDArray[np.void]
    chunk: NDArray[np.int64]
    at: NDArray[np.int64]
    live: NDArray[np.bool_]

    def live_keys(self) -> NDArray[np.void]:
        """The content key of each stored record (once each)."""
        return self.keys[self.live]


def read_stored_keys(conn: sqlite3.Connection) -> StoredKeys:
    """The content keys of a store of schema 3 or later, with which entry of each is read."""
    keys: list[bytes] = []
    chunk: list[NDArray[np.int64]] = []
    at: list[NDArray[np.int64]] = []
    if _has_chunks(conn):
        for id_, n, ckeys in conn.execute("SELECT id, n, ckeys FROM chunks ORDER BY id"):
            if type(ckeys) is not bytes or len(ckeys) != _KEY * n:
                raise ValueError(f"chunk {id_} holds {n} units but not their {n} content keys")
            keys.append(ckeys)
            chunk.append(np.full(n, id_, dtype=np.int64))
            at.append(np.arange(n, dtype=np.int64))
    seq = "IFNULL(seq, 0)" if _has_column(conn, "records", "seq") else "0"
    # Rows are told apart by their content key (unique among them): a store of schema 3 to 5
    # made before may keep them in a WITHOUT ROWID table.
    rows = conn.execute(f"SELECT ckey, {seq} FROM records").fetchall()
    if rows:
        ckeys, seqs = zip(*rows, strict=True)
        wrong = next((k for k in ckeys if type(k) is not bytes or len(k) != _KEY), None)
        if wrong is not None:
            raise ValueError(f"the content key {wrong!r} is not {_KEY} bytes")
        keys.append(b"".join(ckeys))
        chunk.append(np.full(len(rows), -1, dtype=np.int64))
        at.append(np.arange(len(rows), dtype=np.int64))
        after = np.array(seqs, dtype=np.int64)
    else:
        after = np.zeros(0, dtype=np.int64)
    all_keys = as_keys(b"".join(keys))
    chunks = np.concatenate(chunk) if chunk else np.zeros(0, np.int64)
    places = np.concatenate(at) if at else np.zeros(0, np.int64)
    # The order keys were stored in: chunk c at 2 c, a records row after chunk seq at 2 seq + 1.
    when = np.concatenate([2 * chunks[: len(chunks) - len(after)], 2 * after + 1])
    return StoredKeys(all_keys, chunks, places, _last_stored(all_keys, when, places))


def _high(keys: NDArray[np.void]) -> NDArray[np.uint64]:
    """The first 8 bytes of each key as a number (sorted as the keys' bytes are)."""
    return np.ascontiguousarray(keys).view(">u8")[::2]


def _last_stored(
    keys: NDArray[np.void], when: NDArray[np.int64], at: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """Whether each entry is the last stored of its key (by ``when``, then ``at``)."""
    n = len(keys)
    ordered = np.sort(_high(keys))
    if not np.any(ordered[1:] == ordered[:-1]):
        return np.ones(n, dtype=bool)  # no key twice (the 8 bytes of each differ)
    order = np.lexsort((at, when, keys))
    last = np.ones(n, dtype=bool)
    last[:-1] = keys[order][1:] != keys[order][:-1]
    live = np.zeros(n, dtype=bool)
    live[order[last]] = True
    return live


def find(stored: NDArray[np.void], wanted: NDArray[np.void]) -> NDArray[np.intp]:
    """The place of each ``wanted`` key among the distinct ``stored`` keys (-1: not there).

    Keys are sorted by their first 8 bytes as numbers (the last 8 then compared), or,
    when two stored keys share them, as 16 bytes (twice as slow).
    """
    if not len(stored):
        return np.full(len(wanted), -1, dtype=np.intp)
    high = _high(stored)
    order = np.argsort(high, kind="stable")
    ordered = high[order]
    if np.any(ordered[1:] == ordered[:-1]):
        order = np.argsort(stored, kind="stable")
        at = order[np.minimum(np.searchsorted(stored[order], wanted), len(stored) - 1)]
    else:
        at = order[np.minimum(np.searchsorted(ordered, _high(wanted)), len(stored) - 1)]
    return np.where(stored[at] == wanted, at, -1).astype(np.intp)


def current_run(conn: sqlite3.Connection) -> int | None:
    """The run that wrote the store last (its chunks' ``run``); None: a store before chunks."""
    if not _has_chunks(conn):
        return None
    row = conn.execute("SELECT value FROM meta WHERE name = 'run'").fetchone()
    return None if row is None else int(row[0])


@dataclass(frozen=True)
class RunUnits:
    """The units of the store's current run (of one plan or all), as columns.

    ``kind`` indexes ``kinds``; ``outer`` and ``inner`` are -1 for None; ``keys`` are
    the content keys of their records. Each unit is there once: the ``units`` rows,
    then the units of the run's own chunks that no row names.
    """

    kinds: list[str]
    pid: NDArray[np.int64]
    kind: NDArray[np.int64]
    outer: NDArray[np.int64]
    inner: NDArray[np.int64]
    candidate: NDArray[np.int64]
    keys: NDArray[np.void]

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, rows: NDArray[Any]) -> RunUnits:
        """The units ``rows`` (a mask or places)."""
        return RunUnits(self.kinds, self.pid[rows], self.kind[rows], self.outer[rows],
                        self.inner[rows], self.candidate[rows], self.keys[rows])  # fmt: skip


def read_run_units(conn: sqlite3.Connection, pid: int | None = None) -> RunUnits:
    """The units of the store's current run: of plan ``pid``, or of every plan (None)."""
    kinds: dict[str, int] = {}
    columns: list[list[NDArray[np.int64]]] = [[], [], [], [], []]
    keys: list[bytes] = []
    where, args = ("", ()) if pid is None else _of_plan(conn, "units", pid)
    plan = "pid" if _has_column(conn, "units", "pid") else "0"
    rows = conn.execute(f"SELECT {plan}, kind, IFNULL(outer, -1), IFNULL(inner, -1), candidate, "
                        f"ckey FROM units{where}", args).fetchall()  # fmt: skip
    if rows:
        *numbers, ckeys = zip(*rows, strict=True)
        numbers[1] = tuple(kinds.setdefault(k, len(kinds)) for k in numbers[1])
        for column, values in zip(columns, numbers, strict=True):
            column.append(np.array(values, dtype=np.int64))
        keys.append(b"".join(ckeys))
    n_rows = len(rows)
    run = current_run(conn)
    if run is not None:
        query = "SELECT pid, kind, n, places, ckeys FROM chunks WHERE run = ?"
        chunk_args: tuple[int, ...] = (run,) if pid is None else (run, pid)
        query += "" if pid is None else " AND pid = ?"
        for chunk_pid, kind, n, places, ckeys in conn.execute(query + " ORDER BY id", chunk_args):
            at = _array(places, "<i8", (n, 3))
            columns[0].append(np.full(n, chunk_pid, dtype=np.int64))
            columns[1].append(np.full(n, kinds.setdefault(kind, len(kinds)), dtype=np.int64))
            for column, values in zip(columns[2:], at.T, strict=True):
                column.append(values.astype(np.int64))
            keys.append(ckeys)
    pid_, kind_, outer, inner, candidate = (
        np.concatenate(c) if c else np.zeros(0, np.int64) for c in columns
    )
    units = RunUnits(list(kinds), pid_, kind_, outer, inner, candidate, as_keys(b"".join(keys)))
    if len(units) == n_rows:
        return units
    return units.take(_once(units, n_rows))


def first_key_of_kind(conn: sqlite3.Connection, kind: str) -> bytes | None:
    """The content key of the first unit of ``kind`` that :func:`read_run_units` reads.

    None when the current run has no such unit. Two queries on ``kind``, where reading
    every unit to find the final one took half a second at a million units. Both read
    ``units`` in the same order: a whole scan of the table (no index holds ``kind``).
    """
    row = conn.execute("SELECT ckey FROM units WHERE kind = ?", (kind,)).fetchone()
    if row is not None:
        return bytes(row[0])
    run = current_run(conn)
    if run is None:
        return None
    found = conn.execute("SELECT ckeys FROM chunks WHERE run = ? AND kind = ? ORDER BY id LIMIT 1",
                         (run, kind)).fetchone()  # fmt: skip
    return None if found is None else bytes(found[0][:_KEY])


def _once(units: RunUnits, n_rows: int) -> NDArray[np.bool_]:
    """Which units to keep: not a chunk's unit that a ``units`` row (or an earlier chunk) names.

    A unit stored twice in one run has one content key (its record stored again), so
    only units sharing a content key are compared.
    """
    keep = np.ones(len(units), dtype=bool)
    high = np.frombuffer(units.keys.tobytes(), dtype=">u8")[::2]
    order = np.argsort(high, kind="stable")
    same = np.flatnonzero(high[order][1:] == high[order][:-1])
    suspects = np.unique(np.concatenate([order[same], order[same + 1]]))
    seen: set[tuple[int, ...]] = set()
    for i in suspects.tolist():  # in order: rows first, then chunks by id
        unit = (int(units.pid[i]), int(units.kind[i]), int(units.outer[i]), int(units.inner[i]),
                int(units.candidate[i]))  # fmt: skip
        if unit in seen and i >= n_rows:
            keep[i] = False
        seen.add(unit)
    return keep


def read_started(
    conn: sqlite3.Connection, stored: StoredKeys, entries: NDArray[np.intp]
) -> NDArray[np.float64]:
    """When the record of each of the ``entries`` of ``stored`` started (its ``started``)."""
    started = np.full(len(entries), np.nan)
    chunk, at = stored.chunk[entries], stored.at[entries]
    in_chunks = chunk >= 0
    ids = np.unique(chunk[in_chunks]).tolist()
    times: dict[int, NDArray[np.float64]] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        query = f"SELECT id, n, times FROM chunks WHERE id IN ({', '.join('?' * len(part))})"
        for id_, n, blob in conn.execute(query, part):
            times[int(id_)] = _array(blob, "<f8", (n, 4))[:, 2]
    if ids:
        sizes = np.array([len(times[i]) for i in ids], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        every = np.concatenate([times[i] for i in ids])
        started[in_chunks] = every[offsets[np.searchsorted(ids, chunk[in_chunks])] + at[in_chunks]]
    rows = np.flatnonzero(~in_chunks)
    if len(rows):
        found = dict(conn.execute("SELECT ckey, started FROM records"))
        started[rows] = [found[k.tobytes()] for k in stored.keys[entries[rows]]]
    return started
