"""Read a store without writing it: its meta, records, folds, rounds and counts.

Each reader opens the file read-only, or reads through a connection of
:func:`~parcv.store.schema.reading` (``conn=``), and never unpickles: records are
built from plain columns and JSON, those of a schema-3 store's plan as a
:class:`~parcv.plan.record_table.RecordTable` (:mod:`parcv.store.columnar`).
"""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import PlanMismatchError, StoreDamagedError
from parcv.plan.code import Environment
from parcv.plan.kinds import Key
from parcv.plan.partition import PartitionFolds
from parcv.plan.records import Predictions, Record, Unit
from parcv.store.arrays import ARRAY_COLUMNS, decode_array
from parcv.store.chunks import (
    RunUnits,
    StoredKeys,
    as_keys,
    find,
    first_key_of_kind,
    read_chunks,
    read_run_units,
    read_started,
    read_stored_keys,
)
from parcv.store.columnar import _table
from parcv.store.messages import _damaged, _n_records, newer_schema
from parcv.store.rows import (
    RoundRow,
    _blob_index,
    _ckey_text,
    _Names,
    _record,
    _with_predictions,
    ckey_blob,
    key_text,
)
from parcv.store.schema import (
    _COLUMNS,
    _V1_COLUMNS,
    _V2_COLUMNS,
    _has_column,
    _has_table,
    _is_schema_1,
    _is_schema_2,
    _of_plan,
    _read_with,
    _reading,
)

__all__ = [
    "ReusedCounts",
    "Stored",
    "collector_paused",
    "count_unnamed_records",
    "count_reused",
    "read_by_values",
    "read_ckeys",
    "read_counts",
    "read_folds",
    "read_kept",
    "read_meta",
    "read_model_entries",
    "read_model_entry",
    "read_partitions",
    "read_records",
    "read_rounds",
    "read_store",
    "read_stored_kinds",
    "read_target",
    "read_unidentified",
]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects that hold no cycles.

    Reading 100,000 records allocates millions of tuples, dicts and records: the
    collections they trigger, each scanning every object built so far, took a
    third of the read (and of a report built from them, a tenth more). Nested
    pauses leave the collector to the outermost one.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def read_store(path: str | Path) -> tuple[dict[str, str], MutableMapping[Key, Record]]:
    """Read a store's meta and records without running or writing anything."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no parcv store at {str(p)!r}.")
    return read_meta(p), read_records(p)


def read_meta(path: Path) -> dict[str, str]:
    """Read the meta table (fingerprint, plan description) without writing anything.

    A store of a newer schema than this parcv's is refused (PlanMismatchError), naming it.
    """
    with _reading(path) as conn:
        try:
            meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        except sqlite3.DatabaseError as err:
            if "malformed" in str(err):  # a SQLite file whose pages are damaged
                what = f"its meta table cannot be read ({err})"
                raise StoreDamagedError(_damaged(path, what)) from err
            raise PlanMismatchError(
                f"store {str(path)!r} is not a parcv store ({err}); it was left unchanged. "
                "Check the path: pass a store written by parcv, or a new path."
            ) from err
    newer = newer_schema(path, meta)
    if newer is not None:
        raise PlanMismatchError(newer)
    return meta


def read_records(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> MutableMapping[Key, Record]:
    """Read every record of plan ``pid`` of the store's current run by graph key, read-only.

    Plan 0 is the plan the run started with; a strategy's rounds and refits
    are the plans after it (:func:`read_rounds`). A store of schema 3 gives a
    :class:`~parcv.plan.record_table.RecordTable`: its rows read as columns,
    each record built when looked up.
    """
    with collector_paused():
        return _read_records(path, pid, conn)


def _read_records(
    path: Path, pid: int = 0, conn: sqlite3.Connection | None = None
) -> MutableMapping[Key, Record]:
    with _read_with(path, conn) as conn:
        try:
            if _is_schema_1(conn):
                # Stores written before fast CV have no fold_scores column: read it as NULL.
                columns = (
                    _V1_COLUMNS
                    if _has_column(conn, "records", "fold_scores")
                    else (_V1_COLUMNS.replace("fold_scores", "NULL AS fold_scores"))
                )
                rows = conn.execute(f"SELECT {columns} FROM records").fetchall()
                return {r.key: r for r in _records(path, rows, None)}
            if not _is_schema_2(conn):
                kept = _read_predictions(conn, path)
                return _table(path, conn, pid, _Names.read(conn), kept)
            rows, units = _unit_rows(conn, _V2_COLUMNS, pid)
        except sqlite3.DatabaseError as err:
            raise StoreDamagedError(_damaged(path, f"its records cannot be read ({err})")) from err
        kept = _read_predictions(conn, path)
    found = _records(path, rows, units)  # schema 2
    if not kept:
        return {r.key: r for r in found}
    return {
        r.key: _with_predictions(r, kept.get(row[0])) for row, r in zip(rows, found, strict=True)
    }


def _unit_rows(
    conn: sqlite3.Connection, columns: str, pid: int = 0
) -> tuple[list[Any], list[Unit]]:
    """The record rows of plan ``pid``'s units, and those units.

    Two scans in key order, joined by a dict: a third faster than SQL's join,
    which looks each unit's record up in the records tree.
    """
    stored = {row[0]: row for row in conn.execute(f"SELECT {columns} FROM records")}
    rows, units = [], []
    where, args = _of_plan(conn, "units", pid)
    query = f"SELECT ckey, kind, outer, inner, candidate FROM units{where}"
    for ckey, *unit in conn.execute(query, args):
        row = stored.get(ckey)
        if row is not None:
            rows.append(row)
            units.append(Unit(*unit))
    return rows, units


def _records(
    path: Path, rows: list[Any], units: list[Unit] | None, names: _Names | None = None
) -> list[Record]:
    """Records of rows (of ``units``, schema 2 or 3); a row parcv did not write is damage.

    ``names`` are the shared strings of a schema-3 store (None: an older one).
    """
    try:
        if units is None:
            return [_record(row, None, names) for row in rows]
        return [_record(row, unit, names) for row, unit in zip(rows, units, strict=True)]
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        what = f"a record holds text parcv did not write ({type(err).__name__}: {err})"
        raise StoreDamagedError(_damaged(path, what)) from err


def _read_predictions(
    conn: sqlite3.Connection, path: Path, ckeys: set[Any] | None = None
) -> dict[Any, Predictions]:
    """The stored predictions of the current plan's units (or of ``ckeys``), by stored content key.

    Plain bytes and JSON only: nothing is unpickled.
    """
    if not _has_table(conn, "predictions"):
        return {}
    if conn.execute("SELECT 1 FROM predictions LIMIT 1").fetchone() is None:
        return {}  # most runs keep none: skip the IN (units) of 100,000 keys below
    query = f"SELECT ckey, method, {ARRAY_COLUMNS} FROM predictions"
    if ckeys is None:
        query += " WHERE ckey IN (SELECT ckey FROM units)"
    out: dict[Any, dict[str, Any]] = {}
    try:
        for ckey, method, *array in conn.execute(query):
            if ckeys is None or ckey in ckeys:
                out.setdefault(ckey, {})[method] = decode_array(*array)
    except (sqlite3.DatabaseError, ValueError, TypeError) as err:
        what = f"its predictions cannot be read ({type(err).__name__}: {err})"
        raise StoreDamagedError(_damaged(path, what)) from err
    return {ckey: Predictions(arrays) for ckey, arrays in out.items()}


def read_target(path: Path) -> Any:
    """Return the target ``y`` a run with predictions stored, or None (read-only)."""
    with _reading(path) as conn:
        if not _has_table(conn, "target"):
            return None
        row = conn.execute(f"SELECT {ARRAY_COLUMNS} FROM target WHERE name = 'y'").fetchone()
    return None if row is None else decode_array(*row)


def read_folds(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> list[tuple[int | None, int | None, np.ndarray, np.ndarray]]:
    """Read the fold index arrays of plan ``pid``, in the order they were written."""
    with _read_with(path, conn) as conn:
        where, args = _of_plan(conn, "folds", pid)
        query = f"SELECT outer, inner, train, test FROM folds{where} ORDER BY rowid"
        rows = conn.execute(query, args).fetchall()
    return [
        (
            o,
            i,
            np.frombuffer(tr, dtype="<i8").astype(np.intp),
            np.frombuffer(te, dtype="<i8").astype(np.intp),
        )
        for o, i, tr, te in rows
    ]


def read_partitions(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> dict[int | None, PartitionFolds]:
    """Read the compact (leave-one-out) fold sets of plan ``pid``, by outer fold."""
    with _read_with(path, conn) as conn:
        if not _has_table(conn, "partitions"):
            return {}
        where, args = _of_plan(conn, "partitions", pid)
        rows = conn.execute(f"SELECT outer, rows, tests, offsets, leave_one_out FROM partitions"
                            f"{where} ORDER BY rowid", args).fetchall()  # fmt: skip
    return {
        o: PartitionFolds(_blob_index(r), _blob_index(t), _blob_index(off), bool(loo))
        for o, r, t, off, loo in rows
    }


def read_rounds(path: Path) -> dict[int, RoundRow]:
    """Read the plans a run added after its first (a strategy's rounds, refits), by plan id."""
    with _reading(path) as conn:
        if not _has_table(conn, "rounds"):
            return {}
        try:
            rows = conn.execute(
                "SELECT pid, search, round, part, plan, decision FROM rounds ORDER BY pid"
            ).fetchall()
        except sqlite3.DatabaseError as err:
            raise StoreDamagedError(_damaged(path, f"its rounds cannot be read ({err})")) from err
    return {int(pid): RoundRow(str(s), int(r), int(p), str(plan), str(d))
            for pid, s, r, p, plan, d in rows}  # fmt: skip


def read_counts(path: Path) -> tuple[int, int]:
    """Return (records the store holds of any plan, units of its current plan)."""
    with _reading(path) as conn:
        if _is_schema_1(conn) or _is_schema_2(conn):
            n_records = conn.execute("SELECT count(*) FROM records").fetchone()[0]
            if _is_schema_1(conn):
                return n_records, n_records
            return n_records, conn.execute("SELECT count(*) FROM units").fetchone()[0]
        n_records = _n_records(conn, path)
        try:
            return n_records, len(read_run_units(conn))
        except (ValueError, TypeError) as err:  # a units row or the run's id parcv did not write
            what = f"its units cannot be read ({type(err).__name__}: {err})"
            raise StoreDamagedError(_damaged(path, what)) from err


@dataclass(frozen=True)
class _RunRecords:
    """The units of the store's current run and where the record of each is (-1: none)."""

    units: RunUnits
    stored: StoredKeys
    entry: NDArray[np.intp]

    def kinds(self, rows: NDArray[np.bool_]) -> dict[str, int]:
        """How many of the units ``rows`` there are, by kind."""
        counts = np.bincount(self.units.kind[rows], minlength=len(self.units.kinds))
        return {kind: int(n) for kind, n in zip(self.units.kinds, counts.tolist(), strict=True)
                if n}  # fmt: skip


def _run_records(conn: sqlite3.Connection, path: Path) -> _RunRecords:
    """The units of the current run with their stored records (schema 3 or later)."""
    try:
        stored, units = read_stored_keys(conn), read_run_units(conn)
    except ValueError as err:
        raise StoreDamagedError(_damaged(path, f"its records cannot be read ({err})")) from err
    live = np.flatnonzero(stored.live)
    place = find(stored.keys[live], units.keys)
    entry = np.full(len(place), -1, dtype=np.intp)
    entry[place >= 0] = live[place[place >= 0]]
    return _RunRecords(units, stored, entry)


def _stored_kinds(conn: sqlite3.Connection, path: Path) -> dict[str, int]:
    if _is_schema_1(conn):  # records by graph key: each is a unit of the one plan
        query = "SELECT kind, count(*) FROM records GROUP BY kind"
        return {str(kind): int(n) for kind, n in conn.execute(query)}
    if _is_schema_2(conn):
        query = (
            "SELECT u.kind, count(*) FROM units u JOIN records r ON r.ckey = u.ckey GROUP BY u.kind"
        )
        return {str(kind): int(n) for kind, n in conn.execute(query)}
    found = _run_records(conn, path)
    return found.kinds(found.entry >= 0)


def read_stored_kinds(path: Path) -> dict[str, int]:
    """The units of the store's last run whose record is stored, by kind, read-only.

    Every plan of the run counts: a plain run's one plan, and a run in rounds' part
    plans and refits (:func:`read_rounds`), which the first plan's records
    (:func:`read_records`) leave out.
    """
    with _reading(path) as conn:
        return _stored_kinds(conn, path)


@dataclass(frozen=True)
class ReusedCounts:
    """How the current plan's units got their records, for a run started at ``since``.

    Parameters
    ----------
    reused : dict of str to int
        Units whose record was computed before ``since`` (by an earlier run),
        by unit kind.
    computed : int
        Units whose record was computed since.
    fitted : int
        Distinct records among those: identical units of one run share one.
    """

    reused: dict[str, int]
    computed: int
    fitted: int


def count_reused(path: Path, since: float) -> ReusedCounts:
    """Count the current plan's units reused from before ``since`` and computed since."""
    with _reading(path) as conn:
        found = _run_records(conn, path)
        have = np.flatnonzero(found.entry >= 0)
        started = read_started(conn, found.stored, found.entry[have])
    before = np.zeros(len(found.units), dtype=bool)
    before[have[started < since]] = True
    since_rows = have[started >= since]
    fitted = len(np.unique(found.units.keys[since_rows]))
    return ReusedCounts(found.kinds(before), len(since_rows), fitted)


def read_ckeys(path: Path) -> set[str]:
    """Return the content keys of every record in the store (empty for a schema-1 store)."""
    with _reading(path) as conn:
        if _is_schema_1(conn):
            return set()
        if _is_schema_2(conn):
            return {_ckey_text(row[0]) for row in conn.execute("SELECT ckey FROM records")}
        try:
            keys = read_stored_keys(conn).live_keys()
        except ValueError as err:
            raise StoreDamagedError(_damaged(path, f"its records cannot be read ({err})")) from err
    joined = keys.tobytes().hex()
    return {joined[i : i + 32] for i in range(0, len(joined), 32)}


def read_model_entry(path: Path, ckey: str | None = None) -> tuple[str, str] | None:
    """Return (file, sha256) of a recorded model: the current plan's final, or unit ``ckey``'s."""
    with _reading(path) as conn:
        if _is_schema_1(conn):
            return None  # such stores recorded no digest: their model files are never loaded
        if ckey is None and _is_schema_2(conn):
            found = conn.execute("SELECT ckey FROM units WHERE key = ?", (key_text(("final",)),))
            row = found.fetchone()
            if row is None:
                return None
            stored = row[0]
        elif ckey is None:
            final = first_key_of_kind(conn, "final")
            if final is None:
                return None
            stored = final
        else:
            stored = ckey if _is_schema_2(conn) else ckey_blob(ckey)
        row = conn.execute("SELECT file, sha256 FROM models WHERE ckey = ?", (stored,)).fetchone()
    return None if row is None else (row[0], row[1])


def count_unnamed_records(path: Path) -> int:
    """Records of a schema-4 store that no unit of its last plan names (0 for other schemas).

    Schema 4 described the last plan it ran only: a halving search stored each rung as
    a plan of its own, so the records of every rung but the last are named by none.
    """
    with _reading(path) as conn:
        if _is_schema_1(conn) or _is_schema_2(conn) or _has_column(conn, "units", "pid"):
            return 0
        query = "SELECT count(*) FROM records WHERE ckey NOT IN (SELECT ckey FROM units)"
        return int(conn.execute(query).fetchone()[0])


def read_model_entries(path: Path) -> list[tuple[str, str, str]]:
    """Every recorded model: (content key as hex, file, SHA-256 or tag), read-only."""
    with _reading(path) as conn:
        if _is_schema_1(conn) or not _has_table(conn, "models"):
            return []
        rows = conn.execute("SELECT ckey, file, sha256 FROM models ORDER BY ckey").fetchall()
    return [(_ckey_text(ckey), str(file), str(digest)) for ckey, file, digest in rows]


@dataclass(frozen=True)
class Stored:
    """A stored record found by its values key: its content key, code and start time."""

    ckey: str
    environment: Environment | None
    started: float


def _identities(conn: sqlite3.Connection) -> tuple[NDArray[np.void], NDArray[np.void], list[Any]]:
    """Every stored (values key, content key, environment id): the rows', then the chunks'."""
    vkeys: list[bytes] = []
    ckeys: list[bytes] = []
    envs: list[Any] = []
    rows = conn.execute("SELECT vkey, ckey, env FROM identities").fetchall()
    if rows:
        v, c, e = zip(*rows, strict=True)
        vkeys.append(b"".join(v))
        ckeys.append(b"".join(c))
        envs += e
    if _has_table(conn, "chunks"):
        query = "SELECT n, vkeys, ckeys, envs FROM chunks WHERE vkeys IS NOT NULL"
        for n, v, c, e in conn.execute(query):
            vkeys.append(v)
            ckeys.append(c)
            ids = np.frombuffer(e, dtype="<i8").tolist() if e is not None else [-1] * n
            envs += [None if i < 0 else i for i in ids]
    return as_keys(b"".join(vkeys)), as_keys(b"".join(ckeys)), envs


def _by_values(
    conn: sqlite3.Connection, vkeys: Iterable[str], envs: dict[int, Environment | None]
) -> dict[str, Stored]:
    if not _has_table(conn, "identities"):
        return {}
    wanted = as_keys(b"".join(sorted({ckey_blob(k) for k in vkeys})))
    if not len(wanted):
        return {}
    values, ckeys, env_ids = _identities(conn)
    mine = np.flatnonzero(find(wanted, values) >= 0)
    stored = read_stored_keys(conn)
    live = np.flatnonzero(stored.live)
    place = find(stored.keys[live], ckeys[mine])
    mine, entry = mine[place >= 0], live[place[place >= 0]]
    started = read_started(conn, stored, entry)
    # The newest record of each values key: the code that ran last (the first of a tie).
    order = np.lexsort((-np.arange(len(mine)), started, values[mine]))
    last = np.ones(len(order), dtype=bool)
    last[:-1] = values[mine][order][1:] != values[mine][order][:-1]
    found: dict[str, Stored] = {}
    for i in order[last].tolist():
        env = env_ids[mine[i]]
        if env is not None and env not in envs:
            row = conn.execute("SELECT entries FROM environments WHERE id = ?", (env,))
            envs[env] = Environment.from_json(row.fetchone()[0])
        found[values[mine[i]].tobytes().hex()] = Stored(
            ckeys[mine[i]].tobytes().hex(), None if env is None else envs[env], float(started[i])
        )
    return found


def read_by_values(path: Path, vkeys: Iterable[str]) -> dict[str, Stored]:
    """:meth:`Store.by_values` of a store file, read-only."""
    with _reading(path) as conn:
        return _by_values(conn, vkeys, {})


def read_kept(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> dict[Key, tuple[str, ...]]:
    """The current plan's units that took a record of other code, with why (resume="values")."""
    with _read_with(path, conn) as conn:
        if not _has_table(conn, "kept"):
            return {}
        where, args = _of_plan(conn, "kept", pid)
        rows = conn.execute(f"SELECT key, causes FROM kept{where}", args).fetchall()
    return {tuple(json.loads(k)): tuple(json.loads(c)) for k, c in rows}


def _n_unidentified(conn: sqlite3.Connection) -> int:
    """Records stored without their values key (by a parcv before code identity)."""
    keys = read_stored_keys(conn).live_keys()
    if not _has_table(conn, "identities"):
        return len(keys)
    _, identified, _ = _identities(conn)
    return int(np.count_nonzero(find(np.unique(identified), keys) < 0))


def _stored_records(
    conn: sqlite3.Connection, path: Path, ckeys: Iterable[str]
) -> dict[str, Record]:
    """The stored records among ``ckeys`` (labelled as the plan that stored them), by key."""
    blobs = {ckey_blob(k) for k in ckeys}
    wanted = as_keys(b"".join(sorted(blobs)))
    try:
        stored = read_stored_keys(conn)
        live = np.flatnonzero(stored.live)
        place = find(stored.keys[live], wanted)
        entry = live[place[place >= 0]]
        chunk, at = stored.chunk[entry], stored.at[entry]
        names = _Names.read(conn)
        out: dict[str, Record] = {}
        chunks = {c.id: c for c in read_chunks(conn, np.unique(chunk[chunk >= 0]).tolist(),
                                               names.metrics)}  # fmt: skip
        for c, j in zip(chunk[chunk >= 0].tolist(), at[chunk >= 0].tolist(), strict=True):
            found = chunks[c]
            out[found.ckeys[16 * j : 16 * j + 16].hex()] = found.record(j, names.metrics,
                                                                        names.workers)  # fmt: skip
    except (ValueError, TypeError, KeyError) as err:
        what = f"a record holds text parcv did not write ({type(err).__name__}: {err})"
        raise StoreDamagedError(_damaged(path, what)) from err
    in_rows = [k.tobytes() for k in stored.keys[entry[chunk < 0]]]
    rows = []
    for start in range(0, len(in_rows), 500):
        part = in_rows[start : start + 500]
        query = f"SELECT {_COLUMNS} FROM records WHERE ckey IN ({', '.join('?' * len(part))})"
        rows += conn.execute(query, part).fetchall()
    kept = _read_predictions(conn, path, blobs)
    for row, record in zip(rows, _records(path, rows, None, names), strict=True):
        out[row[0].hex()] = _with_predictions(record, kept.get(row[0]))
    return out


def read_unidentified(path: Path) -> int:
    """:meth:`Store.n_unidentified` of a store file, read-only."""
    with _reading(path) as conn:
        if _is_schema_1(conn) or _is_schema_2(conn):
            return 0
        return _n_unidentified(conn)
