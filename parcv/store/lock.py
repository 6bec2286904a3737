"""One writer per store: an exclusive lock held for the life of a run.

The lock is an OS file lock (``flock`` through :mod:`filelock`) on
``<store>.lock``; the kernel releases it when its process dies, so a lock
left by a killed driver on this host is simply taken over. Who holds it
(host, pid, start time) is written beside it in ``<store>.lock.json`` so a
refused driver can say whom it waits for.

Neither file is opened through a symbolic link. A lock file that is a link is
refused: an ``lstat`` check says so clearly, and filelock (>= 3.20.1, the fix of
CVE-2025-68146) opens the lock file with ``O_NOFOLLOW``, so a link put there after
the check fails to open (ELOOP) instead of truncating its target. parcv cannot pass
flags to filelock's own ``open``, hence the check before it. The holder file is
written to a new file renamed over it, which replaces a link instead of writing
through it.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from parcv.errors import StoreLockedError, UnsafePathError

__all__ = ["lock_store"]


def _holder_path(lock: Path) -> Path:
    return lock.with_name(lock.name + ".json")


def _read_holder(lock: Path) -> dict[str, Any]:
    try:
        found = json.loads(_holder_path(lock).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _refusal(store: Path, lock: Path) -> str:
    holder = _read_holder(lock)
    host, pid = holder.get("host", "?"), holder.get("pid", "?")
    started = holder.get("started")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
        if isinstance(started, (int, float))
        else "an unknown time"
    )
    who = f"process {pid} on host {host!r}, started {when}"
    if host == socket.gethostname() and not _pid_alive(pid):
        advice = (
            f"That process is no longer running here, yet the lock is held: the file system "
            f"may not release locks of dead processes. If no parcv run uses this store, "
            f"delete {str(lock)!r} and run again."
        )
    elif host == socket.gethostname():
        advice = (
            "Wait for that run to finish (or stop it), then run again with resume=True "
            "(--resume); or pass another store path (--out) to run in parallel."
        )
    else:
        advice = (
            f"Wait for that run to finish, or pass another store path (--out). If that process "
            f"is gone (its node crashed on a shared file system), delete {str(lock)!r} and run "
            "again."
        )
    return (
        f"store {str(store)!r} is in use by another parcv run: {who}. Nothing was changed. {advice}"
    )


def _linked(store: Path, lock: Path) -> UnsafePathError:
    return UnsafePathError(
        f"the lock file {str(lock)!r} of store {str(store)!r} is a symbolic link (to "
        f"{os.readlink(lock)!r}); parcv takes a store's lock only on a file of its own, never "
        "through a link, which would write to the file it leads to. Nothing was changed. "
        "Remove the link and run again."
    )


def _write_holder(lock: Path, info: dict[str, Any]) -> None:
    """Write who holds the lock into a new file renamed over the holder file."""
    fd, temp = tempfile.mkstemp(prefix=f".{lock.name}.", suffix=".tmp", dir=lock.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(info))
        os.replace(temp, _holder_path(lock))
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@contextmanager
def lock_store(store: Path) -> Iterator[None]:
    """Hold the exclusive writer lock of ``store`` for the ``with`` block.

    Parameters
    ----------
    store : Path
        The SQLite file of the run; ``<store>.lock`` and
        ``<store>.lock.json`` (who holds it) are created beside it.

    Raises
    ------
    StoreLockedError
        Another live process holds the lock; the message names it (host,
        pid, start time) and says what to do.
    UnsafePathError
        ``<store>.lock`` is a symbolic link.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.sqlite"
    >>> with lock_store(path):
    ...     with lock_store(path):
    ...         pass  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    parcv.errors.StoreLockedError: store '...run.sqlite' is in use by another parcv run: ...
    """
    from filelock import FileLock, Timeout

    store.parent.mkdir(parents=True, exist_ok=True)
    lock_path = store.with_name(store.name + ".lock")
    if lock_path.is_symlink():
        raise _linked(store, lock_path)
    # thread_local=False, is_singleton=False: a second lock object, even in this process,
    # opens its own file description and so conflicts (flock locks are per description).
    lock = FileLock(lock_path, timeout=0, thread_local=False, is_singleton=False)
    try:
        lock.acquire()
    except Timeout:
        raise StoreLockedError(_refusal(store, lock_path)) from None
    except OSError as err:
        if err.errno == errno.ELOOP and lock_path.is_symlink():  # linked after the check
            raise _linked(store, lock_path) from err
        raise
    try:
        info = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}
        _write_holder(lock_path, info)
        yield
    finally:
        _holder_path(lock_path).unlink(missing_ok=True)
        lock.release()
