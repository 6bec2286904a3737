"""Which units a store lacks, read from its table's index, against a lookup key by key.

``parcv.load`` (is the run finished? how far did it get?) and a resume (which units are
still to run?) ask this of every unit; for a plan's grids of units they read the table's
index at once (:meth:`RecordTable.held`) instead of building a unit and a key per unit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge

import parcv
from parcv.engine.runner import start_schedule
from parcv.engine.session import expected_keys, load_run, missing_of_expected
from parcv.plan.record_table import RecordTable
from parcv.plan.records import Record, Unit
from parcv.plan.units import UnitGrid, as_units

X = np.random.default_rng(0).normal(size=(40, 3))
Y = X @ [1.0, -2.0, 0.5] + np.random.default_rng(1).normal(size=40)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A finished nested CV (3 outer x 2 inner x 4 candidates, refits), read back."""
    store = tmp_path_factory.mktemp("missing") / "store.sqlite"
    grid = {"alpha": [0.1, 1.0, 10.0, 100.0]}
    parcv.nested_cv(Ridge(), grid, X, Y, outer=3, inner=2, store=store, backend="serial")
    _, plan, records = load_run(store)
    assert any(isinstance(b, UnitGrid) for b in as_units(plan.units).blocks)
    return plan, records


def _a_view(data, table):
    """A view of ``table`` keeping a random subset of its rows."""
    keep = data.draw(st.lists(st.booleans(), min_size=len(table), max_size=len(table)))
    return table.where(np.array(keep, dtype=bool))


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_missing_units_read_from_the_index_are_those_looked_up_key_by_key(stored, data):
    plan, table = stored
    view = _a_view(data, table)
    expected = expected_keys(plan, view)
    missing = [k for k in expected if k not in view]
    assert missing_of_expected(plan, view) == (missing, len(expected))
    for block in as_units(plan.units).blocks:
        if isinstance(block, UnitGrid):
            assert view.held(block).tolist() == [u.key in view for u in block]


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_resume_runs_exactly_the_units_whose_records_are_missing(stored, data):
    plan, table = stored
    view = _a_view(data, table)
    schedule = start_schedule(plan, done={k: view[k] for k in view})
    brute = [any(k not in view for k in plan.unit_keys(u)) for u in plan.units]
    assert schedule._todo(set()).tolist() == brute


_FOLDS = ((0, 2), (1, 3), (None, 2))


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(["fit", "criteria", "perm", "ncv", "boot", "incr"]),
    order=st.permutations(range(5)),
    stored=st.sets(st.tuples(st.sampled_from([0, 1, None]), st.integers(0, 3), st.integers(0, 6))),
)
def test_a_grid_of_any_kind_is_held_where_its_keys_are(kind, order, stored):
    # Kinds key some of a unit's fields only (criteria: outer fold and candidate): units
    # of a grid that differ elsewhere share a record, and the index stores no fold there.
    table = RecordTable.growing()
    table.add(
        [
            Record(Unit(kind, o, i, c), "ok", {"score": 1.0}, {}, 0.0, 0.0, 1, 1)
            for o, i, c in sorted(stored, key=str)
        ]
    )
    grid = UnitGrid(kind, _FOLDS, tuple(order))
    assert table.held(grid).tolist() == [u.key in table for u in grid]
