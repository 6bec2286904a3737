"""parcv inspect reads a plan's counts from its grid of units, not unit by unit (issue 40)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from parcv.cli.inspect import _train_rows
from parcv.engine.session import survey_store
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from parcv.plan.keys import ContentKeys

X = np.random.default_rng(0).normal(size=(50, 2))
Y = X[:, 0] + np.random.default_rng(1).normal(size=50)
DATA = check_dataset(X, Y)


@pytest.mark.parametrize(
    "options",
    [
        {"inner": 3, "outer": 4, "fast_cv": False},
        {"inner": 5, "fast_cv": False, "criteria": ["aic", "bic"]},
        {"inner": 3, "outer": 3, "fast_cv": True},
    ],
)
def test_training_rows_equal_the_sum_over_every_unit(options):
    plan = build_plan(Ridge(), {"alpha": [0.5, 1.0, 2.0]}, DATA, **options)
    assert _train_rows(plan) == sum(len(plan.fold_of(u).train) for u in plan.units)


def test_a_survey_without_a_store_computes_no_unit_key(tmp_path, monkeypatch):
    plan = build_plan(Ridge(), {"alpha": [0.5, 1.0, 2.0]}, DATA, inner=3, outer=4)

    def refuse(*args, **kwargs):
        raise AssertionError("a unit's content key was computed")

    monkeypatch.setattr(ContentKeys, "graph_key_chunks", refuse)
    monkeypatch.setattr(ContentKeys, "graph_keys", refuse)
    survey = survey_store(plan, DATA, tmp_path / "store.sqlite")
    assert (survey.n_found, survey.n_fits, survey.n_records) == (0, 5 * 3 * 3, 0)
