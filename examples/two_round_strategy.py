"""A search strategy of one's own, written only against parcv's documented contract.

Two rounds: round 0 screens every candidate on a subsample of a third of the rows
(``Part(n_rows=...)``: the driver draws the subsample from the round's seed, so the
same run seed draws the same rows, a resume reads them back and another seed draws
anew); round 1 scores the better half on all rows; the best of round 1 wins. The
contract is ``parcv.strategies.strategy``: ``start`` returns a proposer with
``propose(history, seed)`` and ``choose(history)``; ``schedule`` says what
``parcv inspect`` shows; ``config`` is what a resume compares.

    python examples/two_round_strategy.py
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parcv.strategies.strategy import (
    Choice,
    FinishedRound,
    Part,
    Round,
    RoundBound,
    Schedule,
    SearchContext,
    best_of,
)


def _kept(n: int, keep: float) -> int:
    return max(1, int(n * keep))


@dataclass(frozen=True)
class _TwoRounds:
    context: SearchContext
    keep: float

    def propose(self, history: Sequence[FinishedRound], seed: np.random.SeedSequence) -> Any:
        candidates, n = self.context.candidates, self.context.n_samples
        if not history:
            ids = tuple(range(len(candidates)))
            part = Part(candidates, ids, n_rows=n // 3, resource=n // 3, label="screen")
            return Round((part,), {"screened": len(ids)})
        if len(history) == 1:
            screened = history[0].parts[0]
            means = np.where(np.isnan(screened.means), -np.inf, screened.means)
            order = np.argsort(-means, kind="stable")[: _kept(len(means), self.keep)]
            ids = tuple(int(screened.ids[i]) for i in sorted(order))
            part = Part(tuple(candidates[i] for i in ids), ids, resource=n, label="confirm")
            return Round((part,), {"kept": list(ids)})
        return None

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        return Choice(1, 0, best_of(history[1].parts[0]))


@dataclass(frozen=True)
class TwoRoundRows:
    """Screen every candidate on a third of the rows, then score the best ``keep`` on all."""

    keep: float = 0.5
    name: str = "two_round_rows"

    def config(self) -> dict[str, Any]:
        """The settings a resume compares."""
        return {"name": self.name, "keep": self.keep}

    def start(self, context: SearchContext) -> _TwoRounds:
        """A proposer for one search (on all rows, or on one outer fold's training rows)."""
        return _TwoRounds(context, self.keep)

    def schedule(self, context: SearchContext) -> Schedule:
        """Both rounds, exactly: what ``parcv inspect`` counts."""
        n, k, folds = len(context.candidates), _kept(len(context.candidates), self.keep), \
            context.n_splits  # fmt: skip
        rows = context.n_samples // 3
        return Schedule(
            (RoundBound(n, n * folds, f"screen: {n} candidates x {folds} folds on {rows} rows",
                        n_rows=rows),
             RoundBound(k, k * folds, f"confirm: {k} candidates x {folds} folds on all rows")),
            exact=True,
        )  # fmt: skip


if __name__ == "__main__":
    from sklearn.datasets import make_regression
    from sklearn.linear_model import Ridge

    import parcv

    X, y = make_regression(n_samples=300, n_features=8, noise=10.0, random_state=0)
    result = parcv.search(Ridge(), {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]}, X, y,
                          strategy=TwoRoundRows(), random_state=0, backend="serial")  # fmt: skip
    print(result.best_params_, round(result.best_score_, 4))
