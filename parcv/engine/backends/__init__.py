"""Backends that run a plan's units: serial, local (joblib/loky), dask."""

from __future__ import annotations

import sys
from dataclasses import fields, is_dataclass, replace
from typing import Any

from parcv.engine.backends.base import Backend, Executor
from parcv.engine.backends.dask import DaskBackend
from parcv.engine.backends.local import LocalBackend, check_n_jobs
from parcv.engine.backends.serial import SerialBackend
from parcv.errors import did_you_mean, warn_at_caller

__all__ = [
    "Backend",
    "DaskBackend",
    "Executor",
    "LocalBackend",
    "SerialBackend",
    "check_backend",
    "with_timeout",
]

_NAMES = ("serial", "local", "dask")
_CLASS_NAMES = {SerialBackend: "serial", LocalBackend: "local", DaskBackend: "dask"}


def check_backend(backend: Any, n_jobs: int | None = None) -> Backend:
    """Resolve a backend name or object.

    Parameters
    ----------
    backend : {"serial", "local", "dask"} or Backend
        A name, a ``distributed.Client``, or an object with
        ``open(plan, data)``. ``"dask"`` runs on the current default Dask
        client if there is one, else it starts a loopback
        ``distributed.LocalCluster`` for the call; a client, or a
        :class:`DaskBackend`, uses that cluster.
    n_jobs : int, default=None
        Worker processes of the ``local`` and ``dask`` backends (None: every
        core; -1 every core, -2 all but one).

    Returns
    -------
    Backend

    Raises
    ------
    TypeError
        A backend class instead of an instance, or an object without ``open``.
    ValueError
        An unknown name, a bad ``n_jobs``, or ``n_jobs`` with a backend object.

    Examples
    --------
    >>> check_backend("serial")
    SerialBackend(threads=1)
    >>> check_backend("dask", 2).n_workers
    2
    """
    if isinstance(backend, str):
        return _by_name(backend, n_jobs)
    if _is_dask_client(backend):
        if n_jobs is not None:
            raise ValueError(
                f"n_jobs sizes a backend given by name; got n_jobs={n_jobs!r} with a Dask "
                "client, whose cluster has its own workers. Drop n_jobs."
            )
        return DaskBackend(client=backend)
    if isinstance(backend, type):
        name = _CLASS_NAMES.get(backend, "local")
        raise TypeError(
            f"backend must be a backend object or a name, not the class {backend.__name__!r}; "
            f"pass {backend.__name__}(...) (an instance), or backend={name!r}."
        )
    if not isinstance(backend, Backend):
        raise TypeError(
            f"backend must be a name {list(_NAMES)} or an object with open(plan, data); "
            f"got {backend!r}. Pass backend='local', or e.g. LocalBackend(n_jobs=4)."
        )
    if n_jobs is not None:
        raise ValueError(
            f"n_jobs sizes a backend given by name; got n_jobs={n_jobs!r} with the object "
            f"{backend!r}. Size the object itself (LocalBackend(n_jobs=...), "
            "DaskBackend(n_workers=...)), or drop n_jobs."
        )
    return backend


def _is_dask_client(backend: Any) -> bool:
    """Whether ``backend`` is a ``distributed.Client`` (without importing distributed)."""
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(backend, distributed.Client)


def _warn_if_joblib_dask() -> None:
    """Inside ``joblib.parallel_backend("dask")``, say that backend="local" does not use it."""
    if "joblib" not in sys.modules:
        return
    from joblib.parallel import get_active_backend

    active = type(get_active_backend()[0]).__name__
    if "Dask" in active:
        warn_at_caller(
            f"joblib's active backend is Dask ({active}), but backend='local' runs parcv's own "
            "process pool on this machine. Pass backend='dask' to run on the Dask client "
            "(parcv uses the current default client).",
            UserWarning,
        )


def _by_name(backend: str, n_jobs: int | None) -> Backend:
    """The backend of a name, sized by ``n_jobs``."""
    if backend == "serial":
        if n_jobs is not None:
            check_n_jobs(n_jobs)  # a bad value is refused even where one process runs
        return SerialBackend()
    if backend == "local":
        _warn_if_joblib_dask()
        return LocalBackend(n_jobs=n_jobs)
    if backend == "dask":
        return DaskBackend(n_workers=None if n_jobs is None else check_n_jobs(n_jobs))
    raise ValueError(
        f"backend must be one of {list(_NAMES)} or a Backend object; got {backend!r}. "
        f"{did_you_mean(backend, _NAMES, end=' ')}"
        "Pass one of these names, or a backend object such as DaskBackend(address=...)."
    )


def with_timeout(backend: Backend, timeout: Any) -> Backend:
    """Give a backend a per-unit time limit in seconds (``None``: keep it as is).

    The local and Dask backends (also on a batch-queue cluster) can stop a
    unit by killing the process that runs it; any other backend with a
    ``timeout`` is refused rather than run without one.

    Examples
    --------
    >>> with_timeout(LocalBackend(n_jobs=2), 30).timeout
    30
    >>> with_timeout(SerialBackend(), 30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: timeout=30 needs the local or the Dask backend, which can stop a unit by ...
    """
    if timeout is None:
        return backend
    if not (is_dataclass(backend) and "timeout" in {f.name for f in fields(backend)}):
        raise ValueError(
            f"timeout={timeout!r} needs the local or the Dask backend, which can stop a unit by "
            f"killing the process that runs it; got backend {backend!r}. Pass backend='local' "
            "or 'dask', or timeout=None."
        )
    return replace(backend, timeout=timeout)  # its __post_init__ checks the value
