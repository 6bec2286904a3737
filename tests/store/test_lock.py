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


def _wait_until(proc: subprocess.Popen, started) -> bool:
    """Wait until ``started()`` holds (True) or the driver finished its run (False)."""
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if started():
            return True
        if proc.poll() is not None:
            _, err = proc.communicate()
            assert proc.returncode == 0, err  # a driver not yet killed ends only by finishing
            return False
        time.sleep(0.02)
    raise AssertionError("the driver neither went on nor finished within 60 s")


def _holds_lock(store: Path, proc: subprocess.Popen) -> bool:
    try:
        return json.loads(Path(str(store) + ".lock.json").read_text())["pid"] == proc.pid
    except (OSError, ValueError, KeyError):
        return False


def random_kills(store: Path, kills: int, seed: int) -> list[int]:
    """SIGKILL resumed drivers of one sweep ``kills`` times; the records after each kill.

    Every other kill lands at a random moment after the driver took the store's lock
    (starting up, planning, or fitting), the others at a random moment after its first new
    record, so kills land mid-run however slow the machine is. Stops killing once the
    store is complete.
    """
    import random
    import signal
    import time

    rng = random.Random(seed)
    counts: list[int] = []
    for k in range(kills):
        before = _count(store) if store.exists() else 0
        if before == N_UNITS:
            break
        proc = _start_sweep(store, "serial", "--resume", "--sleep", "0.02")
        # Once the driver holds the store's lock, its run has started.
        went_on = _wait_until(proc, lambda p=proc: _holds_lock(store, p)) and (
            k % 2 == 0 or _wait_until(proc, lambda n=before: _count(store) > n)
        )
        if went_on:
            time.sleep(rng.uniform(0.0, 1.0))
            proc.send_signal(signal.SIGKILL)  # nothing, if it has finished meanwhile
            proc.communicate(timeout=60)
        counts.append(_count(store) if store.exists() else 0)
    return counts


def check_resumes_to_the_uninterrupted_result(store: Path, tmp_path: Path) -> None:
    """A last resume completes the store undamaged, to the numbers of a run never killed."""
    import sqlite3
    from contextlib import closing

    last = _start_sweep(store, "serial", "--resume", "--sleep", "0.02")
    out, err = last.communicate(timeout=300)
    assert last.returncode == 0, err
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(read_store(store)[1]) == N_UNITS
    ref = _reference(tmp_path)
    assert json.loads(out)["outer"] == ref.outer_scores["score"].tolist()
    assert parcv.load(store).outer_scores["score"].tolist() == ref.outer_scores["score"].tolist()


@pytest.mark.slow
def test_random_sigkills_never_damage_the_store_nor_change_the_result(tmp_path):
    # A bounded slice: scripts/random_kills.py runs the same for as many kills as asked.
    store = tmp_path / "run.sqlite"
    counts = random_kills(store, kills=6, seed=19)
    assert any(0 < n < N_UNITS for n in counts), counts  # some kills landed mid-run
    check_resumes_to_the_uninterrupted_result(store, tmp_path)
