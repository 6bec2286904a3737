"""Unfinished and damaged stores give a message naming the file and the way on."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import parcv
from parcv.errors import StoreDamagedError
from parcv.store.readers import read_store
from tests.store.surgery import drop_units
from tests.sweep_script import sweep_data

SPACE = {"alpha": [0.1, 1.0]}


def _nested(store, **options):
    X, y = sweep_data()
    return parcv.nested_cv(Ridge(), SPACE, X, y, outer=3, inner=2, backend="serial",
                           store=store, **options)  # fmt: skip


def _numbers(result):
    return result.outer_scores["score"].tolist(), result.chosen


def _sql(store, statement):
    """Change the store as a run killed before it sealed it, or an earlier parcv, leaves it.

    The seal would refuse any change (test_store_trust.py): without it, what parcv reads
    in the changed tables must refuse it.
    """
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute(statement)
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            conn.execute("DELETE FROM meta WHERE name = 'seal'")


def test_an_unfinished_run_says_how_far_it_got_and_how_to_finish(tmp_path):
    store = tmp_path / "run.sqlite"
    full = _nested(store)
    before = read_store(store)[1]
    # Drop the units and their records, as a run interrupted before these units finished
    # would have left them.
    dropped = drop_units(store, lambda u: u.key in (("refit", 1), ("final",))
                         or (u.kind, u.outer, u.inner) == ("fit", 2, 0))  # fmt: skip
    assert dropped == 4
    # 4 outer x 2 inner x 2 candidates + 3 refits + final = 20 units; 2 fits, refit, final gone
    message = r"unfinished run: 16 of 20 units done; missing 2 fits; the refits of outer folds 1;"
    with pytest.raises(parcv.UnfinishedRunError, match=message + r" the final refit.*resume=True"):
        parcv.load(store)
    _check_partial(parcv.load(store, partial=True), full, before)
    assert _numbers(_nested(store, resume=True)) == _numbers(full)


def _check_partial(partial, full, before):
    """The partial result against the records of the full run, minus the deleted units."""
    assert isinstance(partial, parcv.PartialResult) and partial.kind == "nested_cv"
    assert (partial.n_done, partial.n_units) == (16, 20)
    assert partial.missing == [
        "2 fits",
        "the refits of outer folds 1",
        "the final refit on all data",
    ]
    assert "unfinished run: 16 of 20 units done" in partial.status
    assert "nested CV estimate" in partial.estimates_missing
    for cand in range(2):
        kept = [r.test_scores["score"] for k, r in before.items()
                if k[0] == "fit" and k[3] == cand and k[1:3] != (2, 0)]  # fmt: skip
        assert partial.n_folds_done[cand] == len(kept) == 7  # 4 fold sets x 2 folds, less one
        assert partial.mean_test_score[cand] == pytest.approx(np.mean(kept), rel=1e-12)
    outer = full.outer_scores["score"]
    assert partial.outer_test_scores == {0: outer[0], 2: outer[2]}
    assert "| alpha=0.1 | 7 of 8 |" in partial.to_markdown()


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        (
            "UPDATE chunks SET test_scores = '{not json' WHERE id = (SELECT min(id) FROM chunks)",
            "a record holds text",
        ),
        ("DELETE FROM meta WHERE name = 'kind'", "no entry 'kind'"),
        ("UPDATE meta SET value = '{\"metrics\": []}' WHERE name = 'plan'", "missing entry"),
        ("UPDATE meta SET value = 'garbage' WHERE name = 'plan'", "plan description"),
    ],
)
def test_a_logically_damaged_store_is_refused_on_load_and_resume(tmp_path, damage, what):
    store = tmp_path / "run.sqlite"
    _nested(store)
    _sql(store, damage)
    with pytest.raises(
        StoreDamagedError, match=rf"{str(store)!r} is damaged: .*({what}).*overwrite"
    ):
        parcv.load(store)
    if "meta" not in damage:
        with pytest.raises(StoreDamagedError, match="is damaged"):
            _nested(store, resume=True)
    _nested(store, overwrite=True)  # the way out the message names
    parcv.load(store)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_a_truncated_or_garbage_file_is_refused(tmp_path, how):
    store = tmp_path / "run.sqlite"
    _nested(store, journal="delete")
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 3] if how == "truncated" else b"x" * len(data))
    with pytest.raises(parcv.ParcvError, match=rf"{str(store)!r}.*(not a parcv store|damaged)"):
        parcv.load(store)
    with pytest.raises(parcv.ParcvError, match=rf"{str(store)!r}"):
        _nested(store, resume=True)


@pytest.mark.parametrize("state", ["empty file", "no tables", "no meta rows"])
def test_a_store_whose_creation_was_interrupted_is_recreated(tmp_path, state):
    store = tmp_path / "run.sqlite"
    store.touch()
    if state != "empty file":
        _sql(store, "PRAGMA journal_mode=wal")
    if state == "no meta rows":
        _sql(store, "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    reference = _nested(tmp_path / "ref.sqlite")
    assert _numbers(_nested(store, resume=True)) == _numbers(reference)
    store.unlink()
    store.touch()
    assert _numbers(_nested(store)) == _numbers(reference)
