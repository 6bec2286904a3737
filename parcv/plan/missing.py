"""Missing values (NaN) in X: which step of an estimator they reach, and whether it takes them.

scikit-learn's ``allow_nan`` tag says whether *one* estimator takes NaN, not whether
a pipeline does: a ``StandardScaler`` takes NaN and passes them on to the step after
it, an imputer fills them, a ``ColumnTransformer`` sends each column to its own
part. So the pipeline is walked as the data flows through it. A step's tags decide
where they speak (``allow_nan=False``: it refuses them; a final estimator with
``allow_nan=True`` takes them); where they do not (does a transformer that takes NaN
pass them on? an estimator without tags or ``no_validation``), a tiny fit on a few
rows holding the NaN decides. These probe fits run in the driver on at most
``_N_NAN_ROWS + _N_OTHER_ROWS`` rows, before any unit is dispatched; their warnings
are the probe's, not the run's, and are not shown.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from parcv.errors import shown
from parcv.plan.tokens import TokenError, token

__all__ = [
    "MissingVerdict",
    "NanCells",
    "NanStep",
    "diagnose_missing",
    "find_nan",
    "imputer_name",
    "python_fix",
]

_N_NAN_ROWS = 10  # rows holding a NaN that a probe fit sees
_N_OTHER_ROWS = 20  # complete rows beside them, spread over the data
_IMPUTER = "sklearn.impute.SimpleImputer"
_STRUCTURE = ("steps", "transformers", "transformer_list")


@dataclass(frozen=True, slots=True)
class NanCells:
    """Where X holds NaN: per column, and the first one in reading order.

    Examples
    --------
    >>> cells = find_nan(np.array([[0.0, np.nan], [np.nan, 1.0], [2.0, np.nan]]))
    >>> cells.count, cells.counts.tolist(), cells.first, cells.rows.tolist()
    (3, [1, 2], (0, 1), [0, 1, 2])
    """

    counts: NDArray[np.intp]  # per column of X (0 for a column that cannot hold NaN)
    rows: NDArray[np.intp]  # the rows that hold one, ascending
    first: tuple[int, int]  # row, column

    @property
    def count(self) -> int:
        """How many cells hold NaN."""
        return int(self.counts.sum())


def find_nan(X: Any) -> NanCells | None:
    """Find the NaN of a numeric X: an array, a sparse matrix, or a DataFrame's numeric columns.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    NanCells or None
        None when X holds no NaN, or is no 2-D table of numbers (text and
        other objects are for the estimator's own validation).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"city": ["a", None], "age": [1.0, np.nan]})
    >>> find_nan(frame).first  # the text column's None is no number
    (1, 1)
    """
    if sp.issparse(X):
        coo = sp.coo_matrix(X)
        bad = np.isnan(coo.data) if coo.data.dtype.kind in "fc" else np.zeros(0, bool)
        if not bad.any():
            return None
        rows, columns = coo.row[bad], coo.col[bad]
        first = int(np.lexsort((columns, rows))[0])
        counts = np.bincount(columns, minlength=coo.shape[1]).astype(np.intp)
        return NanCells(
            counts, np.unique(rows).astype(np.intp), (int(rows[first]), int(columns[first]))
        )
    mask = _nan_mask(X)
    if mask is None or not mask.any():
        return None
    row, column = (int(i) for i in np.argwhere(mask)[0])
    counts = mask.sum(axis=0).astype(np.intp)
    return NanCells(counts, np.flatnonzero(mask.any(axis=1)).astype(np.intp), (row, column))


def _nan_mask(X: Any) -> NDArray[np.bool_] | None:
    """NaN cells of a dense 2-D X, False outside numeric columns; None: not a table of numbers."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2:
        mask = np.zeros(X.shape, bool)
        for j, dtype in enumerate(dtypes):
            if getattr(dtype, "kind", "O") in "biuf":  # pandas' nullable numbers too
                column = X.iloc[:, j].to_numpy(dtype=float, na_value=np.nan)
                mask[:, j] = np.isnan(column)
        return mask
    if not isinstance(X, np.ndarray) or X.ndim != 2:
        return None
    values = X
    if values.dtype.kind in "OUS":  # numbers read as text: what the fits will read
        try:
            values = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            return None
    if values.dtype.kind not in "fc":
        return None
    return np.asarray(np.isnan(values))


@dataclass(frozen=True, slots=True)
class NanStep:
    """A step of an estimator that the NaN of X reach.

    ``chain`` holds (name, estimator) of each step from the top estimator down
    to this one (empty: the estimator itself); ``holder`` the steps of the
    Pipeline it is a step of (None: the estimator itself, or a part of a
    ColumnTransformer or FeatureUnion); ``top`` the estimator as given, before the
    candidate's parameters (the fix shows its steps as the user wrote them).
    """

    estimator: Any
    chain: tuple[tuple[str, Any], ...]
    holder: tuple[tuple[str, Any], ...] | None
    top: Any

    @property
    def name(self) -> str:
        """The step's name in what holds it ("" for the estimator itself)."""
        return self.chain[-1][0] if self.chain else ""

    def describe(self) -> str:
        """The step in words: "step 'model' (LogisticRegression) of the pipeline"."""
        if not self.chain:
            return type(self.estimator).__name__
        steps = " of ".join(f"step {n!r} ({type(e).__name__})" for n, e in reversed(self.chain))
        return f"{steps} of {_top_words(self.top)}"


def _top_words(top: Any) -> str:
    return "the pipeline" if _is_pipeline(top) else type(top).__name__


@dataclass(frozen=True, slots=True)
class MissingVerdict:
    """What an estimator, or each candidate of a space, does with the NaN of X.

    ``outcomes`` holds, per candidate in ``params``' order, whether it takes the
    NaN (True), refuses them (False) or whether only its fits can tell (None),
    with the step that decides; empty when the candidates were not walked (one
    part of a search whose candidates change the pipeline's steps).
    """

    cells: NanCells
    params: tuple[Mapping[str, Any], ...]
    outcomes: tuple[tuple[bool | None, NanStep], ...]
    each: bool  # refuse at the first candidate that refuses (error_score="raise")
    kind: str  # "Classifier", "Regressor" or "": which HistGradientBoosting to suggest

    @property
    def refused(self) -> bool:
        """Whether the run cannot start: every candidate refuses (with ``each``: any)."""
        refusing = [accepts is False for accepts, _ in self.outcomes]
        return bool(refusing) and (any(refusing) if self.each else all(refusing))

    @property
    def n_refusing(self) -> int:
        """How many candidates refuse the NaN (their fits would fail)."""
        return sum(accepts is False for accepts, _ in self.outcomes)

    def refusal(self) -> tuple[NanStep, Mapping[str, Any]] | None:
        """The first candidate that refuses the NaN, with the step that does."""
        for (accepts, step), params in zip(self.outcomes, self.params, strict=True):
            if accepts is False:
                return step, params
        return None

    def taker(self) -> NanStep | None:
        """The step that takes the NaN, when every candidate that does not refuse them agrees."""
        taking = [step for accepts, step in self.outcomes if accepts is not False]
        if not taking or any(a is None for a, _ in self.outcomes):
            return None
        described = {step.describe() for step in taking}
        return taking[0] if len(described) == 1 else None

    def candidate_words(self) -> str:
        """Which candidate refuses, for a message: "" when every candidate refuses alike."""
        found = self.refusal()
        if found is None:
            return ""
        refusing = {step.describe() for accepts, step in self.outcomes if accepts is False}
        alike = len(refusing) == 1 and self.n_refusing == len(self.outcomes)
        if alike:
            return ""
        listed = ", ".join(f"{k}={shown(v, 60)}" for k, v in found[1].items())
        every = "; every candidate refuses them" if self.n_refusing == len(self.outcomes) else ""
        return f" (candidate {listed}{every})"

    def message(self) -> str:
        """Why the run cannot start, in a Python user's words."""
        found = self.refusal()
        if found is None:
            raise ValueError("no candidate refuses the missing values")  # a caller's mistake
        step = found[0]
        row, column = self.cells.first
        handles = f" (e.g. HistGradientBoosting{self.kind})" if self.kind else ""
        return (
            f"X holds NaN (first in row {row}, column {column}; {self.cells.count} in all), and "
            f"{step.describe()}{self.candidate_words()} does not accept missing values. "
            f"Impute them before it, e.g. {python_fix(step)}; or drop those rows, or use an "
            f"estimator that handles NaN{handles}."
        )


def python_fix(step: NanStep) -> str:
    """The Python call that puts an imputer right before ``step``.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression(C=2.0))
    >>> python_fix(NanStep(pipe[-1], (("logisticregression", pipe[-1]),), tuple(pipe.steps), pipe))
    'make_pipeline(StandardScaler(), SimpleImputer(), LogisticRegression(...))'
    """
    path = [name for name, _ in step.chain]
    if step.holder is None:
        leaf = _as_written(step.top, path, step.estimator)
        call = f"make_pipeline(SimpleImputer(), {_call(leaf)})"
        return call if not step.chain else f"{call} in place of {step.describe()}"
    written = _as_written(step.top, path[:-1], None)
    holder = step.holder
    if _is_pipeline(written) and [(n, type(e)) for n, e in written.steps] == [
        (n, type(e)) for n, e in holder
    ]:  # the candidate only tunes the steps: show them as the user wrote them
        holder = tuple(written.steps)
    names = [name for name, _ in holder]
    at = names.index(step.name)
    automatic = all(name == type(e).__name__.lower() for name, e in holder)
    if automatic and len(set(names)) == len(names) and "simpleimputer" not in names:
        parts = [_call(e) for _, e in holder]
        parts.insert(at, "SimpleImputer()")
        call = f"make_pipeline({', '.join(parts)})"
    else:
        parts = [f"({name!r}, {_call(e)})" for name, e in holder]
        parts.insert(at, f"({imputer_name(names)!r}, SimpleImputer())")
        call = f"Pipeline([{', '.join(parts)}])"
    if len(step.chain) == 1:
        return call
    parent = NanStep(step.chain[-2][1], step.chain[:-1], None, step.top)
    return f"{call} as {parent.describe()}"


def _as_written(top: Any, path: list[str], default: Any) -> Any:
    """The step at ``path`` of the estimator as given (before a candidate's parameters)."""
    if not path:
        return top
    try:
        return top.get_params(deep=True).get("__".join(path), default)
    except Exception:
        return default


def imputer_name(names: Sequence[str]) -> str:
    """A name for an imputer step that no other step of the pipeline has."""
    name, n = "impute", 1
    while name in names:
        n += 1
        name = f"impute{n}"
    return name


def _call(estimator: Any) -> str:
    """``Class()`` for an estimator at its defaults, else ``Class(...)``: never a wrong value."""
    if isinstance(estimator, str) or estimator is None:
        return repr(estimator)
    name = type(estimator).__name__
    return f"{name}()" if repr(estimator) == f"{name}()" else f"{name}(...)"


def diagnose_missing(
    estimator: Any,
    X: Any,
    y: Any,
    params: Sequence[Mapping[str, Any]],
    *,
    each: bool = False,
    part: bool = False,
) -> MissingVerdict | None:
    """Find, for each candidate, the step of ``estimator`` that first refuses the NaN of X.

    The pipeline is walked as X flows through it (see the module's notes): steps
    that pass NaN on (their tags allow NaN, and a tiny fit's output still holds
    them) continue the walk, a step that fills them (an imputer) or a final
    estimator that takes them ends it as accepting, a step whose tags refuse NaN
    ends it as refusing; a ColumnTransformer is walked per part, on its columns.
    Where the tags do not say and the tiny fit fails only with the NaN (the same
    rows with the NaN filled fit), the step refuses them.

    Parameters
    ----------
    estimator : estimator object
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or None
    params : sequence of dict
        Each candidate's parameters (a space may swap a pipeline's steps);
        empty: the estimator as given.
    each : bool, default=False
        Whether one refusing candidate refuses the run (``error_score="raise"``:
        the run would stop at its first fit). Otherwise every candidate must
        refuse: a candidate that takes the NaN leaves something to select.
    part : bool, default=False
        The candidates are one round of a search: when they change a step (not
        only its hyperparameters), the next round's may not, so the fits decide.

    Returns
    -------
    MissingVerdict or None
        None when X holds no NaN.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 0.5], [2.0, 1.5]])
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression())
    >>> verdict = diagnose_missing(pipe, X, [0, 1, 0, 1], [])
    >>> verdict.refused, verdict.refusal()[0].describe()
    (True, "step 'logisticregression' (LogisticRegression) of the pipeline")
    """
    from sklearn.base import clone, is_classifier, is_regressor

    cells = find_nan(X)
    if cells is None:
        return None
    kind = (
        "Classifier" if is_classifier(estimator) else "Regressor" if is_regressor(estimator) else ""
    )
    candidates = tuple(params) or ({},)
    if part and any(_changes_a_step(estimator, p) for p in candidates):
        return MissingVerdict(cells, candidates, (), each, kind)
    rows = _probe_rows(cells, _n_rows(X))
    X_probe, y_probe = _take_rows(X, rows), None if y is None else _take_rows(y, rows)
    memo: dict[tuple[Any, ...], _Walked] = {}
    outcomes: list[tuple[bool | None, NanStep]] = []
    for p in candidates:
        try:
            configured = clone(estimator).set_params(**p)
        except Exception:  # a candidate scikit-learn refuses: its own checks and fits speak
            outcomes.append((None, NanStep(estimator, (), None, estimator)))
            continue
        probe = _Probe(estimator, y_probe, p, memo)
        found = _walk(configured, X_probe, (), None, probe, final=True)
        step = NanStep(configured, (), None, estimator)
        outcomes.append(found if isinstance(found, tuple) else (None, step))
    return MissingVerdict(cells, candidates, tuple(outcomes), each, kind)


def _changes_a_step(estimator: Any, params: Mapping[str, Any]) -> bool:
    """Whether a candidate replaces a step (or a part), not only tunes one."""
    try:
        current = estimator.get_params(deep=True)
    except Exception:
        return True
    for key, new in params.items():
        old = current.get(key)
        if key.rsplit("__", 1)[-1] in _STRUCTURE or hasattr(old, "fit") or hasattr(new, "fit"):
            return True
        if isinstance(new, str) and new in ("passthrough", "drop"):
            return True
    return False


def _n_rows(X: Any) -> int:
    return int(X.shape[0])


def _probe_rows(cells: NanCells, n_rows: int) -> NDArray[np.intp]:
    """The first rows holding a NaN, and complete rows spread over the data (all classes, often)."""
    complete = np.setdiff1d(np.arange(n_rows), cells.rows)
    spread = complete[
        np.linspace(0, complete.size - 1, min(_N_OTHER_ROWS, complete.size)).astype(int)
    ]
    return np.union1d(cells.rows[:_N_NAN_ROWS], spread).astype(np.intp)


def _take_rows(values: Any, rows: NDArray[np.intp]) -> Any:
    if hasattr(values, "iloc"):
        return values.iloc[rows]
    if sp.issparse(values):
        return sp.csr_matrix(values)[rows]
    return np.asarray(values)[rows]


@dataclass(frozen=True, slots=True)
class _Passed:
    """A step's output on the probe rows, still holding NaN for the steps after it."""

    X: Any


_Walked = tuple[bool | None, NanStep] | _Passed


@dataclass(frozen=True, slots=True)
class _Probe:
    """One candidate's walk: the estimator as given, the probe rows' y, its parameters,
    and the outcomes of steps already walked (shared by the candidates: a grid over one
    step's hyperparameters walks the steps before it once)."""

    top: Any
    y: Any
    params: Mapping[str, Any]
    memo: dict[tuple[Any, ...], _Walked]

    def key(self, chain: tuple[tuple[str, Any], ...], X: Any, final: bool) -> tuple[Any, ...]:
        """What a step's outcome depends on: where it sits, its input, the parameters that
        configure it or what holds it; () when they cannot be tokened (no reuse)."""
        path = [name for name, _ in chain]
        own = {k: v for k, v in self.params.items() if _configures(k.split("__"), path)}
        try:
            return (tuple(path), final, token(X), token(own))
        except TokenError:
            return ()


def _configures(key: list[str], path: list[str]) -> bool:
    """Whether a parameter sets the step at ``path``, a step inside it, or what holds it."""
    return key[: len(path)] == path or key[:-1] == path[: len(key) - 1]


def _walk(
    estimator: Any,
    X: Any,
    chain: tuple[tuple[str, Any], ...],
    holder: tuple[tuple[str, Any], ...] | None,
    probe: _Probe,
    *,
    final: bool,
) -> _Walked:
    """Where the NaN of X go in ``estimator``: decided here, or passed on (not ``final``)."""
    key = probe.key(chain, X, final)
    if key and key in probe.memo:
        return probe.memo[key]
    step = NanStep(estimator, chain, holder, probe.top)
    if _is_pipeline(estimator):
        found = _walk_pipeline(estimator, X, chain, probe, final=final)
    elif hasattr(estimator, "transformers") or hasattr(estimator, "transformer_list"):
        found = _walk_parts(estimator, X, step, probe)
    else:
        allows = _allows_nan(estimator)
        if final and allows:
            found = (True, step)
        else:  # a tag that refuses NaN may be a class's default, never stated: the fit says
            found = _fit_decides(estimator, X, probe.y, step, transform=not final)
            undecided = isinstance(found, tuple) and found[0] is None
            if allows is False and undecided:
                found = (False, step)  # the probe cannot tell: the tag's refusal stands
    if final and isinstance(found, _Passed):
        found = (True, step)  # a transformer last: the NaN reach no step that refuses them
    if key:
        probe.memo[key] = found
    return found


def _walk_pipeline(
    pipe: Any, X: Any, chain: tuple[tuple[str, Any], ...], probe: _Probe, *, final: bool
) -> _Walked:
    holder = tuple(pipe.steps)
    steps = [(n, s) for n, s in holder if not (s is None or isinstance(s, str))]
    for i, (name, step) in enumerate(steps):
        last = i == len(steps) - 1
        found = _walk(step, X, (*chain, (name, step)), holder, probe, final=final and last)
        if not isinstance(found, _Passed):
            return found
        X = found.X
    return _Passed(X)


def _walk_parts(estimator: Any, X: Any, step: NanStep, probe: _Probe) -> _Walked:
    """A ColumnTransformer (each part on its columns) or a FeatureUnion (each part on all)."""
    parts = _column_parts(estimator, X) if hasattr(estimator, "transformers") else [
        (name, part, X) for name, part in estimator.transformer_list
    ]  # fmt: skip
    taker = None
    for name, part, columns in parts or []:
        if part is None or isinstance(part, str) or find_nan(columns) is None:
            continue  # "drop" or "passthrough" (NaN passed on), or no NaN in its columns
        found = _walk(part, columns, (*step.chain, (name, part)), None, probe, final=False)
        if isinstance(found, tuple) and found[0] is not True:
            return found
        taker = taker or (found if isinstance(found, tuple) else None)
    whole = _fit_decides(step.estimator, X, probe.y, step, transform=True)
    return taker if taker is not None and whole == (True, step) else whole


def _column_parts(transformer: Any, X: Any) -> list[tuple[str, Any, Any]] | None:
    """Each part of a ColumnTransformer with its columns of X (None: not resolved here)."""
    try:
        parts, used = [], set()
        for name, part, columns in transformer.transformers:
            indices, scalar = _column_indices(X, columns)
            used.update(indices)
            parts.append((name, part, _take_columns(X, indices, scalar)))
        rest = [j for j in range(X.shape[1]) if j not in used]
        if rest:
            parts.append(("remainder", transformer.remainder, _take_columns(X, rest, False)))
    except Exception:  # a selector this walk cannot read: the whole transformer's fit decides
        return None
    return parts


def _column_indices(X: Any, columns: Any) -> tuple[list[int], bool]:
    """Column positions as a ColumnTransformer reads ``columns``, and whether it is one scalar."""
    if callable(columns):
        columns = columns(X)
    names = list(X.columns) if hasattr(X, "columns") else None
    n = X.shape[1]
    if isinstance(columns, slice):
        if names is not None and isinstance(columns.start or columns.stop, str):
            start = 0 if columns.start is None else names.index(columns.start)
            stop = n if columns.stop is None else names.index(columns.stop) + 1
            return list(range(start, stop)), False
        return list(range(n))[columns], False
    scalar = np.ndim(columns) == 0
    values = np.atleast_1d(np.asarray(columns))
    if values.dtype.kind == "b":
        return [int(j) for j in np.flatnonzero(values)], False
    if values.dtype.kind in "iu":
        return [int(j) % n for j in values], scalar
    if names is None:
        raise TypeError("columns named on an array without column names")
    return [names.index(c) for c in values.tolist()], scalar


def _take_columns(X: Any, indices: list[int], scalar: bool) -> Any:
    if hasattr(X, "iloc"):
        return X.iloc[:, indices[0]] if scalar else X.iloc[:, indices]
    if sp.issparse(X):
        return sp.csc_matrix(X)[:, indices]
    return np.asarray(X)[:, indices[0] if scalar else indices]


def _allows_nan(estimator: Any) -> bool | None:
    """scikit-learn's ``allow_nan`` tag; None where tags say nothing (none, or no validation)."""
    from sklearn.utils import get_tags

    try:
        tags = get_tags(estimator)
    except Exception:
        return None
    return None if tags.no_validation else bool(tags.input_tags.allow_nan)


def _fit_decides(estimator: Any, X: Any, y: Any, step: NanStep, *, transform: bool) -> _Walked:
    """A tiny fit on the probe rows decides; one that fails only with the NaN refuses them."""
    try:
        out = _fit(estimator, X, y, transform=transform)
    except Exception:
        try:
            _fit(estimator, _filled(X), y, transform=transform)
        except Exception:  # fails without the NaN too: the probe cannot tell, the fits will
            return None, step
        return False, step
    if transform and find_nan(out) is not None:
        return _Passed(out)
    return True, step


def _fit(estimator: Any, X: Any, y: Any, *, transform: bool) -> Any:
    from sklearn.base import clone

    fresh = clone(estimator)
    args = (X,) if y is None else (X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the probe's tiny fit; the run's fits warn for themselves
        return fresh.fit_transform(*args) if transform else fresh.fit(*args)


def _filled(X: Any) -> Any:
    """X with each NaN replaced by its column's median (0 for a column of NaN only)."""
    if sp.issparse(X):
        filled = sp.csr_matrix(X, copy=True)
        filled.data = np.nan_to_num(filled.data, nan=0.0)
        return filled
    if hasattr(X, "iloc"):
        if getattr(X, "ndim", 2) == 1:
            return X.fillna(X.median() if X.dtype.kind in "biuf" else X)
        numeric = [c for c, d in X.dtypes.items() if getattr(d, "kind", "O") in "biuf"]
        return X.fillna({c: X[c].median() if X[c].notna().any() else 0.0 for c in numeric})
    values = np.array(X, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column of NaN only: its median is NaN
        medians = np.nanmedian(values, axis=0)
    medians = np.where(np.isnan(medians), 0.0, medians)
    return np.where(np.isnan(values), medians, values)


def _is_pipeline(estimator: Any) -> bool:
    return hasattr(estimator, "steps") and hasattr(estimator, "named_steps")
