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
from parcv.plan.record_table import RecordTable
from parcv.store.columnar import _each_key, _key_block, _match
from parcv.store.readers import read_records
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


def _blocks(keys, size=3):
    return [_key_block(keys[i : i + size]) for i in range(0, len(keys), size)]


@pytest.mark.parametrize(
    "stored",
    [
        [bytes([i]) * 16 for i in range(7)],  # 16 bytes each: sorted by their first 8
        [b"\x01" * 8 + bytes([i]) * 8 for i in range(7)],  # the same first 8: by dict
        [bytes([i]) * (i + 1) for i in range(7)],  # other lengths: by dict
    ],
)
def test_content_keys_are_matched_exactly(stored):
    wanted = [stored[5], b"\x09" * 16, stored[0], stored[5], b"", stored[6]]
    places = _match(_blocks(stored), _blocks(wanted, 2))
    assert places.tolist() == [5, -1, 0, 5, -1, 6]
    assert list(_each_key(_blocks(stored))) == stored
    assert _match([], _blocks(wanted)).tolist() == [-1] * len(wanted)


def test_a_store_whose_units_have_no_record_reads_as_an_empty_table(tmp_path):
    store = tmp_path / "run.sqlite"
    _fast_cv(store)
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("DELETE FROM records")  # a run stopped before its first record
    table = read_records(store)
    assert len(table) == 0 and list(table) == []
    assert table.column("ok").dtype == bool and not len(table.column("fit_time"))


def _rows(store):
    """Every stored record and unit, without what differs between two runs (times, workers)."""
    with closing(sqlite3.connect(store)) as conn:
        records = conn.execute(
            "SELECT r.ckey, kind, outer, inner, candidate, l.params, status, m.names, "
            "test_scores, train_scores, n_train, n_test, error_type, error_message, warnings, "
            "fold_scores FROM records r JOIN labels l ON l.id = r.label "
            "JOIN metrics m ON m.id = r.metrics ORDER BY r.ckey"
        ).fetchall()
        units = conn.execute("SELECT * FROM units ORDER BY pid, key").fetchall()
        identities = conn.execute("SELECT vkey, ckey FROM identities ORDER BY ckey").fetchall()
    return records, units, identities


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
    assert local == serial
