"""A kill -9 of a run writing chunks loses at most the batch not yet committed.

The child (``crash_child.py``) runs a sweep on the local pool, whose workers send their
records as blocks that the store keeps as chunks (one row each), and logs every batch it
adds. It is killed as SQLite starts a batch's ``COMMIT``, just after a commit returned,
or at a moment the test draws, in WAL or rollback-journal mode. The store must then read
as exactly the batches committed (all of a batch or none of it), and a resume must finish
with the numbers of a run that never stopped, computing only what was lost.
"""

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

from parcv.store.readers import read_counts, read_records
from parcv.store.rows import key_text
from tests.store.crash_child import sweep

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fresh():
    return sweep(None, backend="serial")


def _start(store: Path, log: Path, kill: str, journal: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "tests.store.crash_child", str(store), str(log), kill,
               journal]  # fmt: skip
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip


def _batches(log: Path) -> tuple[set[str], set[str]]:
    """The graph keys of the batches the child committed, and of the one it was adding."""
    committed: set[str] = set()
    adding: set[str] = set()
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry[0] == "adding":
            adding = set(entry[1])
        else:
            committed |= adding
            adding = set()
    return committed, adding


def _kill_at_random(proc: subprocess.Popen, log: Path, rng: np.random.Generator) -> None:
    """SIGKILL the child after its first batches, at a drawn moment (if it has not ended)."""
    deadline = time.monotonic() + 120
    while not (log.exists() and log.read_text().count("added") >= 2):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the child stored no batch in time"
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 0.05))
    proc.send_signal(signal.SIGKILL)


def _same(result, fresh):
    for name in ("mean_test_score", "split0_test_score", "split3_test_score", "rank_test_score"):
        np.testing.assert_array_equal(result.cv_results_[name], fresh.cv_results_[name])
    assert result.best_params_ == fresh.best_params_


@pytest.mark.parametrize(
    ("kill", "journal"),
    [("before:1", "wal"), ("before:3", "wal"), ("after:2", "wal"), ("before:2", "delete"),
     ("random:0", "wal"), ("random:1", "delete")],
)  # fmt: skip
def test_a_kill_loses_at_most_the_batch_being_committed(tmp_path, fresh, kill, journal):
    store, log = tmp_path / "run.sqlite", tmp_path / "batches.jsonl"
    proc = _start(store, log, "-" if kill.startswith("random") else kill, journal)
    children = psutil.Process(proc.pid).children(recursive=True)
    if kill.startswith("random"):
        _kill_at_random(proc, log, np.random.default_rng(int(kill.split(":")[1])))
    proc.wait(timeout=120)
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    psutil.wait_procs(children, timeout=30)  # the pool's workers exit by themselves
    assert proc.returncode in (-signal.SIGKILL, 0), stderr
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    committed, adding = _batches(log)
    stored = {key_text(k) for k in read_records(store)}
    if kill.startswith("before"):
        assert adding and stored == committed  # the batch in its COMMIT: none of it
    elif kill.startswith("after"):
        assert adding and stored == committed | adding  # committed, though not yet logged
    else:
        assert stored in (committed, committed | adding)
    assert read_counts(store)[0] == len(stored)
    before = {k: r.finished for k, r in read_records(store).items()}
    resumed = sweep(store, backend="serial", resume=True, journal=journal)
    _same(resumed, fresh)
    after = read_records(store)
    assert len(after) == len(fresh.records)
    # What was stored is reused as it was (the final refit is redone: no model is kept).
    assert {k for k in before if k[0] == "fit"} == {
        k for k, t in before.items() if k[0] == "fit" and after[k].finished == t
    }
