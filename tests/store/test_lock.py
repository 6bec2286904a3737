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
from parcv.store.sqlite import read_store
from tests.store.test_store import N_UNITS, _reference, _start_sweep, _wait_for_records
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
