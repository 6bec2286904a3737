"""parcv: distributed parallel cross-validation and model selection.

One task graph of (outer fold, inner fold, candidate) fits for k-fold CV,
select and refit (search on all data) and nested CV, run
serially or on a local process pool, with scikit-learn's numbers.
"""

# No ``from __future__ import annotations`` here, unlike every other module: it would
# bind the name ``annotations`` in the package namespace (and so in ``dir(parcv)``), and
# this module annotates nothing. Its other names are private for the same reason.

import importlib as _importlib
import typing as _typing

from parcv.plan.version import __version__

# ``import parcv`` (and so ``parcv --version``) loads none of the public names: they pull
# in scikit-learn, SciPy, pandas and the whole engine, seconds before any code runs. A
# name's module is imported on its first use (PEP 562), as ``import sklearn`` does for its
# subpackages; type checkers read the imports below.
if _typing.TYPE_CHECKING:
    from parcv.api import (
        bias_variance,
        cross_val_predict,
        cross_val_score,
        cross_validate,
        learning_curve,
        load,
        nested_cv,
        permutation_test_score,
        search,
        validation_curve,
    )
    from parcv.engine.backends import DaskBackend, LocalBackend, SerialBackend
    from parcv.engine.options import RunOptions
    from parcv.engine.session import trust_saved_model
    from parcv.errors import (
        BackendError,
        FitFailedError,
        FitFailedWarning,
        ModelNotAvailableError,
        ParcvError,
        PlanMismatchError,
        RunInterrupted,
        UnfinishedRunError,
    )
    from parcv.estimators import (
        GridSearchCV,
        HalvingGridSearchCV,
        HalvingRandomSearchCV,
        NestedCV,
        RandomizedSearchCV,
    )
    from parcv.plan.halving import Halving, Hyperband
    from parcv.plan.iterations import Iterations
    from parcv.plan.records import Record, Unit
    from parcv.plan.selection import Selection
    from parcv.plan.space import RandomSpace
    from parcv.plan.splits import ThreeWayHoldOut
    from parcv.plan.tokens import TokenError, register_token
    from parcv.report.run_dir import write_report
    from parcv.results.curves import (
        BiasVarianceResult,
        LearningCurveResult,
        PermutationTestResult,
        ValidationCurveResult,
    )
    from parcv.results.halving import (
        HalvingResult,
        HyperbandResult,
        NestedHalvingResult,
        NestedRoundsResult,
    )
    from parcv.results.objects import CVResult, NestedResult, SearchResult
    from parcv.results.partial import PartialResult
    from parcv.results.summary import ScoreSummary, summarize_scores
    from parcv.stats.racing import Racing
    from parcv.strategies.pareto import pareto_front
    from parcv.strategies.sampler import Sampler

# Each public name and the module that defines it.
_EXPORTS = {
    "bias_variance": "parcv.api",
    "cross_val_predict": "parcv.api",
    "cross_val_score": "parcv.api",
    "cross_validate": "parcv.api",
    "learning_curve": "parcv.api",
    "load": "parcv.api",
    "nested_cv": "parcv.api",
    "permutation_test_score": "parcv.api",
    "search": "parcv.api",
    "validation_curve": "parcv.api",
    "DaskBackend": "parcv.engine.backends",
    "LocalBackend": "parcv.engine.backends",
    "SerialBackend": "parcv.engine.backends",
    "RunOptions": "parcv.engine.options",
    "BackendError": "parcv.errors",
    "FitFailedError": "parcv.errors",
    "FitFailedWarning": "parcv.errors",
    "ModelNotAvailableError": "parcv.errors",
    "ParcvError": "parcv.errors",
    "PlanMismatchError": "parcv.errors",
    "RunInterrupted": "parcv.errors",
    "UnfinishedRunError": "parcv.errors",
    "GridSearchCV": "parcv.estimators",
    "HalvingGridSearchCV": "parcv.estimators",
    "HalvingRandomSearchCV": "parcv.estimators",
    "NestedCV": "parcv.estimators",
    "RandomizedSearchCV": "parcv.estimators",
    "Halving": "parcv.plan.halving",
    "Hyperband": "parcv.plan.halving",
    "Iterations": "parcv.plan.iterations",
    "Record": "parcv.plan.records",
    "Unit": "parcv.plan.records",
    "Selection": "parcv.plan.selection",
    "RandomSpace": "parcv.plan.space",
    "ThreeWayHoldOut": "parcv.plan.splits",
    "TokenError": "parcv.plan.tokens",
    "register_token": "parcv.plan.tokens",
    "write_report": "parcv.report.run_dir",
    "BiasVarianceResult": "parcv.results.curves",
    "LearningCurveResult": "parcv.results.curves",
    "PermutationTestResult": "parcv.results.curves",
    "ValidationCurveResult": "parcv.results.curves",
    "HalvingResult": "parcv.results.halving",
    "HyperbandResult": "parcv.results.halving",
    "NestedHalvingResult": "parcv.results.halving",
    "NestedRoundsResult": "parcv.results.halving",
    "CVResult": "parcv.results.objects",
    "NestedResult": "parcv.results.objects",
    "SearchResult": "parcv.results.objects",
    "PartialResult": "parcv.results.partial",
    "ScoreSummary": "parcv.results.summary",
    "summarize_scores": "parcv.results.summary",
    "Racing": "parcv.stats.racing",
    "pareto_front": "parcv.strategies.pareto",
    "Sampler": "parcv.strategies.sampler",
    "trust_saved_model": "parcv.engine.session",
}

__all__ = [
    "BackendError",
    "BiasVarianceResult",
    "CVResult",
    "DaskBackend",
    "FitFailedError",
    "FitFailedWarning",
    "GridSearchCV",
    "Iterations",
    "Halving",
    "HalvingGridSearchCV",
    "HalvingRandomSearchCV",
    "HalvingResult",
    "Hyperband",
    "HyperbandResult",
    "LearningCurveResult",
    "LocalBackend",
    "ModelNotAvailableError",
    "NestedCV",
    "NestedHalvingResult",
    "NestedResult",
    "NestedRoundsResult",
    "ParcvError",
    "PartialResult",
    "PermutationTestResult",
    "PlanMismatchError",
    "Racing",
    "RandomSpace",
    "RandomizedSearchCV",
    "Record",
    "RunInterrupted",
    "RunOptions",
    "ScoreSummary",
    "SearchResult",
    "Selection",
    "Sampler",
    "SerialBackend",
    "ThreeWayHoldOut",
    "TokenError",
    "UnfinishedRunError",
    "Unit",
    "ValidationCurveResult",
    "__version__",
    "bias_variance",
    "cross_val_predict",
    "cross_val_score",
    "cross_validate",
    "learning_curve",
    "load",
    "nested_cv",
    "pareto_front",
    "permutation_test_score",
    "register_token",
    "search",
    "summarize_scores",
    "trust_saved_model",
    "validation_curve",
    "write_report",
]


# The public modules the API reference documents: ``parcv.gp.loo_gp`` after ``import
# parcv`` works as ``from parcv.gp import loo_gp`` does, without importing them up front.
_MODULES = frozenset({"bayes", "criteria", "fastloo", "gp", "report", "stats", "strategies"})


def __getattr__(name: str) -> object:
    """Import a public name's module (or a public module) on the first use of the name."""
    if name in _MODULES:
        return _importlib.import_module(f"{__name__}.{name}")  # importing sets the attribute
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later uses find it without this function
    return value


def __dir__() -> list[str]:
    """The public names, imported or not, with the wings and helpers already imported."""
    return sorted({*globals(), *__all__})
