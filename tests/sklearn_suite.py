"""Load scikit-learn's own search tests with parcv's GridSearchCV and RandomizedSearchCV in them.

The tests are scikit-learn's, read from the installed copy (so they match its
version): the module ``sklearn/model_selection/tests/test_search.py`` is loaded
anew while ``sklearn.model_selection.GridSearchCV`` and ``RandomizedSearchCV``
name parcv's classes, so its functions and its parametrize lists call parcv.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import warnings
from types import ModuleType

import cloudpickle
import pytest
import sklearn.model_selection

import parcv


def _face(base: type, backend: str) -> type:
    """``base`` with ``backend`` as its default, defined at module level so that it pickles."""

    def __init__(self, *args, **options):
        options.setdefault("backend", backend)
        if backend == "local":
            options.setdefault("n_jobs", 2)  # the test machines have two cores
        base.__init__(self, *args, **options)

    name = f"{backend.title()}{base.__name__}"
    face = type(name, (base,), {"__init__": __init__, "__module__": __name__})
    face.__qualname__ = name
    # get_params and clone read the constructor's names: those of parcv's class.
    face.__init__.__signature__ = inspect.signature(base.__init__)  # type: ignore[attr-defined]
    globals()[name] = face
    return face


def _faces(backend: str) -> tuple[type, type]:
    return _face(parcv.GridSearchCV, backend), _face(parcv.RandomizedSearchCV, backend)


def load_suite(backend: str) -> ModuleType:
    """scikit-learn's test_search module, its search classes replaced by parcv's."""
    grid, randomized = _faces(backend)
    found = importlib.util.find_spec("sklearn.model_selection.tests.test_search")
    assert found is not None and found.origin is not None
    spec = importlib.util.spec_from_file_location(f"sklearn_search_suite_{backend}", found.origin)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sklearn.model_selection.GridSearchCV, sklearn.model_selection.RandomizedSearchCV
    sklearn.model_selection.GridSearchCV = grid
    sklearn.model_selection.RandomizedSearchCV = randomized
    sys.modules[module.__name__] = module  # its classes must pickle by name
    try:
        with warnings.catch_warnings():
            # scikit-learn's own marks (thread_unsafe) are registered by its conftest, not ours.
            warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
            spec.loader.exec_module(module)
    finally:
        sklearn.model_selection.GridSearchCV, sklearn.model_selection.RandomizedSearchCV = saved
    # Worker processes cannot import this module by name: ship its estimators by value.
    cloudpickle.register_pickle_by_value(module)
    return module


def parcv_only(function):
    """Drop the parametrize cases that would run scikit-learn's own (Halving) searches."""
    marks = []
    for mark in getattr(function, "pytestmark", []):
        if mark.name == "parametrize":
            names, values = mark.args[0], mark.args[1]
            values = [v for v in values if _is_parcv_case(v)]
            mark = pytest.mark.parametrize(names, values, **mark.kwargs).mark
        marks.append(mark)
    function.pytestmark = marks
    return function


def _is_parcv_case(value) -> bool:
    parts = value.values if hasattr(value, "values") else value
    parts = parts if isinstance(parts, (tuple, list)) else (parts,)
    return not any("Halving" in getattr(p, "__name__", "") for p in parts)
