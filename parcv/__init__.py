"""parcv: distributed parallel cross-validation and model selection.

One task graph of (outer fold, inner fold, candidate) fits for k-fold CV,
select and refit (search on all data) and nested CV, run
serially or on a local process pool, with scikit-learn's numbers.
"""

# No ``from __future__ import annotations`` here, unlike every other module: it would
# bind the name ``annotations`` in the package namespace (and so in ``dir(parcv)``), and
# this module annotates nothing.

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
from parcv.plan.version import __version__
from parcv.results.curves import (
    BiasVarianceResult,
    LearningCurveResult,
    PermutationTestResult,
    ValidationCurveResult,
)
from parcv.results.halving import HalvingResult, HyperbandResult, NestedHalvingResult
from parcv.results.objects import CVResult, NestedResult, SearchResult
from parcv.results.partial import PartialResult
from parcv.results.summary import ScoreSummary, summarize_scores
from parcv.stats.racing import Racing
from parcv.strategies.sampler import Sampler

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
    "permutation_test_score",
    "register_token",
    "search",
    "summarize_scores",
    "validation_curve",
]
