"""Checks of a store's arguments: the path of its file and its SQLite journal mode.

A run checks them before anything runs (:func:`check_store`, :func:`check_journal`),
a load before it reads (:func:`check_store_to_read`); each refusal says what to pass.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from parcv.errors import did_you_mean

__all__ = ["JOURNAL_MODES", "check_journal", "check_store", "check_store_to_read"]


# WAL is fast but needs shared memory that network file systems (NFS, Lustre) do not
# provide reliably; "delete" is SQLite's classic rollback journal, safe there.
JOURNAL_MODES = ("wal", "delete")


def check_journal(journal: Any) -> str:
    """Check a SQLite journal mode for a store: ``"wal"`` or ``"delete"``.

    Parameters
    ----------
    journal : str

    Returns
    -------
    str

    Raises
    ------
    TypeError, ValueError
        Not a string, or not one of :data:`JOURNAL_MODES`.

    Examples
    --------
    >>> check_journal("delete")
    'delete'
    >>> check_journal("WAL")
    Traceback (most recent call last):
    ...
    ValueError: journal must be one of ['wal', 'delete']; got 'WAL'. Did you mean 'wal'? Use \
journal='delete' when the store is on a network file system (NFS, Lustre), else the default 'wal'.
    """
    if not isinstance(journal, str):
        raise TypeError(
            f"journal must be a str, one of {list(JOURNAL_MODES)}; got {journal!r}. "
            "Pass e.g. journal='delete'."
        )
    if journal not in JOURNAL_MODES:
        raise ValueError(
            f"journal must be one of {list(JOURNAL_MODES)}; got {journal!r}. "
            + did_you_mean(journal, JOURNAL_MODES, end=" ")
            + "Use journal='delete' when the store is on a network file system (NFS, Lustre), "
            "else the default 'wal'."
        )
    return journal


def _as_path(store: Any) -> Path:
    """A non-empty str, bytes or os.PathLike as a Path, else TypeError/ValueError."""
    if not isinstance(store, (str, bytes, os.PathLike)):
        raise TypeError(
            f"store must be a file path (str or pathlib.Path) or None; got {store!r} of type "
            f"{type(store).__name__}. Pass e.g. store='run.sqlite'."
        )
    text = os.fsdecode(os.fspath(store))
    if not text.strip():
        raise ValueError(
            f"store must be the path of a SQLite file; got the empty path {store!r}. Pass "
            "e.g. store='run.sqlite', or store=None to keep nothing."
        )
    return Path(text)


def check_store(store: Any) -> Path | None:
    """Check that a run can create or update its store file, before anything runs.

    Parameters
    ----------
    store : str, bytes, os.PathLike or None
        The SQLite file of a run; ``None`` keeps nothing. Missing parent
        directories are created when the run starts.

    Returns
    -------
    Path or None

    Raises
    ------
    TypeError
        ``store`` is not a path.
    ValueError
        ``store`` is empty, a directory or another non-regular file, or its
        directory cannot be written (or created).

    Examples
    --------
    >>> check_store(None) is None
    True
    >>> check_store(123)
    Traceback (most recent call last):
    ...
    TypeError: store must be a file path (str or pathlib.Path) or None; got 123 of type int. \
Pass e.g. store='run.sqlite'.
    """
    if store is None:
        return None
    path = _as_path(store)
    if path.is_dir():
        raise ValueError(
            f"store={str(path)!r} is a directory; store is the SQLite file itself. Pass a "
            f"file path, e.g. store={str(path / 'run.sqlite')!r}."
        )
    if path.exists() and not path.is_file():
        raise ValueError(
            f"store={str(path)!r} exists but is not a regular file. Pass the path of a new "
            "file or of a store written by parcv."
        )
    _check_writable(path)
    return path


def _check_writable(path: Path) -> None:
    """The nearest existing directory above ``path`` must accept new files (WAL needs them)."""
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    missing = "" if existing == path.parent else f" (above the missing {str(path.parent)!r})"
    fix = "Pass a path in a directory you can write to, e.g. store='run.sqlite'."
    if not existing.is_dir():
        raise ValueError(
            f"store={str(path)!r} cannot be created: {str(existing)!r} is a file, not a "
            f"directory. {fix}"
        )
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise ValueError(
            f"store={str(path)!r} cannot be created: the directory {str(existing)!r}{missing} "
            f"is not writable ({err.strerror or err}). {fix}"
        ) from err
    if path.is_file() and not os.access(path, os.R_OK | os.W_OK):
        raise ValueError(
            f"store={str(path)!r} is not readable and writable by this user. Make it "
            "writable (chmod u+rw), or pass a new path."
        )


def check_store_to_read(store: Any) -> Path:
    """Check the path of a store to load; point a run directory to its ``store.sqlite``."""
    if store is None:
        raise TypeError(
            "store must be the path of a parcv store; got None. Pass e.g. store='run.sqlite'."
        )
    path = _as_path(store)
    if path.is_dir():
        inside = path / "store.sqlite"
        fix = f"Pass {str(inside)!r}." if inside.is_file() else "Pass the store file in it."
        raise ValueError(f"store={str(path)!r} is a directory, not a parcv store file. {fix}")
    return path
