"""The driver: feed units to an executor in dependency order, collect records."""

from __future__ import annotations

import gc
import math
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from parcv.criteria.tasks import CriteriaUndefinedError
from parcv.engine.backends.base import Backend, Executor
from parcv.engine.speculate import Speculation
from parcv.errors import RESUME, BackendError, FitFailedError, Worded, error_score_setting
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.kinds import KINDS, Key, kind_of, refit_kind
from parcv.plan.record_batch import RecordBatch
from parcv.plan.record_table import RecordTable
from parcv.plan.records import Record, Unit
from parcv.plan.units import UnitGrid, as_units
from parcv.results.aggregate import failure_details, raised_error, select_for
from parcv.stats.racing import Racing, race_step

if TYPE_CHECKING:
    from parcv.plan.code import Environment

__all__ = ["Driver", "distribution_versions", "estimate_chunks", "run_plan", "start_schedule"]


def _independent(unit: Unit) -> bool:
    """Whether a unit depends on nothing: those go out in chunks, before any refit that waits."""
    return not KINDS[unit.kind].after_fits


def _selects(unit: Unit) -> bool:
    """Whether a unit's records are inner-CV scores that select a candidate (fits)."""
    return KINDS[unit.kind].selects


_NOT_SELECTING = object()


def _selecting_outers(records: Sequence[Record]) -> list[Any]:
    """Per record, in order: the outer fold of a record that selects, else ``_NOT_SELECTING``."""
    if not isinstance(records, RecordBatch):
        return [r.unit.outer if _selects(r.unit) else _NOT_SELECTING for r in records]
    out: list[Any] = []
    for block in records.blocks:  # one kind each: its outer folds from the column
        if KINDS[block.kind].selects:
            out += block.outers()
        else:
            out += [_NOT_SELECTING] * len(block)
    return out + _selecting_outers(list(records.others))


# A fold's refit is chained once at most this many chunks with its fits are still out:
# each is a dependency whose result the refit's worker fetches, often from another worker.
_CHAIN_AFTER = 2

# A fold with more fits than this is not chained: its refit is selected and sent by the
# driver once the fits are back, a round trip later. The chained task carries the fold's
# fit records in Dask's graph (about 88 bytes each: a search of 220,000 candidates x 5
# folds sent a 92 MiB graph, the driver's peak at 1.1M units), and the scheduler
# unpickles and pickles every task it runs.
_CHAIN_MOST_FITS = 10_000

# The most units one chunk holds, however short its fits. The driver keeps each unit in
# flight as an object (about 100 bytes) and takes a chunk's records back in one message,
# and the sizing counts fit and score times only: with fits of microseconds a unit costs
# its worker far more than that (unpacking, its key, its record; 100 us of a worker's CPU
# for a null fit), so chunks grew to 93,000 units, seconds of a worker each, with most of
# a 1.1M-unit Dask run's units in flight at once.
_CHUNK_MOST_UNITS = 2048


# Records timed before chunks are sized: the first few estimate a unit's cost well enough,
# and the factoring cap bounds what a wrong guess costs. Waiting for one record per worker
# left W3's 16 Dask workers short of work for a round trip (efficiency 0.51 -> 0.54).
_CALIBRATION = 4


@dataclass
class _ChunkSizer:
    """Chunk sizes: single units until a few are timed, then about ``target`` seconds.

    Until a few records (one per worker, at most ``_CALIBRATION``) have come
    back, single units are sent, at most two in flight per worker, so the
    sizes are not guessed and no worker waits for them. After that a chunk lasts
    about ``target`` seconds, or longer where the workers would otherwise send
    back more than ``rate`` chunks a second (``n_workers / rate`` seconds), but
    never holds more than 1/(2 x workers) of the units still to send
    (factoring) nor more than ``_CHUNK_MOST_UNITS``: tiny units go out in few
    tasks, and chunks shrink towards the end so the last wave stays balanced.

    ``rate`` bounds what the one driver (and a Dask scheduler) spends per chunk
    as workers are added: each chunk costs them a round trip, a commit and a
    task's bookkeeping whatever its size, so 16 workers on 50 ms chunks would
    send them 320 a second.
    """

    target: float
    n_workers: int
    rate: float = math.inf
    total_time: float = 0.0
    n_seen: int = 0

    @property
    def seconds(self) -> float:
        """How long a chunk should last: ``target``, longer for many workers."""
        return max(self.target, self.n_workers / self.rate)

    @property
    def calibrated(self) -> bool:
        """Whether enough records have been timed to size chunks."""
        return self.n_seen >= min(self.n_workers, _CALIBRATION)

    def observe(self, records: Sequence[Record]) -> None:
        if isinstance(records, RecordBatch):
            self.total_time += records.seconds()
        else:
            self.total_time += sum(r.fit_time + r.score_time for r in records)
        self.n_seen += len(records)

    def room(self, executor: Executor, n_in_flight: int) -> int:
        """How many more chunks to send now."""
        if not self.calibrated:
            return 2 * self.n_workers - n_in_flight
        return executor.depth * self.n_workers - n_in_flight

    def size(self, n_pending: int) -> int:
        if not self.calibrated or self.target <= 0:
            return 1
        per_unit = max(self.total_time / self.n_seen, 1e-6)
        wanted = math.ceil(self.seconds / per_unit)
        factored = math.ceil(n_pending / (2 * self.n_workers))
        return max(1, min(wanted, factored, _CHUNK_MOST_UNITS))


def estimate_chunks(
    n_units: int,
    n_workers: int,
    target: float,
    per_unit: float | None,
    rate: float = math.inf,
) -> int:
    """How many chunks the driver sends for ``n_units`` fits of ``per_unit`` seconds each.

    It runs the driver's own sizing: the single units sent while calibrating,
    then :meth:`_ChunkSizer.size`. ``per_unit=None`` gives the fewest chunks
    (fits too short to matter: only the factoring cap bounds a chunk).

    Examples
    --------
    >>> estimate_chunks(100, 2, 0.05, None) < 100
    True
    >>> estimate_chunks(100, 2, 0.0, 1.0)  # no target (serial): one unit per chunk
    100
    """
    sizer = _ChunkSizer(target, n_workers, rate)
    sizer.n_seen = min(n_workers, _CALIBRATION)
    sizer.total_time = (per_unit or 0.0) * sizer.n_seen
    # Two per worker, then one more for each record back before the last one calibrating.
    chunks = min(n_units, 2 * n_workers + sizer.n_seen - 1)
    pending = n_units - chunks
    while pending > 0:
        pending -= sizer.size(pending)
        chunks += 1
    return chunks


class _Pending:
    """Units still to send: a few in front (refits, units a race held back), then the plan's.

    The plan's units are drawn from a cursor as chunks need them, so a plan of
    ten million units costs no object per unit before its first chunk leaves.
    ``todo`` (which units are not done yet; None: all) and the race rules that
    dropped candidates (:meth:`drop`) are applied as units are drawn; ``len``
    counts the units not drawn yet that are to do (an upper bound once a race
    drops some).
    """

    def __init__(self, units: Sequence[Unit], todo: NDArray[np.bool_] | None) -> None:
        self.front: deque[Unit] = deque()
        self._units, self._todo = units, todo
        self._rest = iter(units)
        self._next = 0  # the position of the next unit of ``units`` to draw
        self._n_rest = len(units) if todo is None else int(todo.sum())
        self._dropped: list[Callable[[Unit], bool]] = []
        self._last: dict[int | None, int] | None = None

    def _draw(self) -> bool:
        """Move the next unit still to send from the plan's to the front; whether any was left."""
        todo, dropped = self._todo, self._dropped
        for unit in self._rest:
            self._next += 1
            if todo is not None and not todo[self._next - 1]:
                continue
            self._n_rest -= 1
            if not any(rule(unit) for rule in dropped):
                self.front.append(unit)
                return True
        return False

    def __bool__(self) -> bool:
        return bool(self.front) or self._draw()

    def __len__(self) -> int:
        return len(self.front) + self._n_rest

    def first(self) -> Unit:
        if not self.front:
            self._draw()
        return self.front[0]

    def take(self, size: int, accept: Callable[[Unit], bool]) -> list[Unit]:
        """Pop up to ``size`` units to send, in order, stopping before one ``accept`` refuses.

        As ``popleft`` while ``first`` is accepted, in one pass over the plan's cursor.
        """
        out: list[Unit] = []
        front = self.front
        while front and len(out) < size:
            if not accept(front[0]):
                return out
            out.append(front.popleft())
        todo, dropped = self._todo, self._dropped
        for unit in self._rest if len(out) < size else ():
            self._next += 1
            if todo is not None and not todo[self._next - 1]:
                continue
            self._n_rest -= 1
            if dropped and any(rule(unit) for rule in dropped):
                continue
            if not accept(unit):
                front.append(unit)
                break
            out.append(unit)
            if len(out) >= size:
                break
        return out

    def popleft(self) -> Unit:
        if not self.front:
            self._draw()
        return self.front.popleft()

    def appendleft(self, unit: Unit) -> None:
        self.front.appendleft(unit)

    def put_back(self, units: Iterable[Unit]) -> None:
        """Put units taken out (held back by a race) in front again, in their order."""
        self.front.extendleft(reversed(list(units)))

    def drop(self, rule: Callable[[Unit], bool]) -> None:
        """Send no unit that ``rule`` rules out (a race dropped its candidates)."""
        self.front = deque(u for u in self.front if not rule(u))
        self._dropped.append(rule)

    def unsent_outers(self) -> set[int | None]:
        """Outer folds with a fit still to send (the plan's units after the cursor count)."""
        out = {u.outer for u in self.front if _selects(u)}
        if self._last is None:
            self._last = _last_fits(self._units)
        out.update(o for o, at in self._last.items() if at >= self._next)
        return out


def _last_fits(units: Sequence[Unit]) -> dict[int | None, int]:
    """Where each outer fold's last fit is in a plan's units (a grid's: from its shape)."""
    last: dict[int | None, int] = {}
    start = 0
    for block in as_units(units).blocks:
        if isinstance(block, UnitGrid):
            if KINDS[block.kind].selects:
                end = start
                for outer, n_inner in block.folds:
                    end += n_inner * len(block.order)
                    if n_inner:
                        last[outer] = end - 1
        else:
            for at, unit in enumerate(block, start):
                if _selects(unit):
                    last[unit.outer] = at
        start += len(block)
    return last


@dataclass
class _Schedule:
    plan: Plan
    # Every record of the plan, old and new, as columns: a million records in tens of MB.
    records: RecordTable
    pending: _Pending = field(init=False)
    waiting: dict[int | None, int] = field(default_factory=dict)
    # Records that are final without running anything more (a speculative refit that won).
    ready: list[Record] = field(default_factory=list)
    speculation: Speculation = field(default_factory=Speculation)
    chain_tried: set[int | None] = field(default_factory=set)
    races: dict[int | None, _Race] = field(default_factory=dict)
    # A stored refit of (outer fold, chosen candidate), looked up when the choice is known.
    reuse: Callable[[Unit], Record | None] | None = None
    # Units equal in content to an earlier unit of the plan: run once, recorded under both.
    twins: Mapping[Key, tuple[Unit, ...]] = field(default_factory=dict)

    def _todo(self, copies: set[Key]) -> NDArray[np.bool_]:
        """Which of the plan's units are still to run (a resume's records hold the others).

        A unit is done when all its records are (a fast-CV unit makes one per
        candidate), or when it is an earlier unit's twin. A grid of units is
        read from a table's index at once (:meth:`RecordTable.held`).
        """
        records, unit_keys, units = self.records, self.plan.unit_keys, self.plan.units

        def done(block: Sequence[Unit] | UnitGrid) -> NDArray[np.bool_]:
            return np.fromiter(
                (u.key in copies or all(k in records for k in unit_keys(u)) for u in block),
                dtype=bool, count=len(block),
            )  # fmt: skip

        if copies or not isinstance(records, RecordTable):
            return ~done(units)
        parts = [~(records.held(b) if isinstance(b, UnitGrid) else done(b))
                 for b in as_units(units).blocks]  # fmt: skip
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def __post_init__(self) -> None:
        copies = {u.key for units in self.twins.values() for u in units}
        units, todo = self.plan.units, None
        if copies or self.records:
            todo = self._todo(copies)
        self.pending = _Pending(units, todo)
        refits: list[int | None] = ([None] if self.plan.final else []) + list(
            self.plan.refit_outers
        )
        fit_keys = self.plan.fit_record_keys_by_outer() if refits else {}
        for outer in refits:
            key = Unit(refit_kind(outer), outer, None, 0).key
            if key not in self.records:
                keys = fit_keys.get(outer, ())
                records = self.records
                self.waiting[outer] = (
                    sum(1 for k in keys if k not in records) if records else len(keys)
                )
        if self.plan.racing is not None:
            racing = self.plan.racing
            self.races = {o: _Race.start(self.plan, o, racing) for o in self.plan.inner_folds}
            for outer in self.races:
                self._advance_race(outer)
        for outer in [o for o, n in self.waiting.items() if n == 0]:
            self._release(outer)

    def _advance_race(self, outer: int | None) -> None:
        """Take every decision of ``outer``'s race its records allow; drop what it rules out."""
        race = self.races[outer]
        dropped = race.advance(self.plan, self.records)
        if dropped:
            self.pending.drop(lambda u: race.rules_out(u, self.plan))
        if outer in self.waiting:
            self.waiting[outer] = race.n_missing(self.plan, self.records)

    def _release(self, outer: int | None) -> None:
        del self.waiting[outer]
        chosen = select_for(self.plan, self.records, outer)
        kind = refit_kind(outer)
        stored = None if self.reuse is None else self.reuse(Unit(kind, outer, None, chosen))
        if stored is not None:
            self.ready.append(stored)
            return
        found = self.speculation.use(outer, chosen)
        if isinstance(found, Record):
            self.ready.append(found)
        elif Speculation.is_missing(found):
            self.pending.appendleft(Unit(kind, outer, None, chosen))

    def speculated(self, record: Record) -> None:
        """A speculative refit finished: keep it, use it, or drop it."""
        won = self.speculation.finished(record, record.unit.outer in self.waiting)
        if won is not None:
            self.ready.append(won)

    def speculate(self, n: int) -> list[Unit]:
        """Refits to try on ``n`` idle workers, for the outer folds whose fits all started."""
        chained = self.speculation.chained
        return self.speculation.pick(
            self.plan, self.records, self._all_sent(o for o in self.waiting if o not in chained), n
        )

    def chainable(self) -> list[int | None]:
        """Waiting outer folds whose fits were all sent and whose refit is not chained yet."""
        return self._all_sent([o for o in self.waiting if o not in self.chain_tried])

    def _all_sent(self, outers: Iterable[int | None]) -> list[int | None]:
        """Those of ``outers`` with no fit left to send (scans the queue only if needed)."""
        outers = list(outers)
        if not outers:
            return []
        unsent = self.pending.unsent_outers()
        return [o for o in outers if o not in unsent]

    def chain(self, outer: int | None) -> Sequence[Record] | None:
        """Mark the refit of ``outer`` chained; return the fold's fit records known so far.

        As a batch read from the table's columns: the task that selects carries
        them, and the Dask scheduler unpickles and pickles every task it runs.
        None, and not chained, where the fold has more than ``_CHAIN_MOST_FITS`` fits.
        """
        self.chain_tried.add(outer)
        keys = self.plan.fit_record_keys(outer)
        if len(keys) > _CHAIN_MOST_FITS:
            return None
        self.speculation.chained.add(outer)
        return self.records.batch(keys)

    def chain_finished(self, outer: int | None, records: Sequence[Record]) -> None:
        """A chained refit came back (no record: it failed): use it, or run the refit."""
        out = self.speculation.chain_finished(outer, records, outer in self.waiting)
        if isinstance(out, Record):
            self.ready.append(out)
        elif isinstance(out, Unit):
            self.pending.appendleft(out)

    @property
    def needed(self) -> bool:
        """Whether a speculative refit still running is the selected one of its fold."""
        return bool(self.speculation.awaited)

    def done(self, records: Sequence[Record]) -> None:
        """Keep a batch of records; take the decisions and refits they complete."""
        # A rerun fast batch may return records that are already stored: count each key once.
        new = self.records.add(records).tolist()
        for outer, is_new in zip(_selecting_outers(records), new, strict=True):
            if not is_new or outer is _NOT_SELECTING:
                continue
            if outer in self.races:
                self._advance_race(outer)
            elif outer in self.waiting:
                self.waiting[outer] -= 1
            if self.waiting.get(outer, -1) == 0:
                self._release(outer)

    def with_twins(self, records: Sequence[Record]) -> Sequence[Record]:
        """The records plus a copy under each twin unit of theirs."""
        if not self.twins:
            return records
        copies = [replace(r, unit=u) for r in records for u in self.twins.get(r.key, ())
                  if u.key not in self.records]  # fmt: skip
        return [*records, *copies] if copies else records

    def next_chunk(self, size: int) -> tuple[Unit, ...]:
        pending = self.pending
        if not _independent(pending.first()):
            return (pending.popleft(),)
        if self.races:
            return self._raced_chunk(size)
        chunk = pending.take(size, _independent)
        # Units that share a fitted Pipeline prefix go together: split, it is fitted twice.
        group = self.plan.share_group(chunk[-1]) if chunk else None
        while group is not None and pending and self.plan.share_group(pending.first()) == group:
            chunk.append(pending.popleft())
        return tuple(chunk)

    def _held(self, unit: Unit) -> bool:
        """A fit more than one fold past its race's next decision waits for that decision."""
        race = self.races.get(unit.outer) if _selects(unit) else None
        return race is not None and race.fold <= race.last_fold and unit.inner > race.fold + 1  # type: ignore[operator]

    def _raced_chunk(self, size: int) -> tuple[Unit, ...]:
        """The next ``size`` units that no race holds back (empty: wait for a decision).

        Running a fold ahead keeps the workers busy while a decision waits for
        its last scores; running further ahead would mostly fit candidates the
        decision is about to drop.
        """
        pending = self.pending
        chunk: list[Unit] = []
        kept: list[Unit] = []
        while pending and len(chunk) < size:
            unit = pending.popleft()
            if not _independent(unit) or self._held(unit):
                kept.append(unit)
            else:
                chunk.append(unit)
        group = self.plan.share_group(chunk[-1]) if chunk else None
        while group is not None and pending and self.plan.share_group(pending.first()) == group:
            chunk.append(pending.popleft())
        pending.put_back(kept)
        return tuple(chunk)


@dataclass
class _Race:
    """The race of one outer fold's inner CV, decided fold by fold as records come.

    After fold ``k`` of every surviving candidate is in (``burn_in - 1 <= k <=
    n_folds - 2``), :func:`~parcv.stats.racing.race_step` drops the candidates
    the test finds worse than the best. A decision reads only folds ``0..k``
    of the survivors, so it is the one :func:`~parcv.results.aggregate.race_of`
    replays from the records, whatever order they arrived in.
    """

    outer: int | None
    alive: NDArray[np.bool_]
    fold: int
    last_fold: int
    sizes: tuple[float, float]

    racing: Racing

    @classmethod
    def start(cls, plan: Plan, outer: int | None, racing: Racing) -> _Race:
        folds = plan.inner_folds[outer]
        sizes = (float(np.mean([f.train.size for f in folds])),
                 float(np.mean([f.test.size for f in folds])))  # fmt: skip
        alive = np.ones(len(plan.candidates), dtype=bool)
        return cls(outer, alive, racing.burn_in - 1, len(folds) - 2, sizes, racing)

    def __post_init__(self) -> None:
        self.dropped_after: dict[int, int] = {}

    def _ready(self, plan: Plan, records: Mapping[Key, Record]) -> bool:
        return all(("fit", self.outer, i, int(c)) in records
                   for c in np.flatnonzero(self.alive) for i in range(self.fold + 1))  # fmt: skip

    def advance(self, plan: Plan, records: Mapping[Key, Record]) -> bool:
        """Decide every fold whose survivors are all scored; whether any candidate was dropped."""
        dropped = False
        while self.fold <= self.last_fold and self._ready(plan, records):
            scores = self._scores(plan, records)
            step = race_step(scores, self.alive, self.fold, racing=self.racing,
                             n_train=self.sizes[0], n_test=self.sizes[1])  # fmt: skip
            for c in step.eliminated:
                self.dropped_after[c] = self.fold
            dropped |= bool(step.eliminated)
            self.alive = np.asarray(step.alive, dtype=bool)
            self.fold += 1
        return dropped

    def _scores(self, plan: Plan, records: Mapping[Key, Record]) -> NDArray[np.float64]:
        """Refit-metric scores of the survivors' folds ``0..fold``; NaN elsewhere."""
        out = np.full((len(plan.candidates), self.fold + 1), np.nan)
        for c in np.flatnonzero(self.alive):
            for i in range(self.fold + 1):
                out[c, i] = records[("fit", self.outer, i, int(c))].test_scores[plan.scoring.refit]
        return out

    def rules_out(self, unit: Unit, plan: Plan) -> bool:
        """Whether ``unit`` is a fit this race no longer needs.

        An iteration path's unit scores every checkpoint of its point on its
        fold: it is not needed once the race dropped all of them before it.
        """
        kind = kind_of(unit)
        # A fast-CV unit (inner=None) scores every fold at once: no race holds it back.
        if not kind.selects or unit.outer != self.outer or unit.inner is None:
            return False
        candidates = plan.batch_of(unit) if kind.records_as is not None else (unit.candidate,)
        return all(
            (after := self.dropped_after.get(c)) is not None and unit.inner > after
            for c in candidates
        )

    def n_missing(self, plan: Plan, records: Mapping[Key, Record]) -> int:
        """Fit records still needed before this fold's candidate can be selected."""
        if self.fold <= self.last_fold:
            return max(1, len(self.alive))  # the race is not over: more decisions to come
        n_folds = self.last_fold + 2
        return sum(1 for c in np.flatnonzero(self.alive) for i in range(n_folds)
                   if ("fit", self.outer, i, int(c)) not in records)  # fmt: skip


def _criterion_undefined(record: Record) -> bool:
    # A criterion that is undefined for the estimator is a usage error, whatever error_score says.
    err = record.error
    undefined = err is not None and err.type == CriteriaUndefinedError.__name__
    return undefined and "criteria" in kind_of(record.unit).keeps


def _check(plan: Plan, records: Sequence[Record]) -> Exception | None:
    """The error that stops the run at this batch, if any (its good records are kept)."""
    if isinstance(records, RecordBatch):  # its plain records have no error
        records = records.others
    undefined = [r for r in records if _criterion_undefined(r)]
    if undefined:
        return CriteriaUndefinedError(undefined[0].error.message)  # type: ignore[union-attr]
    if plan.error_score == "raise":
        failed = [r for r in records if not r.ok]
        if failed:
            return raised_error(plan, failed[0])
    return None


_NOT_SYSTEMATIC = ("WorkerDied", "TimedOut")  # a crash or hang belongs to its candidate
_SYSTEMATIC_AFTER = 8  # candidates failing alike, with nothing yet fitted, make a cause


@dataclass
class _FirstWave:
    """Stop a run whose first fits all fail the same way, before it fails every fit.

    What cannot be checked up front (a scorer that returns text, a module the
    workers lack) fails every fit alike. Units run fold by fold, so once the
    fits of this run cover ``_SYSTEMATIC_AFTER`` candidates (or every
    candidate, if fewer) and every one failed with the very same error, the
    run stops with one message instead of a failure per fit. A failure that
    names its candidate's value differs from the others' and never stops a run.
    Those failures are not stored, so the fixed run computes them. The
    checkpoints of one iteration path are one candidate here: a point that
    fails at every count of its path (a pruned trial's window) is that point's
    fault.
    """

    plan: Plan
    failed: list[Record] = field(default_factory=list)
    open: bool = True
    points: dict[int, int] = field(default_factory=dict)  # a path's candidates: its first

    def __post_init__(self) -> None:
        self.points = {c: path[0] for path in self.plan.paths for c in path}
        self.open = self.plan.n_points >= 2

    def release(self, records: Sequence[Record], *, last: bool = False) -> Sequence[Record]:
        """The records to store now: failures are held while they may still stop the run.

        ``records`` passed :meth:`check` (which holds them while the wave is
        open); the ``last`` call at the end of the run releases what is held.
        """
        if self.open and not last:
            return []
        if self.failed:  # held, with this batch's records if the wave closed on them
            records, self.failed = self.failed, []
        return records

    def check(self, records: Sequence[Record]) -> Exception | None:
        if not self.open:
            return None
        self.failed += records
        errors = {None if r.error is None else (r.error.type, r.error.message)
                  for r in self.failed}  # fmt: skip
        if (
            len(errors) > 1
            or None in errors
            or any(e is not None and e[0] in _NOT_SYSTEMATIC for e in errors)
        ):
            self.open = False
            return None
        candidates = {self.points.get(c, c) for c in (r.unit.candidate for r in self.failed)}
        if len(candidates) < min(_SYSTEMATIC_AFTER, self.plan.n_points):
            return None
        self.open = False
        ((kind, _),) = errors  # type: ignore[misc]
        n_fits = sum(map(len, self.plan.fit_record_keys_by_outer().values()))
        n_run = len(self.failed)
        # scikit-learn's words first ("All the N fits failed"), as its error is matched by them.
        return FitFailedError(Worded((
            f"\nAll the {n_fits} fits failed or would fail the same way.\n"
            "It is very likely that your model is misconfigured.\n"
            "You can try to debug the error by setting ", error_score_setting("raise"), ".\n"
            f"parcv: the first {n_run} fits of this run, of {len(candidates)} candidates, all "
            f"failed with the same {kind}, so it is not one candidate's fault: parcv stopped "
            f"rather than run the other {n_fits - n_run} to fail alike, and stored none of these "
            "failures. Fix the cause and run again (", RESUME, " keeps what finished).\n\n"
            "Below are more details about the failures:\n"
            + failure_details(self.failed).replace(
                f"{n_run} fits failed", f"{n_run} of {n_fits} fits failed", 1
            ),
        )))  # fmt: skip


@dataclass
class _Entry:
    """One plan the driver runs: its schedule and its first-wave check."""

    plan: Plan
    schedule: _Schedule
    first_wave: _FirstWave
    speculate: bool


class Driver:
    """Run the units of several plans on one open executor, as their records arrive.

    Plans are added while others run (a strategy's next round, an outer fold's
    refit): each keeps its own schedule (dependency order, races, refits,
    speculation, the first-wave check), and chunks never mix plans. Plan ``0``
    is the plan the executor was opened with; the others are shipped with
    ``executor.add_plan``. The chunk sizer and the executor's room are shared,
    so the workers take the units of every plan in the order the plans came.
    """

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.entries: dict[int, _Entry] = {}
        self.sizer = _ChunkSizer(executor.chunk_seconds, executor.n_workers, executor.chunk_rate)
        self.in_flight: dict[Hashable, tuple[int, tuple[Unit, ...]]] = {}
        self.guesses: set[Hashable] = set()  # tickets of speculative and chained refits
        self.chains: dict[Hashable, int | None] = {}  # a chained refit's ticket: its outer fold
        # An executor that can chain a refit to its fold's fits (Dask) saves a round trip.
        self._chain = getattr(executor, "submit_refit", None)
        # One whose workers may have other versions installed (Dask) checks them.
        self._expect = getattr(executor, "expect_versions", None)
        self._stop: BackendError | None = None  # raised once the records before it are out

    def add(
        self,
        pid: int,
        plan: Plan,
        schedule: _Schedule,
        *,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """Run ``plan`` (already shipped to the executor as ``pid``) from ``schedule`` on.

        ``versions`` are those of the distributions its keys name
        (:func:`distribution_versions`): an executor whose workers may have
        others installed refuses such a worker before it runs anything.
        """
        if versions and self._expect is not None:
            self._expect(versions)
        speculate = not plan.fast_cv and self.executor.n_workers > 1
        self.entries[pid] = _Entry(plan, schedule, _FirstWave(plan), speculate)

    def _out(self, pid: int) -> bool:
        return any(p == pid and t not in self.guesses for t, (p, _) in self.in_flight.items())

    def complete(self, pid: int) -> bool:
        """Whether every record of plan ``pid`` is in (nothing pending, waiting or out)."""
        s = self.entries[pid].schedule
        return not (s.pending or s.ready or s.waiting or s.needed or self._out(pid))

    @property
    def busy(self) -> bool:
        """Whether any plan still has units to send, records to come or refits to await."""
        return any(
            e.schedule.pending or e.schedule.ready or e.schedule.needed
            for e in self.entries.values()
        ) or bool(set(self.in_flight) - self.guesses)

    def _submit(self, pid: int, units: tuple[Unit, ...]) -> Hashable:
        # Plan 0 is the one the executor was opened with: an executor of one plan suffices.
        return self.executor.submit(units) if pid == 0 else self.executor.submit(units, plan=pid)

    def _fill(self) -> None:
        """Send chunks while the executor has room, from the plans in the order they came."""
        self.sizer.n_workers = self.executor.n_workers  # a batch queue's workers arrive late
        for pid, entry in self.entries.items():
            schedule = entry.schedule
            while schedule.pending and self.sizer.room(self.executor, len(self.in_flight)) > 0:
                chunk = schedule.next_chunk(self.sizer.size(len(schedule.pending)))
                if not chunk:
                    break  # a race holds the rest back until its next decision
                self.in_flight[self._submit(pid, chunk)] = (pid, chunk)

    def _chain_refits(self) -> None:
        """Chain the refits of the folds whose last fits are out (Dask)."""
        if self._chain is None:
            return
        for pid, entry in self.entries.items():
            for outer in entry.schedule.chainable():
                fits = [t for t, (p, units) in self.in_flight.items() if p == pid
                        and any(_selects(u) and u.outer == outer for u in units)]  # fmt: skip
                if len(fits) > _CHAIN_AFTER:
                    continue
                known = entry.schedule.chain(outer)
                if known is None:
                    continue
                args = (outer, fits, known)
                ticket = self._chain(*args) if pid == 0 else self._chain(*args, plan=pid)
                self.in_flight[ticket], self.chains[ticket] = (pid, ()), outer
                self.guesses.add(ticket)

    def _speculate(self) -> None:
        idle = self.executor.n_workers - len(self.in_flight)
        for pid, entry in self.entries.items():
            if idle <= 0 or not entry.speculate or entry.schedule.pending:
                continue
            for unit in entry.schedule.speculate(idle):
                ticket = self._submit(pid, (unit,))
                self.in_flight[ticket] = (pid, (unit,))
                self.guesses.add(ticket)
                idle -= 1

    def _arrived(self) -> list[tuple[int, Sequence[Record]]]:
        """Records ready without running anything, or else the chunks that finish next."""
        ready: list[tuple[int, Sequence[Record]]] = [
            (pid, e.schedule.ready[:]) for pid, e in self.entries.items() if e.schedule.ready
        ]
        for _, entry in self.entries.items():
            entry.schedule.ready.clear()
        if ready:
            return ready
        batches = []
        try:
            for ticket, records in self.executor.wait():
                pid, _ = self.in_flight.pop(ticket)
                if pid not in self.entries:  # a guess for a plan already finished
                    self.guesses.discard(ticket)
                    self.chains.pop(ticket, None)
                    continue
                schedule = self.entries[pid].schedule
                if ticket in self.chains:
                    self.guesses.discard(ticket)
                    schedule.chain_finished(self.chains.pop(ticket), records)
                    continue
                if ticket in self.guesses:
                    self.guesses.discard(ticket)
                    for record in records:
                        schedule.speculated(record)
                    continue
                self.sizer.observe(records)
                batches.append((pid, records))
        except BackendError as err:
            # An executor that fails (a Dask worker with other versions, workers dying
            # again and again) first hands over the chunks that finished: store them.
            self._stop = err
        # The chunks of one plan that came back together are stored in one transaction:
        # each costs the driver a commit, and with cheap fits on many workers they come
        # back by the hundred per second. While a plan's first wave is open its chunks
        # are checked one by one, so the run stops after the same fits however the
        # chunks happened to arrive.
        merged: dict[int, list[Sequence[Record]]] = {}
        single = []
        for pid, records in batches:
            if self.entries[pid].first_wave.open:
                single.append((pid, records))
            else:
                merged.setdefault(pid, []).append(records)
        return single + [(pid, RecordBatch.join(parts)) for pid, parts in merged.items()]

    def step(self) -> Iterator[tuple[int, Sequence[Record]]]:
        """Send what there is room for, wait, and yield each plan's new records to store.

        Raises the error that stops the run (``error_score="raise"``, a failure
        every candidate shares, the executor's :class:`~parcv.BackendError`)
        after yielding the good records of its batch.
        """
        self._fill()
        self._chain_refits()
        self._speculate()
        for pid, records in self._arrived():
            entry = self.entries[pid]
            records = entry.schedule.with_twins(records)
            error = _check(entry.plan, records) or entry.first_wave.check(records)
            if error is not None:
                yield pid, [r for r in records if r.ok]
                raise error
            yield pid, entry.first_wave.release(records)
            entry.schedule.done(records)
        if self._stop is not None:
            raise self._stop

    def finish(self, pid: int) -> Sequence[Record]:
        """The records plan ``pid`` held back while its first fits might all fail alike.

        The plan is done with: the driver forgets it, so that a run of many plans (a
        search's rounds) does not look over the finished ones at every step.
        """
        return self.entries.pop(pid).first_wave.release([], last=True)


# Runs of fewer units leave the collector alone: they make too few objects for its full
# passes to matter, and a process may run thousands of them (freezing costs more on
# interpreters whose collector is incremental).
_FREEZE_FROM = 10_000


@contextmanager
def frozen_heap(n_units: int) -> Iterator[None]:
    """Keep the objects alive when a run starts out of the garbage collector's full passes.

    A driver storing cheap fits makes many short-lived objects, and each full
    pass of the collector walks every object of the process: the imported
    libraries and the plan, which outlive the run. Those passes were a fifth of
    the driver's CPU on a sweep of null fits (issue 40). For a run of at least
    ``_FREEZE_FROM`` units, :func:`gc.freeze` sets them aside for the run, and
    :func:`gc.unfreeze` puts them back after it. A process that froze objects
    itself keeps its own state untouched.
    """
    if n_units < _FREEZE_FROM or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def distribution_versions(environments: Iterable[Environment]) -> dict[str, str]:
    """Collect the versions of the distributions that units' keys name.

    A worker that runs the units must have these versions installed: its
    records are stored under keys that say so.

    Parameters
    ----------
    environments : iterable of Environment
        The code of the units (:attr:`ContentKeys.environments
        <parcv.plan.keys.ContentKeys>` values).

    Returns
    -------
    dict of str to str
        Distribution name to version, by name; an editable install's version
        without the digest of its files (which a worker cannot recompute).

    Examples
    --------
    >>> from parcv.plan.code import CodeEntry, Environment
    >>> env = Environment([
    ...     CodeEntry("numpy", "distribution", "2.1.0"),
    ...     CodeEntry("mylib", "editable", "0.3+files.ab12", "/src/mylib"),
    ...     CodeEntry("models.MyModel", "class", "cd34", "models.py"),
    ... ])
    >>> distribution_versions([env])
    {'mylib': '0.3', 'numpy': '2.1.0'}
    """
    found: dict[str, str] = {}
    for environment in environments:
        for entry in environment.entries:
            if entry.kind == "distribution":
                found[entry.name] = entry.digest
            elif entry.kind == "editable":
                found[entry.name] = entry.digest.partition("+files.")[0]
    return dict(sorted(found.items()))


def start_schedule(
    plan: Plan,
    *,
    done: Mapping[Key, Record] | None = None,
    reuse: Callable[[Unit], Record | None] | None = None,
    twins: Mapping[Key, tuple[Unit, ...]] | None = None,
) -> _Schedule:
    """The schedule of a plan whose records ``done`` are already known (see :func:`run_plan`)."""
    records = RecordTable.growing()
    records.add((done or {}).values())
    return _Schedule(plan, records, reuse=reuse, twins=twins or {})


def run_plan(
    plan: Plan,
    data: Dataset,
    backend: Backend,
    *,
    done: Mapping[Key, Record] | None = None,
    on_batch: Callable[[Sequence[Record]], None] | None = None,
    reuse: Callable[[Unit], Record | None] | None = None,
    twins: Mapping[Key, tuple[Unit, ...]] | None = None,
    versions: Mapping[str, str] | None = None,
) -> RecordTable:
    """Run every unit of a plan that is not already done.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    backend : Backend
    done : mapping of key to Record, default=None
        Records of an earlier run of the same plan; their units are skipped.
    on_batch : callable, default=None
        Called with each batch of new records (one finished chunk) as soon
        as it arrives: the store commits it, the progress bar advances.
    reuse : callable, default=None
        Given a refit or final unit once its candidate is chosen, return a
        stored record of the same content (relabelled to the unit), or None
        to run it.
    twins : mapping of key to tuple of Unit, default=None
        Units whose content equals the unit of a key: they are not run, but
        recorded as copies of that unit's record.
    versions : mapping of str to str, default=None
        The distributions the units' keys name, by version
        (:func:`distribution_versions`): a Dask worker with other versions
        installed is refused before it runs any unit.

    Returns
    -------
    RecordTable
        Every record of the plan, old and new, by key (kept as columns).

    Raises
    ------
    FitFailedError
        On the first failed unit when ``error_score="raise"`` (the batch's
        successful records are handed to ``on_batch`` first).
    ParcvError
        When every candidate failed in some outer fold.
    CriteriaUndefinedError
        When a requested criterion is undefined for the estimator (raised at
        the first ``criteria`` record, whatever ``error_score`` says).
    BackendError
        When a Dask worker has other ``versions`` installed (the records
        finished on other workers are handed to ``on_batch`` first).
    """
    schedule = start_schedule(plan, done=done, reuse=reuse, twins=twins)
    with frozen_heap(plan.n_units), backend.open(plan, data) as executor:
        driver = Driver(executor)
        driver.add(0, plan, schedule, versions=versions)
        while driver.busy:
            for _, batch in driver.step():
                if on_batch is not None and batch:
                    on_batch(batch)
        held = driver.finish(0)
        if on_batch is not None and held:
            on_batch(held)
    return schedule.records
