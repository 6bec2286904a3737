"""Bayesian linear regression with evidence-based model selection.

The documented ``parcv.bayes`` path; the code lives in :mod:`parcv.criteria.bayes`.
"""

from __future__ import annotations

from parcv.criteria.bayes import (
    BayesianLinearRegression,
    log_evidence,
    log_evidence_gradient,
    model_posterior,
)

__all__ = [
    "BayesianLinearRegression",
    "log_evidence",
    "log_evidence_gradient",
    "model_posterior",
]
