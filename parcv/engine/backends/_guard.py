"""Running units in a forked child: a crash or a hang costs its unit, never the worker.

A Dask worker that dies under a chunk loses every task it held, and Dask only
names the chunk (after ``allowed-failures`` deaths). Running a chunk's units in a
child process forked from the worker, one after another, tells exactly which
unit killed its process, and why (the signal or exit code ``waitpid`` reports),
and a unit past its time limit is stopped by killing the child, not the worker.
The child shares the worker's memory (copy on write): plan and data are not sent
again. The local pool has its own way (loky reports the exit codes of its
workers); both name causes with :func:`death_message`.
"""

from __future__ import annotations

import faulthandler
import os
import select
import signal
import struct
import time
from collections.abc import Callable

from parcv.errors import BackendError
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.records import ErrorInfo, Record, Unit

__all__ = ["TIMED_OUT", "death_message", "run_guarded"]

# Exit code of a process whose unit ran past the time limit (as coreutils' timeout).
TIMED_OUT = 124
_HEADER = struct.Struct("!Q")


def death_message(how: str, timeout: float | None, tries: int) -> ErrorInfo:
    """The error of a unit whose process died: ``how`` is a signal name or an exit code.

    Examples
    --------
    >>> death_message("SIGSEGV", None, 2).message
    'worker died: SIGSEGV; it killed its worker on each of 2 tries alone'
    >>> death_message(str(TIMED_OUT), 5, 1).message
    'timed out after 5 s (the process running it was killed)'
    """
    if timeout is not None and how == str(TIMED_OUT):
        return ErrorInfo(
            "TimedOut", f"timed out after {timeout:g} s (the process running it was killed)", ""
        )
    if how == "SIGKILL":
        what = "killed: SIGKILL (out of memory, or killed by another process)"
    elif how.startswith("SIG"):
        what = f"worker died: {how}"
    else:
        what = f"worker died: exit code {how}"
    tried = f"; it killed its worker on each of {tries} tries alone" if tries > 1 else ""
    return ErrorInfo("WorkerDied", what + tried, "")


def _how(status: int) -> str:
    """A ``waitpid`` status as a signal name or an exit code."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"
    return str(os.WEXITSTATUS(status))


def _address_space_cap(memory_limit: int | None) -> int | None:
    """The address space a child forked now may reach: this process's at the fork, plus
    what its ``memory_limit`` leaves beyond the memory it holds (None: no limit).

    A Dask worker's limit is watched by its nanny, which sees the worker process only,
    never a child forked from it: the child gets the rest of the limit as ``RLIMIT_AS``.
    Address space bounds resident memory from above, so a fit is refused no later than
    the nanny would kill its worker (sooner if it reserves more than it touches).
    """
    if not memory_limit:
        return None
    import psutil  # distributed's dependency: a worker has it

    held = psutil.Process().memory_info()
    return int(held.vms + max(0, memory_limit - held.rss))


def _cap_address_space(cap: int | None) -> None:  # pragma: no cover - in the forked child
    """Lower this process's ``RLIMIT_AS`` to ``cap`` (never raise it); where the platform
    cannot, leave it."""
    if cap is None:
        return
    import resource

    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft == resource.RLIM_INFINITY or cap < soft:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (AttributeError, ValueError, OSError):  # no RLIMIT_AS here (e.g. macOS refuses it)
        pass


def _child(
    plan: Plan, data: Dataset, units: tuple[Unit, ...], write: int, read: int, cap: int | None
) -> None:  # pragma: no cover - runs in the forked process, which never returns
    """Run ``units`` and send each one's records as soon as it has them; never return."""
    import cloudpickle

    from parcv.engine.work import run_units

    code = 0
    try:
        os.close(read)
        faulthandler.disable()  # a crash is reported by the parent, not as a dump in its log
        _cap_address_space(cap)

        def send(records: list[Record]) -> None:
            blob = cloudpickle.dumps(records)
            view = memoryview(_HEADER.pack(len(blob)) + blob)
            while view:
                view = view[os.write(write, view) :]

        run_units(plan, data, units, on_unit=send)
    except BaseException:
        code = 70  # EX_SOFTWARE: run_units records fit errors; this is parcv's own failure
    finally:
        os._exit(code)


class _Reader:
    """Length-prefixed messages from a child's pipe, each awaited until a deadline."""

    def __init__(self, fd: int) -> None:
        self._fd, self._buffer = fd, b""

    def _fill(self, n: int, deadline: float | None) -> bool:
        while len(self._buffer) < n:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._fd], [], [], wait)
            if not ready:
                return False  # past the deadline
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                return False  # the child is gone
            self._buffer += chunk
        return True

    def next(self, deadline: float | None) -> bytes | None:
        """The next message, or None when the child died or the deadline passed."""
        if not self._fill(_HEADER.size, deadline):
            return None
        (size,) = _HEADER.unpack(self._buffer[: _HEADER.size])
        if not self._fill(_HEADER.size + size, deadline):
            return None
        blob = self._buffer[_HEADER.size : _HEADER.size + size]
        self._buffer = self._buffer[_HEADER.size + size :]
        return blob


def _fork_run(
    plan: Plan,
    data: Dataset,
    units: tuple[Unit, ...],
    timeout: float | None,
    memory_limit: int | None = None,
) -> tuple[list[Record], int, str | None]:
    """Run ``units`` in one child, its memory capped by ``memory_limit``: the records and
    number of units it finished, and how it died (None: it finished them all)."""
    import cloudpickle

    cap = _address_space_cap(memory_limit)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        _child(plan, data, units, write, read, cap)
    os.close(write)
    records: list[Record] = []
    how: str | None = None
    n_done = 0
    reader = _Reader(read)
    try:
        for _ in units:
            deadline = None if timeout is None else time.monotonic() + timeout
            blob = reader.next(deadline)
            if blob is None:
                if timeout is not None and time.monotonic() >= deadline:  # type: ignore[operator]
                    os.kill(pid, signal.SIGKILL)
                    how = str(TIMED_OUT)
                break
            records += cloudpickle.loads(blob)
            n_done += 1
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    if how is None and n_done < len(units):
        how = _how(status)
    return records, n_done, how


def run_guarded(
    plan: Plan,
    data: Dataset,
    units: tuple[Unit, ...],
    *,
    timeout: float | None,
    max_crashes: int,
    worker: str,
    on_lost: Callable[[Plan, Unit, ErrorInfo, str], list[Record]],
    memory_limit: int | None = None,
) -> list[Record]:
    """Run ``units`` in forked children; a unit that kills or outlives its child is recorded.

    Units run in order in one child until one does not come back; that unit
    runs alone in a new child up to ``max_crashes`` times in all (once if it
    timed out: it would only time out again) and is then recorded with its
    cause by ``on_lost``; the units after it go on in a new child. With a
    ``memory_limit`` (bytes, the worker's), a child's address space may grow
    by what the limit leaves beyond the worker's memory: past it a fit fails
    with ``MemoryError``, recorded as its cause.
    """
    if not hasattr(os, "fork"):
        raise BackendError(
            "isolating a unit that kills its worker (or enforcing timeout=) runs it in a forked "
            "process, which this platform cannot do; run the workers on Linux or macOS."
        )
    records: list[Record] = []
    rest = tuple(units)
    while rest:
        done, n_done, how = _fork_run(plan, data, rest, timeout, memory_limit)
        records += done
        rest = rest[n_done:]
        if how is None or not rest:
            break
        culprit, rest = rest[0], rest[1:]
        tries = 1
        while how != str(TIMED_OUT) and tries < max_crashes:
            alone, _, how = _fork_run(plan, data, (culprit,), timeout, memory_limit)
            if how is None:
                records += alone
                break
            tries += 1
        if how is not None:
            records += on_lost(plan, culprit, death_message(how, timeout, tries), worker)
    return records
