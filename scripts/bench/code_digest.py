"""Benchmark the digest of the user's own code: a package of 200 modules, per run.

Issue 47: a unit's key holds every module of the user's own that its code can reach,
whole (normalised source over the import closure), read afresh on every run. This
writes a package of ``--modules`` modules (each a class with ``fit``/``transform``, a few
functions, constants and a closure; module k imports modules 2k+1 and 2k+2, so the
estimator in module 0 reaches all of them) and times, in a fresh process per checkout:

* ``first``: the first ``identify`` of the estimator in a process (every module read,
  parsed and digested; what each ``parcv`` command or script pays once);
* ``again``: a new tokenizer in the same process (every file read and hashed again; the
  parse is reused for unchanged bytes: what each further call in a notebook pays);
* how many modules the key names.

Run: python scripts/bench/code_digest.py [--modules 200] [--checkout NAME=PATH ...]
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = '''\
"""Module {k} of a generated package."""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

{imports}

SCALE_{k} = {scale}
OFFSETS_{k} = [{scale}, {scale} + 1.0, {scale} + 2.0]


def helper_{k}(X):
    """Scale the columns."""
    return np.asarray(X, dtype=float) * SCALE_{k}


def factory_{k}(power):
    def apply(Z):
        return np.sign(Z) * np.abs(Z) ** power
    return apply


curve_{k} = factory_{k}(1.0)


class Step{k}(TransformerMixin, BaseEstimator):
    """A transformer whose work goes through the next modules."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y=None):
        self.mean_ = np.mean(helper_{k}(X), axis=0)
        return self

    def transform(self, X):
        Z = helper_{k}(X) - self.mean_
        return {call}
'''


def write_package(root: Path, n_modules: int) -> None:
    package = root / "bigpkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""A generated package."""\n')
    for k in range(n_modules):
        nexts = [j for j in (2 * k + 1, 2 * k + 2) if j < n_modules]  # a tree: shallow imports
        imports = "\n".join(f"from bigpkg import m{j}" for j in nexts)
        call = " + ".join([f"curve_{k}(Z) * self.alpha",
                           *(f"m{j}.helper_{j}(Z)" for j in nexts)])  # fmt: skip
        (package / f"m{k}.py").write_text(
            MODULE.format(k=k, imports=imports, scale=1.0 + k / 100, call=call)
        )


def _phase(root: str) -> dict[str, float]:
    sys.path.insert(0, root)
    import bigpkg.m0  # the user's import: not what a run pays

    from parcv.plan.tokens import Tokenizer

    estimator = bigpkg.m0.Step0()
    start = time.perf_counter()
    found = Tokenizer().identify(estimator)
    first = time.perf_counter() - start
    start = time.perf_counter()
    Tokenizer().identify(estimator)
    again = time.perf_counter() - start
    entries = found.environment.entries
    n_modules = sum(1 for e in entries if e.kind == "module")
    return {"first_s": first, "again_s": again, "modules": float(n_modules),
            "entries": float(len(entries))}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=200)
    parser.add_argument(
        "--checkout", action="append", default=[], metavar="NAME=PATH",
        help="a parcv checkout to time (default: this one); give several to compare",
    )  # fmt: skip
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(_phase(args.phase)))
        return 0
    checkouts = [c.split("=", 1) for c in args.checkout] or [
        ["now", str(Path(__file__).resolve().parents[2])]
    ]
    with tempfile.TemporaryDirectory() as root:
        write_package(Path(root), args.modules)
        rows = {}
        for name, path in checkouts:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, os.environ["PYTHONPATH"]]),
                   "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
            cmd = [sys.executable, __file__, "--phase", root]
            done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
            rows[name] = json.loads(done.stdout)
    print(f"a package of {args.modules} modules, the estimator in module 0 reaching all of them")
    print(f"{'checkout':12}{'first (s)':>11}{'again (s)':>11}{'modules':>9}{'entries':>9}")
    for name, row in rows.items():
        print(f"{name:12}{row['first_s']:>11.3f}{row['again_s']:>11.3f}"
              f"{int(row['modules']):>9}{int(row['entries']):>9}")  # fmt: skip
    worst = max(row["first_s"] for row in rows.values())
    print(f"target: < 1 s per run {'met' if worst < 1 else 'MISSED'} (first, the worst)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
