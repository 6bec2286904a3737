"""Durable record store: records kept by content key in one SQLite file, no pickles.

Records are rows of plain columns and JSON text. A fast-CV record also
keeps its per-fold test scores as JSON (``fold_scores``); leave-one-out
folds are kept compactly in ``partitions`` (rows, concatenated test rows,
offsets) rather than as one train array of ``n - 1`` rows per fold.
The test-fold predictions of a run with ``return_predictions`` are kept in
``predictions`` (one row per record and method) and the target they are
compared with in ``target``, as plain arrays (:mod:`parcv.store.arrays`).
"""

from __future__ import annotations

import errno
import gc
import json
import os
import sqlite3
import struct
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from parcv.errors import (
    ParcvError,
    PlanMismatchError,
    StoreDamagedError,
    StoreFullError,
    did_you_mean,
    shorten,
)
from parcv.plan.build import FINGERPRINTED
from parcv.plan.code import Environment
from parcv.plan.kinds import KINDS
from parcv.plan.partition import PartitionFolds
from parcv.plan.record_batch import RecordBatch, RecordBlock
from parcv.plan.record_table import RecordTable, unit_at
from parcv.plan.records import ErrorInfo, FoldScores, Key, Predictions, Record, Unit
from parcv.store.arrays import ARRAY_COLUMNS, decode_array, encode_array

__all__ = [
    "JOURNAL_MODES",
    "Store",
    "check_journal",
    "collector_paused",
    "open_store",
    "read_store",
    "changed_choice",
    "check_store",
    "check_store_to_read",
    "mismatch_message",
    "read_counts",
    "reading",
    "kept_kinds",
    "kept_units",
    "read_stored_kinds",
    "read_ckeys",
    "ReusedCounts",
    "count_reused",
    "prune_store",
    "read_model_entry",
    "read_rounds",
    "read_target",
    "RoundRow",
    "read_kept",
    "read_by_values",
    "Stored",
]


# WAL is fast but needs shared memory that network file systems (NFS, Lustre) do not
# provide reliably; "delete" is SQLite's classic rollback journal, safe there.
JOURNAL_MODES = ("wal", "delete")

# Keys of the stored plan description, by the name a message shows them under.
_DESCRIBED = {
    "estimator": "estimator",
    "candidates": "space",
    "metrics": "scoring",
    "multimetric": "scoring (several metrics)",
    "final": "refit",
    "return_train_score": "return_train_score",
    "n_samples": "number of samples",
    "n_outer": "number of outer folds",
    "fast_cv": "fast_cv",
    "batches": "fast-CV batches",
    "criteria": "criteria",
    "predictions": "return_predictions",
}
# ... and those of how a candidate is chosen from the fits: not fingerprinted, a change
# drops only the records that depend on it (see store.open_store).
_CHOICE = {"refit": "refit metric", "selection": "selection", "error_score": "error_score"}
_FINGERPRINTED = (
    "the " + ", ".join(FINGERPRINTED[:-1]) + f" and {FINGERPRINTED[-1]} (not the refit metric, "
    "selection or error_score)"
)


def check_journal(journal: Any) -> str:
    """Check a SQLite journal mode for a store: ``"wal"`` or ``"delete"``.

    Parameters
    ----------
    journal : str

    Returns
    -------
    str

    Raises
    ------
    TypeError, ValueError
        Not a string, or not one of :data:`JOURNAL_MODES`.

    Examples
    --------
    >>> check_journal("delete")
    'delete'
    >>> check_journal("WAL")
    Traceback (most recent call last):
    ...
    ValueError: journal must be one of ['wal', 'delete']; got 'WAL'. Did you mean 'wal'? Use \
journal='delete' when the store is on a network file system (NFS, Lustre), else the default 'wal'.
    """
    if not isinstance(journal, str):
        raise TypeError(
            f"journal must be a str, one of {list(JOURNAL_MODES)}; got {journal!r}. "
            "Pass e.g. journal='delete'."
        )
    if journal not in JOURNAL_MODES:
        raise ValueError(
            f"journal must be one of {list(JOURNAL_MODES)}; got {journal!r}. "
            + did_you_mean(journal, JOURNAL_MODES, end=" ")
            + "Use journal='delete' when the store is on a network file system (NFS, Lustre), "
            "else the default 'wal'."
        )
    return journal


def _as_path(store: Any) -> Path:
    """A non-empty str, bytes or os.PathLike as a Path, else TypeError/ValueError."""
    if not isinstance(store, (str, bytes, os.PathLike)):
        raise TypeError(
            f"store must be a file path (str or pathlib.Path) or None; got {store!r} of type "
            f"{type(store).__name__}. Pass e.g. store='run.sqlite'."
        )
    text = os.fsdecode(os.fspath(store))
    if not text.strip():
        raise ValueError(
            f"store must be the path of a SQLite file; got the empty path {store!r}. Pass "
            "e.g. store='run.sqlite', or store=None to keep nothing."
        )
    return Path(text)


def check_store(store: Any) -> Path | None:
    """Check that a run can create or update its store file, before anything runs.

    Parameters
    ----------
    store : str, bytes, os.PathLike or None
        The SQLite file of a run; ``None`` keeps nothing. Missing parent
        directories are created when the run starts.

    Returns
    -------
    Path or None

    Raises
    ------
    TypeError
        ``store`` is not a path.
    ValueError
        ``store`` is empty, a directory or another non-regular file, or its
        directory cannot be written (or created).

    Examples
    --------
    >>> check_store(None) is None
    True
    >>> check_store(123)
    Traceback (most recent call last):
    ...
    TypeError: store must be a file path (str or pathlib.Path) or None; got 123 of type int. \
Pass e.g. store='run.sqlite'.
    """
    if store is None:
        return None
    path = _as_path(store)
    if path.is_dir():
        raise ValueError(
            f"store={str(path)!r} is a directory; store is the SQLite file itself. Pass a "
            f"file path, e.g. store={str(path / 'run.sqlite')!r}."
        )
    if path.exists() and not path.is_file():
        raise ValueError(
            f"store={str(path)!r} exists but is not a regular file. Pass the path of a new "
            "file or of a store written by parcv."
        )
    _check_writable(path)
    return path


def _check_writable(path: Path) -> None:
    """The nearest existing directory above ``path`` must accept new files (WAL needs them)."""
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    missing = "" if existing == path.parent else f" (above the missing {str(path.parent)!r})"
    fix = "Pass a path in a directory you can write to, e.g. store='run.sqlite'."
    if not existing.is_dir():
        raise ValueError(
            f"store={str(path)!r} cannot be created: {str(existing)!r} is a file, not a "
            f"directory. {fix}"
        )
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise ValueError(
            f"store={str(path)!r} cannot be created: the directory {str(existing)!r}{missing} "
            f"is not writable ({err.strerror or err}). {fix}"
        ) from err
    if path.is_file() and not os.access(path, os.R_OK | os.W_OK):
        raise ValueError(
            f"store={str(path)!r} is not readable and writable by this user. Make it "
            "writable (chmod u+rw), or pass a new path."
        )


def check_store_to_read(store: Any) -> Path:
    """Check the path of a store to load; point a run directory to its ``store.sqlite``."""
    if store is None:
        raise TypeError(
            "store must be the path of a parcv store; got None. Pass e.g. store='run.sqlite'."
        )
    path = _as_path(store)
    if path.is_dir():
        inside = path / "store.sqlite"
        fix = f"Pass {str(inside)!r}." if inside.is_file() else "Pass the store file in it."
        raise ValueError(f"store={str(path)!r} is a directory, not a parcv store file. {fix}")
    return path


def _description(meta: dict[str, str]) -> dict[str, Any]:
    try:
        described = json.loads(meta.get("plan", "{}"))
    except ValueError:
        return {}
    return described if isinstance(described, dict) else {}


def _shown(key: str, value: Any) -> str:
    if key == "candidates" and isinstance(value, list):  # ids and indices say nothing
        value = [c.get("params") if isinstance(c, dict) else c for c in value]
    return repr(value)


# How much of two long descriptions is shown: some shared text before the first place
# they differ, the differing part, and some shared text after it.
_WIDTH, _BEFORE, _PART, _AFTER = 80, 40, 40, 20


def _shared(a: str, b: str) -> int:
    """Length of the text ``a`` and ``b`` start with."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def contrast(old: str, new: str) -> tuple[str, str]:
    """Two texts, cut around their first difference if either is long.

    Each side shows the shared text just before the first differing character,
    its own differing part and a little of the shared text after it, so two
    long descriptions that differ late are not cut at the same point.

    Examples
    --------
    >>> old = "{'alpha': [0.1, 1.0, 10.0], 'fit_intercept': [True, False], 'solver': ['svd']}"
    >>> contrast(old, old.replace("svd", "cholesky"))
    ("..._intercept': [True, False], 'solver': ['svd']}", \
"..._intercept': [True, False], 'solver': ['cholesky']}")
    >>> contrast("[1, 2]", "[1, 3]")
    ('[1, 2]', '[1, 3]')
    """
    if len(old) <= _WIDTH and len(new) <= _WIDTH:
        return old, new
    prefix = _shared(old, new)
    suffix = min(_shared(old[::-1], new[::-1]), min(len(old), len(new)) - prefix)
    start = max(0, prefix - _BEFORE)

    def cut(text: str) -> str:
        end = len(text) - suffix
        part, after = text[prefix:end], text[end : end + _AFTER]
        if len(part) > _PART:
            part, after = part[:_PART], ""
        more = "..." if end + len(after) < len(text) else ""
        return ("..." if start else "") + text[start:prefix] + part + after + more

    return cut(old), cut(new)


def changed_choice(old: dict[str, str], new: dict[str, str]) -> str:
    """Which of refit metric, selection and error_score two plan descriptions disagree on.

    Examples
    --------
    >>> old = {"plan": '{"selection": {"rule": "best"}, "refit": "score"}'}
    >>> changed_choice(old, {"plan": '{"selection": {"rule": "one_se"}, "refit": "score"}'})
    "selection (stored {'rule': 'best'}, now {'rule': 'one_se'})"
    """
    return "; ".join(_differences(old, new, _CHOICE)) or "refit metric, selection or error_score"


def _differences(
    old: dict[str, str], new: dict[str, str], described: dict[str, str] = _DESCRIBED
) -> list[str]:
    """What the stored plan description and this plan's disagree on, one entry per key."""
    before, after = _description(old), _description(new)
    found = []
    for key, name in described.items():
        if key in before and before.get(key) != after.get(key):
            stored, now = contrast(_shown(key, before[key]), _shown(key, after.get(key)))
            found.append(f"{name} (stored {stored}, now {now})")
    if old.get("parcv_version") != new.get("parcv_version"):
        version_then, version_now = old.get("parcv_version"), new.get("parcv_version")
        found.append(f"parcv version (stored {version_then!r}, now {version_now!r})")
    return found


def mismatch_message(path: Path, old: dict[str, str], new: dict[str, str], n_old: int) -> str:
    """Say that a store holds another plan, what differs, and the two ways out."""
    found = _differences(old, new)
    if found:
        differs = "Differs: " + "; ".join(found) + "."
    elif _description(old):
        differs = (
            "The plan descriptions agree, so the data values, the folds, the scorers, the "
            "criteria options or the code they run (an edited function, an upgraded library) "
            "differ."
        )
    else:
        differs = "The store keeps no plan description to compare with."
    return (
        f"store {str(path)!r} holds {n_old} records of a different plan (fingerprint "
        f"{old.get('fingerprint', '?')[:12]}, this plan {new['fingerprint'][:12]}). {differs} "
        f"The fingerprint covers {_FINGERPRINTED}. Nothing was changed. Use a new store path "
        "(command line: another --out), or overwrite=True (--overwrite) to discard the old "
        "results."
    )


# Schema 5 (this version) describes a run of several plans: a strategy's rounds and the
# refits after them are plans 1, 2, ... beside plan 0, the plan the run started with. Its
# plan tables (folds, partitions, units) carry the plan id ``pid`` and ``rounds`` says
# which search, round and part each later plan is, with its description and the decision
# that made it, so ``load`` rebuilds every round. Its records are those of schema 4: a run
# adds to a schema-4 store, remaking only the plan tables, which every run rewrites.
# Schema 4 has the tables of schema 3; its content keys are tokens of the
# exact values (parcv.plan.tokens). Schema 3 keyed units by a repr that numpy elides past
# 1,000 entries and that names a closure without its captured values, so two different
# candidates could share a key: ``load`` and ``parcv report`` read it, a run refuses to add
# to it (its keys cannot be trusted, so no record of it may be reused).
# Schema 3: records are kept by content key (see parcv.plan.keys), whatever
# plan stored them; ``units`` maps the graph keys of the plan that last ran to content keys,
# and ``models`` records each saved model file with its SHA-256. Content keys are their 16
# bytes (not 32 hex digits); what repeats from row to row is kept once and referred to by
# id: a candidate's id and parameters (``labels``), the worker (``workers``) and the names
# of the metrics (``metrics``), whose scores are packed little-endian float64 (a third of a
# large store's size). ``units`` is a WITHOUT ROWID table, kept in the order of its key;
# ``records`` and ``identities`` are kept in the order they were stored, with an index of
# their content keys: a batch's random keys then touch the index's small pages only, not
# the rows' (a store of schema 3 to 5 made before keeps its layout: the SQL is the same).
# Schema 2 (the releases before) kept the same records as text and JSON: ``load`` and
# ``parcv report`` read it, a run refuses to add to it. Schema 1 (parcv 0.1.0) kept records
# by graph key: read by ``load``, refused by a run.
# Schema 5 adds, beside each record, what its key was made of: its values key (the key
# with code only named) and the environment of the code it ran (distribution versions,
# user-code digests: ``identities``, ``environments``), so that a run can say which code
# change made a stored record stale, and keep it if asked (``kept``: the current plan's
# units that took a record of other code, with why). A schema-4 store gains the tables when
# a run opens it; its records keep their old keys, which no unit has any more.
SCHEMA_VERSION = "5"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS folds (
    outer INTEGER, inner INTEGER, train BLOB NOT NULL, test BLOB NOT NULL,
    pid INTEGER NOT NULL DEFAULT 0);
-- A run in rounds reads its plans' folds a plan at a time (a sampler's: one per trial)
CREATE INDEX IF NOT EXISTS folds_of_plan ON folds (pid);
CREATE TABLE IF NOT EXISTS partitions (
    outer INTEGER, rows BLOB NOT NULL, tests BLOB NOT NULL, offsets BLOB NOT NULL,
    leave_one_out INTEGER NOT NULL, pid INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY, candidate_id TEXT NOT NULL, params TEXT NOT NULL,
    UNIQUE (candidate_id, params));
CREATE TABLE IF NOT EXISTS workers (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS metrics (id INTEGER PRIMARY KEY, names TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS records (
    ckey BLOB NOT NULL UNIQUE, kind TEXT NOT NULL, outer INTEGER, inner INTEGER,
    candidate INTEGER NOT NULL, label INTEGER NOT NULL, status TEXT NOT NULL,
    metrics INTEGER NOT NULL, test_scores BLOB NOT NULL, train_scores BLOB NOT NULL,
    fit_time REAL NOT NULL, score_time REAL NOT NULL, n_train INTEGER NOT NULL,
    n_test INTEGER NOT NULL, error_type TEXT, error_message TEXT, traceback TEXT,
    warnings TEXT NOT NULL, worker INTEGER NOT NULL, started REAL NOT NULL,
    finished REAL NOT NULL, stored REAL NOT NULL, fold_scores TEXT);
CREATE TABLE IF NOT EXISTS units (
    pid INTEGER NOT NULL DEFAULT 0, key TEXT NOT NULL, ckey BLOB NOT NULL, kind TEXT NOT NULL,
    outer INTEGER, inner INTEGER, candidate INTEGER NOT NULL,
    PRIMARY KEY (pid, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rounds (
    pid INTEGER PRIMARY KEY, search TEXT NOT NULL, round INTEGER NOT NULL,
    part INTEGER NOT NULL, plan TEXT NOT NULL, decision TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
    ckey BLOB PRIMARY KEY, file TEXT NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS predictions (
    ckey BLOB NOT NULL, method TEXT NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL,
    data BLOB NOT NULL, codes TEXT, uniques BLOB, PRIMARY KEY (ckey, method));
CREATE TABLE IF NOT EXISTS target (
    name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL,
    codes TEXT, uniques BLOB);
CREATE TABLE IF NOT EXISTS environments (
    id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, entries TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS identities (
    vkey BLOB NOT NULL, ckey BLOB NOT NULL, env INTEGER, UNIQUE (vkey, ckey));
CREATE TABLE IF NOT EXISTS kept (
    pid INTEGER NOT NULL DEFAULT 0, key TEXT NOT NULL, causes TEXT NOT NULL,
    PRIMARY KEY (pid, key)) WITHOUT ROWID;
"""
_TABLES = (
    "meta", "folds", "partitions", "labels", "workers", "metrics", "records", "units", "models",
    "predictions", "target", "rounds", "environments", "identities", "kept",
)  # fmt: skip
# The tables that describe the run that wrote last (its plans), rewritten by every run.
_PLAN_TABLES = ("meta", "folds", "partitions", "units", "target", "rounds", "kept")

_COLUMNS = (
    "ckey, kind, outer, inner, candidate, label, status, metrics, test_scores, "
    "train_scores, fit_time, score_time, n_train, n_test, error_type, error_message, "
    "traceback, warnings, worker, started, finished, stored, fold_scores"
)
_N_COLUMNS = _COLUMNS.count(",") + 1
# The same, as read for the units of a plan: what the unit or nobody reads is left NULL
# (no Python object per row for it), and so is an empty list of warnings.
_UNIT_COLUMNS = (
    _COLUMNS.replace("kind, outer, inner, candidate, label,", "NULL, NULL, NULL, 0, NULL,")
    .replace("warnings,", "NULLIF(warnings, '[]'),")
    .replace("stored,", "NULL,")
)
# Schemas 1 and 2: the same columns, with scores as JSON text and labels in every row.
_V2_COLUMNS = _COLUMNS.replace("label,", "candidate_id, params,").replace("metrics, ", "")
_V1_COLUMNS = _V2_COLUMNS.replace("ckey,", "key,", 1)


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
        return value if np.isfinite(value) else repr(value)
    if isinstance(value, np.generic):
        return _json_value(value.item())
    return repr(value)


def params_json(params: dict[str, Any]) -> str:
    """Parameters as JSON; objects (estimators, distributions) stored as their repr."""
    return json.dumps({k: _json_value(v) for k, v in sorted(params.items())}, sort_keys=True)


def _connect(path: Path, journal: str) -> sqlite3.Connection:
    try:  # check_store vetted the path: what fails here is the file system itself
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    except (OSError, sqlite3.OperationalError) as err:
        raise ValueError(
            f"store={str(path)!r} cannot be created ({err}). Pass a path in a directory you "
            "can write to."
        ) from err
    try:
        conn.execute(f"PRAGMA journal_mode={journal}")
    except sqlite3.OperationalError as err:
        conn.close()
        raise ValueError(
            f"store={str(path)!r} cannot be opened for writing ({err}). Pass a path on a "
            "local, writable file system, or journal='delete' on NFS or Lustre."
        ) from err
    conn.execute("PRAGMA synchronous=NORMAL" if journal == "wal" else "PRAGMA synchronous=FULL")
    # Records are keyed by content digests: each batch touches pages all over the tables. A
    # cache of 64 MiB (SQLite's default is 2 MiB) keeps a million-unit store's inner pages.
    conn.execute("PRAGMA cache_size=-65536")
    return conn


@contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a store file.

    A store whose writer was killed (SIGKILL, power loss) in a transaction, or while it
    switched the store back from WAL at its close, can leave a hot ``-journal`` (or a
    ``-wal``) beside it, which only a connection that may write can roll back or recover.
    With such a file beside a writable store, one such connection reads the store first,
    as any reader would, and SQLite puts the store back to its last commit.
    """
    if os.access(path, os.W_OK) and any(
        Path(f"{path}-{suffix}").is_file() for suffix in ("journal", "wal")
    ):
        with suppress(sqlite3.Error), closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True,
                                                               timeout=30.0)) as conn:  # fmt: skip
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as conn:
        yield conn


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a store file, for many reads in a row.

    The ``read_*`` functions that take ``conn=`` read through it: a load of a run in
    rounds reads each of its plans (a sampler's trial each), and a connection per
    read (opened, its schema parsed, closed) cost more than the reads.
    """
    with _reading(path) as conn:
        yield conn


def _read_with(
    path: Path, conn: sqlite3.Connection | None
) -> AbstractContextManager[sqlite3.Connection]:
    """``conn`` (left open), or a read-only connection of its own to ``path``."""
    return _reading(path) if conn is None else nullcontext(conn)


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


def _key_texts(kind: str, places: list[tuple[int | None, int | None, int]]) -> list[str]:
    """:func:`key_text` of the key of each unit (of most kinds, without building the unit)."""
    if KINDS[kind].key_fields != ("outer", "inner", "candidate") or not _PLAIN.issuperset(kind):
        return [key_text(Unit(kind, o, i, c).key) for o, i, c in places]
    return [
        f'["{kind}",{"null" if o is None else o},{"null" if i is None else i},{c}]'
        for o, i, c in places
    ]


def _unit_row(record: Record, ckey: str, pid: int) -> tuple[Any, ...]:
    u = record.unit
    return (pid, key_text(record.key), ckey_blob(ckey), u.kind, u.outer, u.inner, u.candidate)


_UNITS_INSERT = "INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?, ?, ?)"


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


# The tables of shared strings: the columns an entry is found by, and its values.
_SHARED: dict[str, Callable[[Any], tuple[tuple[str, ...], tuple[Any, ...]]]] = {
    "labels": lambda label: (("candidate_id", "params"), tuple(label)),
    "workers": lambda name: (("name",), (name,)),
    "metrics": lambda names: (("names",), (json.dumps([list(n) for n in names]),)),
}


# A unit's values key, its code's digest and environment (see parcv.plan.keys), or None.
_Identity = Callable[[Unit], tuple[str, bytes, Environment]] | None
# The content keys, values keys and code (digest, environment) of units of one kind given
# as (outer, inner, candidate), as bytes (:meth:`parcv.plan.keys.ContentKeys.block_keys`).
_BlockKeys = (
    Callable[
        [str, list[tuple[Any, Any, int]]],
        tuple[list[bytes], list[bytes], list[tuple[bytes, Environment]]],
    ]
    | None
)


def _no_key(unit: Unit) -> str:
    raise ValueError(f"a store opened without content keys cannot add {unit!r}")


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


@dataclass
class Store:
    """An open store: the driver appends records in batches, one transaction each.

    Use :func:`open_store`; ``Store(None)`` is the in-memory store of a
    throw-away call (nothing persists). ``key_of`` gives a record's content
    key; ``labels`` the candidate id and parameters JSON written with it: of
    plan 0, the plan the store was opened with; the plans added to the run
    (:meth:`add_plan`) have their own.
    """

    path: Path | None
    conn: sqlite3.Connection | None = None
    labels: tuple[tuple[str, str], ...] = ()
    key_of: Callable[[Unit], str] = _no_key
    # A unit's values key and the code it runs (digest, entries), kept beside its record.
    identity_of: Callable[[Unit], tuple[str, bytes, Environment]] | None = None
    # Both for a block of a worker's plain records at once (without building their units).
    block_keys: _BlockKeys = None
    # Units (plan id, graph key) that took a stored record of other code (resume="values"):
    # the content key of that record; they are not written again under their own key.
    kept: dict[tuple[int, Key], str] = field(default_factory=dict, repr=False)
    _ids: dict[tuple[str, Any], int] = field(default_factory=dict, repr=False)
    _envs: dict[int, Environment | None] = field(default_factory=dict, repr=False)
    # Per plan id: its labels, content keys, identities and block keys (plan 0's: the fields
    # above).
    _plans: dict[
        int, tuple[tuple[tuple[str, str], ...], Callable[[Unit], str], _Identity, _BlockKeys]
    ] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._plans[0] = (self.labels, self.key_of, self.identity_of, self.block_keys)

    def add_plan(
        self,
        pid: int,
        *,
        labels: tuple[tuple[str, str], ...],
        key_of: Callable[[Unit], str],
        folds: list[tuple[Any, Any, Any, Any]],
        partitions: dict[int | None, PartitionFolds] | None = None,
        round: RoundRow | None = None,
        identity_of: _Identity = None,
        block_keys: _BlockKeys = None,
    ) -> None:
        """Describe another plan of the run (``pid`` > 0): its folds and its round."""
        self._plans[pid] = (labels, key_of, identity_of, block_keys)
        if self.conn is None:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            _insert_folds(self.conn, folds, partitions, pid)
            if round is not None:
                self.conn.execute(
                    "INSERT OR REPLACE INTO rounds VALUES (?, ?, ?, ?, ?, ?)",
                    (pid, round.search, round.round, round.part, round.plan, round.decision),
                )

    def key(self, unit: Unit, pid: int = 0) -> str:
        """The content key of a unit of plan ``pid``."""
        return self._plans[pid][1](unit)

    def _id(self, conn: sqlite3.Connection, table: str, value: Any) -> int:
        """The id of a label, worker or metric-name list, inserted when new (in a transaction)."""
        found = self._ids.get((table, value))
        if found is not None:
            return found
        columns, values = _SHARED[table](value)
        where = " AND ".join(f"{c} = ?" for c in columns)
        conn.execute(
            f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))})",
            values,
        )
        row = conn.execute(f"SELECT id FROM {table} WHERE {where}", values).fetchone()
        self._ids[(table, value)] = int(row[0])
        return int(row[0])

    def _row_ids(self, conn: sqlite3.Connection, record: Record, pid: int) -> tuple[int, int, int]:
        names = (tuple(record.test_scores), tuple(record.train_scores))
        return (
            self._id(conn, "labels", self._plans[pid][0][record.unit.candidate]),
            self._id(conn, "metrics", names),
            self._id(conn, "workers", record.worker),
        )

    def add(self, records: Iterable[Record], pid: int = 0) -> None:
        """Commit a batch of records (by content key) and plan ``pid``'s units, in one go.

        A worker's :class:`RecordBatch` is stored from its columns: its plain
        records are never built.
        """
        if self.conn is None:
            return
        blocks: tuple[RecordBlock, ...] = ()
        if isinstance(records, RecordBatch) and not self.kept:
            blocks, records = records.blocks, records.others
        records = [r for r in records if (pid, r.key) not in self.kept]
        key_of = self._plans[pid][1]
        ckeys = [key_of(r.unit) for r in records]
        try:
            self._add(self.conn, records, ckeys, pid, blocks)
        except BaseException:
            self._ids.clear()  # ids inserted by the rolled-back transaction do not exist
            raise

    def _add(
        self,
        conn: sqlite3.Connection,
        records: list[Record],
        ckeys: list[str],
        pid: int,
        blocks: Sequence[RecordBlock] = (),
    ) -> None:
        with conn:  # BEGIN ... COMMIT, or ROLLBACK on error
            conn.execute("BEGIN IMMEDIATE")
            # In the batch's order (its blocks, then the rest): of a key twice, the last counts.
            rows: list[tuple[Any, ...]] = []
            unit_rows: list[tuple[Any, ...]] = []
            identities: list[tuple[Any, ...]] = []
            for block in blocks:
                self._block_rows(conn, block, pid, rows, unit_rows, identities)
            rows += [_row(r, k, self._row_ids(conn, r, pid))
                     for r, k in zip(records, ckeys, strict=True)]  # fmt: skip
            unit_rows += [_unit_row(r, k, pid) for r, k in zip(records, ckeys, strict=True)]
            identities += self._identity_rows(conn, [r.unit for r in records], ckeys, pid)
            conn.executemany(
                f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES "
                f"({', '.join('?' * _N_COLUMNS)})",
                rows,
            )
            conn.executemany(_UNITS_INSERT, unit_rows)
            if identities:
                conn.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?)", identities)
            conn.executemany(
                f"INSERT OR REPLACE INTO predictions (ckey, method, {ARRAY_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (ckey_blob(k), method, *encode_array(array))
                    for r, k in zip(records, ckeys, strict=True)
                    if r.predictions is not None
                    for method, array in r.predictions.arrays.items()
                ],
            )

    def _block_rows(
        self,
        conn: sqlite3.Connection,
        block: RecordBlock,
        pid: int,
        rows: list[tuple[Any, ...]],
        unit_rows: list[tuple[Any, ...]],
        identities: list[tuple[Any, ...]],
    ) -> None:
        """The rows of a block of plain records, as :func:`_row` makes them, from its columns."""
        labels, key_of, identity_of, block_keys = self._plans[pid]
        kind, places = block.kind, block.places()
        if block_keys is not None:
            blobs, vkeys, codes = block_keys(kind, places)
            if identity_of is not None:
                known = zip(vkeys, blobs, codes, strict=True)
                identities += [(v, blob, self._env_id(conn, *code)) for v, blob, code in known]
        else:  # a store opened without block keys: each unit's own keys
            units = block.units()
            ckeys = [key_of(u) for u in units]
            blobs = [ckey_blob(k) for k in ckeys]
            identities += self._identity_rows(conn, units, ckeys, pid)
        label_ids = {c: self._id(conn, "labels", labels[c]) for c in {c for _, _, c in places}}
        metrics = self._id(conn, "metrics", (block.test_names, block.train_names))
        worker = self._id(conn, "workers", block.worker)
        # Each record's scores as _packed packs them: little-endian float64, in metric order.
        test = np.ascontiguousarray(block.test, dtype="<f8").tobytes()
        train = np.ascontiguousarray(block.train, dtype="<f8").tobytes()
        w_test, w_train = 8 * len(block.test_names), 8 * len(block.train_names)
        now = time.time()
        texts, times, sizes = _key_texts(kind, places), block.times.tolist(), block.sizes.tolist()
        columns = zip(places, blobs, texts, times, sizes, strict=True)
        for j, ((o, i, c), blob, text, (fit, score, start, end), (n_train, n_test, _)) in enumerate(
            columns
        ):
            rows.append((
                blob, kind, o, i, c, label_ids[c], "ok",
                metrics, test[j * w_test : (j + 1) * w_test],
                train[j * w_train : (j + 1) * w_train], fit, score, n_train, n_test,
                None, None, None, "[]", worker, start, end, now, None,
            ))  # fmt: skip
            unit_rows.append((pid, text, blob, kind, o, i, c))

    def _identity_rows(
        self, conn: sqlite3.Connection, units: list[Unit], ckeys: list[str], pid: int
    ) -> list[tuple[bytes, bytes, int | None]]:
        """Each unit's values key and the environment of the code it ran (in a transaction)."""
        identity_of = self._plans[pid][2]
        if identity_of is None:
            return []
        rows = []
        for unit, ckey in zip(units, ckeys, strict=True):
            vkey, digest, env = identity_of(unit)
            rows.append((ckey_blob(vkey), ckey_blob(ckey), self._env_id(conn, digest, env)))
        return rows

    def _add_identities(
        self, conn: sqlite3.Connection, records: list[Record], ckeys: list[str], pid: int
    ) -> None:
        """Each record's values key and the environment of the code it ran (in a transaction)."""
        rows = self._identity_rows(conn, [r.unit for r in records], ckeys, pid)
        conn.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?)", rows)

    def _env_id(self, conn: sqlite3.Connection, digest: bytes, env: Environment) -> int | None:
        if not digest:
            return None  # no code: its values key is its content key
        found = self._ids.get(("environments", digest))
        if found is None:
            conn.execute(
                "INSERT OR IGNORE INTO environments (digest, entries) VALUES (?, ?)",
                (digest, env.to_json()),
            )
            row = conn.execute("SELECT id FROM environments WHERE digest = ?", (digest,))
            found = self._ids[("environments", digest)] = int(row.fetchone()[0])
        return found

    def claim(self, records: Iterable[Record], pid: int = 0) -> None:
        """Mark stored records (reused, relabelled) as units of plan ``pid``."""
        if self.conn is None:
            return
        key_of = self._plans[pid][1]
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(
                _UNITS_INSERT,
                [
                    _unit_row(r, key_of(r.unit), pid)
                    for r in records
                    if (pid, r.key) not in self.kept
                ],
            )

    def keep(self, records: Iterable[tuple[Record, str]], pid: int = 0) -> None:
        """Make stored records of other code units of plan ``pid``: ``(record, its content key)``.

        The record stays under its own key, with the code it ran; the unit points to it,
        and ``kept`` says why it was not recomputed (``record.kept``).
        """
        pairs = list(records)
        self.kept.update(((pid, r.key), ckey) for r, ckey in pairs)
        if self.conn is None or not pairs:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(_UNITS_INSERT, [_unit_row(r, ckey, pid) for r, ckey in pairs])
            self.conn.executemany(
                "INSERT OR REPLACE INTO kept VALUES (?, ?, ?)",
                [(pid, key_text(r.key), json.dumps(list(r.kept))) for r, _ in pairs],
            )

    def by_values(self, vkeys: Iterable[str]) -> dict[str, Stored]:
        """The newest stored record of each values key among ``vkeys``, with the code it ran."""
        if self.conn is None:
            return {}
        return _by_values(self.conn, vkeys, self._envs)

    def n_unidentified(self) -> int:
        """Records stored without their values key (by a parcv before code identity)."""
        return 0 if self.conn is None else _n_unidentified(self.conn)

    def identify(self, records: Iterable[Record], pid: int = 0) -> None:
        """Keep the values key and code of stored records plan ``pid`` takes by content key.

        Records an earlier parcv stored without them: a later run can then say
        what changed when their code does.
        """
        records = list(records)
        _, key_of, identity_of, _ = self._plans[pid]
        if self.conn is None or identity_of is None or not records:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self._add_identities(self.conn, records, [key_of(r.unit) for r in records], pid)

    def stored(self, ckeys: Iterable[str]) -> dict[str, Record]:
        """Return the stored records among ``ckeys`` (labelled as the plan that stored them)."""
        if self.conn is None:
            return {}
        wanted = {ckey_blob(k) for k in ckeys}
        if len(wanted) <= 500:  # a refit's lookup: by the primary key
            marks = ", ".join("?" * len(wanted))
            query = f"SELECT {_COLUMNS} FROM records WHERE ckey IN ({marks})"
            cursor = self.conn.execute(query, sorted(wanted))
        else:
            cursor = self.conn.execute(f"SELECT {_COLUMNS} FROM records")
        rows = [row for row in cursor if row[0] in wanted]
        path = Path(str(self.path))
        found = _records(path, rows, None, _Names.read(self.conn))
        kept = _read_predictions(self.conn, path, wanted)
        return {
            row[0].hex(): _with_predictions(r, kept.get(row[0]))
            for row, r in zip(rows, found, strict=True)
        }

    def has_model(self, ckey: str) -> bool:
        """Whether a saved model of unit ``ckey`` is recorded."""
        if self.conn is None:
            return False
        found = self.conn.execute("SELECT 1 FROM models WHERE ckey = ?", (ckey_blob(ckey),))
        return found.fetchone() is not None

    def n_records(self) -> int:
        """Number of records the store holds, of any plan."""
        if self.conn is None:
            return 0
        return int(self.conn.execute("SELECT count(*) FROM records").fetchone()[0])

    def prune(self) -> int:
        """Drop the records (and saved models) no unit of the current plan uses; return how many."""
        if self.conn is None or self.path is None:
            return 0
        unused = "NOT IN (SELECT ckey FROM units)"
        files = [
            row[0] for row in self.conn.execute(f"SELECT file FROM models WHERE ckey {unused}")
        ]
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            cursor = self.conn.execute(f"DELETE FROM records WHERE ckey {unused}")
            self.conn.execute(f"DELETE FROM models WHERE ckey {unused}")
            if _has_table(self.conn, "identities"):
                self.conn.execute(
                    "DELETE FROM identities WHERE ckey NOT IN (SELECT ckey FROM records)"
                )
            if _has_table(self.conn, "predictions"):
                self.conn.execute(f"DELETE FROM predictions WHERE ckey {unused}")
        for file in files:
            (Path(f"{self.path}.models") / file).unlink(missing_ok=True)
        return cursor.rowcount

    def set_meta(self, items: Mapping[str, str]) -> None:
        """Add (or replace) entries of the meta table: what a run learnt as it went."""
        if self.conn is None:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", items.items())

    def record_model(self, ckey: str, file: str, sha256: str) -> None:
        """Record the saved model file of a unit with its digest."""
        if self.conn is None:
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute(
                "INSERT OR REPLACE INTO models VALUES (?, ?, ?)", (ckey_blob(ckey), file, sha256)
            )

    def records(self, pid: int = 0) -> MutableMapping[Key, Record]:
        """Every record of plan ``pid`` of the current run, by graph key."""
        return {} if self.path is None else read_records(self.path, pid)

    def n_units(self) -> int:
        """Units of the current run (of every plan) whose record is stored."""
        if self.conn is None:
            return 0
        query = "SELECT count(*) FROM units u JOIN records r ON r.ckey = u.ckey"
        return int(self.conn.execute(query).fetchone()[0])

    def stored_kinds(self) -> dict[str, int]:
        """:meth:`n_units` by unit kind (what :func:`kept_kinds` says)."""
        return {} if self.conn is None else _stored_kinds(self.conn)

    def close(self) -> None:
        """Close the connection; leave no ``-wal`` / ``-shm`` file behind when it can.

        The write-ahead log is folded into the database and the journal
        switched back to the rollback journal, so readers that open the store
        read-only later (``load``, ``parcv report``) create no such files
        either; the next writer switches to WAL again. While another process
        reads the store the switch waits for nothing and is skipped.
        """
        if self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                conn.execute("PRAGMA busy_timeout=0")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.Error:  # a reader holds the WAL: it stays, and stays correct
                pass
            finally:
                # A second Ctrl-C during the checkpoint still closes the connection, and
                # SQLite folds the WAL in and removes it when its last connection closes.
                conn.close()


@dataclass(frozen=True)
class Stored:
    """A stored record found by its values key: its content key, code and start time."""

    ckey: str
    environment: Environment | None
    started: float


_BY_VALUES = (
    "SELECT i.vkey, i.ckey, i.env, r.started FROM identities i JOIN records r ON r.ckey = i.ckey"
)


def _by_values(
    conn: sqlite3.Connection, vkeys: Iterable[str], envs: dict[int, Environment | None]
) -> dict[str, Stored]:
    if not _has_table(conn, "identities"):
        return {}
    wanted = {ckey_blob(k) for k in vkeys}
    if not wanted:
        return {}
    if len(wanted) <= 500:
        marks = ", ".join("?" * len(wanted))
        cursor = conn.execute(f"{_BY_VALUES} WHERE i.vkey IN ({marks})", sorted(wanted))
    else:
        cursor = conn.execute(_BY_VALUES)
    found: dict[str, Stored] = {}
    for vkey, ckey, env, started in cursor:
        if vkey not in wanted:
            continue
        text = vkey.hex()
        if text in found and found[text].started >= started:
            continue  # the newest record of these values: the code that ran last
        if env is not None and env not in envs:
            row = conn.execute("SELECT entries FROM environments WHERE id = ?", (env,))
            envs[env] = Environment.from_json(row.fetchone()[0])
        found[text] = Stored(ckey.hex(), None if env is None else envs[env], started)
    return found


def read_by_values(path: Path, vkeys: Iterable[str]) -> dict[str, Stored]:
    """:meth:`Store.by_values` of a store file, read-only."""
    with _reading(path) as conn:
        return _by_values(conn, vkeys, {})


def read_kept(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> dict[Key, tuple[str, ...]]:
    """The current plan's units that took a record of other code, with why (resume="values")."""
    with _read_with(path, conn) as conn:
        if not _has_table(conn, "kept"):
            return {}
        where, args = _of_plan(conn, "kept", pid)
        rows = conn.execute(f"SELECT key, causes FROM kept{where}", args).fetchall()
    return {tuple(json.loads(k)): tuple(json.loads(c)) for k, c in rows}


def _n_unidentified(conn: sqlite3.Connection) -> int:
    # Identities are written and pruned with their records: one row per record that has one.
    n_records = int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    if not _has_table(conn, "identities"):
        return n_records
    return max(0, n_records - int(conn.execute("SELECT count(*) FROM identities").fetchone()[0]))


def read_unidentified(path: Path) -> int:
    """:meth:`Store.n_unidentified` of a store file, read-only."""
    with _reading(path) as conn:
        if _is_schema_1(conn) or _is_schema_2(conn):
            return 0
        return _n_unidentified(conn)


def read_meta(path: Path) -> dict[str, str]:
    """Read the meta table (fingerprint, plan description) without writing anything."""
    with _reading(path) as conn:
        try:
            return dict(conn.execute("SELECT name, value FROM meta").fetchall())
        except sqlite3.DatabaseError as err:
            raise PlanMismatchError(
                f"store {str(path)!r} is not a parcv store ({err}); it was left unchanged. "
                "Check the path: pass a store written by parcv, or a new path."
            ) from err


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return found.fetchone() is not None


def _read_predictions(
    conn: sqlite3.Connection, path: Path, ckeys: set[Any] | None = None
) -> dict[Any, Predictions]:
    """The stored predictions of the current plan's units (or of ``ckeys``), by stored content key.

    Plain bytes and JSON only: nothing is unpickled.
    """
    if not _has_table(conn, "predictions"):
        return {}
    if conn.execute("SELECT 1 FROM predictions LIMIT 1").fetchone() is None:
        return {}  # most runs keep none: skip the IN (units) of 100,000 keys below
    query = f"SELECT ckey, method, {ARRAY_COLUMNS} FROM predictions"
    if ckeys is None:
        query += " WHERE ckey IN (SELECT ckey FROM units)"
    out: dict[Any, dict[str, Any]] = {}
    try:
        for ckey, method, *array in conn.execute(query):
            if ckeys is None or ckey in ckeys:
                out.setdefault(ckey, {})[method] = decode_array(*array)
    except (sqlite3.DatabaseError, ValueError, TypeError) as err:
        what = f"its predictions cannot be read ({type(err).__name__}: {err})"
        raise StoreDamagedError(_damaged(path, what)) from err
    return {ckey: Predictions(arrays) for ckey, arrays in out.items()}


def _with_predictions(record: Record, predictions: Predictions | None) -> Record:
    if predictions is None:
        return record
    return replace(record, predictions=predictions)


def read_target(path: Path) -> Any:
    """Return the target ``y`` a run with predictions stored, or None (read-only)."""
    with _reading(path) as conn:
        if not _has_table(conn, "target"):
            return None
        row = conn.execute(f"SELECT {ARRAY_COLUMNS} FROM target WHERE name = 'y'").fetchone()
    return None if row is None else decode_array(*row)


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def _is_schema_1(conn: sqlite3.Connection) -> bool:
    return _has_column(conn, "records", "key")


def _is_schema_2(conn: sqlite3.Connection) -> bool:
    """Records with their labels and JSON scores in every row (schema 2)."""
    return _has_column(conn, "records", "params") and not _is_schema_1(conn)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects that hold no cycles.

    Reading 100,000 records allocates millions of tuples, dicts and records: the
    collections they trigger, each scanning every object built so far, took a
    third of the read (and of a report built from them, a tenth more). Nested
    pauses leave the collector to the outermost one.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def read_records(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> MutableMapping[Key, Record]:
    """Read every record of plan ``pid`` of the store's current run by graph key, read-only.

    Plan 0 is the plan the run started with; a strategy's rounds and refits
    are the plans after it (:func:`read_rounds`). A store of schema 3 gives a
    :class:`~parcv.plan.record_table.RecordTable`: its rows read as columns,
    each record built when looked up.
    """
    with collector_paused():
        return _read_records(path, pid, conn)


def _read_records(
    path: Path, pid: int = 0, conn: sqlite3.Connection | None = None
) -> MutableMapping[Key, Record]:
    with _read_with(path, conn) as conn:
        try:
            if _is_schema_1(conn):
                # Stores written before fast CV have no fold_scores column: read it as NULL.
                columns = (
                    _V1_COLUMNS
                    if _has_column(conn, "records", "fold_scores")
                    else (_V1_COLUMNS.replace("fold_scores", "NULL AS fold_scores"))
                )
                rows = conn.execute(f"SELECT {columns} FROM records").fetchall()
                return {r.key: r for r in _records(path, rows, None)}
            if not _is_schema_2(conn):
                kept = _read_predictions(conn, path)
                return _table(path, conn, pid, _Names.read(conn), kept)
            rows, units = _unit_rows(conn, _V2_COLUMNS, pid)
        except sqlite3.DatabaseError as err:
            raise StoreDamagedError(_damaged(path, f"its records cannot be read ({err})")) from err
        kept = _read_predictions(conn, path)
    found = _records(path, rows, units)  # schema 2
    if not kept:
        return {r.key: r for r in found}
    return {
        r.key: _with_predictions(r, kept.get(row[0])) for row, r in zip(rows, found, strict=True)
    }


# What a table reads of each record: its content key, numbers, and flags; a row that holds
# more than numbers (a failure, warnings, fold scores) is then read whole (_UNIT_COLUMNS).
_TABLE_COLUMNS = (
    "ckey, IFNULL(status = 'ok', 0), metrics, test_scores, train_scores, fit_time, "
    "score_time, n_train, n_test, worker, started, finished, IFNULL(warnings != '[]', 1), "
    "error_type IS NOT NULL OR fold_scores IS NOT NULL"
)
_OK, _METRICS, _TEST, _TRAIN, _FIT_TIME, _SCORE_TIME, _N_TRAIN, _N_TEST = range(1, 9)
_WORKER, _STARTED, _FINISHED, _WARNED, _MORE = range(9, 14)
_WHOLE = (
    "NOT IFNULL(status = 'ok', 0) OR IFNULL(warnings != '[]', 1) OR error_type IS NOT NULL "
    "OR fold_scores IS NOT NULL"
)
# Rows read and turned into columns at a time: a block's tuples are all a read keeps.
_BLOCK = 65_536
# The unit of each row of a plan (its content key first), as a table reads it.
_UNIT_QUERY = "SELECT ckey, kind, IFNULL(outer, -1), IFNULL(inner, -1), candidate FROM units"


def _table(
    path: Path,
    conn: sqlite3.Connection,
    pid: int,
    names: _Names,
    kept: dict[Any, Predictions],
) -> RecordTable:
    """The records of plan ``pid``'s units as a table: numbers as columns, a Record when looked up.

    The records and the units are each read in one scan, block by block, into
    numpy columns, and joined by content key with numpy's sort: no tuple or
    :class:`Unit` is kept per row (SQL's join, a lookup in the records' index per
    unit, took twice as long). Everything a record is built from is checked, as
    building each would: the packed scores against their metric names, the
    numbers' types, the worker ids, and the rows holding more than numbers (a
    failure, warnings, fold scores, predictions), which are built now. A plain
    record is built from the columns when looked up.
    """
    where, args = _of_plan(conn, "units", pid)
    # A plan after the first (a part or refit of a run in rounds) holds a small share of the
    # store's records: reading all of them for each such plan made loading a sampler's run
    # of n trials (n plans) scan n x n records. Plan 0 holds most of them: scanned whole.
    mine = f" WHERE ckey IN (SELECT ckey FROM units{where})" if pid and where else ""
    try:
        stored = _StoredRows(names, kept)
        cursor = conn.execute(f"SELECT {_TABLE_COLUMNS} FROM records{mine}", args if mine else ())
        while block := cursor.fetchmany(_BLOCK):
            stored.add(block)
        units = _StoredUnits()
        cursor = conn.execute(_UNIT_QUERY + where, args)
        while block := cursor.fetchmany(_BLOCK):
            units.add(block)
        return stored.table(units, _whole_rows(conn, set(stored.special.values()), kept))
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as err:
        what = f"a record holds text parcv did not write ({type(err).__name__}: {err})"
        raise StoreDamagedError(_damaged(path, what)) from err


# A block of content keys: their bytes end to end when all are 16 bytes long, else each.
_KeyBlock = bytes | tuple[Any, ...]
_KEY_SIZE = 16


def _whole_rows(
    conn: sqlite3.Connection, ckeys: set[Any], kept: dict[Any, Predictions]
) -> dict[Any, Sequence[Any]]:
    """The rows of ``_UNIT_COLUMNS`` of the records ``ckeys`` (those read whole), by content key.

    One scan finds them (those with predictions too); a row that changed since the
    first scan (a run writing beside the reader) is looked up by its key.
    """
    if not ckeys:
        return {}
    where = _WHOLE + (" OR ckey IN (SELECT ckey FROM predictions)" if kept else "")
    query = f"SELECT {_UNIT_COLUMNS} FROM records WHERE {where}"
    found = {row[0]: row for row in conn.execute(query) if row[0] in ckeys}
    query = f"SELECT {_UNIT_COLUMNS} FROM records WHERE ckey = ?"
    for ckey in ckeys - set(found):
        row = conn.execute(query, (ckey,)).fetchone()
        if row is None:
            raise KeyError(f"the record {_ckey_text(ckey)} is gone from the records table")
        found[ckey] = row
    return found


def _key_block(keys: Sequence[Any]) -> _KeyBlock:
    joined = _joined(keys, _KEY_SIZE)
    return tuple(keys) if joined is None else joined


def _joined(blobs: Sequence[Any], size: int) -> bytes | None:
    """The bytes of ``blobs`` end to end if each is bytes of length ``size``, else None."""
    try:
        joined = b"".join(blobs)
    except TypeError:  # text, a number or NULL
        return None
    lengths = np.fromiter(map(len, blobs), dtype=np.intp, count=len(blobs))
    return joined if len(joined) == size * len(blobs) and (lengths == size).all() else None


def _each_key(blocks: list[_KeyBlock]) -> Iterator[Any]:
    for block in blocks:
        if isinstance(block, bytes):
            yield from (block[i : i + _KEY_SIZE] for i in range(0, len(block), _KEY_SIZE))
        else:
            yield from block


def _match(stored: list[_KeyBlock], wanted: list[_KeyBlock]) -> NDArray[np.intp]:
    """The place among the ``stored`` keys of each ``wanted`` key (-1: not stored).

    16-byte keys are found by sorting their first 8 bytes (then the last 8 are
    compared); other keys, or two that share their first 8 bytes, by a dict.
    """
    if all(isinstance(b, bytes) for b in stored + wanted):
        have = np.frombuffer(b"".join(stored), dtype=">u8").reshape(-1, 2)  # type: ignore[arg-type]
        want = np.frombuffer(b"".join(wanted), dtype=">u8").reshape(-1, 2)  # type: ignore[arg-type]
        if not len(have):
            return np.full(len(want), -1, dtype=np.intp)
        order = np.argsort(have[:, 0], kind="stable")
        high = have[order, 0]
        if not np.any(high[1:] == high[:-1]):
            at = order[np.minimum(np.searchsorted(high, want[:, 0]), len(high) - 1)]
            found = (have[at, 0] == want[:, 0]) & (have[at, 1] == want[:, 1])
            return np.where(found, at, -1).astype(np.intp)
    place = {key: i for i, key in enumerate(_each_key(stored))}
    return np.fromiter((place.get(key, -1) for key in _each_key(wanted)), dtype=np.intp)


class _StoredUnits:
    """The units of a plan as columns, read a block of rows at a time."""

    def __init__(self) -> None:
        self.kinds: dict[str, int] = {}
        self.keys: list[_KeyBlock] = []
        self.blocks: dict[str, list[NDArray[Any]]] = {n: [] for n in ("kind", "outer", "inner",
                                                                       "candidate")}  # fmt: skip

    def add(self, block: list[Any]) -> None:
        keys, kind, outer, inner, candidate = zip(*block, strict=True)
        self.keys.append(_key_block(keys))
        kinds = self.kinds
        codes = [kinds.setdefault(k, len(kinds)) for k in kind]
        self.blocks["kind"].append(np.array(codes, dtype=np.int8))
        for name, values in (("outer", outer), ("inner", inner), ("candidate", candidate)):
            self.blocks[name].append(_numbers(values, np.int64))

    def columns(self, rows: NDArray[np.bool_]) -> dict[str, NDArray[Any]]:
        """The unit columns of the rows where ``rows`` holds."""
        return {name: np.concatenate(blocks)[rows] if blocks else np.zeros(0, np.int64)
                for name, blocks in self.blocks.items()}  # fmt: skip


class _StoredRows:
    """The records of a store as columns, read a block of rows at a time (see :func:`_table`)."""

    _NUMBERS = (("fit_time", _FIT_TIME, np.float64), ("score_time", _SCORE_TIME, np.float64),
                ("started", _STARTED, np.float64), ("finished", _FINISHED, np.float64),
                ("n_train", _N_TRAIN, np.int64), ("n_test", _N_TEST, np.int64),
                ("worker", _WORKER, np.int64), ("metrics", _METRICS, np.int64))  # fmt: skip

    def __init__(self, names: _Names, kept: dict[Any, Predictions]) -> None:
        self.names, self.kept = names, kept
        self.keys: list[_KeyBlock] = []
        self.blocks: dict[str, list[NDArray[Any]]] = {
            name: [] for name in ("ok", "warned", *(n for n, _, _ in self._NUMBERS))
        }  # every column, for a store holding no record too
        self.special: dict[int, Any] = {}  # content keys of the rows read whole, by place
        self.bad: dict[int, Exception] = {}  # rows whose scores do not read, by place
        self.n = 0

    def _put(self, name: str, values: NDArray[Any]) -> None:
        self.blocks.setdefault(name, []).append(values)

    def add(self, block: list[Any]) -> None:
        """Turn a block of rows into columns; keep its rows that hold more than numbers."""
        n = len(block)
        by_column = list(zip(*block, strict=True))
        self.keys.append(_key_block(by_column[0]))
        ok = np.array(by_column[_OK], dtype=bool)
        self._put("ok", ok)
        warned = np.array(by_column[_WARNED], dtype=bool)
        self._put("warned", warned)
        for name, at, dtype in self._NUMBERS:
            self._put(name, _numbers(by_column[at], dtype))
        for name, values in self._scores(by_column, self.blocks["metrics"][-1]).items():
            if name not in self.blocks:  # a metric first met now: NaN in the blocks before
                self.blocks[name] = [np.full(len(b), np.nan) for b in self.blocks["ok"][:-1]]
            self._put(name, values)
        for blocks in self.blocks.values():
            if len(blocks) < len(self.blocks["ok"]):  # a metric this block has no score of
                blocks.append(np.full(n, np.nan))
        special = ~ok | warned | np.array(by_column[_MORE], dtype=bool)
        if self.kept:
            special |= np.fromiter((k in self.kept for k in by_column[0]), dtype=bool, count=n)
        for i in np.flatnonzero(special).tolist():
            self.special[self.n + i] = block[i][0]
        self.n += n

    def _scores(self, by_column: list[Any], metrics: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
        """The score columns of a block; rows whose scores do not read are kept in ``bad``."""
        n = len(metrics)
        scores: dict[str, NDArray[np.float64]] = {}
        for m in np.unique(metrics).tolist():
            at_rows = np.flatnonzero(metrics == m)
            for which, at in (("test", _TEST), ("train", _TRAIN)):
                blobs = [by_column[at][i] for i in at_rows.tolist()]
                try:
                    metric_names = self.names.metrics[m][0 if which == "test" else 1]
                    values = _packed_scores(blobs, metric_names)
                except (KeyError, ValueError, TypeError) as err:
                    for i in at_rows.tolist():  # damage: refused if a unit of the plan reads it
                        self.bad.setdefault(self.n + i, err)
                    continue
                for j, metric in enumerate(metric_names):
                    column = scores.setdefault(f"{which}:{metric}", np.full(n, np.nan))
                    column[at_rows] = values[:, j]
        return scores

    def table(self, units: _StoredUnits, whole: dict[Any, Sequence[Any]]) -> RecordTable:
        """The table of the rows of ``units``, in their order (those with a stored record).

        ``whole`` holds the rows read whole (:data:`_UNIT_COLUMNS`) by content key.
        """
        places = _match(self.keys, units.keys)
        self.keys.clear()
        mine = places >= 0
        places = places[mine]
        for place in set(self.bad).intersection(places.tolist()):
            raise self.bad[place]
        joined = {}
        for name in list(self.blocks):
            joined[name] = np.concatenate(self.blocks.pop(name) or [np.zeros(0)])[places]
        unknown = set(np.unique(joined["worker"]).tolist()) - set(self.names.workers)
        if unknown:
            raise KeyError(f"worker ids {sorted(unknown)} are not in the workers table")
        joined.update(units.columns(mine))
        plain = _PlainRows(joined, list(units.kinds), self.names)
        built = {}
        if self.special:
            special = np.array(sorted(self.special), dtype=np.intp)
            for i in np.flatnonzero(np.isin(places, special)).tolist():
                built[i] = self._build(whole[self.special[int(places[i])]], plain.unit(i))
        unit_columns: tuple[list[str], NDArray[np.integer], NDArray[np.integer],
                            NDArray[np.integer], NDArray[np.integer]] = (
            plain.kinds, joined["kind"], joined["outer"], joined["inner"], joined["candidate"]
        )  # fmt: skip
        return RecordTable.from_arrays(unit_columns, _table_columns(joined), plain.build, built)

    def _build(self, row: Sequence[Any], unit: Unit) -> Record:
        record = _record(row, unit, self.names)
        return _with_predictions(record, self.kept.get(row[0])) if self.kept else record


def _table_columns(joined: dict[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    """The columns a table is given: flags, times and scores (empty: of no rows read)."""
    flags, times = ("ok", "warned"), ("fit_time", "score_time", "started")
    return {name: values.astype(bool if name in flags else np.float64)
            for name, values in joined.items()
            if name in flags or name in times or name.startswith(("test:", "train:"))}  # fmt: skip


class _PlainRows:
    """What a plain record (ok; no error, warnings, fold scores or predictions) is built from."""

    def __init__(self, columns: dict[str, NDArray[Any]], kinds: list[str], names: _Names) -> None:
        self.kinds, self.names = kinds, names
        self.c = columns

    def unit(self, i: int) -> Unit:
        """The unit of row ``i``."""
        return unit_at(self.kinds, self.c, i)

    def build(self, i: int) -> Record:
        """The record of row ``i``, equal to the one its stored row reads as."""
        c, names = self.c, self.names
        test, train = names.metrics[int(c["metrics"][i])]
        return Record(
            self.unit(i), "ok",
            {m: float(c[f"test:{m}"][i]) for m in test},
            {m: float(c[f"train:{m}"][i]) for m in train},
            float(c["fit_time"][i]), float(c["score_time"][i]),
            int(c["n_train"][i]), int(c["n_test"][i]),
            worker=names.workers[int(c["worker"][i])],
            started=float(c["started"][i]), finished=float(c["finished"][i]),
        )  # fmt: skip


def _numbers(values: Sequence[Any], dtype: type[np.generic]) -> NDArray[Any]:
    """A column of numbers read from the store: TypeError for a value parcv did not write."""
    array = np.array(values)
    if array.dtype.kind not in ("i", "f" if dtype is np.float64 else "i") and len(array):
        exact = (int, float) if dtype is np.float64 else (int,)
        wrong = next((v for v in values if type(v) not in exact), values[0])
        raise TypeError(f"{wrong!r} is not a number of type {np.dtype(dtype).name}")
    return array.astype(dtype, copy=False)


def _packed_scores(blobs: list[Any], names: list[str]) -> NDArray[np.float64]:
    """(rows, metrics) float64 scores of packed blobs, each checked to hold ``names``."""
    size = 8 * len(names)
    joined = _joined(blobs, size)
    if joined is None:
        _unpack_error(next(b for b in blobs if type(b) is not bytes or len(b) != size), names)
    return np.frombuffer(joined, dtype="<f8").reshape(len(blobs), len(names))


def _of_plan(conn: sqlite3.Connection, table: str, pid: int) -> tuple[str, tuple[int, ...]]:
    """The WHERE clause and its parameters that pick plan ``pid``'s rows of ``table``.

    A store written before plans had ids (schema 4 and older) holds plan 0 only.
    """
    if _has_column(conn, table, "pid"):
        return " WHERE pid = ?", (pid,)
    return ("", ()) if pid == 0 else (" WHERE 0", ())


def _unit_rows(
    conn: sqlite3.Connection, columns: str, pid: int = 0
) -> tuple[list[Any], list[Unit]]:
    """The record rows of plan ``pid``'s units, and those units.

    Two scans in key order, joined by a dict: a third faster than SQL's join,
    which looks each unit's record up in the records tree.
    """
    stored = {row[0]: row for row in conn.execute(f"SELECT {columns} FROM records")}
    rows, units = [], []
    where, args = _of_plan(conn, "units", pid)
    query = f"SELECT ckey, kind, outer, inner, candidate FROM units{where}"
    for ckey, *unit in conn.execute(query, args):
        row = stored.get(ckey)
        if row is not None:
            rows.append(row)
            units.append(Unit(*unit))
    return rows, units


def _records(
    path: Path, rows: list[Any], units: list[Unit] | None, names: _Names | None = None
) -> list[Record]:
    """Records of rows (of ``units``, schema 2 or 3); a row parcv did not write is damage.

    ``names`` are the shared strings of a schema-3 store (None: an older one).
    """
    try:
        if units is None:
            return [_record(row, None, names) for row in rows]
        return [_record(row, unit, names) for row, unit in zip(rows, units, strict=True)]
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        what = f"a record holds text parcv did not write ({type(err).__name__}: {err})"
        raise StoreDamagedError(_damaged(path, what)) from err


def read_counts(path: Path) -> tuple[int, int]:
    """Return (records the store holds of any plan, units of its current plan)."""
    with _reading(path) as conn:
        n_records = conn.execute("SELECT count(*) FROM records").fetchone()[0]
        if _is_schema_1(conn):
            return n_records, n_records
        return n_records, conn.execute("SELECT count(*) FROM units").fetchone()[0]


def _stored_kinds(conn: sqlite3.Connection) -> dict[str, int]:
    if _is_schema_1(conn):  # records by graph key: each is a unit of the one plan
        query = "SELECT kind, count(*) FROM records GROUP BY kind"
    else:
        query = (
            "SELECT u.kind, count(*) FROM units u JOIN records r ON r.ckey = u.ckey GROUP BY u.kind"
        )
    return {str(kind): int(n) for kind, n in conn.execute(query)}


def read_stored_kinds(path: Path) -> dict[str, int]:
    """The units of the store's last run whose record is stored, by kind, read-only.

    Every plan of the run counts: a plain run's one plan, and a run in rounds' part
    plans and refits (:func:`read_rounds`), which the first plan's records
    (:func:`read_records`) leave out.
    """
    with _reading(path) as conn:
        return _stored_kinds(conn)


def kept_units(records: Mapping[Key, Any]) -> str:
    """Say how many of a plan's units a store keeps, counted as a resume counts them.

    The Ctrl-C message and the resume's "reusing n of m units" name the same n: refits
    and the final fit are told apart, since a resume reuses them only once the stored
    fits have chosen their candidate again.

    Parameters
    ----------
    records : mapping of Key to Record
        The stored records of the plan, by graph key (:func:`read_records`).

    Returns
    -------
    str

    Examples
    --------
    >>> kept_units({("fit", 0, 0, 0): None, ("fit", 0, 0, 1): None, ("refit", 0): None})
    '2 finished units (and 1 refit of a chosen candidate)'
    >>> kept_units({("fit", None, 0, 0): None})
    '1 finished unit'
    """
    kinds: dict[str, int] = {}
    for key in records:
        kinds[str(key[0])] = kinds.get(str(key[0]), 0) + 1
    return kept_kinds(kinds)


def kept_kinds(kinds: Mapping[str, int]) -> str:
    """:func:`kept_units` of units counted by kind (:func:`read_stored_kinds`).

    Examples
    --------
    >>> kept_kinds({"fit": 172, "refit": 2})
    '172 finished units (and 2 refits of a chosen candidate)'
    """
    after = sum(n for kind, n in kinds.items() if KINDS[kind].after_fits)
    n = sum(kinds.values()) - after
    text = f"{n:,} finished unit{'s' * (n != 1)}"
    if after:
        text += f" (and {after:,} refit{'s' * (after != 1)} of a chosen candidate)"
    return text


@dataclass(frozen=True)
class ReusedCounts:
    """How the current plan's units got their records, for a run started at ``since``.

    Parameters
    ----------
    reused : dict of str to int
        Units whose record was computed before ``since`` (by an earlier run),
        by unit kind.
    computed : int
        Units whose record was computed since.
    fitted : int
        Distinct records among those: identical units of one run share one.
    """

    reused: dict[str, int]
    computed: int
    fitted: int


def count_reused(path: Path, since: float) -> ReusedCounts:
    """Count the current plan's units reused from before ``since`` and computed since."""
    join = "FROM units u JOIN records r ON r.ckey = u.ckey"
    with _reading(path) as conn:
        reused = conn.execute(
            f"SELECT u.kind, count(*) {join} WHERE r.started < ? GROUP BY u.kind", (since,)
        ).fetchall()
        computed, fitted = conn.execute(
            f"SELECT count(*), count(DISTINCT u.ckey) {join} WHERE r.started >= ?", (since,)
        ).fetchone()
    return ReusedCounts({str(k): int(n) for k, n in reused}, int(computed), int(fitted))


def read_ckeys(path: Path) -> set[str]:
    """Return the content keys of every record in the store (empty for a schema-1 store)."""
    with _reading(path) as conn:
        if _is_schema_1(conn):
            return set()
        return {_ckey_text(row[0]) for row in conn.execute("SELECT ckey FROM records")}


def prune_store(path: Path) -> tuple[int, int]:
    """Drop the records no unit of the store's current plan uses; return (dropped, kept)."""
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        if _is_schema_1(conn):
            raise PlanMismatchError(
                f"store {str(path)!r} was written by parcv 0.1.0; it keeps only one plan's "
                "records, so there is nothing to prune."
            )
        store = Store(path, conn)
        dropped = store.prune()
        kept = store.n_records()
        conn.execute("VACUUM")
    finally:
        conn.close()
    return dropped, kept


def read_model_entry(path: Path, ckey: str | None = None) -> tuple[str, str] | None:
    """Return (file, sha256) of a recorded model: the current plan's final, or unit ``ckey``'s."""
    with _reading(path) as conn:
        if _is_schema_1(conn):
            return None  # such stores recorded no digest: their model files are never loaded
        if ckey is None:
            found = conn.execute("SELECT ckey FROM units WHERE key = ?", (key_text(("final",)),))
            row = found.fetchone()
            if row is None:
                return None
            stored = row[0]
        else:
            stored = ckey if _is_schema_2(conn) else ckey_blob(ckey)
        row = conn.execute("SELECT file, sha256 FROM models WHERE ckey = ?", (stored,)).fetchone()
    return None if row is None else (row[0], row[1])


def _count_records(path: Path) -> int:
    """How many records a store holds, without reading them (a damaged one can be overwritten)."""
    with _reading(path) as conn:
        try:
            return int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])
        except sqlite3.DatabaseError as err:
            raise StoreDamagedError(_damaged(path, f"its records cannot be read ({err})")) from err


def _damaged(path: Path, what: str) -> str:
    """Say that a store is damaged, how, and what to do."""
    return (
        f"store {str(path)!r} is damaged: {what}. It was left unchanged. Restore it from a "
        "copy, or run again with overwrite=True (--overwrite) to recompute every unit."
    )


_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")


def store_error(path: Path, err: BaseException) -> ParcvError | None:
    """parcv's error for a SQLite or disk error met while a run used ``path``; None: not one.

    A full disk (or a failed write) keeps the finished records: the error says how
    many and to resume once there is space, in the words of the command line. Any
    other SQLite error but a busy database means the file is damaged.
    """
    name = str(getattr(err, "sqlite_errorname", ""))
    full = name == "SQLITE_FULL" or (
        isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)
    )
    if full or name.startswith("SQLITE_IOERR"):
        what = "is full" if full else "failed a write or read (a full or failing disk)"
        try:
            kept = f"The {_count_records(path):,} finished units are kept in it"
        except (ParcvError, sqlite3.Error, OSError):
            kept = "The finished units are kept in it"
        return StoreFullError(
            f"store {str(path)!r}: the disk holding it {what} ({shorten(str(err))}). {kept}. "
            "Free some space there, then run the same call again with resume=True "
            "(command line: --resume)."
        )
    if not isinstance(err, sqlite3.DatabaseError) or name in _BUSY:
        return None
    return StoreDamagedError(_damaged(path, f"SQLite cannot use it ({shorten(str(err))})"))


def never_created(path: Path) -> bool:
    """Whether ``path`` is an empty file or a SQLite file whose creation was interrupted.

    parcv writes the tables and the meta rows in one transaction, so a store
    without a meta table, or with neither meta rows nor records, holds
    nothing of value and is recreated by the next run.
    """
    if path.stat().st_size == 0:
        return True
    try:
        with _reading(path) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            if "meta" not in tables:
                return not tables - {"folds", "partitions", "records"} and not (
                    "records" in tables and conn.execute("SELECT 1 FROM records LIMIT 1").fetchone()
                )
            empty = not conn.execute("SELECT 1 FROM meta LIMIT 1").fetchone()
            return empty and not conn.execute("SELECT 1 FROM records LIMIT 1").fetchone()
    except sqlite3.DatabaseError:
        return False  # not SQLite, or damaged: refused with its own message


def read_folds(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> list[tuple[int | None, int | None, np.ndarray, np.ndarray]]:
    """Read the fold index arrays of plan ``pid``, in the order they were written."""
    with _read_with(path, conn) as conn:
        where, args = _of_plan(conn, "folds", pid)
        query = f"SELECT outer, inner, train, test FROM folds{where} ORDER BY rowid"
        rows = conn.execute(query, args).fetchall()
    return [
        (
            o,
            i,
            np.frombuffer(tr, dtype="<i8").astype(np.intp),
            np.frombuffer(te, dtype="<i8").astype(np.intp),
        )
        for o, i, tr, te in rows
    ]


def read_partitions(
    path: Path, pid: int = 0, *, conn: sqlite3.Connection | None = None
) -> dict[int | None, PartitionFolds]:
    """Read the compact (leave-one-out) fold sets of plan ``pid``, by outer fold."""
    with _read_with(path, conn) as conn:
        if not _has_table(conn, "partitions"):
            return {}
        where, args = _of_plan(conn, "partitions", pid)
        rows = conn.execute(f"SELECT outer, rows, tests, offsets, leave_one_out FROM partitions"
                            f"{where} ORDER BY rowid", args).fetchall()  # fmt: skip
    return {
        o: PartitionFolds(_blob_index(r), _blob_index(t), _blob_index(off), bool(loo))
        for o, r, t, off, loo in rows
    }


def read_rounds(path: Path) -> dict[int, RoundRow]:
    """Read the plans a run added after its first (a strategy's rounds, refits), by plan id."""
    with _reading(path) as conn:
        if not _has_table(conn, "rounds"):
            return {}
        try:
            rows = conn.execute(
                "SELECT pid, search, round, part, plan, decision FROM rounds ORDER BY pid"
            ).fetchall()
        except sqlite3.DatabaseError as err:
            raise StoreDamagedError(_damaged(path, f"its rounds cannot be read ({err})")) from err
    return {int(pid): RoundRow(str(s), int(r), int(p), str(plan), str(d))
            for pid, s, r, p, plan, d in rows}  # fmt: skip


def _blob_index(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<i8").astype(np.intp)


def _index_blob(array: Any) -> bytes:
    return np.asarray(array, dtype="<i8").tobytes()


def read_store(path: str | Path) -> tuple[dict[str, str], MutableMapping[Key, Record]]:
    """Read a store's meta and records without running or writing anything."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no parcv store at {str(p)!r}.")
    return read_meta(p), read_records(p)


def _check_existing(path: Path, meta: dict[str, str], overwrite: bool, resume: bool) -> str:
    """What to do with the existing file: "wipe" or "keep"; raise when a run may not add to it.

    "keep": the run reuses every stored record whose content key it needs (any plan's).
    """
    if overwrite:
        return "wipe"
    old = read_meta(path)
    if not old:
        return "wipe"  # creation was interrupted before the meta table was written
    with _reading(path) as conn:
        if _is_schema_1(conn):
            raise PlanMismatchError(
                f"store {str(path)!r} was written by parcv 0.1.0, which kept records by their "
                "place in one plan rather than by content; this version cannot add to it. "
                "parcv.load() still reads it. Use a new store path (command line: another "
                "--out), or overwrite=True (--overwrite) to start again."
            )
        if _is_schema_2(conn):
            raise PlanMismatchError(
                f"store {str(path)!r} was written by an earlier parcv (store schema 2, which "
                f"kept every record as text); this version writes schema {SCHEMA_VERSION}, "
                "a third of the size, and cannot add to it. parcv.load() and `parcv report` "
                "still read it. Use a new store path (command line: another --out), or "
                "overwrite=True (--overwrite) to start again."
            )
    if old.get("schema") == "3":
        raise PlanMismatchError(
            f"store {str(path)!r} was written by an earlier parcv (store schema 3), whose "
            "keys could give two different candidates one record (a numpy array of more "
            "than 1,000 entries, or closures of one factory, as parameter values); this "
            f"version keys every unit by its exact values (schema {SCHEMA_VERSION}) and will "
            "not reuse records it cannot tell apart. parcv.load() and `parcv report` still "
            "read it. Use a new store path (command line: another --out), or overwrite=True "
            "(--overwrite) to start again."
        )
    n_old = _count_records(path)
    if not n_old or resume:
        return "keep"
    if old.get("fingerprint") != meta["fingerprint"]:
        raise PlanMismatchError(
            mismatch_message(path, old, meta, n_old)
            + " Or pass resume=True (--resume) to reuse the stored units this plan shares "
            "and compute the rest."
        )
    changed = ""
    if old.get("choice") != meta.get("choice"):
        changed = (
            f" This call chooses differently: {changed_choice(old, meta)}. Resuming keeps the "
            "fits and redoes only the refits whose choice changed."
        )
    raise PlanMismatchError(
        f"store {str(path)!r} already holds {n_old} records of this plan.{changed} Pass "
        "resume=True (command line: --resume) to compute only the missing units, or "
        "overwrite=True (--overwrite) to start again."
    )


def _remove_store_file(path: Path) -> None:
    """Remove a store file and SQLite's files beside it (overwrite=True discards them all)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def open_store(
    path: str | Path | None,
    meta: dict[str, str],
    folds: list[tuple[Any, Any, Any, Any]],
    *,
    labels: tuple[tuple[str, str], ...],
    key_of: Callable[[Unit], str] = _no_key,
    identity_of: Callable[[Unit], tuple[str, bytes, Environment]] | None = None,
    block_keys: _BlockKeys = None,
    partitions: dict[int | None, PartitionFolds] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    journal: str = "wal",
    target: Any = None,
) -> Store:
    """Open (or create) a store for one plan; its records are kept by content key.

    Parameters
    ----------
    path : str, Path or None
        SQLite file; ``None`` keeps nothing (in-memory, throw-away).
    meta : dict of str to str
        Must hold ``fingerprint``; the description of the plan that runs now.
    folds : list of (outer, inner, train, test)
        Fold index arrays, stored as little-endian int64 blobs.
    labels : tuple of (candidate id, params JSON)
        Per candidate, written with each record.
    key_of : callable, default raises
        Content key of a record's unit (:meth:`parcv.plan.keys.ContentKeys.key`).
    identity_of : callable, default=None
        A unit's values key, and the digest and entries of the code it runs
        (:meth:`parcv.plan.keys.ContentKeys.values_key` and ``environment``),
        kept beside each record it adds.
    block_keys : callable, default=None
        Both of units of one kind given by their folds and candidates
        (:meth:`parcv.plan.keys.ContentKeys.block_keys`): how the records a
        worker sent as columns are stored without building their units.
    partitions : dict of outer fold to PartitionFolds, default=None
        Compact fold sets (leave-one-out), stored as index blobs.
    resume : bool, default=False
        Keep the stored records: the run reuses those whose content key it
        needs, whichever plan stored them, and computes the rest.
    overwrite : bool, default=False
        Discard whatever the file holds.
    journal : {"wal", "delete"}, default="wal"
        SQLite journal mode; use "delete" on network file systems (NFS,
        Lustre), where WAL is unsafe.
    target : array-like or None, default=None
        The plan's ``y``, kept (as plain bytes) when its units keep
        predictions, so that tests on them need no data at load time.

    Returns
    -------
    Store

    Raises
    ------
    PlanMismatchError
        The file holds records and ``resume=True`` was not passed, or it was
        written by parcv 0.1.0 (schema 1); the file is left untouched.
    TypeError, ValueError
        ``journal`` is not one of :data:`JOURNAL_MODES`, or ``path`` is not
        a path to a file that can be created or written (see
        :func:`parcv.store.sqlite.check_store`).
    """
    journal = check_journal(journal)
    p = check_store(path)
    if p is None:
        return Store(None, None, labels, key_of, identity_of, block_keys)
    fresh = not p.exists() or never_created(p)
    action = "wipe" if fresh else _check_existing(p, meta, overwrite, resume)
    if overwrite and not fresh:
        _remove_store_file(p)  # damaged pages or a foreign schema would refuse DROP TABLE
    conn = _connect(p, journal)
    try:
        _write_plan(conn, p, meta, folds, action=action, partitions=partitions, target=target)
    except BaseException:
        # Ctrl-C while the plan is written: the transaction is rolled back; close the
        # connection now, or its -wal and -shm files outlive the process.
        conn.close()
        raise
    return Store(p, conn, labels, key_of, identity_of, block_keys)


def _write_plan(
    conn: sqlite3.Connection,
    p: Path,
    meta: dict[str, str],
    folds: list[tuple[Any, Any, Any, Any]],
    *,
    action: str,
    partitions: dict[int | None, PartitionFolds] | None,
    target: Any,
) -> None:
    """Describe the plan that runs now in the store, in one transaction."""
    os.chmod(p, 0o600)  # results are the user's only
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        if action == "wipe":
            for table in _TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        elif _has_table(conn, "units") and not _has_column(conn, "units", "pid"):
            # Schema 4: its plan tables have no plan ids. They describe only the run that
            # wrote last, which this run replaces anyway: made again in schema 5.
            for table in ("folds", "partitions", "units"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                conn.execute(statement)
        # The store now describes this run: its folds, its units (claimed as reused or run).
        for table in _PLAN_TABLES:
            conn.execute(f"DELETE FROM {table}")
        if target is not None:  # None: an unsupervised run has no target to store
            # A sparse y (multilabel indicator) is stored as the dense labels it holds.
            dense = target.toarray() if hasattr(target, "toarray") else target
            conn.execute(
                f"INSERT INTO target (name, {ARRAY_COLUMNS}) VALUES ('y', ?, ?, ?, ?, ?)",
                encode_array(dense),
            )
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            sorted({**meta, "schema": SCHEMA_VERSION}.items()),
        )
        _insert_folds(conn, folds, partitions, 0)


def _insert_folds(
    conn: sqlite3.Connection,
    folds: list[tuple[Any, Any, Any, Any]],
    partitions: dict[int | None, PartitionFolds] | None,
    pid: int,
) -> None:
    """Write a plan's fold index arrays (in a transaction of the caller's)."""
    conn.executemany(
        "INSERT INTO partitions VALUES (?, ?, ?, ?, ?, ?)",
        [(o, _index_blob(p.rows), _index_blob(p.tests), _index_blob(p.offsets),
          int(p.leave_one_out), pid) for o, p in (partitions or {}).items()],
    )  # fmt: skip
    conn.executemany(
        "INSERT INTO folds VALUES (?, ?, ?, ?, ?)",
        [(o, i, _index_blob(tr), _index_blob(te), pid) for o, i, tr, te in folds],
    )


@contextmanager
def store_session(store: Store) -> Iterator[Store]:
    """Close the store's connection on exit."""
    try:
        yield store
    finally:
        store.close()
