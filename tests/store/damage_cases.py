"""Damaged and tampered stores, and what ``load``, ``parcv report`` and ``--resume`` make of them.

A case is one damage of a finished run's store (a nested CV whose searches halve, run by
``parcv run``): a page truncated, zeroed or with bytes flipped, a table emptied, or a row
of ``rounds``, ``units``, ``folds``, ``chunks``, ``records`` or ``meta`` deleted,
duplicated or edited. Each consumer must give the untampered result or one parcv error
(:class:`~parcv.errors.ParcvError`); a raw exception or another result is a violation.
``tests/store/test_store_trust.py`` runs a few cases; ``scripts/store_damage.py`` many.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil
import sqlite3
import traceback
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import parcv
from parcv.cli import main
from parcv.errors import ParcvError

SPEC = """\
[data]
source = "sklearn:diabetes"
n_samples = 60
[estimator]
class = "sklearn.linear_model.Ridge"
[space]
alpha = [0.01, 0.1, 1.0, 10.0, 100.0, 1e3]
[cv]
outer = 2
inner = 3
[search]
halving = { factor = 2, min_resources = 20 }
[report]
plots = false
"""
PAGE = 4096
TABLES = ("rounds", "units", "folds", "chunks", "records", "meta")
ROW_DAMAGES = ("delete", "duplicate", "edit")
FILE_DAMAGES = ("truncate", "zero_page", "flip_bytes")


@dataclass(frozen=True)
class Damage:
    """One damage: ``how`` (a row damage, ``empty``, or a file damage), its table, its seed."""

    how: str
    table: str | None
    seed: int

    def __str__(self) -> str:
        return f"{self.how}({self.table or 'file'}, seed={self.seed})"


def random_damages(n: int, seed: int) -> list[Damage]:
    """``n`` damages, each kind and table uniform."""
    rng = random.Random(seed)
    kinds = [*ROW_DAMAGES, "empty", *FILE_DAMAGES]
    out = []
    for _ in range(n):
        how = rng.choice(kinds)
        table = None if how in FILE_DAMAGES else rng.choice(TABLES)
        out.append(Damage(how, table, rng.randrange(2**31)))
    return out


def apply_damage(store: Path, damage: Damage) -> bool:
    """Damage the store file; False when there was nothing to damage (an empty table)."""
    rng = random.Random(damage.seed)
    if damage.table is None:
        data = bytearray(store.read_bytes())
        page = rng.randrange(1, len(data) // PAGE)  # page 0 holds the header
        if damage.how == "truncate":
            store.write_bytes(bytes(data[: page * PAGE]))
        elif damage.how == "zero_page":
            data[page * PAGE : (page + 1) * PAGE] = bytes(PAGE)
            store.write_bytes(bytes(data))
        else:
            for at in rng.sample(range(page * PAGE, (page + 1) * PAGE), 3):
                data[at] ^= 1 << rng.randrange(8)
            store.write_bytes(bytes(data))
        return True
    with closing(sqlite3.connect(store)) as conn, conn:
        return _damage_table(conn, damage.table, damage.how, rng)


def _damage_table(conn: sqlite3.Connection, table: str, how: str, rng: random.Random) -> bool:
    columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    keys = [row[1] for row in conn.execute(f"PRAGMA table_info({table})") if row[5]]
    rows = conn.execute(f"SELECT * FROM {table}").fetchall()
    if not rows:
        return False
    if how == "empty":
        conn.execute(f"DELETE FROM {table}")
        return True
    row = rng.choice(rows)
    where = " AND ".join(f"{c} IS ?" for c in (keys or columns))
    args = [row[columns.index(c)] for c in (keys or columns)]
    if how == "delete":
        conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE "
                     f"{where} LIMIT 1)" if not keys else f"DELETE FROM {table} WHERE {where}",
                     args)  # fmt: skip
        return True
    if how == "duplicate":
        copy = list(row)
        for k in keys:  # a copy under a new key: the same content, one row more
            i = columns.index(k)
            copy[i] = (copy[i] + 1000) if isinstance(copy[i], int) else f"{copy[i]}x"
        marks = ", ".join("?" * len(columns))
        insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
        try:
            conn.execute(insert, copy)
        except sqlite3.IntegrityError:  # a UNIQUE column (a record's content key): another
            copy[0] = _edited(copy[0], rng)
            conn.execute(insert, copy)
        return True
    column = rng.choice([c for c in columns if c not in keys] or columns)
    value = row[columns.index(column)]
    conn.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", [_edited(value, rng), *args])
    return True


def _edited(value: object, rng: random.Random) -> object:
    """Another value of the same type: a flipped byte, a number moved, a character changed."""
    if isinstance(value, bytes) and value:
        data = bytearray(value)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    if isinstance(value, bool | int):
        return int(value) + rng.choice((-1, 1))
    if isinstance(value, float):
        return value * 1.5 + 1.0
    if isinstance(value, str) and value:
        digits = [i for i, ch in enumerate(value) if ch.isdigit()]
        i = rng.choice(digits) if digits else rng.randrange(len(value))
        new = str((int(value[i]) + 1) % 10) if value[i].isdigit() else "z"
        return value[:i] + new + value[i + 1 :]
    return "x" if value is None else value


@dataclass
class Template:
    """A finished run's folder and what each consumer gives from it, untampered."""

    folder: Path
    spec: Path
    result: str
    report: str


def signature(result: object) -> str:
    """What a result says, as JSON: its numbers and choices, without fit and score times."""
    return json.dumps(_timeless(json.loads(result.to_json())), sort_keys=True)  # type: ignore[attr-defined]


def _timeless(value: object) -> object:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if "time" not in k}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def make_template(folder: Path) -> Template:
    """Run the spec once into ``folder/run`` (serially): the store every case damages."""
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    run = folder / "run"
    assert _cli(["run", str(spec), "--out", str(run), "--backend", "serial", "--quiet"])[0] == 0
    result = signature(parcv.load(run / "store.sqlite"))
    return Template(run, spec, result, (run / "results.json").read_text())


def _cli(argv: list[str]) -> tuple[int, str]:
    """``parcv ARGV``: its exit code and stderr (an exception main lets out: code -1)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except Exception:  # a raw exception is what the check looks for
            return -1, traceback.format_exc()
    return code, err.getvalue()


@dataclass
class Outcome:
    """What each consumer made of one damage: "same", "refused", "no-op" or a violation."""

    damage: Damage
    verdicts: dict[str, str] = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        return [f"{c}: {v}" for c, v in self.verdicts.items()
                if v not in ("same", "refused", "no-op")]  # fmt: skip


def _cli_verdict(code: int, err: str, same: bool) -> str:
    if code == 0:
        return "same" if same else "different result"
    found = re.search(r"parcv: run failed: (\w+):", err)
    kind = getattr(parcv.errors, found.group(1), None) if found else None
    if isinstance(kind, type) and issubclass(kind, ParcvError):
        return "refused"
    if err.startswith("parcv: error: store ") and "Traceback" not in err:
        return "refused"  # a PlanMismatchError, said as the command line says usage errors
    return f"raw error (exit {code}): {err.strip()[-300:]}"


def check_damage(template: Template, damage: Damage, folder: Path) -> Outcome:
    """Damage a copy of the template's run, then load it, report it and resume it."""
    run = folder / "run"
    shutil.copytree(template.folder, run)
    store = run / "store.sqlite"
    outcome = Outcome(damage)
    if not apply_damage(store, damage):
        outcome.verdicts = dict.fromkeys(("load", "report", "resume"), "no-op")
        return outcome
    try:
        same = signature(parcv.load(store)) == template.result
        outcome.verdicts["load"] = "same" if same else "different result"
    except ParcvError:
        outcome.verdicts["load"] = "refused"
    except Exception:  # a raw exception is what the check looks for
        outcome.verdicts["load"] = "raw error: " + traceback.format_exc(limit=-3)
    code, err = _cli(["report", str(run)])
    same = code == 0 and (run / "results.json").read_text() == template.report
    outcome.verdicts["report"] = _cli_verdict(code, err, same)
    argv = ["run", str(template.spec), "--out", str(run), "--resume", "--backend", "serial",
            "--quiet"]  # fmt: skip
    code, err = _cli(argv)
    same = code == 0 and signature(parcv.load(store)) == template.result
    outcome.verdicts["resume"] = _cli_verdict(code, err, same)
    return outcome


def summarize(outcomes: list[Outcome]) -> str:
    """Counts per consumer and verdict, then each violation with its damage."""
    lines = [f"{len(outcomes)} damaged stores"]
    for consumer in ("load", "report", "resume"):
        counts = Counter(
            v if v in ("same", "refused", "no-op") else "VIOLATION"
            for o in outcomes
            for c, v in o.verdicts.items()
            if c == consumer
        )
        lines.append(f"  {consumer}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    kinds = Counter(d.how for d in (o.damage for o in outcomes))
    lines.append("  damages: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    bad = [o for o in outcomes if o.violations]
    lines.append(f"  violations: {len(bad)}")
    lines += [f"    {o.damage}: {'; '.join(o.violations)}" for o in bad]
    return "\n".join(lines)
