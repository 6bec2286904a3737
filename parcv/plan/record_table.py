"""Records kept as columns: many records without an object per record.

A sweep of a million fit units needs their scores and times as (candidate, fold)
matrices, their failures and their warnings, not a million :class:`Record`
objects (about 800 bytes each). :class:`RecordTable` keeps records as numpy
columns and builds a :class:`Record` only when one is looked up. A store's
table is read whole (:mod:`parcv.store.columnar`); the driver's grows as records
arrive (:meth:`RecordTable.add`) and keeps as objects only the records that hold
more than numbers (a failure, warnings, fold scores, predictions, a model).
:meth:`RecordTable.fit_matrix` gives one outer fold's matrix of a column in one
numpy step.
"""

from __future__ import annotations

from collections.abc import (
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from parcv.plan.kinds import KINDS, Key
from parcv.plan.record_batch import RecordBatch, RecordBlock, is_plain
from parcv.plan.records import Record, Unit
from parcv.plan.units import UnitGrid

__all__ = ["RecordTable", "RecordList", "unit_at"]

# Float columns of every growing table; plain records are rebuilt from these, ints, scores.
_FLOATS = ("fit_time", "score_time", "started", "finished")


class RecordTable(MutableMapping[Key, Record]):
    """Records by key, kept as columns.

    Parameters
    ----------
    units : sequence of Unit
        The unit of each row.
    columns : mapping of str to ndarray
        One value per row: ``ok`` and ``warned`` (bool), ``fit_time``,
        ``score_time`` and ``started`` (float), and ``test:<metric>`` /
        ``train:<metric>`` (float, NaN where a row has no such score).
    build : callable
        ``build(i)`` is the :class:`Record` of row ``i``; called once per row
        looked up.
    built : mapping of int to Record, optional
        Records of rows built already (those a store checked as it read them).

    Examples
    --------
    >>> from parcv.plan.records import Record, Unit
    >>> units = [Unit("fit", None, i, c) for c in range(2) for i in range(3)]
    >>> def build(i):
    ...     return Record(units[i], "ok", {"score": float(i)}, {}, 0.0, 0.0, 1, 1)
    >>> columns = {"ok": np.ones(6, bool), "fit_time": np.zeros(6), "score_time": np.zeros(6),
    ...            "started": np.zeros(6), "warned": np.zeros(6, bool),
    ...            "test:score": np.arange(6.0)}
    >>> table = RecordTable(units, columns, build)
    >>> table[("fit", None, 1, 1)].test_scores, len(table)
    ({'score': 4.0}, 6)
    >>> table.fit_matrix(None, (2, 3), "test:score").tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]

    A table that grows as records arrive (the driver's) rebuilds what it
    keeps as numbers, equal to the record it was given:

    >>> run = RecordTable.growing()
    >>> record = Record(Unit("fit", 0, 1, 2), "ok", {"score": 0.5}, {}, 0.1, 0.01, 8, 2)
    >>> run.add([record]).tolist()  # which records are of keys new to the table
    [True]
    >>> run[("fit", 0, 1, 2)] == record, ("fit", 0, 1, 3) in run
    (True, False)
    """

    def __init__(
        self,
        units: Sequence[Unit],
        columns: Mapping[str, NDArray[np.generic]],
        build: Callable[[int], Record],
        built: Mapping[int, Record] | None = None,
    ) -> None:
        shared = _Shared(build)
        shared.append_units(units)
        shared.set_columns(columns)
        shared.built.update(built or {})
        self._init(shared, None)

    @classmethod
    def from_arrays(
        cls,
        unit_columns: tuple[
            Sequence[str],
            NDArray[np.integer],
            NDArray[np.integer],
            NDArray[np.integer],
            NDArray[np.integer],
        ],
        columns: Mapping[str, NDArray[np.generic]],
        build: Callable[[int], Record],
        built: Mapping[int, Record] | None = None,
    ) -> RecordTable:
        """A table of rows given as unit columns, without a :class:`Unit` per row.

        ``unit_columns`` is ``(kinds, kind, outer, inner, candidate)``: the
        kind names, then per row the index of its kind in ``kinds``, its outer
        and inner fold (-1 for None) and its candidate.
        """
        shared = _Shared(build)
        shared.append_arrays(*unit_columns)
        shared.set_columns(columns)
        shared.built.update(built or {})
        table = cls.__new__(cls)
        table._init(shared, None)
        return table

    @classmethod
    def growing(cls) -> RecordTable:
        """An empty table that :meth:`add` fills: the driver's records of a run."""
        table = cls.__new__(cls)
        table._init(_Shared(None), None)
        return table

    def _init(self, shared: _Shared, rows: NDArray[np.intp] | None) -> None:
        self._shared = shared
        self._rows = rows  # None: every row of the table, as it grows

    @classmethod
    def _view(cls, shared: _Shared, rows: NDArray[np.intp]) -> RecordTable:
        view = cls.__new__(cls)
        view._init(shared, rows)
        return view

    @property
    def computed_now(self) -> bool:
        """Whether the records came from a run now (not read from a store)."""
        return self._shared.build is None

    def _all_rows(self) -> NDArray[np.intp]:
        if self._rows is None:
            return self._shared.live_rows()
        return self._rows

    # -- the mapping ---------------------------------------------------------------------
    def __getitem__(self, key: Key) -> Record:
        row = self._row(key)
        if row < 0:
            raise KeyError(key)
        return self._shared.record(row)

    def _row(self, key: Key) -> int:
        row = self._shared.index.find(key)
        if row >= 0 and self._rows is not None and not self._in_view(row):
            return -1
        return row

    def _in_view(self, row: int) -> bool:
        mask = self._view_mask()
        return bool(row < len(mask) and mask[row])

    def _view_mask(self) -> NDArray[np.bool_]:
        mask = getattr(self, "_mask", None)
        if mask is None:
            mask = np.zeros(self._shared.n, dtype=bool)
            mask[self._rows] = True
            self._mask = mask
        return mask

    def held(self, grid: UnitGrid) -> NDArray[np.bool_]:
        """Which units of ``grid``, in its order, have a record here: from the index alone.

        One boolean per unit, no key or unit built: a million-unit plan is
        checked in milliseconds. A grid's unit makes one record, keyed by the
        fields its kind keys (the others read as the index stores them: no fold,
        candidate 0).
        """
        fields = KINDS[grid.kind].key_fields
        code = self._shared.codes.get(grid.kind)
        order = np.asarray(grid.order, dtype=np.intp)
        if "candidate" not in fields:
            order = np.zeros_like(order)
        find = self._shared.index.cells
        parts = [
            find(code, o if "outer" in fields else None, i if "inner" in fields else -1, order)
            for o, n_inner in grid.folds
            for i in range(n_inner)
        ]
        cells = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        held = cells > 0
        if self._rows is not None:
            mask = self._view_mask()
            rows = cells[held] - 1
            held[held] = (rows < len(mask)) & mask[np.minimum(rows, len(mask) - 1)]
        return held

    def __iter__(self) -> Iterator[Key]:
        key_of = self._shared.key_of
        return (key_of(i) for i in self._all_rows().tolist())

    def __len__(self) -> int:
        return len(self._all_rows())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and self._row(key) >= 0

    def __setitem__(self, key: Key, record: Record) -> None:
        """Put ``record`` in place of the record of ``key`` (a growing table: or add it).

        What load adds to a stored record (the final model's loader) goes here;
        the columns stay those of the stored row. A store's table holds a store's
        units only: a key it does not hold is a KeyError.
        """
        if self.computed_now and self._rows is None:
            if record.key != key:
                raise ValueError(f"record of {record.unit!r} cannot be stored under {key!r}")
            self._shared.add([record])
            return
        i = self._row(key)
        if i < 0:
            raise KeyError(key)
        if record.unit != self._shared.unit(i):
            raise ValueError(f"record of {record.unit!r} cannot replace the record of {key!r}")
        self._shared.built[i] = record

    def __delitem__(self, key: Key) -> None:
        raise TypeError("a table of records holds every unit it has; take a view")

    def __reduce__(self) -> tuple[type[dict[Key, Record]], tuple[dict[Key, Record]]]:
        # Pickled (or copied) as the plain dict it stands for.
        return (dict, (dict(self.items()),))

    def add(self, records: Iterable[Record]) -> NDArray[np.bool_]:
        """Add records as they arrive (a growing table); a key already held takes the new one.

        Returns which of the records hold a key the table did not hold.
        """
        if not self.computed_now or self._rows is not None:
            raise TypeError("only a growing table (RecordTable.growing()) takes new records")
        if isinstance(records, RecordBatch):
            return self._shared.add_batch(records)
        return self._shared.add(list(records))

    def batch(self, keys: Iterable[Key]) -> RecordBatch:
        """The records of those of ``keys`` the table holds, as a batch: no record built.

        Its plain rows go as columns (blocks), the rest whole; a batch reads as
        the records that looking each key up gives. For a growing table only.
        """
        if not self.computed_now or self._rows is not None:
            raise TypeError("only a growing table (RecordTable.growing()) gives a batch")
        find = self._shared.index.find
        rows = np.array([r for r in map(find, keys) if r >= 0], dtype=np.intp)
        return self._shared.batch(rows)

    # -- columns -------------------------------------------------------------------------
    def column(self, name: str) -> NDArray[np.generic]:
        """A column over this view's rows, in row order (NaN-filled scores if unknown)."""
        return self._shared.column(name)[self._all_rows()]

    def where(self, mask: NDArray[np.bool_]) -> RecordTable:
        """The view of the rows of this view where ``mask`` (over this view's rows) holds."""
        return RecordTable._view(self._shared, self._all_rows()[mask])

    def of_outer(self, outer: int | None) -> RecordTable:
        """The view of the records of one outer fold (``None``: all data)."""
        rows = self._all_rows()
        outers = self._shared.outer[rows]
        return self.where(outers == (-1 if outer is None else outer))

    def records(self, mask: NDArray[np.bool_] | None = None) -> RecordList:
        """The records of this view (where ``mask`` holds), built when read."""
        rows = self._all_rows()
        return RecordList(self._shared, rows if mask is None else rows[mask])

    def sorted_records(self, kind_order: Mapping[str, int]) -> RecordList:
        """This view's records by (kind's place in ``kind_order``, outer, inner, candidate).

        None sorts before 0 (stored as -1), as the records' own sort key does.
        """
        shared, rows = self._shared, self._all_rows()
        places = np.array([kind_order[k] for k in shared.kinds] or [0], dtype=np.int64)
        kinds = places[shared.kind[rows]]
        order = np.lexsort((shared.candidate[rows], shared.inner[rows], shared.outer[rows], kinds))
        return RecordList(shared, rows[order])

    def fit_matrix(
        self, outer: int | None, shape: tuple[int, int], name: str
    ) -> NDArray[np.float64]:
        """One outer fold's (candidate, inner fold) matrix of a column; NaN where no fit.

        A bool column (``ok``) reads as 1.0 / 0.0.
        """
        shared = self._shared
        fits = shared.fit_rows(-1 if outer is None else outer)
        if self._rows is not None:  # a view: its own fits only
            fits = fits[np.isin(fits, self._rows)]
        matrix = np.full(shape, np.nan)
        candidate, inner = shared.candidate[fits], shared.inner[fits]
        inside = (candidate < shape[0]) & (inner >= 0) & (inner < shape[1])
        fits = fits[inside]
        matrix[candidate[inside], inner[inside]] = shared.column(name)[fits]
        return matrix


class _Shared:
    """What the views of one table share: rows as columns, built records, a key index.

    Columns have room for more rows than they hold (doubled when full), so a
    growing table appends a batch in one numpy step per column; ``n`` rows are
    in use. Arrays handed out are slices of the first ``n`` rows.
    """

    def __init__(self, build: Callable[[int], Record] | None) -> None:
        self.build = build
        self.built: dict[int, Record] = {}
        self.kinds: list[str] = []
        self.codes: dict[str, int] = {}
        self.n = 0
        self._cap = 0
        self._units: dict[str, NDArray[Any]] = {
            "kind": np.zeros(0, np.int8), "outer": np.zeros(0, np.int32),
            "inner": np.zeros(0, np.int32), "candidate": np.zeros(0, np.int32),
        }  # fmt: skip
        self._columns: dict[str, NDArray[Any]] = {}
        self._fits: dict[int, NDArray[np.intp]] = {}
        self._fits_n = -1
        self.index = _KeyIndex(self)
        # What a plain record's rebuilding needs: metric names in order, workers by code.
        self.test_names: tuple[str, ...] | None = None
        self.train_names: tuple[str, ...] | None = None
        self.workers: list[str] = []
        self._worker_codes: dict[str, int] = {}
        self._replaced = False  # a key stored twice: its first row is no longer live
        self._dead: set[int] = set()
        self._live: NDArray[np.bool_] | None = None

    # -- unit columns --------------------------------------------------------------------
    @property
    def kind(self) -> NDArray[np.int8]:
        return self._units["kind"][: self.n]

    @property
    def outer(self) -> NDArray[np.int32]:
        return self._units["outer"][: self.n]

    @property
    def inner(self) -> NDArray[np.int32]:
        return self._units["inner"][: self.n]

    @property
    def candidate(self) -> NDArray[np.int32]:
        return self._units["candidate"][: self.n]

    def unit(self, i: int) -> Unit:
        return unit_at(self.kinds, self._units, i)

    def key_of(self, i: int) -> Key:
        return self.unit(i).key

    def code(self, kind: str) -> int:
        found = self.codes.get(kind)
        if found is None:
            found = self.codes[kind] = len(self.kinds)
            self.kinds.append(kind)
        return found

    def _grow(self, n_new: int) -> None:
        """Make room for ``n_new`` more rows."""
        need = self.n + n_new
        if need <= self._cap:
            return
        cap = max(need, self._cap + self._cap // 2, 1024)  # x1.5: less room unused
        for group in (self._units, self._columns):
            for name, values in group.items():
                grown = _empty(values.dtype, cap)
                grown[: self.n] = values[: self.n]
                group[name] = grown
        self._cap = cap

    def _put(self, group: dict[str, NDArray[Any]], name: str, values: Any, dtype: Any,
             at: slice | NDArray[np.intp]) -> None:  # fmt: skip
        column = group.get(name)
        if column is None:
            column = group[name] = _empty(np.dtype(dtype), self._cap)
        column[at] = values

    def append_arrays(
        self,
        kinds: Sequence[str],
        kind: NDArray[np.integer],
        outer: NDArray[np.integer],
        inner: NDArray[np.integer],
        candidate: NDArray[np.integer],
    ) -> None:
        codes = np.array([self.code(k) for k in kinds] or [0], dtype=np.int8)
        n_new = len(kind)
        self._grow(n_new)
        at = slice(self.n, self.n + n_new)
        self._units["kind"][at] = codes[np.asarray(kind, dtype=np.intp)] if n_new else 0
        self._units["outer"][at] = outer
        self._units["inner"][at] = inner
        self._units["candidate"][at] = candidate
        start = self.n
        self.n += n_new
        self.index.put(np.arange(start, self.n, dtype=np.intp))

    def append_units(self, units: Sequence[Unit]) -> None:
        kinds: dict[str, int] = {}
        fields = [(kinds.setdefault(u.kind, len(kinds)), u.outer, u.inner, u.candidate)
                  for u in units]  # fmt: skip
        kind, outer, inner, candidate = zip(*fields, strict=True) if fields else ((),) * 4
        self.append_arrays(list(kinds), np.array(kind, dtype=np.intp), _folds(outer),
                           _folds(inner), np.array(candidate, dtype=np.int64))  # fmt: skip

    def set_columns(self, columns: Mapping[str, NDArray[np.generic]]) -> None:
        """The value columns of a table read whole (as many values as rows)."""
        for name, values in columns.items():
            if len(values) != self.n:
                raise ValueError(f"column {name!r} has {len(values)} values for {self.n} rows")
            self._put(self._columns, name, values, np.asarray(values).dtype, slice(0, self.n))

    # -- records as they arrive ----------------------------------------------------------
    def add(self, records: list[Record]) -> NDArray[np.bool_]:
        if not records:
            return np.zeros(0, dtype=bool)
        n_new = len(records)
        self._grow(n_new)
        start = self.n
        at = slice(start, start + n_new)
        code = self.code
        units = [r.unit for r in records]
        u = self._units
        u["kind"][at] = [code(x.kind) for x in units]
        u["outer"][at] = [-1 if x.outer is None else x.outer for x in units]
        u["inner"][at] = [-1 if x.inner is None else x.inner for x in units]
        u["candidate"][at] = [x.candidate for x in units]
        put, columns = self._put, self._columns
        put(columns, "ok", [r.status == "ok" for r in records], bool, at)
        put(columns, "warned", [bool(r.warnings or r.first_warnings) for r in records], bool, at)
        for name in _FLOATS:
            put(columns, name, [getattr(r, name) for r in records], np.float64, at)
        put(columns, "n_train", [r.n_train for r in records], np.int64, at)
        put(columns, "n_test", [r.n_test for r in records], np.int64, at)
        put(columns, "reused_steps", [r.reused_steps for r in records], np.int16, at)
        put(columns, "worker", [self._worker(r.worker) for r in records], np.int32, at)
        plain = self._plain(records)
        for which in ("test", "train"):
            by_metric: dict[str, list[float]] = {}
            rows: dict[str, list[int]] = {}
            for j, r in enumerate(records):
                for metric, value in (r.test_scores if which == "test" else r.train_scores).items():
                    by_metric.setdefault(metric, []).append(value)
                    rows.setdefault(metric, []).append(j)
            for metric, values in by_metric.items():
                name = f"{which}:{metric}"
                if name not in columns:
                    columns[name] = np.full(self._cap, np.nan)
                if len(values) == n_new:
                    columns[name][at] = values
                else:
                    columns[name][start + np.array(rows[metric], dtype=np.intp)] = values
                    missing = np.ones(n_new, dtype=bool)
                    missing[rows[metric]] = False
                    columns[name][start + np.flatnonzero(missing)] = np.nan
            for name in [c for c in columns if c.startswith(f"{which}:")]:
                if name[len(which) + 1 :] not in by_metric:
                    columns[name][at] = np.nan
        for j, (record, numbers_only) in enumerate(zip(records, plain, strict=True)):
            if not numbers_only:
                self.built[start + j] = record
        self.n += n_new
        return self.index.put(np.arange(start, self.n, dtype=np.intp))

    def add_batch(self, batch: RecordBatch) -> NDArray[np.bool_]:
        """:meth:`add` of a worker's batch: its blocks column by column, in its order."""
        parts = []
        for block in batch.blocks:
            if self.test_names is None:
                self.test_names, self.train_names = block.test_names, block.train_names
            if (block.test_names, block.train_names) == (self.test_names, self.train_names):
                parts.append(self._add_block(block))
            else:  # other metrics than the table's plain records: kept whole
                parts.append(self.add(block.records()))
        parts.append(self.add(list(batch.others)))
        return np.concatenate(parts)

    def batch(self, rows: NDArray[np.intp]) -> RecordBatch:
        """Rows as a batch: the plain ones in blocks of one kind and worker, as :meth:`_rebuild`."""
        whole = np.array([i in self.built for i in rows.tolist()], dtype=bool)
        others = [self.built[i] for i in rows[whole].tolist()]
        plain = rows[~whole]
        if not len(plain):
            return RecordBatch([], others)
        assert self.test_names is not None and self.train_names is not None
        u, c = self._units, self._columns
        kind, worker = u["kind"][plain], c["worker"][plain]
        blocks = []
        for k, w, mine in _pairs(kind, worker):
            at = plain[mine]

            def matrix(names: Sequence[str], which: str, at: NDArray[np.intp] = at) -> Any:
                if not names:
                    return np.empty((len(at), 0))
                return np.stack([c[f"{which}:{m}"][at] for m in names], axis=1)

            blocks.append(
                RecordBlock(
                    self.kinds[k], self.workers[w], self.test_names, self.train_names,
                    np.stack([u["outer"][at], u["inner"][at], u["candidate"][at]], axis=1)
                    .astype(np.int64),
                    matrix(self.test_names, "test"), matrix(self.train_names, "train"),
                    np.stack([c[name][at] for name in _FLOATS], axis=1),
                    np.stack([c["n_train"][at], c["n_test"][at], c["reused_steps"][at]], axis=1)
                    .astype(np.int64),
                )
            )  # fmt: skip
        return RecordBatch(blocks, others)

    def _add_block(self, block: RecordBlock) -> NDArray[np.bool_]:
        n_new = len(block)
        self._grow(n_new)
        start = self.n
        at = slice(start, start + n_new)
        u, put, columns = self._units, self._put, self._columns
        u["kind"][at] = self.code(block.kind)
        u["outer"][at] = block.folds[:, 0]
        u["inner"][at] = block.folds[:, 1]
        u["candidate"][at] = block.folds[:, 2]
        put(columns, "ok", True, bool, at)
        put(columns, "warned", False, bool, at)
        for j, name in enumerate(_FLOATS):
            put(columns, name, block.times[:, j], np.float64, at)
        put(columns, "n_train", block.sizes[:, 0], np.int64, at)
        put(columns, "n_test", block.sizes[:, 1], np.int64, at)
        put(columns, "reused_steps", block.sizes[:, 2], np.int16, at)
        put(columns, "worker", self._worker(block.worker), np.int32, at)
        for which, names, values in (("test", block.test_names, block.test),
                                     ("train", block.train_names, block.train)):  # fmt: skip
            for j, metric in enumerate(names):
                name = f"{which}:{metric}"
                if name not in columns:
                    columns[name] = np.full(self._cap, np.nan)
                columns[name][at] = values[:, j]
            for name in [c for c in columns if c.startswith(f"{which}:")]:
                if name[len(which) + 1 :] not in names:
                    columns[name][at] = np.nan
        self.n += n_new
        return self.index.put(np.arange(start, self.n, dtype=np.intp))

    def _worker(self, name: str) -> int:
        found = self._worker_codes.get(name)
        if found is None:
            found = self._worker_codes[name] = len(self.workers)
            self.workers.append(name)
        return found

    def _plain(self, records: list[Record]) -> list[bool]:
        """Which records are rebuilt exactly from the columns (the rest are kept whole)."""
        if self.test_names is None:
            first = next((r for r in records if r.ok and r.error is None), None)
            if first is not None:
                self.test_names = tuple(first.test_scores)
                self.train_names = tuple(first.train_scores)
        test, train = self.test_names, self.train_names
        return [
            tuple(r.test_scores) == test and tuple(r.train_scores) == train and is_plain(r)
            for r in records
        ]

    def _rebuild(self, i: int) -> Record:
        """The plain record of row ``i``, from its columns."""
        c = self._columns
        assert self.test_names is not None and self.train_names is not None
        return Record(
            self.unit(i), "ok",
            {m: float(c[f"test:{m}"][i]) for m in self.test_names},
            {m: float(c[f"train:{m}"][i]) for m in self.train_names},
            float(c["fit_time"][i]), float(c["score_time"][i]),
            int(c["n_train"][i]), int(c["n_test"][i]),
            worker=self.workers[int(c["worker"][i])],
            started=float(c["started"][i]), finished=float(c["finished"][i]),
            reused_steps=int(c["reused_steps"][i]),
        )  # fmt: skip

    def replaced(self, old: int) -> None:
        """Row ``old`` holds a key stored again in a later row: it is no longer live."""
        self._replaced = True
        self._live = None
        self.built.pop(old, None)
        self._dead.add(old)

    def live_rows(self) -> NDArray[np.intp]:
        rows = np.arange(self.n, dtype=np.intp)
        if not self._replaced:
            return rows
        if self._live is None or len(self._live) != self.n:
            live = np.ones(self.n, dtype=bool)
            live[list(self._dead)] = False
            self._live = live
        return rows[self._live]

    # -- reading -------------------------------------------------------------------------
    def record(self, i: int) -> Record:
        found = self.built.get(i)
        if found is None:
            if self.build is None:  # rebuilt from its numbers each time: kept, it would cost
                return self._rebuild(i)  # the ~800 bytes the table saves
            found = self.built[i] = self.build(i)
        return found

    def column(self, name: str) -> NDArray[np.generic]:
        found = self._columns.get(name)
        if found is None:
            if name.startswith(("test:", "train:")):
                return np.full(self.n, np.nan)
            raise KeyError(f"no column {name!r}; the columns are {sorted(self._columns)}")
        return found[: self.n]

    def fit_rows(self, outer: int) -> NDArray[np.intp]:
        """Live rows of the fit units of one outer fold (-1: all data)."""
        if self._fits_n != self.n:
            self._fits, self._fits_n = {}, self.n
        if outer not in self._fits:
            selects = [i for i, name in enumerate(self.kinds) if KINDS[name].selects]
            fits = np.isin(self.kind, selects) & (self.outer == outer)
            if self._replaced:
                fits &= np.isin(np.arange(self.n), self.live_rows())
            self._fits[outer] = np.flatnonzero(fits)
        return self._fits[outer]


def _repeats(flat: NDArray[np.int32], cells: NDArray[np.int64]) -> bool:
    """Whether a cell comes twice in ``cells``; their values in ``flat`` are left spoilt.

    Each cell is given its place, then read back: a cell met twice keeps one place only,
    whichever a repeated assignment leaves. Linear, where sorting a million cells to find
    repeats took a second of ``parcv.load``.
    """
    places = np.arange(1, len(cells) + 1, dtype=flat.dtype)
    flat[cells] = places
    return not np.array_equal(flat[cells], places)


class _KeyIndex:
    """Row of each key: a dense array per (kind, outer fold) over (inner fold, candidate).

    A key names its unit's fields in its kind's ``key_fields`` (a refit's key
    leaves its candidate out): those are its coordinates, the others are
    None (or candidate 0). About 4 bytes per (inner fold, candidate) cell, not a
    dict entry and a tuple per record.
    """

    def __init__(self, shared: _Shared) -> None:
        self._shared = shared
        self._grids: dict[tuple[int, int], NDArray[np.int32]] = {}

    def _coordinates(self, rows: NDArray[np.intp]) -> tuple[NDArray[np.int64], ...]:
        s = self._shared
        kind, outer = s.kind[rows].astype(np.int64), s.outer[rows].astype(np.int64)
        inner, candidate = s.inner[rows].astype(np.int64), s.candidate[rows].astype(np.int64)
        for code, name in enumerate(s.kinds):
            fields = KINDS[name].key_fields
            mine = kind == code
            if "outer" not in fields:
                outer[mine] = -1
            if "inner" not in fields:
                inner[mine] = -1
            if "candidate" not in fields:
                candidate[mine] = 0
        return kind, outer, inner, candidate

    def put(self, rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        """Index ``rows``; which of them hold a key no earlier row held."""
        new = np.ones(len(rows), dtype=bool)
        if not len(rows):
            return new
        kind, outer, inner, candidate = self._coordinates(rows)
        for k, o, mine in _pairs(kind, outer):
            i, c, r = inner[mine] + 1, candidate[mine], rows[mine]
            grid = self._grid((k, o), int(i.max()) + 1, int(c.max()) + 1)
            old = grid[i, c]
            for stale in old[old > 0].tolist():
                self._shared.replaced(stale - 1)
            new[np.flatnonzero(mine)[old > 0]] = False
            cells = i * grid.shape[1] + c
            if _repeats(grid.reshape(-1), cells):  # a key twice in one batch: the last counts
                last = len(cells) - 1 - np.unique(cells[::-1], return_index=True)[1]
                earlier = np.setdiff1d(np.arange(len(cells)), last)
                for stale in r[earlier].tolist():
                    self._shared.replaced(stale)
                new[np.flatnonzero(mine)[earlier]] = False
                i, c, r = i[last], c[last], r[last]
            grid[i, c] = r + 1
        return new

    def _grid(self, where: tuple[int, int], n_inner: int, n_candidates: int) -> NDArray[np.int32]:
        grid = self._grids.get(where)
        if grid is None or grid.shape[0] < n_inner or grid.shape[1] < n_candidates:
            shape = (n_inner, n_candidates)
            if grid is not None:  # doubled where too small: rows arrive in candidate order
                shape = (_room(n_inner, grid.shape[0]), _room(n_candidates, grid.shape[1]))
            grown = np.zeros(shape, dtype=np.int32)
            if grid is not None:
                grown[: grid.shape[0], : grid.shape[1]] = grid
            grid = self._grids[where] = grown
        return grid

    def cells(
        self, code: int | None, outer: int | None, inner: int, candidates: NDArray[np.intp]
    ) -> NDArray[np.int64]:
        """Row + 1 of each candidate's key of kind ``code`` on fold (outer, inner); 0: none.

        ``inner`` -1 and ``outer`` None: keys without that fold.
        """
        out = np.zeros(len(candidates), dtype=np.int64)
        grid = None if code is None else self._grids.get((code, -1 if outer is None else outer))
        if grid is None or inner + 1 >= grid.shape[0]:
            return out
        inside = candidates < grid.shape[1]
        out[inside] = grid[inner + 1, candidates[inside]]
        return out

    def find(self, key: Key) -> int:
        """The row of ``key``; -1 if the table has none."""
        if not isinstance(key, tuple) or not key or not isinstance(key[0], str):
            return -1
        kind = KINDS.get(key[0])
        code = self._shared.codes.get(key[0])
        if kind is None or code is None or len(key) != len(kind.key_fields) + 1:
            return -1
        if kind.key_fields == _FULL:  # most keys: ("fit", outer, inner, candidate)
            outer, inner, candidate = key[1], key[2], key[3]
        else:
            fields = dict(zip(kind.key_fields, key[1:], strict=True))
            outer, inner = fields.get("outer"), fields.get("inner")
            candidate = fields.get("candidate", 0)
        if not (_index(outer) and _index(inner) and _index(candidate)) or candidate is None:
            return -1
        grid = self._grids.get((code, -1 if outer is None else int(outer)))
        i = 0 if inner is None else int(inner) + 1
        if grid is None or not (0 <= i < grid.shape[0] and 0 <= candidate < grid.shape[1]):
            return -1
        return int(grid[i, candidate]) - 1


_FULL = ("outer", "inner", "candidate")


def _pairs(
    a: NDArray[np.integer], b: NDArray[np.integer]
) -> Iterator[tuple[int, int, NDArray[np.bool_]]]:
    """Each distinct (a, b) of two integer columns (``a`` >= 0), in order, with its rows.

    One code per pair, sorted in one dimension: ``np.unique(axis=1)`` sorts structured
    columns instead (1.4 s for the 1.1M rows of a store's load).
    """
    low = int(b.min())
    span = int(b.max()) - low + 1
    codes = a.astype(np.int64) * span + (b.astype(np.int64) - low)
    first = codes[0]
    for code in [first] if (codes == first).all() else np.unique(codes).tolist():
        k, rest = divmod(int(code), span)
        yield k, rest + low, codes == code


def _index(value: object) -> bool:
    """Whether a key's field can be a fold or candidate index (None: no fold)."""
    return value is None or type(value) is int or isinstance(value, np.integer)


class RecordList(Sequence[Record]):
    """Records of a table's rows, in a given order, each built when first read.

    The rows are kept as an array, read a block at a time as Python ints: a list
    of a million-unit result's rows took 40 MB, its array 9.
    """

    _BLOCK = 4096

    def __init__(self, shared: _Shared, rows: NDArray[np.intp]) -> None:
        self._shared = shared
        self._rows = np.asarray(rows, dtype=np.intp)

    def _each_row(self, rows: NDArray[np.intp] | None = None) -> Iterator[int]:
        rows = self._rows if rows is None else rows
        for start in range(0, len(rows), self._BLOCK):
            yield from rows[start : start + self._BLOCK].tolist()

    @overload
    def __getitem__(self, i: int) -> Record: ...

    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self._shared.record(r) for r in self._rows[i].tolist()]
        return self._shared.record(int(self._rows[i]))

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Record]:
        record = self._shared.record
        return (record(r) for r in self._each_row())

    def built(self) -> list[Record]:
        """The records of this list built so far, or put in place by a reader, in order."""
        built = self._shared.built
        return [built[r] for r in self._each_row() if r in built]

    def of_units(
        self, keep: Callable[[Unit], bool], kinds: Collection[str] | None = None
    ) -> list[Record]:
        """The records whose unit ``keep`` accepts, in order; only those are built.

        ``kinds``: only the units of these kinds are offered to ``keep``, the rows of
        any other kind skipped from the kind column without building their units.
        """
        unit, record = self._shared.unit, self._shared.record
        rows = self._each_row(None if kinds is None else self._of_kinds(kinds))
        return [record(r) for r in rows if keep(unit(r))]

    def of_fold(self, kinds: Collection[str], outer: int | None, candidate: int) -> list[Record]:
        """The records of ``candidate`` in ``outer`` (None: all data) of these kinds, in order.

        Found from the unit columns: a million rows are not built into units to keep a few.
        """
        shared, rows = self._shared, self._of_kinds(kinds)
        at = (shared.outer[rows] == (-1 if outer is None else outer)) & (
            shared.candidate[rows] == candidate
        )
        return [shared.record(r) for r in rows[at].tolist()]

    def _of_kinds(self, kinds: Collection[str]) -> NDArray[np.intp]:
        shared = self._shared
        codes = [shared.codes[k] for k in kinds if k in shared.codes]
        rows = self._rows
        return rows[np.isin(shared.kind[rows], codes)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RecordList, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __reduce__(self) -> tuple[type[list[Record]], tuple[list[Record]]]:
        # Pickled (or copied) as the plain list it stands for, every record built.
        return (list, (list(self),))

    def __repr__(self) -> str:
        return f"<{len(self)} records>"


def unit_at(kinds: Sequence[str], columns: Mapping[str, NDArray[Any]], i: int) -> Unit:
    """The unit of row ``i`` of unit columns (``kind``: index into ``kinds``; -1: None).

    Examples
    --------
    >>> columns = {"kind": np.array([0]), "outer": np.array([-1]), "inner": np.array([2]),
    ...            "candidate": np.array([5])}
    >>> unit_at(["fit"], columns, 0)
    Unit(kind='fit', outer=None, inner=2, candidate=5)
    """
    outer, inner = int(columns["outer"][i]), int(columns["inner"][i])
    return Unit(kinds[columns["kind"][i]], None if outer < 0 else outer,
                None if inner < 0 else inner, int(columns["candidate"][i]))  # fmt: skip


def _room(need: int, have: int) -> int:
    """A grid side of at least ``need`` cells: ``have``, or doubled if that is too small."""
    return have if need <= have else max(need, 2 * have)


def _empty(dtype: np.dtype[Any], n: int) -> NDArray[Any]:
    """``n`` values of ``dtype``: NaN for floats (a score a row lacks), zeros otherwise."""
    if dtype.kind == "f":
        return np.full(n, np.nan, dtype=dtype)
    return np.zeros(n, dtype=dtype)


def _folds(values: Sequence[int | None]) -> NDArray[np.int64]:
    """Fold indices as int64, None (all data, or every inner fold) as -1."""
    as_float = np.array(values, dtype=np.float64)  # None reads as NaN
    return np.where(np.isnan(as_float), -1, as_float).astype(np.int64)
