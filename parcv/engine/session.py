"""One run of a plan: fingerprint, store, resume, progress, interrupt, load."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parcv.criteria.tasks import CriteriaRequest
from parcv.engine.backends.base import Backend
from parcv.engine.progress import Progress, check_progress
from parcv.engine.runner import run_plan
from parcv.errors import ParcvError, RunInterrupted
from parcv.plan.build import Plan, choice_digest, fingerprint, make_units
from parcv.plan.data import Dataset
from parcv.plan.partition import PartitionFolds
from parcv.plan.records import Key, Record
from parcv.plan.reprs import stable_repr
from parcv.plan.scoring import Scoring
from parcv.plan.selection import Selection
from parcv.plan.space import Candidate
from parcv.plan.splits import Fold
from parcv.plan.version import __version__
from parcv.results.aggregate import report_fit_failures
from parcv.store.sqlite import (
    Store,
    check_store_to_read,
    open_store,
    params_json,
    read_folds,
    read_partitions,
    read_store,
    store_session,
)

__all__ = ["execute_plan", "load_run", "plan_meta"]


def plan_meta(plan: Plan, kind: str, digest: str) -> dict[str, str]:
    """Describe a plan in plain JSON, enough to rebuild its results from a store."""
    selection = plan.selection
    description = {
        "candidates": [
            {"index": c.index, "id": c.id, "params": json.loads(params_json(c.params))}
            for c in plan.candidates
        ],
        "metrics": list(plan.scoring.scorers),
        "refit": plan.scoring.refit,
        "multimetric": plan.scoring.multimetric,
        "n_outer": len(plan.outer_folds),
        "final": plan.final,
        "return_train_score": plan.return_train_score,
        "selection": {
            "rule": selection.rule,
            "complexity": stable_repr(selection.complexity)
            if callable(selection.complexity)
            else selection.complexity,
        },
        "error_score": plan.error_score if plan.error_score == "raise" else repr(plan.error_score),
        "n_samples": plan.n_samples,
        "estimator": stable_repr(plan.estimator),
        "fast_cv": plan.fast_cv,
        "batches": [list(b) for b in plan.batches],
        "criteria": None if plan.criteria is None else list(plan.criteria.names),
    }
    return {
        "fingerprint": digest,
        "choice": choice_digest(plan),
        "parcv_version": __version__,
        "kind": kind,
        "created": repr(time.time()),
        "plan": json.dumps(description),
    }


def _plan_folds(plan: Plan) -> list[tuple[int | None, int | None, Any, Any]]:
    rows: list[tuple[int | None, int | None, Any, Any]] = [
        (o, None, f.train, f.test) for o, f in enumerate(plan.outer_folds)
    ]
    for outer, folds in plan.inner_folds.items():
        if not isinstance(folds, PartitionFolds):  # those are stored compactly
            rows += [(outer, i, f.train, f.test) for i, f in enumerate(folds)]
    return rows


def _plan_partitions(plan: Plan) -> dict[int | None, PartitionFolds]:
    return {o: f for o, f in plan.inner_folds.items() if isinstance(f, PartitionFolds)}


def _models_dir(store: str | Path) -> Path:
    return Path(str(store) + ".models")


def _resumable(store: str | Path | None, done: dict[Key, Record]) -> dict[Key, Record]:
    # A stored "final" record is only complete with its fitted model; without one, refit it.
    final = done.get(("final",))
    if final is None:
        return done
    model = None if store is None else _models_dir(store) / "final.joblib"
    if model is not None and model.is_file():
        from dataclasses import replace

        import joblib

        done[("final",)] = replace(final, estimator=joblib.load(model))
    else:
        del done[("final",)]
    return done


def _open(plan: Plan, data: Dataset, kind: str, store: str | Path | None, **options: Any) -> Store:
    if store is None:  # nothing persists: no fingerprint, description or fold blobs needed
        return open_store(None, {}, [], labels=())
    labels = tuple((c.id, params_json(c.params)) for c in plan.candidates)
    meta = plan_meta(plan, kind, fingerprint(plan, data))
    return open_store(store, meta, _plan_folds(plan), labels=labels,
                      partitions=_plan_partitions(plan), **options)  # fmt: skip


def execute_plan(
    plan: Plan,
    data: Dataset,
    backend: Backend,
    kind: str,
    *,
    store: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool | None = None,
    save_models: bool = False,
    journal: str = "wal",
) -> dict[Key, Record]:
    """Run a plan against its store: skip what is done, commit what finishes.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    backend : Backend
    kind : {"cross_validate", "search", "nested_cv"}
        Which result the records make (kept in the store for :func:`load_run`).
    store : str, Path or None, default=None
        SQLite file; None keeps nothing.
    resume, overwrite, journal
        See :func:`parcv.store.sqlite.open_store`.
    progress : bool or None, default=None
        Progress bar; None shows it when stderr is a terminal.
    save_models : bool, default=False
        Also write the final fitted model with joblib beside the store
        (``<store>.models/final.joblib``). Such files execute code when
        loaded: load them only from trusted sources.

    Returns
    -------
    dict of key to Record

    Raises
    ------
    TypeError, ValueError
        ``store`` is not a path to a file that can be created or written
        (checked when the store is opened, before anything runs).
    ParcvError
        For ``cross_validate``, every fit failed (with a numeric
        ``error_score``); the records are stored first.
    RunInterrupted
        On Ctrl-C: in-flight work is cancelled, finished records are stored,
        and the message says how to resume.

    Warns
    -----
    FitFailedWarning
        For ``cross_validate``, some fits failed and scored ``error_score``.
    """
    show = check_progress(progress)
    if save_models and store is None:
        raise ValueError("save_models=True needs store=path: models are written beside it.")
    st = _open(plan, data, kind, store, resume=resume, overwrite=overwrite, journal=journal)
    if st.rechosen and store is not None:  # its final model was fitted for the old choice
        (_models_dir(store) / "final.joblib").unlink(missing_ok=True)
    with store_session(st):
        done = _resumable(store, st.records() if resume else {})
        bar = Progress(plan.n_units, show, initial=len(done), metric=plan.scoring.refit)

        def on_batch(batch: list[Record]) -> None:
            st.add(batch)
            bar.update(batch)

        try:
            records = run_plan(plan, data, backend, done=done, on_batch=on_batch)
        except KeyboardInterrupt as err:
            raise RunInterrupted(_interrupt_message(store, st.records(), plan)) from err
        finally:
            bar.close()
    if save_models and ("final",) in records:
        _save_final(store, records[("final",)])  # type: ignore[arg-type]
    if kind == "cross_validate":  # search and nested_cv report failures as they select
        report_fit_failures(plan, records, stacklevel=4)
    return records


def _interrupt_message(store: str | Path | None, stored: Mapping[Key, Record], plan: Plan) -> str:
    if store is None:
        return (
            "Interrupted. Nothing was kept (store=None): pass store='run.sqlite' to keep "
            "finished fits and resume later."
        )
    missing = plan.n_units - len(stored)
    return (
        f"Interrupted. {len(stored)} finished units are safe in {str(store)!r}; "
        f"run the same call again with resume=True to compute only the {missing} missing."
    )


def _save_final(store: str | Path, record: Record) -> None:
    import joblib

    folder = _models_dir(store)
    folder.mkdir(mode=0o700, exist_ok=True)
    joblib.dump(record.estimator, folder / "final.joblib")
    (folder / "final.joblib").chmod(0o600)


def _folds_from_store(
    path: Path,
) -> tuple[dict[int, Fold], dict[int | None, Sequence[Fold]]]:
    outer: dict[int, Fold] = {}
    inner: dict[int | None, list[Fold]] = {}
    for o, i, train, test in read_folds(path):
        if i is None:
            outer[o] = Fold(train, test)  # type: ignore[index]
        else:
            inner.setdefault(o, []).append(Fold(train, test))
    inner_folds: dict[int | None, Sequence[Fold]] = {o: tuple(f) for o, f in inner.items()}
    inner_folds.update(read_partitions(path))
    # Keep the order the plan had: all data first, then outer folds.
    order = sorted(inner_folds, key=lambda o: -1 if o is None else o)
    return outer, {o: inner_folds[o] for o in order}


def _plan_from_store(meta: dict[str, str], path: Path) -> Plan:
    desc = json.loads(meta["plan"])
    outer, inner = _folds_from_store(path)
    candidates = tuple(Candidate(c["index"], c["params"]) for c in desc["candidates"])
    batches = tuple(tuple(b) for b in desc.get("batches", ()))
    names = desc.get("criteria")
    complexity = desc["selection"]["complexity"]
    rule = desc["selection"]["rule"]
    return Plan(
        estimator=None,
        candidates=candidates,
        scoring=Scoring(
            dict.fromkeys(desc["metrics"], _not_stored), desc["refit"], desc["multimetric"]
        ),
        outer_folds=tuple(outer[o] for o in sorted(outer)),
        inner_folds=inner,
        units=make_units(inner, len(candidates), batches, names is not None),
        refit_outers=tuple(sorted(outer)),
        final=desc["final"],
        selection=Selection(rule, complexity if rule == "one_se" else None),
        error_score=desc["error_score"]
        if desc["error_score"] == "raise"
        else float(desc["error_score"]),
        return_train_score=desc["return_train_score"],
        n_samples=desc["n_samples"],
        fast_cv=desc.get("fast_cv", False),
        batches=batches,
        criteria=None if names is None else CriteriaRequest(tuple(names)),
    )


def _not_stored(*args: Any) -> float:
    raise ParcvError("scorers are not stored; rerun the call to compute new scores.")


def load_run(
    store: str | Path, *, load_models: bool = False
) -> tuple[str, Plan, dict[Key, Record]]:
    """Read a store into (kind, plan view, records) without recomputing anything."""
    path = check_store_to_read(store)
    meta, records = read_store(path)
    if "plan" not in meta:
        raise ParcvError(f"store {str(path)!r} has no plan description; it is not a parcv store.")
    plan = _plan_from_store(meta, path)
    if load_models:
        _check_saved_model(path, meta["kind"], plan)
        records = _resumable(path, records)
    return meta["kind"], plan, records


def _check_saved_model(path: Path, kind: str, plan: Plan) -> None:
    """``load_models=True`` needs the model a ``save_models=True`` run wrote beside the store."""
    if not plan.final:
        what = "the run had refit=False, so no final model was fitted"
        if kind == "cross_validate":
            what = "cross_validate fits no final model"
        raise ValueError(
            f"load_models=True, but store {str(path)!r} has no model to load: {what}. "
            "Call load(store) without load_models; rerun with refit=True and "
            "save_models=True to keep a fitted model."
        )
    if not (_models_dir(path) / "final.joblib").is_file():
        raise ValueError(
            f"load_models=True, but store {str(path)!r} was written without "
            "save_models=True: no fitted model is kept beside it. Rerun the same call with "
            "resume=True and save_models=True (only the final refit runs again), refit "
            "the estimator with result.best_params_ yourself, or call load(store) without "
            "load_models."
        )


def empty_index() -> np.ndarray:
    """An empty index array."""
    return np.empty(0, dtype=np.intp)
