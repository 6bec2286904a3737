"""A plan's stored records read as columns: the record table a load gets.

The records and the units of a plan are each read in one scan, block by block,
into numpy columns, and joined by content key (:func:`_table`). A plain record is
built from the columns when it is looked up; a row holding more than numbers (a
failure, warnings, fold scores, predictions) is read whole and built at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import StoreDamagedError
from parcv.plan.record_table import RecordTable, unit_at
from parcv.plan.records import Predictions, Record, Unit
from parcv.store.chunks import (
    Chunk,
    RunUnits,
    find,
    read_chunks,
    read_run_units,
    read_stored_keys,
)
from parcv.store.messages import _damaged
from parcv.store.rows import _ckey_text, _Names, _record, _unpack_error, _with_predictions
from parcv.store.schema import _UNIT_COLUMNS

__all__: list[str] = []


# What a table reads of each record: its content key, numbers, and flags; a row that holds
# more than numbers (a failure, warnings, fold scores) is then read whole (_UNIT_COLUMNS).
_TABLE_COLUMNS = (
    "ckey, IFNULL(status = 'ok', 0), metrics, test_scores, train_scores, fit_time, "
    "score_time, n_train, n_test, worker, started, finished, IFNULL(warnings != '[]', 1), "
    "error_type IS NOT NULL OR fold_scores IS NOT NULL"
)
_OK, _METRICS, _TEST, _TRAIN, _FIT_TIME, _SCORE_TIME, _N_TRAIN, _N_TEST = range(1, 9)
_WORKER, _STARTED, _FINISHED, _WARNED, _MORE = range(9, 14)
_WHOLE = (
    "NOT IFNULL(status = 'ok', 0) OR IFNULL(warnings != '[]', 1) OR error_type IS NOT NULL "
    "OR fold_scores IS NOT NULL"
)
# Rows read and turned into columns at a time: a block's tuples are all a read keeps.
_BLOCK = 65_536


def _table(
    path: Path,
    conn: sqlite3.Connection,
    pid: int,
    names: _Names,
    kept: dict[Any, Predictions],
) -> RecordTable:
    """The records of plan ``pid``'s units as a table: numbers as columns, a Record when looked up.

    The units are matched to the stored records by content key with numpy's sort
    (:mod:`parcv.store.chunks`); the chunks holding their records are read whole
    into columns, the ``records`` rows in one scan, block by block: no tuple or
    :class:`Unit` is kept per plain record. Everything a record is built from is
    checked, as building each would: the packed scores against their metric names,
    the numbers' types, the worker ids, and the rows holding more than numbers (a
    failure, warnings, fold scores, predictions), which are built now. A plain
    record is built from the columns when looked up.
    """
    try:
        units = read_run_units(conn, pid)
        keys = read_stored_keys(conn)
        live = np.flatnonzero(keys.live)
        place = find(keys.keys[live], units.keys)
        units = units.take(place >= 0)
        entry = live[place[place >= 0]]
        chunk, at = keys.chunk[entry], keys.at[entry]
        stored = _StoredRows(names, kept)
        # A plan after the first (a part or refit of a run in rounds) holds a small share of
        # the store's records: a sampler's run of n trials (n plans) read only its own.
        in_rows = {k.tobytes() for k in keys.keys[entry[chunk < 0]]}
        if in_rows:
            cursor = conn.execute(f"SELECT {_TABLE_COLUMNS} FROM records")
            while block := cursor.fetchmany(_BLOCK):
                mine = [row for row in block if row[0] in in_rows]
                if mine:
                    stored.add(mine)
        for found in read_chunks(conn, np.unique(chunk[chunk >= 0]).tolist(), names.metrics):
            stored.add_chunk(found)
        places = stored.places(chunk, at, keys.keys[entry])
        return stored.table(units, places, _whole_rows(conn, set(stored.special.values()), kept))
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as err:
        what = f"a record holds text parcv did not write ({type(err).__name__}: {err})"
        raise StoreDamagedError(_damaged(path, what)) from err


def _whole_rows(
    conn: sqlite3.Connection, ckeys: set[Any], kept: dict[Any, Predictions]
) -> dict[Any, Sequence[Any]]:
    """The rows of ``_UNIT_COLUMNS`` of the records ``ckeys`` (those read whole), by content key.

    One scan finds them (those with predictions too); a row that changed since the
    first scan (a run writing beside the reader) is looked up by its key.
    """
    if not ckeys:
        return {}
    where = _WHOLE + (" OR ckey IN (SELECT ckey FROM predictions)" if kept else "")
    query = f"SELECT {_UNIT_COLUMNS} FROM records WHERE {where}"
    found = {row[0]: row for row in conn.execute(query) if row[0] in ckeys}
    query = f"SELECT {_UNIT_COLUMNS} FROM records WHERE ckey = ?"
    for ckey in ckeys - set(found):
        row = conn.execute(query, (ckey,)).fetchone()
        if row is None:
            raise KeyError(f"the record {_ckey_text(ckey)} is gone from the records table")
        found[ckey] = row
    return found


class _StoredRows:
    """The records of a store as columns, read a block of rows at a time (see :func:`_table`)."""

    _NUMBERS = (("fit_time", _FIT_TIME, np.float64), ("score_time", _SCORE_TIME, np.float64),
                ("started", _STARTED, np.float64), ("finished", _FINISHED, np.float64),
                ("n_train", _N_TRAIN, np.int64), ("n_test", _N_TEST, np.int64),
                ("worker", _WORKER, np.int64), ("metrics", _METRICS, np.int64))  # fmt: skip

    def __init__(self, names: _Names, kept: dict[Any, Predictions]) -> None:
        self.names, self.kept = names, kept
        self.blocks: dict[str, list[NDArray[Any]]] = {
            name: [] for name in ("ok", "warned", *(n for n, _, _ in self._NUMBERS))
        }  # every column, for a store holding no record too
        self.special: dict[int, Any] = {}  # content keys of the rows read whole, by place
        self.bad: dict[int, Exception] = {}  # rows whose scores do not read, by place
        self.n = 0
        self.rows: dict[Any, int] = {}  # the place of each records row read, by content key
        self.chunks: dict[int, int] = {}  # the place of each chunk's first record, by id

    def _put(self, name: str, values: NDArray[Any]) -> None:
        self.blocks.setdefault(name, []).append(values)

    def add(self, block: list[Any]) -> None:
        """Turn a block of rows into columns; keep its rows that hold more than numbers."""
        n = len(block)
        by_column = list(zip(*block, strict=True))
        self.rows.update((k, self.n + i) for i, k in enumerate(by_column[0]))
        ok = np.array(by_column[_OK], dtype=bool)
        self._put("ok", ok)
        warned = np.array(by_column[_WARNED], dtype=bool)
        self._put("warned", warned)
        for name, at, dtype in self._NUMBERS:
            self._put(name, _numbers(by_column[at], dtype))
        for name, values in self._scores(by_column, self.blocks["metrics"][-1]).items():
            if name not in self.blocks:  # a metric first met now: NaN in the blocks before
                self.blocks[name] = [np.full(len(b), np.nan) for b in self.blocks["ok"][:-1]]
            self._put(name, values)
        self._fill(n)
        special = ~ok | warned | np.array(by_column[_MORE], dtype=bool)
        if self.kept:
            special |= np.fromiter((k in self.kept for k in by_column[0]), dtype=bool, count=n)
        for i in np.flatnonzero(special).tolist():
            self.special[self.n + i] = block[i][0]
        self.n += n

    def _fill(self, n: int) -> None:
        """NaN for the ``n`` records just added in the columns of metrics they have no score of."""
        for blocks in self.blocks.values():
            if len(blocks) < len(self.blocks["ok"]):
                blocks.append(np.full(n, np.nan))

    def add_chunk(self, chunk: Chunk) -> None:
        """Turn a chunk of plain records into columns (see :mod:`parcv.store.chunks`)."""
        n = len(chunk)
        self.chunks[chunk.id] = self.n
        self._put("ok", np.ones(n, dtype=bool))
        self._put("warned", np.zeros(n, dtype=bool))
        columns = {"fit_time": chunk.times[:, 0], "score_time": chunk.times[:, 1],
                   "started": chunk.times[:, 2], "finished": chunk.times[:, 3],
                   "n_train": chunk.sizes[:, 0], "n_test": chunk.sizes[:, 1],
                   "worker": np.full(n, chunk.worker, dtype=np.int64),
                   "metrics": np.full(n, chunk.metrics, dtype=np.int64)}  # fmt: skip
        for name, values in columns.items():
            self._put(name, values)
        test_names, train_names = self.names.metrics[chunk.metrics]
        for which, metric_names, scores in (("test", test_names, chunk.test),
                                            ("train", train_names, chunk.train)):  # fmt: skip
            for j, metric in enumerate(metric_names):
                name = f"{which}:{metric}"
                if name not in self.blocks:  # a metric first met now: NaN in the blocks before
                    self.blocks[name] = [np.full(len(b), np.nan) for b in self.blocks["ok"][:-1]]
                self._put(name, scores[:, j])
        self._fill(n)
        self.n += n

    def places(
        self, chunk: NDArray[np.int64], at: NDArray[np.int64], keys: NDArray[np.void]
    ) -> NDArray[np.intp]:
        """The place among the records read of each entry: a chunk's id and place, or its key."""
        out = np.empty(len(chunk), dtype=np.intp)
        in_chunks = chunk >= 0
        ids, which = np.unique(chunk[in_chunks], return_inverse=True)
        first = np.array([self.chunks[c] for c in ids.tolist()], dtype=np.intp)
        out[in_chunks] = first[which] + at[in_chunks]
        out[~in_chunks] = [self.rows[k.tobytes()] for k in keys[~in_chunks]]
        return out

    def _scores(self, by_column: list[Any], metrics: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
        """The score columns of a block; rows whose scores do not read are kept in ``bad``."""
        n = len(metrics)
        scores: dict[str, NDArray[np.float64]] = {}
        for m in np.unique(metrics).tolist():
            at_rows = np.flatnonzero(metrics == m)
            for which, at in (("test", _TEST), ("train", _TRAIN)):
                blobs = [by_column[at][i] for i in at_rows.tolist()]
                try:
                    metric_names = self.names.metrics[m][0 if which == "test" else 1]
                    values = _packed_scores(blobs, metric_names)
                except (KeyError, ValueError, TypeError) as err:
                    for i in at_rows.tolist():  # damage: refused if a unit of the plan reads it
                        self.bad.setdefault(self.n + i, err)
                    continue
                for j, metric in enumerate(metric_names):
                    column = scores.setdefault(f"{which}:{metric}", np.full(n, np.nan))
                    column[at_rows] = values[:, j]
        return scores

    def table(
        self, units: RunUnits, places: NDArray[np.intp], whole: dict[Any, Sequence[Any]]
    ) -> RecordTable:
        """The table of ``units``, whose records are at ``places`` among those read.

        ``whole`` holds the rows read whole (:data:`_UNIT_COLUMNS`) by content key.
        """
        for place in set(self.bad).intersection(places.tolist()):
            raise self.bad[place]
        joined = {}
        for name in list(self.blocks):
            joined[name] = np.concatenate(self.blocks.pop(name) or [np.zeros(0)])[places]
        unknown = set(np.unique(joined["worker"]).tolist()) - set(self.names.workers)
        if unknown:
            raise KeyError(f"worker ids {sorted(unknown)} are not in the workers table")
        joined.update(kind=units.kind.astype(np.int8), outer=units.outer, inner=units.inner,
                      candidate=units.candidate)  # fmt: skip
        plain = _PlainRows(joined, units.kinds, self.names)
        built = {}
        if self.special:
            special = np.array(sorted(self.special), dtype=np.intp)
            for i in np.flatnonzero(np.isin(places, special)).tolist():
                built[i] = self._build(whole[self.special[int(places[i])]], plain.unit(i))
        unit_columns: tuple[list[str], NDArray[np.integer], NDArray[np.integer],
                            NDArray[np.integer], NDArray[np.integer]] = (
            plain.kinds, joined["kind"], joined["outer"], joined["inner"], joined["candidate"]
        )  # fmt: skip
        return RecordTable.from_arrays(unit_columns, _table_columns(joined), plain.build, built)

    def _build(self, row: Sequence[Any], unit: Unit) -> Record:
        record = _record(row, unit, self.names)
        return _with_predictions(record, self.kept.get(row[0])) if self.kept else record


def _table_columns(joined: dict[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    """The columns a table is given: flags, times and scores (empty: of no rows read)."""
    flags, times = ("ok", "warned"), ("fit_time", "score_time", "started")
    return {name: values.astype(bool if name in flags else np.float64)
            for name, values in joined.items()
            if name in flags or name in times or name.startswith(("test:", "train:"))}  # fmt: skip


class _PlainRows:
    """What a plain record (ok; no error, warnings, fold scores or predictions) is built from."""

    def __init__(self, columns: dict[str, NDArray[Any]], kinds: list[str], names: _Names) -> None:
        self.kinds, self.names = kinds, names
        self.c = columns

    def unit(self, i: int) -> Unit:
        """The unit of row ``i``."""
        return unit_at(self.kinds, self.c, i)

    def build(self, i: int) -> Record:
        """The record of row ``i``, equal to the one its stored row reads as."""
        c, names = self.c, self.names
        test, train = names.metrics[int(c["metrics"][i])]
        return Record(
            self.unit(i), "ok",
            {m: float(c[f"test:{m}"][i]) for m in test},
            {m: float(c[f"train:{m}"][i]) for m in train},
            float(c["fit_time"][i]), float(c["score_time"][i]),
            int(c["n_train"][i]), int(c["n_test"][i]),
            worker=names.workers[int(c["worker"][i])],
            started=float(c["started"][i]), finished=float(c["finished"][i]),
        )  # fmt: skip


def _numbers(values: Sequence[Any], dtype: type[np.generic]) -> NDArray[Any]:
    """A column of numbers read from the store: TypeError for a value parcv did not write."""
    array = np.array(values)
    if array.dtype.kind not in ("i", "f" if dtype is np.float64 else "i") and len(array):
        exact = (int, float) if dtype is np.float64 else (int,)
        wrong = next((v for v in values if type(v) not in exact), values[0])
        raise TypeError(f"{wrong!r} is not a number of type {np.dtype(dtype).name}")
    return array.astype(dtype, copy=False)


def _joined(blobs: Sequence[Any], size: int) -> bytes | None:
    """The bytes of ``blobs`` end to end if each is bytes of length ``size``, else None."""
    try:
        joined = b"".join(blobs)
    except TypeError:  # text, a number or NULL
        return None
    lengths = np.fromiter(map(len, blobs), dtype=np.intp, count=len(blobs))
    return joined if len(joined) == size * len(blobs) and (lengths == size).all() else None


def _packed_scores(blobs: list[Any], names: list[str]) -> NDArray[np.float64]:
    """(rows, metrics) float64 scores of packed blobs, each checked to hold ``names``."""
    size = 8 * len(names)
    joined = _joined(blobs, size)
    if joined is None:
        _unpack_error(next(b for b in blobs if type(b) is not bytes or len(b) != size), names)
    return np.frombuffer(joined, dtype="<f8").reshape(len(blobs), len(names))
