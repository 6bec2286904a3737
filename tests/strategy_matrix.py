"""Every strategy through every entry point and every consumer of its result (issue 48).

The matrix is generated, not hand-listed:

- **rows** are the strategies: one per strategy class of ``parcv.strategies`` and per
  sampler kind of :data:`parcv.strategies.sampler.SAMPLERS` (a new sampler name is a new
  row), plus grid and random search (one round) and strategies of one's own;
  :func:`uncovered_strategies` names any strategy class without a row, so a new
  strategy cannot go untested;
- **columns** are the entry points (:data:`ENTRIES`) and the consumers
  (:data:`CONSUMERS`): each consumer is one check that reads a finished, stopped or
  resumed run and compares it with its reference: a fresh run, the uninterrupted run,
  the serial run, a computation by hand.

A cell is (strategy, entry point, consumer, backend). It either equals its reference or
is a refusal raised before any fit, whose reason the user documentation gives
(:func:`refusal`); :func:`check_cell` says which, and a cell that is neither fails.

``tests/strategies/test_matrix.py`` runs a slice in CI; ``scripts/strategy_matrix.py``
runs every cell and prints the table.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import re
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as scipy_stats
from scipy.stats import loguniform, uniform
from sklearn.datasets import make_regression
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import ElasticNet, Ridge
from sklearn.model_selection import KFold

import parcv

ROOT = Path(__file__).resolve().parents[1]
X, Y = make_regression(n_samples=90, n_features=4, noise=25.0, random_state=0)
SCORING = "neg_mean_squared_error"  # a per-sample loss: every interval can be asked for
INNER, OUTER = 3, 3
SEEDS = (1, 2)  # the run's seed of the two runs the seed consumer compares


class Refused(Exception):
    """A cell parcv refuses before any fit (a documented refusal): its message."""


class NotApplicable(Exception):
    """A cell that does not exist (a search has no outer folds to compare): why."""


# --- the estimators a case's module holds (edited by the ``notes`` consumer) --------------

MODULE = '''
"""The matrix's user code: the estimators every case searches (edited to test resume)."""
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import ElasticNet, Ridge

EDIT = 0


class MatrixRidge(Ridge):
    pass


class MatrixNet(ElasticNet):
    pass


class MatrixBoost(GradientBoostingRegressor):
    pass
'''


def write_module(folder: Path, edit: int = 0) -> str:
    """Write the cases' estimator module into ``folder`` (``edit`` changes its source)."""
    (folder / "matrixmod.py").write_text(MODULE.replace("EDIT = 0", f"EDIT = {edit}"))
    return "matrixmod"


#: The estimators of the cases: scikit-learn's own classes (the shortcut table holds for
#: them), or their subclasses in the user's module (``user_code``) where a consumer edits it.
CLASSES: dict[str, type] = {
    "Ridge": Ridge,
    "ElasticNet": ElasticNet,
    "GradientBoostingRegressor": GradientBoostingRegressor,
}
USER_CLASSES = {
    "Ridge": "matrixmod.MatrixRidge",
    "ElasticNet": "matrixmod.MatrixNet",
    "GradientBoostingRegressor": "matrixmod.MatrixBoost",
}


def estimator(name: str, *, user_code: bool = False, **params: Any) -> Any:
    """A case's estimator: scikit-learn's class, or its subclass in the user's module.

    Both by plain imports: a module of the ``tests`` package that imported by computed
    names would make every run whose code reaches the package count every loaded module
    of the tests (parcv's identity analysis), seconds per run in a test process.
    """
    if not user_code:
        return CLASSES[name](**params)
    import matrixmod  # the user's module beside their spec (see write_module)

    return getattr(matrixmod, USER_CLASSES[name].rpartition(".")[2])(**params)


def _public_path(cls: type) -> str:
    """The dotted path a user writes for a scikit-learn class: its module's public part
    (``sklearn.linear_model``, not ``sklearn.linear_model._ridge``) and its name."""
    public = [p for p in cls.__module__.split(".") if not p.startswith("_")]
    return ".".join([*public, cls.__name__])


def spec_estimator(case: Any, *, user_code: bool = False) -> str:
    """The ``[estimator]`` table of a case's spec."""
    name, params = case.estimator
    path = USER_CLASSES[name] if user_code else _public_path(CLASSES[name])
    given = ", ".join(f"{k} = {v!r}" for k, v in params.items())
    return f'[estimator]\nclass = "{path}"\n' + (f"params = {{ {given} }}\n" if given else "")


# --- rows: the strategies -----------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One strategy on a small problem, from Python and from a spec.

    ``api(seed)`` gives the keyword arguments of ``parcv.search`` / ``nested_cv``
    besides the estimator (``space`` included); ``seed`` is the run's seed or None.
    ``spec`` gives the ``[estimator]``, ``[space]`` and ``[search]`` tables of a spec
    (None: not expressible in a spec, ``no_spec`` says why), ``metrics`` the lines of its
    ``[scoring]`` table that name the metrics (``api`` then gives ``scoring`` and ``refit``
    to match). ``draws``: the run's seed changes which units run. ``covers`` names the
    strategy classes the case runs.
    """

    name: str
    estimator: tuple[str, dict[str, Any]]
    api: Callable[[int | None], dict[str, Any]]
    spec: str | None
    draws: bool
    covers: tuple[str, ...] = ()
    no_spec: str = ""
    drop_in: str = "GridSearchCV"
    metrics: str = f'metrics = "{SCORING}"\n'

    def build(self, *, user_code: bool = False) -> Any:
        """A fresh estimator of the case."""
        name, params = self.estimator
        return estimator(name, user_code=user_code, **params)


ALPHAS = [0.01, 0.1, 1.0, 10.0, 100.0]
RATES = [0.05, 0.1, 0.3, 1.0]


def _grid(seed: int | None) -> dict[str, Any]:
    return {"space": {"alpha": ALPHAS}}


def _random(seed: int | None) -> dict[str, Any]:
    return {"space": parcv.RandomSpace({"alpha": loguniform(1e-2, 1e2)}, n_iter=4,
                                       random_state=0 if seed is None else seed)}  # fmt: skip


def _halving_rows(seed: int | None) -> dict[str, Any]:
    return {"space": {"alpha": ALPHAS}, "strategy": parcv.Halving(factor=2, random_state=seed)}


def _halving_param(seed: int | None) -> dict[str, Any]:
    halving = parcv.Halving(resource="n_estimators", max_resources=8, factor=2,
                            random_state=seed)  # fmt: skip
    return {"space": {"learning_rate": RATES}, "strategy": halving}


def _hyperband(seed: int | None) -> dict[str, Any]:
    space = parcv.RandomSpace({"learning_rate": uniform(0.05, 0.9)}, n_iter=1,
                              random_state=0 if seed is None else seed)  # fmt: skip
    return {"space": space, "strategy": parcv.Hyperband("n_estimators", 4, factor=2)}


def _early_stopping(seed: int | None) -> dict[str, Any]:
    return {"space": {"learning_rate": RATES},
            "iterations": parcv.Iterations("n_estimators", 8, every=1, patience=2)}  # fmt: skip


def _sampler(kind: str) -> Callable[[int | None], dict[str, Any]]:
    def api(seed: int | None) -> dict[str, Any]:
        space = {"alpha": loguniform(1e-3, 1.0), "l1_ratio": uniform(0.0, 1.0)}
        return {"space": space, "strategy": parcv.Sampler(kind, n_trials=4, batch=2),
                **({} if seed is None else {"random_state": seed})}  # fmt: skip

    return api


#: Two objectives, both scores: a time would make the trials differ from run to run.
OBJECTIVES = {SCORING: "maximize", "neg_mean_absolute_error": "maximize"}


def _objectives_sampler(seed: int | None) -> dict[str, Any]:
    space = {"alpha": loguniform(1e-3, 1.0), "l1_ratio": uniform(0.0, 1.0)}
    strategy = parcv.Sampler("nsga2", n_trials=4, batch=2, objectives=OBJECTIVES)
    return {"space": space, "strategy": strategy, "scoring": list(OBJECTIVES),
            "refit": SCORING, **({} if seed is None else {"random_state": seed})}  # fmt: skip


def _pruned_sampler(seed: int | None) -> dict[str, Any]:
    import optuna

    strategy = parcv.Sampler("tpe", n_trials=4, batch=2,
                             pruner=optuna.pruners.MedianPruner(n_startup_trials=1),
                             resource=parcv.Iterations("n_estimators", 8, every=2))  # fmt: skip
    return {"space": {"learning_rate": uniform(0.05, 0.9)}, "strategy": strategy,
            **({} if seed is None else {"random_state": seed})}  # fmt: skip


BOOST = (
    '[estimator]\nclass = "matrixmod.MatrixBoost"\nparams = { max_depth = 2, random_state = 0 }\n'
)
BOOST = ("GradientBoostingRegressor", {"max_depth": 2, "random_state": 0})
RIDGE = ("Ridge", {})
NET = ("ElasticNet", {"max_iter": 2000})


def builtin_cases() -> list[Case]:
    """The rows of parcv's own strategies: one per class, one per sampler kind."""
    from parcv.strategies.sampler import SAMPLERS

    alphas = ", ".join(repr(a) for a in ALPHAS)
    rates = ", ".join(repr(r) for r in RATES)
    cases = [
        Case(
            "grid",
            RIDGE,
            _grid,
            f"[space]\nalpha = [{alphas}]\n",
            draws=False,
            covers=("OneRound",),
        ),
        Case(
            "random",
            RIDGE,
            _random,
            "[space]\nalpha = { loguniform = [0.01, 100.0] }\n[search]\nn_iter = 4\n",
            draws=True,
            drop_in="RandomizedSearchCV",
        ),
        Case(
            "halving on rows",
            RIDGE,
            _halving_rows,
            f"[space]\nalpha = [{alphas}]\n[search]\nhalving = {{ factor = 2 }}\n",
            draws=True,
            covers=("HalvingStrategy",),
        ),
        Case(
            "halving on a parameter",
            BOOST,
            _halving_param,
            f"[space]\nlearning_rate = [{rates}]\n[search]\nhalving = "
            '{ resource = "n_estimators", max_resources = 8, factor = 2 }\n',
            draws=False,
            covers=("HalvingStrategy",),
        ),
        Case(
            "hyperband",
            BOOST,
            _hyperband,
            "[space]\nlearning_rate = { uniform = [0.05, 0.95] }\n"
            '[search]\nn_iter = 1\nhyperband = { resource = "n_estimators", max_resources = 4, '
            "factor = 2 }\n",
            draws=True,
            covers=("HyperbandStrategy",),
            drop_in="RandomizedSearchCV",
        ),
        Case(
            "early stopping",
            BOOST,
            _early_stopping,
            f"[space]\nlearning_rate = [{rates}]\n[search]\niterations = "
            '{ param = "n_estimators", up_to = 8, patience = 2 }\n',
            draws=False,
            covers=("EarlyStopping",),
        ),
    ]
    for kind in SAMPLERS:
        if kind == "nsga2":  # a multi-objective sampler: its row searches two objectives
            cases.append(_objectives_case())
            continue
        cases.append(
            Case(
                f"sampler {kind}",
                NET,
                _sampler(kind),
                f"[space]\nalpha = {{ loguniform = [0.001, 1.0] }}\n"
                "l1_ratio = { uniform = [0.0, 1.0] }\n"
                f'[search]\nsampler = {{ kind = "{kind}", n_trials = 4, batch = 2 }}\n',
                draws=True,
                covers=("Sampler",),
                drop_in="RandomizedSearchCV",
            )
        )
    cases.append(
        Case(
            "sampler tpe, median pruner",
            BOOST,
            _pruned_sampler,
            "[space]\nlearning_rate = { uniform = [0.05, 0.95] }\n"
            '[search]\nsampler = { kind = "tpe", n_trials = 4, batch = 2, pruner = '
            '{ kind = "median", n_startup_trials = 1 }, resource = '
            '{ param = "n_estimators", up_to = 8, every = 2 } }\n',
            draws=True,
            covers=("Sampler",),
            drop_in="RandomizedSearchCV",
        )
    )
    return cases


def _objectives_case() -> Case:
    """NSGA-II on two objectives (two score metrics): a Pareto front, through every consumer."""
    names = ", ".join(f'"{n}"' for n in OBJECTIVES)
    table = ", ".join(f'{n} = "{d}"' for n, d in OBJECTIVES.items())
    return Case(
        "sampler nsga2, two objectives",
        NET,
        _objectives_sampler,
        "[space]\nalpha = { loguniform = [0.001, 1.0] }\n"
        "l1_ratio = { uniform = [0.0, 1.0] }\n"
        f'[search]\nsampler = {{ kind = "nsga2", n_trials = 4, batch = 2, '
        f"objectives = {{ {table} }} }}\n",
        draws=True,
        covers=("Sampler",),
        drop_in="RandomizedSearchCV",
        metrics=f'metrics = [{names}]\nrefit = "{SCORING}"\n',
    )


class _HalfWindows:
    """A strategy of one's own on iteration paths: round 0 scores every path over the first
    half of its checkpoints, round 1 the better half of the paths over the rest."""

    name = "half_windows"

    def __init__(self, iterations: parcv.Iterations) -> None:
        self.iterations = iterations  # the contract's optional member: it scores paths

    def config(self) -> dict[str, Any]:
        it = self.iterations
        return {"name": self.name, "param": it.param, "up_to": it.up_to, "every": it.every}

    def _windows(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        counts = tuple(self.iterations.all_checkpoints)
        half = max(1, len(counts) // 2)
        return counts[:half], counts[half:]

    def start(self, context: Any) -> Any:
        from parcv.strategies.strategy import Choice, Part, Round, best_of

        first, rest = self._windows()
        points = tuple(dict(c) for c in context.candidates)
        param = self.iterations.param

        class Proposer:
            def propose(self, history: Any, seed: Any) -> Any:
                if not history:
                    ids = tuple(range(len(points)))
                    return Round((Part(points, ids, window=first, resource=first[-1],
                                       label="first half"),), {"paths": len(ids)})  # fmt: skip
                if len(history) == 1 and rest:
                    done = history[0].parts[0]
                    last = [i for i, p in enumerate(done.params) if p[param] == first[-1]]
                    means = np.array([done.means[i] for i in last])
                    keep = np.argsort(-np.nan_to_num(means, nan=-np.inf), kind="stable")
                    ids = tuple(
                        sorted(int(done.ids[last[i]]) for i in keep[: max(1, len(last) // 2)])
                    )
                    return Round((Part(tuple(points[i] for i in ids), ids, window=rest,
                                       resource=rest[-1], label="second half"),),
                                 {"kept": list(ids)})  # fmt: skip
                return None

            def choose(self, history: Any) -> Any:
                best = max(
                    (
                        (float(np.nan_to_num(p.means[best_of(p)], nan=-np.inf)), -r, j)
                        for r, f in enumerate(history)
                        for j, p in enumerate(f.parts)
                    )
                )
                r, j = -best[1], best[2]
                return Choice(r, j, best_of(history[r].parts[j]))

        return Proposer()

    def schedule(self, context: Any) -> Any:
        from parcv.strategies.strategy import RoundBound, Schedule

        # A unit is a stored score: one per path, fold and checkpoint of the window.
        n, folds = len(context.candidates), context.n_splits
        k = max(1, n // 2)
        first, rest = (len(w) for w in self._windows())
        return Schedule((RoundBound(n, n * folds * first, f"first half: {n} paths"),
                         RoundBound(k, k * folds * rest, f"second half: {k} paths")),
                        exact=True)  # fmt: skip


def _own_rows(seed: int | None) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from two_round_strategy import TwoRoundRows
    finally:
        sys.path.pop(0)
    return {"space": {"alpha": ALPHAS}, "strategy": TwoRoundRows(),
            **({} if seed is None else {"random_state": seed})}  # fmt: skip


def _own_window(seed: int | None) -> dict[str, Any]:
    return {"space": {"learning_rate": RATES},
            "strategy": _HalfWindows(parcv.Iterations("n_estimators", 8))}  # fmt: skip


OWN = "a strategy of one's own is a Python object: a spec names parcv's own strategies"


def own_cases() -> list[Case]:
    """Strategies of one's own, written against the documented contract only."""
    return [
        Case("own, on rows", RIDGE, _own_rows, None, draws=True, no_spec=OWN),
        Case("own, on iteration windows", BOOST, _own_window, None, draws=False, no_spec=OWN),
    ]


def strategy_classes(modules: list[types.ModuleType]) -> dict[str, type]:
    """The strategy classes ``modules`` (those of ``parcv.strategies``) define: the classes
    that implement the contract (``start``, ``schedule``, ``config`` and a ``name``)."""
    found: dict[str, type] = {}
    for module in modules:
        for name, value in vars(module).items():
            if (isinstance(value, type) and value.__module__ == module.__name__
                    and not getattr(value, "_is_protocol", False)
                    and all(callable(getattr(value, m, None))
                            for m in ("start", "schedule", "config"))):  # fmt: skip
                found[name] = value
    return found


def uncovered_strategies(cases: list[Case], modules: list[types.ModuleType]) -> list[str]:
    """Strategy classes of parcv (in ``modules``: every module of ``parcv.strategies``,
    imported by the caller) that no case runs (each needs a row)."""
    covered = {c for case in cases for c in case.covers}
    return sorted(set(strategy_classes(modules)) - covered)


# --- columns: the entry points ------------------------------------------------------


@dataclass
class Run:
    """A finished (or stopped) run of one cell, and what it said."""

    result: Any
    store: Path
    log: str = ""
    out: Path | None = None


def _outer() -> KFold:
    return KFold(OUTER, shuffle=True, random_state=0)


def _inner() -> KFold:
    return KFold(INNER, shuffle=True, random_state=1)


def _api_run(case: Case, nested: bool, backend: str, store: Path | None, seed: int | None,
             user_code: bool, **run: Any) -> Any:  # fmt: skip
    built = case.build(user_code=user_code)
    kwargs = case.api(seed)
    space = kwargs.pop("space")
    common = {"scoring": SCORING, "backend": backend, "store": store, **kwargs, **run}
    if backend == "local":
        common["n_jobs"] = 2
    if nested:
        return parcv.nested_cv(built, space, X, Y, outer=_outer(), inner=_inner(),
                               **common)  # fmt: skip
    return parcv.search(built, space, X, Y, cv=_inner(), **common)


def _drop_in_run(case: Case, nested: bool, backend: str, store: Path | None, seed: int | None,
                 user_code: bool, **run: Any) -> Any:  # fmt: skip
    built = case.build(user_code=user_code)
    kwargs = case.api(seed)
    space = kwargs.pop("space")
    given = {"scoring": kwargs.pop("scoring", SCORING), "backend": backend, "store": store,
             **({"refit": kwargs.pop("refit")} if "refit" in kwargs else {}), **run}  # fmt: skip
    if backend == "local":
        given["n_jobs"] = 2
    strategy = kwargs.pop("strategy", None)
    iterations = kwargs.pop("iterations", None)
    random_state = kwargs.pop("random_state", None)
    seedless = nested or not (isinstance(space, parcv.RandomSpace)
                              or case.drop_in == "RandomizedSearchCV")  # fmt: skip
    if random_state is not None and seedless:
        face = "NestedCV" if nested else "GridSearchCV"
        raise NotApplicable(
            f"the drop-in {face} has no random_state, as scikit-learn's: a strategy without a "
            "seed of its own draws from seed 0 there (parcv.search and nested_cv take one)"
        )
    if nested:
        est = parcv.NestedCV(built, space, outer=_outer(), inner=_inner(),
                             strategy=strategy, iterations=iterations, **given)  # fmt: skip
    elif isinstance(space, parcv.RandomSpace) or case.drop_in == "RandomizedSearchCV":
        distributions = space.distributions if isinstance(space, parcv.RandomSpace) else space
        n_iter = space.n_iter if isinstance(space, parcv.RandomSpace) else 10
        # scikit-learn's random_state=None draws anew on every fit: the matrix gives a seed.
        seed_of = space.random_state if isinstance(space, parcv.RandomSpace) else random_state
        seed_of = 0 if seed_of is None else seed_of
        est = parcv.RandomizedSearchCV(built, distributions, n_iter=n_iter,
                                       random_state=seed_of, cv=_inner(), strategy=strategy,
                                       iterations=iterations, **given)  # fmt: skip
    else:
        est = parcv.GridSearchCV(built, space, cv=_inner(), strategy=strategy,
                                 iterations=iterations, **given)  # fmt: skip
    return est.fit(X, Y).result_


def spec_text(case: Case, nested: bool, folder: Path, scoring: str = "", *,
              user_code: bool = False, plots: bool) -> str:  # fmt: skip
    """The spec of a case: the data as a ``python:`` source beside it, the case's tables.

    ``plots=False``: the report without its plots, for a run whose report nobody reads
    (drawing them is a third of a small spec run).
    """
    if case.spec is None:
        raise NotApplicable(case.no_spec)
    # A table, as a user's own data: ``inspect`` counts its units (it calls no code).
    table = np.column_stack([X, Y])
    header = ",".join([*(f"x{i}" for i in range(X.shape[1])), "y"])
    np.savetxt(folder / "matrix.csv", table, delimiter=",", header=header, comments="",
               fmt="%.17g")  # fmt: skip
    # Unshuffled folds: the run's seed (--seed) then reaches the strategy and nothing else.
    folds = '{{ kind = "kfold", n_splits = {}, shuffle = false }}'.format
    cv = (f"[cv]\nouter = {folds(OUTER)}\ninner = {folds(INNER)}\n" if nested
          else f"[cv]\ncv = {folds(INNER)}\n")  # fmt: skip
    tables = spec_estimator(case, user_code=user_code) + case.spec
    report = "" if plots else "[report]\nplots = false\n"
    return (f'[data]\nsource = "matrix.csv"\ntarget = "y"\n{tables}{cv}{report}'
            f"[scoring]\n{case.metrics}{scoring}")  # fmt: skip


def _spec_run(case: Case, nested: bool, backend: str, out: Path, seed: int | None,
              *extra: str, scoring: str = "", user_code: bool = False, plots: bool
              ) -> tuple[int, str]:  # fmt: skip
    from parcv.cli import main

    folder = out.parent
    spec = folder / f"{out.name}.toml"
    spec.write_text(spec_text(case, nested, folder, scoring, user_code=user_code, plots=plots))
    words = ["run", str(spec), "--out", str(out), "--backend", backend, *extra]
    if seed is not None:
        words += ["--seed", str(seed)]
    if backend == "local":
        words += ["--n-jobs", "2"]
    stream = io.StringIO()
    with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
        code = main(words)
    return code, stream.getvalue()


#: The entry points: the API, the drop-in estimators and a spec through the CLI, each
#: selecting on all data (a search) and as a nested CV.
ENTRIES = ("search", "nested_cv", "drop-in search", "drop-in nested", "spec search", "spec nested")
NESTED = ("nested_cv", "drop-in nested", "spec nested")


def run_entry(case: Case, entry: str, backend: str, where: Path, *, seed: int | None = None,
              **run: Any) -> Run:  # fmt: skip
    """Run a case through an entry point into a store under ``where``.

    A parcv error raised before any unit is stored (a spec error, a ``ValueError``,
    ``TypeError`` or ``ImportError`` of the call) is a refusal: :class:`Refused`. A spec's
    report draws its plots only with ``plots=True``.
    """
    try:
        return _run_entry(case, entry, backend, where, seed=seed, **run)
    except (ValueError, TypeError, ImportError, AssertionError) as err:
        if any(_stored_units(s) for s in where.rglob("*.sqlite")):
            raise
        text = str(err)
        if isinstance(err, AssertionError):  # a spec: the CLI's exit code 2 is a spec error
            if "exited 2" not in text:
                raise
            text = text.split("parcv: error: ", 1)[-1].strip()
        raise Refused(text) from err


def _run_entry(case: Case, entry: str, backend: str, where: Path, *, seed: int | None = None,
               **run: Any) -> Run:  # fmt: skip
    where.mkdir(parents=True, exist_ok=True)
    nested = entry in NESTED
    user_code = bool(run.pop("user_code", False))
    plots = bool(run.pop("plots", False))
    if entry.startswith("spec"):
        out = where / "run"
        extra = run.pop("extra", ())
        code, said = _spec_run(case, nested, backend, out, seed, *extra, plots=plots,
                               scoring=run.pop("scoring", ""), user_code=user_code)  # fmt: skip
        if code != 0:
            raise AssertionError(f"parcv run exited {code}:\n{said}")
        return Run(parcv.load(out / "store.sqlite"), out / "store.sqlite", said, out)
    store = where / "s.sqlite"
    stream = io.StringIO()
    with _logged(stream):
        if entry.startswith("drop-in"):
            result = _drop_in_run(case, nested, backend, store, seed, user_code, **run)
        else:
            result = _api_run(case, nested, backend, store, seed, user_code, **run)
    return Run(result, store, stream.getvalue())


@contextlib.contextmanager
def _logged(stream: io.StringIO) -> Iterator[None]:
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("parcv")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


# --- what a result says, compared ---------------------------------------------------


def facts(result: Any) -> dict[str, Any]:
    """What a result says, as plain data: equal for equal runs, whatever the entry point.

    Every entry point gives a parcv result (a drop-in its ``result_``): its JSON without
    the notes and the times.
    """
    data = json.loads(result.to_json())
    data.pop("notes", None)
    data.pop("timing", None)
    return _no_times(data)


def _no_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_times(v) for k, v in value.items()
                if not re.search(r"time|worker|duration|elapsed", str(k))}  # fmt: skip
    if isinstance(value, list):
        return [_no_times(v) for v in value]
    return value


def _stored_units(store: Path) -> int:
    """Records the store holds, of every plan (a run in rounds stores a plan per part)."""
    from parcv.store.readers import read_counts

    return read_counts(store)[0] if store.is_file() else 0


def _stored_searches(store: Path) -> int:
    """Stored units of the searches (the refits of the chosen candidates left out)."""
    from parcv.store.readers import read_stored_kinds

    kinds = read_stored_kinds(store)
    return sum(n for kind, n in kinds.items() if kind not in ("refit", "final"))


# --- the consumers ------------------------------------------------------------------


@dataclass
class Cell:
    """One cell's inputs: the case, entry point, backend and a folder of its own."""

    case: Case
    entry: str
    backend: str
    where: Path
    plots: bool = True  # a spec's main run draws its report's plots (False: no consumer reads them)
    runs: dict[str, Run] = field(default_factory=dict)

    @property
    def nested(self) -> bool:
        return self.entry in NESTED

    def run(self, name: str = "main", **options: Any) -> Run:
        """Run the cell's case (once per name: consumers share the main run).

        A spec's main run draws its report's plots (the report consumer reads them) unless
        ``plots`` is false; every other run of a cell writes its report without them.
        """
        if name not in self.runs:
            self.runs[name] = run_entry(self.case, self.entry, self.backend, self.where / name,
                                        plots=self.plots and name == "main", **options)  # fmt: skip
        return self.runs[name]

    def reference(self) -> Run:
        """The same run on the serial backend, without a store shared with the cell."""
        if self.backend == "serial":
            return self.run("reference")
        return run_entry(self.case, self.entry, "serial", self.where / "reference")


def consume_result(cell: Cell) -> None:
    """The run's result equals the same run on the serial backend (and a second serial run)."""
    assert facts(cell.run().result) == facts(cell.reference().result)


def consume_load(cell: Cell) -> None:
    """``parcv.load`` of the store equals the run's own result."""
    run = cell.run()
    loaded = parcv.load(run.store)
    assert facts(loaded) == facts(run.result)


class _StopAfter:
    """Ctrl-C in the driver once ``n`` records are stored: KeyboardInterrupt from the store."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen = 0

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        from parcv.store.writer import Store

        real = Store.add
        stopper = self

        def add(store: Any, records: Any, pid: int = 0) -> None:
            real(store, records, pid)
            stopper.seen += len(list(records)) if isinstance(records, list) else 1
            if stopper.seen >= stopper.n:
                raise KeyboardInterrupt

        Store.add = add  # type: ignore[method-assign]
        try:
            yield
        finally:
            Store.add = real  # type: ignore[method-assign]


def _stopped(cell: Cell) -> tuple[Run | None, str]:
    """The cell's run stopped by Ctrl-C after about half its units: the run, what it said."""
    if "stopped" in cell.runs:
        return cell.runs["stopped"], cell.runs["stopped"].log
    full = _stored_units(cell.run().store)
    stopper = _StopAfter(max(1, full // 2))
    where = cell.where / "stopped"
    said = ""
    with stopper.armed():
        try:
            stopped = run_entry(cell.case, cell.entry, cell.backend, where)
        except KeyboardInterrupt as err:  # RunInterrupted, from the API
            said = str(err)
            stopped = None
        except AssertionError as err:  # the CLI's exit code, with what it printed
            said = str(err)
            stopped = None
    store = where / ("run/store.sqlite" if cell.entry.startswith("spec") else "s.sqlite")
    run = Run(None, store, said)
    cell.runs["stopped"] = run
    if stopped is not None:
        raise AssertionError(f"the run was not stopped: {stopped}")
    return run, said


def consume_partial(cell: Cell) -> None:
    """``load(partial=True)`` of a run stopped mid-way: the units it stored, none invented."""
    run, _ = _stopped(cell)
    assert run is not None
    partial = parcv.load(run.store, partial=True)
    stored = _stored_units(run.store)
    done = getattr(partial, "n_done", None)
    if isinstance(partial, parcv.PartialResult):
        assert done == stored, (done, stored)
        assert partial.n_units >= stored
    else:
        raise AssertionError(f"a stopped run loads as {type(partial).__name__}, not partial")


def consume_interrupt(cell: Cell) -> None:
    """Ctrl-C says how many units are kept (= stored); the resume reuses them and equals the
    uninterrupted run."""
    run, said = _stopped(cell)
    assert run is not None
    stored = _stored_units(run.store)
    kept = re.search(
        r"(\d+) finished units?(?: \(and (\d+) refits? [^)]*\))? (?:is|are) "
        r"(?:kept|safe)",
        said,
    )
    assert kept is not None, said
    assert int(kept.group(1)) + int(kept.group(2) or 0) == stored, (said, stored)
    searches = _stored_searches(run.store)
    spec = cell.entry.startswith("spec")
    resumed = run_entry(
        cell.case,
        cell.entry,
        cell.backend,
        run.store.parent.parent if spec else run.store.parent,
        **({"extra": ("--resume",)} if spec else {"resume": True}),
    )
    reused = re.search(r"reusing (\d+) of \d+|store holds (\d+) finished units", resumed.log)
    assert reused is not None, resumed.log
    # A fixed plan counts the searches' units (its refits apart), a run in rounds all it holds.
    told = int(reused.group(1) or reused.group(2))
    assert told == (searches if reused.group(1) else stored), (resumed.log, searches, stored)
    assert facts(resumed.result) == facts(cell.run().result)


def consume_inspect(cell: Cell) -> None:
    """``parcv inspect`` of the spec counts the units the run stores (at most, for a bound)."""
    if not cell.entry.startswith("spec"):
        raise NotApplicable("inspect reads a spec: a Python call is planned when it is made")
    from parcv.cli import main

    run = cell.run()
    assert run.out is not None
    spec = run.out.parent / f"{run.out.name}.toml"
    stream = io.StringIO()
    with contextlib.redirect_stdout(stream):
        assert main(["inspect", str(spec), "--out", str(cell.where / "inspected")]) == 0
    shown = stream.getvalue()
    # An iteration path's fit is scored at each checkpoint: "72 scores of 18 fits".
    units = re.search(
        r"units\s+(at most )?(\d+) (?:scores of \d+ )?fits? \+ (\d+) refit\(s\) = (\d+)", shown
    )
    assert units is not None, shown
    computed = re.search(r"(\d+) units computed", run.log)
    assert computed is not None, run.log
    total, ran = int(units.group(4)), int(computed.group(1))
    assert (ran <= total) if units.group(1) else (ran == total), (shown, run.log)
    assert "(defaults)" not in shown, shown


def consume_report(cell: Cell) -> None:
    """The report (text, HTML, plots) of the run names the selected parameters of the result."""
    from parcv.report.run_dir import rebuild_report, write_outputs
    from parcv.report.text import RunInfo

    run = cell.run()
    if cell.entry.startswith("spec"):
        assert run.out is not None
        result, _, files = rebuild_report(run.out)
        out = run.out
    else:
        out = cell.where / "report"
        out.mkdir(exist_ok=True)
        result = parcv.load(run.store)
        files = write_outputs(out, result, RunInfo(cell.case.name))
    text = (out / "report.md").read_text()
    assert (out / "report.html").is_file()
    assert any(f.suffix == ".png" for f in files), files
    chosen = getattr(result, "best_params_", None)
    if chosen:
        for name, value in chosen.items():
            assert name in text, (name, text)
            del value


def _procedure(cell: Cell) -> Any:
    """Another procedure on the same outer folds: a ridge of a fixed penalty."""
    spec = cell.entry.startswith("spec")
    outer, inner = (KFold(OUTER), KFold(INNER)) if spec else (_outer(), _inner())
    return parcv.nested_cv(
        estimator("Ridge"),
        {"alpha": [1e3]},
        X,
        Y,
        outer=outer,
        inner=inner,
        scoring=SCORING,
        backend="serial",
    )


def consume_compare(cell: Cell) -> None:
    """``compare`` of two nested CVs equals the corrected paired t-test computed by hand."""
    if not cell.nested:
        raise NotApplicable("two procedures are compared on the outer folds of nested CVs")
    ours, other = cell.run().result, _procedure(cell)
    got = ours.compare(other)
    a = np.asarray(_refit_scores(ours.outer_scores), dtype=float)
    b = np.asarray(_refit_scores(other.outer_scores), dtype=float)
    d = a - b
    k = len(d)
    n_test = np.array([len(t) for _, t in _outer().split(X)])
    n_train = len(X) - n_test
    corrected = (1 / k + float(np.mean(n_test / n_train))) * np.var(d, ddof=1)
    t = float(np.mean(d) / math.sqrt(corrected))
    p = float(2 * scipy_stats.t.sf(abs(t), k - 1))
    assert math.isclose(got.statistic, t, rel_tol=1e-9), (got, t)
    assert math.isclose(got.p_value, p, rel_tol=1e-9), (got, p)


def _refit_scores(outer: dict[str, Any]) -> Any:
    return outer["score"] if "score" in outer else outer[SCORING]


def _interval(cell: Cell, method: str) -> None:
    if not cell.nested:
        raise NotApplicable("an interval of the selection procedure is asked of a nested CV")
    if cell.entry == "drop-in nested":
        raise NotApplicable("the drop-in NestedCV has scikit-learn's parameters, which ask no "
                            "interval; parcv.nested_cv and a spec do")  # fmt: skip
    spec = cell.entry.startswith("spec")
    options: dict[str, Any] = (
        {"scoring": f'interval = "{method}"\n'} if spec else {"interval": method}
    )
    if method == "ncv":
        options = ({"scoring": options["scoring"] + "ncv_repetitions = 1\n"} if spec
                   else {**options, "ncv_repetitions": 1})  # fmt: skip
    run = cell.run(method, **options)
    reference = (run if cell.backend == "serial" else
                 run_entry(cell.case, cell.entry, "serial", cell.where / f"{method}-serial",
                           **options))  # fmt: skip
    got, ref = run.result.interval, reference.result.interval
    assert got is not None and got.method == method, got
    assert math.isfinite(got.lower) and math.isfinite(got.upper) and got.lower <= got.upper
    assert (got.lower, got.upper, got.estimate) == (ref.lower, ref.upper, ref.estimate)


def consume_ncv(cell: Cell) -> None:
    """The nested CV interval (Bates, Hastie and Tibshirani), the same on the serial backend."""
    _interval(cell, "ncv")


def consume_bbc(cell: Cell) -> None:
    """The BBC-CV interval, the same on the serial backend, or a refusal before any fit."""
    _interval(cell, "bbc")


def consume_seed(cell: Cell) -> None:
    """Same run seed, same run; another seed, other draws where the strategy draws."""
    first = run_entry(cell.case, cell.entry, cell.backend, cell.where / "seed-a", seed=SEEDS[0])
    again = run_entry(cell.case, cell.entry, cell.backend, cell.where / "seed-b", seed=SEEDS[0])
    other = run_entry(cell.case, cell.entry, cell.backend, cell.where / "seed-c", seed=SEEDS[1])
    assert facts(first.result) == facts(again.result)
    if cell.case.draws:
        assert facts(first.result) != facts(other.result)
    else:
        assert facts(first.result) == facts(other.result)


def consume_notes(cell: Cell) -> None:
    """A resume with ``resume="values"`` after a code edit keeps its records and says so, and
    ``load`` says the same."""
    run = cell.run("notes", user_code=True)
    write_module(_module_folder(), edit=1)
    try:
        _import_again()
        spec = cell.entry.startswith("spec")
        where = run.store.parent.parent if spec else run.store.parent
        extra = ({"extra": ("--resume", "--rerun-triggers", "values")} if spec
                 else {"resume": "values"})  # fmt: skip
        resumed = run_entry(cell.case, cell.entry, cell.backend, where, user_code=True, **extra)
    finally:
        write_module(_module_folder(), edit=0)
        _import_again()
    notes = list(resumed.result.notes)
    assert notes, "a resume that kept records across a code change says so"
    if not spec:  # a spec's result is the one load gives
        assert list(parcv.load(resumed.store).notes) == notes


def _import_again() -> None:
    """The user's module imported afresh from its file, as the next process would."""
    sys.modules.pop("matrixmod", None)
    import matrixmod  # noqa: F401


def _module_folder() -> Path:
    return Path(sys.modules["matrixmod"].__file__).parent  # type: ignore[arg-type]


CONSUMERS: dict[str, Callable[[Cell], None]] = {
    "result": consume_result,
    "load": consume_load,
    "load partial": consume_partial,
    "interrupt and resume": consume_interrupt,
    "inspect": consume_inspect,
    "report": consume_report,
    "compare": consume_compare,
    "interval ncv": consume_ncv,
    "interval bbc": consume_bbc,
    "seed": consume_seed,
    "resume values notes": consume_notes,
}
BACKENDS = ("serial", "local")


# --- cells ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """A cell's outcome: "equal", "refused" (with the reason) or "failed" (with the error)."""

    case: str
    entry: str
    consumer: str
    backend: str
    status: str
    detail: str = ""
    seconds: float = 0.0


def check_cell(cell: Cell, consumer: str) -> Outcome:
    """Run one consumer on one cell; a refusal must be raised before any fit."""
    start = time.perf_counter()
    status, detail = "equal", ""
    try:
        CONSUMERS[consumer](cell)
    except Refused as why:
        status, detail = "refused", str(why)
    except NotApplicable as why:
        status, detail = "n/a", str(why)
    except (Exception, KeyboardInterrupt) as err:
        status, detail = "failed", f"{type(err).__name__}: {err}"[:2000]
    took = time.perf_counter() - start
    return Outcome(cell.case.name, cell.entry, consumer, cell.backend, status, detail, took)


def cells(cases: list[Case], backends: tuple[str, ...] = BACKENDS
          ) -> Iterator[tuple[Case, str, str]]:  # fmt: skip
    """Every (case, entry point, backend): the matrix's rows times its columns."""
    for case in cases:
        for entry in ENTRIES:
            for backend in backends:
                yield case, entry, backend


SEARCH_ENTRIES = tuple(e for e in ENTRIES if e not in NESTED)


def ci_slice(cases: list[Case]) -> list[tuple[Case, str, str, tuple[str, ...]]]:
    """The cells CI runs: every (strategy, consumer) and every (entry point, consumer) at least
    once on the serial backend, and every strategy's result on the local pool.

    Case ``i`` meets every consumer on search entry ``i mod 3``; on nested entry
    ``i + 1 mod 3`` it meets the consumers of a nested CV (compare, intervals) and a quarter
    of the others (``i mod 4`` picks which: 4 and 3 are coprime, so over twelve cases or
    more each entry point meets each consumer). A nested cell runs a search in each outer
    fold: a quarter, not a half, keeps CI's time. ``scripts/strategy_matrix.py`` runs
    every cell.
    """
    out = []
    consumers = tuple(CONSUMERS)
    nested_only = ("compare", "interval ncv", "interval bbc")
    others = [c for c in consumers if c not in nested_only]
    for i, case in enumerate(cases):
        searched = SEARCH_ENTRIES[i % len(SEARCH_ENTRIES)]
        nested = NESTED[(i + 1) % len(NESTED)]
        quarter = tuple(others[i % 4 :: 4])
        out.append((case, searched, "serial", consumers))
        out.append((case, nested, "serial", quarter + nested_only))
        out.append((case, searched, "local", ("result",)))
    return out


#: The refusals the matrix meets, each by a phrase of parcv's message and the page of the
#: user documentation that gives its reason (which must hold the phrase too).
REFUSALS: dict[str, str] = {
    # interval="bbc" of a strategy that proposes or drops candidates (a sampler, halving...)
    "bootstraps the choice among a fixed set of candidates": "docs/user_guide/cv_and_nested.rst",
    # a "gp" sampler where torch is not installed (CI's machine): every cell of that row
    "needs torch, which is not installed": "docs/user_guide/searching.rst",
}


def documented(detail: str) -> tuple[str, str] | None:
    """The (phrase, page) that documents a refusal's message, or None."""
    for phrase, page in REFUSALS.items():
        if phrase in detail:
            return phrase, page
    return None


def matrix_cases() -> list[Case]:
    """Every row: parcv's strategies and the strategies of one's own."""
    return builtin_cases() + own_cases()
