"""The backend protocol: run chunks of units somewhere, report as they finish."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.records import Record, Unit

__all__ = [
    "Backend",
    "Executor",
    "check_fault_options",
    "check_number",
    "check_threads",
    "pickled_for_workers",
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


def pickled_for_workers(plan: Plan) -> bytes:
    """The plan as worker processes receive it; a TypeError naming what cannot be pickled.

    Checked before anything is sent, so an estimator holding a lock, an open
    file or a connection is refused by name instead of failing every task.
    """
    import cloudpickle

    try:
        return bytes(cloudpickle.dumps(plan.for_workers()))
    except Exception as err:
        name = type(plan.estimator).__name__
        raise TypeError(
            f"the estimator {name} (or a value of its search space) cannot be sent to worker "
            f"processes: it cannot be pickled ({type(err).__name__}: {err}). Create locks, "
            "open files or connections inside fit() rather than in __init__, or run with "
            "backend='serial', which needs no pickling."
        ) from err
