"""The text of ``parcv inspect``: what a spec will run, where, and roughly how long."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parcv.plan.splits import describe_folds

__all__ = ["plan_text"]


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


def _work_lines(spec: Any, job: Any, plan: Any, probe: bool) -> list[str]:
    """Backend, chunks and (with ``probe``) the time one fit takes here, extrapolated."""
    from parcv.cli.sweep import probe_fit
    from parcv.engine.runner import estimate_chunks

    n_fit, n_refit = len(plan.units), len(plan.refit_outers) + int(plan.final)
    workers, executor, where = _workers(spec)
    target, rate = executor.chunk_seconds, executor.chunk_rate
    low = estimate_chunks(n_fit, workers, target, None, rate) + n_refit
    chunks = (
        f"{plan.n_units} (one unit each)"
        if low >= plan.n_units
        else f"about {low} (about {plan.n_units / low:.0f} units each; sized from the "
        "fit times measured in the first wave)"
    )
    lines = [f"backend    {where}; chunks: {chunks}"]
    if probe:
        seconds = probe_fit(job, plan)
        n_chunks = estimate_chunks(n_fit, workers, target, seconds, rate) + n_refit
        total = seconds * plan.n_units
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
    text = (
        f"holds {survey.n_records:,} units; {survey.n_found:,} of this plan's "
        f"{survey.n_fits:,} fits are among them (--resume reuses them, and the refits whose "
        "chosen candidate is stored)"
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


def _rounds_lines(job: Any) -> tuple[list[str], str] | None:
    """The rounds of a search in rounds, per search, and its units line (None: one round)."""
    schedules = job.schedules()
    if schedules is None:
        return None
    strategy = job.strategy()
    exact = all(s.exact for s in schedules.values())
    lines = [f"strategy   {strategy.name}: {'its rounds, exactly' if exact else 'a bound'}"]
    for key, schedule in schedules.items():
        where = "all data" if key is None else f"outer fold {key}"
        for r in schedule.rounds:
            lines.append(f"rounds     {where}: {r.text}")
    n_fit = sum(s.n_units for s in schedules.values())
    n_refit = len(schedules) - int(None in schedules and job.options.get("refit") is False)
    total = n_fit + n_refit
    units = (
        f"units      {n_fit} fits + {n_refit} refit(s) = {total}"
        if exact
        else f"units      at most {n_fit} fits + {n_refit} refit(s) = {total}"
    )
    return lines, units


def _unread_text(spec: Any, job: Any, store: Path) -> str:
    """What inspect tells of a spec whose data only a run reads (a ``python:`` source)."""
    from parcv.plan.space import check_space

    labels = [c.label for c in check_space(job.space)] if job.space is not None else [""]
    shown = "; ".join(labels[:4]) + (f", ... ({len(labels) - 4} more)" if len(labels) > 4 else "")
    names = {"outer": "outer", "cv": "inner" if job.options.get("outer") else "cv"}
    schemes = [f"{names[k]} {job.options[k]!r}" for k in names if job.options.get(k)]
    stored = "exists (its records are matched when the data is read)" if store.is_file() else (
        "none yet"
    )  # fmt: skip
    return "\n".join(
        [
            f"spec       {spec.source} ({spec.name}), mode {spec.mode}",
            f"data       {job.data.description}",
            f"estimator  {' '.join(repr(job.estimator).split())}",
            f"candidates {len(labels)}: {shown}",
            f"folds      {'; '.join(schemes) or 'as the spec says'}",
            "units      counted once the data is read: inspect calls no function a spec "
            "names (parcv run does)",
            f"store      {store}: {stored}",
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
    run, which calls it.
    """
    from parcv.cli.sweep import build_job

    job = build_job(spec, run_code=False)
    if job.data.X is None:
        return _unread_text(spec, job, out / "store.sqlite")
    plan = job.plan()
    n_fit, n_refit = len(plan.units), len(plan.refit_outers) + int(plan.final)
    rounds = _rounds_lines(job)
    labels = [c.label for c in plan.candidates]
    shown = "; ".join(labels[:4]) + (f", ... ({len(labels) - 4} more)" if len(labels) > 4 else "")
    rows = _train_rows(plan)
    store = out / "store.sqlite"
    return "\n".join(
        [
            f"spec       {spec.source} ({spec.name}), mode {spec.mode}",
            f"data       {job.data.description}",
            f"estimator  {' '.join(repr(job.estimator).split())}",
            f"candidates {len(labels)}: {shown}",
            f"folds      {_folds_text(plan)}",
            *_criteria_lines(plan),
            *([] if rounds is None else rounds[0]),
            f"units      {n_fit} fits + {n_refit} refit(s) = {plan.n_units}"
            if rounds is None
            else rounds[1],
            f"work       {rows:,} training rows over all fits ({rows // max(n_fit, 1):,} per fit)",
            *_work_lines(spec, job, plan, probe),
            f"store      {store}: {_store_text(store, plan, job, resume=resume, kept=kept)}",
        ]
    )
