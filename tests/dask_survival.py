"""Dask clusters survive their workers (issue 52): the probe's cases, one trial at a time.

A trial runs a sweep on the loopback ``LocalCluster`` parcv starts (two worker
processes with nannies), holds every core with busy loops once the cluster is up,
and disturbs it:

- ``"kill"``: both workers are SIGKILLed at once, part-way through;
- ``"segv"``: one candidate reads address 0 in every fit, killing each worker it
  touches.

The run must finish, every unit but the killer's must have a serial run's numbers,
and the killer's units must be failed with their cause. ``tests/engine/test_dask_faults.py``
runs one trial of each (with ``certain=True``); ``scripts/dask_survival.py`` runs many.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import dask
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

import parcv
from parcv.engine.backends import DaskBackend
from parcv.store.readers import read_store
from tests.sweep_script import sweep_data

CASES = ("kill", "segv")
ERROR = -1e6
CRASH = 1.0  # the alpha whose fit segfaults
KILL_SPACE = {"alpha": [0.01, 0.1, 0.3, CRASH, 3.0, 10.0]}
SEGV_SPACE = {"alpha": [CRASH, 0.3, 3.0]}


class CrashingRidge(BaseEstimator, RegressorMixin):
    """Ridge whose fit sleeps, and for ``alpha == crash`` reads address 0 (a real SIGSEGV)."""

    def __init__(self, alpha=1.0, crash=None, sleep=0.0):
        self.alpha, self.crash, self.sleep = alpha, crash, sleep

    def fit(self, X, y):
        if self.alpha == self.crash:
            import ctypes

            ctypes.string_at(0)
        time.sleep(self.sleep)
        self.model_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


class KillAfter:
    """Backend wrapper calling ``kill(executor)`` once, from the driver, after ``after`` records.

    With ``load``, busy loops hold every core from the moment the cluster is up (its
    first start is not what a trial tests) until the run ends.
    """

    def __init__(self, backend, after=None, kill=None, *, load=False):
        self.backend, self.after, self.kill, self.load = backend, after, kill, load
        self.seen, self.killed_at = 0, None

    @contextmanager
    def open(self, plan, data):
        with self.backend.open(plan, data) as self.executor, ExitStack() as stack:
            if self.load:
                stack.enter_context(cpu_load())
            yield self

    def __getattr__(self, name):  # n_workers, chunk_seconds, submit, submit_refit, cancel
        return getattr(vars(self).get("executor"), name)

    def wait(self):
        for ticket, records in self.executor.wait():
            self.seen += len(records)
            if self.after is not None and self.killed_at is None and self.seen >= self.after:
                self.killed_at = time.monotonic()
                self.kill(self.executor)
            yield ticket, records


def kill_every_worker(executor) -> None:
    """SIGKILL every worker process of the executor's cluster at once (not their nannies)."""
    for pid in executor._client.run(os.getpid).values():
        os.kill(pid, signal.SIGKILL)


@contextmanager
def cpu_load() -> Iterator[int]:
    """Keep every core this process may use busy (one busy loop each); stop them on exit."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n or 1)]
    try:
        yield len(loops)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


@contextmanager
def slow_restarts() -> Iterator[None]:
    """Make every restart slower than dask's lost-worker timeout, for certain.

    dask's ``LocalCluster`` closes a nanny for good when its restarted worker has
    not registered within ``distributed.deploy.lost-worker-timeout`` (15 s; a
    loaded machine takes longer). At 0.1 s no restart is ever in time, so a trial
    tests the cluster's policy rather than the machine's speed.
    """
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "100ms"}):
        yield


@dataclass(frozen=True)
class Outcome:
    """What one trial gave: finished, and if so whether every number is as it must be."""

    case: str
    finished: bool
    problem: str = ""  # why the run stopped, or which record is wrong; "" when all holds
    seconds: float = 0.0

    @property
    def held(self) -> bool:
        return self.finished and not self.problem


def _run(case: str, backend, store: Path, crash: float | None, sleep: float) -> None:
    X, y = sweep_data()
    estimator = CrashingRidge(crash=crash, sleep=sleep)
    if case == "kill":
        parcv.nested_cv(
            estimator, KILL_SPACE, X, y, outer=3, inner=4, backend=backend, store=store,
            error_score=ERROR, progress=False,
        )  # fmt: skip
    else:
        parcv.search(
            estimator, SEGV_SPACE, X, y, cv=4, backend=backend, store=store,
            error_score=ERROR, progress=False,
        )  # fmt: skip


def reference(case: str, folder: Path) -> dict:
    """The records of the same sweep run serially without any fault (the killer's aside)."""
    store = folder / f"serial-{case}.sqlite"
    if not store.exists():
        _run(case, "serial", store, crash=None, sleep=0.0)
    return read_store(store)[1]


def _problem(case: str, records: dict, expected: dict) -> str:
    """The first way the records differ from what they must be, or ""."""
    if set(records) != set(expected):
        return f"other keys: {sorted(set(records) ^ set(expected), key=repr)[:3]}"
    for key, record in records.items():
        killer = case == "segv" and key[0] == "fit" and key[-1] == 0  # alpha=CRASH
        if killer and "worker died: SIGSEGV" not in getattr(record.error, "message", ""):
            return f"{key}: not failed with its cause ({record.status}, {record.error})"
        if not killer and record.test_scores != expected[key].test_scores:
            return f"{key}: {record.test_scores} != {expected[key].test_scores} (serial)"
    return ""


def run_trial(case: str, folder: Path, *, certain: bool = False) -> Outcome:
    """Run one trial of ``case`` on the cluster parcv starts, every core busy once it is up.

    ``certain``: restarts slower than dask's lost-worker timeout and parcv's
    ``no_worker_timeout`` for certain (see :func:`slow_restarts`), so the trial
    fails wherever the cluster or the run gives up on a restarting worker.
    """
    expected = reference(case, folder)
    store = folder / f"dask-{case}-{time.monotonic_ns()}.sqlite"
    backend = DaskBackend(n_workers=2, no_worker_timeout=0.5 if certain else 30.0)
    if case == "kill":
        backend = KillAfter(backend, 20, kill_every_worker, load=True)
    else:
        backend = KillAfter(backend, load=True)
    start = time.monotonic()
    with ExitStack() as stack:
        if certain:
            stack.enter_context(slow_restarts())
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore", parcv.FitFailedWarning)  # the killer's, expected
        try:
            _run(case, backend, store, crash=CRASH if case == "segv" else None, sleep=0.03)
        except parcv.BackendError as err:
            return Outcome(case, False, str(err), time.monotonic() - start)
    seconds = time.monotonic() - start
    if case == "kill" and backend.killed_at is None:
        return Outcome(case, True, "the run ended before the workers were killed", seconds)
    return Outcome(case, True, _problem(case, read_store(store)[1], expected), seconds)
