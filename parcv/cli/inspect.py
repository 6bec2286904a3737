"""The text of ``parcv inspect``: what a spec will run, where, and roughly how long."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parcv.plan.space import Candidate, RandomSpace
from parcv.plan.splits import describe_folds
from parcv.results.labels import readable_labels

__all__ = ["plan_text"]


@dataclass(frozen=True)
class _Count:
    """What a run will fit, as inspect shows it: from its one plan, or its strategy's schedule.

    A unit is what the run stores and counts (its bar, its closing line, Ctrl-C and
    resume): a score of one candidate on one fold, or a refit. ``n_scores``: the
    units before the refits; ``n_fits``: the fits that make them, fewer where one
    fit is scored at several checkpoints of an iteration path (or a fast-CV batch
    scores its candidates); ``sizes``: the fits each plan the run sends holds (a
    round of a search in rounds), for the chunk estimate; ``exact`` False: every
    count is a bound.
    """

    candidates: str
    strategy: tuple[str, ...]
    n_scores: int
    n_fits: int
    n_refit: int
    rows: int
    sizes: tuple[int, ...]
    exact: bool = True

    @property
    def n_units(self) -> int:
        """The units the run stores, refits included."""
        return self.n_scores + self.n_refit

    @property
    def word(self) -> str:
        """What a chunk holds: units, or fits where a fit makes several units."""
        return "unit" if self.n_fits == self.n_scores else "fit"

    def lines(self) -> list[str]:
        """The strategy, rounds, units and work lines."""
        at = "" if self.exact else "at most "
        per_fit = self.rows // max(self.n_fits, 1)
        scores = (
            f"{self.n_fits} fits"
            if self.n_fits == self.n_scores
            else f"{self.n_scores} scores of {self.n_fits} fit{'s' * (self.n_fits != 1)}"
        )
        return [
            *self.strategy,
            f"units      {at}{scores} + {self.n_refit} refit(s) = {self.n_units}",
            f"work       {at}{self.rows:,} training rows over all fits ({per_fit:,} per fit)",
        ]


def _workers(spec: Any) -> tuple[int, Any, str]:
    """Workers, executor class (its chunk sizing) and the backend in words, without starting it."""
    from parcv.engine.backends._dask_executor import _DaskExecutor
    from parcv.engine.backends.local import _LocalExecutor, check_n_jobs
    from parcv.engine.backends.serial import _SerialExecutor

    run, cluster = spec.run, spec.table("cluster")
    if cluster:
        n = (cluster.get("jobs") or 1) * (cluster.get("cores") or 1)
        return n, _DaskExecutor, f"dask on a {cluster.get('kind')} cluster ({n} worker threads)"
    if run.scheduler or run.scheduler_file or run.backend == "dask":
        where = run.scheduler or run.scheduler_file or "a local cluster"
        n = check_n_jobs(run.n_jobs)
        return n, _DaskExecutor, f"dask at {where} (estimates assume {n} workers)"
    if run.backend == "serial":
        return 1, _SerialExecutor, "serial (1 worker)"
    n = check_n_jobs(run.n_jobs)
    return n, _LocalExecutor, f"local ({n} workers)"


def _folds_text(plan: Any) -> str:
    n_outer = len(plan.outer_folds)
    if not n_outer:
        folds = plan.inner_folds[None]
        return f"{len(folds)} folds ({describe_folds(folds)})"
    inner = sorted({len(f) for o, f in plan.inner_folds.items() if o is not None})
    text = f"{n_outer} outer x {'/'.join(map(str, inner))} inner"
    if plan.final:
        text += f", + search by {describe_folds(plan.inner_folds[None])} on all data"
    return text


def _work_lines(spec: Any, job: Any, plan: Any, count: _Count, probe: bool) -> list[str]:
    """Backend, chunks and (with ``probe``) the time one fit takes here, extrapolated."""
    from parcv.cli.sweep import probe_fit
    from parcv.engine.runner import estimate_chunks

    n_refit, word = count.n_refit, count.word
    n_sent = count.n_fits + n_refit  # the units the driver chunks: fits (and refits)
    workers, executor, where = _workers(spec)
    target, rate = executor.chunk_seconds, executor.chunk_rate
    low = sum(estimate_chunks(n, workers, target, None, rate) for n in count.sizes) + n_refit
    chunks = (
        f"{n_sent} (one {word} each)"
        if low >= n_sent
        else f"about {low} (about {n_sent / low:.0f} {word}s each; sized from the "
        "fit times measured in the first wave)"
    )
    lines = [f"backend    {where}; chunks: {chunks}"]
    if probe:
        seconds = probe_fit(job, plan)
        n_chunks = sum(estimate_chunks(n, workers, target, seconds, rate)
                       for n in count.sizes) + n_refit  # fmt: skip
        total = seconds * n_sent
        lines.append(
            f"probe      one fit took {seconds:.3g} s: about {total:.3g} CPU-s in total, "
            f"~{total / workers:.3g} s on {workers} workers, ~{n_chunks} chunks"
        )
    return lines


def _train_rows(plan: Any) -> int:
    """Training rows over all units; a grid's from its folds (its units' rows are their fold's)."""
    from parcv.plan.records import Unit
    from parcv.plan.units import as_units

    units = as_units(plan.units)
    rows = sum(len(plan.fold_of(u).train) for _, u in units.listed())
    for _, grid in units.grids():
        if grid.order:
            first = grid.order[0]
            per_fold = sum(len(plan.fold_of(Unit(grid.kind, o, i, first)).train)
                           for o, i in grid.fold_positions())  # fmt: skip
            rows += per_fold * len(grid.order)
    return rows


def _criteria_lines(plan: Any) -> list[str]:
    if plan.criteria is None:
        return []
    names = ", ".join(plan.criteria.names)
    return [f"criteria   {names} (one fit per candidate on each training set, beside CV)"]


def _store_text(store: Path, plan: Any, job: Any, *, resume: bool, kept: bool) -> str:
    """What a run of this plan would find in the store (by content key, any plan's units).

    With ``resume``, one line per code change that makes stored units stale,
    as the run says when it starts (``kept``: with ``--rerun-triggers values``).
    """
    from parcv.engine.session import survey_store
    from parcv.plan.data import check_dataset

    if not store.is_file():
        return "none yet"
    data = check_dataset(job.data.X, job.data.y, job.data.groups)
    survey = survey_store(plan, data, store)
    # A score per record: fits where each makes one, else an iteration path's checkpoints.
    scores = "fits" if len(plan.units) == plan.n_fit_records else "scores"
    text = (
        f"holds {survey.n_records:,} units; {survey.n_found:,} of this plan's "
        f"{survey.n_fits:,} {scores} are among them (--resume reuses them, and the refits "
        "whose chosen candidate is stored)"
    )
    changes = survey.changes
    if changes.n_units and not resume:
        text += (
            f"; {changes.n_units:,} more are stored for other code or versions (parcv inspect "
            "--resume says which and why)"
        )
    elif resume and changes.lines(kept=kept):
        text += "; stored for other code or versions:" + "".join(
            f"\n             {line}" for line in changes.lines(kept=kept)
        )
    return text


def _labels_text(candidates: Sequence[Candidate]) -> str:
    """The count of candidates and the first ones, floats rounded as the report writes them."""
    if not candidates:
        return "1: "  # no space: the estimator as given
    names = readable_labels(c.params for c in candidates)
    labels = [names[c.label] for c in candidates]
    shown = "; ".join(labels[:4]) + (f", ... ({len(labels) - 4} more)" if len(labels) > 4 else "")
    return f"{len(labels)}: {shown}"


def _plan_count(plan: Any) -> _Count:
    """A search in one round (or a cross-validation): its plan is what the run fits."""
    n_fits, n_refit = len(plan.units), len(plan.refit_outers) + int(plan.final)
    labels = _labels_text(plan.candidates)
    return _Count(labels, (), plan.n_fit_records, n_fits, n_refit, _train_rows(plan), (n_fits,))


def _toml(value: Any) -> str:
    """A spec's value as the spec writes it (TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        items = ", ".join(f"{k} = {_toml(v)}" for k, v in value.items())
        return f"{{ {items} }}" if items else "{}"
    if isinstance(value, list):
        return f"[{', '.join(_toml(v) for v in value)}]"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _search_words(spec: Any) -> str:
    """The ``[search]`` tables that make the search run in rounds (its strategy, its race)."""
    tables = [f"{k} = {_toml(v)}" for k, v in spec.table("search").items() if isinstance(v, dict)]
    return f" ([search] {', '.join(tables)})" if tables else ""


def _space_names(space: Any) -> str:
    """The parameters a space varies, in order of first appearance."""
    grids = space.distributions if isinstance(space, RandomSpace) else space
    names = [n for grid in ([grids] if isinstance(grids, dict) else grids or []) for n in grid]
    return ", ".join(dict.fromkeys(names)) or "the estimator as given"


def _proposed_text(strategy: Any, space: Any) -> str:
    """Candidates a strategy proposes itself (a sampler's trials, Hyperband's draws)."""
    text = f"proposed by the {strategy.name} strategy from the space ({_space_names(space)})"
    if isinstance(space, RandomSpace):  # its draws are the plan's points, which no round scores
        text += f"; [search] n_iter = {space.n_iter} is not used"
    return text


def _rounds_count(job: Any, plan: Any) -> _Count | None:
    """A search in rounds: its strategy's schedule, per search (None: one round).

    The candidates are the space's points unless the strategy proposes its own
    (``Schedule.n_candidates``); the training rows are each round's fits on
    every fold of its search (a fit per candidate, or ``RoundBound.n_fits``),
    subsampled as the round's ``n_rows`` says.
    """
    rounds = job.rounds()
    if rounds is None:
        return None
    strategy, schedules = rounds.strategy, rounds.schedules
    # A race drops folds of any strategy's rounds: its schedule is then a bound.
    exact = all(s.exact for s in schedules.values()) and job.options.get("racing") is None
    how = "its rounds, exactly" if exact else "a bound"
    lines = [f"strategy   {strategy.name}{_search_words(job.spec)}: {how}"]
    rows, sizes = 0, []
    for key, schedule in schedules.items():
        where = "all data" if key is None else f"outer fold {key}"
        n_samples = rounds.contexts[key].n_samples
        train = [len(fold.train) for fold in rounds.base.inner_folds[key]]
        for r in schedule.rounds:
            lines.append(f"rounds     {where}: {r.text}")
            fraction = None if r.n_rows is None else r.n_rows / n_samples
            per_fold = r.n_candidates if r.n_fits is None else r.n_fits // len(train)
            rows += per_fold * sum(t if fraction is None else int(fraction * t)
                                   for t in train)  # fmt: skip
            sizes.append(r.n_units if r.n_fits is None else r.n_fits)
    n_refit = len(schedules) - int(None in schedules and job.options.get("refit") is False)
    own = [s.n_candidates for s in schedules.values() if s.n_candidates is not None]
    if own:
        each = " in each search" if len(schedules) > 1 else ""
        at = "" if exact else "at most "
        candidates = f"{at}{max(own)}{each}, {_proposed_text(strategy, job.space)}"
    else:
        candidates = _labels_text(plan.candidates)
    n_scores = sum(s.n_units for s in schedules.values())
    n_fits = sum(s.n_fits for s in schedules.values())
    return _Count(candidates, tuple(lines), n_scores, n_fits, n_refit, rows, tuple(sizes), exact)


def _rounds_store_text(store: Path) -> str:
    """What a run in rounds would find in the store: its rounds are proposed as they run."""
    from parcv.cli.sweep import stored_units

    if not store.is_file():
        return "none yet"
    return (
        f"holds {stored_units(store):,} units; --resume replays the rounds and reuses every "
        "stored unit they propose again (by content key), and the refits whose chosen "
        "candidate is stored"
    )


def _trials_lines(store: Path) -> list[str]:
    """The trials of a pruned sampler's finished run in the store, by how each ended.

    They are read from the stored run's result, as the report counts them
    (:func:`~parcv.results.trials.count_trials`), per search of the run.
    """
    from parcv.api import load
    from parcv.cli.sweep import stored_units
    from parcv.errors import ParcvError
    from parcv.results.partial import PartialResult
    from parcv.results.trials import count_trials
    from parcv.store.readers import collector_paused, read_meta

    if not stored_units(store):
        return []
    try:
        config = json.loads(read_meta(store).get("strategy") or "{}")
        if not config.get("pruner"):
            return []
        with collector_paused():
            result = load(store, partial=True)
    except (ParcvError, json.JSONDecodeError) as err:  # damaged, or a newer parcv's store
        return [f"trials     of the stored run: not read ({err})"]
    if isinstance(result, PartialResult):
        return ["trials     of the stored run: counted once it finishes (parcv run --resume)"]
    pruner = f"{config.get('sampler', 'a sampler')} with {config['pruner']}"
    return [
        f"trials     of the stored run ({pruner}), by how they ended:",
        *(f"             {c.where}: {c.text()}" for c in count_trials(result)),
    ]


def _unread_text(spec: Any, job: Any, store: Path) -> str:
    """What inspect tells of a spec whose data only a run reads (a ``python:`` source).

    A search in rounds is counted once the data is read: its schedule needs
    the rows (and a sampler's space has no points to list).
    """
    from parcv.plan.space import check_space

    strategy = job.strategy()
    if strategy is not None:
        candidates = f"{_proposed_text(strategy, job.space)}; counted once the data is read"
        if job.points() and not isinstance(job.space, RandomSpace):
            candidates = _labels_text(check_space(job.space))
    else:
        space = job.space
        candidates = _labels_text(check_space(space) if space else [])
    names = {"outer": "outer", "cv": "inner" if job.options.get("outer") else "cv"}
    schemes = [f"{names[k]} {job.options[k]!r}" for k in names if job.options.get(k)]
    stored = "exists (its records are matched when the data is read)" if store.is_file() else (
        "none yet"
    )  # fmt: skip
    rounds = (
        []
        if strategy is None
        else [f"strategy   {strategy.name}{_search_words(spec)}: its rounds are counted once "
              "the data is read"]
    )  # fmt: skip
    return "\n".join(
        [
            f"spec       {spec.source} ({spec.name}), mode {spec.mode}",
            f"data       {job.data.description}",
            f"estimator  {' '.join(repr(job.estimator).split())}",
            f"candidates {candidates}",
            f"folds      {'; '.join(schemes) or 'as the spec says'}",
            *rounds,
            "units      counted once the data is read: inspect calls no function a spec "
            "names (parcv run does)",
            f"store      {store}: {stored}",
            *_trials_lines(store),
        ]
    )


def plan_text(
    spec: Any, out: Path, probe: bool, *, resume: bool = False, kept: bool = False
) -> str:
    """What ``parcv inspect`` prints: the plan of a spec, its work and its store.

    ``resume``: also what a ``--resume`` run would recompute because code or
    versions changed, one line per cause; ``kept``: it would keep those records
    (``--rerun-triggers values``), so they read "kept", not "recomputed". It runs no
    function the spec names: the shape of a ``python:`` data source is left to the
    run, which calls it. A search in rounds shows its strategy's schedule: the
    candidates, units and training rows its rounds fit (exact, or a bound).
    """
    from parcv.cli.sweep import build_job

    job = build_job(spec, run_code=False)
    store = out / "store.sqlite"
    if job.data.X is None:
        return _unread_text(spec, job, store)
    plan = job.plan()
    rounds = _rounds_count(job, plan)
    count = _plan_count(plan) if rounds is None else rounds
    stored = (
        _store_text(store, plan, job, resume=resume, kept=kept)
        if rounds is None
        else _rounds_store_text(store)
    )
    return "\n".join(
        [
            f"spec       {spec.source} ({spec.name}), mode {spec.mode}",
            f"data       {job.data.description}",
            f"estimator  {' '.join(repr(job.estimator).split())}",
            f"candidates {count.candidates}",
            f"folds      {_folds_text(plan)}",
            *_criteria_lines(plan),
            *count.lines(),
            *_work_lines(spec, job, plan, count, probe),
            f"store      {store}: {stored}",
            *_trials_lines(store),
        ]
    )
