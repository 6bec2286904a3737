"""Exception types raised by parcv."""

from __future__ import annotations

import errno
import sys
import warnings
from types import FrameType

from sklearn.exceptions import FitFailedWarning as _SklearnFitFailedWarning

__all__ = [
    "ParcvError",
    "FitFailedError",
    "PlanMismatchError",
    "BackendError",
    "StoreLockedError",
    "StoreDamagedError",
    "StoreFullError",
    "RunInterrupted",
    "UnfinishedRunError",
    "FitFailedWarning",
    "ModelNotAvailableError",
    "warn_at_caller",
    "shorten",
    "shown",
]


class ParcvError(Exception):
    """Base class of every parcv-specific failure."""


class FitFailedError(ParcvError, ValueError, RuntimeError):
    """Fits failed and parcv stopped: every fit failed, or one failed without its exception.

    A ``ValueError`` too, as scikit-learn's "All the N fits failed" error: code that
    catches scikit-learn's error catches parcv's. With ``error_score="raise"`` the
    estimator's or scorer's own exception is raised instead, when it crossed back
    from the worker; this error stands in when it could not (a worker that died, a
    timeout, an exception that does not pickle).
    """


class PlanMismatchError(ParcvError, ValueError):
    """A store belongs to a different plan than the one being run."""


class BackendError(ParcvError, RuntimeError):
    """A backend could not start or lost every worker."""


class ModelNotAvailableError(ParcvError, AttributeError):
    """A result has no fitted final model: not fitted, not saved, or not the file recorded.

    An ``AttributeError`` too, as scikit-learn's ``GridSearchCV(refit=False)`` has no
    ``best_estimator_``: ``hasattr(result, "best_estimator_")`` is False.
    """


class StoreLockedError(ParcvError, RuntimeError):
    """Another live parcv run holds the store's writer lock."""


class StoreDamagedError(ParcvError, ValueError):
    """A store file is truncated, not a SQLite file, or misses what parcv wrote into it."""


class StoreFullError(ParcvError, OSError):
    """The disk holding a store is full (or failed a write): finished records are kept.

    An ``OSError`` with ``errno`` ENOSPC, as a full disk is: free some space and run
    the same call again with ``resume=True``. The SQLite or OS error is its cause.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.ENOSPC


class UnfinishedRunError(ParcvError):
    """A store holds a run that did not finish: its estimates are not known yet."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; finished records are kept and the message says how to resume.

    A ``KeyboardInterrupt`` (not an ``Exception``), so generic ``except
    Exception`` handlers do not swallow the user's interrupt.
    """


class FitFailedWarning(UserWarning, _SklearnFitFailedWarning):  # type: ignore[misc]
    """Some fits failed and were handled by ``error_score`` (a candidate was excluded).

    A subclass of scikit-learn's ``FitFailedWarning`` too: code that filters or
    catches scikit-learn's warning also sees parcv's.
    """


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """Warn at the first line outside parcv: the user's call, however deep parcv's stack is.

    A fixed ``stacklevel`` counts parcv's own frames between the entry point
    and the warning, and points at a parcv line once one is added or removed.

    Parameters
    ----------
    message : str
    category : type of Warning
    """
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _in_parcv(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


def _in_parcv(module: str) -> bool:
    return module == "parcv" or module.startswith("parcv.")


def shorten(text: str, limit: int = 200) -> str:
    """Cut ``text`` to about ``limit`` characters for a message, saying how long it was.

    Parameters
    ----------
    text : str
    limit : int, default=200

    Returns
    -------
    str
        ``text`` itself when short enough; else its start and end around an
        ellipsis, and its length.

    Examples
    --------
    >>> shorten("x" * 1_000_000, limit=20)
    'xxxxxxxxxxxxx…xxxxxx (1,000,000 characters)'
    >>> shorten("short")
    'short'
    """
    if len(text) <= limit:
        return text
    head = max(limit * 2 // 3, 1)
    tail = text[len(text) - max(limit - head - 1, 0) :]
    return f"{text[:head]}…{tail} ({len(text):,} characters)"


def shown(value: object, limit: int = 200) -> str:
    """Return the ``repr`` of a value for a message, cut to about ``limit`` characters.

    A value too deeply nested to ``repr`` is named by its type.

    Examples
    --------
    >>> shown("sklearn." + "A" * 10_000, limit=30)
    "'sklearn.AAAAAAAAAAA…AAAAAAAA' (10,010 characters)"
    >>> nested = []
    >>> for _ in range(100_000):
    ...     nested = [nested]
    >>> shown(nested)
    '<a list too deeply nested to show>'
    """
    try:
        text = repr(value)
    except RecursionError:
        return f"<a {type(value).__name__} too deeply nested to show>"
    return shorten(text, limit)
