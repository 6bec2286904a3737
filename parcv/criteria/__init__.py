"""The criteria wing: model selection without refitting per fold.

It owns the information criteria and the VC bound (``information``), Bayesian
linear regression with its evidence (``bayes``), Gaussian-process regression
with closed-form leave-one-out (``gp``) and criteria as tasks of a plan
(``tasks``). This package re-exports the public names of ``information``, the
documented ``parcv.criteria`` API. It imports no engine, backend, store or
command line.
"""

from __future__ import annotations

from parcv.criteria.information import (
    CriteriaResult,
    compute_aic,
    compute_bic,
    compute_criteria,
    compute_mallows_cp,
    compute_vc_bound,
    count_params,
)

__all__ = [
    "CriteriaResult",
    "compute_aic",
    "compute_bic",
    "compute_criteria",
    "compute_mallows_cp",
    "compute_vc_bound",
    "count_params",
]
