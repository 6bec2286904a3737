"""A nested-CV sweep run in a subprocess by the durability tests.

Usage: python tests/sweep_script.py STORE BACKEND [--resume] [--sleep S]
Prints one JSON line with the outer scores; exit 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

import parcv


class SlowRidge(BaseEstimator, RegressorMixin):
    """Ridge whose fit sleeps, so a sweep lasts long enough to be killed part-way."""

    def __init__(self, alpha=1.0, sleep=0.05):
        self.alpha = alpha
        self.sleep = sleep

    def fit(self, X, y):
        time.sleep(self.sleep)
        self.model_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


def sweep_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = X @ rng.normal(size=5) + rng.normal(size=120)
    return X, y


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("backend")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--sleep", type=float, default=0.05)
    args = parser.parse_args(argv)
    X, y = sweep_data()
    space = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0]}
    try:
        result = parcv.nested_cv(
            SlowRidge(sleep=args.sleep),
            space,
            X,
            y,
            outer=4,
            inner=3,
            backend=args.backend,
            n_jobs=2,
            store=args.store,
            resume=args.resume,
            progress=False,
        )
    except parcv.RunInterrupted as err:
        print(str(err), file=sys.stderr)
        return 130
    print(json.dumps({"outer": result.outer_scores["score"].tolist(), "chosen": result.chosen}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
