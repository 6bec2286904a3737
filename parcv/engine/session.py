"""One run of a plan: fingerprint, store, resume, progress, interrupt, load."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from parcv.criteria.tasks import CriteriaRequest
from parcv.engine.options import RunOptions
from parcv.engine.progress import START_LOG, FitLog, Progress, check_progress, verbose_output
from parcv.engine.runner import distribution_versions, run_plan
from parcv.errors import (
    ModelNotAvailableError,
    ParcvError,
    PlanMismatchError,
    RunInterrupted,
    StoreDamagedError,
    UnfinishedRunError,
)
from parcv.plan.build import Plan, choice_digest, fingerprint, make_units
from parcv.plan.code import Environment, describe_changes
from parcv.plan.data import Dataset
from parcv.plan.interval import BBCRequest, IntervalRequest
from parcv.plan.iterations import Iterations
from parcv.plan.keys import ContentKeys, content_keys, unseeded_parameters
from parcv.plan.kinds import KINDS, Key, kind_of
from parcv.plan.partition import PartitionFolds
from parcv.plan.record_table import RecordTable
from parcv.plan.records import Record, Unit, unit_of
from parcv.plan.reprs import stable_repr
from parcv.plan.scoring import Scoring
from parcv.plan.selection import Selection
from parcv.plan.space import Candidate
from parcv.plan.splits import Fold
from parcv.plan.tokens import Tokenizer
from parcv.plan.units import UnitGrid, as_units
from parcv.plan.version import __version__
from parcv.results.aggregate import race_mask, reemit_unit_warnings, report_fit_failures
from parcv.results.objects import FinalModel
from parcv.results.partial import missing_parts
from parcv.stats.racing import Racing
from parcv.store.checks import check_store, check_store_to_read
from parcv.store.lock import lock_store
from parcv.store.messages import kept_units, store_error
from parcv.store.opening import open_store
from parcv.store.readers import (
    ReusedCounts,
    Stored,
    count_unnamed_records,
    read_by_values,
    read_ckeys,
    read_counts,
    read_folds,
    read_kept,
    read_model_entries,
    read_model_entry,
    read_partitions,
    read_store,
    read_unidentified,
)
from parcv.store.rows import CandidateLabels, params_plain
from parcv.store.trust import TAG_PREFIX, key_path, model_tag, user_key, verify_tag
from parcv.store.writer import Store, retag_models, store_session

__all__ = [
    "CodeChanges",
    "StoreKeys",
    "StoreSurvey",
    "final_model",
    "plan_from_store",
    "count_stored",
    "survey_store",
    "execute_plan",
    "expected_keys",
    "load_run",
    "missing_of_expected",
    "load_saved_model",
    "trust_saved_model",
    "plan_meta",
    "pending_refits",
    "reuse_message",
    "reused_message",
    "rounds_reuse_message",
    "units_message",
    "final_refitted",
]

# Its lines say what a run finds in its store: on stderr for a run that shows progress.
_log = START_LOG


def plan_meta(
    plan: Plan, kind: str, digest: str, labels: Sequence[tuple[str, str]] | None = None
) -> dict[str, str]:
    """Describe a plan in plain JSON, enough to rebuild its results from a store.

    ``labels``: the candidates' ids and parameters' JSON (:func:`params_json`), as the
    store keeps them: their text is written into the description as it is, the same text
    as the candidates' dicts would give, without building a dict per candidate (a million-
    unit run's 220,000, whose memory the driver kept for the rest of the run).
    """
    selection = plan.selection
    description = {
        "candidates": []
        if labels is not None
        else [
            {"index": c.index, "id": c.id, "params": params_plain(c.params)}
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
        "plan": json.dumps(description)
        if labels is None
        else _with_candidates(json.dumps(description), plan.candidates, labels),
    }


def _with_candidates(
    text: str, candidates: Sequence[Any], labels: Sequence[tuple[str, str]]
) -> str:
    """A description's JSON with its (empty) candidates written from their labels' JSON."""
    head = '{"candidates": []'
    assert text.startswith(head)  # the first entry of plan_meta's description
    entries = ", ".join(
        f'{{"index": {c.index}, "id": {json.dumps(cid)}, "params": {params}}}'
        for c, (cid, params) in zip(candidates, labels, strict=True)
    )
    return f'{{"candidates": [{entries}]' + text[len(head) :]


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


_REFIT_HOW = (
    "Rerun the same call with resume=True and save_models=True (command line: parcv run "
    "--resume; only the final refit runs again, and its model is saved under your key), or "
    "refit the estimator with result.best_params_ yourself."
)


def load_saved_model(store: str | Path, ckey: str | None = None) -> Any:
    """Load the final model a run saved beside ``store``, once its tag verifies with your key.

    Unpickling runs code: a model file is loaded only when its HMAC tag, which the
    store records, verifies with the user's model key (:mod:`parcv.store.trust`),
    which no store holds. A model an earlier parcv saved (with its SHA-256 only) is
    loaded only once the user vouches for it with :func:`trust_saved_model`.

    Raises
    ------
    ModelNotAvailableError
        The store records no model for its current plan, the file is missing, or its
        tag does not verify (the file is then never unpickled).
    """
    path = Path(store)
    entry = read_model_entry(path, ckey)
    if entry is None:
        raise _no_saved_model(path)
    file, tag = entry
    model = _models_dir(path) / file
    if not model.is_file():
        raise ModelNotAvailableError(f"the model file {str(model)!r} of store {str(path)!r} "
                                     f"is missing. {_REFIT_HOW}")  # fmt: skip
    refused = _unverified(path, model, file, tag)
    if refused is not None:
        raise ModelNotAvailableError(f"{refused} {_REFIT_HOW}")
    import joblib

    return joblib.load(model)


def _no_saved_model(path: Path) -> ModelNotAvailableError:
    return ModelNotAvailableError(
        f"store {str(path)!r} keeps no fitted final model (the run did not save one). {_REFIT_HOW}"
    )


def _unverified(path: Path, model: Path, file: str, tag: str) -> str | None:
    """Why a saved model file may not be unpickled (None: its tag verifies with your key)."""
    if not tag.startswith(TAG_PREFIX):
        return (
            f"the model file {str(model)!r} was saved by an earlier parcv, which recorded only "
            f"its SHA-256 in store {str(path)!r}: whoever can write the store can replace "
            "both, and unpickling a file runs its code, so it was not loaded. If you wrote "
            "this store and nobody else could write it, vouch for its model with "
            f"parcv.trust_saved_model({str(path)!r}) (it checks the SHA-256 and tags the file "
            "with your key); else refit."
        )
    key = user_key(create=False)
    if key is None or not verify_tag(key, model, file, tag):
        where = "there is none" if key is None else "it does not verify"
        return (
            f"the model file {str(model)!r} was not loaded: its tag in store {str(path)!r} "
            f"must verify with your model key {str(key_path())!r}, and {where} (the model was "
            "saved by another user, or under another key, or the file or the store was "
            "changed since), and unpickling a file runs its code."
        )
    return None


def trust_saved_model(store: str | Path) -> int:
    """Vouch for the models an earlier parcv saved beside a store you wrote: tag them.

    An earlier parcv recorded a saved model's SHA-256 only, so its file is refused
    by :func:`parcv.load`'s ``best_estimator_`` and by a resume. Call this only
    for a store that you wrote and that nobody else could write: each model file
    that matches the SHA-256 recorded for it is tagged with your model key, and
    loads from then on. A file that does not match is left as it is.

    Parameters
    ----------
    store : str or Path
        The store file (``run.sqlite``, or ``DIR/store.sqlite`` of ``parcv run``).

    Returns
    -------
    int
        How many model files were tagged now.

    Raises
    ------
    StoreDamagedError
        The store differs from its seal (:mod:`parcv.store.seal`): tagging would
        vouch for what changed.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    >>> store = pathlib.Path(tempfile.mkdtemp()) / "run.sqlite"
    >>> r = parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial",
    ...                  store=store)
    >>> parcv.trust_saved_model(store)  # it saved no model: nothing to vouch for
    0
    """
    path = check_store_to_read(store)
    found = [(ckey, _models_dir(path) / file, file, digest)
             for ckey, file, digest in read_model_entries(path)
             if not digest.startswith(TAG_PREFIX)]  # fmt: skip
    matching = [(c, m, f) for c, m, f, d in found if m.is_file() and _file_digest(m) == d]
    if not matching:
        return 0
    key = user_key(create=True)
    assert key is not None  # made when missing
    with lock_store(path):
        retag_models(path, {ckey: model_tag(key, model, file) for ckey, model, file in matching})
    return len(matching)


@dataclass(frozen=True)
class Reuse:
    """What a run takes from its store: records by graph key, and refits to look up.

    ``changes`` counts the units whose record the store holds for other code
    or versions (recomputed, or kept with ``resume="values"``).
    """

    done: dict[Key, Record]
    twins: dict[Key, tuple[Unit, ...]]
    lookup: Callable[[Unit], Record | None] | None
    n_stored: int
    changes: CodeChanges | None = None


@dataclass
class StoreKeys:
    """The content keys whose records a run in rounds takes, as the run keeps them.

    With a store: every key it holds, read once when the run opens it, then each
    record the run stores added. A round's part is looked up among them, not among
    keys read from the store anew for every part (a run in rounds adds a plan per
    part, and each read takes as long as the store is large). Without a store: the
    keys of the run's own records of fits that ran and scored (a failure is fitted
    again). ``held``: those records, taken as they are rather than read back.
    ``earlier``: the store held records when the run opened it. Without them, every
    record is the run's own, of its own code, so no unit missing by content key has
    a record of other code to look for. ``unidentified``: some of them are of a
    parcv before code identity (every record the run stores has its values key).
    """

    present: set[str] = field(default_factory=set)
    earlier: bool = False
    unidentified: bool = False
    held: dict[str, Record] = field(default_factory=dict)

    def add(
        self, records: Iterable[Record], key_of: Callable[[Unit], str], *, stored: bool
    ) -> None:
        """Add the run's new records (``stored``: the store now holds each under its key)."""
        for record in records:
            ckey = key_of(record.unit)
            scored = record.ok and not record.score_errors
            if stored or scored:
                self.present.add(ckey)
            if scored:
                self.held.setdefault(ckey, record)


@dataclass(frozen=True)
class CodeChanges:
    """Units whose record a store holds for other code or versions, counted per cause.

    Parameters
    ----------
    counts : dict of str to int
        Per cause (``"scikit-learn 1.9.1 → 1.9.2"``, ``"class MyModel in
        models.py changed"``), the units it makes stale; a unit with several
        causes counts under each.
    n_units : int
        Units with such a record.
    n_unidentified : int, default=0
        Records of the store that an earlier parcv wrote without saying which
        code they ran: no unit can take them.

    Examples
    --------
    >>> changes = CodeChanges({"scikit-learn 1.9.1 → 1.9.2": 4210}, 4210)
    >>> changes.lines(kept=False)
    ['scikit-learn 1.9.1 → 1.9.2: 4,210 units recomputed']
    >>> changes.lines(kept=True)[0].endswith("units kept from records of the earlier code "
    ...                                      "(resume='values')")
    True
    """

    counts: dict[str, int]
    n_units: int
    n_unidentified: int = 0

    def lines(self, *, kept: bool) -> list[str]:
        """One line per cause, the most units first."""
        done = "kept from records of the earlier code (resume='values')" if kept else "recomputed"
        order = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))
        lines = [f"{cause}: {n:,} unit{'s' * (n != 1)} {done}" for cause, n in order]
        n = self.n_unidentified
        if n:
            lines.append(
                f"{n:,} stored record{'s were' if n != 1 else ' was'} written by an earlier "
                f"parcv that did not record which code {'they' if n != 1 else 'it'} ran: no unit "
                "takes them (parcv prune drops what the last run did not use)"
            )
        return lines


def _stale(
    keys: ContentKeys, missing: Sequence[Key], find: Callable[[set[str]], dict[str, Stored]]
) -> dict[Key, tuple[Stored, tuple[str, ...]]]:
    """Units missing by content key whose values the store holds for other code, and why."""
    units = [unit_of(k) for k in missing]
    vkeys = keys.values_keys(units)
    found = find(set(vkeys))
    if not found:
        return {}
    out: dict[Key, tuple[Stored, tuple[str, ...]]] = {}
    memo: dict[tuple[int, bytes], tuple[str, ...]] = {}
    for key, unit, vkey in zip(missing, units, vkeys, strict=True):
        stored = found.get(vkey)
        if stored is None:
            continue
        digest, env = keys.environment(unit)
        pair = (id(stored.environment), digest)
        causes = memo.get(pair)
        if causes is None:
            old = stored.environment or Environment()
            causes = memo[pair] = describe_changes(old, env) or ("the code it runs changed",)
        out[key] = (stored, causes)
    return out


def _count_changes(
    stale: Mapping[Key, tuple[Stored, tuple[str, ...]]], n_unidentified: int
) -> CodeChanges:
    counts: dict[str, int] = {}
    for _, causes in stale.values():
        for cause in causes:
            counts[cause] = counts.get(cause, 0) + 1
    return CodeChanges(counts, len(stale), n_unidentified)


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


# Units whose values keys one query of the store looks for at a time: a plan's missing
# units are not all held at once (11M of them would take gigabytes).
_STALE_CHUNK = 1_000_000


@dataclass(frozen=True)
class _Scan:
    """A plan's records among a store's content keys: those found, and the rest's old code."""

    found: list[tuple[Key, str]]
    n_missing: int
    stale: dict[Key, tuple[Stored, tuple[str, ...]]]


def _scan(
    plan: Plan, keys: ContentKeys, present: set[str], find: Callable[[set[str]], dict[str, Stored]]
) -> _Scan:
    """Match a plan's records to the content keys ``present`` in a store, chunk by chunk.

    Only what is found is kept; the missing units are looked up by values key
    (:func:`_stale`) a chunk at a time.
    """
    found: list[tuple[Key, str]] = []
    missing: list[Key] = []
    stale: dict[Key, tuple[Stored, tuple[str, ...]]] = {}
    n_missing = 0
    for chunk in keys.graph_key_chunks(plan):
        for key, ckey in chunk:
            if ckey in present:
                found.append((key, ckey))
            else:
                missing.append(key)
        if len(missing) >= _STALE_CHUNK:
            stale.update(_stale(keys, missing, find))
            n_missing, missing = n_missing + len(missing), []
    if missing:
        stale.update(_stale(keys, missing, find))
    return _Scan(found, n_missing + len(missing), stale)


def _none(vkeys: set[str]) -> dict[str, Stored]:
    """No stored record of other code, for any values key."""
    return {}


def _reuse(
    st: Store,
    plan: Plan,
    keys: ContentKeys,
    *,
    with_model: bool,
    keep_code: bool = False,
    pid: int = 0,
    known: StoreKeys | None = None,
) -> Reuse:
    """Find plan ``pid``'s units among the store's records, by content key.

    A unit missing by content key whose values the store holds for other code
    is counted per cause in ``changes``; with ``keep_code`` (``resume="values"``)
    it takes that record. ``known``: the keys a run in rounds keeps, with or
    without a store (else read from the store).
    """
    twins = keys.twins(plan)
    if plan.estimators:
        # A store keeps no fold's fitted estimator: a run that returns them fits every fold.
        return Reuse({}, twins, None, 0)
    if known is None:
        if st.path is None or st.n_records() == 0:
            return Reuse({}, twins, None, 0)
        known = StoreKeys(read_ckeys(Path(st.path)), earlier=True, unidentified=True)
    elif not known.present:  # nothing to look up, so no unit's content key is computed
        return Reuse({}, twins, None, 0)
    scan = _scan(plan, keys, known.present, st.by_values if known.earlier else _none)
    held = known.held
    wanted = {ckey for _, ckey in scan.found if ckey not in held}
    stored = st.stored(wanted) if wanted else {}
    stored.update((ckey, held[ckey]) for _, ckey in scan.found if ckey in held)
    done = {}
    n_missing, stale = scan.n_missing, scan.stale
    for key, ckey in scan.found:
        found = stored.get(ckey)
        if found is None:  # gone since the scan read the keys
            n_missing += 1
            continue
        record = _rescored(replace(found, unit=unit_of(key)), plan)
        if record is not None:
            done[key] = record
    n_old = st.n_unidentified() if known.unidentified else 0
    if n_old:  # records stored before parcv kept code identity: those taken by key get theirs
        st.identify(done.values(), pid)
        n_old = st.n_unidentified()
    changes = _count_changes(stale, n_old if n_missing else 0)
    if keep_code and stale:
        done.update(_keep(st, plan, stale, pid))
    # A failure rescored with this run's error_score is written back; the rest only claimed.
    st.add((r for r in done.values() if not r.ok or r.score_errors), pid)
    st.claim((r for r in done.values() if r.ok and not r.score_errors), pid)

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
        if found is None and keep_code:  # a refit of the chosen candidate, of other code
            kept = _keep(st, plan, _stale(keys, [unit.key], st.by_values), pid)
            return kept.get(unit.key)
        return None if found is None else _rescored(replace(found, unit=unit), plan)

    return Reuse(done, twins, None if st.path is None else lookup, len(known.present), changes)


def _keep(
    st: Store, plan: Plan, stale: Mapping[Key, tuple[Stored, tuple[str, ...]]], pid: int = 0
) -> dict[Key, Record]:
    """Take the stored records of other code for these units (``resume="values"``)."""
    records = st.stored({found.ckey for found, _ in stale.values()})
    kept: dict[Key, Record] = {}
    pairs = []
    for key, (found, causes) in stale.items():
        record = records.get(found.ckey)
        if record is None:
            continue
        record = _rescored(replace(record, unit=unit_of(key), kept=causes), plan)
        if record is not None:
            kept[key] = record
            pairs.append((record, found.ckey))
    st.keep(pairs, pid)
    return kept


def _has_model(st: Store, ckey: str) -> bool:
    return st.has_model(ckey)


def _open(
    plan: Plan, data: Dataset, kind: str, store: str | Path | None, keys: ContentKeys,
    tokenizer: Tokenizer | None = None, **options: Any,
) -> Store:  # fmt: skip
    if store is None:  # nothing persists: no fingerprint, description or fold blobs needed
        return open_store(None, {}, [], labels=())
    labels = CandidateLabels(plan.candidates)
    meta = options.pop("meta", None) or plan_meta(
        plan, kind, fingerprint(plan, data, tokenizer=tokenizer), labels
    )
    target = data.y if plan.predictions else None
    return open_store(store, meta, _plan_folds(plan), labels=labels, key_of=keys.key,
                      identity_of=keys.identity, block_keys=keys.block_keys,
                      partitions=_plan_partitions(plan),
                      target=target, **options)  # fmt: skip


def _refits(n: int) -> str:
    return f"refit{'s' * (n != 1)}"


def reuse_message(
    n_reused: int, n_units: int, n_pending: int = 0, *, final_refit: bool = False
) -> str:
    """Say how much of a plan a store already holds, before the run.

    ``n_pending`` refits fit the candidate their fits choose: whether the
    store holds them is known only once the fits are in, so they are counted
    apart, neither reused nor to compute. ``final_refit``: the final model is
    fitted again whatever the store holds, as it keeps no fitted model (see
    :func:`final_refitted`); it is said apart too, so that a resume with
    nothing new says "0 to compute".

    Examples
    --------
    >>> reuse_message(840, 1000)
    'reusing 840 of 1,000 units; 160 to compute'
    >>> reuse_message(216, 258, 6)
    'reusing 216 of 258 units; 36 to compute, and 6 refits of the chosen candidates, \
reused if the store holds them'
    >>> reuse_message(6, 7, final_refit=True)
    'reusing 6 of 7 units; 0 to compute, and the final model to refit (a store keeps a \
fitted model only when models are saved)'
    """
    to_compute = n_units - n_reused - n_pending - final_refit
    text = f"reusing {n_reused:,} of {n_units:,} units; {to_compute:,} to compute"
    if n_pending:
        them = "them" if n_pending != 1 else "it"
        each = "s" if n_pending != 1 else ""
        text += (
            f", and {n_pending:,} {_refits(n_pending)} of the chosen candidate{each}, reused if "
            f"the store holds {them}"
        )
    if final_refit:
        text += (
            ", and the final model to refit (a store keeps a fitted model only when models are "
            "saved)"
        )
    return text


def rounds_reuse_message(kept: str, bound: int) -> str:
    """Say what a run in rounds finds in its store, before its rounds are proposed.

    A round is proposed from the records of the rounds before it, so which stored
    units a resume takes is known round by round. ``kept`` counts the units the
    store holds of its last run as its Ctrl-C message did
    (:func:`~parcv.store.messages.kept_kinds`): a resume on the same inputs proposes
    the same rounds and reuses each of them. ``bound`` is the strategy's bound on
    the fits of every round (exact for halving and Hyperband).

    Examples
    --------
    >>> rounds_reuse_message("172 finished units (and 2 refits of a chosen candidate)", 360)
    'the store holds 172 finished units (and 2 refits of a chosen candidate) of its last \
run; each round reuses those it proposes again, of at most 360 units'
    """
    return (
        f"the store holds {kept} of its last run; each round reuses those it proposes "
        f"again, of at most {bound:,} units"
    )


def reused_message(n_reused: int, n_units: int, *, final_refit: bool = False) -> str:
    """Say how many of a finished run's units came from the store (a run in rounds, after).

    ``final_refit``: the final model was fitted again, as the store keeps no
    fitted model (see :func:`reuse_message`).

    Examples
    --------
    >>> reused_message(172, 360)
    'reused 172 of 360 units; 188 computed'
    >>> reused_message(8, 9, final_refit=True)
    'reused 8 of 9 units; 1 computed: the final model (a store keeps a fitted model only when \
models are saved)'
    """
    computed = n_units - n_reused
    text = f"reused {n_reused:,} of {n_units:,} units; {computed:,} computed"
    if final_refit:
        what = ": the final model" if computed == 1 else ", including the final model"
        text += f"{what} (a store keeps a fitted model only when models are saved)"
    return text


def pending_refits(plan: Plan, *, with_model: bool) -> int:
    """Units a store may hold only for the candidate chosen: refits (and a saved final).

    A final model is reused only with its saved model (``with_model``). A plan that
    returns its fitted estimators reuses nothing (see ``_reuse``), so none is pending.
    """
    if plan.estimators:
        return 0
    return len(plan.refit_outers) + int(plan.final and with_model)


def final_refitted(plan: Plan, *, with_model: bool) -> bool:
    """Whether a resume fits the final model again whatever its store holds.

    A run returns its fitted final model, and a store keeps one only with its
    saved model (``with_model``): without it, the final unit is always computed.
    """
    return bool(plan.final) and not with_model and not plan.estimators


def units_message(n_units: int, counts: ReusedCounts) -> str:
    """Say, after a run, how its units got their records (as :func:`reuse_message` did).

    Examples
    --------
    >>> from parcv.store.readers import ReusedCounts
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
    survey = survey_store(plan, data, store)
    return survey.n_found, survey.n_fits, survey.n_records


@dataclass(frozen=True)
class StoreSurvey:
    """What a run of a plan would find in a store, before anything runs.

    ``n_found`` of its ``n_fits`` fits by content key among the store's
    ``n_records`` records; ``changes``: those it holds for other code or
    versions, per cause (what :func:`execute_plan` logs when it starts).
    """

    n_found: int
    n_fits: int
    n_records: int
    changes: CodeChanges


def survey_store(plan: Plan, data: Dataset, store: str | Path) -> StoreSurvey:
    """Survey ``store`` for a run of ``plan``, read-only (``parcv inspect``, ``parcv run``)."""
    path = Path(store)
    n_records = read_counts(path)[0] if path.is_file() else 0
    if not n_records:  # nothing stored: no content key to compute
        return StoreSurvey(0, plan.n_fit_records, 0, CodeChanges({}, 0))
    keys = content_keys(plan, data)
    scan = _scan(plan, keys, read_ckeys(path), lambda vkeys: read_by_values(path, vkeys))
    n_missing = scan.n_missing
    changes = _count_changes(scan.stale, read_unidentified(path) if n_missing else 0)
    return StoreSurvey(len(scan.found), len(scan.found) + n_missing, n_records, changes)


def execute_plan(
    plan: Plan, data: Dataset, kind: str, options: RunOptions
) -> MutableMapping[Key, Record]:
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
) -> MutableMapping[Key, Record]:
    """The body of :func:`execute_plan`, under the store's lock."""
    store, save_models = options.store, options.save_models
    # verbose >= 1 shows the bar as scikit-learn's verbose shows its log, unless told not to.
    show = check_progress(
        True if options.progress is None and options.verbose else options.progress
    )
    tokenizer = Tokenizer()  # one for the call: the code its units reach is read once
    keys = content_keys(plan, data, tokenizer=tokenizer)
    st = _open(plan, data, kind, store, keys, tokenizer, resume=options.resume,
               overwrite=options.overwrite, journal=options.journal)  # fmt: skip
    with store_session(st):
        # A run returns its final model: reuse a stored final only with its saved model,
        # and unpickle that (digest-checked) only when this run asks for models.
        keep_code = options.resume == "values"
        reuse = _reuse(st, plan, keys, with_model=save_models, keep_code=keep_code)
        done = reuse.done
        if options.retry_failed and not all(r.ok for r in done.values()):
            # Failed units run again; a refit is keyed by the candidate it fits, so a refit
            # of a choice the retried fits change is not reused by mistake.
            done = {k: r for k, r in done.items() if r.ok}
        if reuse.n_stored:
            pending = pending_refits(plan, with_model=save_models)
            final = final_refitted(plan, with_model=save_models)
            _log.info("%s", reuse_message(len(done), plan.n_units, pending, final_refit=final))
        for line in [] if reuse.changes is None else reuse.changes.lines(kept=keep_code):
            _log.info("%s", line)
        if done:
            _say_unseeded(plan)
        n_folds = len(plan.inner_folds[None]) if None in plan.inner_folds else None
        # The best so far is only ever shown on the bar: without one, it is not tracked.
        bar = Progress(plan.n_units, show, initial=len(done),
                       metric=plan.scoring.refit if show else None,
                       n_folds=n_folds, done=done.values())  # fmt: skip
        log = FitLog(plan, options.verbose)

        def on_batch(batch: Sequence[Record]) -> None:
            st.add(batch)
            bar.update(batch)
            log.update(batch)

        try:
            with verbose_output(options.verbose):
                records = run_plan(
                    plan, data, options.resolved_backend, done=done, on_batch=on_batch,
                    reuse=reuse.lookup, twins=reuse.twins,
                    versions=distribution_versions(keys.environments.values()),
                )  # fmt: skip
            bar.finish()  # a race stops short of the plan's units: the bar ends at those run
        except KeyboardInterrupt as err:
            raise RunInterrupted(_interrupt_message(store, st.records(), plan)) from err
        finally:
            bar.close()
        if save_models and ("final",) in records:
            _save_final(st, records[("final",)])
    reemit_unit_warnings([records])
    report_fit_failures(plan, records)
    return records


def _say_unseeded(plan: Plan) -> None:
    """A start line when a resume reuses candidates that leave ``random_state=None``."""
    if plan.estimator is None:
        return
    names = unseeded_parameters(plan.estimator, [c.params for c in plan.candidates])
    if names:
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        _log.info(
            "%s random_state=None (%s): where a fit draws randomness, this resume "
            "reuses its stored record as a draw of the same random process rather than "
            "drawing again; set random_state to an int for reproducible runs",
            "the candidates leave" if len(plan.candidates) > 1 else "the estimator leaves",
            shown,
        )  # fmt: skip


def _interrupt_message(store: str | Path | None, stored: Mapping[Key, Record], plan: Plan) -> str:
    return _interrupt_text(store, kept_units(stored), plan.n_units - len(stored))


def _interrupt_text(store: str | Path | None, kept: str, n_missing: int | None) -> str:
    """Say what an interrupted run kept (``kept``: "8 finished units"), how to finish it."""
    if store is None:
        return (
            "Interrupted. Nothing was kept (store=None): pass store='run.sqlite' to keep "
            "finished fits and resume later."
        )
    rest = "the rest" if n_missing is None else f"the {n_missing} missing"
    return (
        f"Interrupted. {kept} are safe in {str(store)!r}; "
        f"run the same call again with resume=True to compute only {rest}."
    )


def _save_final(st: Store, record: Record, pid: int = 0) -> None:
    """Write the final model beside the store and record its digest (skip if it is that one)."""
    import joblib

    assert st.path is not None  # save_models needs a store path (checked above)
    ckey = st.key(record.unit, pid)
    entry = read_model_entry(st.path, ckey) if _has_model(st, ckey) else None
    if entry is not None and _unverified(st.path, _models_dir(st.path) / entry[0], *entry) is None:
        return  # the reused final's own model: already saved, under your key
    folder = _models_dir(st.path)
    folder.mkdir(mode=0o700, exist_ok=True)
    # One file per final fit's content: growing a sweep back finds its model again.
    model = folder / f"final-{ckey}.joblib"
    key = user_key(create=True)
    assert key is not None  # made when missing
    # Into a new file (0600 from mkstemp) renamed over the model's name: a link found there
    # is replaced, never written through, and its target is never chmod-ed.
    fd, temp = tempfile.mkstemp(prefix=f".{model.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            joblib.dump(record.estimator, fh)
        os.replace(temp, model)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    st.record_model(ckey, model.name, model_tag(key, model, model.name))


def _folds_from_store(
    path: Path, pid: int = 0, conn: sqlite3.Connection | None = None
) -> tuple[dict[int, Fold], dict[int | None, Sequence[Fold]]]:
    outer: dict[int, Fold] = {}
    inner: dict[int | None, list[Fold]] = {}
    for o, i, train, test in read_folds(path, pid, conn=conn):
        if i is None:
            outer[o] = Fold(train, test)  # type: ignore[index]
        else:
            inner.setdefault(o, []).append(Fold(train, test))
    inner_folds: dict[int | None, Sequence[Fold]] = {o: tuple(f) for o, f in inner.items()}
    inner_folds.update(read_partitions(path, pid, conn=conn))
    # Keep the order the plan had: all data first, then outer folds.
    order = sorted(inner_folds, key=lambda o: -1 if o is None else o)
    return outer, {o: inner_folds[o] for o in order}


def _plan_from_store(
    meta: dict[str, str], path: Path, pid: int = 0, conn: sqlite3.Connection | None = None
) -> Plan:
    desc = json.loads(meta["plan"])
    outer, inner = _folds_from_store(path, pid, conn)
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


def plan_from_store(
    meta: dict[str, str], path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> Plan:
    """The view of plan ``pid`` of a store, or StoreDamagedError saying what in it is wrong.

    ``meta["plan"]`` is the plan's description (the meta table's for plan 0); ``conn``
    a connection to read it through (:func:`~parcv.store.schema.reading`).
    """
    try:
        return _plan_from_store(meta, path, pid, conn)
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
    return keys + _refit_keys(plan)


def _refit_keys(plan: Plan) -> list[Key]:
    """The keys of a plan's refits: each outer fold's, then the final one."""
    keys: list[Key] = [("refit", o) for o in plan.refit_outers]
    return keys + ([("final",)] if plan.final else [])


def missing_of_expected(plan: Plan, records: Mapping[Key, Record]) -> tuple[list[Key], int]:
    """The record keys a finished run of ``plan`` has and ``records`` lacks, and how many
    records a finished run has (``len(expected_keys(plan, records))``)."""
    found = _missing_from_index(plan, records)
    if found is not None:
        return found
    expected = expected_keys(plan, records)
    return [k for k in expected if k not in records], len(expected)


def _missing_from_index(plan: Plan, records: Mapping[Key, Record]) -> tuple[list[Key], int] | None:
    """:func:`missing_of_expected` with each grid of units read from a table's index.

    Builds a key only for a unit that has no record: a finished million-unit
    run is checked without a Unit or key per unit. None where that cannot be
    read so (no table, or a race that rules fits out).
    """
    if plan.racing is not None or not isinstance(records, RecordTable):
        return None
    n, missing = 0, []
    for block in as_units(plan.units).blocks:
        if isinstance(block, UnitGrid):
            n += len(block)
            missing += [block[j].key for j in np.flatnonzero(~records.held(block)).tolist()]
        else:
            keys = [k for u in block for k in plan.unit_keys(u)]
            n += len(keys)
            missing += [k for k in keys if k not in records]
    ends = _refit_keys(plan)
    return missing + [k for k in ends if k not in records], n + len(ends)


def check_complete(path: Path, plan: Plan, records: Mapping[Key, Record]) -> None:
    """Raise a ParcvError saying how far an interrupted run got and how to finish it."""
    missing, n_units = missing_of_expected(plan, records)
    if not missing:
        return
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
    _check_whole_run(path, meta)
    plan = plan_from_store(meta, path)
    for key, causes in read_kept(path).items():  # records of other code resume="values" kept
        if key in records:
            records[key] = replace(records[key], kept=causes)
    if not partial:
        check_complete(path, plan, records)
    if load_models:
        _check_saved_model(path, meta["kind"], plan)
    final = records.get(("final",))
    if final is not None:
        records[("final",)] = replace(final, estimator=final_model(path, load_models=load_models))
    return meta["kind"], plan, records


def _check_whole_run(path: Path, meta: Mapping[str, str]) -> None:
    """Refuse a schema-4 store whose last plan may be only the last rung of its run.

    Schema 4 kept the description of the last plan a run ran, and a halving search (or
    a nested CV whose searches halve) ran each rung as a plan of its own: its store
    describes the last rung, beside records no plan names. Which rung each record was,
    at which resource, the store does not say, so the result cannot be rebuilt, and
    the last rung alone is not the run's result. A resume rebuilds it from the records.
    """
    if meta.get("schema") != "4" or meta.get("kind") not in ("search", "nested_cv"):
        return
    n_unnamed = count_unnamed_records(path)
    if not n_unnamed:
        return
    raise PlanMismatchError(
        f"store {str(path)!r} was written with store schema 4, which described only the last "
        f"plan a run ran; it also holds {n_unnamed:,} records that plan does not name, as a "
        "successive-halving search (each rung a plan of its own; a nested CV's searches too) "
        "or a sweep edited and resumed into it leaves them. Which rung or sweep each record "
        "was the store does not say, so load() does not rebuild a result that could be the "
        "last rung's alone. Run the same call again with resume=True (command line: parcv "
        "run SPEC --out DIR --resume): it reuses every stored unit, fits only what is "
        "missing, and stores every round, which load() then reads."
    )


def final_model(path: Path, *, load_models: bool) -> FinalModel:
    """The final model of a store's run: loaded now, lazily, or why there is none."""
    try:
        return FinalModel(load_saved_model(path)) if load_models else _lazy_model(path)
    except ModelNotAvailableError as err:
        if load_models:
            raise ValueError(f"load_models=True, but {err}") from err
        return FinalModel(reason=str(err))


def _lazy_model(path: Path) -> FinalModel:
    if read_model_entry(path) is None:
        raise _no_saved_model(path)  # says there is no model and how to get one
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
