"""Backends that run a plan's units: serial, local (joblib/loky), dask."""

from __future__ import annotations

from typing import Any

from parcv.backends.base import Backend, Executor
from parcv.backends.local import LocalBackend
from parcv.backends.serial import SerialBackend

__all__ = ["Backend", "Executor", "LocalBackend", "SerialBackend", "check_backend"]

_NAMES = ("serial", "local")


def check_backend(backend: Any, n_jobs: int | None = None) -> Backend:
    """Resolve a backend name or object.

    Parameters
    ----------
    backend : {"serial", "local"} or Backend
        A name, or an object with ``open(plan, data)``.
    n_jobs : int, default=None
        Workers of the ``local`` backend (None: every core).

    Returns
    -------
    Backend

    Examples
    --------
    >>> check_backend("serial")
    SerialBackend(threads=1)
    """
    if isinstance(backend, str):
        if backend == "serial":
            return SerialBackend()
        if backend == "local":
            return LocalBackend(n_jobs=n_jobs)
        raise ValueError(
            f"backend must be one of {list(_NAMES)} or a Backend object; got {backend!r}."
        )
    if isinstance(backend, Backend):
        return backend
    raise TypeError(
        f"backend must be a name {list(_NAMES)} or an object with open(plan, data); "
        f"got {backend!r}."
    )
