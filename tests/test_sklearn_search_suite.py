"""scikit-learn's own behavioural tests of GridSearchCV and RandomizedSearchCV, run on parcv's.

The tests are read from the installed scikit-learn (``sklearn/model_selection/
tests/test_search.py``, so they always match its version; 1.9.1 when this list
was made) with ``GridSearchCV`` and ``RandomizedSearchCV`` bound to
:class:`parcv.GridSearchCV` and :class:`parcv.RandomizedSearchCV` (see
``tests/sklearn_suite.py``): their assertions are unchanged. They run on the
serial backend; a few also on the local process pool (marked slow). Cases that
parametrize scikit-learn's Halving searches are dropped (parcv has none). Every other
test of the file runs here except the ones below, one line each with its reason (only
tests that fail against parcv are listed);
``python scripts/sklearn_parity.py`` runs both files without exclusions.
"""

from __future__ import annotations

import pytest
from sklearn_suite import global_random_seed, load_suite, suite_tests  # noqa: F401

pytestmark = [
    # scikit-learn's ParameterSampler warns when n_iter exceeds the grid, for its class as ours.
    pytest.mark.filterwarnings("ignore:The total space of parameters:UserWarning"),
]

EXCLUDED = {
    # (i) scikit-learn's exact message text, where parcv raises the same class with its own:
    "test_empty_cv_iterator_error": "ValueError naming the splitter that produced no split",
    # (ii) scikit-learn's private API:
    "test_custom_run_search": "BaseSearchCV's subclassing hook _run_search",
    "test_search_html_repr": "the _sk_visual_block_ hook of scikit-learn's private HTML repr",
    # (iii) needs an array-API library (array_api_strict, torch, cupy) that is not installed:
    "test_array_api_search_cv_classifier": "array-API namespaces not installed",
    # Not done yet (issue 30's R13 in part): the search's own callbacks run on the driver;
    # callbacks propagated into each fit of the sub-estimator (in worker processes) do not.
    "test_search_callbacks_propagation": "callbacks inside the sub-estimators' fits",
}

# Also on the local process pool: fit, refit (graph and callable), cv_results_, pickling.
ON_THE_POOL = [
    "test_grid_search",
    "test_refit_callable",
    "test_grid_search_cv_results_multimetric",
    "test_random_search_cv_results",
    "test_pickle",
]

_serial = load_suite("serial")
globals().update(suite_tests(_serial, EXCLUDED))

_local = load_suite("local")
for _name, _test in suite_tests(_local, EXCLUDED).items():
    if _name in ON_THE_POOL:
        globals()[f"{_name}_local_pool"] = pytest.mark.slow(_test)


def test_the_suite_runs_parcv_classes():
    import parcv

    assert issubclass(_serial.GridSearchCV, parcv.GridSearchCV)
    assert issubclass(_serial.RandomizedSearchCV, parcv.RandomizedSearchCV)
    assert _serial.GridSearchCV(None, {}).backend == "serial"
    assert _local.GridSearchCV(None, {}).backend == "local"
