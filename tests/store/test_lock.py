"""One writer per store: a second driver on a store in use is refused at once."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.linear_model import Ridge

import parcv
from parcv.errors import StoreLockedError
from parcv.store.lock import lock_store
from parcv.store.readers import read_store
from tests.store.test_store import N_UNITS, _count, _reference, _start_sweep, _wait_for_records
from tests.sweep_script import sweep_data


def test_a_second_lock_is_refused_naming_the_holder(tmp_path):
    store = tmp_path / "run.sqlite"
    with lock_store(store):
        holder = json.loads((tmp_path / "run.sqlite.lock.json").read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        refused = pytest.raises(StoreLockedError, match=rf"process {os.getpid()} on host .*Wait")
        with refused, lock_store(store):
            pass
    with lock_store(store):  # released on exit: taken again
        pass
    assert not (tmp_path / "run.sqlite.lock.json").exists()


def test_a_lock_of_a_killed_process_is_taken_over(tmp_path):
    store = tmp_path / "run.sqlite"
    code = (
        "import os, pathlib, sys; from parcv.store.lock import lock_store\n"
        f"with lock_store(pathlib.Path({str(store)!r})): os._exit(9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), check=False)
    assert done.returncode == 9  # died holding the lock, leaving its holder file behind
    assert (tmp_path / "run.sqlite.lock.json").exists()
    X, y = sweep_data()
    r = parcv.search(Ridge(), {"alpha": [1.0]}, X, y, cv=3, backend="serial", store=store)
    assert r.best_params_ == {"alpha": 1.0}


@pytest.mark.slow
def test_a_second_driver_is_refused_and_the_store_stays_the_first_ones(tmp_path):
    store = tmp_path / "run.sqlite"
    first = _start_sweep(store, "serial", "--sleep", "0.02")
    _wait_for_records(store, first, at_least=5)
    X, y = sweep_data()
    with pytest.raises(StoreLockedError, match=rf"process {first.pid} on host .*Nothing was"):
        parcv.search(
            Ridge(), {"alpha": [2.0]}, X, y, cv=3, backend="serial", store=store, overwrite=True
        )
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    meta, records = read_store(store)
    assert meta["kind"] == "nested_cv" and len(records) == N_UNITS
    back = parcv.load(store)
    ref = _reference(tmp_path)
    assert back.outer_scores["score"].tolist() == ref.outer_scores["score"].tolist()
    assert json.loads(out)["outer"] == ref.outer_scores["score"].tolist()
    assert Path(str(store) + ".lock.json").exists() is False


def _wait_for_lock(store, proc):
    import time

    holder = Path(str(store) + ".lock.json")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if json.loads(holder.read_text())["pid"] == proc.pid:
                return
        except (OSError, ValueError, KeyError):
            pass
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("the driver never took the store's lock")


@pytest.mark.slow
def test_random_sigkills_never_damage_the_store_nor_change_the_result(tmp_path):
    import random
    import signal
    import sqlite3
    import time
    from contextlib import closing

    store = tmp_path / "run.sqlite"
    rng = random.Random(19)
    counts = []
    for _ in range(20):
        proc = _start_sweep(store, "serial", "--resume", "--sleep", "0.02")
        _wait_for_lock(store, proc)  # the driver holds the store: its run started
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        counts.append(_count(store) if store.exists() else 0)
    assert any(0 < n < N_UNITS for n in counts), counts  # some kills landed mid-run
    last = _start_sweep(store, "serial", "--resume", "--sleep", "0.02")
    out, err = last.communicate(timeout=300)
    assert last.returncode == 0, err
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(read_store(store)[1]) == N_UNITS
    ref = _reference(tmp_path)
    assert json.loads(out)["outer"] == ref.outer_scores["score"].tolist()
    assert parcv.load(store).outer_scores["score"].tolist() == ref.outer_scores["score"].tolist()
