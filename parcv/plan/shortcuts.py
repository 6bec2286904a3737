"""Shortcuts: one table of when reading one fit at several counts equals separate fits.

parcv reads one fit at several iteration counts where a fit per count would
give the same numbers:

- ``"booster"``: an xgboost or lightgbm model fitted with the last count,
  read at earlier rounds through ``iteration_range`` / ``num_iteration``;
- ``"staged"``: a boosting model fitted with the last count, read at earlier
  stages through ``staged_predict`` (``staged_predict_proba``, ...);
- ``"warm_start"``: a model grown along an iteration path with
  ``warm_start=True``, from one checkpoint to the next;
- ``"partial_fit"``: one ``partial_fit`` epoch over the fold's training rows
  per iteration, read as ``fit(max_iter=t)``;
- ``"continuation"``: a successive-halving rung that continues a promoted
  candidate's fits of the rung before by a warm start.

:data:`SHORTCUTS` declares, per kind, the exact classes it covers and the
conditions under which the shortcut gives the scores of separate fits from
scratch bit for bit (a property-based test per row draws the settings that
could break it: ``tests/plan/test_shortcut_properties.py``). A row names
classes, never a module or a base class: ``XGBRFRegressor`` subclasses
``XGBRegressor`` yet keeps all its trees in one boosting round, and a
subclass of one's own may change what ``fit`` does. :func:`exact_shortcut`
answers for one configured estimator: a :class:`Shortcut` where its class is
listed and every condition holds, else a :class:`Fallback` that says why;
outside the table (subclasses included) nothing is assumed, and parcv fits
every count from scratch. A fit with ``random_state=None`` draws
fresh randomness, so that no two separate fits are equal: where a family's
fit draws, such a model takes no shortcut either.

A ``partial_fit`` path means ``fit(max_iter=t)``, as its candidate's
``max_iter=t`` (and the refit) say; the epochs are only its shortcut, taken
where they are that fit: no shuffling, no tolerance or early stop that could
end ``fit`` sooner, and no weight rescaling or averaging (SGD's L2 penalty
scales the weights within one call of ``fit``, which ``partial_fit`` epochs
do not reproduce to the last bit).
"""

from __future__ import annotations

import logging
import numbers
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sklearn.base import clone
from sklearn.ensemble import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    BaggingClassifier,
    BaggingRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    IsolationForest,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import Perceptron, SGDClassifier, SGDRegressor
from sklearn.neural_network import MLPClassifier, MLPRegressor

__all__ = [
    "KINDS",
    "SHORTCUTS",
    "Condition",
    "Fallback",
    "Rule",
    "Shortcut",
    "booster_library",
    "continues_exactly",
    "decide",
    "exact_shortcut",
    "given_seed",
    "grows_by_warm_start",
    "listed_class",
    "log_fallbacks",
]

KINDS = ("booster", "staged", "warm_start", "partial_fit", "continuation")

_LOG = logging.getLogger("parcv")

# What each kind does, for the messages.
_WHAT = {
    "booster": "reading the booster at earlier rounds",
    "staged": "reading staged predictions",
    "warm_start": "growing the model by warm start along the path",
    "partial_fit": "partial_fit epochs read as fit(max_iter=t)",
    "continuation": "continuing a promoted candidate's fits by warm start",
}

# HistGradientBoosting: early_stopping="auto" is on above this many training rows, and its
# binning subsamples (drawing rows) above the other.
_HGB_AUTO_EARLY_STOP = 10_000
_HGB_BIN_SUBSAMPLE = 200_000


@dataclass(frozen=True, slots=True)
class Shortcut:
    """A shortcut that gives the scores of separate fits from scratch, bit for bit.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    family : str
        The classes of the row of :data:`SHORTCUTS` whose conditions hold
        (:attr:`Rule.family`).
    """

    kind: str
    family: str


@dataclass(frozen=True, slots=True)
class Fallback:
    """No exact shortcut: every count is fitted from scratch.

    Parameters
    ----------
    kind : str
        The shortcut asked for, one of :data:`KINDS`.
    reason : str
        Why it would not give the scores of separate fits (for the log).
    """

    kind: str
    reason: str


@dataclass(frozen=True, slots=True)
class Context:
    """What a condition reads: the configured model and the run's sizes."""

    model: Any  # the final step, configured with the candidate's parameters
    whole: Any  # the whole estimator (a Pipeline or the model itself)
    up_to: int | None  # the largest count read, if known
    n_samples: int | None  # an upper bound on the training rows of a fit, if known
    seed: Any  # the model's random_state as given, before any clone


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition of a shortcut.

    Parameters
    ----------
    text : str
        What must hold, as the documentation's table says it.
    broken : callable
        ``broken(context) -> str or None``: why it does not hold, or None
        when it does.
    """

    text: str
    broken: Callable[[Context], str | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """A shortcut of one model family and the conditions under which it is exact.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    classes : tuple of str
        The classes it covers, by their public import path
        (``"sklearn.ensemble.RandomForestRegressor"``, ``"xgboost.XGBRegressor"``):
        a (final step) model is covered only when its type is one of them,
        not a subclass.
    params : tuple of str
        The parameters (last ``__`` part) that count the iterations it reads.
    conditions : tuple of Condition
        All must hold; an empty tuple: exact whatever the settings.
    """

    kind: str
    classes: tuple[str, ...]
    params: tuple[str, ...]
    conditions: tuple[Condition, ...] = ()

    @property
    def family(self) -> str:
        """The classes it covers, by name, as the documentation's table lists them."""
        return ", ".join(name.rpartition(".")[2] for name in self.classes)

    def matches(self, model: Any) -> bool:
        """Whether ``model`` is an instance of one of :attr:`classes` itself (no subclass)."""
        return any(type(model) is listed_class(name) for name in self.classes)


def listed_class(name: str) -> type | None:
    """Return the class at public import path ``name``, or None where its library is not loaded.

    Never imports: a model of an xgboost or lightgbm class has loaded its library.

    Examples
    --------
    >>> listed_class("sklearn.ensemble.RandomForestRegressor").__name__
    'RandomForestRegressor'
    """
    module, _, attribute = name.rpartition(".")
    found = getattr(sys.modules.get(module), attribute, None)
    return found if isinstance(found, type) else None


def booster_library(model: Any) -> str | None:
    """Return ``"xgboost"`` or ``"lightgbm"`` for their scikit-learn models (and subclasses).

    How a booster is read at a count, not whether that is exact (:func:`decide`).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> booster_library(Ridge()) is None
    True
    """
    for cls in type(model).__mro__:
        library = cls.__module__.split(".", 1)[0]
        if library in ("xgboost", "lightgbm"):
            return library
    return None


def _param(ctx: Context, name: str, default: Any = None) -> Any:
    return ctx.model.get_params(deep=False).get(name, default)


def _lightgbm_values(ctx: Context, names: Sequence[str]) -> list[Any]:
    """A lightgbm parameter's values under all its aliases (which one wins is lightgbm's)."""
    params = ctx.model.get_params(deep=False)
    return [params[n] for n in names if params.get(n) is not None]


# --- the conditions ---------------------------------------------------------------------


def _seeded(ctx: Context) -> str | None:
    if ctx.seed is not None:
        return None
    return (
        "random_state=None: every fit draws fresh randomness, so separate fits differ from "
        "each other and from any shortcut; pass an int random_state to take it"
    )


def _int_seed(ctx: Context) -> str | None:
    seed = ctx.seed
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return None
    if seed is None:
        return _seeded(ctx)
    return (
        f"random_state is a {type(seed).__name__}: the first fit advances it, so a warm "
        "start draws the members it adds from another state than a fit from scratch does; "
        "pass an int random_state to take the shortcut"
    )


def _other_steps_seeded(ctx: Context) -> str | None:
    """A warm start in a Pipeline refits the steps before the model: they must draw alike."""
    if ctx.whole is ctx.model:
        return None
    final_name = ctx.whole.steps[-1][0]
    for name, value in ctx.whole.get_params(deep=True).items():
        if name.startswith(f"{final_name}__") or not name.endswith("random_state"):
            continue
        if value is None or not isinstance(value, numbers.Integral) or isinstance(value, bool):
            return (
                f"{name}={value!r}: a warm start refits the Pipeline's steps before the "
                "model, which then may draw other randomness than the first fit did; pass "
                "an int"
            )
    return None


def _hgb_early_stopping(ctx: Context) -> bool | None:
    """Whether HistGradientBoosting stops early (None: "auto" on data of unknown size)."""
    early = _param(ctx, "early_stopping", "auto")
    if early != "auto":
        return bool(early)
    if ctx.n_samples is None:
        return None
    return ctx.n_samples > _HGB_AUTO_EARLY_STOP


def _hgb_no_early_stopping(ctx: Context) -> str | None:
    early = _hgb_early_stopping(ctx)
    if early is False:
        return None
    return (
        f"early_stopping={_param(ctx, 'early_stopping')!r} (on with more than "
        f"{_HGB_AUTO_EARLY_STOP} rows): a warm start restarts the early-stopping window and "
        "grows past a stop that a fit from scratch makes; pass early_stopping=False"
    )


def _hgb_seeded(ctx: Context) -> str | None:
    """random_state=None matters only where HistGradientBoosting's fit draws."""
    if ctx.seed is not None:
        return None
    max_features = _param(ctx, "max_features", 1.0)
    many = ctx.n_samples is None or ctx.n_samples > _HGB_BIN_SUBSAMPLE
    if _hgb_early_stopping(ctx) is False and max_features == 1.0 and not many:
        return None  # its fit draws nothing: every fit is the same
    return _seeded(ctx)


def _gb_no_early_stopping(ctx: Context) -> str | None:
    if _param(ctx, "n_iter_no_change") is None:
        return None
    return (
        f"n_iter_no_change={_param(ctx, 'n_iter_no_change')!r}: a warm start restarts the "
        "early-stopping window and grows past a stop that a fit from scratch makes; use "
        "n_iter_no_change=None"
    )


def _bagging_no_oob(ctx: Context) -> str | None:
    if not _param(ctx, "oob_score", False):
        return None
    return "oob_score=True: Bagging refuses a warm start with it"


def _xgb_booster(ctx: Context) -> str | None:
    booster = _param(ctx, "booster")
    if booster in (None, "gbtree"):
        return None
    why = {
        "dart": "dart drops and rescales earlier trees as it adds later ones, so the first t "
        "rounds of the last booster are not a booster of t rounds",
        "gblinear": "gblinear sums every round into one linear model, which has no earlier "
        "rounds to read",
    }
    return f"booster={booster!r}: " + why.get(booster, "not a tree booster parcv has checked")


def _xgb_seed(ctx: Context) -> str | None:
    seed = ctx.seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        return None  # None: xgboost's fixed default seed
    return (
        f"random_state is a {type(seed).__name__}: xgboost draws a new seed from it whenever "
        "its parameters are read (every clone), so separate fits differ from each other; pass "
        "an int"
    )


def _xgb_no_early_stopping(ctx: Context) -> str | None:
    rounds, callbacks = _param(ctx, "early_stopping_rounds"), _param(ctx, "callbacks")
    if rounds is None and not callbacks:
        return None
    return (
        f"early_stopping_rounds={rounds!r}, callbacks={callbacks!r}: a fit with fewer rounds "
        "may stop (or predict) at another round"
    )


_LGB_BOOSTING = ("boosting_type", "boosting", "boost")
_LGB_EARLY_STOP = ("early_stopping_round", "early_stopping_rounds", "early_stopping",
                   "n_iter_no_change")  # fmt: skip


def _lgb_boosting(ctx: Context) -> str | None:
    if "dart" not in _lightgbm_values(ctx, _LGB_BOOSTING):
        return None
    return (
        "boosting_type='dart': dart drops and rescales earlier trees as it adds later ones, "
        "so the first t rounds of the last booster are not a booster of t rounds"
    )


def _lgb_no_early_stopping(ctx: Context) -> str | None:
    rounds = [r for r in _lightgbm_values(ctx, _LGB_EARLY_STOP)
              if not (isinstance(r, numbers.Real) and r <= 0)]  # fmt: skip
    if not rounds:
        return None
    return f"early stopping ({rounds[0]!r} rounds): a fit with fewer rounds may stop elsewhere"


def _never(why: str) -> Callable[[Context], str | None]:
    return lambda ctx: why


def _is(name: str, wanted: bool | None, fix: str) -> Callable[[Context], str | None]:
    """The parameter is ``wanted`` (None is None; False is also 0); a model without it is."""

    def broken(ctx: Context) -> str | None:
        value = _param(ctx, name, wanted)
        same = value is wanted or (None not in (value, wanted) and value == wanted)
        return None if same else f"{name}={value!r}: {fix}"

    return broken


def _sgd_no_rescaling(ctx: Context) -> str | None:
    penalty, alpha = _param(ctx, "penalty"), _param(ctx, "alpha", 0.0)
    if penalty is None or alpha == 0:
        return None
    return (
        f"penalty={penalty!r} with alpha={alpha!r}: fit rescales the weights across its "
        "epochs, which epochs of partial_fit do not reproduce to the last bit"
    )


def _sgd_balanced(ctx: Context) -> str | None:
    if _param(ctx, "class_weight") != "balanced":
        return None
    return "class_weight='balanced': partial_fit refuses it"


def _mlp_no_stop(ctx: Context) -> str | None:
    n_iter_no_change = _param(ctx, "n_iter_no_change", 10)
    if ctx.up_to is not None and n_iter_no_change >= ctx.up_to:
        return None
    return (
        f"n_iter_no_change={n_iter_no_change!r} < {ctx.up_to!r} epochs: fit may stop before "
        "max_iter where epochs of partial_fit go on; pass n_iter_no_change >= the last count"
    )


_SEEDED = Condition("random_state is not None", _seeded)
_INT_SEED = Condition("random_state is an int (not a RandomState, not None)", _int_seed)
_STEPS = Condition("in a Pipeline, every other step's random_state is an int",
                   _other_steps_seeded)  # fmt: skip
_HGB_SEEDED = Condition(
    "random_state is not None, unless the fit draws nothing (no early stopping, "
    "max_features=1.0, at most 200,000 rows)",
    _hgb_seeded,
)
_HGB_NO_STOP = Condition(
    "no early stopping (early_stopping=False, or 'auto' with at most 10,000 rows)",
    _hgb_no_early_stopping,
)
_GB_NO_STOP = Condition("n_iter_no_change is None", _gb_no_early_stopping)
_NO_OOB = Condition("oob_score=False", _bagging_no_oob)

_HGB = (HistGradientBoostingClassifier, HistGradientBoostingRegressor)


def _names(*classes: type) -> tuple[str, ...]:
    """The public import paths of scikit-learn classes (their module is loaded here)."""
    return tuple(f"{cls.__module__.split('._', 1)[0]}.{cls.__qualname__}" for cls in classes)


_FORESTS = _names(RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier,
                  ExtraTreesRegressor)  # fmt: skip
_BAGGING = _names(BaggingClassifier, BaggingRegressor, IsolationForest)
_GB = _names(GradientBoostingClassifier, GradientBoostingRegressor)
_HGB_NAMES = _names(*_HGB)
_XGB = ("xgboost.XGBClassifier", "xgboost.XGBRegressor")
_XGB_FORESTS = ("xgboost.XGBRFClassifier", "xgboost.XGBRFRegressor")
_LGBM = ("lightgbm.LGBMClassifier", "lightgbm.LGBMRegressor")


def _warm_rules(kind: str) -> tuple[Rule, ...]:
    """Warm-start growth, along a path or across halving rungs: the same conditions."""
    return (
        Rule(kind, _FORESTS, ("n_estimators",), (_INT_SEED, _STEPS)),
        Rule(kind, _BAGGING, ("n_estimators",), (_INT_SEED, _NO_OOB, _STEPS)),
        Rule(kind, _GB, ("n_estimators",), (_SEEDED, _GB_NO_STOP, _STEPS)),
        Rule(kind, _HGB_NAMES, ("max_iter",), (_HGB_SEEDED, _HGB_NO_STOP, _STEPS)),
    )  # fmt: skip


#: Every shortcut parcv takes, per kind and exact classes, with the conditions under which
#: it equals separate fits from scratch. Subsampling (``subsample``, ``colsample_*``,
#: ``max_features``, ``max_samples``, bootstrap, lightgbm's bagging), forests boosted
#: round by round (xgboost's ``num_parallel_tree``, lightgbm's ``boosting_type="rf"``),
#: class weights, tree depths and the learning rate are no condition: the property tests
#: draw them and find the shortcuts exact.
SHORTCUTS: tuple[Rule, ...] = (
    Rule("booster", _XGB, ("n_estimators",),
         (Condition("booster is 'gbtree' (not 'dart', not 'gblinear')", _xgb_booster),
          Condition("no early_stopping_rounds, no callbacks", _xgb_no_early_stopping),
          Condition("random_state is an int or None (not a RandomState)", _xgb_seed))),
    Rule("booster", _XGB_FORESTS, ("n_estimators",),
         (Condition("never: its n_estimators trees are one boosting round (a forest of "
                    "num_parallel_tree=n_estimators), so no earlier round holds fewer trees",
                    _never("its n_estimators trees are one boosting round (a forest of "
                           "num_parallel_tree=n_estimators): no earlier round holds fewer "
                           "trees")),)),
    Rule("booster", _LGBM, ("n_estimators",),
         (Condition("boosting_type is not 'dart'", _lgb_boosting),
          Condition("no early_stopping_round", _lgb_no_early_stopping))),
    Rule("staged", _GB, ("n_estimators",), (_SEEDED,)),
    Rule("staged", _HGB_NAMES, ("max_iter",), (_HGB_SEEDED,)),
    Rule("staged", _names(AdaBoostRegressor), ("n_estimators",), (_SEEDED,)),
    Rule("staged", _names(AdaBoostClassifier), ("n_estimators",),
         (Condition("never: staged_decision_function sums the estimator weights one by one "
                    "where decision_function sums them at once (the last bit differs)",
                    _never("its staged outputs differ from a fit's in the last bit")),)),
    *_warm_rules("warm_start"),
    *_warm_rules("continuation"),
    Rule("partial_fit", _names(SGDClassifier, SGDRegressor, Perceptron), ("max_iter",),
         (Condition("shuffle=False", _is("shuffle", False, "fit shuffles the rows anew each "
                                         "epoch, where each partial_fit call starts over")),
          Condition("tol=None", _is("tol", None, "fit may stop before max_iter")),
          Condition("early_stopping=False", _is("early_stopping", False,
                                                "fit holds out rows and may stop early")),
          Condition("average=False", _is("average", False, "the averaged weights of fit "
                                         "and of partial_fit epochs differ")),
          Condition("penalty=None or alpha=0", _sgd_no_rescaling),
          Condition("class_weight is not 'balanced'", _sgd_balanced))),
    Rule("partial_fit", _names(MLPClassifier, MLPRegressor), ("max_iter",),
         (Condition("shuffle=False", _is("shuffle", False, "fit draws a new order each epoch, "
                                         "where each partial_fit call starts over")),
          Condition("early_stopping=False", _is("early_stopping", False,
                                                "partial_fit does not stop early")),
          Condition("n_iter_no_change >= the last count", _mlp_no_stop),
          _SEEDED)),
)  # fmt: skip


def _final_step(estimator: Any) -> Any:
    steps = getattr(estimator, "steps", None)
    return steps[-1][1] if isinstance(steps, list) and steps else estimator


def given_seed(estimator: Any, params: dict[str, Any]) -> Any:
    """The ``random_state`` of the model a candidate configures, as given (not cloned).

    A clone of an xgboost model turns a RandomState into an int drawn from
    it, so the conditions read the value the user gave instead.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> given_seed(RandomForestRegressor(random_state=3), {"random_state": 5})
    5
    """
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and steps:
        name, step = steps[-1]
        key, step = f"{name}__random_state", params.get(name, step)
    else:
        key, step = "random_state", estimator
    if key in params:
        return params[key]
    return getattr(step, "random_state", None)


def _unlisted(kind: str, model: Any) -> str:
    """Why a model of no class of the table's ``kind`` rows takes no shortcut."""
    listed = {listed_class(n) for r in SHORTCUTS if r.kind == kind for n in r.classes} - {None}
    base = next((cls for cls in type(model).__mro__[1:] if cls in listed), None)
    if base is None:
        return "parcv knows no condition under which it equals separate fits"
    return (
        f"it subclasses {base.__name__}, and the table holds for that class only (a subclass "
        "may change what fit does)"
    )


_AS_CONFIGURED = object()  # decide(seed=...) not given: the configured model's own


def decide(
    kind: str,
    model: Any,
    param: str,
    *,
    up_to: int | None = None,
    n_samples: int | None = None,
    seed: Any = _AS_CONFIGURED,
) -> Shortcut | Fallback:
    """Return whether shortcut ``kind`` is exact for an already configured ``model``.

    As :func:`exact_shortcut`, for a caller that has set the candidate's
    parameters already (``model`` is not changed); ``seed`` is the
    ``random_state`` as given (:func:`given_seed`), where a clone may have
    changed it.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)!r}; got {kind!r}.")
    final = _final_step(model)
    name = type(final).__name__
    rule = next((r for r in SHORTCUTS if r.kind == kind and r.matches(final)), None)
    if rule is None:
        return Fallback(kind, f"{_WHAT[kind]} of {name}: {_unlisted(kind, final)}")
    leaf = param.rsplit("__", 1)[-1]
    if leaf not in rule.params:
        return Fallback(kind, f"{_WHAT[kind]} of {name}: {param!r} does not count its "
                              f"iterations ({' or '.join(rule.params)} does)")  # fmt: skip
    if seed is _AS_CONFIGURED:
        seed = getattr(final, "random_state", None)
    context = Context(final, model, up_to, n_samples, seed)
    for condition in rule.conditions:
        why = condition.broken(context)
        if why is not None:
            return Fallback(kind, f"{_WHAT[kind]} of {name}: {why}")
    return Shortcut(kind, rule.family)


def exact_shortcut(
    kind: str,
    estimator: Any,
    params: dict[str, Any],
    param: str,
    *,
    up_to: int | None = None,
    n_samples: int | None = None,
) -> Shortcut | Fallback:
    """Return whether a shortcut gives the scores of separate fits from scratch for a candidate.

    Parameters
    ----------
    kind : {"booster", "staged", "warm_start", "partial_fit", "continuation"}
        The shortcut (see the module's text).
    estimator : estimator object
        The template; a Pipeline's last step is the model read.
    params : dict
        The candidate's parameters, set on a clone of ``estimator``.
    param : str
        The iteration parameter, as ``set_params`` takes it (``"model__n_estimators"``).
    up_to : int, default=None
        The largest count read (a condition of MLP's epochs); None: unknown.
    n_samples : int, default=None
        An upper bound on the training rows of a fit (HistGradientBoosting's
        ``early_stopping="auto"``); None: unknown, so "auto" may stop early.

    Returns
    -------
    Shortcut or Fallback
        A :class:`Shortcut` where the table's conditions hold; otherwise a
        :class:`Fallback` with the reason, and parcv fits every count from
        scratch.

    Raises
    ------
    ValueError
        If ``kind`` is not one of :data:`KINDS`.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> exact_shortcut("warm_start", RandomForestRegressor(), {"random_state": 0}, "n_estimators")
    ... # doctest: +ELLIPSIS
    Shortcut(kind='warm_start', family='RandomForestClassifier, RandomForestRegressor, ...')
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> exact_shortcut("warm_start", RandomForestRegressor(random_state=rng), {}, "n_estimators")
    ... # doctest: +ELLIPSIS
    Fallback(kind='warm_start', reason='growing the model by warm start along the path of Rand...')
    """
    model = clone(estimator).set_params(**clone(params, safe=False))
    return decide(kind, model, param, up_to=up_to, n_samples=n_samples,
                  seed=given_seed(estimator, params))  # fmt: skip


def log_fallbacks(what: str, fallbacks: Iterable[Fallback]) -> None:
    """Say once, on the ``"parcv"`` logger, that shortcuts were not taken, and why.

    Parameters
    ----------
    what : str
        What is fitted from scratch instead, e.g. "iteration paths: 2 of 4
        points are fitted from scratch at every checkpoint".
    fallbacks : iterable of Fallback
        The decisions that fell back; nothing is logged when there is none.

    Examples
    --------
    >>> log_fallbacks("nothing", [])
    """
    reasons = sorted({f.reason for f in fallbacks})
    if not reasons:
        return
    more = f" (and {len(reasons) - 1} other reason(s))" if len(reasons) > 1 else ""
    _LOG.info("%s, as separate fits give the numbers: no exact shortcut applies: %s%s.",
              what, reasons[0], more)  # fmt: skip


def grows_by_warm_start(model: Any, param: str) -> bool:
    """Whether a warm start of ``model`` adds iterations of ``param`` to the fitted ones.

    Ensembles grow ``n_estimators``, HistGradientBoosting ``max_iter``; a
    linear model's warm start only starts a new fit from the last solution,
    which is not the model fitted with more iterations.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> grows_by_warm_start(LogisticRegression(), "max_iter")
    False
    """
    final, leaf = _final_step(model), param.rsplit("__", 1)[-1]
    if "warm_start" not in final.get_params(deep=False):
        return False
    return leaf == "n_estimators" or (leaf == "max_iter" and isinstance(final, _HGB))


def continues_exactly(
    estimator: Any,
    candidates: Sequence[dict[str, Any]],
    resource: str,
    *,
    n_samples: int | None = None,
) -> str | None:
    """Return the ``warm_start`` parameter that continues every candidate exactly, or None.

    A successive-halving rung on an iteration ``resource`` may continue a
    promoted candidate's fits of the rung before by a warm start where
    that gives the model a fit from scratch gives (the ``"continuation"``
    rows of :data:`SHORTCUTS`). Where a warm start would grow the model
    but not exactly so, it says why once on the ``"parcv"`` logger, and the
    rungs fit from scratch, as scikit-learn's do.

    Parameters
    ----------
    estimator : estimator object
    candidates : sequence of dict
        Every candidate's parameters (an empty sequence: the estimator's own).
    resource : str
        The halving resource: ``"n_samples"`` (never continued) or an
        iteration parameter.
    n_samples : int, default=None
        The number of rows the folds split (see :func:`exact_shortcut`).

    Returns
    -------
    str or None
        The parameter to set True (``"warm_start"``, ``"model__warm_start"``).

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingRegressor
    >>> continues_exactly(GradientBoostingRegressor(random_state=0), [{}], "n_estimators")
    'warm_start'
    >>> gb = GradientBoostingRegressor(random_state=0, n_iter_no_change=2)
    >>> continues_exactly(gb, [{}], "n_estimators") is None
    True
    """
    if resource == "n_samples":
        return None
    fallbacks = []
    every = candidates or [{}]
    for params in every:
        model = clone(estimator).set_params(**clone(params, safe=False))
        if not grows_by_warm_start(model, resource):
            return None  # refitted as scikit-learn does, with nothing to say
        decision = decide("continuation", model, resource, n_samples=n_samples,
                          seed=given_seed(estimator, params))  # fmt: skip
        if isinstance(decision, Fallback):
            fallbacks.append(decision)
    if fallbacks:
        log_fallbacks(f"successive halving on {resource!r}: every rung fits its candidates from "
                      "scratch", fallbacks)  # fmt: skip
        return None
    head, sep, _ = resource.rpartition("__")
    return f"{head}{sep}warm_start"
