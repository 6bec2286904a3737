"""A record as a row of the store's tables, and a row read back as a record.

Content keys are kept as their 16 bytes and task keys as compact JSON; scores are
packed little-endian float64, with the names of their metrics kept once (the
``metrics`` table, read by :class:`_Names`); a scorer's failure is JSON in the error
columns of an ``ok`` row; fold index arrays are int64 blobs. Both directions live
here, so that what a writer packs is what a reader unpacks.
"""

from __future__ import annotations

import json
import math
import operator
import sqlite3
import struct
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any, NoReturn

import numpy as np

from parcv.plan.kinds import Key
from parcv.plan.records import ErrorInfo, FoldScores, Predictions, Record, Unit
from parcv.store.schema import _N_COLUMNS

__all__ = ["CandidateLabels", "RoundRow", "ckey_blob", "key_text", "params_json", "params_plain"]


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def key_text(key: Key) -> str:
    """Serialise a task key as compact JSON (the primary key of a record row).

    Examples
    --------
    >>> key_text(("fit", None, 2, 14))
    '["fit",null,2,14]'
    >>> key_text(("perm", 3, "a b")) == json.dumps(["perm", 3, "a b"], separators=(",", ":"))
    True
    """
    parts = []
    for part in key:  # most keys: names, ints and None, written without json's machinery
        if part is None:
            parts.append("null")
        elif type(part) is int:
            parts.append(str(part))
        elif type(part) is str and _PLAIN.issuperset(part):
            parts.append(f'"{part}"')
        else:
            return json.dumps(list(key), separators=(",", ":"))
    return f"[{','.join(parts)}]"


def _json_value(value: Any) -> Any:
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    if isinstance(value, float):
        # The exact double: JSON writes a float (np.float64 too) by float.__repr__.
        return float.__float__(value) if math.isfinite(value) else repr(value)
    if isinstance(value, np.generic):
        return _json_value(value.item())
    return repr(value)


# One encoder for every candidate (json.dumps with sort_keys builds one per call).
_SORTED = json.JSONEncoder(sort_keys=True)
# What json.loads gives back: values of these types are their own round trip.
_LOADED = frozenset({str, int, float, bool, type(None)})


def _json_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: _json_value(v) for k, v in sorted(params.items())}


def params_json(params: dict[str, Any]) -> str:
    """Parameters as JSON; objects (estimators, distributions) stored as their repr."""
    plain = _json_params(params)
    parts = []
    for name, value in plain.items():  # sorted by name, as sort_keys writes them
        write = _SCALAR_JSON.get(type(value))
        if write is None or type(name) is not str:
            return _SORTED.encode(plain)
        parts.append(f"{_SORTED.encode(name)}: {write(value)}")
    return "{" + ", ".join(parts) + "}"


# How the JSON encoder writes each plain scalar (a finite float: float.__repr__), without
# its per-call set-up: 100,000 candidates' labels are written when a store is opened.
_SCALAR_JSON: dict[type, Callable[[Any], str]] = {
    str: _SORTED.encode,
    int: int.__repr__,
    float: float.__repr__,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}


class CandidateLabels(Sequence[tuple[str, str]]):
    """Each candidate's id and parameters' JSON (:func:`params_json`), as the store's labels.

    The JSON of every candidate is kept as one text with the end of each, not as a
    string and a tuple per candidate: for a million-unit run's 220,000 candidates,
    8 MB instead of 30 (by tracemalloc), held by the writer for the whole run. The ids are the
    candidates' own (each computes its id once).

    Examples
    --------
    >>> from parcv.plan.space import Candidate
    >>> labels = CandidateLabels([Candidate(0, {"C": 1.0}), Candidate(1, {"kernel": "rbf"})])
    >>> len(labels), labels[1][1]
    (2, '{"kernel": "rbf"}')
    >>> list(labels) == [(c.id, params_json(c.params)) for c in labels.candidates]
    True
    """

    __slots__ = ("_ends", "_text", "candidates")

    def __init__(self, candidates: Sequence[Any]) -> None:
        self.candidates = candidates
        texts = [params_json(c.params) for c in candidates]
        self._text = "".join(texts)
        self._ends = array("q", accumulate(len(t) for t in texts))  # read as Python ints

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i, ends = operator.index(index), self._ends
        if i < 0:
            i += len(ends)
        if not 0 <= i < len(ends):
            raise IndexError(f"label index {index} out of range for {len(ends)} candidates")
        return self.candidates[i].id, self._text[ends[i - 1] if i else 0 : ends[i]]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        start = 0
        for c, end in zip(self.candidates, self._ends, strict=True):
            yield c.id, self._text[start:end]
            start = end


def params_plain(params: dict[str, Any]) -> dict[str, Any]:
    """``json.loads(params_json(params))``, without the round trip where it changes nothing.

    Examples
    --------
    >>> params_plain({"b": np.float64(0.5), "a": float("nan")})
    {'a': 'nan', 'b': 0.5}
    """
    plain = _json_params(params)
    if all(type(k) is str and type(v) in _LOADED for k, v in plain.items()):
        return plain
    return dict(json.loads(_SORTED.encode(plain)))


def ckey_blob(ckey: str) -> bytes:
    """A content key (hex digits) as the bytes a schema-3 store keeps."""
    return bytes.fromhex(ckey)


def _ckey_text(ckey: Any) -> str:
    """A stored content key as hex digits (a schema-2 store keeps the text itself)."""
    return ckey.hex() if isinstance(ckey, bytes) else str(ckey)


_LAYOUTS = [struct.Struct(f"<{n}d") for n in range(9)]


def _packed(scores: dict[str, float]) -> bytes:
    n = len(scores)
    layout = _LAYOUTS[n] if n < len(_LAYOUTS) else struct.Struct(f"<{n}d")
    try:
        return layout.pack(*scores.values())
    except struct.error:  # a score that is no number (None): numpy's conversion, as before
        return np.asarray(list(scores.values()), dtype="<f8").tobytes()


# The error_type of an ``ok`` row whose fit succeeded but some scorers raised: its
# error_message holds them as JSON, {"test:<metric>": [type, message, traceback]}.
_SCORING_FAILED = "ScoringFailed"


def _error_columns(record: Record) -> tuple[str | None, str | None, str | None]:
    """The error_type, error_message and traceback of a record's row."""
    err = record.error
    if err is not None:
        return err.type, err.message, err.traceback
    if record.score_errors:
        errors = {k: [e.type, e.message, e.traceback] for k, e in record.score_errors.items()}
        return _SCORING_FAILED, json.dumps(errors), ""
    return None, None, None


def _read_errors(
    status: str, error_type: str | None, message: str | None, traceback: str | None
) -> tuple[ErrorInfo | None, dict[str, ErrorInfo]]:
    """A row's error and per-scorer errors (see :func:`_error_columns`)."""
    if error_type is None:
        return None, {}
    if status == "ok" and error_type == _SCORING_FAILED:
        return None, {k: ErrorInfo(*e) for k, e in json.loads(message or "{}").items()}
    return ErrorInfo(error_type, message or "", traceback or ""), {}


def _row(record: Record, ckey: str, ids: tuple[int, int, int]) -> tuple[Any, ...]:
    """A row of ``_COLUMNS``; ``ids`` are the label, metrics and worker ids."""
    u = record.unit
    label, metrics, worker = ids
    return (
        ckey_blob(ckey),
        u.kind,
        u.outer,
        u.inner,
        u.candidate,
        label,
        record.status,
        metrics,
        _packed(record.test_scores),
        _packed(record.train_scores),
        record.fit_time,
        record.score_time,
        record.n_train,
        record.n_test,
        *_error_columns(record),
        json.dumps(list(record.warnings)) if record.warnings else "[]",
        worker,
        record.started,
        record.finished,
        time.time(),
        None if record.folds is None else json.dumps(record.folds.to_dict()),
    )


def _unit_row(record: Record, ckey: str, pid: int) -> tuple[Any, ...]:
    u = record.unit
    return (pid, key_text(record.key), ckey_blob(ckey), u.kind, u.outer, u.inner, u.candidate)


def _scores(text: str) -> dict[str, float]:
    return {} if text == "{}" else {k: float(v) for k, v in json.loads(text).items()}


_Unpack = Callable[[bytes], dict[str, float]]


def _unpacker(names: list[str]) -> _Unpack:
    """Unpack the float64 scores of ``names`` (struct: a tenth of numpy's cost per row)."""
    if not names:
        return lambda blob: {} if not blob else _unpack_error(blob, names)
    layout = struct.Struct(f"<{len(names)}d")
    keys = tuple(names)

    def unpack(blob: bytes) -> dict[str, float]:
        try:
            return dict(zip(keys, layout.unpack(blob), strict=True))
        except (struct.error, TypeError) as err:
            raise ValueError(f"scores {blob!r} do not hold the metrics {keys!r}") from err

    return unpack


def _unpack_error(blob: Any, names: list[str]) -> NoReturn:
    raise ValueError(f"scores {blob!r} do not hold the metrics {tuple(names)!r}")


@dataclass(frozen=True)
class _Names:
    """The shared strings of a schema-3 store, by id: workers, and metric names to unpack by."""

    unpack: dict[int, tuple[_Unpack, _Unpack]]
    workers: dict[int, str]
    metrics: dict[int, tuple[list[str], list[str]]]

    @classmethod
    def read(cls, conn: sqlite3.Connection) -> _Names:
        unpack: dict[int, tuple[_Unpack, _Unpack]] = {}
        metrics: dict[int, tuple[list[str], list[str]]] = {}
        for i, text in conn.execute("SELECT id, names FROM metrics"):
            test, train = metrics[i] = tuple(json.loads(text))
            unpack[i] = (_unpacker(test), _unpacker(train))
        return cls(unpack, dict(conn.execute("SELECT id, name FROM workers")), metrics)


def _record(row: Sequence[Any], unit: Unit | None = None, names: _Names | None = None) -> Record:
    """A record of a row of ``_COLUMNS`` (with ``names``) or ``_V2_COLUMNS``, read by position.

    Plain tuples, packed scores and the fast paths for empty JSON keep reading
    100,000 rows (a large sweep's report) to well under a second.
    """
    if names is None:  # schema 1 or 2: scores as JSON, labels in the row
        (_, kind, outer, inner, candidate, _, _, status, test, train, fit_time, score_time,
         n_train, n_test, error_type, error_message, traceback, warnings, worker, started,
         finished, _, fold_scores) = row[:_N_COLUMNS]  # fmt: skip
        test_scores, train_scores = _scores(test), _scores(train)
    else:
        (_, kind, outer, inner, candidate, _, status, metrics, test, train, fit_time,
         score_time, n_train, n_test, error_type, error_message, traceback, warnings, worker,
         started, finished, _, fold_scores) = row  # fmt: skip
        test_unpack, train_unpack = names.unpack[metrics]
        test_scores, train_scores = test_unpack(test), train_unpack(train)
        worker = names.workers[worker]
    err, score_errors = _read_errors(status, error_type, error_message, traceback)
    return Record(
        unit=unit or Unit(kind, outer, inner, candidate),
        status=status,
        test_scores=test_scores,
        train_scores=train_scores,
        fit_time=fit_time,
        score_time=score_time,
        n_train=n_train,
        n_test=n_test,
        error=err,
        warnings=() if warnings is None or warnings == "[]" else tuple(json.loads(warnings)),
        worker=worker,
        started=started,
        finished=finished,
        folds=None if fold_scores is None else FoldScores.from_dict(json.loads(fold_scores)),
        score_errors=score_errors,
    )


def _with_predictions(record: Record, predictions: Predictions | None) -> Record:
    if predictions is None:
        return record
    return replace(record, predictions=predictions)


@dataclass(frozen=True)
class RoundRow:
    """A plan of a run after its first: a strategy's round part, or an outer fold's refit.

    Parameters
    ----------
    search : str
        Which search it belongs to, as JSON (``"null"``: all data; ``"3"``: outer fold 3).
    round, part : int
        Its round of that search and its part in the round (-1: a refit after the search).
    plan : str
        The plan's description (JSON), as the meta table's ``plan`` describes plan 0.
    decision : str
        The decision that made the round (JSON), as the strategy gave it.
    """

    search: str
    round: int
    part: int
    plan: str
    decision: str


def _blob_index(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<i8").astype(np.intp)


def _index_blob(array: Any) -> bytes:
    return np.asarray(array, dtype="<i8").tobytes()
