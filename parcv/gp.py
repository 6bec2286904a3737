"""Gaussian process regression with closed-form leave-one-out.

The documented ``parcv.gp`` path; the code lives in :mod:`parcv.criteria.gp`.
"""

from __future__ import annotations

from parcv.criteria.gp import (
    GaussianProcessLOO,
    LOOPrediction,
    ObjectiveValue,
    compute_gp_objective,
)

__all__ = [
    "GaussianProcessLOO",
    "LOOPrediction",
    "ObjectiveValue",
    "compute_gp_objective",
]
