"""The backend protocol: run chunks of units somewhere, report as they finish."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from parcv.data import Dataset
from parcv.plan import Plan
from parcv.records import Record, Unit

__all__ = ["Backend", "Executor"]


class Executor(Protocol):
    """An open backend: accepts chunks and returns their records as they finish.

    ``n_workers`` sizes how much work the driver keeps in flight: ``depth``
    chunks per worker (2 when an executor does not say); ``chunk_seconds``
    is the target duration of one chunk (larger where per-task overhead is
    larger).
    """

    n_workers: int
    chunk_seconds: float

    def submit(self, units: tuple[Unit, ...]) -> Hashable:
        """Start running a chunk; return a ticket."""
        ...

    def wait(self) -> Iterator[tuple[Hashable, list[Record]]]:
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
