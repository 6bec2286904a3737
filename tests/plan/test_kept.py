"""A part's kept fits travel as their pickle's bytes: the driver hands them on unread."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_regression
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import KFold

from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from parcv.plan.kept import KeptFit
from parcv.plan.parts import continued
from parcv.plan.records import Record, Unit

X, y = make_regression(n_samples=60, n_features=4, noise=5.0, random_state=0)
HGB = HistGradientBoostingRegressor(max_iter=5, random_state=0)


def _kept_record(inner: int, candidate: int, kept: KeptFit) -> Record:
    unit = Unit("fit", None, inner, candidate)
    return Record(unit, "ok", {"score": 0.0}, {}, 0.0, 0.0, 40, 20, estimator=kept)


def test_the_next_part_gets_the_bytes_unread_each_set_to_grow_by_a_warm_start():
    plan = build_plan(HGB, {"learning_rate": [0.1, 0.3]}, check_dataset(X, y), inner=KFold(3))
    # Bytes no unpickler reads: continued() must hand them on without looking inside.
    records = {("fit", None, i, c): _kept_record(i, c, KeptFit(f"fold {i} row {c}".encode()))
               for i in range(3) for c in range(2)}  # fmt: skip
    records[("fit", None, 2, 1)] = Record(
        Unit("fit", None, 2, 1), "ok", {"score": 0.0}, {}, 0.0, 0.0, 40, 20
    )  # read back from a store: no fit
    starts = continued(plan, records, continues=[1], warm_start="warm_start")
    # Row 0 of the new part continues row 1 of the old; fold 2 has no kept fit: from scratch.
    assert set(starts) == {("fit", None, 0, 0), ("fit", None, 1, 0)}
    assert starts[("fit", None, 1, 0)] == KeptFit(b"fold 1 row 1", warm_start="warm_start")


def test_each_estimator_read_from_a_kept_fit_is_a_new_one_set_to_continue():
    fitted = HGB.fit(X, y)
    kept = KeptFit.of(fitted).grown_by("warm_start")
    first, second = kept.estimator(), kept.estimator()
    assert first is not second and first.warm_start and second.warm_start
    first.set_params(max_iter=9).fit(X, y)  # growing one leaves the bytes as they were
    assert second.n_iter_ == fitted.n_iter_ == 5
    np.testing.assert_array_equal(second.predict(X), fitted.predict(X))
    # Grown on by a warm start, it is the fit from scratch to 9 iterations, bit for bit.
    scratch = HistGradientBoostingRegressor(max_iter=9, random_state=0).fit(X, y)
    np.testing.assert_array_equal(first.predict(X), scratch.predict(X))
