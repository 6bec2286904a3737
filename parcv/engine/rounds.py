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
import logging
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import is_classifier

from parcv.engine.options import RunOptions
from parcv.engine.progress import VERBOSE_LOG, Progress, check_progress, verbose_output
from parcv.engine.runner import Driver, distribution_versions, frozen_heap, start_schedule
from parcv.engine.session import (
    CodeChanges,
    _interrupt_text,
    _open,
    _plan_folds,
    _plan_partitions,
    _reuse,
    _save_final,
    final_model,
    plan_from_store,
    plan_meta,
    reuse_message,
)
from parcv.errors import RunInterrupted, UnfinishedRunError
from parcv.plan.build import Plan, fingerprint
from parcv.plan.data import Dataset
from parcv.plan.keys import content_keys
from parcv.plan.parts import PartBuilder, RoundOptions, base_plan, continued, refit_plan
from parcv.plan.records import Key, Record
from parcv.plan.tokens import token_hex
from parcv.results.aggregate import report_fit_failures
from parcv.results.rounds import PartRun, SearchRun, finished_part
from parcv.store.lock import lock_store
from parcv.store.sqlite import (
    RoundRow,
    Store,
    check_store,
    params_json,
    read_kept,
    read_records,
    read_rounds,
    store_session,
)
from parcv.strategies.strategy import (
    Choice,
    FinishedRound,
    Part,
    Proposer,
    Round,
    SearchContext,
    Strategy,
    round_seed,
)

__all__ = [
    "RoundsJob",
    "SearchJob",
    "execute_rounds",
    "load_rounds",
    "plan_rounds",
    "round_options",
    "search_context",
    "takes_distributions",
]

_log = logging.getLogger("parcv")


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

    ``seed`` seeds every round (:func:`~parcv.strategies.strategy.round_seed`);
    ``config`` is the strategy's ``config()``, stored with the run.
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
    by_pid: dict[int, tuple[_Search, PartRun]] = field(default_factory=dict)
    n_reused: int = 0
    n_units: int = 0
    changes: list[CodeChanges | None] = field(default_factory=list)

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
        keys = content_keys(plan, data)
        labels = tuple((c.id, params_json(c.params)) for c in plan.candidates)
        self.st.add_plan(pid, labels=labels, key_of=keys.key, folds=_plan_folds(plan),
                         partitions=_plan_partitions(plan), round=round_row,
                         identity_of=keys.identity, block_keys=keys.block_keys)  # fmt: skip
        with_model = self.options.save_models and run.round < 0 and search.job.key is None
        keep_code = self.options.resume == "values"
        reuse = _reuse(self.st, plan, keys, with_model=with_model, keep_code=keep_code, pid=pid)
        done = reuse.done
        if self.options.retry_failed:  # failed units run again (as a plan's run does)
            done = {k: r for k, r in done.items() if r.ok}
        self.changes.append(reuse.changes)
        self.n_reused += len(done)
        self.n_units += plan.n_units
        self.bar.update(list(done.values()))
        schedule = start_schedule(plan, done=done, reuse=reuse.lookup, twins=reuse.twins)
        run.records = schedule.records
        versions = distribution_versions(keys.environments.values())
        self.driver.add(pid, plan, schedule, versions=versions)
        self.by_pid[pid] = (search, run)

    def propose(self, search: _Search) -> None:
        """Ask the search for its next round and start it; or refit its winner when done."""
        job = search.job
        seed = round_seed(self.job.seed, job.key, search.index)
        proposal = job.proposer.propose(tuple(search.history), seed)
        if proposal is None:
            search.run.choice = job.proposer.choose(tuple(search.history))
            self._refit(search)
            return
        decision = json.dumps(_plain(proposal.decision), sort_keys=True)
        for line in proposal.decision.get("log", ()):
            VERBOSE_LOG.info("%s", line)  # scikit-learn's verbose lines (halving's rungs)
        for p, part in enumerate(proposal.parts):
            plan = job.builder.build(part.candidates, n_rows=part.n_rows, window=part.window,
                                     starts=self._starts(search, part),
                                     keep_fitted=part.keep_fitted)  # fmt: skip
            run = PartRun(-1, job.key, search.index, p, plan, {}, part, dict(proposal.decision))
            row = RoundRow(json.dumps(job.key), search.index, p, _describe(plan, part),
                           decision)  # fmt: skip
            self._add(search, run, row)
            search.running.append(run)
            search.run.parts.append(run)

    @staticmethod
    def _starts(search: _Search, part: Part) -> dict[Key, Any]:
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
        self.bar.update(records)


def takes_distributions(strategy: Strategy) -> bool:
    """Whether a strategy proposes from distributions (a sampler), not a space's points."""
    return bool(getattr(strategy, "takes_distributions", False))


def round_options(strategy: Strategy, o: Mapping[str, Any]) -> RoundOptions:
    """The options every part plan of a run shares, from the call's and the strategy's.

    A strategy scores iteration paths when it has ``iterations`` (early stopping);
    it subsamples each fold when it has ``subsample_seed()`` (a rows resource).
    """
    seeded = getattr(strategy, "subsample_seed", None)
    return RoundOptions(
        scoring=o["scoring"], refit=o["refit"], error_score=o["error_score"],
        return_train_score=o["return_train_score"], racing=o.get("racing"),
        iterations=getattr(strategy, "iterations", None),
        predictions=o.get("return_predictions", False),
        subsample_seed=None if seeded is None else seeded(),
    )  # fmt: skip


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
    return SearchContext(candidates, space, estimator, int(rows.size), n_splits, n_classes,
                         base.scoring.refit, key, cv)  # fmt: skip


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
    ``scoring``, ``refit``, ``error_score``, ``return_train_score``, ``racing``.
    One search per outer fold, and one on all data (for a search, or with
    ``refit``); each strategy starts a proposer per search (its checks run here).
    """
    options = round_options(strategy, o)
    points = not takes_distributions(strategy)
    base = base_plan(estimator, space if points else None, data, inner=o["cv"],
                     outer=o.get("outer"), options=options)  # fmt: skip
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
    return RoundsJob(base, searches, config, int(config.get("seed") or 0), bound), contexts


def _plain(value: Any) -> Any:
    """A decision as JSON-ready values (numpy scalars and tuples made plain)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def _describe(plan: Plan, part: Any) -> str:
    """A part plan's description for the store: its plan, and the part as proposed."""
    meta = json.loads(plan_meta(plan, "search", "")["plan"])
    if part is not None:
        meta["part"] = {
            "ids": list(part.ids),
            "n_rows": part.n_rows,
            "resource": part.resource,
            "window": None if part.window is None else list(part.window),
            "label": part.label,
            "candidates": [json.loads(params_json(c)) for c in part.candidates],
        }
    return json.dumps(meta)


def _meta(job: RoundsJob, data: Dataset, kind: str) -> dict[str, str]:
    meta = plan_meta(job.base, kind, "")
    digest = token_hex(fingerprint(job.base, data), json.dumps(job.config, sort_keys=True))
    meta["fingerprint"] = digest
    meta["strategy"] = json.dumps(job.config, sort_keys=True)
    meta["seed"] = str(job.seed)
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
        return _execute(job, data, kind, options)


def _execute(job: RoundsJob, data: Dataset, kind: str, options: RunOptions) -> list[SearchRun]:
    base = job.base
    keys = content_keys(base, data)
    st = _open(base, data, kind, options.store, keys, resume=options.resume,
               overwrite=options.overwrite, journal=options.journal,
               meta=_meta(job, data, kind))  # fmt: skip
    show = check_progress(
        True if options.progress is None and options.verbose else options.progress
    )
    searches = [_Search(j, SearchRun(j.key)) for j in job.searches]
    with store_session(st):
        bar = Progress(job.bound, show)
        n_stored = st.n_records()
        try:
            with verbose_output(options.verbose), options.resolved_backend.open(base, data) as ex:
                rounds = _Rounds(job, data, st, Driver(ex), bar, options, searches)
                for search in searches:
                    rounds.propose(search)
                with frozen_heap(job.bound):
                    _drive(rounds)
            if n_stored:
                _log.info("%s", reuse_message(rounds.n_reused, rounds.n_units))
                rounds.say_changes()
            st.set_meta({"choices": json.dumps(_choices(searches))})
        except KeyboardInterrupt as err:
            n = st.n_units()
            kept = f"{n:,} finished unit{'s' * (n != 1)}"
            raise RunInterrupted(_interrupt_text(options.store, kept, None)) from err
        finally:
            bar.close()
        final = next((s.run.refit for s in searches if s.job.key is None), None)
        record = None if final is None else final.records.get(("final",))
        if options.save_models and record is not None:
            _save_final(st, record, pid=final.pid)  # type: ignore[union-attr]
    for search in searches:
        for run in [*search.run.parts, *([search.run.refit] if search.run.refit else [])]:
            report_fit_failures(run.plan, run.records)
    return [s.run for s in searches]


def _choices(searches: Sequence[_Search]) -> dict[str, list[int]]:
    """Each search's winner, by its key as JSON: what ``load`` needs beside the rounds."""
    return {json.dumps(s.job.key): [c.round, c.part, c.row]
            for s in searches if (c := s.run.choice) is not None}  # fmt: skip


def _proposal(described: Mapping[str, Any] | None) -> Part | None:
    """A part as its plan's description in the store gives it back (None: a refit)."""
    if described is None:
        return None
    window = described.get("window")
    return Part(
        tuple(dict(c) for c in described["candidates"]), tuple(described["ids"]),
        n_rows=described.get("n_rows"), resource=described.get("resource"),
        window=None if window is None else tuple(window), label=described.get("label", ""),
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
        The run stopped before every search chose its winner.
    """
    base = plan_from_store(meta, path)
    config = json.loads(meta["strategy"])
    choices = json.loads(meta.get("choices", "null"))
    if choices is None:
        raise UnfinishedRunError(
            f"store {str(path)!r} holds a run in rounds ({config.get('name')}) that stopped "
            "before every search chose its winner. Run the same call again with resume=True "
            "(command line: parcv run SPEC --out DIR --resume): it reads every stored unit "
            "back and fits only the rest."
        )
    searches: dict[int | None, SearchRun] = {}
    for pid, row in read_rounds(path).items():
        key = json.loads(row.search)
        described = json.loads(row.plan)
        plan = plan_from_store({"plan": row.plan}, path, pid)
        records = read_records(path, pid)
        for unit, causes in read_kept(path, pid).items():  # kept by resume="values"
            if unit in records:
                records[unit] = replace(records[unit], kept=causes)
        run = PartRun(pid, key, row.round, row.part, plan, records,
                      _proposal(described.get("part")), json.loads(row.decision))  # fmt: skip
        search = searches.setdefault(key, SearchRun(key))
        if row.round < 0:
            search.refit = run
        else:
            search.parts.append(run)
    for key, search in searches.items():
        search.choice = Choice(*choices[json.dumps(key)])
        refit = search.refit
        final = None if refit is None else refit.records.get(("final",))
        if final is not None and refit is not None:
            refit.records = dict(refit.records)
            refit.records[("final",)] = replace(
                final, estimator=final_model(path, load_models=load_models)
            )
    return base, list(searches.values()), config


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
