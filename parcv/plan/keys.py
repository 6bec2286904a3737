"""Content keys: a unit's identity is a digest of what determines its numbers.

A graph key (``("fit", outer, inner, candidate)``) says where a unit sits in
*one* plan; its content key says whether its result already exists in a
store, whatever plan stored it. A content key covers the estimator class and
its full parameters after the candidate's values are applied, the rows the
unit fits on and scores on, the data (X, y, groups, fit parameters, and the
metadata each scorer and the splitter take: a weighted score is another
record), the scorers, ``return_train_score`` and :data:`NUMBERS_VERSION`. How a candidate
is chosen (refit metric, selection rule) is not in any key: a refit is keyed
by the candidate it fits, so another choice reuses the refits of folds whose
choice did not change.

The code a unit runs is part of its key too (:mod:`parcv.plan.code`): the
estimator's class, the scorers and any function among the parameters, by
distribution version for installed code and by code for the user's own. A
unit's key is its *values key* (the digests above, code only named) combined
with the digest of its :class:`~parcv.plan.code.Environment`; a store keeps
both, so that a run can say which code change made a record stale.

Every candidate's parameters and every fold's index arrays are hashed once;
a unit's key combines three short digests, so keys for a million units cost
about a second.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone

from parcv.plan.build import Plan
from parcv.plan.code import Environment
from parcv.plan.data import Dataset, data_token
from parcv.plan.kinds import KINDS, Key, Kind, kind_of
from parcv.plan.partition import PartitionFolds
from parcv.plan.records import Unit, unit_of
from parcv.plan.splits import Fold
from parcv.plan.tokens import (
    TOKEN_SIZE,
    Identity,
    Template,
    TokenError,
    Tokenizer,
    identify_of,
    token,
    token_of_entries,
)
from parcv.plan.units import UnitGrid, as_units

__all__ = [
    "NUMBERS_VERSION",
    "ContentKeys",
    "KeysOfACall",
    "candidate_digest",
    "content_keys",
    "unseeded_parameters",
]

# Version of parcv's numbers, not of the package: bump it when a change makes a stored
# record differ from what this code would compute for the same unit (a scorer's
# arithmetic, how a fold is fitted). Releases that only add features keep it.
NUMBERS_VERSION = 1

_SIZE = TOKEN_SIZE
_blake = hashlib.blake2b


def candidate_digest(estimator: Any, params: dict[str, Any]) -> bytes:
    """Digest of an estimator's class and full parameters after ``params`` are applied.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> candidate_digest(Ridge(), {"alpha": 1.0}) == candidate_digest(Ridge(alpha=1.0), {})
    True
    >>> candidate_digest(Ridge(), {"alpha": 1.0}) == candidate_digest(Ridge(), {"alpha": 2.0})
    False
    """
    return _CandidateHasher(estimator).digest(params).token


@dataclass
class _CandidateHasher:
    """Token candidates of one estimator; top-level plain values skip clone + set_params.

    Setting a top-level parameter that is not an estimator only replaces that entry of
    ``get_params(deep=False)``, so the candidate's token is the template's with those
    entries replaced (exactly :func:`~parcv.plan.tokens.token` of the estimator the fit
    builds, whose token is its class, its parameters and its other attributes); nested
    (``step__param``) or estimator-valued parameters go through
    ``clone(estimator).set_params``, the same path the fits take. One tokenizer serves
    every candidate, so the code they reach is read once.
    """

    estimator: Any
    tokenizer: Tokenizer = field(default_factory=Tokenizer)
    base: dict[str, Any] = field(init=False)
    extra: dict[str, Any] = field(init=False)
    # Per set of names a candidate sets: the rest walked once (a template's plain values).
    templates: dict[frozenset[str], Template] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        # First, so that a value that cannot be identified (nor copied) is named as such.
        identify_of(f"the estimator {type(self.estimator).__name__}", self.estimator,
                    tokenizer=self.tokenizer)  # fmt: skip
        self.base = dict(self.estimator.get_params(deep=False))
        self.extra = {k: v for k, v in vars(clone(self.estimator)).items() if k not in self.base}

    def digest(self, params: dict[str, Any]) -> Identity:
        try:
            return self._digest(params)
        except TokenError:
            token_of_entries("a candidate", params)  # names the parameter at fault
            raise

    def _digest(self, params: dict[str, Any]) -> Identity:
        simple = all(
            "__" not in k and k in self.base and not hasattr(v, "get_params")
            for k, v in params.items()
        )
        if simple:
            names = frozenset(params)
            template = self.templates.get(names)
            if template is None:
                template = self.templates[names] = self.tokenizer.estimator_template(
                    type(self.estimator), self.base, self.extra, names
                )
            found = template.identify(params)
            if found is not None:
                return found
            return self.tokenizer.identify_estimator(
                type(self.estimator), {**self.base, **params}, self.extra
            )
        return self.tokenizer.identify(
            clone(self.estimator).set_params(**clone(params, safe=False))
        )


def _fold_digest(fold: Fold) -> bytes:
    return token("fold", _indices(fold.train), _indices(fold.test))


def _indices(array: Any) -> Any:
    """Index arrays as one dtype, so equal rows give equal tokens whatever their int type."""
    return np.asarray(array, dtype="<i8")


def _folds_digest(folds: Sequence[Fold]) -> bytes:
    """Digest of every fold of one inner CV (what a fast-CV record depends on)."""
    if isinstance(folds, PartitionFolds):
        return token("partition", *(_indices(p) for p in (folds.rows, folds.tests, folds.offsets)))
    return token("folds", *(_fold_digest(f) for f in folds))


@dataclass
class KeysOfACall:
    """What the content keys of one call's plans share (a run in rounds keys a plan per part).

    The estimator's template of candidates and the data's token are read once
    per call, as the code the candidates reach is (the ``tokenizer`` of the
    call), not once per round: the workers fit on the data as the run's first
    plan shipped it, and a part's estimator is the search's own object. Each
    is kept with the object it was read from, and read again for another.
    """

    tokenizer: Tokenizer = field(default_factory=Tokenizer)
    _hashers: dict[int, tuple[Any, _CandidateHasher]] = field(default_factory=dict, repr=False)
    _data: dict[int, tuple[Dataset, bytes]] = field(default_factory=dict, repr=False)

    def hasher(self, estimator: Any) -> _CandidateHasher:
        found = self._hashers.get(id(estimator))
        if found is None or found[0] is not estimator:
            found = self._hashers[id(estimator)] = (
                estimator,
                _CandidateHasher(estimator, self.tokenizer),
            )
        return found[1]

    def data_token(self, data: Dataset) -> bytes:
        found = self._data.get(id(data))
        if found is None or found[0] is not data:
            found = self._data[id(data)] = (data, data_token(data))
        return found[1]


@dataclass(frozen=True)
class ContentKeys:
    """The content keys of one plan's units, from per-candidate and per-fold digests.

    Parameters
    ----------
    candidates : tuple of bytes
        Digest per candidate (estimator class and full parameters).
    folds : dict of (outer, inner) to bytes
        Digest per fold: inner folds under ``(outer, i)``, outer folds under
        ``(o, "outer")``, the rows of ``outer`` (all data for None) under
        ``(outer, "rows")``, a fast-CV outer fold's whole inner CV under
        ``(outer, "inner")``.
    context : bytes
        Digest of the data, scorers, return_train_score, NUMBERS_VERSION, the
        predictions the units keep (``return_predictions``) and whether they
        keep their fitted estimators (``return_estimator``).
    batches : dict of int to bytes
        With fast CV, per candidate the digest of its batch (a fast-CV record
        is computed with the candidates of its batch); on an iteration path,
        per candidate the digest of how the path is grown (a ``partial_fit``
        path's record is not a separate fit's).
    criteria : bytes
        Digest of the criteria request (empty without criteria).
    bbc : bytes
        With BBC-CV, what the all-data fits also keep (their per-sample losses
        of the refit metric): a fit stored without them is not reused.
    ncv : dict of int to bytes
        With the nested CV interval, per ``ncv`` unit the digest of its rows
        and of the per-sample loss it keeps.
    losses : bytes
        With the nested CV interval of a nested CV, what its refits also keep
        (their per-sample losses of the interval's metric): a refit stored
        without them is not reused.
    perm : dict of (int, int) to bytes
        With a permutation test, per ``perm`` unit (permutation, fold) the
        digest of its rows of ``X`` and of ``y``.
    increments : bytes
        With an incremental learning curve, the digest of its train sizes
        (the steps of every ``incr`` unit's ``partial_fit``).
    envs : tuple of bytes
        Per candidate, the digest of the code its units run: the scorers' and
        the candidate's (and, with fast CV, its batch's); empty: no code.
    environments : dict of bytes to Environment
        Those environments by digest.
    """

    candidates: tuple[bytes, ...]
    folds: dict[tuple[Any, Any], bytes]
    context: bytes
    batches: dict[int, bytes] = field(default_factory=dict)
    criteria: bytes = b""
    bbc: bytes = b""
    ncv: dict[int, bytes] = field(default_factory=dict)
    perm: dict[tuple[int, int], bytes] = field(default_factory=dict)
    increments: bytes = b""
    losses: bytes = b""
    envs: tuple[bytes, ...] = ()
    environments: dict[bytes, Environment] = field(default_factory=dict)

    def __post_init__(self) -> None:
        envs = self.envs or (b"",) * len(self.candidates)
        # What follows a candidate's digest in a unit's key: its code's digest.
        object.__setattr__(self, "_code", envs)
        # Per (kind name, outer, inner): the unit's kind and its fold's prefix, made once.
        object.__setattr__(self, "_folds", {})
        # Per candidate, what environment() gives (block_keys reads it per unit): one pair
        # per distinct code, shared by the candidates that run it, not one per candidate.
        pairs: dict[bytes, tuple[bytes, Environment]] = {}
        for d in envs:
            if d not in pairs:
                pairs[d] = (d, self.environments.get(d, _NO_CODE))
        object.__setattr__(self, "_by_candidate", [pairs[d] for d in envs])

    def _full(self) -> tuple[bytes, ...]:
        """Per candidate, what follows a plain unit's fold prefix in its key's text.

        Made for each pass over a plan's grids, not kept: 220,000 candidates' take 15 MB.
        """
        code = self._code  # type: ignore[attr-defined]
        return tuple(c + e for c, e in zip(self.candidates, code, strict=True))

    def _prefix(self, kind: Kind, outer: int | None, inner: int | None) -> bytes:
        """Digest inputs shared by every candidate of one fold: kind, rows, context."""
        return b"\x00".join((kind.tag, *kind.digests(self, outer, inner), self.context, b""))

    def _fold(self, unit: Unit) -> tuple[Kind, bytes]:
        """A unit's kind and its fold's prefix (computed once per fold)."""
        where = (unit.kind, unit.outer, unit.inner)
        folds: dict[tuple[str, int | None, int | None], tuple[Kind, bytes]]
        folds = self._folds  # type: ignore[attr-defined]
        found = folds.get(where)
        if found is None:
            kind = kind_of(unit)
            found = folds[where] = (kind, self._prefix(kind, unit.outer, unit.inner))
        return found

    def key(self, unit: Unit) -> str:
        """Return the content key (hex) of one record's unit.

        A fast-CV record's unit is ``Unit("fit", outer, None, candidate)``.
        """
        return self._key(unit, with_code=True)

    def values_key(self, unit: Unit) -> str:
        """Return the key of a unit's values alone: its content key, code only named.

        Two units with one values key differ only in the code they run (an
        edited function, an upgraded library): see :meth:`environment`.
        """
        return self._key(unit, with_code=False)

    def values_keys(self, units: Sequence[Unit]) -> list[str]:
        """:meth:`values_key` of many units, each fold's prefix hashed once."""
        out = []
        for unit in units:
            kind, prefix = self._fold(unit)
            c = unit.candidate
            batch = self.batches.get(c, b"") if kind.selects else b""
            out.append(_blake(prefix + self.candidates[c] + batch, digest_size=_SIZE).hexdigest())
        return out

    def block_keys(
        self, kind: str, units: Sequence[tuple[int | None, int | None, int]]
    ) -> tuple[list[bytes], list[bytes], list[tuple[bytes, Environment]]]:
        """:meth:`key`, :meth:`values_key` (as bytes) and :meth:`environment` of many units.

        ``units`` are of one ``kind``, as (outer, inner, candidate): a worker's
        records sent as columns are stored without a :class:`Unit` each, and
        each key is hashed once, its values key on the way.
        """
        ckeys, vkeys, codes = [], [], []
        prefixes: dict[tuple[int | None, int | None], tuple[bytes, bool]] = {}
        cands, code = self.candidates, self._code  # type: ignore[attr-defined]
        envs = self._by_candidate  # type: ignore[attr-defined]
        for outer, inner, c in units:
            found = prefixes.get((outer, inner))
            if found is None:
                fold_kind, prefix = self._fold(Unit(kind, outer, inner, 0))
                found = prefixes[(outer, inner)] = (prefix, fold_kind.selects)
            prefix, selects = found
            h = _blake(prefix + cands[c] + (self.batches.get(c, b"") if selects else b""),
                       digest_size=_SIZE)  # fmt: skip
            vkeys.append(h.digest())
            h.update(code[c])
            ckeys.append(h.digest())
            codes.append(envs[c])
        return ckeys, vkeys, codes

    def identity(self, unit: Unit) -> tuple[str, bytes, Environment]:
        """A unit's values key, and the digest and entries of the code it runs (for a store)."""
        digest, env = self.environment(unit)
        return self.values_key(unit), digest, env

    def environment(self, unit: Unit) -> tuple[bytes, Environment]:
        """The digest and the entries of the code a unit runs."""
        digest = self._code[unit.candidate]  # type: ignore[attr-defined]
        return digest, self.environments.get(digest, _NO_CODE)

    def _key(self, unit: Unit, *, with_code: bool) -> str:
        return _blake(self._text(unit, with_code=with_code), digest_size=_SIZE).hexdigest()

    def _text(self, unit: Unit, *, with_code: bool) -> bytes:
        """What a unit's key digests: its fold's prefix, then its candidate's part."""
        kind, prefix = self._fold(unit)
        c = unit.candidate
        # The fits that select: a fast-CV batch's or an iteration path's records.
        batch = self.batches.get(c, b"") if kind.selects else b""
        code = self._code[c] if with_code else b""  # type: ignore[attr-defined]
        return prefix + self.candidates[c] + batch + code

    def _record_texts(self, plan: Plan, unit: Unit) -> list[tuple[Key, bytes]]:
        """The graph key and the digested text of each record a listed unit makes."""
        kind, prefix = self._fold(unit)
        if kind.records_as is not None:  # an iteration path: its fit records
            return [(r.key, self._text(r, with_code=True)) for r in plan.record_units(unit)]
        cands, code = self.candidates, self._code  # type: ignore[attr-defined]
        if not kind.batched:
            return [(kind.key(unit), prefix + cands[unit.candidate] + code[unit.candidate])]
        # Fast CV: one record per candidate, computed with its batch.
        return [
            (r.key, prefix + cands[r.candidate] + self.batches[r.candidate] + code[r.candidate])
            for r in plan.record_units(unit)
        ]

    def _grid_prefix(self, grid: UnitGrid, outer: int | None, inner: int) -> bytes:
        return self._fold(Unit(grid.kind, outer, inner, 0))[1]

    def _grid_keys(self, grid: UnitGrid, full: Sequence[bytes]) -> Iterator[list[tuple[Key, str]]]:
        """Per fold of a grid, the graph key and content key of each of its units.

        ``full``: :meth:`_full`, made once for every grid of a plan.
        """
        order = list(grid.order)
        for (outer, keys), (_, inner) in zip(grid.fold_keys(), grid.fold_positions(), strict=True):
            prefix = self._grid_prefix(grid, outer, inner)
            yield [
                (key, _blake(prefix + full[c], digest_size=_SIZE).hexdigest())
                for key, c in zip(keys, order, strict=True)
            ]

    def graph_key_chunks(self, plan: Plan, size: int = 100_000) -> Iterator[list[tuple[Key, str]]]:
        """The (graph key, content key) of every record of the plan, in plan order, in chunks.

        Each chunk holds about ``size`` records (a grid's fold at least), so a
        caller that keeps only some of them never holds every unit's key.
        """
        chunk: list[tuple[Key, str]] = []
        full: Sequence[bytes] | None = None
        for block in as_units(plan.units).blocks:
            if isinstance(block, UnitGrid):
                full = self._full() if full is None else full
                for part in self._grid_keys(block, full):
                    chunk += part
                    if len(chunk) >= size:
                        yield chunk
                        chunk = []
                continue
            for unit in block:
                for key, text in self._record_texts(plan, unit):
                    chunk.append((key, _blake(text, digest_size=_SIZE).hexdigest()))
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk

    def graph_keys(self, plan: Plan) -> dict[Key, str]:
        """Return the content key of every record of the plan (fits, criteria, interval fits).

        One prefix per fold, then one short digest per unit: 1.1M units in
        seconds. Holds every key: :meth:`graph_key_chunks` and :meth:`twins`
        do not.
        """
        out: dict[Key, str] = {}
        for chunk in self.graph_key_chunks(plan):
            out.update(chunk)
        return out

    def twins(self, plan: Plan) -> dict[Key, tuple[Unit, ...]]:
        """Return the units equal in content to an earlier unit of the plan, by that unit's key.

        Not with fast CV (batches differ). A grid unit's text is its fold's
        prefix and its candidate's digest, and the prefixes of one grid have
        one length: two grid units are equal iff their prefixes and digests
        are, so the twins come from duplicate folds and duplicate candidates,
        without a key per unit. Listed units take the per-unit path.
        """
        if plan.fast_cv:
            return {}
        units = as_units(plan.units)
        grids = list(units.grids())
        if len(grids) > 1:
            return _twins_of(self.graph_key_chunks(plan))
        classes: dict[bytes, list[tuple[tuple[int, int], Key]]] = {}
        match = (lambda text: None) if not grids else self._grid_classes(*grids[0], classes)
        if match is None:  # a grid whose prefixes differ in length: every key
            return _twins_of(self.graph_key_chunks(plan))
        for position, unit in units.listed():
            for j, (key, text) in enumerate(self._record_texts(plan, unit)):
                match(text)  # a grid unit of this text joins its class
                classes.setdefault(text, []).append(((position, j), key))
        found = []
        for members in classes.values():
            if len(members) < 2:
                continue
            members.sort()
            seen = {members[0][1]}
            copies = []
            for where, key in members[1:]:
                if key not in seen:  # a graph key listed twice is one record
                    seen.add(key)
                    copies.append((where, unit_of(key)))
            if copies:
                found.append((copies[0][0], members[0][1], tuple(u for _, u in copies)))
        # In the order a pass over the plan meets each first copy.
        return {key: copies for _, key, copies in sorted(found, key=lambda f: f[0])}

    def _grid_classes(
        self,
        start: int,
        grid: UnitGrid,
        classes: dict[bytes, list[tuple[tuple[int, int], Key]]],
    ) -> Callable[[bytes], None] | None:
        """Add a grid's classes of equal units to ``classes``; return how a listed text joins one.

        None when the grid's prefixes differ in length (no split of a text is
        then certain).
        """
        full = self._full()
        positions = list(grid.fold_positions())
        prefixes = [self._grid_prefix(grid, o, i) for o, i in positions]
        if len({len(p) for p in prefixes}) > 1:
            return None
        by_prefix: dict[bytes, list[int]] = {}
        for f, prefix in enumerate(prefixes):
            by_prefix.setdefault(prefix, []).append(f)
        by_full: dict[bytes, list[int]] = {}
        for rank, c in enumerate(grid.order):
            by_full.setdefault(full[c], []).append(rank)
        kind, n = KINDS[grid.kind], len(grid.order)
        added: set[bytes] = set()

        def add(prefix: bytes, candidate: bytes) -> None:
            text = prefix + candidate
            if text in added:
                return
            added.add(text)
            members = classes.setdefault(text, [])
            for f in by_prefix[prefix]:
                outer, inner = positions[f]
                for rank in by_full[candidate]:
                    unit = Unit(grid.kind, outer, inner, grid.order[rank])
                    members.append(((start + f * n + rank, 0), kind.key(unit)))

        repeated = [d for d, ranks in by_full.items() if len(ranks) > 1]
        for prefix, folds in by_prefix.items():
            for candidate in by_full if len(folds) > 1 else repeated:
                add(prefix, candidate)
        size = len(prefixes[0]) if prefixes else 0

        def match(text: bytes) -> None:
            prefix, candidate = text[:size], text[size:]
            if prefix in by_prefix and candidate in by_full:
                add(prefix, candidate)

        return match


def _twins_of(chunks: Iterable[list[tuple[Key, str]]]) -> dict[Key, tuple[Unit, ...]]:
    """Twins from every (graph key, content key) of a plan: the per-unit path."""
    first: dict[str, Key] = {}
    seen: set[Key] = set()
    twins: dict[Key, list[Unit]] = {}
    for chunk in chunks:
        for key, ckey in chunk:
            if key in seen:
                continue
            seen.add(key)
            if ckey in first:
                twins.setdefault(first[ckey], []).append(unit_of(key))
            else:
                first[ckey] = key
    return {k: tuple(v) for k, v in twins.items()}


def content_keys(
    plan: Plan,
    data: Dataset,
    *,
    tokenizer: Tokenizer | None = None,
    call: KeysOfACall | None = None,
) -> ContentKeys:
    """Hash a plan's candidates and folds once; units then combine the digests.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    tokenizer : Tokenizer, optional
        The one of the call this plan belongs to: a run in rounds keys each round's
        plan with the tokenizer of the whole call, so the code its candidates reach
        (the modules, their globals' values) is read once per call, as it is for one
        plan, not once per round. None: a new one, for this plan alone.
    call : KeysOfACall, optional
        What the plans of the call share, read once (its tokenizer is used, not
        ``tokenizer``): a run in rounds passes the one of the whole call.

    Returns
    -------
    ContentKeys

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from parcv.plan.build import build_plan
    >>> from parcv.plan.data import check_dataset
    >>> data = check_dataset(np.arange(20.0).reshape(10, 2), np.arange(10.0))
    >>> plan = build_plan(Ridge(), {"alpha": [1.0, 1.0]}, data, inner=2, fast_cv=False)
    >>> keys = content_keys(plan, data)
    >>> keys.key(Unit("fit", None, 0, 0)) == keys.key(Unit("fit", None, 0, 1))
    True
    >>> keys.key(Unit("fit", None, 0, 0)) == keys.key(Unit("fit", None, 1, 0))
    False
    """
    call = call if call is not None else KeysOfACall(tokenizer or Tokenizer())
    hasher = call.hasher(plan.estimator)
    found = [hasher.digest(c.params) for c in plan.candidates]
    candidates = tuple(f.values for f in found)
    folds: dict[tuple[Any, Any], bytes] = {}
    for o, fold in enumerate(plan.outer_folds):
        folds[(o, "outer")] = _fold_digest(fold)
    for outer, inner in plan.inner_folds.items():
        folds[(outer, "rows")] = token("rows", _indices(plan.rows_of(outer)))
        if plan.fast_cv:
            folds[(outer, "inner")] = _folds_digest(inner)
        else:
            for i, fold in enumerate(inner):
                folds[(outer, i)] = _fold_digest(fold)
    folds.setdefault((None, "rows"), token("rows", _indices(plan.rows_of(None))))
    scoring = identify_of("the scoring", dict(plan.scoring.scorers), tokenizer=hasher.tokenizer)
    context = token(
        call.data_token(data),
        scoring.values,
        plan.return_train_score,
        NUMBERS_VERSION,
        # Records that keep predictions are other records: one without them is not reused.
        plan.predictions or None,
        # Likewise records that keep their fitted estimators (only then: other keys stay).
        *(("estimators",) if plan.estimators else ()),
    )
    envs, environments = _environments(found, scoring, plan.batches)
    batches = {}
    for batch in plan.batches:
        digest = token("batch", *(candidates[c] for c in batch))
        batches.update(dict.fromkeys(batch, digest))
    for path, method in zip(plan.paths, plan.path_methods, strict=True):
        # Not the path's length nor a stopping rule: extending up_to reuses the checkpoints
        # already scored, and early stopping (rounds of windows) stores only scored ones.
        if method == "separate":
            continue  # ordinary fits from scratch: keyed as any fit of that count
        # 2: a fit ahead starts from the estimator's first state (a RandomState's too), and
        # partial_fit epochs take the classes of the fold's rows, as fit() does.
        batches.update(dict.fromkeys(path, token("path", 2, method)))
    criteria = b""
    if plan.criteria is not None:
        request = plan.criteria
        criteria = token(request.names, request.n_params, request.noise_variance)
    bbc = b"" if plan.bbc is None else token("bbc", plan.bbc.metric)
    ncv, losses = {}, b""
    if plan.interval is not None and plan.outer_folds:  # a nested CV's: its refits keep losses
        losses = token("losses", plan.interval.metric)
    elif plan.ncv is not None and plan.interval is not None:
        metric = plan.interval.metric
        for i in range(plan.ncv.n_fits):
            ncv[i] = token(_fold_digest(plan.fold_of(Unit("ncv", None, i, 0))), metric)
    perm = {}
    if plan.permutations is not None:
        for p, perm_folds in enumerate(plan.permutations.folds):
            for i, fold in enumerate(perm_folds):
                rows = Fold(*(plan.permutations.target_rows(p, r) for r in (fold.train, fold.test)))
                perm[(p, i)] = token(_fold_digest(fold), _fold_digest(rows))
    increments = token("increments", list(plan.increments)) if plan.increments else b""
    return ContentKeys(candidates, folds, context, batches, criteria, bbc, ncv, perm, increments,
                       losses, envs, environments)  # fmt: skip


_NO_CODE = Environment()


def _environments(
    found: Sequence[Identity], scoring: Identity, batches: Sequence[Sequence[int]]
) -> tuple[tuple[bytes, ...], dict[bytes, Environment]]:
    """Per candidate, the digest of the code its units run; and those environments by digest.

    A unit runs the scorers' code and its candidate's (a fast-CV unit, its
    batch's: its record is computed with theirs). The digest keeps the two
    apart (scorers first); the environment a store keeps is their union.
    """
    environments: dict[bytes, Environment] = {}
    memo: dict[tuple[bytes, ...], bytes] = {}

    def digest_of(own: Sequence[Environment]) -> bytes:
        distinct = tuple(sorted({e.digest: e for e in own if e}.items()))
        key = tuple(d for d, _ in distinct)
        digest = memo.get(key)
        if digest is None:
            union = scoring.environment
            for _, env in distinct:
                union = union | env
            digest = b""
            if union:
                digest = _blake(scoring.environment.digest + b"".join(key),
                                digest_size=_SIZE).digest()  # fmt: skip
                environments[digest] = union
            memo[key] = digest
        return digest

    alone: dict[int, bytes] = {}  # by environment object: candidates of one template share it
    envs = []
    for f in found:
        digest = alone.get(id(f.environment))
        if digest is None:
            digest = alone[id(f.environment)] = digest_of((f.environment,))
        envs.append(digest)
    for batch in batches:
        together = digest_of([found[c].environment for c in batch])
        for c in batch:
            envs[c] = together
    return tuple(envs), environments


def unseeded_parameters(estimator: Any, candidates: Sequence[dict[str, Any]]) -> list[str]:
    """The ``random_state`` parameters some candidate leaves None where its fit draws.

    Such a fit draws fresh randomness, yet its key holds ``None``, not the
    draw: a resume reuses its stored record as a draw of the same random
    process rather than drawing again. An estimator whose ``random_state`` is
    used only under some parameters (``Ridge``: by the ``'sag'`` and ``'saga'``
    solvers) is named only where a candidate's parameters use it, as
    scikit-learn documents each one's ``random_state`` (:func:`_random_use_rules`);
    any other estimator with a ``random_state`` is taken to draw.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> pipe = make_pipeline(StandardScaler(), RandomForestRegressor())
    >>> unseeded_parameters(pipe, [{"randomforestregressor__max_depth": 2}])
    ['randomforestregressor__random_state']
    >>> unseeded_parameters(pipe, [{"randomforestregressor__random_state": 0}])
    []
    >>> unseeded_parameters(Ridge(), [{"solver": "auto"}, {"solver": "cholesky"}])
    []
    >>> unseeded_parameters(Ridge(), [{"solver": "auto"}, {"solver": "sag"}])
    ['random_state']
    """
    template = _deep_params(estimator)
    if template is None:
        return []
    rules = _random_use_rules()
    found: set[str] = set()
    built: dict[tuple[Any, ...], dict[str, Any] | None] = {}
    for params in candidates:
        nested = {k: v for k, v in params.items() if hasattr(v, "get_params")}
        deep: dict[str, Any] | None = template
        if nested:
            shape = tuple(sorted((k, id(v)) for k, v in nested.items()))
            if shape not in built:  # an estimator as a value: its parameters, read once
                replaced = clone(estimator).set_params(**clone(nested, safe=False))
                built[shape] = _deep_params(replaced)
            deep = built[shape]
        if deep is not None:
            plain = {k: v for k, v in params.items() if k not in nested}
            found |= _unseeded(type(estimator), {**deep, **plain}, rules)
    return sorted(found)


def _deep_params(estimator: Any) -> dict[str, Any] | None:
    """``get_params(deep=True)``, or None for an object whose parameters cannot be read."""
    try:
        return dict(estimator.get_params(deep=True))
    except Exception:  # not an estimator, or one that cannot say: nothing to say of it
        return None


def _unseeded(
    top: type, params: dict[str, Any], rules: dict[type, Callable[[dict[str, Any]], bool]]
) -> set[str]:
    """The seed parameters left None of one candidate's parameters (deep), where they draw."""
    found = set()
    for name, value in params.items():
        if not _names_seed(name) or value is not None:
            continue
        prefix = name[: -len("random_state")]  # "" or "step__"
        owner = top if not prefix else type(params.get(prefix[:-2]))
        rule = rules.get(owner)
        own = {k[len(prefix) :]: v for k, v in params.items()
               if k.startswith(prefix) and "__" not in k[len(prefix) :]}  # fmt: skip
        if rule is None or rule(own):
            found.add(name)
    return found


def _random_use_rules() -> dict[type, Callable[[dict[str, Any]], bool]]:
    """Estimators whose fit draws from ``random_state`` only under some parameters.

    Each rule is scikit-learn's documentation of that class's ``random_state``
    (and its code: ``Ridge``'s ``solver='auto'`` resolves to cholesky,
    sparse_cg or lbfgs, never to sag). Exact classes only: a subclass may
    draw where its parent does not.
    """
    from sklearn.linear_model import ElasticNet, Lasso, LogisticRegression, Ridge, RidgeClassifier
    from sklearn.svm import SVC, NuSVC

    def solver_in(*solvers: str) -> Callable[[dict[str, Any]], bool]:
        return lambda own: own.get("solver") in solvers

    def random_selection(own: dict[str, Any]) -> bool:
        return own.get("selection") == "random"

    def probability(own: dict[str, Any]) -> bool:
        return bool(own.get("probability"))

    return {
        Ridge: solver_in("sag", "saga"),
        RidgeClassifier: solver_in("sag", "saga"),
        LogisticRegression: solver_in("sag", "saga", "liblinear"),
        Lasso: random_selection,
        ElasticNet: random_selection,
        SVC: probability,
        NuSVC: probability,
    }


def _names_seed(name: str) -> bool:
    return name == "random_state" or name.endswith("__random_state")
