"""A batch of records as a worker sends it: numbers in columns, not an object per record.

A chunk of cheap fits comes back by the thousand records. Pickled one object
each, the driver spends about 5 µs per record unpickling them (a frozen
:class:`Record`, its :class:`Unit`, two dicts, six numbers), and as much again
taking each apart to store and count it. A :class:`RecordBatch` carries the
records that hold only numbers (the plain ones: a success with no warning, no
fold scores, predictions or model) as numpy columns, in blocks of one kind,
worker and set of metrics; every other record travels whole. The driver stores
and counts a batch from its columns (:meth:`parcv.plan.record_table.RecordTable.add`,
:meth:`parcv.store.writer.Store.add`), and builds a record only when something
reads one: a batch is a sequence of exactly the records it was packed from.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from parcv.plan.records import Record, Unit

__all__ = ["RecordBatch", "RecordBlock", "is_plain"]

_NONE = -1  # a fold of None (all data) in an int column


@dataclass(frozen=True, slots=True)
class RecordBlock:
    """Plain records of one kind, worker and metrics, as columns (one row per record).

    Parameters
    ----------
    kind, worker : str
    test_names, train_names : tuple of str
        The metrics of every record, in the order of its scores' dict.
    folds : ndarray of int64, shape (n, 3)
        Outer fold, inner fold (-1 for None) and candidate.
    test, train : ndarray of float64, shape (n, len(names))
    times : ndarray of float64, shape (n, 4)
        ``fit_time``, ``score_time``, ``started``, ``finished``.
    sizes : ndarray of int64, shape (n, 3)
        ``n_train``, ``n_test``, ``reused_steps``.
    """

    kind: str
    worker: str
    test_names: tuple[str, ...]
    train_names: tuple[str, ...]
    folds: NDArray[np.int64]
    test: NDArray[np.float64]
    train: NDArray[np.float64]
    times: NDArray[np.float64]
    sizes: NDArray[np.int64]

    def __reduce__(self) -> tuple[type[RecordBlock], tuple[Any, ...]]:
        fields = (self.kind, self.worker, self.test_names, self.train_names)
        return (RecordBlock, (*fields, self.folds, self.test, self.train, self.times, self.sizes))

    def __len__(self) -> int:
        return len(self.folds)

    def outers(self) -> list[int | None]:
        """Each record's outer fold (None: all data)."""
        return [None if o == _NONE else o for o in self.folds[:, 0].tolist()]

    def places(self) -> list[tuple[int | None, int | None, int]]:
        """Each record's outer fold, inner fold (None: all data) and candidate."""
        return [
            (None if o == _NONE else o, None if i == _NONE else i, c)
            for o, i, c in self.folds.tolist()
        ]

    def units(self) -> list[Unit]:
        kind = self.kind
        return [Unit(kind, o, i, c) for o, i, c in self.places()]

    def records(self) -> list[Record]:
        """The records, each built as the worker built it."""
        test, train = self.test_names, self.train_names
        return [
            Record(
                unit,
                "ok",
                dict(zip(test, t, strict=True)),
                dict(zip(train, r, strict=True)),
                fit,
                score,
                n_train,
                n_test,
                worker=self.worker,
                started=start,
                finished=end,
                reused_steps=reused,
            )
            for unit, t, r, (fit, score, start, end), (n_train, n_test, reused) in zip(
                self.units(),
                self.test.tolist(),
                self.train.tolist(),
                self.times.tolist(),
                self.sizes.tolist(),
                strict=True,
            )
        ]


def is_plain(r: Record) -> bool:
    """Whether a record holds only numbers: rebuilt exactly from columns (given its metrics)."""
    u = r.unit
    return (
        r.status == "ok" and r.error is None and not r.warnings and r.estimator is None
        and r.folds is None and r.predictions is None and not r.score_errors
        and not r.first_warnings and not r.kept and type(r.fit_time) is float
        and type(r.score_time) is float and type(r.started) is float
        and type(r.finished) is float and type(r.n_train) is int and type(r.n_test) is int
        and type(r.reused_steps) is int and type(r.worker) is str and type(u.candidate) is int
        and (u.outer is None or (type(u.outer) is int and u.outer >= 0))
        and (u.inner is None or (type(u.inner) is int and u.inner >= 0))
        and all(type(v) is float for v in r.test_scores.values())
        and all(type(v) is float for v in r.train_scores.values())
    )  # fmt: skip


class RecordBatch(Sequence[Record]):
    """Records of one chunk (or of chunks that arrived together): blocks, then the rest.

    It reads as the sequence of its records: those of each block in turn, then
    ``others``, the records that hold more than numbers, in the order they came.

    Examples
    --------
    >>> import pickle
    >>> from parcv.plan.records import ErrorInfo
    >>> records = [Record(Unit("fit", 0, i, 3), "ok", {"score": i / 4}, {}, 0.5, 0.25, 8, 2,
    ...                   worker="host:1") for i in range(3)]
    >>> records.append(Record(Unit("fit", 0, 3, 3), "failed", {"score": 0.0}, {},
    ...                       0.0, 0.0, 8, 2, error=ErrorInfo("ValueError", "no", "")))
    >>> batch = pickle.loads(pickle.dumps(RecordBatch.pack(records)))
    >>> len(batch.blocks), len(batch.others), list(batch) == records
    (1, 1, True)
    """

    __slots__ = ("blocks", "others")

    def __init__(self, blocks: Sequence[RecordBlock], others: Sequence[Record]) -> None:
        self.blocks = tuple(blocks)
        self.others = tuple(others)

    @classmethod
    def pack(cls, records: Iterable[Record]) -> RecordBatch:
        """The records of one chunk, their plain ones in blocks (the order within a block kept)."""
        groups: dict[tuple[Any, ...], list[Record]] = {}
        others = []
        for r in records:
            if is_plain(r):
                shape = (r.unit.kind, r.worker, tuple(r.test_scores), tuple(r.train_scores))
                groups.setdefault(shape, []).append(r)
            else:
                others.append(r)
        blocks = []
        for (kind, worker, test, train), rows in groups.items():
            n = len(rows)
            blocks.append(
                RecordBlock(
                    kind, worker, test, train,
                    np.array([(_NONE if r.unit.outer is None else r.unit.outer,
                               _NONE if r.unit.inner is None else r.unit.inner,
                               r.unit.candidate) for r in rows], dtype=np.int64).reshape(n, 3),
                    np.array([list(r.test_scores.values()) for r in rows],
                             dtype=np.float64).reshape(n, len(test)),
                    np.array([list(r.train_scores.values()) for r in rows],
                             dtype=np.float64).reshape(n, len(train)),
                    np.array([(r.fit_time, r.score_time, r.started, r.finished) for r in rows],
                             dtype=np.float64).reshape(n, 4),
                    np.array([(r.n_train, r.n_test, r.reused_steps) for r in rows],
                             dtype=np.int64).reshape(n, 3),
                )
            )  # fmt: skip
        return cls(blocks, others)

    @classmethod
    def join(cls, batches: Sequence[Sequence[Record]]) -> Sequence[Record]:
        """Several batches as one (a list when one of them is not a batch)."""
        if len(batches) == 1:
            return batches[0]
        packed = [b for b in batches if isinstance(b, RecordBatch)]
        if len(packed) == len(batches):
            return cls([k for b in packed for k in b.blocks], [r for b in packed for r in b.others])
        return [r for b in batches for r in b]

    def __reduce__(self) -> tuple[type[RecordBatch], tuple[Any, ...]]:
        return (RecordBatch, (self.blocks, self.others))

    def __len__(self) -> int:
        return sum(len(b) for b in self.blocks) + len(self.others)

    def __iter__(self) -> Iterator[Record]:
        for block in self.blocks:
            yield from block.records()
        yield from self.others

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...
    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        return list(self)[i]

    def __repr__(self) -> str:
        return f"RecordBatch({len(self)} records, {len(self.others)} not plain)"

    def seconds(self) -> float:
        """The fit and score time of every record together."""
        return float(sum(b.times[:, :2].sum() for b in self.blocks)) + sum(
            r.fit_time + r.score_time for r in self.others
        )
