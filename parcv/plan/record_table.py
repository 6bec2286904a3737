"""Records read as columns: a store's many records without an object per record.

A report of 100,000 fit units needs their scores and times as (candidate, fold)
matrices, their failures and their warnings, not 100,000 :class:`Record`
objects. :class:`RecordTable` holds what a store read as numpy columns and
builds a :class:`Record` only when one is looked up; :meth:`RecordTable.fit_matrix`
gives one outer fold's matrix of a column in one numpy step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from parcv.plan.kinds import KINDS
from parcv.plan.records import Key, Record, Unit

__all__ = ["RecordTable", "RecordList"]


class RecordTable(MutableMapping[Key, Record]):
    """The records of a store's units by key, kept as columns.

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
    """

    def __init__(
        self,
        units: Sequence[Unit],
        columns: Mapping[str, NDArray[np.generic]],
        build: Callable[[int], Record],
        built: Mapping[int, Record] | None = None,
    ) -> None:
        self._shared = _Shared(units, columns, build)
        self._shared.built.update(built or {})
        self._rows: NDArray[np.intp] = np.arange(len(units), dtype=np.intp)
        self._index: dict[Key, int] | None = None

    @classmethod
    def _view(cls, shared: _Shared, rows: NDArray[np.intp]) -> RecordTable:
        view = cls.__new__(cls)
        view._shared, view._rows, view._index = shared, rows, None
        return view

    # -- the mapping ---------------------------------------------------------------------
    def __getitem__(self, key: Key) -> Record:
        return self._shared.record(self.index[key])

    def __iter__(self) -> Iterator[Key]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self.index

    @property
    def index(self) -> dict[Key, int]:
        """Row of each key of this view (built on first use)."""
        if self._index is None:
            units = self._shared.units
            self._index = {units[i].key: i for i in self._rows.tolist()}
        return self._index

    def __setitem__(self, key: Key, record: Record) -> None:
        """Put ``record`` in place of the stored record of ``key`` (same unit and scores).

        What load adds to a stored record (the final model's loader) goes here;
        the columns stay those of the stored row. A table holds a store's units
        only: a key it does not hold is a KeyError.
        """
        i = self.index[key]
        if record.unit != self._shared.units[i]:
            raise ValueError(f"record of {record.unit!r} cannot replace the record of {key!r}")
        self._shared.built[i] = record

    def __delitem__(self, key: Key) -> None:
        raise TypeError("a table of stored records holds every unit it read; take a view")

    def __reduce__(self) -> tuple[type[dict[Key, Record]], tuple[dict[Key, Record]]]:
        # Pickled (or copied) as the plain dict it stands for: the table reads a store.
        return (dict, (dict(self.items()),))

    # -- columns -------------------------------------------------------------------------
    def column(self, name: str) -> NDArray[np.generic]:
        """A column over this view's rows, in row order (NaN-filled scores if unknown)."""
        return self._shared.column(name)[self._rows]

    def where(self, mask: NDArray[np.bool_]) -> RecordTable:
        """The view of the rows of this view where ``mask`` (over this view's rows) holds."""
        return RecordTable._view(self._shared, self._rows[mask])

    def of_outer(self, outer: int | None) -> RecordTable:
        """The view of the records of one outer fold (``None``: all data)."""
        outers = self._shared.outer[self._rows]
        return self.where(outers == (-1 if outer is None else outer))

    def records(self, mask: NDArray[np.bool_] | None = None) -> RecordList:
        """The records of this view (where ``mask`` holds), built when read."""
        rows = self._rows if mask is None else self._rows[mask]
        return RecordList(self._shared, rows)

    def sorted_records(self, kind_order: Mapping[str, int]) -> RecordList:
        """This view's records by (kind's place in ``kind_order``, outer, inner, candidate).

        None sorts before 0 (stored as -1), as the records' own sort key does.
        """
        shared, rows = self._shared, self._rows
        kinds = np.array([kind_order[k] for k in shared.kind[rows].tolist()], dtype=np.int64)
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
        if len(self._rows) != len(shared.units):  # a view: its own fits only
            fits = fits[np.isin(fits, self._rows)]
        matrix = np.full(shape, np.nan)
        candidate, inner = shared.candidate[fits], shared.inner[fits]
        inside = (candidate < shape[0]) & (inner >= 0) & (inner < shape[1])
        fits = fits[inside]
        matrix[candidate[inside], inner[inside]] = shared.column(name)[fits]
        return matrix


class _Shared:
    """What the views of one table share: units, columns, built records, per-fold rows."""

    def __init__(
        self,
        units: Sequence[Unit],
        columns: Mapping[str, NDArray[np.generic]],
        build: Callable[[int], Record],
    ) -> None:
        self.units = units
        self.columns = dict(columns)
        self.build = build
        self.built: dict[int, Record] = {}
        kind, outer, inner, candidate = (
            zip(*[(u.kind, u.outer, u.inner, u.candidate) for u in units], strict=True)
            if units
            else ((), (), (), ())
        )
        self.kind = np.array(kind, dtype=object)
        self.outer, self.inner = _folds(outer), _folds(inner)
        self.candidate = np.array(candidate, dtype=np.int64)
        self._fits: dict[int, NDArray[np.intp]] = {}

    def record(self, i: int) -> Record:
        found = self.built.get(i)
        if found is None:
            found = self.built[i] = self.build(i)
        return found

    def column(self, name: str) -> NDArray[np.generic]:
        found = self.columns.get(name)
        if found is None:
            if name.startswith(("test:", "train:")):
                return np.full(len(self.units), np.nan)
            raise KeyError(f"no column {name!r}; the columns are {sorted(self.columns)}")
        return found

    def fit_rows(self, outer: int) -> NDArray[np.intp]:
        """Rows of the fit units of one outer fold (-1: all data)."""
        if outer not in self._fits:
            fits = np.isin(self.kind, [name for name, k in KINDS.items() if k.selects])
            self._fits[outer] = np.flatnonzero(fits & (self.outer == outer))
        return self._fits[outer]


class RecordList(Sequence[Record]):
    """Records of a table's rows, in a given order, each built when first read."""

    def __init__(self, shared: _Shared, rows: NDArray[np.intp]) -> None:
        self._shared = shared
        self._rows = rows.tolist()

    @overload
    def __getitem__(self, i: int) -> Record: ...

    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self._shared.record(r) for r in self._rows[i]]
        return self._shared.record(self._rows[i])

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Record]:
        record = self._shared.record
        return (record(r) for r in self._rows)

    def built(self) -> list[Record]:
        """The records of this list built so far, or put in place by a reader, in order."""
        built = self._shared.built
        return [built[r] for r in self._rows if r in built]

    def of_units(self, keep: Callable[[Unit], bool]) -> list[Record]:
        """The records whose unit ``keep`` accepts, in order; only those are built."""
        units, record = self._shared.units, self._shared.record
        return [record(r) for r in self._rows if keep(units[r])]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RecordList, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __reduce__(self) -> tuple[type[list[Record]], tuple[list[Record]]]:
        # Pickled (or copied) as the plain list it stands for, every record built.
        return (list, (list(self),))

    def __repr__(self) -> str:
        return f"<{len(self)} records>"


def _folds(values: Sequence[int | None]) -> NDArray[np.int64]:
    """Fold indices as int64, None (all data, or every inner fold) as -1."""
    as_float = np.array(values, dtype=np.float64)  # None reads as NaN
    return np.where(np.isnan(as_float), -1, as_float).astype(np.int64)
