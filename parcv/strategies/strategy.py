"""The strategy seam: a search proposes rounds of units from the rounds it has finished.

A search (one inner CV: on all data, or on one outer fold's training rows)
runs in rounds. Before each round the driver hands the search's *proposer*
the finished rounds so far and a seed; the proposer returns the next
:class:`Round` (candidates x folds x resource, in one or more :class:`Part`)
or ``None`` when it is done, and finally names the winner with
:meth:`Proposer.choose`. Because a proposal reads only finished rounds, every
backend and number of workers proposes the same rounds; because a round is
plain data (with its ``decision``), the run stores it, ``parcv.load`` rebuilds
the whole result from the store and ``parcv inspect`` can print the schedule.

This is the whole contract, as scikit-learn's ``BaseSearchCV._run_search``
or Optuna's ask and tell: a new strategy is one class with ``start`` (and
``schedule`` for ``inspect``), plus its test. Grid and random search are one
round (:class:`OneRound`); successive halving, Hyperband, early stopping and
Optuna's samplers live beside this module.

A part's units are ordinary content-keyed units: a unit some earlier round,
another search or another run already computed is read back, never fitted
twice, and a part whose inputs did not change is read back whole on resume.

Every random draw a round needs comes from the round's seed through this
contract, never from fresh entropy. The seed handed to
:meth:`Proposer.propose` is the round's ``numpy.random.SeedSequence``
(:func:`round_seed`: the run's seed, the search, the round): a proposer draws
from it (``np.random.default_rng(seed)``, ``seed.spawn(n)``); a part's row
subsample (``Part(n_rows=...)``) is drawn with its ``subsample_seed``, or,
when that is None, with :func:`subsample_seed` of the round's seed and the
part's place in the round, by the driver. The run's seed is
``random_state`` of :func:`parcv.search` and :func:`parcv.nested_cv` (``--seed``
and ``[run] seed`` in a spec, ``random_state`` of the drop-ins), so two runs
with one seed propose the same rounds and draw the same rows, a resume
replays them and reads every finished unit back, and another seed draws anew.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Choice",
    "FinishedPart",
    "FinishedRound",
    "OneRound",
    "Part",
    "Proposer",
    "Round",
    "RoundBound",
    "Schedule",
    "SearchContext",
    "Strategy",
    "best_of",
    "round_seed",
    "subsample_seed",
]


@dataclass(frozen=True)
class SearchContext:
    """What a search knows before its first round.

    Parameters
    ----------
    candidates : tuple of dict
        The points of the space (a grid, or a random space's draws), as
        ``set_params`` takes them; empty for a space a sampler proposes from.
    space : object
        The space as the user gave it (a grid, a ``RandomSpace``, or a dict of
        distributions for a sampler).
    estimator : estimator object
        The unfitted estimator (read, never fitted, by a strategy).
    n_samples : int
        Rows the search splits (all rows, or an outer fold's training rows).
    n_splits : int
        Folds of its CV.
    n_classes : int or None
        Classes of ``y`` for a classifier, else None.
    metric : str
        The refit metric: its mean test score (greater is better) decides.
    key : int or None, default=None
        The outer fold whose training rows it searches; None: all data.
    cv : object, default=None
        Its CV scheme as the user gave it (an int, a splitter), for the checks
        a strategy makes of it.
    metrics : tuple of str, default=()
        Every metric the search scores, by the name ``cv_results_`` keys it
        (``"score"`` for one metric, the scoring's names for several):
        ``metric`` is one of them. Empty where not known before the first fit
        (a callable scoring that returns a dict).
    """

    candidates: tuple[dict[str, Any], ...]
    space: Any
    estimator: Any
    n_samples: int
    n_splits: int
    n_classes: int | None
    metric: str
    key: int | None = None
    cv: Any = None
    metrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class Part:
    """One search of a round: candidates scored by CV on the search's folds at one resource.

    Parameters
    ----------
    candidates : tuple of dict
        Parameters set on the estimator, one dict per candidate (a resource
        parameter such as ``n_estimators`` included).
    ids : tuple of int
        The strategy's name for each candidate (its point of the space, its
        trial number): rows of different rounds with one id are one point.
    n_rows : int or None, default=None
        Subsample every fold to ``n_rows`` rows in all, as scikit-learn's
        halving searches do (``int(n_rows / n_samples * len(rows))`` of each
        fold's train and test rows); None: the folds' own rows.
    subsample_seed : int, numpy.random.RandomState or None, default=None
        With ``n_rows``, the seed of the subsample. An int in ``[0, 2**32)``
        draws every fold's train and test rows with that seed, as
        scikit-learn's halving searches with an int ``random_state``. A
        ``RandomState`` is drawn from fold after fold and consumed, so parts
        handed one generator (a proposer's own copy) draw on from each other,
        as scikit-learn's halving with a ``RandomState``. None: the driver
        draws it from the round's seed (:func:`subsample_seed`), one per
        search, round and part, the same on every backend and resume.
        The rows drawn are part of every unit's content key, so a resume
        reads the same subsample back and another seed never shares a record.
    resource : int or None, default=None
        The part's resource (rows or iterations), as reports show it.
    window : tuple of int or None, default=None
        With an iteration path (``Iterations``), the checkpoints this part
        records for each candidate (a candidate is then a point of the space
        without the iteration parameter); None: every checkpoint.
    label : str, default=""
        What to call the part in reports and messages, e.g. ``"bracket 2"``.
    grows : str or None, default=None
        The ``warm_start`` parameter that continues the fits of a resource
        parameter (``n_estimators``) exactly, where the shortcut table says so
        (:func:`~parcv.plan.shortcuts.continues_exactly`): the part keeps its
        fitted estimators (pickled, never stored) when ``keep_fitted``, and a
        part with ``continues`` grows them.
    continues : tuple of int or None, default=None
        Each candidate's fits continue those of row ``continues[j]`` of the
        part of the round before with the same label, where that equals a fit
        from scratch (:mod:`parcv.plan.shortcuts`); elsewhere they are fitted
        from scratch, with the numbers of a plain fit either way.
    keep_fitted : bool, default=False
        See ``grows``.
    """

    candidates: tuple[dict[str, Any], ...]
    ids: tuple[int, ...]
    n_rows: int | None = None
    subsample_seed: int | np.random.RandomState | None = None
    resource: int | None = None
    window: tuple[int, ...] | None = None
    label: str = ""
    grows: str | None = None
    continues: tuple[int, ...] | None = None
    keep_fitted: bool = False

    def __post_init__(self) -> None:
        if len(self.candidates) != len(self.ids):
            raise ValueError(
                f"a Part needs one id per candidate; got {len(self.candidates)} candidates and "
                f"{len(self.ids)} ids. Give each candidate the strategy's name for it."
            )
        if not self.candidates:
            raise ValueError("a Part needs at least one candidate; propose None to stop instead.")
        seed = self.subsample_seed
        if seed is None or isinstance(seed, np.random.RandomState):
            pass
        elif isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise TypeError(
                f"subsample_seed must be an int in [0, 2**32), a numpy RandomState or None; got "
                f"{seed!r}. Pass e.g. subsample_seed=0, or None to draw it from the round's seed."
            )
        elif not 0 <= seed < 2**32:
            raise ValueError(
                f"subsample_seed must be an int in [0, 2**32), a numpy RandomState or None; got "
                f"{seed!r}. Pass e.g. subsample_seed=0, or None to draw it from the round's seed."
            )
        else:
            object.__setattr__(self, "subsample_seed", int(seed))
        if seed is not None and self.n_rows is None:
            raise ValueError(
                f"subsample_seed needs n_rows: it seeds the subsample of n_rows rows; got "
                f"subsample_seed={seed!r} with n_rows=None. Give n_rows, or leave the seed None."
            )


@dataclass(frozen=True)
class Round:
    """The next round of a search: its parts and the decision that made them.

    Parameters
    ----------
    parts : tuple of Part
        Run together; the next proposal waits for all of them.
    decision : dict, default={}
        JSON-ready: what the strategy decided from the rounds before (the
        candidates it kept, the paths it stopped, a sampler's proposals). It is
        stored with the run and shown by ``inspect`` and the report.
    """

    parts: tuple[Part, ...]
    decision: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("a Round needs at least one Part; propose None to stop instead.")


@dataclass(frozen=True)
class FinishedPart:
    """A part's scores, as its proposer reads them.

    Rows are the candidates of the part as scored: one per candidate, or per
    (candidate, checkpoint) of its ``window``.

    Parameters
    ----------
    part : Part
    params : tuple of dict
        Each row's parameters (a checkpoint's count included).
    ids : tuple of int
        Each row's candidate id (``part.ids`` of its candidate).
    scores : ndarray of shape (n_rows, n_splits)
        Test score of the refit metric on each fold; NaN where the fold was
        not run (a race dropped the row) or its fit failed with a NaN
        ``error_score``.
    means : ndarray of shape (n_rows,)
        The rows' ``mean_test_<metric>`` as ``cv_results_`` holds it.
    dropped : ndarray of bool of shape (n_rows,)
        Rows a race dropped before their last fold.
    metric_means : dict of str to ndarray of shape (n_rows,), default={}
        The rows' mean over the folds of every metric (``mean_test_<name>``,
        by the names of ``SearchContext.metrics``) and of the fit and score
        times (``"fit_time"``, ``"score_time"``: ``mean_fit_time``,
        ``mean_score_time``), as ``cv_results_`` holds them: what a strategy
        with several objectives decides on.
    metric_stds : dict of str to ndarray of shape (n_rows,), default={}
        Their standard deviations over the folds (``std_test_<name>``,
        ``std_fit_time``, ...), as ``cv_results_`` holds them.
    """

    part: Part
    params: tuple[dict[str, Any], ...]
    ids: tuple[int, ...]
    scores: NDArray[np.float64]
    means: NDArray[np.float64]
    dropped: NDArray[np.bool_]
    metric_means: Mapping[str, NDArray[np.float64]] = field(default_factory=dict)
    metric_stds: Mapping[str, NDArray[np.float64]] = field(default_factory=dict)


@dataclass(frozen=True)
class FinishedRound:
    """A round whose every part has finished."""

    round: Round
    parts: tuple[FinishedPart, ...]


@dataclass(frozen=True)
class Choice:
    """The winner of a search: row ``row`` of part ``part`` of round ``round``.

    ``decision`` is JSON-ready, as a round's: what the strategy decided from its
    last round, which no next round's decision holds (a sampler's last trials,
    told as complete, pruned or failed). It is stored with the run and read
    back by ``parcv.load``; empty for most strategies.
    """

    round: int
    part: int
    row: int
    decision: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class RoundBound:
    """One round as ``inspect`` shows it before anything runs.

    Parameters
    ----------
    n_candidates : int
        Candidates of the round (at most, for an adaptive strategy).
    n_units : int
        Units of the round (at most), over the search's folds: the records it
        stores, one score of one candidate on one fold. A part with a
        ``window`` scores each of its paths at every checkpoint of it: a unit
        per (candidate, fold, checkpoint).
    text : str
        What the round is, e.g. ``"rung 1: 9 candidates x 3 folds, n_estimators=27"``.
    n_rows : int or None, default=None
        The rows its parts subsample every fold to (``Part.n_rows``), for the
        training rows ``inspect`` counts; None: the folds' own rows.
    n_fits : int or None, default=None
        Fits of the round (at most) when fewer than its units: a path grown
        once to its window's last checkpoint is one fit that makes a unit per
        checkpoint. None: one fit per unit.
    """

    n_candidates: int
    n_units: int
    text: str
    n_rows: int | None = None
    n_fits: int | None = None


@dataclass(frozen=True)
class Schedule:
    """A search's rounds before they run: exact for a fixed strategy, a bound otherwise.

    ``n_candidates``: the distinct candidates the search scores (at most,
    unless ``exact``) when the strategy proposes its own (a sampler's trials,
    Hyperband's draws per bracket); None: the context's candidates.
    """

    rounds: tuple[RoundBound, ...]
    exact: bool
    n_candidates: int | None = None

    @property
    def n_units(self) -> int:
        """Units of every round (at most, unless ``exact``): the records they store."""
        return sum(r.n_units for r in self.rounds)

    @property
    def n_fits(self) -> int:
        """Fits of every round (at most, unless ``exact``): see :attr:`RoundBound.n_fits`."""
        return sum(r.n_units if r.n_fits is None else r.n_fits for r in self.rounds)


@runtime_checkable
class Proposer(Protocol):
    """The state of one search: proposes its rounds and names its winner."""

    def propose(
        self, history: Sequence[FinishedRound], seed: np.random.SeedSequence
    ) -> Round | None:
        """Return the next round from the finished ones (in order), or None when done.

        ``seed`` is the round's (:func:`round_seed`): every random draw the
        round needs comes from it, never from fresh entropy, so a rerun or a
        resume proposes the same round. A part's row subsample is seeded by its
        ``subsample_seed``, or by the driver from ``seed`` (:func:`subsample_seed`).
        """
        ...

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        """Return the winner once :meth:`propose` returned None."""
        ...


@runtime_checkable
class Strategy(Protocol):
    """A search strategy: starts one proposer per search (per outer fold, and on all data).

    ``name`` says what the strategy is in messages and the store; ``config``
    is its settings as JSON-ready data (stored with the run, part of what a
    resume compares).

    Optional members, read where present (a strategy without them is a plain one):

    - ``iterations`` (an :class:`~parcv.plan.iterations.Iterations`): its parts
      score iteration paths, each part over the checkpoints of its ``window``;
      a checkpoint a path never reaches is shown as stopped (NaN, not failed).
    - ``takes_distributions = True``: it proposes points from distributions (a
      sampler) rather than from the points of a grid or random space.
    - ``fixed_candidates = True``: its candidates are fixed before any score is
      read, each scored on every row of every fold (one round of a grid), so
      BBC-CV of its selection applies (``nested_cv(..., interval="bbc")``);
      without it BBC-CV is refused before any fit.
    - ``config()["joins"]``: how the result joins its parts, ``"table"`` (the
      default: one row per candidate id and checkpoint), ``"rungs"`` or
      ``"brackets"``.
    """

    @property
    def name(self) -> str:
        """What the strategy is called in messages and the store."""
        ...

    def config(self) -> dict[str, Any]:
        """Return the strategy's settings as JSON-ready data."""
        ...

    def start(self, context: SearchContext) -> Proposer:
        """Return a fresh proposer for one search."""
        ...

    def schedule(self, context: SearchContext) -> Schedule:
        """Return the rounds ``inspect`` shows: exact, or a bound."""
        ...


def round_seed(entropy: int, key: int | None, index: int) -> np.random.SeedSequence:
    """The seed of round ``index`` of the search on outer fold ``key`` (None: all data).

    Spawned from one ``SeedSequence`` per run, so two runs with different
    seeds never share a draw and a search's rounds draw independently.

    Examples
    --------
    >>> a, b = round_seed(0, None, 0), round_seed(0, None, 1)
    >>> bool(a.generate_state(1)[0] != b.generate_state(1)[0])
    True
    >>> round_seed(0, 3, 1).spawn_key
    (4, 1)
    """
    search = 0 if key is None else int(key) + 1
    return np.random.SeedSequence(entropy, spawn_key=(search, int(index)))


# The spawn-key word of the driver's subsample seeds: a proposer's own ``seed.spawn(n)``
# children ((..., 0), (..., 1), ...) never reach it.
_SUBSAMPLES = 0x73756273  # "subs"


def subsample_seed(seed: np.random.SeedSequence, part: int) -> int:
    """The subsample seed of part ``part`` of a round whose ``Part.subsample_seed`` is None.

    The driver draws it from the round's seed ``seed`` (:func:`round_seed`) in
    a stream of its own, apart from the proposer's draws from ``seed``: one per
    (run seed, search, round, part), so a rerun or a resume draws the same rows
    and another run seed other rows.

    Examples
    --------
    >>> a, b = subsample_seed(round_seed(0, None, 0), 0), subsample_seed(round_seed(0, None, 0), 1)
    >>> a == subsample_seed(round_seed(0, None, 0), 0), a != b
    (True, True)
    >>> a != subsample_seed(round_seed(1, None, 0), 0)
    True
    """
    key = (*seed.spawn_key, _SUBSAMPLES, int(part))
    child = np.random.SeedSequence(seed.entropy, spawn_key=key)
    return int(child.generate_state(1, dtype=np.uint32)[0])


def best_of(finished: FinishedPart) -> int:
    """The row with the highest mean score, the first on ties; NaN ranks last.

    Examples
    --------
    >>> part = Part(({"a": 1}, {"a": 2}), (0, 1))
    >>> done = FinishedPart(part, part.candidates, part.ids, np.zeros((2, 1)),
    ...                     np.array([0.5, 0.7]), np.zeros(2, dtype=bool))
    >>> best_of(done)
    1
    """
    means = np.asarray(finished.means, dtype=np.float64)
    if np.isnan(means).all():
        return 0
    return int(np.nanargmax(means))


@dataclass(frozen=True)
class _OneRoundProposer:
    context: SearchContext

    def propose(
        self, history: Sequence[FinishedRound], seed: np.random.SeedSequence
    ) -> Round | None:
        if history:
            return None
        ids = tuple(range(len(self.context.candidates)))
        return Round((Part(self.context.candidates, ids),), {"candidates": len(ids)})

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        return Choice(0, 0, best_of(history[0].parts[0]))


@dataclass(frozen=True)
class OneRound:
    """Grid or random search: every candidate on every fold, in one round.

    The plan of that round is the search itself (with its selection rule,
    criteria, racing and refit); the driver runs it as one graph.

    Examples
    --------
    >>> ctx = SearchContext(({"a": 1}, {"a": 2}), None, None, 10, 5, None, "score")
    >>> OneRound().schedule(ctx).n_units
    10
    """

    name: str = "grid"
    # Every candidate fixed before any score, each on every row: BBC-CV applies (the driver asks).
    fixed_candidates: bool = field(default=True, init=False, repr=False)

    def config(self) -> dict[str, Any]:
        """Return the strategy's settings (none)."""
        return {"name": self.name}

    def start(self, context: SearchContext) -> Proposer:
        """Return the proposer of one round of every candidate."""
        return _OneRoundProposer(context)

    def schedule(self, context: SearchContext) -> Schedule:
        """Return the one round: every candidate on every fold."""
        n = len(context.candidates)
        text = f"{n} candidates x {context.n_splits} folds"
        return Schedule((RoundBound(n, n * context.n_splits, text),), exact=True)


def finite_mean(values: NDArray[np.float64]) -> float:
    """The mean of the values, NaN if any is NaN (as ``cv_results_`` means are)."""
    return math.nan if np.isnan(values).any() else float(np.mean(values))
