"""``[estimator] params`` are checked against ``get_params()``: ``**kwargs`` constructors too."""

from __future__ import annotations

import numpy as np
import pytest

import parcv
from parcv.cli.build import build_estimator
from parcv.cli.spec import SpecError, parse_spec
from parcv.cli.sweep import build_job

xgboost = pytest.importorskip("xgboost")

XGB_SPEC = """\
[data]
source = "sklearn:make_classification"
params = { n_samples = 40, n_features = 4, random_state = 0 }

[estimator]
class = "xgboost.XGBClassifier"
params = { n_jobs = 1, n_estimators = 3, max_depth = 2 }

[cv]
cv = 2
"""


def test_a_kwargs_constructor_takes_every_parameter_its_get_params_names():
    # XGBClassifier's signature is (*, objective, **kwargs): n_jobs is one of its
    # get_params(), as scikit-learn's conventions make it, and a spec may set it.
    job = build_job(parse_spec(XGB_SPEC))
    assert isinstance(job.estimator, xgboost.XGBClassifier)
    params = job.estimator.get_params()
    assert (params["n_jobs"], params["n_estimators"], params["max_depth"]) == (1, 3, 2)
    assert params["random_state"] == 0  # the run's seed, as for any class that has one
    result = job.run(parcv.RunOptions(backend="serial", progress=False))
    # The same estimator cross-validated by scikit-learn on the same folds: the same scores.
    from sklearn.model_selection import cross_val_score

    X, y = job.data.X, job.data.y
    expected = cross_val_score(job.estimator, X, y, cv=job.options["cv"])
    np.testing.assert_array_equal(result["test_score"], expected)


def test_a_misspelt_parameter_of_a_kwargs_constructor_is_refused_with_did_you_mean(monkeypatch):
    fitted = []
    monkeypatch.setattr(xgboost.XGBClassifier, "fit", lambda self, *a, **k: fitted.append(1))
    with pytest.raises(SpecError) as caught:
        build_job(parse_spec(XGB_SPEC.replace("n_jobs = 1", "n_job = 1")))
    message = str(caught.value)
    assert ":7: estimator.params.n_job = 1 is not valid" in message
    assert "Did you mean 'n_jobs'?" in message
    assert "'max_depth'" in message and "'n_estimators'" in message  # what is allowed
    assert fitted == []  # refused before any fit


def test_a_plain_constructor_is_still_checked_by_its_parameters():
    with pytest.raises(SpecError, match=r"estimator.params.alpah.*Did you mean 'alpha'"):
        build_estimator({"class": "sklearn.linear_model.Ridge", "params": {"alpah": 1.0}})
    # A class whose constructor needs an argument (no default) is checked by its signature.
    with pytest.raises(SpecError, match=r"est.params.thresold.*Did you mean 'threshold'"):
        build_estimator(
            {
                "class": "sklearn.feature_selection.SelectFromModel",
                "params": {"thresold": 0.1},
            },
            "est",
        )


def test_a_pipeline_step_with_a_kwargs_constructor_takes_its_parameters_and_its_space():
    text = XGB_SPEC.replace(
        'class = "xgboost.XGBClassifier"\nparams = { n_jobs = 1, n_estimators = 3, max_depth = 2 }',
        'steps = [ { name = "xgb", class = "xgboost.XGBClassifier", '
        "params = { n_jobs = 1, n_estimators = 3 } } ]",
    )
    text += "[space]\nxgb__max_depth = [1, 2]\n"
    job = build_job(parse_spec(text))
    assert job.estimator.get_params()["xgb__n_jobs"] == 1
    with pytest.raises(SpecError, match=r"space.xgb__max_dept.*Did you mean 'xgb__max_depth'"):
        build_job(parse_spec(text.replace("xgb__max_depth =", "xgb__max_dept =")))
