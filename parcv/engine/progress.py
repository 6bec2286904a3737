"""A progress bar over units: done / failed / total, rate, ETA and best CV score so far (tqdm)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from parcv.plan.kinds import KINDS
from parcv.plan.record_batch import RecordBatch
from parcv.plan.records import Record

__all__ = [
    "START_LOG",
    "VERBOSE_LOG",
    "FitLog",
    "Progress",
    "check_progress",
    "shows_progress",
    "start_lines_to",
    "start_output",
    "verbose_output",
]

# The lines scikit-learn's verbose prints (per-fit END lines, curve sizes): logged here.
VERBOSE_LOG = logging.getLogger("parcv.verbose")
# What a run finds in its store when it starts ("reusing 840 of 1,000 units; 160 to
# compute", one line per code change) and what a run in rounds reused: logged here.
START_LOG = logging.getLogger("parcv.start")


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
    TypeError
        Anything but True, False or None.
    """
    if progress is None:
        return sys.stderr.isatty()
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True, False or None; got {progress!r}.")
    return progress


def shows_progress(progress: bool | None, verbose: int) -> bool:
    """Whether a run shows its progress: the bar, and its start lines on stderr.

    ``progress=None`` shows it when stderr is a terminal, or with ``verbose >= 1``
    (as scikit-learn's ``verbose`` shows its log); ``progress=False`` never.

    Examples
    --------
    >>> shows_progress(False, 3), shows_progress(True, 0), shows_progress(None, 1)
    (False, True, True)
    """
    return check_progress(True if progress is None and verbose else progress)


def _bar_class() -> Any:
    """tqdm's bar (or the notebook's) that never starts tqdm's monitor thread.

    tqdm starts a monitor thread with its first bar and never stops it: it would stay in
    the user's process after the run, waking every 10 s, and it warns
    (``TqdmSynchronisationWarning``) when a bar starts while it looks over the bars, so a
    warnings filter of "error" turns a bar started at that moment into an exception in
    that thread. The monitor only redraws bars whose ``miniters`` grew; ours stays at 1.
    Made for each bar, from the ``tqdm.auto.tqdm`` of the moment (one bar per run).
    """
    from tqdm.auto import tqdm

    class Bar(tqdm):  # type: ignore[misc]
        monitor_interval = 0

    return Bar


@dataclass(frozen=True)
class _Watched:
    """A plan whose candidates count for the best: its folds, its level, how it is said."""

    n_folds: int
    level: tuple[float, ...]
    where: str


class Progress:
    """Advance a tqdm bar by batches of records; a no-op when disabled.

    Parameters
    ----------
    total : int
        Units the run will compute; for an adaptive strategy a bound, corrected
        when the run ends (:meth:`finish`).
    enabled : bool
    initial : int, default=0
        Units already done (resumed from a store).
    metric : str or None, default=None
        The metric that selects. The bar then shows ``best CV <metric>=...``:
        the highest mean CV score on all data among the candidates whose every
        fold is done, written as the report writes scores (6 significant
        digits; ``neg_*`` metrics as the negated errors they are). Once the
        search ends it is the CV score the report gives the best candidate
        (``best_score_``, for nested CV the search on all data's). Fits on an
        outer fold's training part are not counted: they select for that fold
        only. A run in rounds names the plans whose candidates count
        (:meth:`watch`), each at its level.
    n_folds : int or None, default=None
        The folds of the CV on all data of a plan run whole (None: no such
        plan; a run in rounds watches its parts instead).
    done : iterable of Record, default=()
        Records already done (resumed from a store), counted for the best.

    Examples
    --------
    >>> from parcv.plan.records import Record, Unit
    >>> bar = Progress(4, enabled=False, metric="accuracy", n_folds=2)
    >>> def rec(c, fold, s):
    ...     return Record(Unit("fit", None, fold, c), "ok", {"accuracy": s}, {}, 0.0, 0.0, 1, 1)
    >>> bar.update([rec(0, 0, 0.5), rec(1, 0, 0.75), rec(1, 1, 0.25)])
    >>> bar.best
    'accuracy=0.5'

    A run in rounds: rows at a higher level (a larger resource) replace the best.

    >>> bar = Progress(8, enabled=False, metric="accuracy")
    >>> bar.watch(1, 2, level=(1.0,), where="at n_resources=10")
    >>> bar.watch(2, 2, level=(2.0,), where="at n_resources=30")
    >>> bar.update([rec(0, 0, 0.9), rec(0, 1, 0.9)], plan=1)
    >>> bar.best
    'accuracy=0.9 at n_resources=10'
    >>> bar.update([rec(0, 0, 0.7), rec(0, 1, 0.8)], plan=2)
    >>> bar.best
    'accuracy=0.75 at n_resources=30'
    """

    def __init__(
        self,
        total: int,
        enabled: bool,
        initial: int = 0,
        metric: str | None = None,
        *,
        n_folds: int | None = None,
        done: Iterable[Record] = (),
    ) -> None:
        self.failed = 0
        self.note = ""
        self._planned = total
        self._metric = metric
        self._watched: dict[int | None, _Watched] = {}
        if n_folds:
            self._watched[None] = _Watched(n_folds, (), "")
        self._sums: dict[tuple[int | None, int], list[float]] = {}
        self.best = ""
        self._best: tuple[tuple[float, ...], float] | None = None
        if metric is not None:
            self._track_best(list(done), None)
        self._bar: Any = None
        if enabled:
            self._bar = _bar_class()(
                total=total,
                initial=initial,
                unit="fit",
                desc="parcv",
                dynamic_ncols=True,
                file=sys.stderr,
                # Without tqdm's monitor (below), a bar whose miniters grew during a burst
                # of reused units would go quiet in a slow stretch: every update may draw,
                # at most one every mininterval (0.1 s).
                miniters=1,
            )

    def watch(
        self, plan: int, n_folds: int, *, level: tuple[float, ...] = (), where: str = ""
    ) -> None:
        """Count the candidates of plan ``plan`` (a part of a round) for the best.

        A candidate counts once its ``n_folds`` folds are done. The best is
        the highest mean among the candidates of the highest ``level`` so far
        (a part's rows and resource: scores on a subsample or at a smaller
        resource are not compared with those at the full one, as halving selects
        from its last rung); ``where`` says which level the shown best is of.
        """
        self._watched[plan] = _Watched(n_folds, level, where)

    def update(self, batch: Sequence[Record], plan: int | None = None) -> None:
        """Count a finished batch (of plan ``plan``, for a run in rounds)."""
        notable = batch.others if isinstance(batch, RecordBatch) else batch  # plain ones are ok
        self.failed += sum(not r.ok for r in notable)
        self._track_best(batch, plan)
        if self._bar is not None:
            # An adaptive strategy's bound may be short (a strategy of one's own): the bar
            # keeps a total rather than dropping it.
            self._bar.total = max(self._bar.total or 0, self._bar.n + len(batch))
            self._say()
            self._bar.update(len(batch))

    def set_best(self, score: float, where: str = "") -> None:
        """Show ``score`` as the best: the CV score of the winner a search chose."""
        if self._metric is None or score != score:
            return
        self.best = self._shown(score, where)
        if self._bar is not None:
            self._say()
            self._bar.refresh()

    def finish(self) -> None:
        """End the bar of a run that ended: its total becomes the units run.

        A strategy that adapts knows its units only as a bound; the bar then ends at
        the units it ran and says what the bound was (:attr:`note`).
        """
        if self._bar is None:
            return
        n = int(self._bar.n)
        if n < self._planned:
            self.note = f"of at most {self._planned:,} units"
        elif n > self._planned:
            self.note = f"the strategy's bound was {self._planned:,} units"
        self._bar.total = n
        self._say()
        self._bar.refresh()

    def _say(self) -> None:
        said = [f"failed={self.failed}"] if self.failed else []
        said += [f"best CV {self.best}"] if self.best else []
        said += [self.note] if self.note else []
        if said:
            self._bar.set_postfix_str(", ".join(said), refresh=False)

    def _shown(self, score: float, where: str) -> str:
        return f"{self._metric}={score:.6g}" + (f" {where}" if where else "")

    def _track_best(self, batch: Sequence[Record], plan: int | None) -> None:
        """Best mean CV score on all data of a candidate whose every fold is done."""
        name, watched = self._metric, self._watched.get(plan)
        if name is None or watched is None:
            return
        if isinstance(batch, RecordBatch):  # its blocks from their columns
            for block in batch.blocks:
                if not KINDS[block.kind].selects or name not in block.test_names:
                    continue
                on_all = block.folds[:, 0] == -1  # no outer fold: the CV on all data
                folds = block.folds[on_all].tolist()
                scores = block.test[on_all, block.test_names.index(name)].tolist()
                for (_, inner, candidate), score in zip(folds, scores, strict=True):
                    self._count(plan, candidate, None if inner == -1 else inner, score, watched)
            batch = batch.others
        for r in batch:
            score = r.test_scores.get(name)
            if not KINDS[r.unit.kind].selects or r.unit.outer is not None or not r.ok:
                continue
            self._count(plan, r.unit.candidate, r.unit.inner, score, watched)

    def _count(
        self,
        plan: int | None,
        candidate: int,
        inner: int | None,
        score: float | None,
        watched: _Watched,
    ) -> None:
        if score is None or score != score:
            return
        # A record of every fold at once (fast CV, a path in lockstep) holds their mean.
        n_folds = watched.n_folds
        weight = n_folds if inner is None else 1
        acc = self._sums.setdefault((plan, candidate), [0.0, 0])
        acc[0] += score * weight
        acc[1] += weight
        # Compared as each candidate completes: a scan of every candidate per batch grew
        # with candidates x batches.
        if acc[1] < n_folds:
            return
        mean, best = acc[0] / acc[1], self._best
        if best is None or watched.level > best[0] or (watched.level == best[0] and mean > best[1]):
            self._best = (watched.level, mean)
            self.best = self._shown(mean, watched.where)

    def close(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()


class FitLog:
    """One line per finished fit, in scikit-learn's ``verbose`` format, on :data:`VERBOSE_LOG`.

    ``verbose >= 2`` prints a fit unit's parameters and time; ``verbose >= 3`` also
    its split and scores, ``verbose >= 10`` its candidate's number. Other units
    (refits, criteria) print nothing, as scikit-learn prints nothing for its refit.

    Examples
    --------
    >>> from parcv.plan.build import build_plan
    >>> from parcv.plan.data import check_dataset
    >>> from parcv.plan.records import Record, Unit
    >>> from sklearn.linear_model import Ridge
    >>> data = check_dataset([[0.0], [1.0], [2.0], [3.0]], [0.0, 1.0, 2.0, 3.0])
    >>> plan = build_plan(Ridge(), {"alpha": [0.1, 1.0]}, data, inner=2)
    >>> rec = Record(Unit("fit", None, 1, 0), "ok", {"score": 0.5}, {}, 0.01, 0.0, 2, 2)
    >>> with verbose_output(10):
    ...     FitLog(plan, 10).update([rec])
    [CV 2/2; 1/2] END ......................alpha=0.1;, score=0.500 total time=   0.0s
    """

    def __init__(self, plan: Any, verbose: int) -> None:
        self.plan, self.verbose = plan, verbose

    def update(self, records: Sequence[Record]) -> None:
        """Print the lines of the fit units among ``records``."""
        if self.verbose < 2:
            return
        for record in records:
            if record.unit.kind == "fit" and record.unit.inner is not None:
                VERBOSE_LOG.info("%s", self.line(record))

    def line(self, record: Record) -> str:
        """scikit-learn's ``[CV i/k; c/n] END params;, score=... total time=...`` line."""
        from joblib.logger import short_format_time

        plan, unit = self.plan, record.unit
        assert unit.inner is not None  # a fit unit of a search or of cross_validate
        # As scikit-learn: the split from verbose 3, the candidate from verbose 10.
        where = f" {unit.inner + 1}/{len(plan.inner_folds[unit.outer])}" if self.verbose > 2 else ""
        if self.verbose > 9:
            where += f"; {unit.candidate + 1}/{len(plan.candidates)}"
        if unit.outer is not None:  # nested CV: which outer fold's search
            where = f" outer {unit.outer + 1}/{len(plan.outer_folds)}," + where
        start = f"[CV{where}] END "
        params = plan.candidates[unit.candidate].params
        result = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
        result += ";" if result else ""
        if self.verbose > 2:
            result += self._scores(record)
        result += f" total time={short_format_time(record.fit_time + record.score_time)}"
        return start + "." * (80 - len(start) - len(result)) + result

    def _scores(self, record: Record) -> str:
        test, train = record.test_scores, record.train_scores
        if self.plan.scoring.multimetric:
            parts = []
            for name in sorted(test):
                kept = f"train={train[name]:.3f}, " if name in train else ""
                parts.append(f" {name}: ({kept}test={test[name]:.3f})")
            return "".join(parts)
        if "score" not in test:
            return ""
        if "score" in train:
            return f", score=(train={train['score']:.3f}, test={test['score']:.3f})"
        return f", score={test['score']:.3f}"


@contextmanager
def verbose_output(verbose: int) -> Iterator[None]:
    """Show :data:`VERBOSE_LOG`'s lines on stdout while a run with ``verbose >= 1`` lasts.

    scikit-learn prints its verbose lines; parcv logs them, and for the run asked to
    be verbose writes them to the current ``sys.stdout`` (a handler added here and
    removed after, the logger not propagating meanwhile so a configured root logger
    does not show them twice). With ``verbose=0`` nothing is added: the lines are
    not made either.
    """
    if not verbose:
        yield
        return
    with _written_to(VERBOSE_LOG, sys.stdout, "%(message)s"):
        yield


@contextmanager
def _written_to(logger: logging.Logger, stream: Any, form: str) -> Iterator[None]:
    """``logger``'s INFO lines written to ``stream`` as ``form`` while the block runs.

    The handler is removed after, and the logger's level and propagation put back;
    it does not propagate meanwhile, so a configured root logger does not show a
    line twice.
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(form))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


@contextmanager
def start_output(shown: bool) -> Iterator[None]:
    """Write :data:`START_LOG`'s lines on stderr, as ``parcv: <line>``, while a run lasts.

    The lines a resume starts with (what the store holds, what changed) reach a
    Python user who configured no logging, as the command line prints them: for a
    run that shows its progress (``shown``, see :func:`shows_progress`). A handler
    added here writes to the current ``sys.stderr`` and is removed after; the logger
    does not propagate meanwhile, so a configured root logger does not show a line
    twice. Nothing is added when ``shown`` is false (the lines are logged as any
    INFO line), nor when :data:`START_LOG` has a handler of its own: a caller that
    says these lines its own way (:func:`start_lines_to`) takes them.

    Examples
    --------
    >>> import sys
    >>> sys.stderr = sys.stdout  # the doctest reads stdout
    >>> with start_output(True):
    ...     START_LOG.info("reusing 4 of 7 units; 3 to compute")
    parcv: reusing 4 of 7 units; 3 to compute
    >>> sys.stderr = sys.__stderr__
    """
    if not shown or START_LOG.handlers:
        yield
        return
    with _written_to(START_LOG, sys.stderr, "parcv: %(message)s"):
        yield


@contextmanager
def start_lines_to(handler: logging.Handler) -> Iterator[None]:
    """Send :data:`START_LOG`'s lines to ``handler`` while the block lasts, not to stderr.

    For a caller that says what a resume finds its own way (the command line prints
    its lines before the run): the run's own start lines then go to ``handler`` (a
    ``logging.NullHandler()`` drops them) and still propagate to the configured
    loggers, as any INFO line.
    """
    START_LOG.addHandler(handler)
    try:
        yield
    finally:
        START_LOG.removeHandler(handler)
