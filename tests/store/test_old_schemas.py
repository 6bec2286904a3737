"""Stores of every older schema, written by the parcv that wrote each, read and resumed now.

The fixtures (``fixtures/schema_N.sqlite``) were written by the last commit of each store
schema (``fixtures/make_fixtures.py`` says which and how). Two references, both independent
of parcv's readers: the numbers the writing run stored, read from the file by plain SQL
(their bytes come from the machine that wrote them: Ridge's LAPACK solve differs in the last
bit between CPUs, so a run here may not give them), and the same sweep run now with nothing
stored, for what does not depend on the machine (the units, the keys a resume finds, the
candidates chosen) and for units a resume computes again.
"""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import parcv
from parcv.plan.records import Unit
from parcv.store.readers import read_counts, read_records, read_stored_kinds
from tests.store.fixtures.make_fixtures import SPACE, sweep_data
from tests.store.stored_scores import stored_scores

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _sweep(store=None, **options):
    X, y = sweep_data()
    return parcv.nested_cv(Ridge(), SPACE, X, y, outer=3, inner=2, backend="serial",
                           store=store, progress=False, **options)  # fmt: skip


@pytest.fixture(scope="module")
def fresh():
    return _sweep()


def _copy(schema, tmp_path):
    store = tmp_path / "run.sqlite"
    shutil.copyfile(FIXTURES / f"schema_{schema}.sqlite", store)
    return store


def _stored(store):
    pairs = stored_scores(store)
    assert len({key for key, _ in pairs}) == len(pairs)  # one run: a row per unit
    return dict(pairs)


def _scores(result):
    return {r.key: r.test_scores for r in result.records}


def _same(result, fresh, expected):
    """``result`` holds ``expected``'s numbers, and the fresh run's units and choices."""
    assert _scores(result) == expected
    assert set(expected) == set(_scores(fresh))
    assert result.chosen == fresh.chosen
    outer = [expected[Unit("refit", o, None, 0).key]["score"] for o in range(3)]
    np.testing.assert_array_equal(result.outer_scores["score"], outer)


def _schema(store):
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
    return None if row is None else row[0]


@pytest.mark.parametrize("schema", [1, 2, 3, 4, 5])
def test_a_store_of_each_older_schema_reads_as_the_run_that_wrote_it(schema, tmp_path, fresh):
    store = _copy(schema, tmp_path)
    before = store.read_bytes()
    _same(parcv.load(store), fresh, _stored(store))
    n_units = len(fresh.records)
    assert len(read_records(store)) == n_units
    assert read_counts(store)[0] == n_units
    assert sum(read_stored_kinds(store).values()) == n_units
    assert store.read_bytes() == before  # a read writes nothing


@pytest.mark.parametrize("schema", [1, 2, 3])
def test_a_run_refuses_to_add_to_a_store_of_schema_1_to_3(schema, tmp_path, fresh):
    store = _copy(schema, tmp_path)
    before = store.read_bytes()
    with pytest.raises(parcv.PlanMismatchError, match=r"cannot add to it|will not reuse"):
        _sweep(store, resume=True)
    assert store.read_bytes() == before


@pytest.mark.parametrize("schema", [4, 5])
def test_a_run_adds_to_a_store_of_schema_4_or_5_migrating_it_in_place(schema, tmp_path, fresh):
    store = _copy(schema, tmp_path)
    old = {r.key: r.finished for r in parcv.load(store).records}
    # Schema 5's content keys are this parcv's: every unit is reused, its stored numbers
    # kept. Schema 4 keyed units before code identity: every unit is computed again.
    expected = _stored(store) if schema == 5 else _scores(fresh)
    _same(_sweep(store, resume=True), fresh, expected)
    assert _schema(store) == "6"
    _same(parcv.load(store), fresh, expected)
    resumed = {r.key: r.finished for r in parcv.load(store).records}
    kept = {k for k in old if resumed[k] == old[k]}
    if schema == 5:  # its content keys are this parcv's: every fit is reused
        assert {k for k in old if k[0] == "fit"} <= kept
    else:  # schema 4 keyed units before code identity: no key of it is a unit's now
        assert not kept
    # Again, on the migrated store: its old rows and the new chunks side by side.
    again = _sweep(store, resume=True)
    _same(again, fresh, expected)
    assert {k: r.finished for k, r in read_records(store).items() if k[0] == "fit"} == {
        k: t for k, t in resumed.items() if k[0] == "fit"
    }


def test_a_store_of_a_newer_schema_is_refused_naming_its_version(tmp_path):
    store = _copy(5, tmp_path)
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("UPDATE meta SET value = '7' WHERE name = 'schema'")
    before = store.read_bytes()
    with pytest.raises(parcv.PlanMismatchError, match=r"newer parcv \(store schema 7\).*1 to 6"):
        parcv.load(store)
    with pytest.raises(parcv.PlanMismatchError, match=r"store schema 7"):
        _sweep(store, resume=True)
    assert store.read_bytes() == before


@pytest.mark.parametrize("schema", ["3", "4", "4_halving", "4_nested_halving", "5", "now"])
def test_the_first_unit_of_a_kind_is_the_one_read_with_every_unit(schema, tmp_path):
    # read_model_entry finds a run's final unit by its kind alone: the key of the first
    # unit of that kind among all the units read (a million units took half a second).
    from parcv.store.chunks import first_key_of_kind, read_run_units

    if schema == "now":
        store = tmp_path / "run.sqlite"
        _sweep(store=store)
    else:
        store = _copy(schema, tmp_path)
    with closing(sqlite3.connect(store)) as conn:
        units = read_run_units(conn)
        assert "final" in units.kinds or schema.endswith("halving")
        for kind in [*units.kinds, "no such kind"]:
            at = (
                np.flatnonzero(units.kind == units.kinds.index(kind)) if kind in units.kinds else []
            )
            expected = units.keys[at[0]].tobytes() if len(at) else None
            assert first_key_of_kind(conn, kind) == expected, kind
