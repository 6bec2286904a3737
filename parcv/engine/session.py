"""One run of a plan: fingerprint, store, resume, progress, interrupt, load."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from parcv.criteria.tasks import CriteriaRequest
from parcv.engine.options import RunOptions
from parcv.engine.progress import FitLog, Progress, check_progress, verbose_output
from parcv.engine.runner import run_plan
from parcv.errors import (
    ModelNotAvailableError,
    ParcvError,
    RunInterrupted,
    StoreDamagedError,
    UnfinishedRunError,
)
from parcv.plan.build import Plan, choice_digest, fingerprint, make_units
from parcv.plan.data import Dataset
from parcv.plan.interval import BBCRequest, IntervalRequest
from parcv.plan.iterations import Iterations
from parcv.plan.keys import ContentKeys, content_keys
from parcv.plan.kinds import KINDS, kind_of
from parcv.plan.partition import PartitionFolds
from parcv.plan.records import Key, Record, Unit, unit_of
from parcv.plan.reprs import stable_repr
from parcv.plan.scoring import Scoring
from parcv.plan.selection import Selection
from parcv.plan.space import Candidate
from parcv.plan.splits import Fold
from parcv.plan.version import __version__
from parcv.results.aggregate import race_mask, report_fit_failures
from parcv.results.objects import FinalModel
from parcv.results.partial import missing_parts
from parcv.stats.racing import Racing
from parcv.store.lock import lock_store
from parcv.store.sqlite import (
    ReusedCounts,
    Store,
    check_store,
    check_store_to_read,
    open_store,
    params_json,
    read_ckeys,
    read_counts,
    read_folds,
    read_model_entry,
    read_partitions,
    read_store,
    store_error,
    store_session,
)

__all__ = [
    "count_stored",
    "execute_plan",
    "expected_keys",
    "load_run",
    "missing_keys",
    "load_saved_model",
    "plan_meta",
    "pending_refits",
    "reuse_message",
    "units_message",
]

_log = logging.getLogger("parcv")


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
        "racing": None if plan.racing is None else asdict(plan.racing),
        "interval": None if plan.interval is None else asdict(plan.interval),
        "bbc": None if plan.bbc is None else asdict(plan.bbc),
        "predictions": list(plan.predictions),
        **(
            {}
            if plan.iterations is None
            else {
                "iterations": asdict(plan.iterations),
                "paths": [list(p) for p in plan.paths],
                "path_methods": list(plan.path_methods),
            }
        ),
        # A seed parcv drew (none was given): a resume of this store reuses it.
        **({} if plan.random_state is None else {"random_state": plan.random_state}),
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


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_saved_model(store: str | Path, ckey: str | None = None) -> Any:
    """Load the final model a run saved beside ``store``, after checking its recorded digest.

    Raises
    ------
    ModelNotAvailableError
        The store records no model for its current plan, the file is missing,
        or its SHA-256 differs from the one recorded (the file is then never
        unpickled).
    """
    path = Path(store)
    entry = read_model_entry(path, ckey)
    how = (
        "Rerun the same call with resume=True and save_models=True (command line: parcv run "
        "--resume; only the final refit runs again), or refit the estimator with "
        "result.best_params_ yourself."
    )
    if entry is None:
        raise ModelNotAvailableError(
            f"store {str(path)!r} keeps no fitted final model (the run did not save one). {how}"
        )
    file, digest = entry
    model = _models_dir(path) / file
    if not model.is_file():
        raise ModelNotAvailableError(f"the model file {str(model)!r} of store {str(path)!r} "
                                     f"is missing. {how}")  # fmt: skip
    if _file_digest(model) != digest:
        raise ModelNotAvailableError(
            f"the model file {str(model)!r} does not match the SHA-256 store {str(path)!r} "
            f"recorded for it, so it was not loaded (it may have been replaced). {how}"
        )
    import joblib

    return joblib.load(model)


@dataclass(frozen=True)
class Reuse:
    """What a run takes from its store: records by graph key, and refits to look up."""

    done: dict[Key, Record]
    twins: dict[Key, tuple[Unit, ...]]
    lookup: Callable[[Unit], Record | None] | None
    n_stored: int


def _rescored(record: Record, plan: Plan) -> Record | None:
    """A stored record as this plan records it; a failure takes this plan's error_score."""
    if record.ok and not record.score_errors:
        return record
    if plan.error_score == "raise" or record.folds is not None:
        return None  # rerun: it must raise here, or its per-fold failures are not kept
    score = float(plan.error_score)
    if record.ok:  # only the scores whose scorer raised take this run's error_score
        failed = record.score_errors
        return replace(
            record,
            test_scores={k: score if f"test:{k}" in failed else v
                         for k, v in record.test_scores.items()},
            train_scores={k: score if f"train:{k}" in failed else v
                          for k, v in record.train_scores.items()},
        )  # fmt: skip
    return replace(
        record,
        test_scores=dict.fromkeys(record.test_scores, score),
        train_scores=dict.fromkeys(record.train_scores, score),
    )


def _twins(graph: dict[Key, str], plan: Plan) -> dict[Key, tuple[Unit, ...]]:
    """Units equal in content to an earlier unit of the plan (not fast CV: batches differ)."""
    if plan.fast_cv:
        return {}
    first: dict[str, Key] = {}
    twins: dict[Key, list[Unit]] = {}
    for key, ckey in graph.items():
        if ckey in first:
            twins.setdefault(first[ckey], []).append(unit_of(key))
        else:
            first[ckey] = key
    return {k: tuple(v) for k, v in twins.items()}


def _reuse(st: Store, plan: Plan, keys: ContentKeys, *, with_model: bool) -> Reuse:
    """Find this plan's units among the store's records, by content key."""
    graph = keys.graph_keys(plan)
    twins = _twins(graph, plan)
    if st.path is None or st.n_records() == 0 or plan.estimators:
        # A store keeps no fold's fitted estimator: a run that returns them fits every fold.
        return Reuse({}, twins, None, 0)
    stored = st.stored(graph.values())
    done = {}
    for key, ckey in graph.items():
        found = stored.get(ckey)
        record = None if found is None else _rescored(replace(found, unit=unit_of(key)), plan)
        if record is not None:
            done[key] = record
    # A failure rescored with this run's error_score is written back; the rest only claimed.
    st.add(r for r in done.values() if not r.ok or r.score_errors)
    st.claim(r for r in done.values() if r.ok and not r.score_errors)

    def lookup(unit: Unit) -> Record | None:
        ckey = keys.key(unit)
        if "model" in kind_of(unit).keeps:
            # A final record is complete only with its fitted model, checked by its digest.
            if not with_model or not _has_model(st, ckey):
                return None
            try:
                estimator = load_saved_model(st.path, ckey)  # type: ignore[arg-type]
            except ModelNotAvailableError:
                return None
            found = st.stored([ckey]).get(ckey)
            if found is None or not found.ok:
                return None
            return replace(found, unit=unit, estimator=estimator)
        found = st.stored([ckey]).get(ckey)
        return None if found is None else _rescored(replace(found, unit=unit), plan)

    return Reuse(done, twins, lookup, st.n_records())


def _has_model(st: Store, ckey: str) -> bool:
    return st.has_model(ckey)


def _open(
    plan: Plan, data: Dataset, kind: str, store: str | Path | None, keys: ContentKeys,
    **options: Any,
) -> Store:  # fmt: skip
    if store is None:  # nothing persists: no fingerprint, description or fold blobs needed
        return open_store(None, {}, [], labels=())
    labels = tuple((c.id, params_json(c.params)) for c in plan.candidates)
    meta = plan_meta(plan, kind, fingerprint(plan, data))
    target = data.y if plan.predictions else None
    return open_store(store, meta, _plan_folds(plan), labels=labels, key_of=keys.key,
                      partitions=_plan_partitions(plan), target=target, **options)  # fmt: skip


def _refits(n: int) -> str:
    return f"refit{'s' * (n != 1)}"


def reuse_message(n_reused: int, n_units: int, n_pending: int = 0) -> str:
    """Say how much of a plan a store already holds, before the run.

    ``n_pending`` refits fit the candidate their fits choose: whether the
    store holds them is known only once the fits are in, so they are counted
    apart, neither reused nor to compute.

    Examples
    --------
    >>> reuse_message(840, 1000)
    'reusing 840 of 1,000 units; 160 to compute'
    >>> reuse_message(216, 258, 6)
    'reusing 216 of 258 units; 36 to compute, and 6 refits of the chosen candidates, \
reused if the store holds them'
    """
    to_compute = n_units - n_reused - n_pending
    text = f"reusing {n_reused:,} of {n_units:,} units; {to_compute:,} to compute"
    if n_pending:
        them = "them" if n_pending != 1 else "it"
        each = "s" if n_pending != 1 else ""
        text += (
            f", and {n_pending:,} {_refits(n_pending)} of the chosen candidate{each}, reused if "
            f"the store holds {them}"
        )
    return text


def pending_refits(plan: Plan, *, with_model: bool) -> int:
    """Units a store may hold only for the candidate chosen: refits (and a saved final).

    A final model is reused only with its saved model (``with_model``). A plan that
    returns its fitted estimators reuses nothing (see ``_reuse``), so none is pending.
    """
    if plan.estimators:
        return 0
    return len(plan.refit_outers) + int(plan.final and with_model)


def units_message(n_units: int, counts: ReusedCounts) -> str:
    """Say, after a run, how its units got their records (as :func:`reuse_message` did).

    Examples
    --------
    >>> from parcv.store.sqlite import ReusedCounts
    >>> units_message(258, ReusedCounts({"fit": 216, "refit": 5, "final": 1}, 36, 36))
    '258 units: 222 reused from the store (including 6 refits of chosen candidates), 36 computed'
    >>> units_message(10, ReusedCounts({}, 10, 7))
    '10 units computed (3 of them identical to another unit, fitted once)'
    """
    n_reused = sum(counts.reused.values())
    n_refits = sum(n for k, n in counts.reused.items() if k in KINDS and KINDS[k].after_fits)
    computed = n_units - n_reused
    if n_reused:
        whose = "a chosen candidate" if n_refits == 1 else "chosen candidates"
        refits = f" (including {n_refits:,} {_refits(n_refits)} of {whose})"
        text = (
            f"{n_units:,} units: {n_reused:,} reused from the store"
            f"{refits if n_refits else ''}, {computed:,} computed"
        )
    else:
        text = f"{n_units:,} units computed"
    shared = counts.computed - counts.fitted
    if shared > 0:
        text += f" ({shared:,} of them identical to another unit, fitted once)"
    return text


def count_stored(plan: Plan, data: Dataset, store: str | Path) -> tuple[int, int, int]:
    """Return (this plan's fits found in ``store`` by content key, its fits, store's records).

    Read-only. Refits are not counted: which candidate they fit is known
    only once the fits are in.
    """
    path = Path(store)
    graph = content_keys(plan, data).graph_keys(plan)
    n_records = read_counts(path)[0] if path.is_file() else 0
    if not n_records:
        return 0, len(graph), 0
    stored = read_ckeys(path)
    return sum(1 for ckey in graph.values() if ckey in stored), len(graph), n_records


def execute_plan(plan: Plan, data: Dataset, kind: str, options: RunOptions) -> dict[Key, Record]:
    """Run a plan as ``options`` say, holding its store's writer lock.

    Reuse what the store holds, commit what finishes.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    kind : {"cross_validate", "search", "nested_cv"}
        Which result the records make (kept in the store for :func:`load_run`).
    options : RunOptions
        The backend, the store and what to do with its records, checked once.
        With ``resume=True`` the run reuses every stored record whose content
        key it needs, whatever plan stored it, and logs "reusing n of m units;
        k to compute".

    Returns
    -------
    dict of key to Record

    Raises
    ------
    StoreLockedError
        Another live parcv run writes the same store (nothing is changed).
    StoreFullError
        The disk holding the store is full: the finished records are kept, and
        the message says to resume once there is space.
    StoreDamagedError
        SQLite cannot read or write the store file (truncated, overwritten).
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
    path = check_store(options.store)
    with nullcontext() if path is None else lock_store(path):
        try:
            return _execute_unlocked(plan, data, kind, options)
        except (sqlite3.Error, OSError) as err:
            failure = _store_failure(path, err)
            if failure is None:
                raise
            raise failure from err


def _store_failure(path: Path | None, err: BaseException) -> ParcvError | None:
    """parcv's error for a store that fails a run (full disk, damaged file); None if not.

    A unit's own exception re-raised by ``error_score="raise"`` (its notes say so) is
    the estimator's, whatever its type: it is left as it is.
    """
    if path is None or any(str(n).startswith("parcv: ") for n in getattr(err, "__notes__", ())):
        return None
    return store_error(path, err)


def _execute_unlocked(
    plan: Plan, data: Dataset, kind: str, options: RunOptions
) -> dict[Key, Record]:
    """The body of :func:`execute_plan`, under the store's lock."""
    store, save_models = options.store, options.save_models
    # verbose >= 1 shows the bar as scikit-learn's verbose shows its log, unless told not to.
    show = check_progress(
        True if options.progress is None and options.verbose else options.progress
    )
    keys = content_keys(plan, data)
    st = _open(plan, data, kind, store, keys, resume=options.resume, overwrite=options.overwrite,
               journal=options.journal)  # fmt: skip
    with store_session(st):
        # A run returns its final model: reuse a stored final only with its saved model,
        # and unpickle that (digest-checked) only when this run asks for models.
        reuse = _reuse(st, plan, keys, with_model=save_models)
        done = reuse.done
        if options.retry_failed and not all(r.ok for r in done.values()):
            # Failed units run again; a refit is keyed by the candidate it fits, so a refit
            # of a choice the retried fits change is not reused by mistake.
            done = {k: r for k, r in done.items() if r.ok}
        if reuse.n_stored:
            pending = pending_refits(plan, with_model=save_models)
            _log.info("%s", reuse_message(len(done), plan.n_units, pending))
        n_folds = len(plan.inner_folds[None]) if None in plan.inner_folds else None
        bar = Progress(plan.n_units, show, initial=len(done), metric=plan.scoring.refit,
                       n_folds=n_folds, done=done.values())  # fmt: skip
        log = FitLog(plan, options.verbose)

        def on_batch(batch: list[Record]) -> None:
            st.add(batch)
            bar.update(batch)
            log.update(batch)

        try:
            with verbose_output(options.verbose):
                records = run_plan(
                    plan, data, options.resolved_backend, done=done, on_batch=on_batch,
                    reuse=reuse.lookup, twins=reuse.twins,
                )  # fmt: skip
        except KeyboardInterrupt as err:
            raise RunInterrupted(_interrupt_message(store, st.records(), plan)) from err
        finally:
            bar.close()
        if save_models and ("final",) in records:
            _save_final(st, records[("final",)])
    report_fit_failures(plan, records)
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


def _save_final(st: Store, record: Record) -> None:
    """Write the final model beside the store and record its digest (skip if it is that one)."""
    import joblib

    assert st.path is not None  # save_models needs a store path (checked above)
    ckey = st.key_of(record.unit)
    if _has_model(st, ckey):
        return  # the reused final's own model: already saved and recorded
    folder = _models_dir(st.path)
    folder.mkdir(mode=0o700, exist_ok=True)
    # One file per final fit's content: growing a sweep back finds its model again.
    model = folder / f"final-{ckey}.joblib"
    joblib.dump(record.estimator, model)
    model.chmod(0o600)
    st.record_model(ckey, model.name, _file_digest(model))


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
    interval = None if desc.get("interval") is None else IntervalRequest(**desc["interval"])
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
        racing=None if desc.get("racing") is None else Racing(**desc["racing"]),
        interval=interval,
        ncv=None if interval is None else interval.fits(desc["n_samples"]),
        bbc=None if desc.get("bbc") is None else BBCRequest(**desc["bbc"]),
        predictions=tuple(desc.get("predictions", ())),
        # Its fit records are read as fits: the units of a plan view are fit units.
        iterations=None if desc.get("iterations") is None else Iterations(**desc["iterations"]),
        paths=tuple(tuple(p) for p in desc.get("paths", ())),
        path_methods=tuple(desc.get("path_methods", ())),
    )


def _plan_from_store_checked(meta: dict[str, str], path: Path) -> Plan:
    """The plan view of a store, or StoreDamagedError saying what in it is wrong."""
    try:
        return _plan_from_store(meta, path)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as err:
        what = (
            f"missing entry {err}" if isinstance(err, KeyError) else f"{type(err).__name__}: {err}"
        )
        raise StoreDamagedError(
            f"store {str(path)!r} is damaged: its plan description cannot be read ({what}). "
            "It was left unchanged. Restore it from a copy, or run again with overwrite=True "
            "(--overwrite) to recompute every unit."
        ) from err


def expected_keys(plan: Plan, records: Mapping[Key, Record]) -> list[Key]:
    """Every record key a finished run of ``plan`` holds (fits, refits, the final refit).

    With racing, the fits a race ruled out (replayed from ``records``) are not expected.
    """
    keys = [k for u in plan.units for k in plan.unit_keys(u)]
    if plan.racing is not None:
        kept = {o: race_mask(plan, records, o) for o in plan.inner_folds}
        keys = [k for k in keys if not KINDS[k[0]].selects or k[2] is None
                or kept[k[1]][k[3], k[2]]]  # type: ignore[index]  # fmt: skip
    keys += [("refit", o) for o in plan.refit_outers]
    return keys + ([("final",)] if plan.final else [])


def missing_keys(plan: Plan, records: Mapping[Key, Record]) -> list[Key]:
    """The record keys a finished run of ``plan`` has and ``records`` lacks."""
    return [k for k in expected_keys(plan, records) if k not in records]


def check_complete(path: Path, plan: Plan, records: Mapping[Key, Record]) -> None:
    """Raise a ParcvError saying how far an interrupted run got and how to finish it."""
    missing = missing_keys(plan, records)
    if not missing:
        return
    n_units = len(expected_keys(plan, records))
    raise UnfinishedRunError(
        f"store {str(path)!r} holds an unfinished run: {n_units - len(missing)} of "
        f"{n_units} units done; missing {'; '.join(missing_parts(missing))}, so its estimates "
        "are not known yet. Run the same call again with resume=True (command line: parcv run "
        "SPEC --out DIR --resume) to compute only the missing units, or load(store, "
        "partial=True) to see the scores of the folds done so far."
    )


def _not_stored(*args: Any) -> float:
    raise ParcvError("scorers are not stored; rerun the call to compute new scores.")


def load_run(
    store: str | Path, *, load_models: bool = False, partial: bool = False
) -> tuple[str, Plan, MutableMapping[Key, Record]]:
    """Read a store into (kind, plan view, records) without recomputing anything.

    The final record carries a :class:`~parcv.results.objects.FinalModel`: it
    loads the saved model (after checking its recorded SHA-256) when
    ``best_estimator_`` is read, or at once with ``load_models=True``; without
    a recorded model it says so and how to get one. Nothing is unpickled
    unless asked. ``partial=True`` returns the records of an unfinished run
    too (else it is refused, saying how far it got).
    """
    path = check_store_to_read(store)
    try:
        return _load_run(path, load_models=load_models, partial=partial)
    except sqlite3.DatabaseError as err:  # damaged below what parcv reads by name
        failure = store_error(path, err)
        if failure is None:
            raise
        raise failure from err


def _load_run(
    path: Path, *, load_models: bool, partial: bool
) -> tuple[str, Plan, MutableMapping[Key, Record]]:
    """The body of :func:`load_run`."""
    meta, records = read_store(path)
    if "plan" not in meta:
        raise ParcvError(f"store {str(path)!r} has no plan description; it is not a parcv store.")
    if "kind" not in meta:
        raise StoreDamagedError(
            f"store {str(path)!r} is damaged: its meta table has no entry 'kind' (which result "
            "it holds). It was left unchanged. Restore it from a copy, or run again with "
            "overwrite=True (--overwrite) to recompute every unit."
        )
    plan = _plan_from_store_checked(meta, path)
    if not partial:
        check_complete(path, plan, records)
    if load_models:
        _check_saved_model(path, meta["kind"], plan)
    final = records.get(("final",))
    if final is not None:
        try:
            model = FinalModel(load_saved_model(path)) if load_models else _lazy_model(path)
        except ModelNotAvailableError as err:
            if load_models:
                raise ValueError(f"load_models=True, but {err}") from err
            model = FinalModel(reason=str(err))
        records[("final",)] = replace(final, estimator=model)
    return meta["kind"], plan, records


def _lazy_model(path: Path) -> FinalModel:
    if read_model_entry(path) is None:
        load_saved_model(path)  # raises: says there is no model and how to get one
    return FinalModel(loader=partial(load_saved_model, path))


def _check_saved_model(path: Path, kind: str, plan: Plan) -> None:
    """``load_models=True`` needs a final model, which only a run with refit fits."""
    if not plan.final:
        what = "the run had refit=False, so no final model was fitted"
        if kind == "cross_validate":
            what = "cross_validate fits no final model"
        raise ValueError(
            f"load_models=True, but store {str(path)!r} has no model to load: {what}. "
            "Call load(store) without load_models; rerun with refit=True and "
            "save_models=True to keep a fitted model."
        )


def empty_index() -> np.ndarray:
    """An empty index array."""
    return np.empty(0, dtype=np.intp)
