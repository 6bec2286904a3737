"""A fit a part keeps for the next part to continue, as its pickle's bytes.

A successive-halving rung, or a window of a pruned trial's path, grows the
fits of the part before by a warm start where that equals a fit from scratch
(:func:`parcv.plan.shortcuts.continues_exactly`). The worker that grew a fit
pickles it once; the driver hands the bytes on to the next part's plan
without reading them, and only the worker that continues the fit unpickles
it. An estimator object was unpickled by the driver, copied, pickled into
the next plan and unpickled by every worker that read that plan, between
two rounds that wait for it (scripts/bench/README.md, "Kept fits as bytes").
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["KeptFit"]


@dataclass(frozen=True, slots=True)
class KeptFit:
    """A fitted estimator, pickled by the worker that fitted it.

    ``warm_start`` names the parameter that makes a fit continue it (set by
    :meth:`grown_by` on the driver, for the part that continues it).

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> kept = KeptFit.of(SGDClassifier(max_iter=5)).grown_by("warm_start")
    >>> kept.estimator().get_params()["warm_start"]
    True
    """

    pickled: bytes = b""
    warm_start: str | None = None

    @classmethod
    def of(cls, estimator: Any) -> KeptFit:
        """Pickle ``estimator`` (cloudpickle: a class of the driver's ``__main__`` by value)."""
        import cloudpickle

        return cls(cloudpickle.dumps(estimator, protocol=pickle.HIGHEST_PROTOCOL))

    def grown_by(self, warm_start: str) -> KeptFit:
        """The same fit, to be continued by setting ``warm_start`` to True."""
        return replace(self, warm_start=warm_start)

    def estimator(self) -> Any:
        """A new estimator from the bytes, set to continue by a warm start if one is named."""
        estimator = pickle.loads(self.pickled)
        if self.warm_start is not None:
            estimator.set_params(**{self.warm_start: True})
        return estimator

    def __repr__(self) -> str:
        return f"KeptFit({len(self.pickled):,} bytes, warm_start={self.warm_start!r})"
