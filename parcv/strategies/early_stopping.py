"""Early stopping on iteration paths as a strategy: windows of checkpoints, stops on finished ones.

Each round scores every path still running over a window of its checkpoints
(each fold's path fitted once to the window's last count and read at every
checkpoint of it, as a separate fit at that count would give), then stops each
path whose mean over the folds has not improved by more than ``tol`` for
``patience`` checkpoints, as ``xgb.cv(early_stopping_rounds=...)`` decides
(:func:`~parcv.plan.iterations.stop_index`). Windows double: the first reaches
``2 x patience x every`` iterations, each next one twice the last, so no path
is grown to more than twice its stop. A checkpoint after a path's stop is never
stored as a record: the result shows it as NaN, a path that stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parcv.plan.iterations import Iterations, choose_path, stop_index
from parcv.strategies.strategy import (
    Choice,
    FinishedRound,
    Part,
    Proposer,
    Round,
    RoundBound,
    Schedule,
    SearchContext,
)

__all__ = ["EarlyStopping", "doubling_windows", "windows"]


def windows(iterations: Iterations) -> list[tuple[int, ...]]:
    """The checkpoints of each round: up to ``2 x patience x every``, then doubling.

    Examples
    --------
    >>> windows(Iterations("n", up_to=20, every=2, patience=2))
    [(2, 4, 6, 8), (10, 12, 14, 16), (18, 20)]
    """
    checkpoints = iterations.all_checkpoints
    patience = iterations.patience or 1
    return doubling_windows(checkpoints, max(checkpoints[0], 2 * patience * iterations.every))


def doubling_windows(checkpoints: Sequence[int], horizon: int) -> list[tuple[int, ...]]:
    """The checkpoints up to ``horizon``, then each window up to twice the last one's end.

    Examples
    --------
    >>> doubling_windows([1, 2, 3, 4, 5, 6], 1)
    [(1,), (2,), (3, 4), (5, 6)]
    """
    out: list[tuple[int, ...]] = []
    start = 0
    while start < len(checkpoints):
        window = tuple(c for c in checkpoints[start:] if c <= horizon) or (checkpoints[start],)
        out.append(window)
        start += len(window)
        horizon = 2 * window[-1]
    return out


def _means(history: Sequence[FinishedRound], param: str, n_points: int) -> list[dict[int, float]]:
    """Each point's mean test score per checkpoint, from every finished window."""
    means: list[dict[int, float]] = [{} for _ in range(n_points)]
    for finished in history:
        for part in finished.parts:
            for row, params in enumerate(part.params):
                means[part.ids[row]][int(params[param])] = float(part.means[row])
    return means


@dataclass
class _EarlyStoppingProposer:
    iterations: Iterations
    points: tuple[dict[str, Any], ...]

    def _stops(self, history: Sequence[FinishedRound]) -> list[int | None]:
        """Per point: the index among the checkpoints scored of its stop (None: running)."""
        it = self.iterations
        stops: list[int | None] = []
        for by_count in _means(history, it.param, len(self.points)):
            values = [by_count[c] for c in sorted(by_count)]
            stops.append(stop_index(values, it.patience or 1, it.tol) if values else None)
        return stops

    def propose(
        self, history: Sequence[FinishedRound], seed: np.random.SeedSequence
    ) -> Round | None:
        plan = windows(self.iterations)
        r = len(history)
        if r >= len(plan):
            return None
        stops = self._stops(history)
        alive = tuple(p for p, stop in enumerate(stops) if stop is None)
        if not alive:
            return None
        part = Part(tuple(self.points[p] for p in alive), alive, window=plan[r],
                    resource=plan[r][-1], label=f"window {r}")  # fmt: skip
        stopped = {str(p): self.iterations.all_checkpoints[s]
                   for p, s in enumerate(stops) if s is not None}  # fmt: skip
        return Round((part,), {"window": list(plan[r]), "running": list(alive),
                               "stopped_at": stopped})  # fmt: skip

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        """The best mean over every (point, checkpoint) up to each point's stop; first on ties.

        Checkpoints scored after a stop (inside the window that found it) do not count.
        """
        it = self.iterations
        stops = self._stops(history)
        counts = it.all_checkpoints
        best: tuple[float, Choice] | None = None
        order: list[tuple[int, int, Choice, float]] = []
        for r, finished in enumerate(history):
            for p, part in enumerate(finished.parts):
                for row, params in enumerate(part.params):
                    point, count = part.ids[row], int(params[it.param])
                    stop = stops[point]
                    if stop is not None and count > counts[stop]:
                        continue
                    order.append((point, count, Choice(r, p, row), float(part.means[row])))
        # The table lists (point, checkpoint) rows point by point: ties go to the first there.
        for _, _, choice, mean in sorted(order, key=lambda x: (x[0], x[1])):
            if np.isnan(mean):
                continue
            if best is None or mean > best[0]:
                best = (mean, choice)
        if best is None:
            first = sorted(order, key=lambda x: (x[0], x[1]))[0]
            return first[2]
        return best[1]


@dataclass(frozen=True)
class EarlyStopping:
    """Early stopping of iteration paths (``Iterations(patience=...)``) as a strategy."""

    iterations: Iterations
    name: str = "early_stopping"
    # A path's folds run in step with the stop; a race would drop folds under it.
    races: bool = False

    def config(self) -> dict[str, Any]:
        """Return the path's options and how its parts join (one table of every checkpoint)."""
        it = self.iterations
        return {"name": self.name, "joins": "table", "param": it.param, "up_to": it.up_to,
                "every": it.every, "patience": it.patience, "tol": it.tol,
                "method": it.method}  # fmt: skip

    def start(self, context: SearchContext) -> Proposer:
        """Return the proposer of one search's windows."""
        return _EarlyStoppingProposer(self.iterations, tuple(dict(c) for c in context.candidates))

    def schedule(self, context: SearchContext) -> Schedule:
        """Return the windows, each at most every point on every fold (a bound).

        A window's units are its scores: each path's fold is scored at every
        checkpoint of the window, a record each. Where a shortcut grows the
        path, those scores come from one fit to the window's last checkpoint;
        elsewhere (``"separate"``) from a fit per checkpoint.

        Examples
        --------
        >>> from sklearn.ensemble import GradientBoostingRegressor
        >>> points = ({"learning_rate": 0.1}, {"learning_rate": 0.3})
        >>> context = SearchContext(points, None, GradientBoostingRegressor(random_state=0),
        ...                         n_samples=40, n_splits=3, n_classes=None, metric="score")
        >>> path = Iterations("n_estimators", up_to=4, patience=1)
        >>> schedule = EarlyStopping(path).schedule(context)
        >>> [(r.n_units, r.n_fits) for r in schedule.rounds], schedule.n_units, schedule.n_fits
        ([(12, 6), (12, 6)], 24, 12)
        """
        it, k = self.iterations, context.n_splits
        n = len(context.candidates)
        # Decided as for data of any size: the part plans decide on all rows, the context
        # knows its search's, and a shortcut refused on more rows must not be counted.
        grown = sum(choose_path(context.estimator, it, c).method != "separate"
                    for c in context.candidates)  # fmt: skip
        rounds = tuple(
            RoundBound(n, n * len(w) * k,
                       f"window {r}: checkpoints {w[0]}..{w[-1]}, at most {n} paths x "
                       f"{k} folds, each scored at {len(w)} checkpoint{'s' * (len(w) > 1)}",
                       n_fits=(grown + (n - grown) * len(w)) * k)
            for r, w in enumerate(windows(it))
        )  # fmt: skip
        return Schedule(rounds, exact=False)
