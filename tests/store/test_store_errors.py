"""A full disk or a physically broken store gives parcv's one sentence, never SQLite's."""

from __future__ import annotations

import errno
import logging
import re
import sqlite3
from contextlib import closing

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import parcv
from parcv.errors import StoreDamagedError, StoreFullError, shorten, shown
from parcv.store.readers import read_store
from parcv.store.writer import Store
from tests.sweep_script import sweep_data

SPACE = {"alpha": [0.1, 1.0]}
PAGE = 4096  # SQLite's default page size, which parcv keeps


def _nested(store, **options):
    X, y = sweep_data()
    return parcv.nested_cv(Ridge(), SPACE, X, y, outer=3, inner=2, backend="serial",
                           store=store, progress=False, **options)  # fmt: skip


def _sql(store, script):
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.executescript(script)


def _zero_page(index):
    def damage(store):
        data = bytearray(store.read_bytes())
        start = (index if index >= 0 else len(data) // PAGE + index) * PAGE
        data[start : start + PAGE] = bytes(PAGE)
        store.write_bytes(bytes(data))

    return damage


# Each gave a raw sqlite3 traceback from load() or a resume before (8 of the probe's 24).
DAMAGES = {
    "third-page-zeroed": _zero_page(2),
    "last-page-zeroed": _zero_page(-1),
    "no-folds-table": lambda s: _sql(s, "DROP TABLE folds"),
    "no-models-table": lambda s: _sql(s, "DROP TABLE models"),
    "units-of-one-column": lambda s: _sql(s, "DROP TABLE units; CREATE TABLE units (x)"),
    "records-of-one-column": lambda s: _sql(s, "DROP TABLE records; CREATE TABLE records (x)"),
    "chunks-of-one-column": lambda s: _sql(s, "DROP TABLE chunks; CREATE TABLE chunks (x)"),
    "records-a-view": lambda s: _sql(
        s,
        "ALTER TABLE records RENAME TO old_records; "
        "CREATE VIEW records AS SELECT * FROM old_records",
    ),
    "chunks-a-view": lambda s: _sql(
        s,
        "ALTER TABLE chunks RENAME TO old_chunks; CREATE VIEW chunks AS SELECT * FROM old_chunks",
    ),
    "workers-a-view": lambda s: _sql(
        s,
        "ALTER TABLE workers RENAME TO old_workers; "
        "CREATE VIEW workers AS SELECT * FROM old_workers",
    ),
}


@pytest.fixture(scope="module")
def intact(tmp_path_factory):
    store = tmp_path_factory.mktemp("intact") / "run.sqlite"
    result = _nested(store, journal="delete")  # one file, no -wal beside it
    return store.read_bytes(), result


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("call", ["load", "resume"])
def test_a_physically_damaged_store_is_named_never_a_raw_sqlite_error(
    tmp_path, intact, damage, call
):
    store = tmp_path / "run.sqlite"
    store.write_bytes(intact[0])
    DAMAGES[damage](store)
    try:
        result = parcv.load(store) if call == "load" else _nested(store, resume=True)
    except parcv.ParcvError as err:
        assert not isinstance(err, sqlite3.Error)
        message = str(err)
        assert f"store {str(store)!r}" in message
        assert "is damaged" in message or "is not a parcv store" in message, message
        # The way out the message names works: a resume where the seal verifies the
        # records (only tables a run rewrites differ), else a new run.
        if "overwrite" in message or "new path" in message:
            result = _nested(store, overwrite=True)
        else:
            assert "resume=True" in message, message
            result = _nested(store, resume=True)
    # What SQLite still reads, a resume that rebuilt what it needs, or a new run: all right.
    assert result.outer_scores["score"].tolist() == intact[1].outer_scores["score"].tolist()


def test_a_store_sqlite_cannot_use_names_what_sqlite_says(tmp_path, intact):
    store = tmp_path / "run.sqlite"
    store.write_bytes(intact[0])
    DAMAGES["workers-a-view"](store)  # read as a table, but SQLite cannot add a worker to it
    _sql(store, "DELETE FROM meta WHERE name = 'seal'")  # else the seal refuses it first
    with pytest.raises(StoreDamagedError, match=r"is damaged: SQLite cannot use it .*a view"):
        _nested(store, resume=True)


def test_a_full_disk_keeps_the_finished_units_and_says_how_to_resume(tmp_path, monkeypatch):
    """SQLite's own "database or disk is full", as on a full disk: a page limit reached."""
    store = tmp_path / "run.sqlite"
    X, y = sweep_data()
    space = {"alpha": list(np.logspace(-3, 3, 30))}

    def search(**options):
        return parcv.search(Ridge(), space, X, y, cv=5, backend="serial", store=store,
                            progress=False, **options)  # fmt: skip

    add, batches = Store.add, []

    def add_until_full(self, records):
        batches.append(1)
        if len(batches) == 3:  # the file may grow no more from the third batch on
            pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
            self.conn.execute(f"PRAGMA max_page_count = {pages}")
        return add(self, records)

    monkeypatch.setattr(Store, "add", add_until_full)
    with pytest.raises(StoreFullError) as info:  # before: a bare sqlite3.OperationalError
        search()
    kept = len(read_store(store)[1])
    assert 0 < kept < 30 * 5
    message = str(info.value)
    assert message == (
        f"store {str(store)!r}: the disk holding it is full (database or disk is full). The "
        f"{kept} finished units are kept in it. Free some space there, then run the same "
        "call again with resume=True (command line: --resume)."
    )
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOSPC
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    monkeypatch.setattr(Store, "add", add)  # space again
    resumed = search(resume=True)
    fresh = parcv.search(Ridge(), space, X, y, cv=5, backend="serial", progress=False)
    assert resumed.best_params_ == fresh.best_params_
    np.testing.assert_array_equal(
        resumed.cv_results_["mean_test_score"], fresh.cv_results_["mean_test_score"]
    )


def test_a_long_value_is_cut_in_messages(tmp_path, capsys):
    from parcv.cli import main

    spec = tmp_path / "big.toml"
    spec.write_text(
        '[data]\nsource = "sklearn:iris"\n[estimator]\nclass = "sklearn.' + "A" * 1_000_000
        + '"\n'
    )  # fmt: skip
    assert main(["inspect", str(spec)]) == 2
    err = capsys.readouterr().err
    assert len(err) < 1_000  # before: the 1 MB name twice, 2 MB
    assert f"{spec}:4: estimator.class = 'sklearn.AAAA" in err
    assert "(1,000,010 characters) is not valid" in err


def test_shorten_keeps_short_text_and_says_how_long_long_text_was():
    assert shorten("abc") == "abc"
    cut = shorten("a" * 150 + "b" * 150, limit=100)
    assert cut.startswith("a" * 66 + "…") and cut.endswith("b" * 33 + " (300 characters)")
    assert shown("x" * 10) == repr("x" * 10)


def test_a_store_whose_writer_was_killed_in_a_transaction_reads_back_at_its_last_commit(
    tmp_path, caplog
):
    # A writer killed mid-transaction (as a SIGKILL while the store switches back from WAL at
    # its close) leaves a hot rollback journal, which a read-only connection cannot roll back:
    # reading the store's description for a resume or a load said "not a parcv store".
    import shutil
    import subprocess
    import sys

    store, untouched = tmp_path / "run.sqlite", tmp_path / "untouched.sqlite"
    first = _nested(store)
    shutil.copy(store, untouched)
    killed = f"""
import os, signal, sqlite3
conn = sqlite3.connect({str(store)!r}, isolation_level=None)
conn.execute("PRAGMA cache_size=10")  # spill the change to the file before any commit
conn.execute("BEGIN IMMEDIATE")
conn.execute("DELETE FROM meta")
conn.execute("CREATE TABLE filler (k BLOB PRIMARY KEY, v BLOB)")
conn.executemany("INSERT INTO filler VALUES (?, ?)",
                 [(os.urandom(16), bytes(500)) for _ in range(3000)])
os.kill(os.getpid(), signal.SIGKILL)
"""
    subprocess.run([sys.executable, "-c", killed], check=False)
    assert (tmp_path / "run.sqlite-journal").is_file()
    back = parcv.load(store)
    assert back.outer_scores["score"].tolist() == first.outer_scores["score"].tolist()
    with caplog.at_level(logging.INFO, logger="parcv"):
        _nested(untouched, resume=True)
        expected = re.search(r"reusing \d+ of \d+ units[^\n]*", caplog.text)
        caplog.clear()
        again = _nested(store, resume=True)
    assert expected is not None and expected[0] in caplog.text, caplog.text
    assert again.outer_scores["score"].tolist() == first.outer_scores["score"].tolist()
