"""Results of a search run in rounds: what a strategy reads of a part, and the whole result.

Every part of a round is an ordinary search plan with its records; this module
reads them two ways. :func:`finished_part` gives a strategy the scores it
decides on (the same means ``cv_results_`` shows). :func:`make_rounds_result`
joins the parts of a search as its strategy says: the rungs of successive
halving into a :class:`~parcv.results.halving.HalvingResult`, Hyperband's
brackets into a :class:`~parcv.results.halving.HyperbandResult`, or every
part on the same folds (a sampler's trials, early stopping's windows) into one
:class:`~parcv.results.objects.SearchResult`; a nested run adds the outer
folds' refits. A run and ``parcv.load`` of its store call the same functions
on the same parts, so they return equal results.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from parcv.plan.build import Plan
from parcv.plan.iterations import Iterations, expand_paths
from parcv.plan.kinds import Key
from parcv.plan.records import Record, Unit
from parcv.plan.space import Candidate
from parcv.plan.tokens import token_hex
from parcv.results.aggregate import failed_everywhere, fold_scores, race_mask
from parcv.results.assemble import make_search_result, nested_intervals
from parcv.results.halving import (
    HyperbandResult,
    NestedRoundsResult,
    make_halving_result,
    make_hyperband_result,
    make_nested_rounds_result,
)
from parcv.results.objects import CVResult, FinalModel, SearchResult
from parcv.results.partial import PartialResult, RoundPart, make_partial_result
from parcv.strategies.strategy import Choice, FinishedPart, FinishedRound, Part, Round

__all__ = [
    "PartRun",
    "SearchRun",
    "finished_part",
    "finished_rounds",
    "make_partial_rounds_result",
    "make_rounds_result",
]


@dataclass
class PartRun:
    """One part plan of a run, with its records (graph keys of the part's own plan).

    ``round`` is -1 for the refit after a search (``part`` -1 too).
    """

    pid: int
    key: int | None
    round: int
    part: int
    plan: Plan
    records: MutableMapping[Key, Record]
    proposal: Part | None = None
    decision: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class SearchRun:
    """Everything one search of a run did: its rounds' parts, its winner and its refit."""

    key: int | None
    parts: list[PartRun] = field(default_factory=list)
    choice: Choice | None = None
    refit: PartRun | None = None

    def rounds(self) -> list[list[PartRun]]:
        """The parts by round, in order."""
        out: list[list[PartRun]] = []
        for run in self.parts:
            while len(out) <= run.round:
                out.append([])
            out[run.round].append(run)
        return out


def _row_ids(plan: Plan, part: Part) -> tuple[int, ...]:
    """Each candidate row's id: its path's point for an iteration path, else its own."""
    if not plan.paths:
        return part.ids
    ids = [0] * len(plan.candidates)
    for p, path in enumerate(plan.paths):
        for c in path:
            ids[c] = part.ids[p]
    return tuple(ids)


def _part_search(plan: Plan, records: Mapping[Key, Record]) -> SearchResult:
    """One part's SearchResult; a part whose every fit failed (a failed trial) selects nothing.

    Its search chooses over all its rounds: only a search with nothing to
    select is an error (``parcv.engine.rounds``). Its warnings are left to the
    whole result (said once).
    """
    failed = len(failed_everywhere(plan, records, None)) == len(plan.candidates)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_search_result(plan, records, best=0 if failed else None)


def finished_part(part: Part, plan: Plan, records: Mapping[Key, Record]) -> FinishedPart:
    """What a strategy reads of a part once every record of it is in.

    Parameters
    ----------
    part : Part
        The part as the strategy proposed it.
    plan : Plan
        Its plan.
    records : mapping of key to Record
        Its records.

    Returns
    -------
    FinishedPart
        The refit metric's fold scores (NaN where a race never ran a fold) and
        the means ``cv_results_`` shows; every metric's and the fit and score
        times' means and standard deviations, as ``cv_results_`` shows them.
    """
    result = _part_search(plan, records)
    cv = result.cv_results_
    metric = plan.scoring.refit
    suffix = plan.scoring.suffix(metric)
    means = np.asarray(cv[f"mean_test_{suffix}"], dtype=np.float64)
    raced = cv.get("race_eliminated_after")
    dropped = np.zeros(len(means), dtype=bool) if raced is None else np.asarray(raced) >= 0
    columns = {plan.scoring.suffix(n): f"test_{plan.scoring.suffix(n)}"
               for n in plan.scoring.scorers}  # fmt: skip
    columns.update(fit_time="fit_time", score_time="score_time")
    return FinishedPart(
        part=part,
        params=tuple(dict(c.params) for c in plan.candidates),
        ids=_row_ids(plan, part),
        scores=fold_scores(plan, records, None, metric),
        means=means,
        dropped=dropped,
        metric_means={n: np.asarray(cv[f"mean_{c}"], dtype=np.float64)
                      for n, c in columns.items()},
        metric_stds={n: np.asarray(cv[f"std_{c}"], dtype=np.float64)
                     for n, c in columns.items()},
    )  # fmt: skip


def finished_rounds(search: SearchRun) -> list[FinishedRound]:
    """The finished rounds of a search, as its proposer read them."""
    out = []
    for parts in search.rounds():
        proposals = tuple(r.proposal for r in parts)
        if any(p is None for p in proposals):
            raise ValueError("a part run without its proposal cannot be read as a round")
        round_ = Round(proposals, dict(parts[0].decision))  # type: ignore[arg-type]
        done = tuple(finished_part(r.proposal, r.plan, r.records) for r in parts)  # type: ignore[arg-type]
        out.append(FinishedRound(round_, done))
    return out


def _final_model(search: SearchRun) -> FinalModel | None:
    """The search's refitted winner (with ``refit``), as a result's final model."""
    refit = search.refit
    if refit is None or search.key is not None:
        return None
    final = refit.records.get(("final",))
    if final is None:
        return None
    if isinstance(final.estimator, FinalModel):
        return final.estimator
    return FinalModel(estimator=final.estimator, reason="")


def _with_final(result: SearchResult, search: SearchRun, config: Mapping[str, Any]) -> SearchResult:
    model = _final_model(search)
    result = replace(result, strategy=dict(config))
    return result if model is None else replace(result, final_model=model)


def _part_result(run: PartRun) -> SearchResult:
    return _part_search(run.plan, run.records)


def _halving(search: SearchRun, parts: Sequence[PartRun], config: Mapping[str, Any]) -> Any:
    """The rungs of one halving search (or one Hyperband bracket) as a HalvingResult."""
    from parcv.plan.halving import HalvingSchedule

    rungs = [_part_result(r) for r in parts]
    decision = parts[0].decision
    label = parts[0].proposal.label if parts[0].proposal is not None else ""
    first = dict(decision.get("schedules", {}).get(label) or decision.get("schedule", {}))
    schedule = HalvingSchedule(
        n_resources=tuple(int(r.proposal.resource or 0) for r in parts),  # type: ignore[union-attr]
        n_candidates=tuple(len(r.plan.candidates) for r in parts),
        min_resources=int(first.get("min_resources", 0)),
        max_resources=int(first.get("max_resources", 0)),
        n_required_iterations=int(first.get("n_required_iterations", len(parts))),
        n_possible_iterations=int(first.get("n_possible_iterations", len(parts))),
        n_remaining_candidates=int(first.get("n_remaining_candidates", 0)),
    )
    joined = make_halving_result(rungs, schedule, str(config.get("resource", "n_samples")))
    planned = first.get("n_iterations")
    if planned is not None:
        joined = replace(joined, n_iterations_=int(planned))
    return joined


def _brackets(search: SearchRun) -> dict[str, list[PartRun]]:
    """The parts of a Hyperband search by bracket (their label), in round order."""
    out: dict[str, list[PartRun]] = {}
    for run in search.parts:
        out.setdefault(run.proposal.label if run.proposal else "", []).append(run)
    return out


def _search_result(search: SearchRun, config: Mapping[str, Any], base: Plan) -> SearchResult:
    """One search's result, joined as its strategy says (``config["joins"]``)."""
    joins = config.get("joins", "table")
    choice = search.choice
    if choice is None:
        raise ValueError("a search without a winner cannot make a result")
    if joins == "rungs":
        result: SearchResult = _halving(search, search.parts, config)
        last = search.parts[-1]
        offset = sum(len(r.plan.candidates) for r in search.parts[:-1])
        result = _best(result, offset + choice.row, _part_result(last))
    elif joins == "brackets":
        result = _hyperband(search, config, choice)
    else:
        result = _table(search, base, config, choice)
    return _with_final(result, search, config)


def _best(result: Any, best: int, chosen: SearchResult) -> Any:
    """``result`` with ``best`` (a row of its ``cv_results_``) as the winner."""
    params = result.cv_results_["params"]
    metric = chosen.refit_metric
    suffix = metric if chosen.multimetric else "score"
    return replace(
        result,
        best_index_=best,
        best_params_=dict(params[best]),
        best_score_=float(result.cv_results_[f"mean_test_{suffix}"][best]),
    )


def _hyperband(search: SearchRun, config: Mapping[str, Any], choice: Choice) -> HyperbandResult:
    by_bracket = _brackets(search)
    brackets = [_halving(search, parts, config) for parts in by_bracket.values()]
    ids = [int(parts[0].proposal.label.rsplit(" ", 1)[-1]) for parts in by_bracket.values()]  # type: ignore[union-attr]
    result = make_hyperband_result(brackets, ids, int(config.get("max_resources", 0)))
    chosen_run = search.rounds()[choice.round][choice.part]
    label = chosen_run.proposal.label  # type: ignore[union-attr]
    b = list(by_bracket).index(label)
    rung = by_bracket[label].index(chosen_run)
    offset = sum(len(x.candidates) for x in brackets[:b])
    offset += sum(len(r.plan.candidates) for r in by_bracket[label][:rung])
    joined: HyperbandResult = _best(replace(result, best_bracket_=ids[b]), offset + choice.row,
                                    brackets[b])  # fmt: skip
    return joined


def _table(
    search: SearchRun, base: Plan, config: Mapping[str, Any], choice: Choice
) -> SearchResult:
    """Every part of a search on the same folds, as one search over all their rows.

    Early stopping's windows fill the (point, checkpoint) rows of the full path
    (checkpoints never run read as NaN, as a path that stopped); a sampler's
    trials are rows in the order they were asked. A fold a part's race dropped
    is left out, as that part's own result leaves it out.
    """
    result, where = _joined_table(search, base, config)
    best = where[(_part_number(search, choice), choice.row)]
    result = _best(result, best, result)
    assert isinstance(result, SearchResult)
    rounds = np.full(len(result.candidates), -1, dtype=np.int64)
    for (n, _), row in where.items():
        rounds[row] = search.parts[n].round
    cv_results = {"round": rounds, **result.cv_results_}
    if config.get("pruner") is not None:
        n_rows = len(result.candidates)
        cv_results.update(_trial_columns(search, choice, where, config, n_rows))
    return replace(result, cv_results_=cv_results)


def _trial_columns(
    search: SearchRun,
    choice: Choice,
    where: Mapping[tuple[int, int], int],
    config: Mapping[str, Any],
    n_rows: int,
) -> dict[str, Any]:
    """A pruned sampler's rows by trial: its number, how it ended, whether the row was reported.

    Each round's decision tells how the trials of the round before ended (the
    winner's decision, the last round's): ``"COMPLETE"``, ``"PRUNED"`` or
    ``"FAIL"`` with the last step reported. A row is ``reported`` when its
    checkpoint is at most that step: the intermediate values of the study.
    A round scores a window of checkpoints, so a pruned trial may have rows
    after its last step, never reported.
    """
    told: dict[int, Mapping[str, Any]] = {}
    for decision in [*(run.decision for run in search.parts), choice.decision]:
        for entry in decision.get("told", ()):
            told[int(entry["trial"])] = entry
    param = str(config["resource"]["param"])
    trial = np.full(n_rows, -1, dtype=np.int64)
    state = np.full(n_rows, "", dtype=object)
    reported = np.zeros(n_rows, dtype=bool)
    for (n, c), row in where.items():
        run = search.parts[n]
        number = _row_ids(run.plan, run.proposal)[c]  # type: ignore[arg-type]
        entry = told.get(int(number), {})
        step = entry.get("step")
        count = run.plan.candidates[c].params[param]
        trial[row], state[row] = number, entry.get("state", "RUNNING")
        reported[row] = step is not None and count <= step
    return {"trial": trial, "trial_state": state, "reported": reported}


def _joined_table(
    search: SearchRun, base: Plan, config: Mapping[str, Any]
) -> tuple[SearchResult, dict[tuple[int, int], int]]:
    """:func:`_table` before its winner is marked, and where each part's row went.

    The rows of the table are those of the parts given: the finished parts of an
    unfinished run give the rows a finished run's table gives them.
    """
    first = search.parts[0].plan
    iterations = _iterations_of(config)
    rows: list[dict[str, Any]] = []
    index: dict[tuple[int, Any], int] = {}
    paths: tuple[tuple[int, ...], ...] = ()
    if iterations is not None and base.candidates:
        cands, paths = expand_paths(base.candidates, iterations)
        rows = [dict(c.params) for c in cands]
        for p, path in enumerate(paths):
            for c in path:
                index[(p, cands[c].params[iterations.param])] = c
    records: dict[Key, Record] = {}
    where: dict[tuple[int, int], int] = {}  # (part number, its row): row of the table
    for n, run in enumerate(search.parts):
        ids = _row_ids(run.plan, run.proposal)  # type: ignore[arg-type]
        for c, candidate in enumerate(run.plan.candidates):
            if iterations is not None and paths:
                row = index[(ids[c], candidate.params[iterations.param])]
            else:
                row = len(rows)
                rows.append(dict(candidate.params))
            where[(n, c)] = row
        ran = race_mask(run.plan, run.records, None)
        for record in run.records.values():
            unit = record.unit
            if unit.kind != "fit" or unit.inner is None:
                continue
            if ran is not None and not ran[unit.candidate, unit.inner]:
                continue
            row = where[(n, unit.candidate)]
            new = Unit("fit", None, unit.inner, row)
            records[new.key] = replace(record, unit=new)
    view = replace(
        first,
        candidates=tuple(Candidate(i, p) for i, p in enumerate(rows)),
        units=tuple(Unit("fit", None, i, c) for c in range(len(rows))
                    for i in range(len(first.inner_folds[None]))),
        racing=None,
        iterations=iterations if paths else None,
        paths=paths,
        path_methods=first.path_methods[:1] * len(paths) if paths else (),
        prefixes=(),
    )  # fmt: skip
    return _part_search(view, _after_stops(view, records)), where


def _iterations_of(config: Mapping[str, Any]) -> Iterations | None:
    """The iteration path of an early-stopping strategy, from its ``config()``."""
    if "param" not in config or "up_to" not in config:
        return None
    return Iterations(config["param"], config["up_to"], config.get("every", 1),
                      config.get("patience"), config.get("tol", 0.0),
                      config.get("method", "auto"))  # fmt: skip


def _after_stops(view: Plan, records: dict[Key, Record]) -> dict[Key, Record]:
    """The records without the checkpoints after each path's stop (a round scores a window).

    A round fits each path to its window's last count; the checkpoints after the
    stop it finds are left out, as a path grown in step stops scoring there.
    """
    if view.iterations is None or view.iterations.patience is None:
        return records
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = make_search_result(view, records).cv_results_
    stopped = np.asarray(results["path_stopped"], dtype=bool)
    return {k: r for k, r in records.items() if not stopped[r.unit.candidate]}


def _part_number(search: SearchRun, choice: Choice) -> int:
    """The place among ``search.parts`` of the part a choice names."""
    for n, run in enumerate(search.parts):
        if run.round == choice.round and run.part == choice.part:
            return n
    raise ValueError(f"no part {choice.part} in round {choice.round} of the search")


def _outer_cv(search: SearchRun, base: Plan) -> CVResult:
    """The refit of an outer fold's winner, as the CVResult of one split (its outer score)."""
    from parcv.results.assemble import make_cv_result

    refit = search.refit
    if refit is None or search.key is None:
        raise ValueError("an outer fold's search has no refit")
    record = refit.records[("refit", search.key)]
    unit = Unit("fit", None, 0, 0)
    fold = base.outer_folds[search.key]
    view = replace(
        base,
        candidates=refit.plan.candidates,
        outer_folds=(),
        inner_folds={None: (fold,)},
        units=(unit,),
        refit_outers=(),
        final=False,
        racing=None,
        iterations=None,
        paths=(),
        path_methods=(),
        prefixes=(),
        interval=None,  # the nested CV's interval is the whole result's, not this fold's
        ncv=None,
        bbc=None,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_cv_result(view, {unit.key: replace(record, unit=unit)})


def make_rounds_result(
    kind: str, base: Plan, searches: Sequence[SearchRun], config: Mapping[str, Any]
) -> SearchResult | NestedRoundsResult:
    """The result of a run in rounds, from its searches' parts and refits.

    Parameters
    ----------
    kind : {"search", "nested_cv"}
    base : Plan
        The run's base plan (its folds and options; see :mod:`parcv.plan.parts`).
    searches : sequence of SearchRun
        Each outer fold's search (nested CV) and the search on all data.
    config : mapping
        The strategy's ``config()``: how its parts join (``"joins"``) and the
        options that shape the result (the resource, Hyperband's largest one).

    Returns
    -------
    SearchResult, HalvingResult, HyperbandResult or NestedRoundsResult
    """
    by_key = {s.key: s for s in searches}
    if kind == "search":
        return _search_result(by_key[None], config, base)
    # The outer folds after the nested CV's own are the interval's selections.
    full = replace(base, refit_outers=tuple(range(len(base.outer_folds))))
    outer = list(full.nested_outers)
    inner = [_search_result(by_key[o], config, base) for o in outer]
    scored = [_outer_cv(by_key[o], base) for o in outer]
    final = None if None not in by_key else _search_result(by_key[None], config, base)
    digest = token_hex([(base.outer_folds[o].train, base.outer_folds[o].test) for o in outer])
    refits = {("refit", s.key): s.refit.records[("refit", s.key)] for s in searches
              if s.key is not None and s.refit is not None
              and ("refit", s.key) in s.refit.records}  # fmt: skip
    result = make_nested_rounds_result(inner, scored, final, digest,
                                       refits=list(refits.values()))  # fmt: skip
    if full.interval is None and full.bbc is None:
        return result
    selections = [s for s in searches if s.key is not None and s.key not in outer]
    n_fits = sum(len(r.records) for s in selections
                 for r in [*s.parts, *([] if s.refit is None else [s.refit])])  # fmt: skip
    found = nested_intervals(full, refits, result.outer_scores, final, n_fits=n_fits)
    return replace(result, **found)


def make_partial_rounds_result(
    kind: str,
    base: Plan,
    searches: Sequence[SearchRun],
    config: Mapping[str, Any],
    progress: Mapping[int, tuple[Sequence[Key], int]],
    *,
    refitted: Mapping[int | None, bool],
    bound: int | None = None,
) -> PartialResult:
    """What an unfinished run in rounds knows: each search's rounds, as far as they got.

    Parameters
    ----------
    kind : {"search", "nested_cv"}
    base : Plan
        The run's base plan.
    searches : sequence of SearchRun
        Each search's parts and refit so far (none for a search not started).
    config : mapping
        The strategy's ``config()``.
    progress : mapping of int to (sequence of Key, int)
        Each part's (and refit's) plan id: the keys it still misses, and how many
        records it has when finished.
    refitted : mapping of int or None to bool
        Each search, by its outer fold (None: all data): whether its winner is refitted.
    bound : int or None, default=None
        The strategy's bound on the fits of every round of every search.

    Returns
    -------
    PartialResult
        One row per candidate of each part proposed so far (:class:`RoundPart`):
        a finished part's means are those the finished run's result gives it,
        an unfinished one's are over its folds done. Nothing is selected.
    """
    by_key = {s.key: s for s in searches}
    own = set(replace(base, refit_outers=tuple(range(len(base.outer_folds)))).nested_outers)
    metric = base.scoring.refit
    table = _SoFar()
    missing: list[str] = []
    outer: dict[int, float] = {}
    for key, refit in refitted.items():
        search = by_key.get(key, SearchRun(key))
        left = table.add(search, config, base, progress)
        run = search.refit
        if run is not None:
            keys, n = progress[run.pid]
            table.n_done, table.n_units = table.n_done + n - len(keys), table.n_units + n
            record = run.records.get(("refit", key))
            if record is not None and record.ok and key in own:
                outer[int(key)] = float(record.test_scores.get(metric, np.nan))
        elif refit:
            table.n_units += 1  # its refit, once its strategy stops
        if run is None:
            left.append("later rounds if its strategy proposes them" if search.parts
                        else "its rounds, none proposed yet")  # fmt: skip
        if refit and (run is None or progress[run.pid][0]):
            left.append("the final refit on all data" if key is None else "its refit")
        if left:
            where = "all data" if key is None else f"outer fold {key}"
            missing.append(f"the search on {where}: {', '.join(left)}")
    if bound is not None and bound > table.n_fits:
        missing.append(f"rounds not proposed yet: at most {bound - table.n_fits:,} fits")
    return PartialResult(
        kind=kind, n_done=table.n_done, n_units=table.n_units, missing=missing,
        params=table.params, metric=metric,
        n_folds_done=np.asarray(table.folds_done, dtype=np.int64),
        n_folds=max((p.n_folds for p in table.parts), default=0),
        mean_test_score=np.asarray(table.means, dtype=np.float64),
        std_test_score=np.asarray(table.stds, dtype=np.float64),
        outer_test_scores=outer, parts=tuple(table.parts),
    )  # fmt: skip


@dataclass
class _SoFar:
    """The table of a partial result in rounds as it is gathered, part after part."""

    params: list[dict[str, Any]] = field(default_factory=list)
    folds_done: list[int] = field(default_factory=list)
    means: list[float] = field(default_factory=list)
    stds: list[float] = field(default_factory=list)
    parts: list[RoundPart] = field(default_factory=list)
    n_done: int = 0
    n_units: int = 0
    n_fits: int = 0  # the units of the parts proposed (a strategy's bound counts these)

    def add(
        self,
        search: SearchRun,
        config: Mapping[str, Any],
        base: Plan,
        progress: Mapping[int, tuple[Sequence[Key], int]],
    ) -> list[str]:
        """Add a search's parts; return its unfinished rounds, in words."""
        exact = _finished_means(search, config, base, progress)
        left = []
        for run in sorted(search.parts, key=lambda r: (r.round, r.part)):
            keys, n = progress[run.pid]
            so_far = make_partial_result("search", run.plan, run.records, keys, n)
            means, stds = exact.get(run.pid, (so_far.mean_test_score, so_far.std_test_score))
            proposal = run.proposal
            label = "" if proposal is None else proposal.label
            resource = None if proposal is None else proposal.resource
            self.parts.append(RoundPart(search.key, run.round, run.part, label, resource,
                                        len(self.params), len(so_far.params), so_far.n_folds,
                                        so_far.n_done, n))  # fmt: skip
            self.params += so_far.params
            self.folds_done += so_far.n_folds_done.tolist()
            self.means += np.asarray(means, dtype=np.float64).tolist()
            self.stds += np.asarray(stds, dtype=np.float64).tolist()
            self.n_done, self.n_units = self.n_done + so_far.n_done, self.n_units + n
            self.n_fits += n
            if keys:
                named = f"{label}; " if label else ""
                left.append(f"round {run.round} ({named}{so_far.n_done} of {n} units)")
        return left


def _finished_means(
    search: SearchRun,
    config: Mapping[str, Any],
    base: Plan,
    progress: Mapping[int, tuple[Sequence[Key], int]],
) -> dict[int, tuple[Any, Any]]:
    """Each finished part's means and stds, by plan id, as the finished run's result has them.

    Parts joined into one table (a sampler's trials, early stopping's windows)
    are read from the table of the finished parts, which leaves out what the
    whole table leaves out (the checkpoints after a path's stop); the others
    from each part's own result, as the rungs of halving are.
    """
    finished = [r for r in search.parts if not progress[r.pid][0]]
    if not finished:
        return {}
    suffix = base.scoring.suffix(base.scoring.refit)
    columns = (f"mean_test_{suffix}", f"std_test_{suffix}")
    if config.get("joins", "table") != "table":
        found = {}
        for run in finished:
            results = _part_result(run).cv_results_
            found[run.pid] = (results[columns[0]], results[columns[1]])
        return found
    joined, where = _joined_table(SearchRun(search.key, finished), base, config)
    mean, std = (np.asarray(joined.cv_results_[c], dtype=np.float64) for c in columns)
    out = {}
    for n, run in enumerate(finished):
        rows = [where[(n, c)] for c in range(len(run.plan.candidates))]
        out[run.pid] = (mean[rows], std[rows])
    return out
