"""Turn the tables of a checked spec into estimators, spaces, CV schemes and scorers."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from sklearn import model_selection as ms
from sklearn.metrics import get_scorer_names
from sklearn.pipeline import Pipeline

from parcv.cli.spec import MISSING, SpecError, check_keys, check_type
from parcv.engine.rounds import fixed_candidates
from parcv.errors import closest_names, did_you_mean, suggest
from parcv.plan.halving import Halving, Hyperband
from parcv.plan.interval import INTERVAL_LOSSES
from parcv.plan.iterations import Iterations
from parcv.plan.records import PREDICT_METHODS
from parcv.plan.selection import Selection
from parcv.plan.space import RandomSpace
from parcv.plan.splits import ThreeWayHoldOut
from parcv.stats.racing import Racing
from parcv.strategies.check import check_strategy

__all__ = [
    "build_estimator",
    "build_halving",
    "build_sampler",
    "build_hyperband",
    "build_iterations",
    "build_racing",
    "build_scheme",
    "build_scoring",
    "build_space",
    "use_spec_folder",
]

GRIDS = ("range", "linspace", "logspace", "geomspace")
DISTRIBUTIONS = ("loguniform", "uniform", "int")
SCHEMES = (
    "auto",
    "kfold",
    "stratified",
    "group",
    "stratified_group",
    "repeated",
    "repeated_stratified",
    "shuffle_split",
    "stratified_shuffle_split",
    "loo",
    "leave_one_group_out",
    "holdout",
)
SCHEME_KEYS = (
    "kind",
    "n_splits",
    "n_repeats",
    "shuffle",
    "test_size",
    "train",
    "valid",
    "test",
    "random_state",
)


def _import_class(path: Any, key: str) -> type:
    check_type(path, (str,), key, "an import path such as 'sklearn.svm.SVC'")
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as err:
        did = suggest(_class_paths_near(path))
        raise SpecError(
            key,
            path,
            "the import path of an estimator class, e.g. 'sklearn.linear_model.Ridge'",
            hint=" ".join(filter(None, [did, _import_failure(err, module)])),
        ) from None
    if not isinstance(cls, type) or not hasattr(cls, "fit") or not hasattr(cls, "get_params"):
        raise SpecError(key, path, "a scikit-learn compatible estimator class (fit, get_params)")
    return cls


def use_spec_folder(folder: str | Path) -> str:
    """Put a spec's folder first on this process's import path; return it, absolute.

    A spec's own modules (``class = "mod2.Tx"``, ``python:mod2.load``) are then
    imported from beside the spec, as a script's are from beside the script. Only
    the CLI calls this, in its own process: the workers of a run import the same
    modules from the folders its plan records (:func:`~parcv.engine.backends.base.
    shipped_for_workers`), never from this process's state.

    Examples
    --------
    >>> import sys
    >>> saved = list(sys.path)
    >>> use_spec_folder(".") == sys.path[0]
    True
    >>> sys.path[:] = saved
    """
    where = str(Path(folder).resolve())
    if where in sys.path:
        sys.path.remove(where)
    sys.path.insert(0, where)
    _forget_shadowed(Path(where))
    return where


def _forget_shadowed(folder: Path) -> None:
    """Drop modules imported from elsewhere whose name a module of ``folder`` now takes.

    With the folder first on the path, a fresh import finds its ``mine.py``; a
    ``mine`` imported earlier in this process from another folder (an earlier
    spec's) would be a stale module. It is dropped, with its submodules.
    """
    for name, module in list(sys.modules.items()):
        top = name.partition(".")[0]
        own = folder / f"{top}.py"
        if not (own.is_file() or (folder / top / "__init__.py").is_file()):
            continue
        where = getattr(module, "__file__", None)
        if where is not None and not Path(where).resolve().is_relative_to(folder):
            del sys.modules[name]


def _import_failure(err: Exception, module: str) -> str:
    """Why a class path does not import; for a module nowhere, where parcv looked and the fix."""
    top = module.partition(".")[0]
    if not (isinstance(err, ModuleNotFoundError) and err.name == top):
        return f"({type(err).__name__}: {err})"
    return (
        f"No module named {top!r}: parcv looked in the spec's folder, then on the rest of "
        f"Python's import path (sys.path: {sys.path[0] or '.'}, ...). Put {top}.py beside "
        "the spec, install the package that has it, or add its folder to PYTHONPATH."
    )


def _class_paths_near(path: str) -> list[str]:
    """Import paths a mistyped class path may have meant: the closest classes of the
    closest modules of its package when the module is misspelt (both halves corrected),
    else the closest classes of its module or of scikit-learn."""
    module, _, name = path.rpartition(".")
    try:
        found = importlib.import_module(module)
    except (ImportError, ValueError):
        near = [
            paths[c]
            for paths in map(_public_classes, _modules_near(module))
            for c in closest_names(name, paths)
        ]
        if near:
            return near[:3]
        found = None
    paths = _sklearn_paths() if found is None or module.startswith("sklearn") else {}
    if found is not None:
        paths.update(_public_classes(module))
    return [paths[c] for c in closest_names(name, paths)]


def _modules_near(module: str) -> list[str]:
    """The modules of the package of a module that does not import, closest first."""
    parent, _, last = module.rpartition(".")
    try:
        package = importlib.import_module(parent)
    except (ImportError, ValueError):
        return []
    if not hasattr(package, "__path__"):
        return []
    subs = [m.name for m in pkgutil.iter_modules(package.__path__)]
    return [f"{parent}.{m}" for m in closest_names(last, subs)]


def _public_classes(module: str) -> dict[str, str]:
    """The public classes a module holds: name to import path ({} if it does not import)."""
    try:
        found = importlib.import_module(module)
    except (ImportError, ValueError):
        return {}
    return {
        n: f"{module}.{n}" for n, v in vars(found).items() if isinstance(v, type) and n[:1] != "_"
    }


def _sklearn_paths() -> dict[str, str]:
    """scikit-learn's estimators: name to public import path."""
    from sklearn.utils import all_estimators

    paths = {}
    for name, cls in all_estimators():
        module = ".".join(p for p in cls.__module__.split(".") if not p.startswith("_"))
        paths[name] = f"{module}.{name}"
    return paths


def build_value(value: Any, key: str, seed: int | None) -> Any:
    """Convert a TOML value: ``"None"`` is None, a table with ``class`` an estimator."""
    if isinstance(value, str) and value == "None":
        return None
    if isinstance(value, dict) and "class" in value:
        return build_estimator(value, key, seed)
    if isinstance(value, dict):
        return {k: build_value(v, f"{key}.{k}", seed) for k, v in value.items()}
    if isinstance(value, list):
        return [build_value(v, f"{key}[{i}]", seed) for i, v in enumerate(value)]
    return value


def _param_names(cls: type) -> list[str]:
    """The parameters a spec may set: its constructor's, with ``get_params()`` of the class
    built with its defaults (every parameter of a ``**kwargs`` constructor that follows
    scikit-learn's conventions, as XGBClassifier's); a class that needs an argument (no
    default, as SelectFromModel's estimator) is checked by its constructor alone."""
    signature = inspect.signature(cls)
    names = [n for n, p in signature.parameters.items()
             if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]  # fmt: skip
    try:
        listed = cls().get_params(deep=False)
    except (TypeError, ValueError):  # a required argument: the signature names them all
        return names
    return names + [n for n in listed if n not in names]


def _pipeline(steps: Any, key: str, seed: int | None) -> Pipeline:
    check_type(steps, (list,), f"{key}.steps", "a list of tables {name = ..., class = ...}")
    built: list[tuple[str, Any]] = []
    for i, step in enumerate(steps):
        where = f"{key}.steps[{i}]"
        check_type(step, (dict,), where, "a table {name = 'model', class = '...', params = {}}")
        check_keys(step, ("name", "class", "params"), where)
        est = build_estimator({k: v for k, v in step.items() if k != "name"}, where, seed)
        name = step.get("name", type(est).__name__.lower())
        if name in dict(built):
            raise SpecError(f"{where}.name", name, "a name not used by another step")
        built.append((check_type(name, (str,), f"{where}.name", "a string"), est))
    if not built:
        raise SpecError(f"{key}.steps", steps, "at least one step")
    return Pipeline(built)


def build_estimator(table: Mapping[str, Any], key: str = "estimator", seed: int | None = 0) -> Any:
    """Build an estimator from ``{class, params}`` or a pipeline from ``{steps}``.

    ``params`` may name any parameter of the class's ``get_params()`` (also those
    of a ``**kwargs`` constructor, as xgboost's); any other name is refused with
    the closest ones, before anything is fitted. ``random_state`` is set to
    ``seed`` when the class has one and the spec does not set it, so every run
    of a spec is reproducible.

    Examples
    --------
    >>> build_estimator({"class": "sklearn.linear_model.Ridge", "params": {"alpha": 2.0}})
    Ridge(alpha=2.0, random_state=0)
    """
    check_keys(table, ("class", "params", "steps"), key)
    if "steps" in table:
        if "class" in table or "params" in table:
            raise SpecError(f"{key}.steps", table["steps"], "either steps or class/params")
        return _pipeline(table["steps"], key, seed)
    if "class" not in table:
        raise SpecError(f"{key}.class", MISSING, "an estimator import path, or steps = [...]")
    cls = _import_class(table["class"], f"{key}.class")
    params = check_type(table.get("params", {}), (dict,), f"{key}.params", "a table")
    names = _param_names(cls)
    for name, value in params.items():
        if name not in names:
            raise SpecError(
                f"{key}.params.{name}",
                value,
                f"parameters of {cls.__name__}: {names}",
                hint=did_you_mean(name, names),
            )
    built = {n: build_value(v, f"{key}.params.{n}", seed) for n, v in params.items()}
    if seed is not None and "random_state" in names and "random_state" not in built:
        built["random_state"] = seed
    return cls(**built)


def _numbers(spec: Any, key: str, n: int, what: str) -> list[float]:
    ok = isinstance(spec, list) and len(spec) in (n, 3 if what == "range" else n)
    if not ok or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spec):
        raise SpecError(key, spec, f"{what} = [{', '.join(['a', 'b', 'n'][:n])}] of numbers")
    return list(spec)


def _values(value: Any, key: str, random: bool, seed: int | None) -> Any:
    if isinstance(value, list):
        if not value:
            raise SpecError(key, value, "a non-empty list of values")
        return build_value(value, key, seed)
    allowed = f"a list of values, or a table with one of {list(GRIDS + DISTRIBUTIONS)}"
    if not isinstance(value, dict) or len(value) != 1 or "class" in value:
        raise SpecError(key, value, allowed, hint=f"Wrap a single value in a list: [{value!r}].")
    (kind, spec), where = next(iter(value.items())), f"{key}.{next(iter(value))}"
    if kind == "range":
        if (
            not isinstance(spec, list)
            or not 2 <= len(spec) <= 3
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in spec)
        ):
            raise SpecError(where, spec, "range = [start, stop] or [start, stop, step] of ints")
        return list(range(*spec))
    if kind in ("linspace", "logspace", "geomspace"):
        a, b, n = _numbers(spec, where, 3, kind)
        if not isinstance(n, int) or n < 1:
            raise SpecError(where, spec, f"{kind} = [start, stop, n] with an int n >= 1")
        return [float(v) for v in getattr(np, kind)(a, b, n)]
    if kind not in DISTRIBUTIONS:
        raise SpecError(key, value, allowed)
    if not random:
        raise SpecError(
            where,
            spec,
            "lists or grids (range, linspace, logspace, geomspace) in a grid search",
            hint="Set [search] n_iter = N for a random search.",
        )
    a, b = _numbers(spec, where, 2, kind)
    if not a < b or (kind == "loguniform" and a <= 0):
        raise SpecError(
            where, spec, f"{kind} = [low, high] with {'0 < ' * (kind == 'loguniform')}low < high"
        )
    if kind == "int":
        return stats.randint(int(a), int(b) + 1)
    return stats.loguniform(a, b) if kind == "loguniform" else stats.uniform(a, b - a)


def _grid(table: Any, key: str, random: bool, seed: int | None) -> dict[str, Any]:
    check_type(table, (dict,), key, "a table of parameter = values")
    if not table:
        raise SpecError(key, table, "at least one parameter")
    return {name: _values(v, f"{key}.{name}", random, seed) for name, v in table.items()}


def build_space(space: Any, search: Mapping[str, Any], seed: int) -> tuple[Any, Selection]:
    """Build a grid (dict or list of dicts) or a RandomSpace, and the selection rule.

    Examples
    --------
    >>> build_space({"alpha": {"logspace": [-1, 1, 3]}}, {}, 0)[0]
    {'alpha': [0.1, 1.0, 10.0]}
    """
    strategy = search.get("strategy", "random" if "n_iter" in search else "grid")
    if strategy not in ("grid", "random"):
        raise SpecError("search.strategy", strategy, "'grid' or 'random'")
    random = strategy == "random"
    if "sampler" in search:  # a sampler proposes from the distributions: no grid, no draw
        if not isinstance(space, dict):
            raise SpecError("space", space, "one table of distributions or lists with a sampler")
        return _grid(space, "space", True, seed), _selection(search, [space])
    if random != ("n_iter" in search):
        raise SpecError(
            "search.n_iter",
            search.get("n_iter", MISSING),
            "an int >= 1 exactly when strategy = 'random'",
        )
    grids = (
        [_grid(space, "space", random, seed)]
        if isinstance(space, dict)
        else [_grid(t, f"space[{i}]", random, seed) for i, t in enumerate(space)]
    )
    built: Any = grids[0] if isinstance(space, dict) else grids
    if random:
        n_iter = check_type(search["n_iter"], (int,), "search.n_iter", "an int >= 1")
        state = check_type(
            search.get("random_state", seed), (int,), "search.random_state", "an int"
        )
        if n_iter < 1:
            raise SpecError("search.n_iter", n_iter, "an int >= 1")
        built = RandomSpace(built, n_iter=n_iter, random_state=state)
    return built, _selection(search, grids)


def _selection(search: Mapping[str, Any], grids: list[dict[str, Any]]) -> Selection:
    """The rule; a one_se complexity must be a numeric parameter of every grid."""
    rule, complexity = search.get("selection", "best"), search.get("complexity", MISSING)
    if rule not in ("best", "one_se"):
        raise SpecError("search.selection", rule, "'best' or 'one_se'")
    if rule == "best" and complexity is not MISSING:
        raise SpecError(
            "search.complexity", complexity, "no complexity with selection = 'best'",
            hint="Set selection = 'one_se' to use it, or remove complexity.",
        )  # fmt: skip
    if rule == "best":
        return Selection()
    names = sorted({name for grid in grids for name in grid})
    allowed = f"the name of a numeric parameter of the space (larger = more complex): {names}"
    if not isinstance(complexity, str) or complexity not in names:
        hint = did_you_mean(complexity, names) if isinstance(complexity, str) else ""
        raise SpecError("search.complexity", complexity, allowed, hint=hint)
    for i, grid in enumerate(grids):
        where = "space" if len(grids) == 1 else f"space[{i}]"
        values = grid.get(complexity, MISSING)
        if values is MISSING or (isinstance(values, list) and not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        )):  # fmt: skip
            found = "does not set it" if values is MISSING else f"has {complexity} = {values!r}"
            raise SpecError("search.complexity", complexity, allowed, hint=f"{where} {found}.")
    return Selection("one_se", complexity)


def _scheme_table(value: Any, key: str) -> dict[str, Any]:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 2:
            raise SpecError(key, value, "an int k >= 2 or a table {kind = ..., n_splits = ...}")
        return {"kind": "auto", "n_splits": value}
    check_type(value, (dict,), key, "an int k >= 2 or a table {kind = ..., n_splits = ...}")
    check_keys(value, SCHEME_KEYS, key)
    if value.get("kind", "auto") not in SCHEMES:
        kind = value.get("kind")
        hint = did_you_mean(kind, SCHEMES)
        raise SpecError(f"{key}.kind", kind, f"one of {list(SCHEMES)}", hint=hint)
    return {"kind": "auto", **value}


def _splitter(kind: str, t: dict[str, Any], *, classifier: bool, state: int) -> Any:
    """Make the splitter of one scheme kind from its (checked) table."""
    n_splits, n_repeats, test_size = (
        t.get("n_splits", 5),
        t.get("n_repeats", 2),
        t.get("test_size", 0.2),
    )
    seeded = {"shuffle": t.get("shuffle", True), "random_state": None}
    if seeded["shuffle"]:
        seeded["random_state"] = state
    repeated = ms.RepeatedStratifiedKFold if classifier else ms.RepeatedKFold
    makers: dict[str, Any] = {
        "kfold": lambda: ms.KFold(n_splits, **seeded),
        "stratified": lambda: ms.StratifiedKFold(n_splits, **seeded),
        "group": lambda: ms.GroupKFold(n_splits, **seeded),
        "stratified_group": lambda: ms.StratifiedGroupKFold(n_splits, **seeded),
        "repeated": lambda: repeated(n_splits=n_splits, n_repeats=n_repeats, random_state=state),
        "repeated_stratified": lambda: ms.RepeatedStratifiedKFold(
            n_splits=n_splits, n_repeats=n_repeats, random_state=state
        ),
        "shuffle_split": lambda: ms.ShuffleSplit(n_splits, test_size=test_size, random_state=state),
        "stratified_shuffle_split": lambda: ms.StratifiedShuffleSplit(
            n_splits, test_size=test_size, random_state=state
        ),
        "loo": ms.LeaveOneOut,
        "leave_one_group_out": ms.LeaveOneGroupOut,
        "holdout": lambda: ThreeWayHoldOut(
            t.get("train", 0.6), t.get("valid", 0.2), t.get("test", 0.2), random_state=state
        ),
    }
    return makers[kind]()


def build_scheme(
    value: Any, key: str, *, classifier: bool, grouped: bool, seed: int, holdout: bool = False
) -> Any:
    """Build a scikit-learn splitter (or a ThreeWayHoldOut) from ``5`` or ``{kind = ...}``.

    Shuffling splitters shuffle by default, seeded with the spec's seed;
    ``holdout`` allows a three-way hold-out (an outer scheme, or the cv of a search).

    Examples
    --------
    >>> build_scheme(3, "cv.cv", classifier=False, grouped=False, seed=0)
    KFold(n_splits=3, random_state=0, shuffle=True)
    """
    t = _scheme_table(value, key)
    kind = t["kind"]
    if kind == "auto":
        kind = "group" if grouped else "stratified" if classifier else "kfold"
    if "group" in kind and not grouped:
        raise SpecError(
            f"{key}.kind",
            kind,
            "a scheme without groups, since the data has none",
            hint="Set [data] groups = 'column' for grouped CV.",
        )
    if kind == "holdout" and not holdout:
        raise SpecError(
            f"{key}.kind",
            kind,
            f"one of {[s for s in SCHEMES if s != 'holdout']}",
            hint="A three-way hold-out is an outer scheme (or the cv of a search).",
        )
    state = check_type(t.get("random_state", seed), (int,), f"{key}.random_state", "an int")
    check_type(t.get("shuffle", True), (bool,), f"{key}.shuffle", "true or false")
    check_type(t.get("n_splits", 5), (int,), f"{key}.n_splits", "an int >= 2")
    try:
        return _splitter(kind, t, classifier=classifier, state=state)
    except (TypeError, ValueError) as err:
        raise SpecError(key, value, f"valid arguments of {kind}", hint=str(err)) from None


def _metrics(metrics: Any) -> list[str]:
    """Check scorer names; a single name becomes a one-item list."""
    if metrics is None:
        return []
    listed = [metrics] if isinstance(metrics, str) else metrics
    check_type(listed, (list,), "scoring.metrics", "a scorer name or a list of names")
    names = list(get_scorer_names())
    for name in listed:
        if name not in names:
            raise SpecError(
                "scoring.metrics",
                name,
                "scikit-learn scorer names (see sklearn.metrics.get_scorer_names())",
                hint=did_you_mean(name, names),
            )
    return list(listed)


def build_scoring(table: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """Return the scoring keyword arguments (scoring, refit, return_train_score, error_score,
    return_predictions, the interval options).

    Examples
    --------
    >>> build_scoring({"metrics": ["r2", "neg_mean_squared_error"], "refit": "r2"}, "search")
    {'scoring': ['r2', 'neg_mean_squared_error'], 'refit': 'r2'}
    >>> build_scoring({"metrics": "r2"}, "search")
    {'scoring': ['r2'], 'refit': 'r2'}
    """
    out: dict[str, Any] = {}
    metrics = table.get("metrics")
    listed = _metrics(metrics)
    if metrics is not None:
        # One name is kept as a one-metric list, so results name the metric, not "score".
        out["scoring"] = listed
        if mode != "cross_validate" and len(listed) == 1:
            out["refit"] = listed[0]
        if mode != "cross_validate" and len(listed) > 1 and "refit" not in table:
            raise SpecError("scoring.refit", MISSING, f"the metric of {listed} that selects")
    if "refit" in table:
        if mode == "cross_validate" or table["refit"] not in listed:
            raise SpecError(
                "scoring.refit",
                table["refit"],
                f"one of scoring.metrics {listed} (for a search or nested CV)",
                hint=did_you_mean(table["refit"], listed) if mode != "cross_validate" else "",
            )
        out["refit"] = table["refit"]
    if "return_train_score" in table:
        out["return_train_score"] = check_type(
            table["return_train_score"], (bool,), "scoring.return_train_score", "true or false"
        )
    if "predictions" in table:
        out["return_predictions"] = _predictions_option(table["predictions"])
    if "error_score" in table:
        value = table["error_score"]
        if value not in ("raise", "nan") and (
            isinstance(value, (bool, str)) or not isinstance(value, (int, float))
        ):
            raise SpecError("scoring.error_score", value, "'raise', 'nan' or a number")
        out["error_score"] = float("nan") if value == "nan" else value
    out.update(_interval_options(table, mode))
    _check_interval_metric(out, mode)
    return out


def _check_interval_metric(options: Mapping[str, Any], mode: str) -> None:
    """An interval averages per-sample losses: its metric (the refit one) must have them."""
    listed = options.get("scoring")
    if "interval" not in options or not listed:
        return
    metric = listed[0] if mode == "cross_validate" else options.get("refit", listed[0])
    if metric not in INTERVAL_LOSSES:
        key = "scoring.metrics" if mode == "cross_validate" else "scoring.refit"
        raise SpecError(key, metric, f"a metric with a per-sample loss for scoring.interval: "
                        f"one of {sorted(INTERVAL_LOSSES)}",
                        hint=f"{metric!r} is not an average of per-sample losses.")  # fmt: skip


def _predictions_option(value: Any) -> bool | tuple[str, ...]:
    """``[scoring] predictions``: true/false, a method name or a list of them.

    Examples
    --------
    >>> _predictions_option(["predict", "predict_proba"])
    ('predict', 'predict_proba')
    """
    expected = (
        "true, false, or method names among 'predict', 'predict_proba', "
        "'predict_log_proba', 'decision_function'"
    )
    if isinstance(value, bool):
        return value
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(n in PREDICT_METHODS for n in names):
        raise SpecError("scoring.predictions", value, expected)
    return tuple(names)


def _interval_options(table: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """``scoring.interval`` (with confidence, ncv_repetitions): a model's or a selection's.

    A cross_validate spec asks for ``"ncv"``, the interval of its model; a nested
    spec for ``"ncv"`` or ``"bbc"``, the interval of its whole selection
    (``nested_cv(..., interval=...)``). A search spec has no such interval.

    Examples
    --------
    >>> _interval_options({"interval": "ncv", "ncv_repetitions": 5}, "nested")
    {'interval': 'ncv', 'ncv_repetitions': 5}
    """
    keys = [k for k in ("interval", "confidence", "ncv_repetitions") if k in table]
    if not keys:
        return {}
    if mode == "search":
        raise SpecError(
            f"scoring.{keys[0]}", table[keys[0]], "only in a cross_validate or nested spec",
            hint='The interval of a selection is a nested CV\'s: make it a nested spec ([cv] '
            'mode = "nested", with outer and inner) and keep interval here; for one '
            "model's interval, cross-validate it in a spec of its own.",
        )  # fmt: skip
    offered = ("ncv",) if mode == "cross_validate" else ("ncv", "bbc")
    allowed = " or ".join(repr(name) for name in offered)
    if "interval" not in table:
        raise SpecError("scoring.interval", MISSING, f"{allowed} when confidence or "
                        "ncv_repetitions is set")  # fmt: skip
    interval = table["interval"]
    if interval not in offered:
        raise SpecError("scoring.interval", interval, allowed)
    if interval == "bbc" and "ncv_repetitions" in table:
        raise SpecError("scoring.ncv_repetitions", table["ncv_repetitions"],
                        'only with interval = "ncv"',
                        hint='BBC-CV takes no extra fits; drop it.')  # fmt: skip
    out: dict[str, Any] = {"interval": interval}
    if "confidence" in table:
        out["confidence"] = check_type(table["confidence"], (float,), "scoring.confidence",
                                       "a float in (0, 1), e.g. 0.9")  # fmt: skip
    if "ncv_repetitions" in table:
        out["ncv_repetitions"] = check_type(table["ncv_repetitions"], (int,),
                                            "scoring.ncv_repetitions", "an int >= 1")  # fmt: skip
    return out


def check_interval_strategy(options: Mapping[str, Any], search: Mapping[str, Any]) -> None:
    """Refuse ``scoring.interval = "bbc"`` of a nested spec whose search is not a fixed set.

    BBC-CV bootstraps the choice among a fixed set of candidates, each scored on
    every row; a strategy says whether it has one
    (:func:`~parcv.engine.rounds.fixed_candidates`). ``options`` are the job's
    (the built strategy among them), ``search`` the spec's ``[search]`` table.
    """
    asked = options.get("interval")
    if not (isinstance(asked, str) and asked == "bbc"):
        return
    strategy = check_strategy(options.get("strategy"), halving=options.get("halving"),
                              iterations=options.get("iterations"))  # fmt: skip
    if strategy is None or fixed_candidates(strategy):
        return
    key = next((k for k in ("sampler", "halving", "hyperband", "iterations") if k in search),
               "strategy")  # fmt: skip
    raise SpecError(
        "scoring.interval",
        asked,
        f'"ncv" with search.{key}',
        hint=f"BBC-CV bootstraps the choice among a fixed set of candidates, each scored on "
        f"every row; search.{key} proposes candidates from the scores before or stops some "
        'early, so it has no such set. Ask for interval = "ncv" (it reruns the whole search '
        f"on each of its train/test pairs), or drop search.{key} to search a grid.",
    )


def build_racing(search: Mapping[str, Any]) -> Racing | None:
    """Build ``search.racing`` (a table of burn_in, alpha, test) into a Racing, or None.

    Examples
    --------
    >>> build_racing({"racing": {"burn_in": 3, "alpha": 0.05}})
    Racing(burn_in=3, alpha=0.05, test='corrected_t')
    >>> build_racing({}) is None
    True
    """
    table = search.get("racing", MISSING)
    if table is MISSING:
        return None
    allowed = "a table with any of burn_in (int >= 2), alpha (in (0, 1)), test"
    if not isinstance(table, Mapping):
        raise SpecError("search.racing", table, allowed, hint="e.g. racing = { burn_in = 3 }")
    check_keys(table, ("burn_in", "alpha", "test"), "search.racing")
    try:
        return Racing(**table)
    except (TypeError, ValueError) as err:
        name = next((k for k in ("burn_in", "alpha", "test") if str(err).startswith(k)), "")
        key = f"search.racing.{name}" if name else "search.racing"
        raise SpecError(key, table.get(name, table), allowed, hint=str(err)) from err


_ITERATION_KEYS = ("param", "up_to", "every", "patience", "tol", "method")


def build_iterations(search: Mapping[str, Any]) -> Iterations | None:
    """Build ``search.iterations`` (a table of Iterations' fields) into one, or None.

    Examples
    --------
    >>> build_iterations({"iterations": {"param": "max_iter", "up_to": 100, "every": 10}})
    Iterations(param='max_iter', up_to=100, every=10, patience=None, tol=0.0, method='auto')
    >>> build_iterations({}) is None
    True
    """
    table = search.get("iterations", MISSING)
    if table is MISSING:
        return None
    allowed = "a table with param and up_to, and any of every, patience, tol, method"
    hint = 'e.g. iterations = { param = "n_estimators", up_to = 500, every = 10, patience = 5 }'
    if not isinstance(table, Mapping) or "param" not in table or "up_to" not in table:
        raise SpecError("search.iterations", table, allowed, hint=hint)
    check_keys(table, _ITERATION_KEYS, "search.iterations")
    try:
        return Iterations(**table)
    except (TypeError, ValueError) as err:
        name = next((k for k in _ITERATION_KEYS if f"Iterations.{k} " in str(err)), "")
        key = f"search.iterations.{name}" if name else "search.iterations"
        raise SpecError(key, table.get(name, table), allowed, hint=str(err)) from err


_HALVING_KEYS = (
    "resource",
    "factor",
    "min_resources",
    "max_resources",
    "aggressive_elimination",
    "random_state",
)


def build_halving(search: Mapping[str, Any], seed: int) -> Halving | None:
    """Build ``search.halving`` (a table of Halving's options) into a Halving, or None.

    ``random_state`` defaults to the spec's seed, so a resumed run draws the same rows.

    Examples
    --------
    >>> halving = build_halving({"halving": {"factor": 2}}, 7)
    >>> halving.factor, halving.random_state
    (2, 7)
    >>> build_halving({}, 0) is None
    True
    """
    table = search.get("halving", MISSING)
    if table is MISSING:
        return None
    allowed = f"a table with any of {', '.join(_HALVING_KEYS)}"
    if not isinstance(table, Mapping):
        raise SpecError("search.halving", table, allowed, hint="e.g. halving = { factor = 3 }")
    check_keys(table, _HALVING_KEYS, "search.halving")
    try:
        return Halving(**{"random_state": seed, **table})
    except (TypeError, ValueError) as err:
        name = next((k for k in _HALVING_KEYS if str(err).startswith(k)), "")
        key = f"search.halving.{name}" if name else "search.halving"
        raise SpecError(key, table.get(name, table), allowed, hint=str(err)) from err


_HYPERBAND_KEYS = ("resource", "max_resources", "factor")


def build_hyperband(search: Mapping[str, Any]) -> Hyperband | None:
    """Build ``search.hyperband`` (resource, max_resources, factor) into a Hyperband, or None.

    Examples
    --------
    >>> build_hyperband({"hyperband": {"resource": "max_iter", "max_resources": 27}}).brackets()[0]
    Bracket(index=3, n_candidates=27, min_resources=1)
    >>> build_hyperband({}) is None
    True
    """
    table = search.get("hyperband", MISSING)
    if table is MISSING:
        return None
    allowed = "a table of resource, max_resources and factor"
    hint = 'e.g. hyperband = { resource = "max_iter", max_resources = 81 }'
    if not isinstance(table, Mapping):
        raise SpecError("search.hyperband", table, allowed, hint=hint)
    check_keys(table, _HYPERBAND_KEYS, "search.hyperband")
    if "halving" in search:
        raise SpecError("search.hyperband", table, "hyperband or halving, not both")
    try:
        return Hyperband(**table)
    except (TypeError, ValueError) as err:
        name = next((k for k in _HYPERBAND_KEYS if str(err).startswith(k)), "")
        key = f"search.hyperband.{name}" if name else "search.hyperband"
        raise SpecError(key, table.get(name, table), allowed, hint=str(err)) from err


def build_sampler(search: Mapping[str, Any]) -> Any:
    """Build ``search.sampler`` (kind, n_trials, batch, seed, sampler options) into a Sampler.

    None when the spec has no sampler. Optuna is needed only then. Without
    ``seed`` the sampler draws from the run's seed (``[run] seed``, ``--seed``):
    the run passes it as ``random_state``, and each outer fold's search draws
    its own trials from it.

    Examples
    --------
    >>> build_sampler({}) is None
    True
    """
    table = search.get("sampler", MISSING)
    if table is MISSING:
        return None
    hint = 'e.g. sampler = { kind = "tpe", seed = 0, n_trials = 60, batch = 8 }'
    if not isinstance(table, Mapping):
        raise SpecError("search.sampler", table, "a table of kind, n_trials, batch, seed",
                        hint=hint)  # fmt: skip
    for other in ("halving", "hyperband", "n_iter"):
        if other in search:
            raise SpecError("search.sampler", table, f"a sampler or {other}, not both")
    from parcv.strategies.sampler import Sampler

    try:
        return Sampler.from_config(table)
    except (TypeError, ValueError, ImportError) as err:
        raise SpecError(
            "search.sampler", table, "a sampler Optuna can build", hint=str(err)
        ) from err


NULLISH = frozenset({"none", "null", "nil", "nan"})


def check_null_spelling(estimator: Any, space: Any) -> None:
    """Refuse a misspelt ``"None"`` (``"none"``, ``"null"``...) a parameter does not accept.

    TOML has no null: a spec writes Python's None as the string ``"None"``.
    Another spelling is passed on as a string, and an estimator whose
    parameter does not accept that string would fail every fit of the
    candidate. Strings a parameter does accept (PCA's
    ``power_iteration_normalizer="none"``) are kept.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> check_null_spelling(LogisticRegression(), {"class_weight": ["balanced", "none"]})
    Traceback (most recent call last):
    ...
    parcv.cli.spec.SpecError: spec: space.class_weight = 'none' is not valid; allowed: "None" \
for Python's None (TOML has no null). scikit-learn refuses 'none': The 'class_weight' parameter \
of LogisticRegression must be an instance of 'dict', a str among {'balanced'} or None. Got \
'none' instead.
    """
    from parcv.plan.space import RandomSpace, parameter_value_error

    grids = space.distributions if isinstance(space, RandomSpace) else space
    for grid in [grids] if isinstance(grids, dict) else grids:
        for name, values in grid.items():
            for value in values if isinstance(values, list) else [values]:
                if not (isinstance(value, str) and value.lower() in NULLISH):
                    continue
                err = parameter_value_error(estimator, name, value)
                if err is not None:
                    raise SpecError(
                        f"space.{name}",
                        value,
                        '"None" for Python\'s None (TOML has no null)',
                        hint=f"scikit-learn refuses {value!r}: {err}",
                    )


def check_space_keys(estimator: Any, space: Any) -> None:
    """Refuse a ``[space]`` key that names no parameter of the estimator, with "did you mean".

    A key under a step that the same grid swaps in (model families) is left
    to the plan's check of each candidate.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> check_space_keys(Ridge(), {"alpah": [1.0]})
    Traceback (most recent call last):
    ...
    parcv.cli.spec.SpecError: spec: space.alpah = [1.0] is not valid; allowed: a parameter of \
Ridge. Did you mean 'alpha'? Nested parameters are written 'step__param'.
    """
    valid = set(estimator.get_params(deep=True))
    grids = [space] if isinstance(space, dict) else list(space)
    for g, grid in enumerate(grids):
        for name, value in grid.items():
            step = name.rpartition("__")[0]
            if name in valid or (step and step in grid):
                continue
            did = did_you_mean(name, valid)
            did += " " if did else ""
            where = "space" if isinstance(space, dict) else f"space[{g}]"
            raise SpecError(
                f"{where}.{name}",
                value,
                f"a parameter of {type(estimator).__name__}",
                hint=f"{did}Nested parameters are written 'step__param'.",
            )
