"""Scorers: scikit-learn names and callables, several at once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.metrics import check_scoring, get_scorer, get_scorer_names
from sklearn.utils.multiclass import type_of_target

from parcv.errors import did_you_mean, warn_at_caller
from parcv.plan.space import holds_estimator, memo

__all__ = [
    "Scoring",
    "check_scoring_spec",
    "check_metric_target",
    "check_response_methods",
]


@dataclass(frozen=True, slots=True)
class Scoring:
    """Named scorers, and which one selects candidates.

    Parameters
    ----------
    scorers : dict of str to callable
        ``scorer(estimator, X, y) -> float``, greater is better.
    refit : str
        Name of the scorer used for selection.
    multimetric : bool
        Whether the user asked for several metrics (changes result key names
        the way scikit-learn does: ``test_score`` vs ``test_<name>``).
    """

    scorers: dict[str, Callable[..., float]]
    refit: str
    multimetric: bool

    def suffix(self, name: str) -> str:
        """Return scikit-learn's key suffix for metric ``name``."""
        return name if self.multimetric else "score"

    def named(self, names: Sequence[str]) -> Scoring:
        """The scoring of a callable that returned a dict: its keys are the metrics.

        As scikit-learn's, a callable ``scoring`` may return ``{name: score}``;
        its names are known once it has scored, and the results name their
        keys by them (``mean_test_<name>``). ``refit``, if it names one of
        them, selects; otherwise the first orders the candidates.

        Examples
        --------
        >>> from sklearn.linear_model import Ridge
        >>> spec = check_scoring_spec(Ridge(), lambda est, X, y: {"a": 1.0}, False)
        >>> named = spec.named(["a", "b"])
        >>> sorted(named.scorers), named.refit, named.multimetric
        (['a', 'b'], 'a', True)
        """
        scorer = next(iter(self.scorers.values()))
        refit = self.refit if self.refit in names else names[0]
        return Scoring(dict.fromkeys(names, scorer), refit, multimetric=True)


def _named_scorer(name: str) -> Callable[..., float]:
    if not isinstance(name, str):
        raise TypeError(f"scoring names must be str; got {name!r}.")
    try:
        return get_scorer(name)  # type: ignore[no-any-return]
    except ValueError as err:
        raise ValueError(
            f"scoring={name!r} is not a known scorer name. "
            f"{did_you_mean(name, get_scorer_names(), end=' ')}"
            "See sklearn.metrics.get_scorer_names() for all names, or pass a callable."
        ) from err


def check_scoring_spec(
    estimator: Any, scoring: Any, refit: bool | str, *, selects: bool = True
) -> Scoring:
    """Normalise ``scoring`` and the ``refit`` metric into a :class:`Scoring`.

    Parameters
    ----------
    estimator : estimator object
        Used for its default ``score`` method when ``scoring=None``.
    scoring : None, str, callable, list of str or dict of str to str/callable
        As in scikit-learn.
    refit : bool or str
        With several metrics, the metric name that selects candidates.
    selects : bool, default=True
        Whether a metric must select candidates; if not (one candidate), or
        with ``refit=False``, the first metric stands in.

    Returns
    -------
    Scoring

    Raises
    ------
    ValueError
        For an unknown scorer name (close matches listed) or an ambiguous
        ``refit`` with several metrics.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> check_scoring_spec(Ridge(), ["r2", "neg_mean_squared_error"], "r2").refit
    'r2'
    """
    _check_refit(refit, scoring)
    if scoring is None or isinstance(scoring, str) or callable(scoring):
        if isinstance(scoring, str):
            scorer = _named_scorer(scoring)
        else:
            scorer = check_scoring(estimator, scoring=scoring)
        # A callable may return a dict of metrics; refit may name one of them.
        named = callable(scoring) and isinstance(refit, str)
        return Scoring({"score": scorer}, str(refit) if named else "score", multimetric=False)
    scorers = _multimetric(scoring)
    if isinstance(refit, str) and refit in scorers:
        return Scoring(scorers, refit, multimetric=True)
    if refit is False or not selects:
        # No refit: nothing is shipped, so the first metric only orders the candidates.
        return Scoring(scorers, next(iter(scorers)), multimetric=True)
    raise ValueError(
        f"With several metrics {sorted(scorers)}, refit must name the one that selects "
        f"candidates; got refit={refit!r}. "
        + (did_you_mean(refit, scorers, end=" ") if isinstance(refit, str) else "")
        + f"Pass e.g. refit={next(iter(scorers))!r}."
    )


def _check_refit(refit: Any, scoring: Any) -> None:
    """A bool, or a metric name: one of several (checked with them), or the one str scoring."""
    one = scoring is None or isinstance(scoring, str) or callable(scoring)
    # A callable scoring may return a dict of metrics, one of which refit names.
    if isinstance(refit, (bool, np.bool_)) or (
        isinstance(refit, str) and (not one or refit == scoring or callable(scoring))
    ):
        return
    raise (ValueError if isinstance(refit, str) else TypeError)(
        f"refit must be True, False or the name of the metric that selects; got refit={refit!r} "
        f"with scoring={scoring!r}. A name selects among several metrics, e.g. scoring=['r2', "
        "'neg_mean_squared_error'], refit='r2'; pass selection= to change how one is picked."
    )


# scikit-learn's words for a bad list of metrics, which its users (and tests) match.
_LIST_WORDS = "The list/tuple elements must be unique strings of predefined scorers."
_DICT_ADVICE = "Name a callable scorer in a dict, e.g. scoring={'accuracy': make_scorer(f)}."


def _multimetric(scoring: Any) -> dict[str, Callable[..., float]]:
    if isinstance(scoring, Mapping):
        if not all(isinstance(name, str) for name in scoring):
            raise ValueError(
                f"Non-string types were found in the keys of the given dict. scoring={scoring!r}"
                " The keys name the metrics (str)."
            )
        if not scoring:
            raise ValueError(f"An empty dict was passed. scoring={scoring!r}: name a metric.")
        items = list(scoring.items())
    elif isinstance(scoring, (Sequence, set, frozenset)) and not isinstance(scoring, str):
        _check_metric_list(scoring)
        items = [(name, name) for name in scoring]
    else:
        raise TypeError(
            f"scoring must be None, a str, a callable, a list of str or a dict; got {scoring!r}."
        )
    return {name: spec if callable(spec) else _named_scorer(spec) for name, spec in items}


def _check_metric_list(scoring: Any) -> None:
    """A list or tuple of metrics: unique names, as scikit-learn's check of scoring."""
    if not scoring:
        raise ValueError(f"{_LIST_WORDS} Empty list was given. scoring={scoring!r}: name one.")
    if any(callable(name) for name in scoring):
        raise ValueError(
            f"{_LIST_WORDS} One or more of the elements were callables. Use a dict of score "
            f"name mapped to the scorer callable. Got {scoring!r}. {_DICT_ADVICE}"
        )
    if not all(isinstance(name, str) for name in scoring):
        raise ValueError(
            f"{_LIST_WORDS} Non-string types were found in the given list. Got {scoring!r}. "
            + _DICT_ADVICE
        )
    if len(set(scoring)) != len(scoring):
        raise ValueError(
            f"{_LIST_WORDS} Duplicate elements were found in the given list. scoring={scoring!r}"
            ": name each metric once."
        )


# Where scikit-learn's metrics that take class labels (or a binary/multilabel indicator)
# live: each of them refuses a continuous y_true, whatever the predictions. (Clustering
# metrics only warn.) The likelihood-ratio scorers wrap one in the scorer module.
_LABEL_METRICS = ("sklearn.metrics._classification", "sklearn.metrics._ranking")


def _takes_labels(func: Any) -> bool:
    module, name = getattr(func, "__module__", None), getattr(func, "__name__", "")
    scorer_wrapper = module == "sklearn.metrics._scorer" and name.endswith("likelihood_ratio")
    return module in _LABEL_METRICS or scorer_wrapper


def _methods(scorer: Any) -> tuple[str, ...]:
    """The estimator methods a scikit-learn scorer calls, any one of them (none if unknown)."""
    methods = getattr(scorer, "_response_method", None)
    if isinstance(methods, str):
        return (methods,)
    if isinstance(methods, (list, tuple)) and all(isinstance(m, str) for m in methods):
        return tuple(methods)
    return ()  # a callable of the user's, or a scorer without the attribute: not checked


def _amount(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


class _MethodCheck:
    """Which metric's methods a candidate's estimator lacks, without a clone per candidate.

    Whether an estimator has a method depends, in scikit-learn, on one parameter at a
    time (``probability``, ``loss``, ``voting``, a pipeline's last step), never on an
    amount (``alpha``, ``C``). So each distinct value that is not an amount is tried
    alone once, and candidates are grouped by the values that changed the answer. A
    candidate found lacking is confirmed on its own estimator before it is reported:
    a wrong guess can miss a refusal (the fits then fail as before), never make one.
    """

    def __init__(self, estimator: Any, needs: dict[str, tuple[str, ...]]) -> None:
        self.estimator, self.needs = estimator, needs
        self.base = self.lacking(estimator)
        self.seen: dict[Any, str | None] = {}
        # One copy to try single values on, each set back after (a set_params, not a clone).
        self.scratch = clone(estimator)
        self.defaults = self.scratch.get_params(deep=True)

    def lacking(self, est: Any) -> str | None:
        """The first metric none of whose methods ``est`` has, or None."""
        return next((n for n, m in self.needs.items() if not any(hasattr(est, x) for x in m)), None)

    def exact(self, params: Mapping[str, Any]) -> str | None:
        if not params:
            return self.base
        return self.lacking(clone(self.estimator).set_params(**clone(dict(params), safe=False)))

    def _set_alone(self, name: str, value: Any) -> str | None:
        """The verdict with one parameter changed (on the scratch copy, then set back)."""
        self.scratch.set_params(**{name: value})
        try:
            return self.lacking(self.scratch)
        finally:
            self.scratch.set_params(**{name: self.defaults[name]})

    def alone(self, name: str, value: Any) -> str | None:
        """The verdict with one parameter changed, once per distinct value."""
        return memo(self.seen, (name, type(value), value), partial(self._set_alone, name, value))

    def quick(self, params: Mapping[str, Any]) -> str | None:
        """The verdict from the parameters that, set alone, change the estimator's."""
        if any(n not in self.defaults or holds_estimator(v) for n, v in params.items()):
            return self.exact(params)  # a swapped-in estimator, or a parameter of one
        changed = {
            n: v for n, v in params.items()
            if not _amount(v) and self.alone(n, v) != self.base
        }  # fmt: skip
        if not changed:
            return self.base
        key = tuple((n, type(v), v) for n, v in sorted(changed.items()))
        return memo(self.seen, key, partial(self.exact, changed))

    def first_lacking(self, params: Sequence[Mapping[str, Any]]) -> tuple[Any, str] | None:
        for p in params:
            if self.quick(p) is not None and (lacks := self.exact(p)) is not None:
                return p, lacks
        return None

    def all_lacking(self, params: Sequence[Mapping[str, Any]]) -> tuple[Any, str] | None:
        """The first candidate and what it lacks, if every candidate lacks a method."""
        if any(self.quick(p) is None and self.exact(p) is None for p in params):
            return None
        if any(self.exact(p) is None for p in params):  # what the grouping cannot see
            return None
        return params[0], str(self.exact(params[0]))


def check_response_methods(
    estimator: Any,
    params: Sequence[Mapping[str, Any]],
    scoring: Scoring,
    *,
    each: bool = True,
    given: Any = None,
) -> None:
    """Raise if a scorer calls a method (``predict_proba``, ...) the estimator lacks.

    Every fit would run and then fail to be scored. Scikit-learn's scorers name
    the methods they call; the estimator of a candidate (``clone(estimator)
    .set_params(**params)``, unfitted) must have at least one of them, as the
    scorer looks them up with ``hasattr`` too.

    Parameters
    ----------
    estimator : estimator object
    params : sequence of dict
        Parameters of every candidate (``[{}]``: the estimator as given).
    scoring : Scoring
    each : bool, default=True
        Raise at the first candidate that lacks a method (``error_score="raise"``:
        the run would stop there). Otherwise raise only when every candidate
        lacks one (nothing could be selected), stopping at the first that does not.
    given : object, default=None
        The user's ``scoring``, to name a single metric in the message.

    Raises
    ------
    ValueError
        Naming the metric, the methods it calls and the candidate.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from parcv.plan.scoring import check_scoring_spec
    >>> scoring = check_scoring_spec(Ridge(), "roc_auc", True)
    >>> check_response_methods(Ridge(), [{}], scoring, given="roc_auc")
    Traceback (most recent call last):
    ...
    ValueError: scoring 'roc_auc' calls the estimator's decision_function or predict_proba, \
which Ridge() does not have: every fit would run and then fail to be scored. Pick a metric \
that suits the estimator (sklearn.metrics.get_scorer_names() lists them), or an estimator \
that has one of those methods.
    """
    needs = {name: m for name, s in scoring.scorers.items() if (m := _methods(s))}
    if not needs:
        return
    check = _MethodCheck(estimator, needs)
    first = check.first_lacking(params) if each else check.all_lacking(params)
    if first is None:
        return
    p, name = first
    head = f"{_label(scoring, name, given)} calls the estimator's {' or '.join(needs[name])}, which"
    raise ValueError(_lacking_message(head, p, estimator, several=len(params) > 1, each=each))


def _lacking_message(head: str, p: Mapping[str, Any], estimator: Any, *, several: bool,
                     each: bool) -> str:  # fmt: skip
    fix = (
        "Pick a metric that suits the estimator (sklearn.metrics.get_scorer_names() lists "
        "them), or an estimator that has one of those methods."
    )
    if not several:
        what = f"candidate {dict(p)!r}" if p else repr(estimator)
        return f"{head} {what} does not have: every fit would run and then fail to be scored. {fix}"
    if each:
        return (
            f"{head} candidate {dict(p)!r} does not have: its fits would run and then fail to "
            f"be scored. {fix} Or pass error_score=float('nan') to record those fits as failed "
            "and go on."
        )
    return (
        f"{head} no candidate has (the first: {dict(p)!r}): every fit would run and then fail "
        f"to be scored. {fix}"
    )


def _label(scoring: Scoring, name: str, given: Any) -> str:
    if scoring.multimetric:
        return f"scoring metric {name!r}"
    return f"scoring {given if isinstance(given, str) else scoring.scorers[name]!r}"


def check_metric_target(
    scoring: Scoring,
    y: Any,
    *,
    given: Any = None,
    estimator: Any = None,
    params: Sequence[Mapping[str, Any]] = (),
    selects: bool = False,
) -> None:
    """Raise if a metric does not suit ``y`` or the estimator, before any fit.

    Scikit-learn's label metrics (accuracy, f1, roc_auc, log_loss, ...) refuse a
    continuous ``y_true`` whatever the predictions, so every fit would run and
    then fail to be scored. The other way round, a regression metric named by
    the user (``"r2"``, ``"neg_mean_squared_error"``, ...) on a classifier is
    refused when the class labels are words (every fit would fail to be
    scored), or when it selects the candidates (it would rank them by the
    distance between class labels taken as numbers). Only reported, on labels
    that are numbers, it is computed, as scikit-learn computes it (its own
    tests score a classifier by ``r2``). A scorer the user built
    (``make_scorer(mean_absolute_error)``, a callable) is taken as meant.

    Parameters
    ----------
    scoring : Scoring
    y : array-like or None
        The targets (``None``: nothing to check).
    given : object, default=None
        The user's ``scoring``, to name a single metric in the message.
    estimator : estimator object, default=None
        If it is a regressor and no candidate swaps in another estimator, a
        label metric on its predictions fails even with class labels as ``y``.
    params : sequence of dict, default=()
        Parameters of every candidate.
    selects : bool, default=False
        Whether ``scoring.refit`` selects among candidates (a search), rather
        than being only reported.

    Raises
    ------
    ValueError
        Naming the metric, a continuous value of ``y`` (or the classifier) and
        the fix.

    Warns
    -----
    UserWarning
        A label metric on a regressor's predictions (they could, rarely, all
        be whole numbers: a warning, not a refusal).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from parcv.plan.scoring import check_scoring_spec
    >>> scoring = check_scoring_spec(Ridge(), "accuracy", True)
    >>> check_metric_target(scoring, [0.5, 1.25, 2.0], given="accuracy")
    Traceback (most recent call last):
    ...
    ValueError: scoring 'accuracy' is a classification metric (accuracy_score), but y is \
continuous (y[0] = 0.5): every fit would run and then fail to be scored. Pick a regression \
metric such as 'r2' or 'neg_mean_squared_error', or pass class labels as y.
    """
    _check_number_metrics(scoring, given, estimator, params, y=y, selects=selects)
    funcs = {n: getattr(s, "_score_func", None) for n, s in scoring.scorers.items()}
    labels: dict[str, Any] = {n: f for n, f in funcs.items() if _takes_labels(f)}
    if not labels or y is None:
        return
    try:
        kind = type_of_target(y)
    except ValueError:  # not a target scikit-learn can type: the fits will say what is wrong
        return
    if kind == "multiclass":
        _check_multiclass(scoring, labels, given)
    if kind not in ("continuous", "continuous-multioutput"):
        _warn_if_regressor(scoring, labels, given, estimator, params)
        return
    name, func = next(iter(labels.items()))
    first = np.asarray(y).ravel()[0]
    first = first.item() if isinstance(first, np.generic) else first
    raise ValueError(
        f"{_label(scoring, name, given)} is a classification metric ({func.__name__}), but y is "
        f"{kind} (y[0] = {first!r}): every fit would run and then fail to be scored. Pick a "
        "regression metric such as 'r2' or 'neg_mean_squared_error', or pass class labels as y."
    )


# Where scikit-learn's regression metrics live: each compares y_true and the predictions
# as numbers (its scorers convert both to float). Exactly the scorers of the "Regression"
# table of scikit-learn's scoring names; a test finds them by behaviour, not by module.
_NUMBER_METRICS = "sklearn.metrics._regression"


def _number_metrics(scoring: Scoring, given: Any) -> dict[str, str]:
    """The metrics named by a string of the user's that are regression metrics: name -> str."""
    if isinstance(given, str):
        named = {"score": given}
    elif isinstance(given, (list, tuple)):
        named = {n: n for n in given if isinstance(n, str)}
    elif isinstance(given, Mapping):
        named = {str(n): v for n, v in given.items() if isinstance(v, str)}
    else:
        return {}
    return {
        name: spec for name, spec in named.items()
        if name in scoring.scorers
        and getattr(getattr(scoring.scorers[name], "_score_func", None), "__module__", None)
        == _NUMBER_METRICS
    }  # fmt: skip


def _classifier_named(estimator: Any) -> str | None:
    """How to name ``estimator`` if it is a classifier (a pipeline by its last step)."""
    try:
        classifier = is_classifier(estimator)
    except Exception:  # an estimator without scikit-learn's tags: not known to be one
        return None
    if not classifier:
        return None
    final = estimator
    while getattr(final, "steps", None):
        final = final.steps[-1][1]
    name = type(final).__name__
    return name if final is estimator else f"{type(estimator).__name__} ending in {name}"


def _swapped_classifier(estimator: Any, swapped: Mapping[str, Any]) -> str | None:
    return _classifier_named(clone(estimator).set_params(**swapped))


def _first_classifier(estimator: Any, params: Sequence[Mapping[str, Any]]) -> str | None:
    """The estimator, or the first candidate whose swapped-in estimator is a classifier."""
    seen: dict[Any, str | None] = {}
    for p in params:
        swapped = {n: v for n, v in p.items() if holds_estimator(v)}
        if not swapped:
            continue
        key = tuple((n, id(v)) for n, v in sorted(swapped.items()))
        if memo(seen, key, partial(_swapped_classifier, estimator, swapped)) is not None:
            return f"candidate {dict(p)!r}"
    if params and all(any(holds_estimator(v) for v in p.values()) for p in params):
        return None  # every candidate swaps the estimator given for another
    return _classifier_named(estimator)


def _first_word(y: Any) -> Any:
    """The first value of ``y`` that is not a number, if its values are text (else None)."""
    values = np.asarray(y)
    if values.dtype.kind not in "OUS":
        return None
    for value in values.ravel():
        try:
            float(value)
        except (TypeError, ValueError):
            return value.item() if isinstance(value, np.generic) else value
    return None


def _check_number_metrics(
    scoring: Scoring,
    given: Any,
    estimator: Any,
    params: Sequence[Mapping[str, Any]],
    *,
    y: Any,
    selects: bool,
) -> None:
    """Refuse a regression metric, named by the user, that would score class labels.

    On labels that are words, every fit would fail to be scored; on labels that
    are numbers, selecting by it ranks the candidates by the distance between
    labels. Only reported on numbers, it is computed (as scikit-learn does).
    """
    metrics = _number_metrics(scoring, given)
    word = None if y is None else _first_word(y)
    if word is None:
        metrics = {n: m for n, m in metrics.items() if selects and n == scoring.refit}
    if not metrics or estimator is None:
        return
    classifier = _first_classifier(estimator, params)
    if classifier is None:
        return
    name, metric = next(iter(metrics.items()))
    label = f"scoring {metric!r}"
    if scoring.multimetric:
        label = f"scoring metric {name!r}" + ("" if name == metric else f" ({metric!r})")
    func = scoring.scorers[name]._score_func.__name__  # type: ignore[attr-defined]
    why = (
        "it would rank the candidates by the distance between class labels taken as numbers"
        if word is None
        else f"the class labels of y are words (e.g. {word!r}), so every fit would run and "
        "then fail to be scored"
    )
    raise ValueError(
        f"{label} is a regression metric ({func}), but {classifier} is a classifier: {why}. "
        "Use a classification metric such as 'accuracy', 'balanced_accuracy', 'f1_macro', "
        "'roc_auc_ovr' or 'neg_log_loss' (sklearn.metrics.get_scorer_names() lists them), "
        "or a regressor if y is a quantity. If the classes are ordered numbers whose "
        "distance you mean to score, pass your own scorer, e.g. "
        "make_scorer(mean_absolute_error, greater_is_better=False)."
    )


def _check_multiclass(scoring: Scoring, labels: Mapping[str, Any], given: Any) -> None:
    """Refuse ``roc_auc`` (binary only unless ``multi_class`` is set) on a multiclass ``y``."""
    for name, func in labels.items():
        kwargs = getattr(scoring.scorers[name], "_kwargs", {}) or {}
        if func.__name__ == "roc_auc_score" and kwargs.get("multi_class", "raise") == "raise":
            raise ValueError(
                f"{_label(scoring, name, given)} is binary ROC AUC, but y has more than two "
                "classes: every fit would run and then fail to be scored. Use 'roc_auc_ovr' "
                "(one-vs-rest) or 'roc_auc_ovo' (one-vs-one), or their '_weighted' forms."
            )


def _warn_if_regressor(
    scoring: Scoring,
    labels: Mapping[str, Any],
    given: Any,
    estimator: Any,
    params: Sequence[Mapping[str, Any]],
) -> None:
    """Warn if a label metric would score the predictions of a regressor (every candidate's)."""
    predicts = {n for n in labels if _methods(scoring.scorers[n]) == ("predict",)}
    swaps = any(holds_estimator(v) for p in params for v in p.values())
    if not predicts or estimator is None or not is_regressor(estimator) or swaps:
        return
    name = min(predicts)
    warn_at_caller(
        f"{_label(scoring, name, given)} is a classification metric "
        f"({labels[name].__name__}), but {type(estimator).__name__} is a regressor: "
        "scikit-learn refuses to compare its continuous predictions with the labels "
        "of y, so every fit will likely fail to be scored. Pick a regression metric "
        "such as 'r2', or a classifier.",
        UserWarning,
    )
