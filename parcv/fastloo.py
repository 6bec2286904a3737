"""Exact fast leave-one-out and k-fold for linear smoothers.

The documented ``parcv.fastloo`` path; the code lives in :mod:`parcv.fastcv.loo`.
"""

from __future__ import annotations

from parcv.fastcv.loo import (
    SupportsHatMatrix,
    compute_hat_matrix,
    fast_cv_predictions,
    supports_fast_cv,
)

__all__ = [
    "SupportsHatMatrix",
    "compute_hat_matrix",
    "fast_cv_predictions",
    "supports_fast_cv",
]
