"""Durability: the SQLite store, resume after a kill, interrupts, mismatched plans."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import psutil
import pytest
from sklearn.linear_model import Ridge

import parcv
from parcv.store.readers import read_counts, read_store
from tests.estimators import FailsOnAlpha
from tests.store.surgery import as_rows
from tests.sweep_script import SlowRidge, sweep_data

ROOT = Path(__file__).resolve().parents[2]
SPACE = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0]}
N_UNITS = (4 + 1) * 3 * 5 + 4 + 1  # fits of 4 outer folds and all data, 4 refits, final


def _count(path: Path) -> int:
    """The records a store holds (chunks' and rows'), read as a reader reads them; 0: none yet."""
    try:
        return read_counts(path)[0]
    except (sqlite3.Error, parcv.ParcvError):  # not created yet
        return 0


def _start_sweep(store: Path, backend: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "sweep_script.py"), str(store), backend, *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_and_reap(proc: subprocess.Popen) -> list[psutil.Process]:
    """SIGKILL the driver; return its worker processes, which must exit by themselves."""
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"worker processes outlived the killed driver: {alive}"
    proc.stdout.close()
    proc.stderr.close()
    return children


def _wait_for_records(store: Path, proc: subprocess.Popen, at_least: int) -> int:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        n = _count(store) if store.exists() else 0
        if n >= at_least:
            return n
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the sweep committed no records in time")


def _reference(tmp_path: Path) -> parcv.NestedResult:
    X, y = sweep_data()
    return parcv.nested_cv(
        SlowRidge(sleep=0.0),
        SPACE,
        X,
        y,
        outer=4,
        inner=3,
        backend="serial",
        store=tmp_path / "ref.sqlite",
    )


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "dask"])
def test_sigkill_then_resume_is_bit_identical(tmp_path, backend):
    store = tmp_path / "run.sqlite"
    proc = _start_sweep(store, backend)
    _wait_for_records(store, proc, at_least=20)
    _kill_and_reap(proc)
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    before = {k: r.finished for k, r in read_store(store)[1].items()}
    present = len(before)
    assert 20 <= present < N_UNITS
    resume = _start_sweep(store, backend, "--resume")
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, err
    _, records = read_store(store)
    assert len(records) == N_UNITS
    # Only the missing units ran; the final refit is redone too when it was stored, because
    # its fitted model is not stored unless save_models=True.
    rerun = [k for k in records if k not in before or records[k].finished != before[k]]
    final_redone = int(("final",) in before)
    assert len(rerun) == N_UNITS - present + final_redone
    assert set(rerun) - set(before) == set(records) - set(before)
    ref = _reference(tmp_path)
    got = json.loads(out)
    assert got["outer"] == ref.outer_scores["score"].tolist()
    assert got["chosen"] == ref.chosen


def _file_state(path: Path) -> tuple[int, dict]:
    meta, records = read_store(path)
    return len(records), meta


def _stored_and_now(message: str, name: str) -> tuple[str, str]:
    """The two sides of ``name (stored A, now B)`` in a mismatch message."""
    part = message.split(f"{name} (stored ", 1)[1]
    stored, rest = part.split(", now ", 1)
    return stored, rest.split(")", 1)[0]


def test_a_mismatch_shows_where_two_long_spaces_differ(tmp_path):
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = sweep_data()
    pipe = Pipeline([("scale", StandardScaler()), ("model", Ridge())])
    grid = {"model__alpha": [0.1, 1.0, 10.0], "model__fit_intercept": [True, False],
            "model__solver": ["auto", "svd"]}  # fmt: skip
    store = tmp_path / "run.sqlite"
    parcv.search(pipe, grid, X, y, cv=3, backend="serial", store=store)
    edited = {**grid, "model__solver": ["auto", "cholesky"]}  # the last values of the space
    with pytest.raises(parcv.PlanMismatchError) as info:
        parcv.search(pipe, edited, X, y, cv=3, backend="serial", store=store)
    stored, now = _stored_and_now(str(info.value), "space")
    assert stored != now  # not both cut at the same point before the difference
    assert "'model__solver': 'svd'" in stored and "'model__solver': 'cholesky'" in now
    assert "'model__alpha': " in stored and "'model__alpha': " in now  # context before it
    assert len(stored) <= 120 and len(now) <= 120


def test_a_different_plan_is_refused_and_the_store_is_untouched(tmp_path):
    X, y = sweep_data()
    store = tmp_path / "run.sqlite"
    parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial", store=store)
    before = _file_state(store)
    with pytest.raises(parcv.PlanMismatchError, match=r"different plan.*Nothing was changed"):
        parcv.search(Ridge(), {"alpha": [0.1, 2.0]}, X, y, cv=3, backend="serial", store=store)
    with pytest.raises(parcv.PlanMismatchError, match="different plan"):
        parcv.search(
            Ridge(), {"alpha": [0.1, 1.0]}, X, y + 1.0, cv=3, backend="serial", store=store
        )
    assert _file_state(store) == before
    with pytest.raises(parcv.PlanMismatchError, match="resume=True"):
        parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial", store=store)
    assert _file_state(store) == before
    parcv.search(
        Ridge(), {"alpha": [0.1, 2.0]}, X, y, cv=3, backend="serial", store=store, overwrite=True
    )
    assert _file_state(store)[1]["fingerprint"] != before[1]["fingerprint"]


@pytest.mark.parametrize("kind", ["cross_validate", "search", "nested_cv"])
def test_load_rebuilds_the_same_result_without_computing(tmp_path, kind):
    X, y = sweep_data()
    store = tmp_path / "run.sqlite"
    if kind == "cross_validate":
        r = parcv.cross_validate(
            Ridge(),
            X,
            y,
            cv=4,
            backend="serial",
            store=store,
            scoring=["r2", "neg_mean_absolute_error"],
        )
        back = parcv.load(store)
        for key, value in r.scores.items():
            np.testing.assert_array_equal(back.scores[key], value)
        return
    call = parcv.search if kind == "search" else parcv.nested_cv
    kwargs = {"cv": 3} if kind == "search" else {"outer": 3, "inner": 3}
    r = call(Ridge(), {"alpha": [0.01, 1.0, 100.0]}, X, y, backend="serial", store=store, **kwargs)
    back = parcv.load(store)
    assert back.to_json() == r.to_json()
    assert not os.stat(store).st_mode & 0o077  # the user's only


def test_store_holds_no_pickles_and_every_field(tmp_path):
    X, y = sweep_data()
    store = tmp_path / "run.sqlite"
    with pytest.warns(parcv.FitFailedWarning):
        parcv.search(
            FailsOnAlpha(), {"alpha": [-1.0, 1.0]}, X, y, cv=3, backend="serial", store=store
        )
    with closing(sqlite3.connect(store)) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(
            "SELECT r.*, l.candidate_id, l.params, w.name AS worker_name, m.names AS metric_names "
            "FROM records r JOIN labels l ON l.id = r.label JOIN workers w ON w.id = r.worker "
            "JOIN metrics m ON m.id = r.metrics WHERE status = 'failed'"
        ).fetchall()
        texts = conn.execute(
            "SELECT COUNT(*) FROM labels WHERE typeof(params) != 'text'"
        ).fetchone()[0]
    assert texts == 0 and len(rows) == 3
    row = dict(rows[0])
    assert row["error_type"] == "ValueError" and "alpha must be >= 0" in row["traceback"]
    assert json.loads(row["params"]) == {"alpha": -1.0}
    assert row["candidate_id"].startswith("c0-") and row["worker_name"] and row["stored"] > 0
    assert row["kind"] == "fit" and len(row["ckey"]) == 16  # kept by content key, as bytes
    # Scores are plain little-endian float64, named by the metrics table: no pickles.
    assert json.loads(row["metric_names"]) == [["score"], []] and row["train_scores"] == b""
    assert np.isnan(np.frombuffer(row["test_scores"], "<f8")).all()  # error_score=nan


def test_candidate_failing_everywhere_is_excluded_even_with_a_numeric_error_score():
    X, y = sweep_data()
    # error_score=0 would beat every negative MSE; the failed candidate must still lose.
    with pytest.warns(parcv.FitFailedWarning, match=r"alpha=-1.0 failed in every fold"):
        r = parcv.search(
            FailsOnAlpha(),
            {"alpha": [-1.0, 1.0]},
            X,
            y,
            cv=3,
            error_score=0.0,
            scoring="neg_mean_squared_error",
            backend="serial",
        )
    assert r.best_params_ == {"alpha": 1.0}
    assert r.failures.n_failed == 3
    assert "3 of 7 fits failed (candidate 'alpha=-1.0': 3)" in r.failures.text
    assert "ValueError: alpha must be >= 0" in r.failures.text


def test_fit_warnings_are_counted_per_candidate():
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    X, y = sweep_data()
    with pytest.warns(ConvergenceWarning, match="3 time"):  # the caller sees them too
        r = parcv.search(
            LogisticRegression(),
            {"max_iter": [1, 1000]},
            X,
            (y > 0).astype(int),
            cv=3,
            backend="serial",
            refit=False,
        )
    assert r.warning_counts == {"max_iter=1": {"ConvergenceWarning": 3}}


def test_saved_model_is_reused_on_resume_and_loaded_on_request(tmp_path):
    X, y = sweep_data()
    store = tmp_path / "run.sqlite"
    r = parcv.search(
        Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial", store=store, save_models=True
    )
    lazy = parcv.load(store)  # reading a store runs no code: the model loads when read
    assert lazy.final_model.estimator is None and lazy.final_model.loader is not None
    np.testing.assert_array_equal(lazy.best_estimator_.predict(X), r.best_estimator_.predict(X))
    model = parcv.load(store, load_models=True).best_estimator_
    np.testing.assert_array_equal(model.predict(X), r.best_estimator_.predict(X))
    again = parcv.search(
        Ridge(),
        {"alpha": [0.1, 1.0]},
        X,
        y,
        cv=3,
        backend="serial",
        store=store,
        resume=True,
        save_models=True,
    )
    np.testing.assert_array_equal(again.best_estimator_.coef_, r.best_estimator_.coef_)


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_keeps_records_and_says_how_to_resume(
    tmp_path, sigint_reaches_children
):
    store = tmp_path / "run.sqlite"
    proc = _start_sweep(store, "local")
    _wait_for_records(store, proc, at_least=10)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "resume=True" in err and "missing" in err
    present = _count(store)
    assert 10 <= present < N_UNITS
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive
    resume = _start_sweep(store, "local", "--resume")
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, err
    assert json.loads(out)["outer"] == _reference(tmp_path).outer_scores["score"].tolist()


_WITHOUT_ROWID = {  # the layout of stores of schemas 3 to 5 made before: key-ordered rows
    "records": ("ckey BLOB NOT NULL UNIQUE", "ckey BLOB PRIMARY KEY"),
    "identities": ("UNIQUE (vkey, ckey))", "PRIMARY KEY (vkey, ckey)) WITHOUT ROWID"),
}


def _without_rowid_layout(store: Path) -> None:
    """Rebuild records and identities as the WITHOUT ROWID tables of the stores before."""
    with closing(sqlite3.connect(store)) as conn, conn:
        for table, (now, before) in _WITHOUT_ROWID.items():
            sql = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()[0]
            assert now in sql, sql
            sql = sql.replace(now, before)
            sql = sql if sql.endswith("WITHOUT ROWID") else f"{sql} WITHOUT ROWID"
            conn.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
            conn.execute(sql)
            conn.execute(f"INSERT INTO {table} SELECT * FROM old_{table}")
            conn.execute(f"DROP TABLE old_{table}")


def test_records_keep_their_order_and_stores_keyed_by_row_before_still_resume(reg_data, tmp_path):
    # Records and identities are appended in the order they arrive, with an index of their
    # content keys: a batch's random keys touch the index's pages, not the rows'. Units stay
    # ordered by their graph key.
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    small = {"alpha": [0.1, 1.0]}
    parcv.search(Ridge(), small, X, y, cv=3, backend="serial", store=store)
    with closing(sqlite3.connect(store)) as conn:
        tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
        indexes = {row[0] for row in conn.execute("SELECT tbl_name FROM sqlite_master "
                                                  "WHERE type = 'index'")}  # fmt: skip
    assert tables["units"].endswith("WITHOUT ROWID")
    assert not any(tables[t].endswith("WITHOUT ROWID") for t in ("records", "identities"))
    assert {"records", "identities", "chunks"} <= indexes and "units" not in indexes
    _without_rowid_layout(store)
    grown = parcv.search(Ridge(), SPACE, X, y, cv=3, backend="serial", store=store, resume=True)
    fresh = parcv.search(Ridge(), SPACE, X, y, cv=3, backend="serial")
    for name in ("mean_test_score", "split0_test_score", "rank_test_score"):
        np.testing.assert_array_equal(grown.cv_results_[name], fresh.cv_results_[name])
    loaded = parcv.load(store)
    np.testing.assert_array_equal(loaded.cv_results_["mean_test_score"],
                                  fresh.cv_results_["mean_test_score"])  # fmt: skip


# The records table of store schema 2 (before schema 3), which kept every row as text and JSON.
_V2_RECORDS = """CREATE TABLE records (
    ckey TEXT PRIMARY KEY, kind TEXT NOT NULL, outer INTEGER, inner INTEGER,
    candidate INTEGER NOT NULL, candidate_id TEXT NOT NULL, params TEXT NOT NULL,
    status TEXT NOT NULL, test_scores TEXT NOT NULL, train_scores TEXT NOT NULL,
    fit_time REAL NOT NULL, score_time REAL NOT NULL, n_train INTEGER NOT NULL,
    n_test INTEGER NOT NULL, error_type TEXT, error_message TEXT, traceback TEXT,
    warnings TEXT NOT NULL, worker TEXT NOT NULL, started REAL NOT NULL,
    finished REAL NOT NULL, stored REAL NOT NULL, fold_scores TEXT) WITHOUT ROWID"""


def _as_schema_2(store: Path) -> None:
    """Rewrite a store as schema 2 kept it: hex content keys, labels and JSON in each row."""
    as_rows(store)
    with closing(sqlite3.connect(store)) as conn, conn:
        labels = {i: (c, p) for i, c, p in conn.execute("SELECT * FROM labels")}
        workers = dict(conn.execute("SELECT id, name FROM workers"))
        names = {i: json.loads(n) for i, n in conn.execute("SELECT id, names FROM metrics")}
        rows = []
        for row in conn.execute("SELECT * FROM records"):
            (ckey, kind, outer, inner, cand, label, status, metrics, test, train, *rest) = row
            test_names, train_names = names[metrics]
            scores = [
                json.dumps(dict(zip(n, np.frombuffer(b, "<f8").tolist(), strict=True)))
                for n, b in ((test_names, test), (train_names, train))
            ]
            rest[8] = workers[rest[8]]  # after fit_time .. warnings
            rows.append((ckey.hex(), kind, outer, inner, cand, *labels[label], status, *scores,
                         *rest))  # fmt: skip
        units = [
            (k, c.hex(), *u)
            for k, c, *u in conn.execute(
                "SELECT key, ckey, kind, outer, inner, candidate FROM units"
            )
        ]
        models = [(c.hex(), f, d) for c, f, d in conn.execute("SELECT * FROM models")]
        for table in ("records", "units", "models", "labels", "workers", "metrics"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute(_V2_RECORDS)
        conn.execute("CREATE TABLE units (key TEXT PRIMARY KEY, ckey TEXT NOT NULL, kind TEXT "
                     "NOT NULL, outer INTEGER, inner INTEGER, candidate INTEGER NOT NULL) "
                     "WITHOUT ROWID")  # fmt: skip
        conn.execute("CREATE TABLE models (ckey TEXT PRIMARY KEY, file TEXT NOT NULL, "
                     "sha256 TEXT NOT NULL)")  # fmt: skip
        conn.executemany(f"INSERT INTO records VALUES ({', '.join('?' * 23)})", rows)
        conn.executemany("INSERT INTO units VALUES (?, ?, ?, ?, ?, ?)", units)
        conn.executemany("INSERT INTO models VALUES (?, ?, ?)", models)
        conn.execute("UPDATE meta SET value = '2' WHERE name = 'schema'")


def test_store_of_schema_2_is_read_and_refused_for_adding(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    with pytest.warns(parcv.FitFailedWarning):
        run = parcv.search(FailsOnAlpha(), {"alpha": [-1.0, 1.0, 10.0]}, X, y, cv=3,
                           backend="serial", store=store, save_models=True)  # fmt: skip
    before = parcv.load(store)
    _as_schema_2(store)
    loaded = parcv.load(store, load_models=True)
    assert loaded.to_json() == before.to_json() == run.to_json()
    assert [repr(r.to_dict()) for r in loaded.records] == [
        repr(r.to_dict()) for r in before.records
    ]  # repr: NaN scores compare equal
    assert loaded.best_estimator_.alpha == run.best_params_["alpha"]
    with pytest.raises(parcv.PlanMismatchError, match=r"store schema 2.*cannot add to it.*--out"):
        parcv.search(FailsOnAlpha(), {"alpha": [1.0]}, X, y, cv=3, backend="serial",
                     store=store, resume=True)  # fmt: skip
    assert parcv.load(store).to_json() == run.to_json()  # left unchanged
    again = parcv.search(Ridge(), {"alpha": [1.0]}, X, y, cv=3, backend="serial", store=store,
                         overwrite=True)  # fmt: skip
    assert parcv.load(store).to_json() == again.to_json()


def test_store_of_schema_3_is_read_and_refused_for_adding(reg_data, tmp_path):
    """Schema 3 keyed units by a repr that could collide: its records are never reused."""
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    run = parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial", store=store)
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("UPDATE meta SET value = '3' WHERE name = 'schema'")
        conn.execute("DELETE FROM meta WHERE name = 'seal'")  # schema 3 wrote none
    assert parcv.load(store).to_json() == run.to_json()
    with pytest.raises(parcv.PlanMismatchError, match=r"store schema 3.*one record.*--out"):
        parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial",
                     store=store, resume=True)  # fmt: skip
    assert parcv.load(store).to_json() == run.to_json()  # left unchanged
    again = parcv.search(Ridge(), {"alpha": [1.0]}, X, y, cv=3, backend="serial", store=store,
                         overwrite=True)  # fmt: skip
    assert parcv.load(store).to_json() == again.to_json()
