"""The backend protocol: run chunks of units somewhere, report as they finish."""

from __future__ import annotations

import math
import os
import sys
import types
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.records import Record, Unit

__all__ = [
    "Backend",
    "Executor",
    "Shipped",
    "WorkerImports",
    "check_fault_options",
    "check_number",
    "check_threads",
    "pickled_for_workers",
    "shipped_for_workers",
    "worker_imports",
]


class Executor(Protocol):
    """An open backend: accepts chunks and returns their records as they finish.

    It runs the units of the plan it was opened with (plan ``0``) and of the
    plans added since (:meth:`add_plan`), all on the data it was opened with.
    ``n_workers`` sizes how much work the driver keeps in flight: ``depth``
    chunks per worker; ``chunk_seconds`` is the target duration of one chunk
    (larger where per-task overhead is larger), lengthened to ``n_workers /
    chunk_rate``: ``chunk_rate`` is the most chunks a second its driver side
    should see (``math.inf``: no bound).
    """

    n_workers: int
    chunk_seconds: float
    chunk_rate: float
    depth: int

    def submit(self, units: tuple[Unit, ...], plan: int = 0) -> Hashable:
        """Start running a chunk of plan ``plan`` (0: the one opened with); return a ticket."""
        ...

    def add_plan(self, plan: Plan) -> int:
        """Ship another plan to the workers (its data is the open one's); return its id.

        A strategy's rounds and an outer fold's refit run as plans added to the open
        executor, so the data crosses to the workers once for the whole run.
        """
        ...

    def wait(self) -> Iterator[tuple[Hashable, Sequence[Record]]]:
        """Block until at least one chunk finished; yield every finished one."""
        ...

    def cancel(self) -> None:
        """Cancel everything still queued or running."""
        ...


@runtime_checkable
class Backend(Protocol):
    """Something that can open an :class:`Executor` for one plan and its data."""

    def open(self, plan: Plan, data: Dataset) -> AbstractContextManager[Executor]:
        """Ship plan and data to the workers once; close everything on exit."""
        ...


def check_number(
    name: str, value: Any, *, kind: type, allow_none: bool = True, hint: str = ""
) -> None:
    """Raise unless ``value`` is an int >= 1 (``kind=int``) or a number of seconds > 0.

    ``hint`` (how to fix it) ends the message.

    Examples
    --------
    >>> check_number("threads", 0, kind=int, hint="Pass 1 for one thread per worker.")
    Traceback (most recent call last):
    ...
    ValueError: threads must be an int >= 1 or None; got 0. Pass 1 for one thread per worker.
    """
    if value is None and allow_none:
        return
    expected = "an int >= 1" if kind is int else "a number of seconds > 0"
    expected += " or None" * allow_none
    message = f"{name} must be {expected}; got {value!r}." + (f" {hint}" if hint else "")
    if isinstance(value, bool) or not isinstance(value, (int,) if kind is int else (int, float)):
        raise TypeError(message)
    if not 0 < value < math.inf:  # also refuses nan and inf
        raise ValueError(message)


def check_threads(threads: Any) -> None:
    """Raise unless ``threads`` (the BLAS/OpenMP cap of every backend) is an int >= 1 or None."""
    check_number(
        "threads",
        threads,
        kind=int,
        hint="Pass 1 (one BLAS thread in each process that fits), or None to leave them as is.",
    )


def check_fault_options(timeout: Any, max_crashes: Any) -> None:
    """Check a backend's per-unit time limit and how often a unit may kill its process."""
    check_number(
        "timeout",
        timeout,
        kind=float,
        hint="Pass the seconds one unit may run before it is stopped, or None for no limit.",
    )
    check_number(
        "max_crashes",
        max_crashes,
        kind=int,
        allow_none=False,
        hint="Pass how often a unit may kill its worker before it is recorded as failed, e.g. 2.",
    )


@dataclass(frozen=True, slots=True)
class WorkerImports:
    """Where a worker process imports the user's own modules that a plan names.

    The driver imported them from these folders (a spec's folder, a script's, a
    ``PYTHONPATH`` entry): a worker puts them first on its import path before it
    unpickles the plan, as the driver's ``sys.path`` had them, whether the worker
    was started by parcv (a local pool, a ``LocalCluster``) or runs on another
    machine that sees the same folders (a Slurm or PBS job, a Dask scheduler).

    Examples
    --------
    >>> WorkerImports(("/home/me/sweeps",), ("mod2",), driver=1).folders
    ('/home/me/sweeps',)
    """

    folders: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()  # the top-level names of those modules, for messages
    driver: int = 0  # the driver's process id: its own import path is left as it is

    def apply(self) -> tuple[str, ...]:
        """Put the folders first on this process's import path; return those it added."""
        if os.getpid() == self.driver:
            return ()
        added = tuple(folder for folder in self.folders if folder not in sys.path)
        for folder in reversed(self.folders):
            if folder in sys.path:
                sys.path.remove(folder)
            sys.path.insert(0, folder)
        return added

    def check(self) -> None:
        """Raise FileNotFoundError, saying what to do, for a folder this machine cannot see."""
        for folder in self.folders:
            if not Path(folder).is_dir():
                raise FileNotFoundError(
                    f"the folder {folder!r}, which holds the module(s) "
                    f"{', '.join(self.modules)} of this run, does not exist where this "
                    "worker runs. Put it on a file system the workers share (the same path), "
                    "or install the module(s) on the workers."
                )


@dataclass(frozen=True, slots=True)
class Shipped:
    """A plan as worker processes receive it, and where they import the user's code it names."""

    pickled: bytes
    imports: WorkerImports


class _ModulesNamed:
    """Notes the module of every class and function a pickler writes (see ``reducer_override``)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def note(self, obj: Any) -> None:
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            module = getattr(obj, "__module__", None)
            if isinstance(module, str):
                self.names.add(module)


def _dumps(value: Any) -> tuple[bytes, set[str]]:
    """cloudpickle's bytes of ``value``, and the modules an unpickler imports to read them."""
    import io

    import cloudpickle

    seen = _ModulesNamed()

    class Recording(cloudpickle.Pickler):  # type: ignore[misc]
        def reducer_override(self, obj: Any) -> Any:
            seen.note(obj)
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    Recording(buffer, protocol=cloudpickle.DEFAULT_PROTOCOL).dump(value)
    return buffer.getvalue(), seen.names


def _import_folder(top: str) -> str | None:
    """The folder a loaded top-level module was imported from (the ``sys.path`` entry)."""
    module = sys.modules.get(top)
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        path = Path(file).absolute()
        return str(path.parent.parent if path.stem == "__init__" else path.parent)
    for entry in getattr(module, "__path__", None) or ():  # a namespace package
        return str(Path(entry).absolute().parent)
    return None


def worker_imports(modules: Iterable[str]) -> WorkerImports:
    """The folders of the user's own modules among ``modules`` (not installed, not stdlib).

    Examples
    --------
    >>> worker_imports(["sklearn.linear_model._ridge", "builtins"]).folders
    ()
    """
    from parcv.plan.code import USER, origin_of

    tops = sorted({m.partition(".")[0] for m in modules if m != "__main__"})
    own = [t for t in tops if origin_of(t).kind == USER]
    folders = dict.fromkeys(f for f in map(_import_folder, own) if f is not None)
    return WorkerImports(tuple(folders), tuple(own), driver=os.getpid())


def _unpicklable(plan: Plan, err: Exception) -> TypeError:
    name = type(plan.estimator).__name__
    return TypeError(
        f"the estimator {name} (or a value of its search space) cannot be sent to worker "
        f"processes: it cannot be pickled ({type(err).__name__}: {err}). Create locks, "
        "open files or connections inside fit() rather than in __init__, or run with "
        "backend='serial', which needs no pickling."
    )


def shipped_for_workers(plan: Plan) -> Shipped:
    """The plan as worker processes receive it, with the folders of the user's code it names.

    Raises
    ------
    TypeError
        Naming what cannot be pickled (see :func:`pickled_for_workers`).
    """
    try:
        pickled, modules = _dumps(plan.for_workers())
    except Exception as err:
        raise _unpicklable(plan, err) from err
    return Shipped(pickled, worker_imports(modules))


def pickled_for_workers(plan: Plan) -> bytes:
    """The plan as worker processes receive it; a TypeError naming what cannot be pickled.

    Checked before anything is sent, so an estimator holding a lock, an open
    file or a connection is refused by name instead of failing every task.
    The modules it names are not noted, as :func:`shipped_for_workers` notes
    them (a Python call per object pickled): a round's part plan reaches
    workers that imported the user's code with the run's first plan.
    """
    import cloudpickle

    try:
        return cloudpickle.dumps(plan.for_workers(), protocol=cloudpickle.DEFAULT_PROTOCOL)  # type: ignore[no-any-return]
    except Exception as err:
        raise _unpicklable(plan, err) from err
