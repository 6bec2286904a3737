"""scikit-learn's own tests of cross_validate and its kin, run on parcv's functions.

The tests are read from the installed scikit-learn (``sklearn/model_selection/
tests/test_validation.py``, so they always match its version; 1.9.1 when this list
was made) with ``cross_validate``, ``cross_val_score``, ``cross_val_predict``,
``learning_curve``, ``validation_curve``, ``permutation_test_score`` and
``GridSearchCV`` bound to parcv's (see ``tests/sklearn_suite.py``): their assertions
are unchanged. Every test of the file runs here on the serial backend, a few also on
the local process pool (marked slow), except the ones below, one line each with its
reason: only tests that fail against parcv are listed (a few that test scikit-learn's
private helpers and never call parcv run and pass). ``python scripts/sklearn_parity.py``
runs both files without exclusions.
"""

from __future__ import annotations

import pytest
from sklearn_suite import global_random_seed, load_suite, suite_tests  # noqa: F401

EXCLUDED = {
    # (i) the exact message text, where parcv raises the same class with its own: a
    # sample_weight of the wrong length is refused before any fit, where scikit-learn lets
    # the test's estimator raise its own ValueError ("sample_weight.shape == (1,) ...").
    "test_learning_curve_params": "ValueError before any fit: sample_weight's length",
    "test_validation_curve_params": "ValueError before any fit: sample_weight's length",
    "test_permutation_test_score_params": "ValueError before any fit: sample_weight's length",
    # (iii) needs an array-API library (array_api_strict, torch, cupy) that is not installed.
    "test_cross_val_predict_array_api_compliance": "array-API namespaces not installed",
}

# Also on the local process pool: scores, predictions, curves and the permutation test.
ON_THE_POOL = [
    "test_cross_validate",
    "test_cross_val_predict",
    "test_learning_curve",
    "test_validation_curve",
    "test_permutation_score",
]

_serial = load_suite("serial", "validation")
globals().update(suite_tests(_serial, EXCLUDED))

_local = load_suite("local", "validation")
for _name, _test in suite_tests(_local, EXCLUDED).items():
    if _name in ON_THE_POOL:
        globals()[f"{_name}_local_pool"] = pytest.mark.slow(_test)


def test_the_suite_runs_parcv_functions():
    import parcv

    assert _serial.cross_validate.__wrapped__ is parcv.cross_validate
    assert _serial.learning_curve.__wrapped__ is parcv.learning_curve
    assert issubclass(_serial.GridSearchCV, parcv.GridSearchCV)
