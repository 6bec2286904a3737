"""A store read into columns gives back the records its run returned, equal field by field.

:func:`parcv.store.readers.read_records` reads a store's records and units in scans of
blocks into numpy columns, joins them by content key, builds the rows holding more than
numbers as it reads and the plain ones from the columns when looked up. The reference
is independent of the store: the records the run itself returned.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline

import parcv
from parcv.plan.record_batch import RecordBatch
from parcv.plan.record_table import RecordTable
from parcv.plan.records import ErrorInfo, Record, Unit
from parcv.store.chunks import _last_stored, as_keys, find, read_stored_keys
from parcv.store.opening import open_store
from parcv.store.readers import (
    read_ckeys,
    read_counts,
    read_records,
    read_stored_kinds,
    read_unidentified,
)
from tests.estimators import FailsOnAlpha, WarnsOnFit

X, Y = make_regression(n_samples=60, n_features=5, noise=5.0, random_state=0)


def _failures(store):
    with pytest.warns(parcv.FitFailedWarning):
        return parcv.nested_cv(FailsOnAlpha(), {"alpha": [-1.0, 0.1, 10.0]}, X, Y, outer=3,
                               inner=3, store=store, error_score=np.nan, return_train_score=True,
                               scoring=["r2", "neg_mean_squared_error"], refit="r2",
                               return_predictions=True, progress=False)  # fmt: skip


def _warnings(store):
    estimator = make_pipeline(WarnsOnFit(), Ridge())
    with pytest.warns(UserWarning, match="fitted a scaler that warns"):
        return parcv.search(estimator, {"ridge__alpha": [0.1, 1.0]}, X, Y, cv=3, store=store,
                            return_train_score=True, progress=False)  # fmt: skip


def _fast_cv(store):
    return parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, Y, cv=5, fast_cv=True,
                        store=store, progress=False)  # fmt: skip


@pytest.mark.parametrize("run", [_failures, _warnings, _fast_cv])
def test_the_records_read_as_columns_equal_those_the_run_returned(tmp_path, run):
    store = tmp_path / "run.sqlite"
    returned = list(run(store).records)
    table = read_records(store)
    assert isinstance(table, RecordTable)
    assert len(table) == len(returned)
    for record in returned:  # the store keeps no reused_steps (pipeline steps a fit reused)
        assert _comparable(table[record.key]) == _comparable(replace(record, reused_steps=0))
    read = [table[r.key] for r in returned]
    if run is _failures:
        assert any(r.error is not None for r in read)
        assert any(r.train_scores for r in read)
        assert any(r.predictions is not None for r in read)
        assert any(r.ok and r.error is None and r.predictions is None for r in read)
    elif run is _warnings:
        assert all(r.warnings for r in read if r.unit.kind == "fit")
    else:
        assert any(r.folds is not None for r in read)


def _comparable(record):
    """The record with NaN scores as text: NaN is not equal to itself, even in a dict."""

    def text(scores):
        return {k: "nan" if v != v else v for k, v in scores.items()}

    return replace(record, test_scores=text(record.test_scores),
                   train_scores=text(record.train_scores))  # fmt: skip


@pytest.mark.parametrize(
    "stored",
    [
        [bytes([i]) * 16 for i in range(7)],  # first 8 bytes differ
        [b"\x01" * 8 + bytes([i]) * 8 for i in range(7)],  # the same first 8 bytes
    ],
)
def test_content_keys_are_found_exactly(stored):
    wanted = [stored[5], b"\x09" * 16, stored[0], stored[5], b"\x01" * 16, stored[6]]
    places = find(as_keys(b"".join(stored)), as_keys(b"".join(wanted)))
    assert places.tolist() == [5, -1, 0, 5, -1 if stored[1] != b"\x01" * 16 else 1, 6]
    assert find(as_keys(b""), as_keys(b"".join(wanted))).tolist() == [-1] * len(wanted)


def test_of_a_key_stored_twice_the_last_stored_is_read():
    # Entries: key a in chunks 1 and 3, key b in chunk 1 twice, key c in a records row
    # after chunk 3 and in chunk 2; key d once. Stored in the order (when, at).
    a, b, c, d = (bytes([i]) * 8 + bytes([9 - i]) * 8 for i in range(4))
    keys = as_keys(a + b + b + a + c + c + d)
    when = np.array([2, 2, 2, 6, 4, 7, 2])
    at = np.array([0, 1, 2, 0, 0, 5, 3])
    assert _last_stored(keys, when, at).tolist() == [False, False, True, True, False, True, True]


def test_a_store_whose_units_have_no_record_reads_as_an_empty_table(tmp_path):
    store = tmp_path / "run.sqlite"
    _fast_cv(store)
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("DELETE FROM records")  # a run stopped before its first record
        conn.execute("DELETE FROM chunks")
        conn.execute("DELETE FROM meta WHERE name = 'seal'")  # a run killed leaves none
    table = read_records(store)
    assert len(table) == 0 and list(table) == []
    assert read_stored_kinds(store) == {} and read_counts(store)[0] == 0
    assert table.column("ok").dtype == bool and not len(table.column("fit_time"))


def _rows(store):
    """Every stored record and unit, without what differs between two runs (times, workers)."""
    table = read_records(store)
    records = sorted(
        repr(replace(table[key], fit_time=0.0, score_time=0.0, started=0.0, finished=0.0,
                     worker="").to_dict())
        for key in table
    )  # fmt: skip
    return records, sorted(read_ckeys(store)), read_unidentified(store)


def test_a_store_written_from_workers_batches_equals_one_written_record_by_record(tmp_path):
    # The local pool's workers send their records as columns, stored without building them;
    # the serial backend stores each record: the two stores hold the same rows.
    def run(backend):
        store = tmp_path / f"{backend}.sqlite"
        parcv.nested_cv(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, Y, outer=3, inner=3,
                        store=store, backend=backend, return_train_score=True,
                        scoring=["r2", "neg_mean_squared_error"], refit="r2",
                        progress=False)  # fmt: skip
        return _rows(store)

    serial, local = run("serial"), run("local")
    assert len(local[0]) == (3 + 1) * 3 * 3 + 3 + 1  # fits (outer folds, all data), refits
    assert local[2] == 0  # every record stored with its values key
    assert local == serial


def test_a_unit_stored_again_reads_as_the_one_stored_last_chunk_or_row(tmp_path):
    # A plain record is kept in a chunk, a failure as a row: a unit retried or rescored
    # alternates between the two, and each read finds the record stored last (as a row
    # replaced by INSERT OR REPLACE read before chunks).
    path, unit, ckey = tmp_path / "run.sqlite", Unit("fit", 0, 1, 0), "ab" * 16
    store = open_store(path, {"fingerprint": "f"}, [], labels=(("c0", "{}"),),
                       key_of=lambda u: ckey)  # fmt: skip

    def record(status, score):
        error = None if status == "ok" else ErrorInfo("ValueError", "no", "")
        return Record(unit, status, {"score": score}, {}, 0.5, 0.25, 8, 2, error=error,
                      worker="w", started=score, finished=score + 1)  # fmt: skip

    try:
        for status, score in [("ok", 0.1), ("failed", 0.2), ("ok", 0.3), ("ok", 0.4),
                              ("failed", 0.5), ("failed", 0.6), ("ok", 0.7)]:  # fmt: skip
            stored = record(status, score)
            store.add(RecordBatch.pack([stored]))
            assert store.stored([ckey]) == {ckey: stored}
            assert dict(read_records(path)) == {unit.key: stored}
            assert store.n_records() == read_counts(path)[0] == 1
            assert read_stored_kinds(path) == {"fit": 1}
        # Pruning keeps the record read and drops the ones stored before it.
        assert store.prune() == 0 and store.stored([ckey]) == {ckey: stored}
        with closing(sqlite3.connect(path)) as conn:
            assert len(read_stored_keys(conn).keys) == 1
    finally:
        store.close()


def test_a_batch_rolled_back_leaves_no_label_id_behind(tmp_path):
    # The writer keeps each candidate's label id once inserted. A batch whose transaction
    # fails after its chunk inserted new labels rolls them back: written again, its chunk
    # must insert them again, not point at ids that no longer exist.
    path, keys = tmp_path / "run.sqlite", {0: "ab" * 16, 1: "cd" * 16}
    failed: list[int] = []

    def identity_of(unit):
        if unit.candidate == 1 and not failed:
            failed.append(1)
            raise RuntimeError("the disk is full")  # after the chunk, inside the transaction
        return keys[unit.candidate], b"", None

    store = open_store(path, {"fingerprint": "f"}, [], labels=(("c0", "{}"), ("c1", "{}")),
                       key_of=lambda u: keys[u.candidate], identity_of=identity_of)  # fmt: skip

    def record(c, status):
        error = None if status == "ok" else ErrorInfo("ValueError", "no", "")
        return Record(Unit("fit", 0, 0, c), status, {"score": 0.5}, {}, 0.5, 0.25, 8, 2,
                      error=error, worker="w")  # fmt: skip

    batch = RecordBatch.pack([record(0, "ok"), record(1, "failed")])
    assert batch.blocks and batch.others  # a chunk, then a row of its own
    try:
        with pytest.raises(RuntimeError, match="disk is full"):
            store.add(batch)
        store.add(batch)
    finally:
        store.close()
    with closing(sqlite3.connect(path)) as conn:
        labels = dict(conn.execute("SELECT id, candidate_id FROM labels"))
        (blob,) = conn.execute("SELECT labels FROM chunks").fetchone()
    assert [labels[i] for i in np.frombuffer(blob, dtype="<i8").tolist()] == ["c0"]
