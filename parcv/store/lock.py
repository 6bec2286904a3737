"""One writer per store: an exclusive lock held for the life of a run.

The lock is an OS file lock (``flock`` through :mod:`filelock`) on
``<store>.lock``; the kernel releases it when its process dies, so a lock
left by a killed driver on this host is simply taken over. Who holds it
(host, pid, start time) is written beside it in ``<store>.lock.json`` so a
refused driver can say whom it waits for.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from parcv.errors import StoreLockedError

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
    # thread_local=False, is_singleton=False: a second lock object, even in this process,
    # opens its own file description and so conflicts (flock locks are per description).
    lock = FileLock(lock_path, timeout=0, thread_local=False, is_singleton=False)
    try:
        lock.acquire()
    except Timeout:
        raise StoreLockedError(_refusal(store, lock_path)) from None
    holder = _holder_path(lock_path)
    try:
        info = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}
        holder.write_text(json.dumps(info))
        yield
    finally:
        holder.unlink(missing_ok=True)
        lock.release()
