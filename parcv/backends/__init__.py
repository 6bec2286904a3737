"""Backends that run a plan's units: serial, local (joblib/loky), dask."""

from __future__ import annotations

from typing import Any

from parcv.backends.base import Backend, Executor
from parcv.backends.dask import DaskBackend
from parcv.backends.local import LocalBackend, check_n_jobs
from parcv.backends.serial import SerialBackend

__all__ = [
    "Backend",
    "DaskBackend",
    "Executor",
    "LocalBackend",
    "SerialBackend",
    "check_backend",
]

_NAMES = ("serial", "local", "dask")


def check_backend(backend: Any, n_jobs: int | None = None) -> Backend:
    """Resolve a backend name or object.

    Parameters
    ----------
    backend : {"serial", "local", "dask"} or Backend
        A name, or an object with ``open(plan, data)``. ``"dask"`` starts a
        loopback ``distributed.LocalCluster`` for the call; pass a
        :class:`DaskBackend` to use an existing cluster.
    n_jobs : int, default=None
        Worker processes of the ``local`` and ``dask`` backends (None: every
        core; -1 every core, -2 all but one).

    Returns
    -------
    Backend

    Examples
    --------
    >>> check_backend("serial")
    SerialBackend(threads=1)
    >>> check_backend("dask", 2).n_workers
    2
    """
    if isinstance(backend, str):
        if backend == "serial":
            return SerialBackend()
        if backend == "local":
            return LocalBackend(n_jobs=n_jobs)
        if backend == "dask":
            return DaskBackend(n_workers=None if n_jobs is None else check_n_jobs(n_jobs))
        raise ValueError(
            f"backend must be one of {list(_NAMES)} or a Backend object; got {backend!r}."
        )
    if isinstance(backend, Backend):
        return backend
    raise TypeError(
        f"backend must be a name {list(_NAMES)} or an object with open(plan, data); "
        f"got {backend!r}."
    )
