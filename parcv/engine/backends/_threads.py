"""Capping BLAS/OpenMP threads inside worker processes, cheaply."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["cap_threads", "controller"]

# Per process: the cap last applied ([None] = none yet).
_APPLIED: list[Any] = [None]


@functools.lru_cache(maxsize=1)
def controller() -> Any:
    """This process's native thread pools, scanned once (a scan costs ~2.5 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def cap_threads(threads: int | None) -> None:
    """Cap this worker's BLAS/OpenMP threads at ``threads`` for the rest of its life.

    ``None`` leaves them as they are. A worker runs one run's chunks after
    another: the cap is applied again only when it changes, so the first
    chunk of a run does not pay for a scan of the loaded libraries.
    """
    if threads is None or _APPLIED[0] == threads:
        return
    controller().limit(limits=threads)
    _APPLIED[0] = threads
