"""A progress bar over units: done / failed / total, rate and ETA (tqdm)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from parcv.plan.records import Record

__all__ = ["Progress", "check_progress"]


def check_progress(progress: Any) -> bool:
    """Resolve ``progress``: None shows a bar only when stderr is a terminal.

    Parameters
    ----------
    progress : bool or None

    Returns
    -------
    bool

    Raises
    ------
    ImportError
        ``progress=True`` without tqdm installed (no silent fallback).
    """
    if progress is None:
        if not sys.stderr.isatty():
            return False
        try:
            import tqdm
        except ImportError:
            return False
        return True
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True, False or None; got {progress!r}.")
    if progress:
        try:
            import tqdm  # noqa: F401
        except ImportError as err:
            raise ImportError(
                "progress=True needs tqdm: pip install 'parcv[progress]' (or progress=False)."
            ) from err
    return progress


class Progress:
    """Advance a tqdm bar by batches of records; a no-op when disabled.

    Parameters
    ----------
    total : int
        Units the run will compute.
    enabled : bool
    initial : int, default=0
        Units already done (resumed from a store).
    """

    def __init__(self, total: int, enabled: bool, initial: int = 0) -> None:
        self.failed = 0
        self._bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=total,
                initial=initial,
                unit="fit",
                desc="parcv",
                dynamic_ncols=True,
                file=sys.stderr,
            )

    def update(self, batch: Sequence[Record]) -> None:
        """Count a finished batch."""
        self.failed += sum(not r.ok for r in batch)
        if self._bar is not None:
            if self.failed:
                self._bar.set_postfix(failed=self.failed, refresh=False)
            self._bar.update(len(batch))

    def close(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()
