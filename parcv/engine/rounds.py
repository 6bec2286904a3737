"""The strategy driver: every search's rounds on one executor, each as soon as it can start.

A run in rounds has one search per outer fold (nested CV) and one on all data.
Each search's proposer (:mod:`parcv.strategies.strategy`) proposes a round from the
rounds it has finished; the driver turns each part of the round into a plan
(:mod:`parcv.plan.parts`), ships it to the open executor and runs it beside
every other plan in flight (:class:`~parcv.engine.runner.Driver`). When every
part of a search's round is in, the proposer reads them and proposes the next
round, at once, whatever the other searches are doing; when it stops, the
search's winner is refitted (on its outer fold, or on all data). A proposal reads
only finished rounds, so every backend and number of workers runs the same
rounds; each round is stored with its decision (the store's ``rounds`` table),
its units by content key, so a resume replays the proposals and fits only the
units no earlier run stored.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import is_classifier

from parcv.engine.options import RunOptions
from parcv.engine.progress import (
    START_LOG,
    VERBOSE_LOG,
    Progress,
    check_progress,
    verbose_output,
)
from parcv.engine.runner import Driver, distribution_versions, frozen_heap, start_schedule
from parcv.engine.session import (
    CodeChanges,
    StoreKeys,
    _interrupt_text,
    _open,
    _plan_folds,
    _plan_partitions,
    _reuse,
    _save_final,
    _store_failure,
    final_model,
    missing_of_expected,
    plan_from_store,
    plan_meta,
    reused_message,
    rounds_reuse_message,
)
from parcv.errors import (
    FitFailedError,
    ParcvError,
    RunInterrupted,
    UnfinishedRunError,
    Worded,
    error_score_setting,
)
from parcv.plan.build import Plan, fingerprint
from parcv.plan.data import Dataset
from parcv.plan.kept import KeptFit
from parcv.plan.keys import KeysOfACall, content_keys
from parcv.plan.kinds import Key
from parcv.plan.parts import PartBuilder, RoundOptions, base_plan, continued, refit_plan
from parcv.plan.records import Record, Unit
from parcv.plan.tokens import Tokenizer, token_hex
from parcv.results.aggregate import failure_details, reemit_unit_warnings, report_fit_failures
from parcv.results.partial import PartialResult
from parcv.results.rounds import PartRun, SearchRun, finished_part, make_partial_rounds_result
from parcv.store.checks import check_store
from parcv.store.lock import lock_store
from parcv.store.messages import kept_kinds
from parcv.store.readers import (
    read_ckeys,
    read_kept,
    read_records,
    read_rounds,
    read_stored_kinds,
)
from parcv.store.rows import CandidateLabels, RoundRow, params_plain
from parcv.store.schema import reading
from parcv.store.writer import Store, store_session
from parcv.strategies.strategy import (
    Choice,
    FinishedRound,
    Part,
    Proposer,
    Round,
    SearchContext,
    Strategy,
    round_seed,
    subsample_seed,
)

__all__ = [
    "RoundsJob",
    "SearchJob",
    "check_round_interval",
    "execute_rounds",
    "fixed_candidates",
    "load_rounds",
    "load_rounds_so_far",
    "plan_rounds",
    "report_search_failures",
    "round_options",
    "search_context",
    "stored_rounds_message",
    "takes_distributions",
]

# Its lines say what a run finds in its store: on stderr for a run that shows progress.
_log = START_LOG


@dataclass
class SearchJob:
    """One search of a run in rounds: its proposer, its part plans' builder, its refit.

    Parameters
    ----------
    key : int or None
        The outer fold whose training rows it searches (None: all data).
    proposer : Proposer
    builder : PartBuilder
    refit : bool
        Whether its winner is refitted (on the outer fold; on all data for None).
    """

    key: int | None
    proposer: Proposer
    builder: PartBuilder
    refit: bool


@dataclass
class RoundsJob:
    """A run in rounds: its base plan, its searches and the strategy's settings.

    ``seed`` is the run's seed (``random_state``): it seeds every round
    (:func:`~parcv.strategies.strategy.round_seed`) and so every draw of a
    strategy without a seed of its own; ``config`` is the strategy's
    ``config()``, stored with the run.
    """

    base: Plan
    searches: list[SearchJob]
    config: dict[str, Any]
    seed: int
    bound: int = 0


@dataclass
class _Search:
    job: SearchJob
    run: SearchRun
    history: list[FinishedRound] = field(default_factory=list)
    running: list[PartRun] = field(default_factory=list)
    index: int = 0  # the round it runs (or proposes next)
    done: bool = False


@dataclass
class _Rounds:
    """A run in rounds as it goes: the searches, their plans in flight, the store."""

    job: RoundsJob
    data: Dataset
    st: Store
    driver: Driver
    bar: Progress
    options: RunOptions
    searches: list[_Search]
    # The call's (its base plan's keys and fingerprint took its tokenizer): every round's
    # candidates are keyed with it, so the code they reach and the data are read once.
    keys: KeysOfACall
    by_pid: dict[int, tuple[_Search, PartRun]] = field(default_factory=dict)
    n_reused: int = 0
    n_units: int = 0
    changes: list[CodeChanges | None] = field(default_factory=list)
    # The content keys (and the run's own records) a round's part takes records of: a
    # sampler proposes a point again, and its trial's fits are those of the first trial.
    known: StoreKeys = field(default_factory=StoreKeys)

    def say_changes(self) -> None:
        """One line per cause of the records this run recomputed (or kept) for other code."""
        found = [c for c in self.changes if c is not None]
        if not found:
            return
        counts: dict[str, int] = {}
        for c in found:
            for cause, n in c.counts.items():
                counts[cause] = counts.get(cause, 0) + n
        joined = CodeChanges(counts, sum(c.n_units for c in found),
                             max(c.n_unidentified for c in found))  # fmt: skip
        for line in joined.lines(kept=self.options.resume == "values"):
            _log.info("%s", line)

    def _add(self, search: _Search, run: PartRun, round_row: RoundRow) -> None:
        """Ship a part (or refit) plan, look its units up in the store, schedule the rest."""
        plan, data = run.plan, self.data
        pid = self.driver.executor.add_plan(plan)
        run.pid = pid
        keys = content_keys(plan, data, call=self.keys)
        labels = CandidateLabels(plan.candidates)
        self.st.add_plan(pid, labels=labels, key_of=keys.key, folds=_plan_folds(plan),
                         partitions=_plan_partitions(plan), round=round_row,
                         identity_of=keys.identity, block_keys=keys.block_keys)  # fmt: skip
        with_model = self.options.save_models and run.round < 0 and search.job.key is None
        keep_code = self.options.resume == "values"
        reuse = _reuse(self.st, plan, keys, with_model=with_model, keep_code=keep_code, pid=pid,
                       known=self.known)  # fmt: skip
        done = reuse.done
        if self.options.retry_failed:  # failed units run again (as a plan's run does)
            done = {k: r for k, r in done.items() if r.ok}
        self.changes.append(reuse.changes)
        self.n_reused += len(done)
        self.n_units += plan.n_units
        if run.proposal is not None and search.job.key is None:  # the bar's best: on all data
            self.bar.watch(pid, len(plan.inner_folds[None]), **_bar_level(run.proposal))
        self.bar.update(list(done.values()), pid)
        lookup = None if reuse.lookup is None else partial(self._counted, reuse.lookup)
        schedule = start_schedule(plan, done=done, reuse=lookup, twins=reuse.twins)
        run.records = schedule.records
        versions = distribution_versions(keys.environments.values())
        self.driver.add(pid, plan, schedule, versions=versions)
        self.by_pid[pid] = (search, run)

    def _counted(self, lookup: Callable[[Unit], Record | None], unit: Unit) -> Record | None:
        """A refit's stored record (looked up once, when its fits are in), counted as reused."""
        found = lookup(unit)
        self.n_reused += found is not None
        return found

    def propose(self, search: _Search) -> None:
        """Ask the search for its next round and start it; or refit its winner when done."""
        job = search.job
        seed = round_seed(self.job.seed, job.key, search.index)
        proposal = job.proposer.propose(tuple(search.history), seed)
        if proposal is None:
            search.run.choice = job.proposer.choose(tuple(search.history))
            self._show_winner(search)
            self._refit(search)
            return
        decision = json.dumps(_plain(proposal.decision), sort_keys=True)
        for line in proposal.decision.get("log", ()):
            VERBOSE_LOG.info("%s", line)  # scikit-learn's verbose lines (halving's rungs)
        for p, part in enumerate(proposal.parts):
            rows_seed = part.subsample_seed
            if part.n_rows is not None and rows_seed is None:
                rows_seed = subsample_seed(seed, p)  # the round's: the same on every run
            plan = job.builder.build(part.candidates, n_rows=part.n_rows,
                                     subsample_seed=rows_seed, window=part.window,
                                     starts=self._starts(search, part),
                                     keep_fitted=part.keep_fitted)  # fmt: skip
            run = PartRun(-1, job.key, search.index, p, plan, {}, part, dict(proposal.decision))
            row = RoundRow(json.dumps(job.key), search.index, p,
                           _describe(plan, part, rows_seed), decision)  # fmt: skip
            self._add(search, run, row)
            search.running.append(run)
            search.run.parts.append(run)

    def _show_winner(self, search: _Search) -> None:
        """The bar's best, once the search on all data chose: its winner's CV score."""
        choice = search.run.choice
        if search.job.key is not None or choice is None:
            return
        chosen = search.history[choice.round].parts[choice.part]
        self.bar.set_best(float(chosen.means[choice.row]), _bar_level(chosen.part)["where"])

    @staticmethod
    def _starts(search: _Search, part: Part) -> dict[Key, KeptFit]:
        """The fits a part continues: the kept ones of its label's part of the round before."""
        if part.continues is None or part.grows is None or search.index == 0:
            return {}
        before = [r for r in search.run.parts
                  if r.round == search.index - 1 and r.proposal is not None
                  and r.proposal.label == part.label]  # fmt: skip
        if not before:
            return {}
        return continued(before[0].plan, before[0].records, part.continues, part.grows)

    def _refit(self, search: _Search) -> None:
        """Refit the winner of a search that stopped (or finish it, without refit)."""
        job, choice = search.job, search.run.choice
        if not job.refit or choice is None:
            search.done = True
            return
        chosen = search.run.rounds()[choice.round][choice.part]
        params = dict(chosen.plan.candidates[choice.row].params)
        plan = refit_plan(self.job.base, job.key, params)
        run = PartRun(-1, job.key, -1, -1, plan, {})
        row = RoundRow(json.dumps(job.key), -1, -1, _describe(plan, None), "{}")
        self._add(search, run, row)
        search.run.refit = run
        search.running.append(run)

    def finished(self, pid: int) -> None:
        """A plan's records are all in: advance its search if its round (or refit) is done."""
        search, run = self.by_pid.pop(pid)
        search.running.remove(run)
        if search.running:
            return  # another part of the round still runs
        if run.round < 0:
            search.done = True
            return
        parts = [r for r in search.run.parts if r.round == search.index]
        finished = tuple(finished_part(r.proposal, r.plan, r.records) for r in parts)  # type: ignore[arg-type]
        proposal = Round(tuple(r.proposal for r in parts), parts[0].decision)  # type: ignore[misc]
        search.history.append(FinishedRound(proposal, finished))
        search.index += 1
        self.propose(search)

    def store(self, pid: int, records: Sequence[Record]) -> None:
        """Commit a batch of plan ``pid``'s new records; advance the bar."""
        self.st.add(records, pid)
        if self.by_pid[pid][1].round >= 0:  # a round's part (a refit is its search's own)
            self.known.add(records, partial(self.st.key, pid=pid), stored=self.st.path is not None)
        self.bar.update(records, pid)


def takes_distributions(strategy: Strategy) -> bool:
    """Whether a strategy proposes from distributions (a sampler), not a space's points."""
    return bool(getattr(strategy, "takes_distributions", False))


def round_options(strategy: Strategy, o: Mapping[str, Any]) -> RoundOptions:
    """The options every part plan of a run shares, from the call's and the strategy's.

    A strategy scores iteration paths when it has ``iterations`` (early stopping).
    A part subsamples its folds as it says (``Part.n_rows``, ``Part.subsample_seed``).
    """
    return RoundOptions(
        scoring=o["scoring"], refit=o["refit"], error_score=o["error_score"],
        return_train_score=o["return_train_score"], racing=o.get("racing"),
        iterations=getattr(strategy, "iterations", None),
        predictions=o.get("return_predictions", False),
        bbc=_wants_bbc(o), confidence=o.get("confidence", 0.9),
    )  # fmt: skip


def fixed_candidates(strategy: Strategy) -> bool:
    """Whether a strategy scores candidates fixed before any score, each on every row.

    A strategy says so with ``fixed_candidates = True`` (one round of a grid,
    :class:`~parcv.strategies.strategy.OneRound`): BBC-CV of its selection then
    applies. A sampler proposes from the scores before, halving and early stopping
    drop candidates: theirs is no choice among a fixed set.
    """
    return bool(getattr(strategy, "fixed_candidates", False))


def _wants_bbc(o: Mapping[str, Any]) -> bool:
    interval = o.get("interval")
    return o.get("bbc") is True or (isinstance(interval, str) and interval == "bbc")


def _interval_options(o: Mapping[str, Any]) -> dict[str, Any]:
    """A nested CV's ``interval=`` options as :func:`~parcv.plan.parts.base_plan` takes them."""
    interval = o.get("interval")
    if interval is None or (isinstance(interval, str) and interval == "bbc"):
        return {"confidence": o.get("confidence", 0.9)}  # BBC-CV's: RoundOptions asks for it
    return {k: o[k] for k in ("interval", "confidence", "ncv_repetitions", "ncv_random_state")
            if k in o}  # fmt: skip


def check_round_interval(strategy: Strategy, o: Mapping[str, Any]) -> None:
    """Refuse BBC-CV of a strategy whose candidates are not a fixed set, before any fit.

    ``interval="ncv"`` takes every strategy: each of its selections is the
    strategy's search on the selection's training rows, as an outer fold's is.

    Raises
    ------
    ValueError
        BBC-CV (``interval="bbc"`` or ``bbc=True``) asked of a strategy that is
        not :func:`fixed_candidates`, or of a nested CV without ``refit``.
    """
    if not _wants_bbc(o):
        return
    asked = "interval='bbc'" if o.get("interval") == "bbc" else "bbc=True"
    if not fixed_candidates(strategy):
        raise ValueError(
            f"BBC-CV ({asked}) does not combine with strategy {strategy.name!r}: BBC-CV "
            "bootstraps the choice among a fixed set of candidates, each scored on every row "
            f"of the search on all data, and {strategy.name} proposes its candidates from the "
            "scores of those before it, or stops some early: there is no such set, and the "
            "bootstrap would miss the optimism of the search. Pass interval='ncv' instead "
            "(it reruns the whole search on each of its train/test pairs), or search a grid "
            "without strategy= for BBC-CV."
        )
    if o.get("refit") is False:
        raise ValueError(
            f"{asked} corrects the CV score of the candidate selected on all data; this run "
            "has no search on all data (refit=False). Pass refit=True, or drop it."
        )


def search_context(
    base: Plan,
    space: Any,
    estimator: Any,
    data: Dataset,
    key: int | None,
    *,
    points: bool,
    cv: Any = None,
) -> SearchContext:
    """What the search on outer fold ``key`` (None: all data) knows before its first round."""
    rows = base.rows_of(key)
    n_classes = None
    if is_classifier(estimator) and data.y is not None:
        n_classes = len(np.unique(np.asarray(data.y)[rows]))
    candidates = tuple(dict(c.params) for c in base.candidates) if points else ()
    n_splits = len(base.inner_folds[key])
    metrics = tuple(dict.fromkeys(base.scoring.suffix(n) for n in base.scoring.scorers))
    return SearchContext(candidates, space, estimator, int(rows.size), n_splits, n_classes,
                         base.scoring.refit, key, cv, metrics)  # fmt: skip


def plan_rounds(
    kind: str,
    estimator: Any,
    space: Any,
    data: Dataset,
    strategy: Strategy,
    o: Mapping[str, Any],
) -> tuple[RoundsJob, dict[int | None, SearchContext]]:
    """The job of a run in rounds, and what each search knows; everything checked, nothing run.

    ``o`` holds the call's options: ``cv`` (the inner CV), ``outer`` (nested CV),
    ``scoring``, ``refit``, ``error_score``, ``return_train_score``, ``racing``,
    ``random_state`` (the run's seed, None for 0: it seeds every round);
    a nested CV's ``interval``, ``bbc``, ``confidence``, ``ncv_repetitions`` and
    ``ncv_random_state`` too. One search per outer fold -- the nested CV
    interval's selections included (:attr:`~parcv.plan.build.Plan.nested_outers`)
    -- and one on all data (for a search, or with ``refit``); each strategy
    starts a proposer per search (its checks run here).
    """
    check_round_interval(strategy, o)
    options = round_options(strategy, o)
    points = not takes_distributions(strategy)
    base = base_plan(estimator, space if points else None, data, inner=o["cv"],
                     outer=o.get("outer"), options=options,
                     interval=_interval_options(o))  # fmt: skip
    keys: list[int | None] = list(range(len(base.outer_folds)))
    if kind == "search" or o["refit"] is not False:
        keys.append(None)
    contexts = {k: search_context(base, space, estimator, data, k, points=points, cv=o["cv"])
                for k in keys}  # fmt: skip
    searches = [
        SearchJob(k, strategy.start(contexts[k]), PartBuilder(estimator, data, base, k, options),
                  refit=(k is not None) or o["refit"] is not False)
        for k in keys
    ]  # fmt: skip
    bound = sum(strategy.schedule(contexts[k]).n_units for k in keys)
    config = strategy.config()
    seed = o.get("random_state")
    return RoundsJob(base, searches, config, 0 if seed is None else int(seed), bound), contexts


def _plain(value: Any) -> Any:
    """A decision as JSON-ready values (numpy scalars and tuples made plain)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def _bar_level(part: Part) -> dict[str, Any]:
    """Where a part's candidates stand for the bar's best (see :meth:`Progress.watch`).

    Scores on a subsample of the rows (``n_rows``) or at a resource (a rung) are
    compared only with those at the largest so far, on all rows above any subsample:
    halving selects from its last rung. The rows of a part with a ``window`` are
    checkpoints, each a candidate of its own at its own count, compared with every
    other (as early stopping selects).
    """
    resource = part.resource if part.window is None else None
    rows = math.inf if part.n_rows is None else float(part.n_rows)
    level = (rows, -math.inf if resource is None else float(resource))
    where = ""
    if resource is not None:
        where = f"at n_resources={resource}"
    elif part.n_rows is not None:
        where = f"on {part.n_rows} rows"
    return {"level": level, "where": where}


def _describe(plan: Plan, part: Any, rows_seed: Any = None) -> str:
    """A part plan's description for the store: its plan, and the part as proposed.

    ``rows_seed`` is the seed its subsample was drawn with (an int; None for none,
    or for a RandomState, whose rows the plan's folds hold).
    """
    meta = json.loads(plan_meta(plan, "search", "")["plan"])
    if part is not None:
        meta["part"] = {
            "ids": list(part.ids),
            "n_rows": part.n_rows,
            "subsample_seed": rows_seed if isinstance(rows_seed, int) else None,
            "resource": part.resource,
            "window": None if part.window is None else list(part.window),
            "label": part.label,
            "candidates": [params_plain(c) for c in part.candidates],
        }
    return json.dumps(meta)


def _meta(job: RoundsJob, data: Dataset, kind: str, tokenizer: Tokenizer) -> dict[str, str]:
    meta = plan_meta(job.base, kind, "")
    digest = token_hex(
        fingerprint(job.base, data, tokenizer=tokenizer), json.dumps(job.config, sort_keys=True)
    )
    meta["fingerprint"] = digest
    meta["strategy"] = json.dumps(job.config, sort_keys=True)
    meta["seed"] = str(job.seed)
    # What the partial view of an unfinished run needs: the searches it will have (one may
    # not have started) and whether each refits its winner; the strategy's bound.
    meta["searches"] = json.dumps([[s.key, s.refit] for s in job.searches])
    meta["bound"] = str(job.bound)
    return meta


def execute_rounds(
    job: RoundsJob, data: Dataset, kind: str, options: RunOptions
) -> list[SearchRun]:
    """Run every search of ``job`` in rounds, holding the store's writer lock.

    Parameters
    ----------
    job : RoundsJob
    data : Dataset
    kind : {"search", "nested_cv"}
        Which result the run makes (kept in the store for ``parcv.load``).
    options : RunOptions

    Returns
    -------
    list of SearchRun
        Each search's parts with their records, its winner and its refit.

    Raises
    ------
    RunInterrupted
        On Ctrl-C: finished records are stored; the message says how to resume.
    """
    path = check_store(options.store)
    with nullcontext() if path is None else lock_store(path):
        try:
            return _execute(job, data, kind, options)
        except (sqlite3.Error, OSError) as err:  # a full disk, a page SQLite cannot use
            failure = _store_failure(path, err)
            if failure is None:
                raise
            raise failure from err


def _execute(job: RoundsJob, data: Dataset, kind: str, options: RunOptions) -> list[SearchRun]:
    base = job.base
    call = KeysOfACall(Tokenizer())
    keys = content_keys(base, data, call=call)
    before = _stored_before(options)  # the store's units of its last run, which _open forgets
    st = _open(base, data, kind, options.store, keys, resume=options.resume,
               overwrite=options.overwrite, journal=options.journal,
               meta=_meta(job, data, kind, call.tokenizer))  # fmt: skip
    show = check_progress(
        True if options.progress is None and options.verbose else options.progress
    )
    searches = [_Search(j, SearchRun(j.key)) for j in job.searches]
    with store_session(st):
        # The strategy's bound and each search's refit: the bar ends at the units run.
        bound = job.bound + sum(j.refit for j in job.searches)
        bar = Progress(bound, show, metric=base.scoring.refit if show else None)
        n_stored = st.n_records()
        if n_stored and before is not None:
            _log.info("%s", rounds_reuse_message(kept_kinds(before), job.bound))
        try:
            with verbose_output(options.verbose), options.resolved_backend.open(base, data) as ex:
                rounds = _Rounds(job, data, st, Driver(ex), bar, options, searches, call,
                                 known=_store_keys(st, n_stored))  # fmt: skip
                for search in searches:
                    rounds.propose(search)
                with frozen_heap(job.bound):
                    _drive(rounds)
            bar.finish()
            if n_stored:
                refitted = options.save_models is False and any(
                    j.key is None and j.refit for j in job.searches
                )  # a final model is reused only with its saved model
                _log.info(
                    "%s", reused_message(rounds.n_reused, rounds.n_units, final_refit=refitted)
                )
                rounds.say_changes()
            st.set_meta({"choices": json.dumps(_choices(searches))})
        except KeyboardInterrupt as err:
            # Every plan's units (the rounds' parts and refits), as the resume counts them.
            kept = kept_kinds(st.stored_kinds())
            raise RunInterrupted(_interrupt_text(options.store, kept, None)) from err
        finally:
            bar.close()
        final = next((s.run.refit for s in searches if s.job.key is None), None)
        record = None if final is None else final.records.get(("final",))
        if options.save_models and record is not None:
            _save_final(st, record, pid=final.pid)  # type: ignore[union-attr]
    # Once for the whole run: its searches, rounds, brackets and refits are one call's fits.
    reemit_unit_warnings(
        run.records for s in searches for run in [*s.run.parts, s.run.refit] if run is not None
    )
    for search in searches:
        report_search_failures(search.run)
    return [s.run for s in searches]


def report_search_failures(search: SearchRun) -> None:
    """Warn about each part's failed fits; raise when every fit of every round failed.

    A round whose every fit failed (a sampler's one trial at ``batch=1``) is
    not the end: its trial is told as failed and the search goes on, as
    Optuna's ``study.optimize(catch=...)``. Only a search with nothing to select
    is an error.

    Raises
    ------
    FitFailedError
        Every fit of every round of the search failed.
    """
    fits = [run.records[k] for run in search.parts for k in run.plan.fit_record_keys(None)
            if k in run.records]  # fmt: skip
    if fits and not any(r.ok for r in fits):
        where = "all data" if search.key is None else f"outer fold {search.key}"
        n_rounds = len(search.rounds())
        raise FitFailedError(Worded((
            f"\nAll the {len(fits)} fits failed.\n"
            "It is very likely that your model is misconfigured.\n"
            "You can try to debug the error by setting ", error_score_setting("raise"), ".\n"
            f"parcv: every candidate of every round of the search on {where} failed "
            f"({n_rounds} round{'s' * (n_rounds != 1)}): {len(fits)} failed fits; nothing can "
            f"be selected.\n\nBelow are more details about the failures:\n{failure_details(fits)}",
        )))  # fmt: skip
    for run in search.parts:
        report_fit_failures(run.plan, run.records, alone=False)
    if search.refit is not None:
        report_fit_failures(search.refit.plan, search.refit.records)


def _store_keys(st: Store, n_stored: int) -> StoreKeys:
    """The content keys the store holds as the run opens it (none without a store)."""
    if st.path is None:
        return StoreKeys()
    present = read_ckeys(Path(st.path)) if n_stored else set()
    return StoreKeys(present, earlier=n_stored > 0,
                     unidentified=n_stored > 0 and st.n_unidentified() > 0)  # fmt: skip


def _stored_before(options: RunOptions) -> dict[str, int] | None:
    """The units a store to resume holds of its last run, by kind (None: not a resume)."""
    path = check_store(options.store)
    if not options.resume or path is None or not path.is_file():
        return None
    try:
        return read_stored_kinds(path)
    except (sqlite3.DatabaseError, ParcvError):
        return None  # not a store this run can add to: opening it says why, at once


def stored_rounds_message(path: Path, bound: int) -> str:
    """What a resume of a run in rounds finds in the store at ``path``, before it runs.

    See :func:`~parcv.engine.session.rounds_reuse_message`; ``bound`` is the
    strategy's bound on the fits of every search's rounds.
    """
    return rounds_reuse_message(kept_kinds(read_stored_kinds(path)), bound)


def _choices(searches: Sequence[_Search]) -> dict[str, list[Any]]:
    """Each search's winner, by its key as JSON: what ``load`` needs beside the rounds.

    A winner's ``decision`` (what the strategy decided from its last round) follows
    its row where it has one; a store of an older parcv holds the three numbers only.
    """
    out: dict[str, list[Any]] = {}
    for s in searches:
        c = s.run.choice
        if c is not None:
            decision = [_plain(dict(c.decision))] if c.decision else []
            out[json.dumps(s.job.key)] = [c.round, c.part, c.row, *decision]
    return out


def _proposal(described: Mapping[str, Any] | None) -> Part | None:
    """A part as its plan's description in the store gives it back (None: a refit)."""
    if described is None:
        return None
    window = described.get("window")
    return Part(
        tuple(dict(c) for c in described["candidates"]), tuple(described["ids"]),
        n_rows=described.get("n_rows"), subsample_seed=described.get("subsample_seed"),
        resource=described.get("resource"), window=None if window is None else tuple(window),
        label=described.get("label", ""),
    )  # fmt: skip


def load_rounds(
    path: Path, meta: dict[str, str], *, load_models: bool = False
) -> tuple[Plan, list[SearchRun], dict[str, Any]]:
    """Read a run in rounds back: its base plan, each search's parts and refit, the strategy.

    Nothing is recomputed: the parts are the plans the run stored (their
    folds, descriptions and decisions), with their records by plan id, and each
    search's winner is the one the run chose.

    Raises
    ------
    UnfinishedRunError
        The run stopped before every search chose its winner (it says how far
        it got: :func:`load_rounds_so_far` gives that view).
    """
    config = json.loads(meta["strategy"])
    choices = json.loads(meta.get("choices", "null"))
    if choices is None:
        so_far = _partial(path, meta)
        raise UnfinishedRunError(
            f"store {str(path)!r} holds a run in rounds ({config.get('name')}) that stopped "
            f"before every search chose its winner: {so_far.n_done} of {so_far.n_units} units "
            f"done; missing {'; '.join(so_far.missing)}. Run the same call again with "
            "resume=True (command line: parcv run SPEC --out DIR --resume): it reads every "
            "stored unit back and fits only the rest; or load(store, partial=True) to see "
            "the rounds done so far."
        )
    base = plan_from_store(meta, path)
    searches = _read_searches(path)
    for key, search in searches.items():
        round_, part, row, *decision = choices[json.dumps(key)]
        search.choice = Choice(round_, part, row, *decision)  # a decision: stored where made
        refit = search.refit
        final = None if refit is None else refit.records.get(("final",))
        if final is not None and refit is not None:
            refit.records = dict(refit.records)
            refit.records[("final",)] = replace(
                final, estimator=final_model(path, load_models=load_models)
            )
    return base, list(searches.values()), config


def load_rounds_so_far(path: Path, meta: dict[str, str]) -> PartialResult | None:
    """Read an unfinished run in rounds back as far as it got (None: it finished).

    Each search's parts and refit are the plans the run stored so far, with the
    records stored so far (of a run interrupted, or still running elsewhere):
    see :func:`~parcv.results.rounds.make_partial_rounds_result`.
    """
    if "choices" in meta:
        return None
    return _partial(path, meta)


def _partial(path: Path, meta: dict[str, str]) -> PartialResult:
    base = plan_from_store(meta, path)
    searches = _read_searches(path)
    progress = {run.pid: missing_of_expected(run.plan, run.records)
                for search in searches.values() for run in search.parts}  # fmt: skip
    for search in searches.values():
        if search.refit is not None:  # its one unit (its plan, read back, names every fold)
            refit: Key = ("final",) if search.key is None else ("refit", search.key)
            progress[search.refit.pid] = ([refit] if refit not in search.refit.records else [], 1)
    if "searches" in meta:
        refitted = {key: bool(refit) for key, refit in json.loads(meta["searches"])}
    else:  # a store of an older parcv: the searches that started, each refitted
        refitted = {key: True for key in sorted(searches, key=lambda k: (k is None, k or 0))}
    bound = int(meta["bound"]) if "bound" in meta else None
    return make_partial_rounds_result(meta["kind"], base, list(searches.values()),
                                      json.loads(meta["strategy"]), progress,
                                      refitted=refitted, bound=bound)  # fmt: skip


def _read_searches(path: Path) -> dict[int | None, SearchRun]:
    """Each search's parts and refit as the store holds them, with their records."""
    searches: dict[int | None, SearchRun] = {}
    # One connection for every plan: a sampler's run holds a plan per trial.
    with reading(path) as conn:
        for pid, row in read_rounds(path).items():
            key = json.loads(row.search)
            described = json.loads(row.plan)
            plan = plan_from_store({"plan": row.plan}, path, pid, conn=conn)
            records = read_records(path, pid, conn=conn)
            for unit, causes in read_kept(path, pid, conn=conn).items():  # resume="values"
                if unit in records:
                    records[unit] = replace(records[unit], kept=causes)
            run = PartRun(pid, key, row.round, row.part, plan, records,
                          _proposal(described.get("part")), json.loads(row.decision))  # fmt: skip
            search = searches.setdefault(key, SearchRun(key))
            if row.round < 0:
                search.refit = run
            else:
                search.parts.append(run)
    return searches


def _drive(rounds: _Rounds) -> None:
    """Run until every search is done: store each batch, advance each finished plan."""
    driver = rounds.driver
    while True:
        for pid in [p for p in rounds.by_pid if driver.complete(p)]:
            held = driver.finish(pid)
            if held:
                rounds.store(pid, held)
            rounds.finished(pid)
        if not driver.busy:
            if rounds.by_pid:
                continue  # plans whose records were all stored already: advance them
            break
        for pid, batch in driver.step():
            if batch:
                rounds.store(pid, batch)
