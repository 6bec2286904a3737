"""Metadata routing: which of a call's ``params`` go to ``fit``, to each scorer and to the splitter.

scikit-learn decides this from its process-wide config
(``sklearn.set_config(enable_metadata_routing=True)``). parcv decides once, in
the driver, with scikit-learn's own machinery (``process_routing`` over a
``MetadataRouter`` built as scikit-learn builds it, so its errors are
scikit-learn's, raised before any fit), and hands the units plain parameters:
``fit`` parameters, ``score`` parameters per scorer and ``split`` parameters,
with a flag that says whether the fits and scorers run with routing on. Workers
never read scikit-learn's config to decide anything.

Without routing, the validation functions pass ``params`` to ``fit`` only, and
the searches (``GridSearchCV.fit(X, y, **params)``) pass ``sample_weight`` to
every scorer that accepts it too (scikit-learn 1.9's ``_get_routed_params_for_fit``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from inspect import signature
from typing import Any

import numpy as np
import scipy.sparse as sp
import sklearn
from numpy.typing import NDArray
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.utils import _safe_indexing
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing

from parcv.errors import warn_at_caller
from parcv.plan.data import n_rows_of

__all__ = [
    "RoutedParams",
    "check_no_groups",
    "check_params",
    "routing_enabled",
    "route_search",
    "route_validation",
    "rows_of_params",
    "scorers_router",
]

# Where scikit-learn's validation functions put each child of their router, and in
# which order (the first child whose metadata is not requested names the error).
_CHILDREN: dict[str, tuple[str, ...]] = {
    "cross_validate": ("splitter", "estimator", "scorer"),
    "cross_val_predict": ("splitter", "estimator"),
    "permutation_test_score": ("estimator", "splitter", "scorer"),
    "learning_curve": ("estimator", "splitter", "scorer"),
    "validation_curve": ("estimator", "splitter", "scorer"),
}

# The owner scikit-learn's several-metric scorer gives its router (named in its errors).
_MULTIMETRIC_OWNER = "_MultimetricScorer"


@dataclass(frozen=True, slots=True)
class RoutedParams:
    """Where a call's metadata goes: ``fit``, each scorer and the splitter.

    Parameters
    ----------
    fit : dict of str to object
        Arguments of the estimator's ``fit``; per-sample ones are split with
        the rows.
    score : dict of str to dict
        Per scorer name, the arguments of that scorer; per-sample ones are
        split with the rows scored. Empty: every scorer gets none.
    split : dict of str to object
        Arguments of the splitter's ``split`` (``groups`` among them).
    enabled : bool
        Whether scikit-learn's metadata routing was on: the fits and the
        scorers then run with it on (a ``Pipeline`` routes its own ``fit``
        arguments only then).

    Examples
    --------
    >>> RoutedParams(fit={"sample_weight": [1.0, 2.0]}).groups is None
    True
    """

    fit: dict[str, Any] = field(default_factory=dict)
    score: dict[str, dict[str, Any]] = field(default_factory=dict)
    split: dict[str, Any] = field(default_factory=dict)
    enabled: bool = False

    @property
    def groups(self) -> Any:
        """The ``groups`` the splitter gets (None: none)."""
        return self.split.get("groups")


def routing_enabled() -> bool:
    """Whether scikit-learn's metadata routing is on in this thread (read in the driver only).

    Examples
    --------
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     routing_enabled()
    True
    """
    return bool(sklearn.get_config().get("enable_metadata_routing", False))


def check_params(params: Any, fit_params: Any, caller: str) -> dict[str, Any] | None:
    """Accept scikit-learn's ``params`` or parcv's ``fit_params``, not both.

    Returns
    -------
    dict or None
        ``params`` as a dict (None when not given).

    Raises
    ------
    TypeError
        Both given, or ``params`` not a dict of str to value.

    Examples
    --------
    >>> check_params(None, None, "cross_validate") is None
    True
    >>> check_params({"a": 1}, {"b": 2}, "cross_validate")
    Traceback (most recent call last):
    ...
    TypeError: cross_validate takes params= (scikit-learn's name) or fit_params= (parcv's), not \
both; got params with keys ['a'] and fit_params with keys ['b']. Pass them all in params=.
    """
    if params is None:
        return None
    if fit_params is not None:
        keys = sorted(map(str, params)) if isinstance(params, Mapping) else params
        raise TypeError(
            f"{caller} takes params= (scikit-learn's name) or fit_params= (parcv's), not both; "
            f"got params with keys {keys!r} and fit_params with keys "
            f"{sorted(map(str, fit_params))!r}. Pass them all in params=."
        )
    if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
        raise TypeError(
            f"params must be a dict of metadata name -> value; got {params!r}. Pass e.g. "
            "params={'sample_weight': w}, or None for no metadata."
        )
    return dict(params)


def check_no_groups(groups: Any) -> None:
    """Refuse ``groups=`` given directly while routing is on (scikit-learn's error and text).

    Examples
    --------
    >>> check_no_groups(None)
    """
    # scikit-learn's own text (its _check_groups_routing_disabled), so that code catching it works.
    if groups is not None and routing_enabled():
        raise ValueError(
            "`groups` can only be passed if metadata routing is not enabled via"
            " `sklearn.set_config(enable_metadata_routing=True)`. When routing is"
            " enabled, pass `groups` alongside other metadata via the `params` argument"
            " instead."
        )


def scorers_router(scorers: Mapping[str, Any]) -> MetadataRouter:
    """The router of several scorers, as scikit-learn's several-metric scorer builds it.

    Examples
    --------
    >>> from sklearn.metrics import get_scorer
    >>> router = scorers_router({"a": get_scorer("accuracy")})
    >>> sorted(name for name, _ in router)
    ['a']
    """
    return MetadataRouter(owner=_MULTIMETRIC_OWNER).add(
        **scorers, method_mapping=MethodMapping().add(caller="score", callee="score")
    )


def _scorer_child(scorers: Mapping[str, Any], multimetric: bool) -> Any:
    return scorers_router(scorers) if multimetric else next(iter(scorers.values()))


def _per_scorer(
    scorers: Mapping[str, Any], multimetric: bool, params: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """Split the scorers' metadata among them, as scikit-learn's scorer does when it scores.

    scikit-learn routes among several scorers inside each fit's scoring; parcv
    does it here, once, so that an unrequested argument raises before any fit.
    """
    if not params:
        return {}
    if not multimetric:
        return {name: dict(params) for name in scorers}
    routed = process_routing(scorers_router(scorers), "score", **params)
    return {name: dict(routed[name]["score"]) for name in scorers}


def route_validation(
    caller: str,
    estimator: Any,
    cv: Any,
    scorers: Callable[[], tuple[dict[str, Any], bool]] | None,
    params: Mapping[str, Any] | None,
    *,
    groups: Any = None,
    owner: str | None = None,
    fit_method: str = "fit",
) -> RoutedParams:
    """Route ``params`` of a validation function (``cross_validate``, the curves, ...).

    Parameters
    ----------
    caller : str
        One of scikit-learn's validation functions: it says which children the
        router has, in which order.
    estimator : estimator object
    cv : int, splitter or iterable
    scorers : callable or None
        Returns ``(scorers by name, several metrics or not)``; called only
        when routing is on and metadata is given. None: no scorer (``cross_val_predict``).
    params : dict or None
    groups : array-like, default=None
        Given directly: refused when routing is on, as scikit-learn does.
    owner : str, default=None
        The name errors give the call (``caller`` by default).
    fit_method : {"fit", "partial_fit"}, default="fit"
        The estimator method whose routed metadata the fits get (``partial_fit``
        for an incremental learning curve, which requests it there).

    Returns
    -------
    RoutedParams
        Routing off: everything to ``fit``, ``groups`` to the splitter.

    Raises
    ------
    ValueError
        ``groups`` given with routing on.
    sklearn.exceptions.UnsetMetadataPassedError, TypeError
        scikit-learn's errors for metadata nothing requests.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> route_validation("cross_validate", Ridge(), 5, None, {"sample_weight": [1.0]}).fit
    {'sample_weight': [1.0]}
    """
    given = dict(params or {})
    if not routing_enabled():
        return RoutedParams(fit=given, split={} if groups is None else {"groups": groups})
    check_no_groups(groups)
    if not given:  # scikit-learn's process_routing routes nothing for no metadata
        return RoutedParams()
    name = owner or caller
    named, multimetric = scorers() if scorers is not None else ({}, False)
    router = MetadataRouter(owner=name)
    for child in _CHILDREN[caller]:
        if child == "splitter":
            splitter = cv if hasattr(cv, "split") else None  # ints and lists request nothing
            router.add(splitter=splitter, method_mapping=_mapping("split"))
        elif child == "estimator":
            mapping = _mapping("fit")
            if caller == "learning_curve":
                mapping.add(caller="fit", callee="partial_fit")
            router.add(estimator=estimator, method_mapping=mapping)
        elif named:
            child_router = _scorer_child(named, multimetric)
            router.add(scorer=child_router, method_mapping=_mapping("score"))
    try:
        routed = process_routing(router, "fit", **given)
    except UnsetMetadataPassedError as err:
        # As scikit-learn: the user called the function, not its "fit".
        raise UnsetMetadataPassedError(
            message=str(err).replace(f"{name}.fit", name),
            unrequested_params=err.unrequested_params,
            routed_params=err.routed_params,
        ) from err
    score = dict(routed["scorer"]["score"]) if named else {}
    return RoutedParams(
        # learning_curve(exploit_incremental_learning=True) fits with partial_fit.
        fit=dict(routed["estimator"][fit_method]),
        score=_per_scorer(named, multimetric, score),
        split=dict(routed["splitter"]["split"]),
        enabled=True,
    )


def _mapping(callee: str) -> MethodMapping:
    return MethodMapping().add(caller="fit", callee=callee)


def route_search(
    owner: Any,
    estimator: Any,
    cv: Any,
    scorers: Callable[[], tuple[dict[str, Any], bool]],
    params: Mapping[str, Any] | None,
) -> RoutedParams:
    """Route the ``**params`` of a search's ``fit``, as scikit-learn's ``BaseSearchCV``.

    Routing on: scikit-learn's router of a search (estimator ``fit``, scorers,
    splitter). Routing off: ``groups`` to the splitter, the rest to ``fit``, and
    ``sample_weight`` also to every scorer that accepts it, with scikit-learn's
    warning for each one that does not.

    Parameters
    ----------
    owner : object
        The search (its repr is in the warnings; its class in the errors), or a name.
    estimator : estimator object
    cv : int, splitter or iterable
    scorers : callable
        Returns ``(scorers by name, several metrics or not)``.
    params : dict or None

    Returns
    -------
    RoutedParams

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.metrics import get_scorer
    >>> routed = route_search("search", Ridge(), 5, lambda: ({"score": get_scorer("r2")}, False),
    ...                       {"sample_weight": [1.0, 2.0], "groups": [0, 1]})
    >>> routed.fit, routed.score, routed.groups
    ({'sample_weight': [1.0, 2.0]}, {'score': {'sample_weight': [1.0, 2.0]}}, [0, 1])
    """
    given = dict(params or {})
    if routing_enabled():
        if not given:
            return RoutedParams()
        named, multimetric = scorers()
        child = _scorer_child(named, multimetric)
        router = (
            MetadataRouter(owner=owner)
            .add(estimator=estimator, method_mapping=_mapping("fit"))
            .add(
                scorer=child,
                method_mapping=MethodMapping()
                .add(caller="score", callee="score")
                .add(caller="fit", callee="score"),
            )
            .add(splitter=cv if hasattr(cv, "split") else None, method_mapping=_mapping("split"))
        )
        routed = process_routing(router, "fit", **given)
        return RoutedParams(
            fit=dict(routed["estimator"]["fit"]),
            score=_per_scorer(named, multimetric, dict(routed["scorer"]["score"])),
            split=dict(routed["splitter"]["split"]),
            enabled=True,
        )
    groups = given.pop("groups", None)
    weights = given.get("sample_weight")
    score: dict[str, dict[str, Any]] = {}
    if weights is not None:
        named, multimetric = scorers()
        accepting = _weighted_scorers(owner, named, multimetric)
        score = {name: {"sample_weight": weights} for name in accepting}
    return RoutedParams(fit=given, score=score, split={} if groups is None else {"groups": groups})


def _accepts_weight(scorer: Any) -> bool:
    accept = getattr(scorer, "_accept_sample_weight", None)
    if accept is not None:
        return bool(accept())
    try:
        return "sample_weight" in signature(scorer).parameters
    except (TypeError, ValueError):  # a callable without a signature
        return False


def _weighted_scorers(owner: Any, scorers: Mapping[str, Any], multimetric: bool) -> list[str]:
    """The scorers that take ``sample_weight``; scikit-learn's warning for each other one."""
    accepting = []
    for name, scorer in scorers.items():
        if _accepts_weight(scorer):
            accepting.append(name)
            continue
        what = f"{name}={scorer}" if multimetric else f"{scorer}"
        warn_at_caller(
            f"The scoring {what} does not support sample_weight, which may lead to "
            f"statistically incorrect results when fitting {owner} with sample_weight. ",
            UserWarning,
        )
    return accepting


def rows_of_params(
    params: Mapping[str, Any], rows: NDArray[np.intp], n_samples: int
) -> dict[str, Any]:
    """The arguments of one side of a split: per-sample values indexed by ``rows``.

    As scikit-learn's ``_fit_and_score`` does (``_check_method_params``): a
    value with ``n_samples`` rows (an array, a list, a sparse matrix) is
    indexed, anything else is passed as is.

    Examples
    --------
    >>> rows_of_params({"w": np.arange(4.0), "k": 3}, np.array([0, 2]), 4)
    {'w': array([0., 2.]), 'k': 3}
    """
    out = {}
    for name, value in params.items():
        if n_rows_of(value) != n_samples:
            out[name] = value
        elif type(value) is np.ndarray:
            out[name] = value[rows, ...]  # _safe_indexing's expression, without its checks
        else:
            indexable = value.tocsr() if sp.issparse(value) else value
            out[name] = _safe_indexing(indexable, rows)
    return out
