"""The child process of the crash tests: a sweep that is killed while it writes its store.

Run: ``python -m tests.store.crash_child STORE LOG KILL JOURNAL``. It runs :func:`sweep` on
the local pool (the store in ``journal`` mode JOURNAL) and writes to ``LOG``, one JSON line
each, the graph keys of every batch the store is asked to add (``["adding", keys]``) and,
once ``Store.add`` has returned (committed), ``["added"]``. ``KILL`` kills the process with
SIGKILL (as a power cut would): ``before:N`` as SQLite starts the ``COMMIT`` of the N-th
batch (its chunk and rows all written, not committed), ``after:N`` once the N-th batch's
commit has returned, before the log says so; with ``-`` the parent kills the child at a
moment of its own. The hooks are this script's (SQLite's trace callback, a wrapper of
``Store.add``): parcv is left as it is.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import numpy as np
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.store import opening, writer
from parcv.store.rows import key_text

SPACE = {"alpha": np.logspace(-3, 3, 12).tolist()}


def sweep(store: Any, **options: Any) -> Any:
    """The sweep: 12 candidates x 4 folds and the final refit (49 units)."""
    X, y = make_regression(n_samples=48, n_features=4, noise=5.0, random_state=0)
    return parcv.search(Ridge(), SPACE, X, y, cv=4, store=store, progress=False, **options)


def _hook(log_path: str, kill: str) -> None:
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 (open for the whole run)
    state = {"adds": 0, "adding": False}

    def write(entry: list[Any]) -> None:
        log.write(json.dumps(entry) + "\n")
        log.flush()
        os.fsync(log.fileno())

    def on_statement(sql: str) -> None:
        at_commit = state["adding"] and sql.strip().upper() == "COMMIT"
        if at_commit and kill == f"before:{state['adds']}":
            os.kill(os.getpid(), signal.SIGKILL)

    connect = opening._connect

    def traced(path: Any, journal: str) -> Any:
        conn = connect(path, journal)
        conn.set_trace_callback(on_statement)
        return conn

    add = writer.Store.add

    def logged(self: writer.Store, records: Any, pid: int = 0) -> None:
        records = records if isinstance(records, writer.RecordBatch) else list(records)
        if not records:
            return add(self, records, pid)
        state["adds"] += 1
        write(["adding", [key_text(r.key) for r in records]])
        state["adding"] = True
        add(self, records, pid)
        state["adding"] = False
        if kill == f"after:{state['adds']}":
            os.kill(os.getpid(), signal.SIGKILL)
        write(["added"])
        return None

    opening._connect = traced  # type: ignore[assignment]
    writer.Store.add = logged  # type: ignore[method-assign]


def main() -> None:
    store, log_path, kill, journal = sys.argv[1:5]
    _hook(log_path, kill)
    sweep(store, backend="local", n_jobs=2, journal=journal)


if __name__ == "__main__":
    main()
