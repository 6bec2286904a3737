"""Criteria as graph tasks: values, tables, selections, errors, and the cubic example."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

import parcv
from parcv.bayes import BayesianLinearRegression
from parcv.criteria import compute_criteria
from parcv.criteria.tasks import CriteriaRequest, CriteriaUndefinedError

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(0)
X = RNG.uniform(-1.0, 1.0, size=(60, 1))
Y = 0.5 - X[:, 0] - 2.0 * X[:, 0] ** 2 + 3.0 * X[:, 0] ** 3 + RNG.normal(0.0, 0.3, 60)
DEGREES = {"polynomialfeatures__degree": [1, 2, 3, 4]}


def _poly():
    return make_pipeline(PolynomialFeatures(), LinearRegression())


def test_criteria_equal_compute_criteria_on_a_refit_by_hand():
    r = parcv.search(
        _poly(),
        DEGREES,
        X,
        Y,
        cv=5,
        scoring="neg_mean_squared_error",
        criteria=["aic", "bic", "cp"],
        backend="serial",
    )
    table = r.criteria_table
    assert [row.label for row in table.rows] == [c.label for c in r.candidates]
    for row, degree in zip(table.rows, DEGREES["polynomialfeatures__degree"], strict=True):
        model = _poly().set_params(polynomialfeatures__degree=degree).fit(X, Y)
        want = compute_criteria(model, X, Y, criteria=("aic", "bic", "cp"))
        assert row.values["aic"] == want.aic and row.values["bic"] == want.bic
        assert row.values["cp"] == want.cp and row.values["n_params"] == degree + 1
        summary = r.summaries["score"][row.candidate]
        assert (row.mean, row.se) == (summary.mean, summary.se)
    aics = [row.values["aic"] for row in table.rows]
    assert table.selected["aic"] == int(np.argmin(aics))
    assert table.selected["cv"] == r.best_index_
    text, exported = r.to_text(), json.loads(r.to_json())["criteria"]
    assert "selected by CV best" in text and "BIC:" in text
    assert exported["selected"]["bic"]["label"] == table.label_of("bic")


def test_evidence_is_the_bayesian_models_log_evidence_and_the_largest_is_selected():
    space = {"degree": [1, 2, 3, 4, 5]}
    r = parcv.search(
        BayesianLinearRegression(),
        space,
        X,
        Y,
        cv=5,
        criteria=["evidence", "bic"],
        scoring="neg_mean_squared_error",
        backend="serial",
    )
    for row, degree in zip(r.criteria_table.rows, space["degree"], strict=True):
        want = BayesianLinearRegression(degree=degree).fit(X, Y).log_evidence_
        assert row.values["evidence"] == pytest.approx(want, rel=1e-12)
    evidences = [row.values["evidence"] for row in r.criteria_table.rows]
    assert r.criteria_table.selected["evidence"] == int(np.argmax(evidences))


def test_undefined_criteria_are_clear_errors_before_or_at_the_first_criteria_task():
    with pytest.raises(CriteriaUndefinedError, match="'evidence' is undefined for Ridge"):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, criteria=["evidence"], backend="serial")
    with pytest.raises(CriteriaUndefinedError, match="'cp' is undefined for a classifier"):
        parcv.search(
            LogisticRegression(), {"C": [1.0]}, X, Y > 0, criteria=["cp"], backend="serial"
        )
    with pytest.raises(ValueError, match="criteria must be a non-empty list of names"):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, criteria=["aicc"], backend="serial")
    gp = GaussianProcessRegressor(RBF(), optimizer=None)
    with pytest.raises(CriteriaUndefinedError, match="n_params=<int or callable"):
        parcv.search(gp, {"alpha": [0.1]}, X, Y, criteria=["bic", "evidence"], backend="serial")
    request = CriteriaRequest(("bic", "evidence"), n_params=lambda est: 2)
    r = parcv.search(
        gp,
        {"alpha": [0.1, 1.0]},
        X,
        Y,
        criteria=request,
        backend="serial",
        scoring="neg_mean_squared_error",
    )
    gp_fit = GaussianProcessRegressor(RBF(), optimizer=None, alpha=0.1).fit(X, Y)
    assert r.criteria_table.rows[0].values["evidence"] == gp_fit.log_marginal_likelihood_value_
    assert r.criteria_table.rows[0].values["n_params"] == 2


def test_nested_cv_computes_criteria_on_every_outer_train_part(tmp_path):
    store = tmp_path / "run.sqlite"
    r = parcv.nested_cv(
        _poly(),
        DEGREES,
        X,
        Y,
        outer=3,
        inner=3,
        criteria=["bic"],
        scoring="neg_mean_squared_error",
        backend="serial",
        store=store,
    )
    keys = {rec.key for rec in r.records if rec.unit.kind == "criteria"}
    assert keys == {("criteria", o, c) for o in (None, 0, 1, 2) for c in range(4)}
    assert r.criteria_choices["cv"] == r.chosen
    assert len(r.criteria_choices["bic"]) == 3
    assert r.criteria_table is r.final.criteria_table
    assert "bic: [" in r.to_text()
    assert parcv.load(store).to_json() == r.to_json()


def test_polynomial_example_cv_nested_cv_bic_and_evidence_each_select_a_degree(capsys):
    spec = importlib.util.spec_from_file_location(
        "polynomial_criteria", ROOT / "examples" / "polynomial_criteria.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(random_state=1)
    degrees = out["degrees"]
    # The data come from a cubic: the penalised methods find it; CV may pick a close superset.
    assert degrees["bic"] == 3 and degrees["evidence"] == 3 and degrees["one_se"] == 3
    assert degrees["cv"] in (3, 4) and degrees["nested_cv"] in (3, 4)
    assert Counter(out["nested"].criteria_choices["bic"]).most_common(1)[0][0] == 3
    printed = capsys.readouterr().out
    assert "BIC" in printed and "evidence" in printed and "nested CV (mode)" in printed


def test_search_on_cubic_data_with_kfold_selects_all_methods(tmp_path):
    r = parcv.search(
        BayesianLinearRegression(),
        {"degree": [1, 3, 6]},
        X,
        Y,
        cv=KFold(5, shuffle=True, random_state=0),
        criteria=["aic", "bic", "cp"],
        scoring="neg_mean_squared_error",
        backend="serial",
    )
    assert set(r.criteria_table.selected) == {"cv", "one_se", "aic", "bic", "cp"}
    assert r.criteria_table.label_of("bic") == "degree=3"


def test_load_rebuilds_the_criteria_table_and_choices_of_the_run(tmp_path):
    from parcv.results.summary import Selection

    request = CriteriaRequest(("aic", "bic", "cp"), n_params=lambda est: est[0].degree + 2,
                              noise_variance=0.09)  # fmt: skip
    options = {"scoring": "neg_mean_squared_error", "criteria": request, "backend": "serial"}
    one_se = Selection("one_se", complexity=lambda params: params["polynomialfeatures__degree"])
    searched = parcv.search(_poly(), DEGREES, X, Y, cv=5, selection=one_se,
                            store=tmp_path / "search.sqlite", **options)  # fmt: skip
    nested = parcv.nested_cv(_poly(), DEGREES, X, Y, outer=3, inner=3,
                             store=tmp_path / "nested.sqlite", **options)  # fmt: skip
    loaded, loaded_nested = (
        parcv.load(tmp_path / "search.sqlite"),
        parcv.load(tmp_path / "nested.sqlite"),
    )
    assert loaded.criteria_table == searched.criteria_table
    assert [row.values["n_params"] for row in loaded.criteria_table.rows] == [3, 4, 5, 6]
    assert loaded_nested.criteria_table == nested.criteria_table
    assert loaded_nested.criteria_choices == nested.criteria_choices
    assert set(nested.criteria_choices) == {"cv", "one_se", "aic", "bic", "cp"}
    # The stored values are those of a fit by hand with the same n_params and noise.
    model = _poly().set_params(polynomialfeatures__degree=3).fit(X, Y)
    want = compute_criteria(model, X, Y, criteria=("bic",), n_params=5, noise_variance=0.09)
    assert loaded.criteria_table.rows[2].values["bic"] == pytest.approx(want.bic, rel=1e-12)
