"""Local pool workers forked from a server that imported their code once.

A spawned worker is a fresh interpreter: before its first unit it imports numpy, scipy,
scikit-learn and parcv's worker code, about 3.8 s of CPU each (``python -X importtime``).
Every pool started, and every worker restarted after a crash, paid it again. Here one
server process per driver imports that code once (started by the first call on the local
pool, while it builds its plan: :func:`start_server`), then forks each worker from
itself, ready to run (the server of :mod:`multiprocessing.forkserver`, an instance of
parcv's own, so that neither its modules nor its life are shared with a user's or
Dask's).

Forked as the standard library forks, a worker would differ from the loky worker it
replaces in three ways; each is kept as loky's was:

- **It never imports the driver's ``__main__``.** The standard library's forkserver
  imports the driver's script again in each worker, as ``spawn`` does; loky never did.
  A script that calls parcv without an ``if __name__ == "__main__":`` guard would run
  its whole sweep again in every worker.
- **Its environment is the driver's when the worker starts**, not the server's (the
  driver's when the server started). Only what a library reads once at import (the
  BLAS's thread count) is read from the driver's environment of that earlier moment.
- **numpy's global random generator is seeded from the system's entropy** in each
  worker, as a fresh import of numpy seeds it; forked, every worker would have drawn the
  server's numbers.
"""

from __future__ import annotations

import io
import os
from multiprocessing import context, forkserver, popen_forkserver, reduction, spawn, util
from typing import Any

__all__ = ["start_server", "worker_context"]

# What a worker imports before its first unit: the worker's code and, through it, numpy,
# scipy, pandas and scikit-learn, its estimators' packages included (a worker forked fresh
# holds 1,750 modules; a Ridge search imported none more). A user's own module is never
# preloaded: after the user edits and reloads it, the server's copy would be stale.
PRELOAD = (
    "parcv.engine.backends.local",
    "parcv.engine.work",
    "cloudpickle",
    "joblib",
    "threadpoolctl",
    "sklearn.base",
)

# Per driver process: its server, started by the first call on a local pool (start_server)
# and ended with the driver (it exits once the driver and every worker are gone).
_SERVER = forkserver.ForkServer()
_SERVER.set_forkserver_preload(list(PRELOAD))


class _Popen(popen_forkserver.Popen):
    """``popen_forkserver.Popen`` on parcv's server, without the driver's ``__main__``.

    ``_launch`` is the standard library's (the same from Python 3.8 to 3.14) with two
    changes: the preparation data name no main module, and the server is parcv's.
    """

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_name", None)
        prep_data.pop("init_main_from_path", None)
        buf = io.BytesIO()
        context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            context.set_spawning_popen(None)
        # (_fds and util.close_fds are the standard library's, unknown to its type stubs.)
        fds = self._fds  # type: ignore[attr-defined]
        self.sentinel, w = _SERVER.connect_to_new_process(fds)  # started if needed
        # The driver keeps this end open: the worker's sentinel of its parent
        # (multiprocessing.parent_process()) reads end-of-file once the driver is gone.
        _parent_w = os.dup(w)
        close = util.close_fds  # type: ignore[attr-defined]
        self.finalizer = util.Finalize(self, close, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Worker(context.ForkServerProcess):
    """A worker process forked from parcv's server, in the driver's environment."""

    def __init__(self, *args: Any, env: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._environ = {**os.environ, **(env or {})}

    @staticmethod
    def _Popen(process_obj: Any) -> _Popen:
        return _Popen(process_obj)

    def run(self) -> None:
        os.environ.clear()
        os.environ.update(self._environ)
        import numpy as np

        np.random.seed()  # noqa: NPY002 (the legacy global generator, as imported afresh)
        super().run()


class _Context(context.ForkServerContext):
    Process = _Worker


_CONTEXT = _Context()


def worker_context() -> Any:
    """The multiprocessing context the local pool starts its workers with."""
    return _CONTEXT


def start_server() -> None:
    """Start the server now (if not running), so that its imports run meanwhile.

    The first pool would start it anyway; started while the driver builds a plan, it
    has its modules imported by the time the pool forks its workers.
    """
    _SERVER.ensure_running()
