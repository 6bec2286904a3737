"""The serial backend: in-process reference and test double."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from parcv.engine.backends._threads import controller
from parcv.engine.backends.base import check_threads
from parcv.engine.work import run_units
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.records import Record, Unit

__all__ = ["SerialBackend"]


class _SerialExecutor:
    n_workers = 1
    chunk_seconds = 0.0
    chunk_rate = math.inf
    depth = 2

    def __init__(self, plan: Plan, data: Dataset) -> None:
        self._plans, self._data = [plan], data
        self._queue: deque[tuple[int, int, tuple[Unit, ...]]] = deque()
        self._count = 0

    def add_plan(self, plan: Plan) -> int:
        """Take another plan's units from now on; return its id."""
        self._plans.append(plan)
        return len(self._plans) - 1

    def submit(self, units: tuple[Unit, ...], plan: int = 0) -> Hashable:
        self._count += 1
        self._queue.append((self._count, plan, units))
        return self._count

    def wait(self) -> Iterator[tuple[Hashable, Sequence[Record]]]:
        ticket, plan, units = self._queue.popleft()
        yield ticket, run_units(self._plans[plan], self._data, units)

    def cancel(self) -> None:
        self._queue.clear()


@dataclass(frozen=True, slots=True)
class SerialBackend:
    """Run every unit in this process, in submission order.

    Parameters
    ----------
    threads : int or None, default=1
        Cap on BLAS/OpenMP threads during fits (``None``: leave as is).

    Examples
    --------
    >>> SerialBackend().threads
    1
    """

    threads: int | None = 1

    def __post_init__(self) -> None:
        check_threads(self.threads)

    @contextmanager
    def open(self, plan: Plan, data: Dataset) -> Iterator[_SerialExecutor]:
        """Open an in-process executor, BLAS/OpenMP threads capped while it is open."""
        if self.threads is None:
            yield _SerialExecutor(plan, data)
            return
        with controller().limit(limits=self.threads):
            yield _SerialExecutor(plan, data)
