"""The units of a plan: an immutable sequence that builds each Unit only when read.

A nested CV of 10 outer x 10 inner folds x 100,000 candidates has 11M ``fit``
units; a tuple of them costs about 1 GB before anything runs. Their regular
part, every (outer, inner) fold x the candidates in one order, is a
:class:`UnitGrid`: a few numbers and the candidates' order. The rest (criteria,
fast-CV batches, iteration paths, interval fits, ...) stays a tuple of units.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from parcv.plan.kinds import KINDS, Key, kind_of
from parcv.plan.records import Unit

__all__ = [
    "KeySequence",
    "PackedUnits",
    "UnitArray",
    "UnitGrid",
    "as_units",
    "pack_units",
    "unpack_units",
]


@dataclass(frozen=True, slots=True)
class UnitGrid:
    """The units ``kind`` x folds x candidates, fold by fold, candidates in ``order``.

    Parameters
    ----------
    kind : str
        A kind whose units have an outer fold, an inner fold and a candidate.
    folds : tuple of (outer, n_inner)
        The outer folds in order, each with its number of inner folds.
    order : range or tuple of int
        The candidates of every fold, in the order they run.

    Examples
    --------
    >>> grid = UnitGrid("fit", ((0, 2), (None, 1)), (1, 0))
    >>> len(grid), [u.key for u in grid][:3], grid[5].key
    (6, [('fit', 0, 0, 1), ('fit', 0, 0, 0), ('fit', 0, 1, 1)], ('fit', None, 0, 0))
    """

    kind: str
    folds: tuple[tuple[int | None, int], ...]
    order: range | tuple[int, ...]

    def __post_init__(self) -> None:
        if not _is_grid_kind(self.kind):
            raise ValueError(
                f"kind must be a kind of one record per unit on an inner fold; got "
                f"{self.kind!r}. List such units in a tuple instead of a UnitGrid."
            )
        order = self.order
        if not isinstance(order, range):
            order = tuple(int(c) for c in order)
            if order == tuple(range(len(order))):
                order = range(len(order))  # the usual order, in a few bytes
        object.__setattr__(self, "order", order)

    @property
    def n_folds(self) -> int:
        """Return the number of (outer, inner) folds."""
        return sum(n for _, n in self.folds)

    def __len__(self) -> int:
        return self.n_folds * len(self.order)

    def fold_positions(self) -> Iterator[tuple[int | None, int]]:
        """The (outer, inner) folds in order."""
        for outer, n in self.folds:
            for inner in range(n):
                yield outer, inner

    def __iter__(self) -> Iterator[Unit]:
        kind, order = self.kind, list(self.order)
        for outer, inner in self.fold_positions():
            for c in order:
                yield Unit(kind, outer, inner, c)

    def __getitem__(self, i: int) -> Unit:
        fold, rank = divmod(i, len(self.order))
        for outer, n in self.folds:
            if fold < n:
                return Unit(self.kind, outer, fold, self.order[rank])
            fold -= n
        raise IndexError(i)

    def outer_keys(self) -> Iterator[tuple[int | None, _GridKeys]]:
        """Per outer fold, the keys of its units, as a sequence built only when read."""
        for outer, n in self.folds:
            yield outer, _GridKeys(self, outer, n)

    def fold_keys(self) -> Iterator[tuple[int | None, list[Key]]]:
        """Per (outer, inner) fold, its outer fold and the keys of its units, in order."""
        kind = KINDS[self.kind]
        order = list(self.order)
        four = kind.key_fields == ("outer", "inner", "candidate")
        for outer, inner in self.fold_positions():
            if four:  # most grids: the key is the unit's fields, no Unit to build
                yield outer, [(self.kind, outer, inner, c) for c in order]
            else:
                yield outer, [kind.key(Unit(self.kind, outer, inner, c)) for c in order]


@dataclass(frozen=True, slots=True)
class _GridKeys:
    """The keys of a grid's units on one outer fold (``n_inner`` inner folds)."""

    grid: UnitGrid
    outer: int | None
    n_inner: int

    def __len__(self) -> int:
        return self.n_inner * len(self.grid.order)

    def __iter__(self) -> Iterator[Key]:
        name, outer, order = self.grid.kind, self.outer, list(self.grid.order)
        kind = KINDS[name]
        if kind.key_fields == ("outer", "inner", "candidate"):
            for inner in range(self.n_inner):
                yield from [(name, outer, inner, c) for c in order]
            return
        for inner in range(self.n_inner):
            yield from [kind.key(Unit(name, outer, inner, c)) for c in order]

    def __getitem__(self, i: int) -> Key:
        inner, rank = divmod(i, len(self.grid.order))
        return KINDS[self.grid.kind].key(
            Unit(self.grid.kind, self.outer, inner, self.grid.order[rank])
        )


class KeySequence(Sequence[Key]):
    """Record keys, a grid's among them built only when read (an outer fold's fit keys).

    Examples
    --------
    >>> grid = UnitGrid("fit", ((0, 2),), range(2))
    >>> keys = KeySequence([[("criteria", 0, 0)], *(k for _, k in grid.outer_keys())])
    >>> len(keys), keys[2], keys == list(keys)
    (5, ('fit', 0, 0, 1), True)
    """

    __slots__ = ("_ends", "_parts")

    def __init__(self, parts: Iterable[list[Key] | _GridKeys] = ()) -> None:
        self._parts = tuple(p for p in parts if len(p))
        self._ends = tuple(itertools.accumulate(len(p) for p in self._parts))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __iter__(self) -> Iterator[Key]:
        for part in self._parts:
            yield from part

    @overload
    def __getitem__(self, i: int) -> Key: ...

    @overload
    def __getitem__(self, i: slice) -> list[Key]: ...

    def __getitem__(self, i: int | slice) -> Key | list[Key]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f"key index {i} out of range for {n} keys")
        b = bisect.bisect_right(self._ends, j)
        return self._parts[b][j - (self._ends[b - 1] if b else 0)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (KeySequence, list, tuple)):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which have none

    def __repr__(self) -> str:
        return f"KeySequence({len(self)} keys)"


Block = UnitGrid | tuple[Unit, ...]


class UnitArray(Sequence[Unit]):
    """An immutable sequence of units, some of them grids that take no memory per unit.

    It reads as the tuple of its units: indexing, iterating, ``len``, ``==``
    against another or a tuple, ``+`` with a tuple or another. A slice is a
    tuple of the units it holds.

    Parameters
    ----------
    blocks : iterable of UnitGrid or tuple of Unit, default=()
        The units, block after block.

    Examples
    --------
    >>> units = UnitArray([(Unit("criteria", 0, None, 0),), UnitGrid("fit", ((0, 2),), range(2))])
    >>> len(units), units[-1].key, units[1:3] == tuple(units)[1:3]
    (5, ('fit', 0, 1, 1), True)
    >>> units + (Unit("ncv", None, 0, 0),) == (*units, Unit("ncv", None, 0, 0))
    True
    """

    __slots__ = ("_ends", "blocks")

    def __init__(self, blocks: Iterable[Block] = ()) -> None:
        merged: list[Block] = []
        for block in blocks:
            if not len(block):
                continue
            last = merged[-1] if merged else None
            if isinstance(block, tuple) and isinstance(last, tuple):
                merged[-1] = last + block  # adjacent listed units: one block
            else:
                merged.append(block if isinstance(block, UnitGrid) else tuple(block))
        self.blocks: tuple[Block, ...] = tuple(merged)
        self._ends = tuple(itertools.accumulate(len(b) for b in self.blocks))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __iter__(self) -> Iterator[Unit]:
        for block in self.blocks:
            yield from block

    @overload
    def __getitem__(self, i: int) -> Unit: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Unit, ...]: ...

    def __getitem__(self, i: int | slice) -> Unit | tuple[Unit, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        n = len(self)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f"unit index {i} out of range for {n} units")
        b = bisect.bisect_right(self._ends, j)
        return self.blocks[b][j - (self._ends[b - 1] if b else 0)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UnitArray) and other.blocks == self.blocks:
            return True
        if not isinstance(other, (UnitArray, tuple)) or len(other) != len(self):
            return NotImplemented if not isinstance(other, (UnitArray, tuple)) else False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))  # equal to a tuple of the same units: the tuple's hash

    def __add__(self, other: Sequence[Unit]) -> UnitArray:
        return UnitArray((*self.blocks, *as_units(other).blocks))

    def __radd__(self, other: Sequence[Unit]) -> UnitArray:
        return UnitArray((*as_units(other).blocks, *self.blocks))

    def __reduce__(self) -> tuple[Any, ...]:
        return (UnitArray, (self.blocks,))

    def __repr__(self) -> str:
        shown = ", ".join(
            f"UnitGrid({b.kind!r}, {len(b)} units)" if isinstance(b, UnitGrid) else
            f"{len(b)} listed" for b in self.blocks
        )  # fmt: skip
        return f"UnitArray([{shown}])"

    def kinds(self) -> set[str]:
        """Return the kind names of the units (without reading every grid unit)."""
        return {b.kind for b in self.blocks if isinstance(b, UnitGrid)} | {
            u.kind for b in self.blocks if isinstance(b, tuple) for u in b
        }

    def grids(self) -> Iterator[tuple[int, UnitGrid]]:
        """The grids with the position of their first unit."""
        for b, block in enumerate(self.blocks):
            if isinstance(block, UnitGrid):
                yield (self._ends[b - 1] if b else 0), block

    def listed(self) -> Iterator[tuple[int, Unit]]:
        """The units outside grids, with their positions."""
        for b, block in enumerate(self.blocks):
            if isinstance(block, tuple):
                yield from enumerate(block, self._ends[b - 1] if b else 0)


def as_units(units: Sequence[Unit]) -> UnitArray:
    """Return ``units`` as a :class:`UnitArray` (a tuple's units as they are).

    Grid units are plain kinds of one record each: a ``fit`` unit of a fast-CV
    batch (``inner=None``) is not a grid's.

    Examples
    --------
    >>> as_units((Unit("fit", 0, 0, 0),)) == (Unit("fit", 0, 0, 0),)
    True
    """
    if isinstance(units, UnitArray):
        return units
    return UnitArray((tuple(units),))


def _is_grid_kind(kind: str) -> bool:
    """Whether units of ``kind`` on an inner fold make one record each (a grid's kind)."""
    if kind not in KINDS:
        return False
    variant = kind_of(Unit(kind, 0, 0, 0))
    return variant.name == kind and not variant.batched and variant.records_as is None


# A chunk's units as they travel to a worker: the kinds' names, and per unit its kind's
# index, outer fold, inner fold (-1: None) and candidate as little-endian int64 bytes.
# Built-in types only: a Dask scheduler unpickles (and pickles again) every task's
# arguments, and a pickled Unit each cost it about a microsecond per unit.
PackedUnits = tuple[tuple[str, ...], bytes]


def pack_units(units: Sequence[Unit]) -> PackedUnits:
    """A chunk's units in the compact form :func:`unpack_units` reads.

    Examples
    --------
    >>> units = (Unit("fit", 0, 1, 7), Unit("refit", 2, None, 3), Unit("final", None, None, 0))
    >>> unpack_units(pack_units(units)) == units
    True
    """
    kinds: dict[str, int] = {}
    rows = [(kinds.setdefault(u.kind, len(kinds)), -1 if u.outer is None else u.outer,
             -1 if u.inner is None else u.inner, u.candidate) for u in units]  # fmt: skip
    return tuple(kinds), np.array(rows, dtype="<i8").reshape(len(rows), 4).tobytes()


def unpack_units(packed: PackedUnits) -> tuple[Unit, ...]:
    """The units :func:`pack_units` packed, equal and in order."""
    kinds, data = packed
    rows = np.frombuffer(data, dtype="<i8").reshape(-1, 4).tolist()
    return tuple(
        Unit(kinds[k], None if o == -1 else o, None if i == -1 else i, c) for k, o, i, c in rows
    )
