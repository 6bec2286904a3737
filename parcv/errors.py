"""Exception types raised by parcv."""

from __future__ import annotations

import difflib
import errno
import json
import math
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
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
    "UnsafePathError",
    "FitFailedWarning",
    "ModelNotAvailableError",
    "RESUME",
    "Setting",
    "Worded",
    "error_score_setting",
    "in_command_words",
    "warn_at_caller",
    "closest_names",
    "did_you_mean",
    "shorten",
    "shown",
    "suggest",
]


@dataclass(frozen=True, slots=True)
class Setting:
    """A setting a message advises, as each interface spells it.

    ``python`` as a keyword of a call (``error_score='raise'``), ``command`` as a
    spec or the command line sets it (``error_score = "raise" in [scoring]``,
    ``--resume``).
    """

    python: str
    command: str


#: ``resume``, which keeps what a run finished.
RESUME = Setting("resume=True", "--resume")


def error_score_setting(value: object) -> Setting:
    """The setting ``error_score = value``, in a call's and in a spec's words.

    Examples
    --------
    >>> error_score_setting("raise")
    Setting(python="error_score='raise'", command='error_score = "raise" in [scoring]')
    >>> error_score_setting(float("nan")).command
    'error_score = nan in [scoring]'
    """
    if isinstance(value, str):
        toml = json.dumps(value)  # a TOML basic string
    elif isinstance(value, float) and math.isnan(value):
        toml = "nan"
    else:
        toml = repr(value)
    return Setting(f"error_score={value!r}", f"error_score = {toml} in [scoring]")


@dataclass(frozen=True, slots=True)
class Worded:
    """A message whose settings each interface says in its own words.

    Examples
    --------
    >>> text = Worded(("Run again (", RESUME, " keeps what finished)."))
    >>> text.python()
    'Run again (resume=True keeps what finished).'
    >>> text.command()
    'Run again (--resume keeps what finished).'
    """

    parts: tuple[str | Setting, ...]

    def python(self) -> str:
        """The message as a Python user reads it."""
        return "".join(p if isinstance(p, str) else p.python for p in self.parts)

    def command(self) -> str:
        """The message as a user of a spec and the command line reads it."""
        return "".join(p if isinstance(p, str) else p.command for p in self.parts)


class _WordedMessage(Exception):
    """An exception or warning whose text may be :class:`Worded`: ``str()`` gives a Python
    user's words; :func:`in_command_words` a spec user's."""

    worded: Worded | None

    def __init__(self, message: object = "", *args: object) -> None:
        self.worded = message if isinstance(message, Worded) else None
        text = message.python() if isinstance(message, Worded) else message
        super().__init__(text, *args)


def in_command_words(message: object) -> str:
    """A message of parcv's (an exception, a warning) as a spec and command-line user reads it.

    Parameters
    ----------
    message : object
        An exception or warning; one made of a :class:`Worded` text says its
        settings as a spec and the command line set them.

    Returns
    -------
    str

    Examples
    --------
    >>> err = FitFailedError(Worded(("Set ", error_score_setting("raise"), ".")))
    >>> str(err), in_command_words(err)
    ("Set error_score='raise'.", 'Set error_score = "raise" in [scoring].')
    """
    worded = getattr(message, "worded", None)
    return worded.command() if isinstance(worded, Worded) else str(message)


class ParcvError(Exception):
    """Base class of every parcv-specific failure."""


class FitFailedError(_WordedMessage, ParcvError, ValueError, RuntimeError):
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


class UnsafePathError(ParcvError, ValueError):
    """A file parcv would write is a symbolic link that leaves the folder it belongs in.

    Raised for a file of a run directory (report, results, store, lock) that links
    outside that directory, and for a store's lock file that is a link at all: parcv
    writes no file through a link. The message names the link, where it leads and
    what to do (remove it, or write elsewhere).
    """


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; finished records are kept and the message says how to resume.

    A ``KeyboardInterrupt`` (not an ``Exception``), so generic ``except
    Exception`` handlers do not swallow the user's interrupt.
    """


class FitFailedWarning(_WordedMessage, UserWarning, _SklearnFitFailedWarning):  # type: ignore[misc]
    """Some fits failed and were handled by ``error_score`` (a candidate was excluded).

    A subclass of scikit-learn's ``FitFailedWarning`` too: code that filters or
    catches scikit-learn's warning also sees parcv's.
    """


def warn_at_caller(message: str | Warning, category: type[Warning]) -> None:
    """Warn at the first line outside parcv: the user's call, however deep parcv's stack is.

    A fixed ``stacklevel`` counts parcv's own frames between the entry point
    and the warning, and points at a parcv line once one is added or removed.

    Parameters
    ----------
    message : str or Warning
        A warning instance (e.g. of a :class:`Worded` text) gives its own category.
    category : type of Warning
    """
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _in_parcv(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


def _in_parcv(module: str) -> bool:
    return module == "parcv" or module.startswith("parcv.")


def closest_names(word: object, names: Iterable[str], *, n: int = 3) -> list[str]:
    """The names closest to ``word``, closest first: a spelling that differs only in case,
    else those ``difflib`` finds similar and about as close as the closest (at most ``n``).

    Parameters
    ----------
    word : object
        What the user wrote; a non-string is compared by its ``str``.
    names : iterable of str
        The valid names.
    n : int, default=3
        At most this many names.

    Returns
    -------
    list of str

    Examples
    --------
    >>> closest_names("acuracy", ["accuracy", "balanced_accuracy", "f1", "roc_auc"])
    ['accuracy']
    >>> closest_names("n_estimator", ["n_estimators", "n_jobs", "estimator"])
    ['n_estimators']
    >>> closest_names("C=1.5", ["C=1.0", "C=10.0", "C=0.1"])
    ['C=1.0']
    >>> closest_names("RIDGE", ["Ridge", "RidgeCV", "Lasso"])
    ['Ridge']
    >>> closest_names("xyz", ["alpha", "beta"])
    []
    """
    text = str(word)
    valid = sorted({str(name) for name in names})
    same_case = [name for name in valid if name.lower() == text.lower() and name != text]
    if same_case:
        return same_case[:n]
    by_lower: dict[str, list[str]] = {}
    for name in valid:
        by_lower.setdefault(name.lower(), []).append(name)
    found = difflib.get_close_matches(text.lower(), list(by_lower), n=n, cutoff=0.6)
    # Only the names about as close as the closest: one clear match is shown alone.
    ratios = [difflib.SequenceMatcher(None, text.lower(), low).ratio() for low in found]
    near = [low for low, r in zip(found, ratios, strict=True) if r >= ratios[0] - 0.05]
    return [name for low in near for name in by_lower[low]][:n]


def did_you_mean(word: object, names: Iterable[str], *, n: int = 3, end: str = "") -> str:
    """Say which valid names are closest to one that is not: "Did you mean 'x'?", or "".

    The one helper behind every "not a valid name" error of parcv's API, spec files and
    command line, so they all suggest names alike (:func:`closest_names` finds them).

    Parameters
    ----------
    word : object
        What the user wrote.
    names : iterable of str
        The valid names.
    n : int, default=3
        At most this many suggestions.
    end : str, default=""
        Added after the sentence (e.g. a space before the next one), not after "".

    Returns
    -------
    str
        The sentence, or "" when no name is close; callers add it after their message.

    Examples
    --------
    >>> did_you_mean("LogisticRegresion", ["LogisticRegression", "Ridge", "RidgeClassifier"])
    "Did you mean 'LogisticRegression'?"
    >>> did_you_mean("lcal", ["serial", "local", "dask"])
    "Did you mean 'local'?"
    >>> did_you_mean("zzz", ["serial", "local", "dask"])
    ''
    """
    return suggest(closest_names(word, names, n=n), end=end)


def suggest(names: Iterable[str], *, end: str = "") -> str:
    """Say "Did you mean 'x' or 'y'?" of names already found close (e.g. by :func:`closest_names`).

    Parameters
    ----------
    names : iterable of str
        The suggestions, closest first.
    end : str, default=""
        Added after the sentence, not after "".

    Returns
    -------
    str
        The sentence, or "" when ``names`` is empty.

    Examples
    --------
    >>> suggest(["sklearn.linear_model.Ridge"])
    "Did you mean 'sklearn.linear_model.Ridge'?"
    """
    listed = list(names)
    return f"Did you mean {' or '.join(repr(c) for c in listed)}?{end}" if listed else ""


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
