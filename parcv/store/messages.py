"""What a store says: how two plans differ, the units it keeps, and its errors.

The texts of a store's refusals and reports, shared by a run, a resume and the
command line: what the stored plan description and this plan's disagree on
(:func:`mismatch_message`, :func:`changed_choice`), how many units a store keeps
(:func:`kept_units`, :func:`kept_kinds`), and parcv's error for a SQLite or disk
error met while a run used the store (:func:`store_error`).
"""

from __future__ import annotations

import errno
import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from parcv.errors import ParcvError, StoreDamagedError, StoreFullError, shorten
from parcv.plan.build import FINGERPRINTED
from parcv.plan.kinds import KINDS, Key
from parcv.store.chunks import read_stored_keys
from parcv.store.schema import SCHEMA_VERSION, _has_column, _reading

__all__ = [
    "changed_choice",
    "contrast",
    "kept_kinds",
    "kept_units",
    "mismatch_message",
    "newer_schema",
    "store_error",
]


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


def newer_schema(path: Path, meta: Mapping[str, str]) -> str | None:
    """Say that a store was written by a newer parcv (a schema it does not know); None: not."""
    schema = meta.get("schema", "")
    if not schema.isdigit() or int(schema) <= int(SCHEMA_VERSION):
        return None
    return (
        f"store {str(path)!r} was written by a newer parcv (store schema {schema}); this "
        f"version reads store schemas 1 to {SCHEMA_VERSION} only, and left it unchanged. "
        "Upgrade parcv to read or resume it, or use a new store path (command line: "
        "another --out)."
    )


def _damaged(path: Path, what: str) -> str:
    """Say that a store is damaged, how, and what to do."""
    return (
        f"store {str(path)!r} is damaged: {what}. It was left unchanged. Restore it from a "
        "copy, or run again with overwrite=True (--overwrite) to recompute every unit."
    )


def _count_records(path: Path) -> int:
    """How many records a store holds, without reading them (a damaged one can be overwritten)."""
    with _reading(path) as conn:
        return _n_records(conn, path)


def _n_records(conn: sqlite3.Connection, path: Path) -> int:
    """How many records (distinct content keys) a store holds: its chunks' and its rows."""
    try:
        if _has_column(conn, "records", "key") or _has_column(conn, "records", "params"):
            return int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])  # schema 1, 2
        return int(read_stored_keys(conn).live.sum())
    except (sqlite3.DatabaseError, ValueError) as err:
        raise StoreDamagedError(_damaged(path, f"its records cannot be read ({err})")) from err


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
