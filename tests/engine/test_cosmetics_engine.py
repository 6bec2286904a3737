"""Issue 49, item 7: the engine's words (warnings shown once, resume counts) say what happened."""

from __future__ import annotations

import warnings

import pytest
from scipy.stats import loguniform
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier

import parcv


def _data():
    return make_classification(n_samples=60, n_features=4, random_state=0)


def make_regression_data():
    return make_regression(n_samples=40, n_features=3, noise=1.0, random_state=0)


def test_a_warning_inside_the_fits_of_hyperband_is_shown_once_per_call():
    X, y = _data()
    space = parcv.RandomSpace({"alpha": loguniform(1e-5, 1e-1)}, n_iter=4, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parcv.search(SGDClassifier(random_state=0), space, X, y, cv=2, backend="serial",
                     halving=parcv.Hyperband("max_iter", max_resources=9))  # fmt: skip
    shown = [w for w in caught if "parcv: raised" in str(w.message)]
    assert [w.category for w in shown] == [ConvergenceWarning]
    # Every bracket, round and the refit of the call counted together: 18 + 10 + 6 + 6 + 4
    # + 2 + 1, what its seven plans each said apart before.
    assert "(parcv: raised 47 times inside the fits of this run; shown once.)" in str(
        shown[0].message
    )


def _paragraph(doc: str, name: str) -> str:
    """The paragraph of parameter ``name`` in a numpydoc docstring."""
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{name} :"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    deeper = [len(line) - len(line.lstrip()) > indent or not line.strip() for line in lines]
    end = next((i for i in range(start + 1, len(lines)) if not deeper[i]), len(lines))
    return " ".join(line.strip() for line in lines[start:end])


def test_the_backend_docstring_says_what_dask_does_as_the_clusters_page_does():
    # backend="dask" runs on the default Client when one exists (the clusters page and the
    # code: DaskBackend._open_client), else starts a LocalCluster whose worker processes
    # import the calling script: the script needs the __main__ guard.
    from pathlib import Path

    text = _paragraph(parcv.nested_cv.__doc__, "backend")
    assert "default ``distributed.Client``" in text
    assert 'if __name__ == "__main__":' in text
    page = Path(__file__).resolve().parents[2] / "docs/user_guide/clusters.rst"
    loopback = page.read_text().split("A loopback cluster for the call.")[1].split(".. _")[0]
    assert 'if __name__ == "__main__":' in loopback


def test_a_failure_error_from_python_keeps_the_python_words():
    import pytest
    from sklearn.linear_model import Ridge

    X, y = make_regression_data()
    with pytest.raises(parcv.FitFailedError) as info:
        parcv.search(Ridge(solver="lbfgs"), {"alpha": [1.0, 2.0, 3.0]}, X, y, cv=2,
                     backend="serial")  # fmt: skip
    text = str(info.value)
    assert "You can try to debug the error by setting error_score='raise'." in text
    assert "(resume=True keeps what finished)" in text
    assert "3 of 6 fits failed with the following error" in text


def _resume_log(caplog, tmp_path, estimator, grid, **kwargs):
    """The parcv log lines of a resume that changes nothing."""
    import logging

    X, y = make_regression_data()
    store = tmp_path / "run.sqlite"
    parcv.search(estimator, grid, X, y, cv=2, backend="serial", store=store, **kwargs)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="parcv"):
        parcv.search(estimator, grid, X, y, cv=2, backend="serial", store=store, resume=True,
                     **kwargs)  # fmt: skip
    return [r.getMessage() for r in caplog.records if r.name.startswith("parcv")]


def test_a_resume_that_changes_nothing_counts_the_final_refit_as_what_it_is(caplog, tmp_path):
    from sklearn.linear_model import Ridge

    lines = _resume_log(caplog, tmp_path, Ridge(), {"alpha": [0.1, 1.0]})
    reusing = [line for line in lines if line.startswith("reusing")]
    # 4 fits stored; the final model is refitted, its fitted model not being kept.
    assert reusing == [
        "reusing 4 of 5 units; 0 to compute, and the final model to refit (a store keeps "
        "a fitted model only when models are saved)"
    ], lines


def test_a_resume_that_saves_models_has_nothing_to_compute(caplog, tmp_path):
    from sklearn.linear_model import Ridge

    lines = _resume_log(caplog, tmp_path, Ridge(), {"alpha": [0.1, 1.0]}, save_models=True)
    assert any(line.startswith("reusing 4 of 5 units; 0 to compute, and 1 refit") for line in lines)
    assert not any("final model to refit" in line for line in lines)


def test_the_random_state_line_names_only_estimators_whose_fit_draws(caplog, tmp_path):
    from sklearn.linear_model import Ridge

    # Ridge's random_state shuffles the data for 'sag' and 'saga' only (scikit-learn's
    # documentation); 'auto' resolves to cholesky, sparse_cg or lbfgs, which draw nothing.
    quiet = _resume_log(caplog, tmp_path / "a", Ridge(solver="auto"), {"alpha": [0.1, 1.0]})
    assert not any("random_state=None" in line for line in quiet), quiet
    drawn = _resume_log(caplog, tmp_path / "b", Ridge(solver="sag"), {"alpha": [0.1, 1.0]})
    assert any("random_state=None (random_state)" in line for line in drawn), drawn
    # A candidate that switches to 'sag' draws too.
    switched = _resume_log(caplog, tmp_path / "c", Ridge(), {"solver": ["auto", "sag"]})
    assert any("random_state=None (random_state)" in line for line in switched), switched


@pytest.mark.parametrize("save_models", [False, True])
def test_a_resumed_search_in_rounds_counts_the_refits_it_reused(caplog, tmp_path, save_models):
    import logging

    from sklearn.linear_model import Ridge

    X, y = make_regression(n_samples=60, n_features=3, noise=1.0, random_state=0)
    store = tmp_path / "run.sqlite"

    def run():
        return parcv.nested_cv(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, y, outer=2, inner=2,
                               halving=parcv.Halving(min_resources=20), backend="serial",
                               store=store, resume=True, save_models=save_models)  # fmt: skip

    run()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="parcv"):
        run()
    after = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reused")]
    # Every unit was stored by the first run: its 2 outer refits are reused too, found once
    # their fits are in; only a final model without its saved model is fitted again.
    # Units: each outer search has one rung (3 candidates x 2 folds on 20 rows; the next
    # would need 60 of its 30), the search on all data two (6 fits, then 1 x 2 on 60 rows):
    # 6 + 6 + 8 fits, 2 outer refits and the final one.
    n_units = 6 + 6 + 8 + 2 + 1
    if save_models:
        assert after == [f"reused {n_units} of {n_units} units; 0 computed"]
    else:
        assert after == [
            f"reused {n_units - 1} of {n_units} units; 1 computed: the final model (a store "
            "keeps a fitted model only when models are saved)"
        ]
