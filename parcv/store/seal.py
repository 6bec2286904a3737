"""A store's seal: the digest of every table as the run that wrote it last left it.

SQLite keeps no checksum of its pages or rows: a corrupted blob, an edited score or a
deleted, duplicated or changed row of ``rounds`` reads back as if parcv had written it,
and the result rebuilt from it differs from the run's. So each session that writes a
store seals it when it closes (:func:`write_seal`): the meta entry ``seal`` holds a
BLAKE2 digest of each table, every row in a fixed order (by key, or by rowid where the
order is the data's). A run removes the seal in its first transaction (it rewrites the
meta table), so a store that is being written, or whose writer was killed, has none.

:func:`check_seal` recomputes the digests and refuses a store whose tables differ, naming
them and what to do: a resume rebuilds the tables that describe the last run from the
records (``meta``, ``folds``, ``units``, ``rounds``, ...), but reuses no record it cannot
verify. Reading every row also finds a damaged page before any result is built from it.

Why a digest and not a replay of the strategy's decisions: a replay needs the estimator,
the space and the strategy's code (Optuna's samplers), none of which a load has or may
run, and it checks only what the strategy decides, not the scores, folds or candidates
that every result reads. A digest checks every byte a result is built from and runs no
code; SQLite's ``quick_check`` checks the pages the digest does not read (indexes). It
detects damage and edits by anything but parcv; it does not authenticate a store against
someone who rewrites it whole (who could as well write a new store):
what would run code, a saved model, is authenticated with the user's key instead
(:mod:`parcv.store.trust`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from parcv.errors import StoreDamagedError
from parcv.store.schema import _PLAN_TABLES, _TABLES, _has_table, _reading

__all__ = ["check_seal", "is_sealed", "write_seal"]

# The order each table's rows are read in: by a unique key, or by rowid where the order
# is the data's (a plan's folds are read in the order they were written).
_ORDER = {
    "meta": "name", "folds": "rowid", "partitions": "rowid", "labels": "id", "workers": "id",
    "metrics": "id", "records": "ckey", "chunks": "id", "units": "pid, key", "rounds": "pid",
    "models": "ckey", "predictions": "ckey, method", "target": "name", "environments": "id",
    "identities": "vkey, ckey", "kept": "pid, key",
}  # fmt: skip
# Tables whose rows hold large blobs: hashed value by value, not as a row's repr.
_BLOBS = frozenset({"chunks", "predictions", "target", "folds", "partitions"})
_SEAL = "seal"
_VERSION = 1


def _order(conn: sqlite3.Connection, table: str) -> str:
    """The columns of :data:`_ORDER` that ``table`` has (an older schema's lacks some)."""
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    wanted = [c for c in _ORDER[table].split(", ") if c in columns or c == "rowid"]
    return ", ".join(wanted) or "rowid"


def _table_digest(conn: sqlite3.Connection, table: str) -> str:
    """The digest of one table's rows (meta without its seal), in their fixed order."""
    h = hashlib.blake2b(digest_size=16)
    where = f" WHERE name != '{_SEAL}'" if table == "meta" else ""
    cursor = conn.execute(f"SELECT * FROM {table}{where} ORDER BY {_order(conn, table)}")
    if table in _BLOBS:
        for row in cursor:
            for value in row:
                if type(value) is bytes:
                    h.update(b"b%d:" % len(value))
                    h.update(value)
                else:
                    h.update(repr(value).encode() + b";")
            h.update(b"\n")
        return h.hexdigest()
    while batch := cursor.fetchmany(4096):
        if table == "meta":  # its plan description: a text of every candidate, in pieces
            _update_with_repr(h, batch)
        else:
            h.update(repr(batch).encode())  # a row's repr is exact: floats round-trip
    return h.hexdigest()


# A text longer than this is written into a digest a piece at a time (see _text_repr).
_PIECE = 1 << 20


def _update_with_repr(h: hashlib.blake2b, rows: list[tuple[object, ...]]) -> None:
    """``h.update(repr(rows).encode())``, long texts in pieces, never whole.

    The meta table's plan description holds every candidate's parameters: 15 MB for
    220,000, whose repr and its encoding were two more copies, made by the seal as a
    million-unit run closed (its driver's peak).
    """
    h.update(b"[")
    for i, row in enumerate(rows):
        h.update(b", (" if i else b"(")
        for j, value in enumerate(row):
            if j:
                h.update(b", ")
            if type(value) is str and len(value) > _PIECE:
                for piece in _text_repr(value):
                    h.update(piece.encode())
            else:
                h.update(repr(value).encode())
        h.update(b",)" if len(row) == 1 else b")")
    h.update(b"]")


def _text_repr(text: str) -> Iterator[str]:
    """``repr(text)`` in pieces: each piece's repr, in the quotes the whole text takes.

    Python quotes a text in ``"`` only when it holds a ``'`` and no ``"``; every other
    character is written (or escaped) alone. A piece holding a ``'`` but no ``"``
    is quoted in ``"`` by itself, its ``'`` left bare: escaped here, as the whole text's
    repr escapes it.
    """
    quote = '"' if "'" in text and '"' not in text else "'"
    yield quote
    for start in range(0, len(text), _PIECE):
        body = repr(text[start : start + _PIECE])
        if body[0] != quote:  # the piece took '"': the whole text takes "'"
            yield body[1:-1].replace("'", "\\'")
        else:
            yield body[1:-1]
    yield quote


def _digests(conn: sqlite3.Connection) -> dict[str, str]:
    """Each of the store's tables (of this schema's) by its digest."""
    return {t: _table_digest(conn, t) for t in _TABLES if _has_table(conn, t)}


def write_seal(conn: sqlite3.Connection) -> None:
    """Seal the store ``conn`` writes (in a transaction of its own): every table's digest."""
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        if not _has_table(conn, "meta"):
            return
        seal = json.dumps({"version": _VERSION, "tables": _digests(conn)}, sort_keys=True)
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (_SEAL, seal))


def is_sealed(path: Path) -> bool:
    """Whether a store holds a seal (a run of this parcv closed it and nothing wrote it since)."""
    with _reading(path) as conn:
        return _read_seal(conn) is not None


def _read_seal(conn: sqlite3.Connection) -> str | None:
    if not _has_table(conn, "meta"):
        return None
    row = conn.execute("SELECT value FROM meta WHERE name = ?", (_SEAL,)).fetchone()
    return None if row is None else str(row[0])


def check_seal(path: Path, *, resume: bool = False) -> None:
    """Refuse a store whose tables differ from its seal; read every row of an unsealed one.

    A store without a seal (written by an earlier parcv, or by a run killed before it
    closed the store) is read through, so that a damaged page is found now.

    Parameters
    ----------
    path : Path
        The store file.
    resume : bool, default=False
        The store is about to be resumed: tables the run rewrites may differ (it
        rebuilds them from the records); a table of records may not.

    Raises
    ------
    StoreDamagedError
        SQLite cannot read a page of it, or a table differs from its seal.
    """
    with _reading(path) as conn:
        # The tables' digests read their rows, not their indexes, which a query may read
        # instead: SQLite's own check reads every page of both.
        problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        if problem != "ok":
            raise StoreDamagedError(
                f"store {str(path)!r} is damaged: SQLite finds its pages inconsistent "
                f"({problem}). It was left unchanged. Restore it from a copy, or run again "
                "with overwrite=True (--overwrite) to recompute every unit."
            )
        text = _read_seal(conn)
        found = _digests(conn)
    if text is None:
        return
    try:
        sealed = json.loads(text)["tables"]
        if not isinstance(sealed, dict):
            raise TypeError(f"its tables are {sealed!r}")
    except (ValueError, TypeError, KeyError) as err:
        raise StoreDamagedError(_changed(path, f"its seal {text!r:.80} cannot be read ({err})",
                                         records=True)) from err  # fmt: skip
    changed = sorted(t for t in set(sealed) | set(found) if sealed.get(t) != found.get(t))
    if not changed:
        return
    records = [t for t in changed if t not in _PLAN_TABLES]
    if resume and not records:
        return  # the run rewrites every table that changed, from the records it verified
    what = ", ".join(
        f"{t} ({'missing' if t not in found else 'added' if t not in sealed else 'changed'})"
        for t in changed
    )
    raise StoreDamagedError(
        _changed(
            path,
            f"its table{'s' * (len(changed) > 1)} {what} differ{'s' * (len(changed) == 1)} "
            "from the seal its last run wrote when it closed the store (a row was changed, "
            "added or removed since)",
            records=bool(records),
        )
    )


def _changed(path: Path, what: str, *, records: bool) -> str:
    """Say that a store differs from its seal, and the ways on."""
    if records:
        way = (
            "parcv reuses no record it cannot verify: run the same call again with "
            "overwrite=True (command line: --overwrite) to recompute every unit, or use a new "
            "store path (another --out), or restore the store from a copy"
        )
    else:
        way = (
            "its records verify: run the same call again with resume=True (command line: "
            "parcv run SPEC --out DIR --resume), which rebuilds those tables from the records "
            "and fits nothing they hold; or restore the store from a copy"
        )
    return f"store {str(path)!r} is damaged: {what}. It was left unchanged; {way}."
