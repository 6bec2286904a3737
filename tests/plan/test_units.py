"""The plan's units as an array, and twins found without every unit's key (issue 40)."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from parcv.plan.build import build_plan, make_units
from parcv.plan.data import check_dataset
from parcv.plan.keys import content_keys
from parcv.plan.kinds import kind_of
from parcv.plan.records import Unit, unit_of
from parcv.plan.units import UnitArray, UnitGrid, pack_units, unpack_units

X = np.random.default_rng(0).normal(size=(40, 2))
Y = X[:, 0] + np.random.default_rng(1).normal(size=40)
DATA = check_dataset(X, Y)


def _reference_units(inner_folds, n_candidates, batches, criteria, order=None):
    """make_units as it was: a tuple of every unit."""
    units = [Unit("criteria", o, None, c) for o in inner_folds if criteria
             for c in range(n_candidates)]  # fmt: skip
    if batches:
        units += [Unit("fit", o, None, b[0]) for o in inner_folds for b in batches]
    else:
        ranked = (
            sorted(range(n_candidates), key=lambda c: order[c]) if order else range(n_candidates)
        )
        units += [Unit("fit", o, i, c) for o, folds in inner_folds.items()
                  for i in range(len(folds)) for c in ranked]  # fmt: skip
    return tuple(units)


@settings(max_examples=60, deadline=None)
@given(
    n_inner=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    all_data=st.booleans(),
    n_candidates=st.integers(1, 6),
    criteria=st.booleans(),
    batched=st.booleans(),
    ordered=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_unit_array_equals_the_tuple_of_units(
    n_inner, all_data, n_candidates, criteria, batched, ordered, seed
):
    inner_folds = {o: [None] * n for o, n in enumerate(n_inner)}
    if all_data:
        inner_folds[None] = [None] * 3
    rng = np.random.default_rng(seed)
    batches = ((0,), tuple(range(1, n_candidates))) if batched and n_candidates > 1 else ()
    order = tuple((int(rng.integers(3)),) for _ in range(n_candidates)) if ordered else None
    want = _reference_units(inner_folds, n_candidates, batches, criteria, order)
    got = make_units(inner_folds, n_candidates, batches, criteria, order=order)
    assert isinstance(got, UnitArray)
    assert len(got) == len(want) and tuple(got) == want and got == want and want == got
    assert [got[i] for i in range(len(got))] == list(want)
    assert [got[-i] for i in range(1, len(got) + 1)] == [want[-i] for i in range(1, len(want) + 1)]
    assert got[1:7] == want[1:7] and got[::3] == want[::3]
    assert hash(got) == hash(want)
    extra = (Unit("ncv", None, 0, 0), Unit("perm", 0, 1, 0))
    assert got + extra == want + extra and extra + got == extra + want
    assert isinstance(got + extra, UnitArray)
    assert pickle.loads(pickle.dumps(got)) == want
    assert got.kinds() == {u.kind for u in want}
    with pytest.raises(IndexError):
        got[len(want)]


def test_a_plan_keeps_its_fits_as_one_grid_and_counts_them_from_it():
    plan = build_plan(Ridge(), {"alpha": [1.0, 2.0, 3.0]}, DATA, inner=3, outer=4,
                      fast_cv=False, criteria=["aic"])  # fmt: skip
    grids = [b for b in plan.units.blocks if isinstance(b, UnitGrid)]
    assert len(grids) == 1 and len(grids[0]) == 5 * 3 * 3
    units = tuple(plan.units)
    assert plan.n_units == sum(len(plan.unit_keys(u)) for u in units) + 5
    want: dict = {o: [] for o in plan.inner_folds}
    for u in units:
        if kind_of(u).selects:
            want[u.outer].extend(plan.unit_keys(u))
    got = plan.fit_record_keys_by_outer()
    assert got == want
    for outer, keys in got.items():  # a grid's keys, read one by one, are its units'
        assert [keys[i] for i in range(len(keys))] == want[outer] == keys[:]
        assert keys[-1] == want[outer][-1] and plan.fit_record_keys(outer) == want[outer]
    # A plan given its units as a tuple holds them as an array too, equal to the built one.
    same = replace(plan, units=units)
    assert isinstance(same.units, UnitArray) and same.units == plan.units
    assert pickle.loads(pickle.dumps(plan.for_workers())).units == ()


def test_a_grid_refuses_a_kind_of_batched_units():
    with pytest.raises(ValueError, match="kind must be a kind of one record per unit"):
        UnitGrid("fast-cv", ((0, 2),), range(2))


def _reference_twins(graph, plan):
    """Twins as they were found: from the content key of every unit of the plan."""
    if plan.fast_cv:
        return {}
    first, twins = {}, {}
    for key, ckey in graph.items():
        if ckey in first:
            twins.setdefault(first[ckey], []).append(unit_of(key))
        else:
            first[ckey] = key
    return {k: tuple(v) for k, v in twins.items()}


def _twin_plans():
    rows = np.arange(20)  # rows of all data and of an outer fold's train part alike
    # Folds given as splits, some of them repeated: equal folds in several places.
    folds = [(rows[5:], rows[:5]), (rows[:15], rows[15:]), (rows[5:], rows[:5])]
    space = {"alpha": [1.0, 2.0, 1.0, 3.0, 2.0]}
    yield build_plan(Ridge(), space, DATA, inner=folds, fast_cv=False)
    yield build_plan(Ridge(), space, DATA, inner=3, outer=3, fast_cv=False, criteria=["aic"])
    yield build_plan(Ridge(), [{"alpha": [1.0, 1.0]}, {"alpha": [1.0]}], DATA, inner=folds,
                     outer=2, fast_cv=False)  # fmt: skip
    pipe = make_pipeline(PolynomialFeatures(), Ridge())
    ranked = {"polynomialfeatures__degree": [2, 1, 2], "ridge__alpha": [1.0, 1.0]}
    yield build_plan(pipe, ranked, DATA, inner=folds, fast_cv=False)  # candidates reordered
    plan = build_plan(Ridge(), space, DATA, inner=folds, outer=2, fast_cv=False)
    # Listed units equal to units of the grid, before it and after it.
    listed = (Unit("fit", 0, 2, 4), Unit("fit", None, 1, 3))
    yield replace(plan, units=listed + plan.units + (Unit("fit", 1, 0, 0), Unit("fit", 0, 0, 2)))
    yield build_plan(Ridge(), space, DATA, inner=3, fast_cv=True)


@pytest.mark.parametrize("index", range(6))
def test_twins_from_duplicate_folds_and_candidates_equal_twins_from_every_key(index):
    plan = list(_twin_plans())[index]
    keys = content_keys(plan, DATA)
    want = _reference_twins(keys.graph_keys(plan), plan)
    got = keys.twins(plan)
    assert got == want
    assert list(got) == list(want)  # in the order a pass over the plan meets them
    if index in (0, 4):
        assert sum(len(v) for v in got.values()) >= 9  # the plan has twins to find
    # The chunks hold every record's key, in plan order (a unit listed twice, twice).
    chunks = list(keys.graph_key_chunks(plan, size=7))
    pairs = [pair for chunk in chunks for pair in chunk]
    assert len(pairs) == plan.n_fit_records and all(len(c) >= 7 for c in chunks[:-1])
    assert list(dict(pairs).items()) == list(keys.graph_keys(plan).items())


_FOLD = st.one_of(st.none(), st.integers(0, 2**40))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.builds(Unit, st.sampled_from(["fit", "refit", "final", "perm", "boot"]),
                          _FOLD, _FOLD, st.integers(0, 2**40)), max_size=30))  # fmt: skip
def test_a_chunk_travels_as_built_in_types_and_unpacks_to_the_same_units(units):
    packed = pack_units(units)
    assert {type(x) for x in (packed, *packed, *packed[0])} <= {tuple, bytes, str}
    assert unpack_units(pickle.loads(pickle.dumps(packed))) == tuple(units)
    assert all(type(u.candidate) is int for u in unpack_units(packed))
