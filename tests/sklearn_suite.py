"""Load scikit-learn's own model-selection tests with parcv's classes and functions in them.

The tests are scikit-learn's, read from the installed copy (so they match its
version): ``sklearn/model_selection/tests/test_search.py`` and ``test_validation.py``
are loaded anew while ``sklearn.model_selection``'s ``GridSearchCV``,
``RandomizedSearchCV`` (and, for ``test_successive_halving.py``, ``HalvingGridSearchCV``
and ``HalvingRandomSearchCV``), ``cross_validate``, ``cross_val_score``,
``cross_val_predict``, ``learning_curve``, ``validation_curve`` and
``permutation_test_score`` name parcv's, so their functions and parametrize lists
call parcv. ``CALLS`` counts the calls of those names (``scripts/sklearn_parity.py``
reads it to tell the tests that call parcv from those that do not); they live in
``tests/sklearn_faces.py``, a module apart, which says why.
``sklearn/model_selection/tests/test_successive_halving.py`` is loaded the same way.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from types import ModuleType

import cloudpickle
import pytest
import sklearn.model_selection
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn_faces import CALLS, FACES, FUNCTIONS, function  # noqa: F401 (CALLS: for the parity script)

HALVING = "successive_halving"


def load_suite(backend: str, suite: str = "search") -> ModuleType:
    """scikit-learn's ``test_<suite>`` module, its searches and functions replaced by parcv's.

    ``suite="successive_halving"`` also binds the Halving searches to parcv's; the other
    suites keep scikit-learn's (their Halving cases are dropped by :func:`parcv_only`).
    """
    grid, randomized, halving_grid, halving_random = FACES[backend]
    names = {"GridSearchCV": grid, "RandomizedSearchCV": randomized}
    if suite == HALVING:
        names.update({"HalvingGridSearchCV": halving_grid,
                      "HalvingRandomSearchCV": halving_random})  # fmt: skip
    names.update({name: function(name, backend) for name in FUNCTIONS})
    found = importlib.util.find_spec(f"sklearn.model_selection.tests.test_{suite}")
    assert found is not None and found.origin is not None
    spec = importlib.util.spec_from_file_location(f"sklearn_{suite}_suite_{backend}", found.origin)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = {name: getattr(sklearn.model_selection, name) for name in names}
    for name, value in names.items():
        setattr(sklearn.model_selection, name, value)
    sys.modules[module.__name__] = module  # its classes must pickle by name
    try:
        with warnings.catch_warnings():
            # scikit-learn's own marks (thread_unsafe) are registered by its conftest, not ours.
            warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
            spec.loader.exec_module(module)
    finally:
        for name, value in saved.items():
            setattr(sklearn.model_selection, name, value)
    # Worker processes cannot import this module by name: ship its estimators by value.
    cloudpickle.register_pickle_by_value(module)
    return module


# scikit-learn's warning policy for its tests (its pyproject.toml), below each test's own
# filterwarnings marks (later marks of a function take precedence) and above parcv's
# "error" for every warning, which scikit-learn's tests were not written for.
_SKLEARN_WARNINGS = ("default", "error::DeprecationWarning", "error::FutureWarning")


def parcv_only(function, *, drop_halving: bool = True):
    """Drop the parametrize cases that would run scikit-learn's own (Halving) searches.

    Also puts scikit-learn's warning policy under the test's own warning marks. The
    Halving suite keeps its cases (``drop_halving=False``): they run parcv's Halving.
    """
    marks = [pytest.mark.filterwarnings(rule).mark for rule in _SKLEARN_WARNINGS]
    for mark in getattr(function, "pytestmark", []):
        if mark.name == "parametrize" and drop_halving:
            names, values = mark.args[0], mark.args[1]
            values = [v for v in values if _is_parcv_case(v)]
            mark = pytest.mark.parametrize(names, values, **mark.kwargs).mark
        marks.append(mark)
    function.pytestmark = marks
    return function


def _is_parcv_case(value) -> bool:
    parts = value.values if hasattr(value, "values") else value
    parts = parts if isinstance(parts, (tuple, list)) else (parts,)
    # A class, or an instance (the callback tests parametrize search objects).
    return not any("Halving" in getattr(p, "__name__", type(p).__name__) for p in parts)


def suite_tests(module: ModuleType, excluded: dict[str, str]) -> dict[str, object]:
    """Every test function of ``module`` but the ``excluded`` ones, their parcv cases only.

    Raises if an exclusion names no test of the module, so that the list stays true when
    scikit-learn renames or drops a test.
    """
    tests = {n: getattr(module, n) for n in dir(module) if n.startswith("test_")}
    tests = {n: f for n, f in tests.items() if callable(f)}
    stale = sorted(set(excluded) - set(tests))
    if stale:
        raise LookupError(f"excluded tests that {module.__name__} does not have: {stale}")
    drop = not module.__name__.startswith(f"sklearn_{HALVING}_suite")
    return {n: parcv_only(f, drop_halving=drop) for n, f in tests.items() if n not in excluded}


@pytest.fixture
def global_random_seed() -> int:
    """scikit-learn's fixture of that name, at its default seed (42)."""
    return 42
