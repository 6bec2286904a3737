"""Unit kinds as data: the registry is what the plan, the engine and the results read."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.tree import DecisionTreeRegressor

from parcv.engine.work import RUNNERS
from parcv.plan.build import build_plan
from parcv.plan.curves import bias_variance_data, plan_bias_variance, plan_permutation_test
from parcv.plan.data import check_dataset
from parcv.plan.kinds import KEEPS, KINDS, Kind, kind_of, kind_order, register_kind
from parcv.plan.records import Unit, unit_of

X = np.random.default_rng(0).normal(size=(30, 3))
Y = X @ np.array([1.0, -2.0, 0.5]) + np.random.default_rng(1).normal(size=30)
DATA = check_dataset(X, Y)


def _all_kinds_plans():
    """Plans that between them hold a unit of every kind parcv makes."""
    bvd = bias_variance_data(X[:20], Y[:20], X[20:], Y[20:])
    return [
        build_plan(Ridge(), {"alpha": [0.1, 1.0]}, DATA, inner=3, outer=2, fast_cv=False),
        build_plan(Ridge(), {"alpha": [0.1, 1.0]}, DATA, inner=3, outer=2, fast_cv=True),
        build_plan(Ridge(), {"alpha": [0.1, 1.0]}, DATA, inner=3, criteria=("aic",)),
        build_plan(Ridge(), None, DATA, inner=3, refit=False, interval="ncv",
                   ncv_repetitions=2, scoring="neg_mean_squared_error"),  # fmt: skip
        plan_permutation_test(Ridge(), DATA, cv=3, scoring=None, n_permutations=2,
                              random_state=0).plan,  # fmt: skip
        plan_bias_variance(DecisionTreeRegressor(random_state=0), bvd, 20, loss="mse",
                           n_rounds=2, random_state=0).plan,  # fmt: skip
    ]


def test_every_kind_of_every_plan_is_registered_with_an_order():
    seen = set()
    for plan in _all_kinds_plans():
        units = list(plan.units) + [Unit("refit", o, None, 0) for o in plan.refit_outers]
        units += [Unit("final", None, None, 0)] if plan.final else []
        for unit in units:
            kind = kind_of(unit)
            seen.add(kind.name)
            assert unit.kind in kind_order()
            assert set(kind.keeps) <= set(KEEPS)
            assert kind.runner in RUNNERS
            assert unit_of(unit.key).key == unit.key
    assert seen == {"criteria", "fit", "fast-cv", "refit", "final", "ncv", "perm", "boot"}
    order = kind_order()
    assert [k for k in sorted(order, key=order.__getitem__) if k != "fast-cv"][:7] == [
        "criteria", "fit", "refit", "final", "ncv", "perm", "boot",
    ]  # fmt: skip


def test_a_kind_with_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="named 'fit' is registered already"):
        register_kind(KINDS["fit"])
    with pytest.raises(ValueError, match="keeps of kind 'x' must be among"):
        Kind("x", 9, (), rows=None, keeps=("everything",), tag=b"x", digests=None,
             describe=str)  # fmt: skip
