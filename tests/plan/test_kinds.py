"""Unit kinds as data: the registry is what the plan, the engine and the results read."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.tree import DecisionTreeRegressor

from parcv.engine.backends.serial import SerialBackend
from parcv.engine.options import RunOptions
from parcv.engine.session import execute_plan
from parcv.engine.work import RUNNERS
from parcv.plan.build import build_plan
from parcv.plan.curves import bias_variance_data, plan_bias_variance, plan_permutation_test
from parcv.plan.data import check_dataset
from parcv.plan.iterations import Iterations
from parcv.plan.keys import content_keys
from parcv.plan.kinds import KEEPS, KINDS, Kind, kind_of, kind_order, register_kind
from parcv.plan.records import ErrorInfo, Record, Unit, unit_of
from parcv.plan.splits import Fold
from parcv.results.aggregate import failure_message
from parcv.results.assemble import make_search_result

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
        build_plan(
            Ridge(),
            None,
            DATA,
            inner=3,
            refit=False,
            interval="ncv",
            ncv_repetitions=2,
            scoring="neg_mean_squared_error",
        ),
        plan_permutation_test(
            Ridge(), DATA, cv=3, scoring=None, n_permutations=2, random_state=0
        ).plan,
        plan_bias_variance(
            DecisionTreeRegressor(random_state=0), bvd, 20, loss="mse", n_rounds=2, random_state=0
        ).plan,
        build_plan(
            GradientBoostingRegressor(random_state=0),
            {"max_depth": [1, 2]},
            DATA,
            inner=3,
            outer=2,
            iterations=Iterations("n_estimators", 4, every=2),
        ),
        build_plan(
            GradientBoostingRegressor(random_state=0),
            None,
            DATA,
            inner=3,
            iterations=Iterations("n_estimators", 4, patience=1),
        ),
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
    assert seen == {"criteria", "fit", "fast-cv", "refit", "final", "ncv", "perm", "boot", "path"}
    order = kind_order()
    # fast CV and iteration paths make fit records: they sort with the fits.
    variants = ("fast-cv", "path")
    assert order["path"] == order["fast-cv"] == order["fit"]
    assert [k for k in sorted(order, key=order.__getitem__) if k not in variants][:7] == [
        "criteria", "fit", "refit", "final", "ncv", "perm", "boot",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        (Unit("fit", 2, 1, 0), "The fit of candidate alpha=1.0 on outer fold 2, inner fold 1"),
        (Unit("fit", None, None, 0),
         "The fit of candidate alpha=1.0 on all data, every inner fold (fast CV)"),
        (Unit("refit", 0, None, 0), "The refit of candidate alpha=1.0 on outer fold 0"),
        (Unit("final", None, None, 0), "The final fit of candidate alpha=1.0 on all data"),
        (Unit("criteria", 1, None, 0), "The criteria fit of candidate alpha=1.0 on outer fold 1"),
        (Unit("ncv", None, 3, 0), "The fit of candidate alpha=1.0 on nested-CV interval fit 3"),
        (Unit("perm", 4, 1, 0),
         "The fit of candidate alpha=1.0 on fold 1 of permutation 4 of the targets"),
        (Unit("boot", None, 2, 0), "The fit of candidate alpha=1.0 on bootstrap round 2"),
    ],
)  # fmt: skip
def test_failure_messages_say_which_unit_failed(unit, expected):
    plan = build_plan(Ridge(), {"alpha": [1.0]}, DATA, inner=3)
    record = Record(unit, "failed", {}, {}, 0.0, 0.0, 0, 0, error=ErrorInfo("E", "boom", ""))
    assert failure_message(plan, record).startswith(f"{expected} failed (error_score='raise'). ")


def test_a_kind_with_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="named 'fit' is registered already"):
        register_kind(KINDS["fit"])
    with pytest.raises(ValueError, match="keeps of kind 'x' must be among"):
        Kind("x", 9, (), rows=None, keeps=("everything",), tag=b"x", digests=None,
             describe=str)  # fmt: skip


@pytest.fixture
def train_fit_kind():
    """A new kind, registered here and nowhere else: fit on the training rows, score on them."""
    kind = register_kind(Kind(
        "train-fit", 10, ("outer", "inner", "candidate"),
        rows=lambda plan, u: Fold(plan.inner_folds[u.outer][u.inner].train,
                                  plan.inner_folds[u.outer][u.inner].train),
        keeps=("scores",),
        tag=b"train-fit",
        digests=lambda keys, o, i: (keys.folds[(o, i)],),
        describe=lambda u: f"the training rows of inner fold {u.inner}",
    ))  # fmt: skip
    yield kind
    del KINDS[kind.name]


def test_a_new_kind_is_one_registry_entry_and_runs_end_to_end(train_fit_kind, tmp_path):
    plan = build_plan(Ridge(), {"alpha": [0.1, 10.0]}, DATA, inner=3, fast_cv=False)
    extra = tuple(Unit("train-fit", None, i, c) for c in range(2) for i in range(3))
    plan = replace(plan, units=plan.units + extra)
    store = tmp_path / "run.sqlite"

    records = execute_plan(plan, DATA, "search", RunOptions(backend=SerialBackend(), store=store))

    for unit in extra:
        train = plan.inner_folds[None][unit.inner].train
        model = Ridge(alpha=plan.candidates[unit.candidate].params["alpha"])
        expected = model.fit(X[train], Y[train]).score(X[train], Y[train])
        record = records[("train-fit", None, unit.inner, unit.candidate)]
        assert record.ok and record.test_scores == {"score": expected}
        assert (record.n_train, record.n_test) == (train.size, train.size)
    keys = content_keys(plan, DATA).graph_keys(plan)
    assert len(set(keys.values())) == len(keys) == 6 + 6  # its keys differ from the fits'
    # Resumed from the store by content key: nothing runs again, the same records come back.
    again = execute_plan(
        plan, DATA, "search", RunOptions(backend=SerialBackend(), store=store, resume=True)
    )
    key = ("train-fit", None, 2, 1)
    assert again[key].test_scores == records[key].test_scores
    result = make_search_result(plan, records)
    kinds = [r.unit.kind for r in result.records]
    assert kinds == sorted(kinds, key=kind_order().__getitem__) and kinds[-1] == "train-fit"
