"""Model-based search: Optuna's samplers (TPE, CMA-ES, GP, QMC, random) as a strategy.

:class:`Sampler` runs an Optuna study through its ask-and-tell interface, one
round at a time: each round asks ``batch`` trials, proposes them as one
:class:`~parcv.strategies.strategy.Part` (the trial numbers are the ids), and when
the round has finished tells every trial its mean CV score (the refit
metric's ``mean_test_*``, maximized). The proposer keeps the study as its state
and rebuilds it from the finished rounds when it is handed more than it has
seen, so its proposals are a function of the sampler, its seed and the
finished rounds: every backend and worker count proposes the same trials.

With ``batch=1`` the trials, their values and the best trial equal Optuna's
own ``study.optimize`` with the same sampler and seed on an objective that
returns scikit-learn's ``cross_val_score(...).mean()`` on the same folds; a NaN
mean is told as a failed trial (as ``optimize`` does for an objective that
returns NaN), a trial a race dropped as pruned.

Optuna is an optional extra (``pip install 'parcv[optuna]'``), imported only
when a sampler is asked for.

Batches (several trials asked before any is told) are what Optuna calls batch
optimization; how each sampler spreads a batch:

- TPE: with ``constant_liar=True`` (the default from Optuna 5.0; parcv sets it
  for ``"tpe"`` with ``batch > 1`` on older versions) the trials still running
  count as the worst, so a batch does not repeat one point. It has no effect
  with ``batch=1`` (a trial never sees itself running).
- CMA-ES: a batch is part of one generation (``popsize``); the search
  distribution is updated once a generation is told.
- GP: from Optuna 5.0 running trials take part in the acquisition (a
  constant liar); before, a batch may hold near-duplicates.
- QMC and random: independent of the values, so a batch is the same points
  as sequential asks.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import inspect
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from parcv.plan.iterations import Iterations
from parcv.plan.shortcuts import continues_exactly
from parcv.plan.tokens import token_hex
from parcv.strategies.pareto import (
    TIMES,
    ParetoFront,
    check_objectives,
    nondominated,
    select_from,
)
from parcv.strategies.rungs import TrialWindows
from parcv.strategies.strategy import (
    Choice,
    FinishedPart,
    FinishedRound,
    Part,
    Proposer,
    Round,
    RoundBound,
    Schedule,
    SearchContext,
)

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

__all__ = [
    "PRUNERS",
    "SAMPLERS",
    "OptunaSpace",
    "Sampler",
    "check_optuna_space",
    "import_optuna",
    "rebuild_pruned_study",
    "rebuild_study",
]

#: The samplers a name gives (``Sampler("tpe", ...)``, ``kind = "tpe"`` in a spec).
SAMPLERS: dict[str, str] = {
    "tpe": "TPESampler",
    "nsga2": "NSGAIISampler",
    "cmaes": "CmaEsSampler",
    "gp": "GPSampler",
    "qmc": "QMCSampler",
    "random": "RandomSampler",
}


#: The pruners a name gives in a spec (``pruner = {kind = "hyperband", ...}``).
PRUNERS: dict[str, str] = {
    "hyperband": "HyperbandPruner",
    "successive_halving": "SuccessiveHalvingPruner",
    "median": "MedianPruner",
    "percentile": "PercentilePruner",
    "threshold": "ThresholdPruner",
    "wilcoxon": "WilcoxonPruner",
    "nop": "NopPruner",
}


def _pruner_from_config(table: Any) -> Any:
    """A spec's ``pruner`` table (``kind`` and the pruner's arguments) as Optuna's pruner."""
    if table is None:
        return None
    if not isinstance(table, Mapping) or not isinstance(table.get("kind"), str):
        raise TypeError(
            f"pruner must be a table with kind, one of {sorted(PRUNERS)}, and the pruner's "
            f"arguments; got {table!r}. For example: pruner = {{kind = 'hyperband'}}."
        )
    kind = table["kind"]
    if kind not in PRUNERS:
        raise ValueError(
            f"pruner.kind must be one of {sorted(PRUNERS)}; got {kind!r}. Pass e.g. "
            "pruner = {kind = 'median', n_warmup_steps = 5}."
        )
    cls = getattr(import_optuna().pruners, PRUNERS[kind])
    arguments = {k: v for k, v in table.items() if k != "kind"}
    accepted = set(inspect.signature(cls).parameters)
    unknown = sorted(set(arguments) - accepted)
    if unknown:
        raise ValueError(
            f"pruner options {unknown} are not arguments of optuna's {cls.__name__}; its "
            f"arguments are {sorted(accepted)}. Fix the option's name."
        )
    return cls(**arguments)


def _resource_from_config(table: Any) -> Any:
    """A spec's ``resource`` table (Iterations' fields) as an Iterations."""
    if table is None or not isinstance(table, Mapping):
        return table  # the Sampler says what it takes
    return Iterations(**table)


# Samplers that import a package of their own when they first sample, and how to install it.
_NEEDS: dict[str, tuple[str, str]] = {
    "GPSampler": ("torch", "pip install torch (the CPU build is enough)"),
    "CmaEsSampler": ("cmaes", "pip install 'parcv[optuna]' (or pip install cmaes)"),
}

# Samplers that call study.stop() when exhausted: Optuna refuses it outside study.optimize.
_REFUSED = frozenset({"GridSampler", "BruteForceSampler"})


def import_optuna() -> ModuleType:
    """Import Optuna, or say how to install it.

    Returns
    -------
    module
        The ``optuna`` package.

    Raises
    ------
    ImportError
        If Optuna is not installed.

    Examples
    --------
    >>> import_optuna().__name__
    'optuna'
    """
    try:
        import optuna
    except ImportError as err:
        raise ImportError(
            "parcv.Sampler runs Optuna's samplers, and Optuna is not installed. "
            "Install it with: pip install 'parcv[optuna]' (or pip install optuna)."
        ) from err
    return optuna


# ---------------------------------------------------------------- the space


@dataclass(frozen=True)
class OptunaSpace:
    """A search space as Optuna's distributions.

    Parameters
    ----------
    distributions : dict of str to optuna.distributions.BaseDistribution
        One distribution per parameter, in the space's order (the order the
        trials suggest them in).
    choices : dict of str to tuple
        Lists whose values Optuna cannot hold (an estimator, a tuple): their
        categorical distribution holds the indices ``0..n-1`` and
        :meth:`decode` gives the values. Optuna samples a categorical by index,
        so the draws are the same.
    """

    distributions: Mapping[str, BaseDistribution]
    choices: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def decode(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Return a trial's parameters as ``set_params`` takes them, in the space's order."""
        return {
            name: self.choices[name][params[name]] if name in self.choices else params[name]
            for name in self.distributions
        }

    def encode(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Return parameters as the study holds them (the inverse of :meth:`decode`)."""
        encoded = {}
        for name in self.distributions:
            value = params[name]
            if name in self.choices:
                value = next(i for i, v in enumerate(self.choices[name]) if _same(v, value))
            encoded[name] = value
        return encoded


def _same(a: Any, b: Any) -> bool:
    """One value of a list, or an equal copy of it (an estimator rebuilt from a store)."""
    return a is b or (type(a) is type(b) and repr(a) == repr(b))


def _scipy_name(value: Any) -> str:
    return str(getattr(getattr(value, "dist", None), "name", type(value).__name__))


def _loc_scale(value: Any) -> tuple[float, float]:
    """A frozen scipy.stats distribution's ``loc`` and ``scale`` (after its shape arguments)."""
    n_shapes = int(value.dist.numargs)
    args, kwds = tuple(value.args), dict(value.kwds)
    loc = args[n_shapes] if len(args) > n_shapes else kwds.get("loc", 0.0)
    scale = args[n_shapes + 1] if len(args) > n_shapes + 1 else kwds.get("scale", 1.0)
    return float(loc), float(scale)


def _from_uniform(optuna: ModuleType, name: str, value: Any) -> BaseDistribution:
    low, high = (float(v) for v in value.support())
    return optuna.distributions.FloatDistribution(low, high)  # type: ignore[no-any-return]


def _from_loguniform(optuna: ModuleType, name: str, value: Any) -> BaseDistribution:
    loc, _ = _loc_scale(value)
    if loc != 0.0:
        raise ValueError(
            f"space[{name!r}] is {_scipy_name(value)} with loc={loc!r}: shifted, it is no longer "
            "log-uniform, and Optuna has no distribution for it. Drop loc (give the bounds as "
            f"loguniform(low, high)), or pass an optuna.distributions.FloatDistribution."
        )
    low, high = (float(v) for v in value.support())
    return optuna.distributions.FloatDistribution(low, high, log=True)  # type: ignore[no-any-return]


def _from_randint(optuna: ModuleType, name: str, value: Any) -> BaseDistribution:
    low, high = (int(v) for v in value.support())  # randint(low, high): high excluded
    return optuna.distributions.IntDistribution(low, high)  # type: ignore[no-any-return]


# scipy.stats distributions an Optuna distribution equals, by scipy's name for them.
_SCIPY: dict[str, Any] = {
    "uniform": _from_uniform,
    "loguniform": _from_loguniform,
    "reciprocal": _from_loguniform,
    "randint": _from_randint,
}


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python scalar it equals; anything else as is."""
    return value.item() if isinstance(value, np.generic) else value


def _categorical(optuna: ModuleType, name: str, values: Any) -> tuple[Any, tuple[Any, ...] | None]:
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(
                f"space[{name!r}] must be a 1-D list or array of values; got an array of shape "
                f"{values.shape}. Pass a 1-D array such as np.logspace(-2, 2, 5)."
            )
        values = values.tolist()
    values = [_plain(v) for v in values]
    if not values:
        raise ValueError(
            f"space[{name!r}] is an empty list: a trial could not set it. Give at least one "
            "value, or remove the parameter from the space."
        )
    Categorical = optuna.distributions.CategoricalDistribution
    if all(v is None or isinstance(v, (bool, int, float, str)) for v in values):
        return Categorical(tuple(values)), None
    # Optuna stores only None, bool, int, float and str; it samples a categorical by its
    # index, so indices draw the same trials and decode() gives the values back.
    return Categorical(tuple(range(len(values)))), tuple(values)


def _distribution(
    optuna: ModuleType, name: str, value: Any
) -> tuple[BaseDistribution, tuple[Any, ...] | None]:
    """One entry of the space as an Optuna distribution (and the values of an encoded list)."""
    if isinstance(value, optuna.distributions.BaseDistribution):
        return value, None
    if hasattr(value, "rvs"):
        kind = _scipy_name(value)
        if not hasattr(value, "dist"):
            raise TypeError(
                f"space[{name!r}] is the scipy.stats distribution {kind} without its "
                f"parameters; freeze it with its bounds, e.g. {kind}(0, 1)."
            )
        if kind not in _SCIPY:
            raise ValueError(
                f"space[{name!r}] is scipy.stats.{kind}{tuple(value.args)!r}, which Optuna's "
                "samplers cannot draw from: they need a bounded uniform, log-uniform or "
                f"integer range, or a list. Use one of scipy.stats.{', '.join(sorted(_SCIPY))}, "
                "an optuna.distributions.FloatDistribution(low, high, log=...) / "
                "IntDistribution(low, high), or a list of values."
            )
        return _SCIPY[kind](optuna, name, value), None
    if isinstance(value, (list, tuple, range, np.ndarray)):
        return _categorical(optuna, name, value)
    raise TypeError(
        f"space[{name!r}] must be a list of values, a scipy.stats distribution or an "
        f"optuna.distributions distribution; got {value!r} (of type {type(value).__name__}). "
        f"Wrap a single value in a list: {{{name!r}: [{value!r}]}}."
    )


def check_optuna_space(space: Any) -> OptunaSpace:
    """Convert a search space to Optuna's distributions, or say why it cannot be.

    Parameters
    ----------
    space : dict
        Parameter name to an ``optuna.distributions`` distribution, a
        ``scipy.stats`` distribution or a list of values (as
        ``RandomizedSearchCV``'s ``param_distributions``). Lists become
        ``CategoricalDistribution``; ``uniform(loc, scale)`` a
        ``FloatDistribution(loc, loc + scale)``; ``loguniform(a, b)`` a
        ``FloatDistribution(a, b, log=True)``; ``randint(low, high)`` an
        ``IntDistribution(low, high - 1)``.

    Returns
    -------
    OptunaSpace

    Raises
    ------
    TypeError
        If the space is not one dict, or a value is of no accepted type.
    ValueError
        If the space is empty, or a distribution has no Optuna equivalent.

    Examples
    --------
    >>> from scipy.stats import loguniform, randint
    >>> space = check_optuna_space({"alpha": loguniform(1e-3, 1e3), "k": randint(1, 5),
    ...                             "fit_intercept": [True, False]})
    >>> for name, d in space.distributions.items():
    ...     print(name, d)
    alpha FloatDistribution(high=1000.0, log=True, low=0.001, step=None)
    k IntDistribution(high=4, log=False, low=1, step=1)
    fit_intercept CategoricalDistribution(choices=(True, False))
    """
    optuna = import_optuna()
    if hasattr(space, "distributions") and hasattr(space, "n_iter"):
        raise TypeError(
            "a Sampler proposes its own trials; got a RandomSpace, which draws n_iter "
            "candidates. Pass its distributions as the space (space=random_space.distributions) "
            "and the number of trials as Sampler(n_trials=...)."
        )
    if isinstance(space, Sequence) and not isinstance(space, str):
        raise TypeError(
            f"a Sampler searches one space, a dict; got a list of {len(space)} spaces. "
            "Merge them into one dict (a categorical parameter can choose between estimators: "
            "{'model': [Ridge(), Lasso()]}), or search each with its own Sampler."
        )
    if not isinstance(space, Mapping):
        raise TypeError(
            "space must be a dict of parameter name to a list, a scipy.stats distribution or an "
            f"optuna distribution; got {space!r}. For example: {{'alpha': loguniform(1e-3, 1e3)}}."
        )
    if not space:
        raise ValueError(
            "space must name at least one parameter for a Sampler to search; got {}. "
            "Pass e.g. {'alpha': loguniform(1e-3, 1e3)}, or use parcv.cross_validate to score "
            "the estimator as it is."
        )
    distributions: dict[str, BaseDistribution] = {}
    choices: dict[str, tuple[Any, ...]] = {}
    for name, value in space.items():
        if not isinstance(name, str):
            raise TypeError(f"space's keys must be parameter names (str); got {name!r}.")
        distributions[name], values = _distribution(optuna, name, value)
        if values is not None:
            choices[name] = values
    return OptunaSpace(distributions, choices)


def rebuild_study(params: Sequence[Mapping[str, Any]], values: Any, *, space: Any) -> Any:
    """Rebuild an Optuna study from a search's trials, for Optuna's tools (importance, plots).

    Parameters
    ----------
    params : list of dict
        Each trial's parameters; keys outside ``space`` (an iteration count
        an iteration path added) are left out.
    values : array-like of shape (n_trials,)
        Each trial's mean test score; a NaN trial is added as failed.
    space : dict
        The space the trials were drawn from (see :func:`check_optuna_space`).

    Returns
    -------
    optuna.Study
        In memory, maximized, one finished trial per row, in order.

    Examples
    --------
    >>> study = rebuild_study([{"a": 1}, {"a": 2}, {"a": 3}], [0.5, 0.7, float("nan")],
    ...                       space={"a": [1, 2, 3]})
    >>> study.best_trial.params, [t.state.name for t in study.trials]
    ({'a': 2}, ['COMPLETE', 'COMPLETE', 'FAIL'])
    """
    optuna = import_optuna()
    converted = check_optuna_space(space)
    distributions = dict(converted.distributions)
    scores = np.asarray(values, dtype=np.float64)
    if scores.shape != (len(params),):
        raise ValueError(
            f"values must hold one mean score per trial; got shape {scores.shape} for "
            f"{len(params)} trials. Pass the trials' params and their mean scores, in order."
        )
    State = optuna.trial.TrialState
    trials = [
        optuna.trial.create_trial(
            params=converted.encode(p),
            distributions=distributions,
            value=float(v) if np.isfinite(v) else None,
            state=State.COMPLETE if np.isfinite(v) else State.FAIL,
        )
        for p, v in zip(params, scores, strict=True)
    ]
    study = _new_study(optuna, optuna.samplers.RandomSampler(seed=0))
    study.add_trials(trials)
    return study


def rebuild_pruned_study(result: Any, *, space: Any) -> Any:
    """Rebuild the Optuna study of a search with a pruner, for Optuna's tools and checks.

    Parameters
    ----------
    result : SearchResult
        The result of ``parcv.search`` (or a nested run's ``search_``) with
        ``strategy=Sampler(..., pruner=...)``: its ``cv_results_`` rows are
        (trial, checkpoint) with the columns ``trial``, ``trial_state`` and
        ``reported``.
    space : dict
        The space the trials were drawn from (see :func:`check_optuna_space`).

    Returns
    -------
    optuna.Study
        In memory, maximized: one finished trial per trial number, in order,
        with its state, parameters, intermediate values (the mean test score of
        the refit metric at each checkpoint reported, the count as the step) and
        value (a complete trial's last intermediate value; a pruned trial's
        last reported one, as Optuna tells it; none for a failed one), and the
        study name the search used.

    Raises
    ------
    ValueError
        ``result`` is not a search with a pruner.
    """
    optuna = import_optuna()
    config = getattr(result, "strategy", None) or {}
    cv = result.cv_results_
    if config.get("pruner") is None or "trial_state" not in cv:
        raise ValueError(
            f"rebuild_pruned_study needs the result of a search with "
            f"strategy=parcv.Sampler(..., pruner=...); got one by {config.get('name', 'a grid')!r}"
            f" without a pruner. For a sampler without one, use rebuild_study."
        )
    converted = check_optuna_space(space)
    param = str(config["resource"]["param"])
    metric = result.refit_metric if getattr(result, "multimetric", False) else "score"
    means = np.asarray(cv[f"mean_test_{metric}"], dtype=np.float64)
    numbers = np.asarray(cv["trial"])
    State = optuna.trial.TrialState
    trials = []
    for number in sorted(set(numbers.tolist())):
        rows = np.flatnonzero(numbers == number)
        first = cv["params"][rows[0]]
        steps = {int(cv["params"][r][param]): float(means[r]) for r in rows if cv["reported"][r]}
        state = State[str(cv["trial_state"][rows[0]])]
        value = steps[max(steps)] if steps and state != State.FAIL else None
        trials.append(optuna.trial.create_trial(
            params=converted.encode({k: v for k, v in first.items() if k != param}),
            distributions=dict(converted.distributions), value=value, state=state,
            intermediate_values=steps,
        ))  # fmt: skip
    study = _new_study(optuna, optuna.samplers.RandomSampler(seed=0),
                       study_name=str(config.get("study_name", "parcv")))  # fmt: skip
    study.add_trials(trials)
    return study


# ---------------------------------------------------------------- the strategy


@contextlib.contextmanager
def _quiet(optuna: ModuleType) -> Iterator[None]:
    """Keep Optuna's INFO lines (a study created, a trial finished) out of parcv's output."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(max(level, optuna.logging.WARNING))
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def _new_study(
    optuna: ModuleType,
    sampler: Any,
    *,
    pruner: Any = None,
    study_name: str | None = None,
    directions: Sequence[str] | None = None,
) -> Any:
    """A study in memory: maximized, or with ``directions`` one per objective."""
    direction = None if directions else "maximize"
    with _quiet(optuna):
        return optuna.create_study(direction=direction, directions=directions, sampler=sampler,
                                   pruner=pruner, study_name=study_name)  # fmt: skip


def _json_ready(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    return repr(value)


def _sampler_class(optuna: ModuleType, kind: str) -> type:
    return getattr(optuna.samplers, SAMPLERS[kind])  # type: ignore[no-any-return]


def _check_count(name: str, value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= 1; got {value!r}. {what}")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1; got {value!r}. {what}")


def _check_seeded(optuna: ModuleType, sampler: Any, space: OptunaSpace) -> None:
    """Refuse a sampler whose copies draw different first trials (an unseeded random state)."""
    distributions = dict(space.distributions)
    draws = [_new_study(optuna, copy.deepcopy(sampler)).ask(distributions).params for _ in "ab"]
    if draws[0] != draws[1]:
        name = type(sampler).__name__
        raise ValueError(
            f"sampler={name}() draws from an unseeded random state: its trials would change "
            "from run to run and a resume could not replay them. Seed it: "
            f"{name}(seed=0), or pass the name with a seed: Sampler('tpe', ..., seed=0)."
        )


def _check_pruning(optuna: ModuleType, pruner: Any, resource: Any, study_name: Any) -> None:
    """Refuse a pruner without an iteration path, a path without a pruner, and wrong types."""
    if not isinstance(study_name, str) or not study_name:
        raise TypeError(
            f"study_name must be a non-empty str; got {study_name!r}. It names each search's "
            "study (HyperbandPruner assigns brackets by it); pass e.g. study_name='parcv'."
        )
    if pruner is None and resource is None:
        return
    if pruner is None:
        raise ValueError(
            f"resource= gives the steps a pruner's reports are made at; got resource="
            f"{resource!r} without pruner=. Pass a pruner, e.g. "
            "pruner=optuna.pruners.MedianPruner() (optuna.pruners.NopPruner() scores every "
            "path to its end), or drop resource=."
        )
    if isinstance(pruner, str) or not isinstance(pruner, optuna.pruners.BasePruner):
        raise TypeError(
            f"pruner must be an Optuna pruner instance; got {pruner!r}. Pass e.g. "
            "pruner=optuna.pruners.HyperbandPruner(), SuccessiveHalvingPruner() or "
            "MedianPruner()."
        )
    name = type(pruner).__name__
    if resource is None:
        raise ValueError(
            f"pruner={name}() stops a trial at an intermediate step, and a Sampler's steps are "
            "the checkpoints of an iteration path; got resource=None. Pass e.g. "
            "resource=parcv.Iterations('max_iter', up_to=100, every=10)."
        )
    if isinstance(resource, str):
        raise ValueError(
            f"resource={resource!r}: a pruner's steps over rows are not supported; only an "
            "iteration path is. Pass resource=parcv.Iterations(param, up_to=..., every=...), "
            "or search rows with strategy=parcv.Halving() / parcv.Hyperband()."
        )
    if not isinstance(resource, Iterations):
        raise TypeError(
            f"resource must be a parcv.Iterations; got {resource!r}. Pass e.g. "
            "resource=parcv.Iterations('n_estimators', up_to=200, every=10)."
        )
    if resource.patience is not None:
        raise ValueError(
            f"resource={resource!r} has patience={resource.patience!r}: early stopping and "
            f"pruner={name}() would both stop the paths. Drop patience (the pruner decides)."
        )
    if resource.window is not None:
        raise ValueError(
            f"resource={resource!r} has a window, which parcv sets for each round. Drop it."
        )


def _check_path_param(space: OptunaSpace, resource: Iterations, estimator: Any) -> None:
    if hasattr(estimator, "get_params") and resource.param not in estimator.get_params(deep=True):
        raise ValueError(
            f"resource=Iterations({resource.param!r}, ...) names a parameter "
            f"{type(estimator).__name__} does not have. Name its iteration parameter, e.g. "
            "'n_estimators', 'max_iter' or 'model__max_iter' in a pipeline."
        )
    if resource.param in space.distributions:
        raise ValueError(
            f"space names {resource.param!r}, the iteration parameter of resource=: the path "
            "scores every checkpoint of it. Remove it from the space."
        )


def _check_in_order(history: Sequence[FinishedRound], proposed: int) -> None:
    """Refuse a history shorter than the rounds a proposer has proposed."""
    if len(history) < proposed:
        raise ValueError(
            f"got {len(history)} finished rounds after proposing {proposed}: a "
            "proposer reads the rounds it proposed, in order. Start a fresh one to replay."
        )


@dataclass(frozen=True)
class Sampler:
    """Model-based search with an Optuna sampler: ask a batch of trials, run their folds, tell.

    Each round asks ``batch`` trials of an Optuna study, runs every trial's
    folds as units, and tells each trial its mean CV score of the refit
    metric (maximized); the search stops after ``n_trials`` trials and its
    winner is the study's best trial. With ``batch=1`` the trials equal
    Optuna's own ``study.optimize`` with the same sampler and seed on an
    objective returning ``cross_val_score(...).mean()`` on the same folds;
    larger batches run their trials' folds in parallel (see the module's
    notes on how each sampler spreads a batch).

    Parameters
    ----------
    sampler : {"tpe", "nsga2", "cmaes", "gp", "qmc", "random"} or optuna.samplers.BaseSampler
        A name builds that Optuna sampler with ``seed`` and ``options``; an
        instance is used as given (a copy per search), with its own seed.
    n_trials : int
        Trials of each search (of each outer fold's, in nested CV).
    batch : int, default=1
        Trials asked per round, run in parallel before any is told.
    seed : int or None, default=None
        The seed of a sampler given by name. None: drawn from the run's seed
        (``random_state`` of :func:`parcv.search` and :func:`parcv.nested_cv`,
        ``--seed`` or ``[run] seed`` in a spec, ``random_state`` of
        :class:`parcv.RandomizedSearchCV`), a different one for each outer
        fold. Not with an instance (seed it: ``TPESampler(seed=0)``).
    options : dict or None, default=None
        Further arguments of a named sampler's constructor, e.g.
        ``{"n_startup_trials": 5}`` for TPE.
    pruner : optuna.pruners.BasePruner or None, default=None
        Stop poor trials early, as Optuna's pruners do in ``study.optimize``
        (``HyperbandPruner``, ``SuccessiveHalvingPruner``, ``MedianPruner``,
        ...): needs ``resource``. A copy per search.
    resource : Iterations or None, default=None
        With a pruner: the iteration path each trial is scored along. Its
        checkpoints are the steps: at each, the trial reports its mean test
        score over the folds with the iteration count as the step, and stops
        when the pruner says so (see Notes). The space must not hold its
        parameter.
    study_name : str, default="parcv"
        The name of each search's study (every outer fold's and the one on all
        data): ``HyperbandPruner`` assigns a trial its bracket by the study's
        name and the trial's number, so a study of Optuna's own with this name
        draws the same brackets.
    objectives : dict of str to {"maximize", "minimize"} or None, default=None
        Search several objectives at once (a multi-objective study: NSGA-II,
        TPE, random or QMC; not CMA-ES). Each key is a metric of ``scoring`` as
        ``cv_results_`` names it (``"score"`` for one metric, the scoring's
        names for several) or ``"fit_time"`` / ``"score_time"`` (the mean
        time over the folds, in seconds); each value its direction. Each trial
        is told every objective's mean over the folds; the result's front is
        :func:`parcv.pareto_front`. None: one objective, the refit metric,
        maximized. Not with a pruner or ``racing`` (both decide on one value).
    select : callable or None, default=None
        With ``objectives``: which trial of the Pareto front the search ships,
        ``select(front) -> int``, the place in the front
        (:class:`~parcv.strategies.pareto.ParetoFront`, each objective's mean
        and standard error). None: the front trial best on the refit metric
        (``refit=``, which must then be an objective), the first on ties; see
        :func:`parcv.pareto_front` for why. Keyed by its code: a resume with
        another ``select`` is another run.

    Raises
    ------
    ImportError
        If Optuna is not installed (``pip install 'parcv[optuna]'``), or a
        sampler lacks the package it imports (GP: PyTorch; CMA-ES: cmaes).
    TypeError, ValueError
        For a sampler, count, seed or option of the wrong type or value, and
        for an instance that draws from an unseeded random state (its trials
        would change from run to run and a resume could not replay them).

    See Also
    --------
    parcv.strategies.strategy.Strategy : the contract it implements.

    Notes
    -----
    The space (``SearchContext.space``) is converted by
    :func:`check_optuna_space`. A trial whose mean is NaN (a fit failed with
    ``error_score=np.nan``: it raised, or scikit-learn's parameter check
    rejected its values) is told as failed and the search goes on, as
    ``study.optimize(catch=(Exception,))``, even when the trial is alone in
    its round; only a search whose every trial failed is an error. A trial a
    race dropped is told as pruned, with its running mean over the folds it
    was scored on as intermediate values.

    With ``pruner`` and ``resource``, ``batch=1`` equals ``study.optimize``
    with the same sampler, pruner and ``study_name`` on an objective that, for
    each checkpoint ``t`` of the path in turn, fits every fold with ``t``
    iterations, calls ``trial.report(mean over the folds, t)`` and raises
    ``optuna.TrialPruned`` when ``trial.should_prune()``; a failed fit fails
    the trial there, and a trial that reaches the last checkpoint returns its
    mean there: the trials, their states, intermediate values and values are
    the same. A round scores each running trial (a part each) over a window
    of checkpoints, ending at the trial's next rung where its pruner decides
    only there (successive halving, Hyperband), else the first alone, then
    doubling (:mod:`parcv.strategies.rungs`),
    each fold's path grown by the exact shortcuts of the shortcut table where
    they apply: a window continues the last one's fits by a warm start (each
    kept as its pickle's bytes, :class:`~parcv.plan.kept.KeptFit`), once to its
    last checkpoint where the others are read from its stages, and a window
    fitted from scratch is one fit to its last checkpoint read at the others (a
    booster at earlier rounds, staged predictions). The proposer then replays
    the reports checkpoint by checkpoint up to the pruner's first yes; the
    checkpoints scored after it are in ``cv_results_`` but never reported.
    ``cv_results_`` has a row per (trial, checkpoint) scored, with ``trial``
    (its number), ``trial_state`` (``"COMPLETE"``, ``"PRUNED"`` or ``"FAIL"``)
    and ``reported``; :func:`rebuild_pruned_study` gives the study back. With
    ``batch > 1``, up to ``batch`` trials run side by side, a finished one
    replaced by a new trial at the next round, and each round's reports are
    replayed trial by trial in trial order: every run proposes the same.

    With ``objectives``, ``batch=1`` equals ``study.optimize`` of a study with
    those ``directions``, the same sampler and seed, on an objective returning
    the tuple of the objectives' means over the same folds (a fit that fails
    with a NaN ``error_score`` fails the trial, as the objective returning a
    NaN does): the same trials, values and front (``study.best_trials``). A
    score's mean is a function of the folds and the seed, so every backend
    proposes the same trials. A time is not: with ``"fit_time"`` an objective,
    the trials after the first model-based one depend on the times measured
    (a rerun, another backend or a busier machine proposes others), while a
    resume reads the stored times back and replays the same. Equality with
    Optuna is therefore tested on two score metrics; a time objective is tested
    by the front the study makes of the same times.

    Examples
    --------
    >>> strategy = Sampler("tpe", n_trials=20, batch=4, seed=0)
    >>> context = SearchContext((), {"alpha": [0.1, 1.0]}, None, 100, 5, None, "score")
    >>> [r.n_units for r in strategy.schedule(context).rounds]
    [20, 20, 20, 20, 20]
    >>> proposer = strategy.start(context)
    >>> first = proposer.propose([], np.random.SeedSequence(0))
    >>> first.parts[0].ids
    (0, 1, 2, 3)
    """

    sampler: Any
    n_trials: int
    batch: int = 1
    seed: int | None = None
    options: Mapping[str, Any] | None = None
    pruner: Any = None
    resource: Any = None
    study_name: str = "parcv"
    objectives: Mapping[str, str] | None = None
    select: Callable[[ParetoFront], int] | None = None
    name: str = field(default="sampler", init=False)
    # Proposes from the space's distributions, not from a grid's points (the driver asks).
    takes_distributions: bool = field(default=True, init=False, repr=False)
    _prototype: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        optuna = import_optuna()
        _check_count("n_trials", self.n_trials, "Ask for at least one trial.")
        _check_count("batch", self.batch, "Ask at least one trial per round (1: sequential).")
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer))
        ):
            raise TypeError(
                f"seed must be an int in [0, 2**32) or None; got {self.seed!r}. "
                "Pass e.g. seed=0, or None to draw it from the run's seed."
            )
        if self.seed is not None and not 0 <= self.seed < 2**32:
            raise ValueError(
                f"seed must be an int in [0, 2**32) or None; got {self.seed!r}. "
                "Pass e.g. seed=0, or None to draw it from the run's seed."
            )
        if isinstance(self.sampler, str):
            object.__setattr__(self, "_prototype", self._built(optuna, self.seed or 0))
        elif type(self.sampler).__name__ in _REFUSED:
            raise TypeError(
                f"sampler={type(self.sampler).__name__} stops its study once its points run out, "
                "which Optuna allows only inside study.optimize, not through ask and tell. "
                "Search a grid with parcv.search(estimator, grid, ...): every point in one round."
            )
        elif isinstance(self.sampler, optuna.samplers.BaseSampler):
            self._check_instance()
            object.__setattr__(self, "_prototype", copy.deepcopy(self.sampler))
        else:
            raise TypeError(
                f"sampler must be one of {sorted(SAMPLERS)} or an optuna sampler instance; got "
                f"{self.sampler!r}. For example Sampler('tpe', n_trials=50, seed=0) or "
                "Sampler(optuna.samplers.TPESampler(seed=0), n_trials=50)."
            )
        _check_pruning(optuna, self.pruner, self.resource, self.study_name)
        self._check_objectives()
        needs = _NEEDS.get(type(self._prototype).__name__)
        if needs is not None and importlib.util.find_spec(needs[0]) is None:
            raise ImportError(
                f"Optuna's {type(self._prototype).__name__} needs {needs[0]}, which is not "
                f"installed. Install it with {needs[1]}, or pick another sampler."
            )

    def _check_objectives(self) -> None:
        """Check ``objectives`` and ``select``; refuse them with a pruner."""
        if self.objectives is None:
            if self.select is not None:
                raise ValueError(
                    f"select= picks a trial of the Pareto front of several objectives; got "
                    f"select={self.select!r} without objectives=. Pass objectives=, e.g. "
                    "{'accuracy': 'maximize', 'fit_time': 'minimize'}, or drop select=."
                )
            return
        object.__setattr__(self, "objectives", check_objectives(self.objectives))
        if self.select is not None and not callable(self.select):
            raise TypeError(
                f"select must be a callable select(front) -> int or None; got {self.select!r}."
            )
        if self.pruner is not None:
            raise ValueError(
                f"pruner={type(self.pruner).__name__}() decides on one value per step, and "
                f"objectives= asks for {len(self.objectives)} (Optuna prunes no multi-objective "
                "study). Drop pruner= and resource=, or drop objectives=."
            )

    def _check_instance(self) -> None:
        if self.seed is not None or self.options:
            raise ValueError(
                f"seed and options configure a sampler given by name; got seed={self.seed!r}, "
                f"options={self.options!r} with the instance {type(self.sampler).__name__}. "
                f"Give them to its constructor instead: {type(self.sampler).__name__}(seed=0, ...)."
            )

    def _built(self, optuna: ModuleType, seed: int) -> Any:
        """The named sampler with ``seed`` and the options."""
        if self.sampler not in SAMPLERS:
            raise ValueError(
                f"sampler must be one of {sorted(SAMPLERS)} or an optuna sampler instance; got "
                f"{self.sampler!r}. Pass e.g. sampler='tpe'."
            )
        cls = _sampler_class(optuna, self.sampler)
        options = dict(self.options or {})
        accepted = set(inspect.signature(cls).parameters) - {"seed"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise ValueError(
                f"options {unknown} are not arguments of optuna's {cls.__name__}; its arguments "
                f"are {sorted(accepted)} (the seed is Sampler's seed=). Fix the option's name."
            )
        if self.sampler == "tpe" and self.batch > 1:
            # Older Optuna leaves it off (and calls it experimental): a batch would draw
            # its trials from one unchanged model.
            options.setdefault("constant_liar", True)
        with _ignore_experimental(optuna):
            # parcv pins a named sampler's behaviour by its own tests (QMC is "experimental").
            return cls(seed=seed, **options)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Sampler:
        """Build a sampler strategy from a spec's table.

        Parameters
        ----------
        config : dict
            ``kind`` (a name of :data:`SAMPLERS`) and ``n_trials``; optional
            ``batch`` and ``seed``; any other key is an argument of the
            Optuna sampler's constructor (e.g. ``n_startup_trials``).

            ``pruner`` is a table of ``kind`` (a name of :data:`PRUNERS`) and
            the pruner's arguments, ``resource`` a table of
            :class:`~parcv.plan.iterations.Iterations`' fields, ``study_name``
            the study's name.

            ``objectives`` is a table of metric name to ``"maximize"`` or
            ``"minimize"`` (a spec has no ``select``: the default rule ships).

        Returns
        -------
        Sampler

        Examples
        --------
        >>> s = Sampler.from_config({"kind": "tpe", "seed": 0, "n_trials": 60, "batch": 8})
        >>> (s.sampler, s.seed, s.n_trials, s.batch)
        ('tpe', 0, 60, 8)
        >>> s = Sampler.from_config({"kind": "tpe", "seed": 0, "n_trials": 60,
        ...                          "pruner": {"kind": "median", "n_warmup_steps": 5},
        ...                          "resource": {"param": "max_iter", "up_to": 100, "every": 10}})
        >>> type(s.pruner).__name__, s.resource.checkpoints[:3]
        ('MedianPruner', (10, 20, 30))
        >>> s = Sampler.from_config({"kind": "nsga2", "n_trials": 20,
        ...                          "objectives": {"r2": "maximize", "fit_time": "minimize"}})
        >>> s.objectives
        {'r2': 'maximize', 'fit_time': 'minimize'}
        """
        if not isinstance(config, Mapping):
            raise TypeError(
                f"sampler must be a table such as {{kind = 'tpe', n_trials = 60}}; got {config!r}."
            )
        missing = [key for key in ("kind", "n_trials") if key not in config]
        if missing:
            raise ValueError(
                f"the sampler table needs {missing}; got {dict(config)!r}. For example: "
                "sampler = {kind = 'tpe', seed = 0, n_trials = 60, batch = 8}."
            )
        if not isinstance(config["kind"], str):
            raise TypeError(
                f"sampler.kind must be one of {sorted(SAMPLERS)}; got {config['kind']!r}."
            )
        own = ("kind", "n_trials", "batch", "seed", "pruner", "resource", "study_name",
               "objectives")  # fmt: skip
        options = {k: v for k, v in config.items() if k not in own}
        return cls(
            config["kind"],
            n_trials=config["n_trials"],
            batch=config.get("batch", 1),
            seed=config.get("seed"),
            options=options or None,
            pruner=_pruner_from_config(config.get("pruner")),
            resource=_resource_from_config(config.get("resource")),
            study_name=config.get("study_name", "parcv"),
            objectives=config.get("objectives"),
        )

    def config(self) -> dict[str, Any]:
        """Return the settings as JSON-ready data (what a resume compares).

        ``token`` identifies the sampler exactly (its class, arguments and
        random state), ``optuna`` the version that draws the trials.

        Examples
        --------
        >>> c = Sampler("random", n_trials=10, seed=3).config()
        >>> (c["sampler"], c["seed"], c["n_trials"], c["batch"])
        ('RandomSampler', 3, 10, 1)
        """
        optuna = import_optuna()
        return {
            "name": self.name,
            "joins": "table",  # every trial on the same folds: one table, rows by trial
            "sampler": type(self._prototype).__name__,
            "kind": self.sampler if isinstance(self.sampler, str) else None,
            "options": _json_ready(dict(self.options or {})),
            "seed": None if self.seed is None else int(self.seed),
            "n_trials": int(self.n_trials),
            "batch": int(self.batch),
            "optuna": str(optuna.__version__),
            "token": token_hex(self._prototype),
            **self._pruning_config(),
            **self._objectives_config(),
        }

    def _objectives_config(self) -> dict[str, Any]:
        """The objectives and the rule over the front; nothing with one objective."""
        if self.objectives is None:
            return {}
        select = self.select
        return {
            "objectives": dict(self.objectives),
            "select": None if select is None else getattr(select, "__qualname__", repr(select)),
            "select_token": None if select is None else token_hex(select),
        }

    def _pruning_config(self) -> dict[str, Any]:
        """The pruner's settings; nothing without one (a plain sampler's config is unchanged)."""
        if self.pruner is None:
            return {}
        it = self.resource
        return {
            "pruner": type(self.pruner).__name__,
            "pruner_token": token_hex(self.pruner),
            "study_name": self.study_name,
            # Not "param"/"up_to" at the top: those name an early-stopping path to the results.
            "resource": {"param": it.param, "up_to": it.up_to, "every": it.every,
                         "method": it.method},
        }  # fmt: skip

    @property
    def iterations(self) -> Iterations | None:
        """The iteration path its trials are scored on (with a pruner), else None.

        The strategy contract's optional member: each part then scores its
        trials' paths over the checkpoints of its ``window``.
        """
        return self.resource if self.pruner is not None else None

    @property
    def races(self) -> bool:
        """Whether ``racing=`` applies.

        Not with a pruner, which stops trials itself, nor with several objectives (a race
        drops a trial on one metric).
        """
        return self.pruner is None and self.objectives is None

    def start(self, context: SearchContext) -> Proposer:
        """Return a fresh proposer (its own study) for one search."""
        space = check_optuna_space(context.space)
        _check_names(space, context.estimator)
        if not isinstance(self.sampler, str):
            _check_seeded(import_optuna(), self._prototype, space)
        if self.pruner is not None:
            _check_path_param(space, self.resource, context.estimator)
            return _PruningProposer(self, space, context)
        if self.objectives is not None:
            self._check_objective_names(context)
            _check_multi_objective(import_optuna(), self, space)
        return _StudyProposer(self, space, context)

    def _check_objective_names(self, context: SearchContext) -> None:
        """Refuse objectives the search does not score, and a default rule without its metric."""
        objectives = dict(self.objectives or {})
        known = [*context.metrics, *TIMES]
        unknown = [n for n in objectives if context.metrics and n not in known]
        if unknown:
            named = " (one metric is named 'score')" if context.metrics == ("score",) else ""
            raise ValueError(
                f"objectives names {unknown}, which the search does not score: its metrics are "
                f"{list(context.metrics)}{named}, and {list(TIMES)} are the fit and score "
                "times. Name them as cv_results_ does (mean_test_<name>), or add them to scoring."
            )
        if self.select is None and context.metric not in objectives:
            raise ValueError(
                f"the refit metric {context.metric!r} is not among objectives "
                f"{list(objectives)}: by default the search ships the trial of the Pareto "
                "front best on the refit metric. Add it to objectives, name another with refit=, "
                "or pass select=, a callable that picks a trial of the front."
            )

    def schedule(self, context: SearchContext) -> Schedule:
        """Return the rounds: ``batch`` trials each (the last the rest), all folds of each.

        A bound: the trials are proposed as the rounds before them finish, and a
        race may drop some of a trial's folds.
        """
        check_optuna_space(context.space)
        label = type(self._prototype).__name__
        if self.pruner is not None:
            return self._pruning_schedule(context, label)
        rounds = []
        for index, first in enumerate(range(0, self.n_trials, self.batch)):
            n = min(self.batch, self.n_trials - first)
            after = "" if index == 0 else f", proposed after round {index - 1}"
            text = f"round {index}: {n} {label} trials x {context.n_splits} folds{after}"
            rounds.append(RoundBound(n, n * context.n_splits, text))
        return Schedule(tuple(rounds), exact=False, n_candidates=self.n_trials)

    def _pruning_schedule(self, context: SearchContext, label: str) -> Schedule:
        """A bound: every trial scored over every window (a pruned trial stops sooner).

        Each trial's windows end at its pruner's rungs, or double
        (:mod:`parcv.strategies.rungs`). A window's paths are fitted once to
        its last checkpoint where a shortcut grows them (one fit per trial and
        fold), else once per checkpoint.
        """
        it, k, param = self.resource, context.n_splits, self.resource.param
        windows = TrialWindows(self.pruner, self.study_name, it)
        rounds = []
        for first in range(0, self.n_trials, self.batch):
            n = min(self.batch, self.n_trials - first)
            trials = f"trial {first}" if n == 1 else f"trials {first}-{first + n - 1}"
            each = [windows.of(number) for number in range(first, first + n)]
            for w in range(max(map(len, each))):
                at = [t[w] for t in each if w < len(t)]
                counts = ", ".join(dict.fromkeys(
                    str(c[0]) if len(c) == 1 else f"{c[0]}..{c[-1]}" for c in at))  # fmt: skip
                n_paths = len(at)
                text = (f"{trials} ({label}, {type(self.pruner).__name__}): window {w}, "
                        f"{param}={counts}, {n_paths} path{'s' * (n_paths > 1)} x {k} folds, "
                        "unless pruned before")  # fmt: skip
                rounds.append(RoundBound(n_paths, sum(map(len, at)) * k, text))
        return Schedule(tuple(rounds), exact=False, n_candidates=self.n_trials)

    def new_pruner(self) -> Any:
        """A fresh copy of the pruner for one search (Hyperband sets itself up on first use)."""
        return copy.deepcopy(self.pruner)

    def sampler_seed(self, seed: np.random.SeedSequence) -> int:
        """The seed of a named sampler built with ``seed=None``, from a round's seed.

        Every round of one search gives the same (the round index, the last
        entry of ``spawn_key`` as ``round_seed`` makes it, is left out).
        """
        search = np.random.SeedSequence(seed.entropy, spawn_key=tuple(seed.spawn_key)[:-1])
        return int(search.generate_state(1)[0])

    def new_sampler(self, seed: np.random.SeedSequence) -> Any:
        """A fresh copy of the sampler for one search."""
        if isinstance(self.sampler, str) and self.seed is None:
            return self._built(import_optuna(), self.sampler_seed(seed))
        return copy.deepcopy(self._prototype)


@contextlib.contextmanager
def _ignore_experimental(optuna: ModuleType) -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        yield


def _check_multi_objective(optuna: ModuleType, strategy: Sampler, space: OptunaSpace) -> None:
    """Refuse a sampler that cannot run a study of several objectives (CMA-ES), before any fit."""
    directions = list((strategy.objectives or {}).values())
    study = _new_study(optuna, copy.deepcopy(strategy._prototype), directions=directions)
    distributions = dict(space.distributions)
    try:
        with _quiet(optuna), _ignore_experimental(optuna):
            for _ in range(2):  # a relative sampler first samples from the second trial
                trial = study.ask(distributions)
                study.tell(trial, [0.0] * len(directions))
    except ValueError as err:
        if "multi-objective" not in str(err):
            raise
        name = type(strategy._prototype).__name__
        raise ValueError(
            f"sampler={name} cannot search several objectives (Optuna: {err}). Pass "
            "sampler='nsga2', 'tpe' or 'random' with objectives=, or drop objectives=."
        ) from err


def _check_names(space: OptunaSpace, estimator: Any) -> None:
    if not hasattr(estimator, "get_params"):
        return
    valid = estimator.get_params(deep=True)
    unknown = [name for name in space.distributions if name not in valid]
    if unknown:
        raise ValueError(
            f"space names {unknown}, which {type(estimator).__name__} does not have; its "
            f"parameters are {sorted(valid)}. Fix the names (a pipeline's are 'step__param')."
        )


# ---------------------------------------------------------------- the proposer


@dataclass(frozen=True)
class _Outcome:
    """What a trial is told: state, value and the row of the part that gave the value."""

    number: int
    state: str  # "COMPLETE", "FAIL" or "PRUNED"
    value: float
    row: int
    steps: tuple[float, ...] = ()  # a dropped trial's running means, fold by fold
    values: tuple[float, ...] = ()  # with several objectives: each one's mean, in their order


def _outcomes(finished: FinishedPart) -> list[_Outcome]:
    """One outcome per trial of the part, in trial order (the order they are told in)."""
    ids = np.asarray(finished.ids)
    means = np.asarray(finished.means, dtype=np.float64)
    dropped = np.asarray(finished.dropped, dtype=bool)
    outcomes = []
    for number in finished.part.ids:
        rows = np.flatnonzero(ids == number)
        if rows.size == 0:
            raise ValueError(
                f"the finished part has no row of trial {number}: its ids are "
                f"{tuple(finished.ids)}. A finished part must score every candidate it proposed."
            )
        kept = rows[~dropped[rows]]
        if kept.size == 0:
            scores = np.asarray(finished.scores[rows[0]], dtype=np.float64)
            done = scores[: int(np.argmax(np.isnan(scores)))] if np.isnan(scores).any() else scores
            steps = tuple(float(v) for v in np.cumsum(done) / np.arange(1, done.size + 1))
            outcomes.append(_Outcome(int(number), "PRUNED", math.nan, int(rows[0]), steps))
        elif np.isnan(means[kept]).all():
            outcomes.append(_Outcome(int(number), "FAIL", math.nan, int(kept[0])))
        else:
            best = int(kept[np.nanargmax(means[kept])])  # the first of equal means
            outcomes.append(_Outcome(int(number), "COMPLETE", float(means[best]), best))
    return outcomes


def _objective_outcomes(finished: FinishedPart, objectives: Sequence[str]) -> list[_Outcome]:
    """One outcome per trial of the part with several objectives: NaN in any one fails it.

    A trial is one row (no race runs beside several objectives).
    """
    means = np.column_stack([np.asarray(finished.metric_means[n], dtype=np.float64)
                             for n in objectives])  # fmt: skip
    ids = list(finished.ids)
    outcomes = []
    for number in finished.part.ids:
        row = ids.index(number)
        values = tuple(float(v) for v in means[row])
        failed = any(math.isnan(v) for v in values)
        outcomes.append(_Outcome(int(number), "FAIL" if failed else "COMPLETE",
                                 math.nan, row, values=() if failed else values))  # fmt: skip
    return outcomes


def _told(outcomes: Sequence[_Outcome]) -> list[dict[str, Any]]:
    return [
        {
            "trial": o.number,
            "state": o.state,
            **({"values": _json_ready(list(o.values))} if o.values else
               {"value": _json_ready(o.value) if o.state == "COMPLETE" else None}),
        }
        for o in outcomes
    ]  # fmt: skip


class _StudyProposer:
    """One search's study: asks a round of trials, tells the finished ones.

    With several objectives the study has their directions, each trial is told
    every objective's mean, and the winner is a trial of the Pareto front.
    """

    def __init__(self, strategy: Sampler, space: OptunaSpace, context: SearchContext) -> None:
        self._strategy = strategy
        self._space = space
        self._context = context
        self._objectives = dict(strategy.objectives or {})
        self._optuna = import_optuna()
        self._study: Any = None  # made at the first proposal (a seed may come from the run)
        self._rounds: list[Round] = []
        self._trials: list[list[Any]] = []
        self._n_told = 0
        self._last_told: list[dict[str, Any]] = []

    def propose(
        self, history: Sequence[FinishedRound], seed: np.random.SeedSequence
    ) -> Round | None:
        """Tell the rounds not yet told, then ask the next ``batch`` trials (None when done)."""
        if len(history) == len(self._rounds) - 1:  # asked again before the round finished
            self._check_same(history)
            return self._rounds[-1]
        self._catch_up(history, seed)
        if sum(len(t) for t in self._trials) >= self._strategy.n_trials:
            return None
        return self._ask(seed)

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        """The study's best trial: the first complete one with the highest value.

        With several objectives: the trial of the Pareto front that ``select``
        names, or the one best on the refit metric.
        """
        if self._objectives:
            return self._choose_on_front(history)
        best: tuple[float, int, int] | None = None
        for index, finished in enumerate(history):
            for outcome in _outcomes(_one_part(finished)):
                if outcome.state == "COMPLETE" and (best is None or outcome.value > best[0]):
                    best = (outcome.value, index, outcome.row)
        return Choice(0, 0, 0) if best is None else Choice(best[1], 0, best[2])

    def _choose_on_front(self, history: Sequence[FinishedRound]) -> Choice:
        """The front's trial to ship; its trials are the decision (``Choice(0, 0, 0)``: none)."""
        front, where = _front_of(history, self._objectives, self._context.n_splits)
        if not len(front):
            return Choice(0, 0, 0)  # every trial failed: the driver says so, with the errors
        place = select_from(front, self._strategy.select, self._context.metric)
        decision = {"front": list(front.trials), "selected": front.trials[place]}
        return Choice(*where[place], decision=decision)

    def _check_same(self, history: Sequence[FinishedRound]) -> None:
        for index, finished in enumerate(history):
            if finished.round.parts[0].ids != self._rounds[index].parts[0].ids:
                raise ValueError(
                    f"history[{index}] is not the round this sampler proposed (trials "
                    f"{finished.round.parts[0].ids}, not {self._rounds[index].parts[0].ids}). "
                    "Hand a proposer the rounds it proposed, in order; start a fresh one to replay."
                )

    def _catch_up(self, history: Sequence[FinishedRound], seed: np.random.SeedSequence) -> None:
        """Ask (replaying) and tell every finished round this study has not told yet."""
        _check_in_order(history, len(self._rounds))
        self._check_same(history[: len(self._rounds)])
        for index in range(self._n_told, len(history)):
            finished = history[index]
            if index == len(self._rounds):
                replayed = self._ask(seed)
                if dict(replayed.decision) != dict(finished.round.decision) or (
                    replayed.parts[0].ids != finished.round.parts[0].ids
                ):
                    raise ValueError(
                        f"history[{index}] is not the round this sampler proposes there: its "
                        "sampler, seed or space differ. Hand a proposer only its own rounds."
                    )
            self._tell(index, _one_part(finished))

    def _ask(self, seed: np.random.SeedSequence) -> Round:
        if self._study is None:
            directions = list(self._objectives.values()) or None
            self._study = _new_study(self._optuna, self._strategy.new_sampler(seed),
                                     directions=directions)  # fmt: skip
        asked = sum(len(t) for t in self._trials)
        n = min(self._strategy.batch, self._strategy.n_trials - asked)
        distributions = dict(self._space.distributions)
        trials = [self._study.ask(distributions) for _ in range(n)]
        ids = tuple(int(t.number) for t in trials)
        candidates = tuple(self._space.decode(t.params) for t in trials)
        label = f"trial {ids[0]}" if n == 1 else f"trials {ids[0]}-{ids[-1]}"
        decision = {
            "sampler": type(self._study.sampler).__name__,
            "trials": list(ids),
            "params": [_json_ready(dict(t.params)) for t in trials],
            "told": self._last_told,
        }
        self._trials.append(trials)
        self._rounds.append(Round((Part(candidates, ids, label=label),), decision))
        return self._rounds[-1]

    def _tell(self, index: int, finished: FinishedPart) -> None:
        State = self._optuna.trial.TrialState
        if self._objectives:
            outcomes = _objective_outcomes(finished, list(self._objectives))
        else:
            outcomes = _outcomes(finished)
        for trial, outcome in zip(self._trials[index], outcomes, strict=True):
            if outcome.values:
                self._study.tell(trial, list(outcome.values))
            elif outcome.state == "COMPLETE":
                self._study.tell(trial, outcome.value)
            elif outcome.state == "FAIL":
                self._study.tell(trial, state=State.FAIL)
            else:
                for step, value in enumerate(outcome.steps, start=1):
                    trial.report(value, step)
                self._study.tell(trial, state=State.PRUNED)
        self._n_told = index + 1
        self._last_told = _told(outcomes)


def _front_of(
    history: Sequence[FinishedRound], objectives: Mapping[str, str], n_splits: int
) -> tuple[ParetoFront, list[tuple[int, int, int]]]:
    """The Pareto front of a search's trials, and each front trial's (round, part, row)."""
    names = list(objectives)
    numbers, params, means, stds, where = [], [], [], [], []
    for index, finished in enumerate(history):
        part = _one_part(finished)
        for row, number in enumerate(part.ids):
            numbers.append(int(number))
            params.append(dict(part.params[row]))
            means.append([float(part.metric_means[n][row]) for n in names])
            stds.append([float(part.metric_stds[n][row]) for n in names])
            where.append((index, 0, row))
    values = np.asarray(means, dtype=np.float64).reshape(-1, len(names))
    rows = np.flatnonzero(nondominated(values, list(objectives.values())))
    scale = math.sqrt(n_splits - 1) if n_splits > 1 else math.nan
    ses = np.asarray(stds, dtype=np.float64).reshape(-1, len(names)) / scale
    front = ParetoFront(tuple(names), tuple(objectives.values()),
                        tuple(numbers[r] for r in rows), tuple(params[r] for r in rows),
                        values[rows], ses[rows])  # fmt: skip
    return front, [where[r] for r in rows]


def _one_part(finished: FinishedRound) -> FinishedPart:
    if len(finished.parts) != 1:
        raise ValueError(
            f"a sampler's round has one part; got {len(finished.parts)}. Hand the proposer the "
            "rounds it proposed."
        )
    return finished.parts[0]


# ---------------------------------------------------------------- pruning


@dataclass
class _Running:
    """A trial asked and not yet told: the window of the path it scores next."""

    trial: Any
    windows: list[tuple[int, ...]]  # the checkpoints of each of its rounds (rungs.py)
    window: int = 0
    step: int | None = None  # the last step it reported
    grows: str | None = None  # the warm_start parameter that continues its windows exactly


@dataclass(frozen=True)
class _Told:
    """A finished trial: its state, value and where its last reported row is."""

    number: int
    state: str  # "COMPLETE", "PRUNED" or "FAIL"
    value: float
    step: int | None  # the last step reported (None: none)
    where: tuple[int, int, int] | None  # (round, part, row) of a complete trial's last row


class _PruningProposer:
    """One search's study with a pruner: each round scores its running trials' next windows.

    At batch 1 this is ``study.optimize`` on an objective that, for each
    checkpoint of the path in turn, reports the mean over the folds at that
    iteration count (the step) and stops when ``trial.should_prune()`` says so:
    a round scores a window of the checkpoints, and the proposer then replays
    the reports and questions of each checkpoint in order, up to the first
    ``True`` (the checkpoints scored after it are never reported). A trial
    that reaches the last checkpoint is told that checkpoint's mean; a
    checkpoint with a failed fold (a NaN score) fails the trial there, as an
    objective whose fit raises. With ``batch > 1`` up to ``batch`` trials run
    side by side: finished ones are replaced by newly asked trials at the next
    round, and a round's reports are replayed trial by trial in trial order,
    so every run proposes the same rounds.
    """

    def __init__(self, strategy: Sampler, space: OptunaSpace, context: SearchContext) -> None:
        self._strategy = strategy
        self._space = space
        self._context = context
        self._optuna = import_optuna()
        self._iterations: Iterations = strategy.resource
        self._windows = TrialWindows(strategy.pruner, strategy.study_name, self._iterations)
        self._study: Any = None
        self._rounds: list[Round] = []
        self._running: dict[int, _Running] = {}
        self._asked = 0
        self._n_done = 0
        self._told: list[_Told] = []  # in the order the study was told
        self._last_told: list[dict[str, Any]] = []

    def propose(
        self, history: Sequence[FinishedRound], seed: np.random.SeedSequence
    ) -> Round | None:
        """Replay the rounds not yet read, then propose the running trials' next windows."""
        if self._rounds and len(history) == len(self._rounds) - 1:
            self._check_same(history)
            return self._rounds[-1]
        _check_in_order(history, len(self._rounds))
        self._check_same(history[: len(self._rounds)])
        for index in range(self._n_done, len(history)):
            finished = history[index]
            if index == len(self._rounds):
                replayed = self._next(seed)
                if replayed is None or not _same_parts(replayed, finished.round):
                    raise ValueError(
                        f"history[{index}] is not the round this sampler proposes there: its "
                        "sampler, pruner, seed or space differ. Hand a proposer only its own "
                        "rounds."
                    )
            self._read(index, finished)
        return self._next(seed)

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        """The study's best trial: the first told of the complete ones with the highest value.

        Raises
        ------
        ValueError
            No trial ran to the end of the path: every one was pruned (or failed,
            with at least one pruned).
        """
        if self._n_done != len(history):
            raise ValueError(
                f"choose() was handed {len(history)} finished rounds; this proposer read "
                f"{self._n_done}. Call propose() with them first, until it returns None."
            )
        best: _Told | None = None
        for told in self._told:
            if told.state == "COMPLETE" and (best is None or told.value > best.value):
                best = told
        last = {"told": self._last_told}  # no next round's decision tells these
        if best is not None and best.where is not None:
            return Choice(*best.where, decision=last)
        n_pruned = sum(t.state == "PRUNED" for t in self._told)
        if n_pruned == 0:  # every fit failed: the driver says so, with the errors
            return Choice(0, 0, 0, decision=last)
        raise ValueError(
            f"every trial was pruned or failed ({n_pruned} pruned, "
            f"{len(self._told) - n_pruned} failed): none reached "
            f"{self._iterations.param}={self._iterations.all_checkpoints[-1]}, so there is no "
            f"trial to choose. Let {type(self._strategy.pruner).__name__} complete some trials "
            "first (e.g. its n_startup_trials, min_resource or bootstrap_count), or ask for "
            "more trials."
        )

    def _check_same(self, history: Sequence[FinishedRound]) -> None:
        for index, finished in enumerate(history):
            if not _same_parts(self._rounds[index], finished.round):
                raise ValueError(
                    f"history[{index}] is not the round this sampler proposed. Hand a proposer "
                    "the rounds it proposed, in order; start a fresh one to replay."
                )

    def _next(self, seed: np.random.SeedSequence) -> Round | None:
        """Ask new trials into the free places, then the round of every running trial."""
        s = self._strategy
        if self._study is None:
            self._study = _new_study(self._optuna, s.new_sampler(seed), pruner=s.new_pruner(),
                                     study_name=s.study_name)  # fmt: skip
        distributions = dict(self._space.distributions)
        asked = []
        while len(self._running) < s.batch and self._asked < s.n_trials:
            trial = self._study.ask(distributions)
            grows = continues_exactly(self._context.estimator, [self._space.decode(trial.params)],
                                      self._iterations.param,
                                      n_samples=self._context.n_samples)  # fmt: skip
            number = int(trial.number)
            self._running[number] = _Running(trial, self._windows.of(number), grows=grows)
            self._asked += 1
            asked.append(trial)
        if not self._running:
            return None
        parts = [self._part(n, r) for n, r in sorted(self._running.items())]
        decision = {
            "sampler": type(self._study.sampler).__name__,
            "pruner": type(s.pruner).__name__,
            "trials": [n for p in parts for n in p.ids],
            "windows": {str(n): r.window for n, r in sorted(self._running.items())},
            "asked": [int(t.number) for t in asked],
            "params": [_json_ready(dict(t.params)) for t in asked],
            "told": self._last_told,
        }
        self._rounds.append(Round(tuple(parts), decision))
        return self._rounds[-1]

    def _part(self, number: int, running: _Running) -> Part:
        """A trial's next window: one part per trial, so its next one continues its fits.

        Where a warm start continues the path exactly (the shortcut table's
        ``"continuation"`` rows), each fold's estimator at the window's last
        checkpoint is kept (pickled by its worker) and the next window grows it
        from there: the trial's fits grow to its last window's end once. Elsewhere (a booster,
        a fit read back from a store) each window fits from scratch.
        """
        w, grows, windows = running.window, running.grows, running.windows
        window = windows[w]
        last = w == len(windows) - 1
        before = None if w == 0 or grows is None else (len(windows[w - 1]) - 1,)
        return Part((self._space.decode(running.trial.params),), (number,), resource=window[-1],
                    window=window, label=f"trial {number}", grows=grows, continues=before,
                    keep_fitted=grows is not None and not last)  # fmt: skip

    def _read(self, index: int, finished: FinishedRound) -> None:
        """Replay a finished round's reports, trial by trial in trial order; tell the ended."""
        rows: dict[int, tuple[int, FinishedPart, list[int]]] = {}
        param = self._iterations.param
        for p, part in enumerate(finished.parts):
            ids = list(part.ids)
            for number in part.part.ids:
                mine = [r for r in range(len(ids)) if ids[r] == number]
                mine.sort(key=lambda r: int(part.params[r][param]))
                rows[int(number)] = (p, part, mine)
        told = []
        for number in sorted(rows):
            p, part, mine = rows[number]
            outcome = self._replay(number, index, p, part, mine)
            if outcome is None:
                self._running[number].window += 1
                continue
            del self._running[number]
            self._told.append(outcome)
            told.append({"trial": number, "state": outcome.state, "step": outcome.step,
                         "value": _json_ready(outcome.value)
                         if outcome.state != "FAIL" else None})  # fmt: skip
        self._n_done = index + 1
        self._last_told = told

    def _replay(
        self, number: int, index: int, p: int, part: FinishedPart, rows: list[int]
    ) -> _Told | None:
        """One trial's window: report each checkpoint's mean and ask; None if it runs on."""
        State = self._optuna.trial.TrialState
        running = self._running[number]
        trial, step = running.trial, running.step
        last = self._iterations.all_checkpoints[-1]
        for r in rows:
            count = int(part.params[r][self._iterations.param])
            mean = float(part.means[r])
            if np.isnan(np.asarray(part.scores[r], dtype=np.float64)).any() or math.isnan(mean):
                self._study.tell(trial, state=State.FAIL)
                return _Told(number, "FAIL", math.nan, step, None)
            trial.report(mean, count)
            step = running.step = count
            if trial.should_prune():
                self._study.tell(trial, state=State.PRUNED)
                return _Told(number, "PRUNED", mean, step, None)
            if count == last:
                self._study.tell(trial, mean)
                return _Told(number, "COMPLETE", mean, step, (index, p, r))
        return None


def _same_parts(a: Round, b: Round) -> bool:
    """Whether two rounds propose the same trials (their parameters too) over the same windows.

    Trial numbers alone are the same for any sampler: the decision holds the parameters
    of the trials asked and what was told, as JSON.
    """
    if a is b:  # the round this proposer made, handed back: nothing to compare
        return True
    return (
        len(a.parts) == len(b.parts)
        and all(x.ids == y.ids and x.window == y.window
                for x, y in zip(a.parts, b.parts, strict=True))
        and dict(a.decision) == dict(b.decision)
    )  # fmt: skip
