"""The driver's table of records: a record put in is the record read back.

A run keeps its records as columns (:meth:`RecordTable.add`) and rebuilds the plain
ones from their numbers when looked up; the rest are kept whole. The reference is the
plain dict of the same records that the driver kept before, fed in the same order.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parcv.plan.record_batch import RecordBatch
from parcv.plan.record_table import RecordTable
from parcv.plan.records import ErrorInfo, FoldScores, Predictions, Record, Unit

_FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def _records(draw: st.DrawFn) -> Record:
    kind = draw(st.sampled_from(["fit", "fit", "fit", "refit", "final", "criteria", "perm"]))
    outer = draw(st.one_of(st.none(), st.integers(0, 3)))
    inner = draw(st.one_of(st.none(), st.integers(0, 4)))
    if kind in ("refit", "final"):
        inner = None
    if kind == "final":
        outer = None
    unit = Unit(kind, outer, inner, draw(st.integers(0, 40)))
    metrics = draw(st.sampled_from([("score",), ("r2", "mse"), ("mse", "r2"), ()]))
    value = st.one_of(_FLOAT, _FLOAT.map(np.float64), st.integers(0, 9))
    test = {m: draw(value) for m in metrics}
    train = {m: draw(value) for m in metrics} if draw(st.booleans()) else {}
    failed = draw(st.integers(0, 9)) == 0
    extra = draw(st.sampled_from(["none", "none", "none", "warn", "first", "folds", "pred",
                                  "score_error", "reused", "kept"]))  # fmt: skip
    return Record(
        unit, "failed" if failed else "ok", test, train,
        draw(_FLOAT), draw(_FLOAT), draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6)),
        error=ErrorInfo("ValueError", "bad", "tb") if failed else None,
        warnings=("ConvergenceWarning",) if extra == "warn" else (),
        worker=draw(st.sampled_from(["host:1", "host:2", ""])),
        started=draw(_FLOAT), finished=draw(_FLOAT),
        folds=FoldScores({"score": np.array([1.0, np.nan])}) if extra == "folds" else None,
        reused_steps=2 if extra == "reused" else 0,
        predictions=Predictions({"predict": np.arange(3.0)}) if extra == "pred" else None,
        score_errors={"test:score": ErrorInfo("E", "m", "t")} if extra == "score_error" else {},
        first_warnings={"a:B": "text"} if extra == "first" else {},
        kept=("scikit-learn 1 → 2",) if extra == "kept" else (),
    )  # fmt: skip


def _same(a: Record, b: Record) -> bool:
    """Equal as records, and equal in what a comparison leaves out (types, models, notes)."""
    types = [type(v) for v in (*a.test_scores.values(), *a.train_scores.values())]
    other = [type(v) for v in (*b.test_scores.values(), *b.train_scores.values())]
    nan_equal = repr(a) == repr(b)  # NaN != NaN as a field: compare the texts
    return nan_equal and types == other and a.first_warnings == b.first_warnings \
        and a.kept == b.kept and list(a.test_scores) == list(b.test_scores)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_records(), min_size=1, max_size=12), min_size=1, max_size=6))
def test_every_record_reads_back_as_it_was_put_in(batches: list[list[Record]]) -> None:
    table = RecordTable.growing()
    want: dict = {}
    for batch in batches:
        new = table.add(batch).tolist()
        seen = set(want)
        expected_new = []
        for record in batch:
            expected_new.append(record.key not in seen)
            seen.add(record.key)
            want[record.key] = record
        assert sum(new) == sum(expected_new)  # a key held already is not new
    assert len(table) == len(want) and set(table) == set(want)
    for key, record in want.items():
        assert key in table
        assert _same(table[key], record), key
    assert ("fit", 99, 99, 99) not in table and ("nokind", 1) not in table
    # The batch of some keys (a chained refit's known fits) reads as looking each up.
    keys = [*list(want)[::2], ("fit", 99, 99, 99)]
    batch = pickle.loads(pickle.dumps(table.batch(keys)))
    assert sorted(map(_fingerprint, batch)) == sorted(_fingerprint(want[k]) for k in keys[:-1])
    ok = table.column("ok").astype(bool)
    assert sorted(map(repr, (r.key for r in table.records(~ok)))) == sorted(
        repr(k) for k, r in want.items() if not r.ok
    )


def _unique_keys(batch: list[Record]) -> list[Record]:
    """A chunk's records: one per key (a worker runs each unit of a chunk once)."""
    return list({r.key: r for r in batch}.values())


def _fingerprint(r: Record) -> str:
    types = [type(v).__name__ for v in (*r.test_scores.values(), *r.train_scores.values())]
    return f"{r!r} {types} {r.first_warnings} {r.kept} {list(r.test_scores)}"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_records(), min_size=1, max_size=12), min_size=1, max_size=6))
def test_a_worker_batch_carries_its_records_exactly_and_fills_the_same_table(
    batches: list[list[Record]],
) -> None:
    # What a worker packs is what the driver reads, after pickling: every record, exactly
    # (its plain ones as columns), and a table fed batches reads as one fed the records.
    batches = [_unique_keys(b) for b in batches]
    by_list, by_batch = RecordTable.growing(), RecordTable.growing()
    for batch in batches:
        packed = pickle.loads(pickle.dumps(RecordBatch.pack(batch)))
        assert len(packed) == len(batch)
        assert sorted(map(_fingerprint, packed)) == sorted(map(_fingerprint, batch))
        joined = RecordBatch.join([packed, RecordBatch.pack([])])
        assert sum(by_batch.add(joined).tolist()) == sum(by_list.add(batch).tolist())
    assert set(by_batch) == set(by_list)
    for key in by_list:
        assert _same(by_batch[key], by_list[key]), key
    for name in ("ok", "warned", "n_train"):  # rows in another order: the same values
        np.testing.assert_array_equal(np.sort(by_batch.column(name)), np.sort(by_list.column(name)))


def test_fit_matrix_reads_the_latest_record_of_each_fit() -> None:
    table = RecordTable.growing()
    first = [Record(Unit("fit", 0, i, c), "ok", {"s": float(10 * c + i)}, {}, 0.0, 0.0, 1, 1)
             for c in range(3) for i in range(2)]  # fmt: skip
    table.add(first)
    again = Record(Unit("fit", 0, 1, 2), "ok", {"s": -1.0}, {}, 0.0, 0.0, 1, 1)
    assert table.add([again]).tolist() == [False]
    np.testing.assert_array_equal(
        table.fit_matrix(0, (3, 2), "test:s"), [[0.0, 1.0], [10.0, 11.0], [20.0, -1.0]]
    )
    assert len(table) == 6 and table[("fit", 0, 1, 2)] == again


def test_a_table_read_from_a_store_takes_no_new_record() -> None:
    units = [Unit("fit", None, 0, 0)]
    record = Record(units[0], "ok", {"s": 1.0}, {}, 0.0, 0.0, 1, 1)
    columns = {"ok": np.ones(1, bool), "warned": np.zeros(1, bool), "test:s": np.ones(1)}
    table = RecordTable(units, columns, lambda i: record)
    with pytest.raises(TypeError, match="growing"):
        table.add([record])
