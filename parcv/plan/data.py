"""The data of one run, checked once at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from parcv.plan.missing import diagnose_missing
from parcv.plan.tokens import token_of

__all__ = [
    "Dataset",
    "accepts_text",
    "check_data_for",
    "check_dataset",
    "data_token",
    "n_rows_of",
]


@dataclass(frozen=True, slots=True)
class Dataset:
    """X, y, groups and per-sample fit parameters of one run.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features, as given (arrays, DataFrames and sparse matrices are kept).
    y : ndarray of shape (n_samples,) or (n_samples, n_outputs), sparse matrix or None
        Targets; None for an unsupervised estimator (its ``fit(X, None)``).
    groups : ndarray of shape (n_samples,) or None
        Group labels for group splitters.
    fit_params : dict
        Extra ``fit`` arguments; arrays of length n_samples are split with
        the rows, anything else is passed as is.
    score_params : dict of str to dict, default={}
        Per scorer name, extra arguments of that scorer (``sample_weight``,
        routed metadata); per-sample ones are split with the rows scored.
    split_params : dict, default={}
        Arguments of the splitter's ``split`` routed by scikit-learn's metadata
        routing (``groups`` among them); empty without routing.
    routed : bool, default=False
        Whether the fits and scorers run with scikit-learn's metadata routing
        on (decided once by the driver, see :mod:`parcv.plan.routing`).
    """

    X: Any = field(repr=False)
    y: Any = field(repr=False)
    groups: Any = field(default=None, repr=False)
    fit_params: dict[str, Any] = field(default_factory=dict, repr=False)
    score_params: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    split_params: dict[str, Any] = field(default_factory=dict, repr=False)
    routed: bool = False

    @property
    def n_samples(self) -> int:
        """Number of rows of X (y may be None)."""
        return _n_rows(self.X)


def data_token(data: Dataset) -> bytes:
    """Token of X, y, groups, the fit parameters and the metadata of the scorers and splitter.

    Which metadata goes to which scorer (a weighted score is another number)
    and to the splitter is part of the token; a run without any has the token
    it had before they existed.

    Examples
    --------
    >>> a = Dataset(np.zeros((2, 1)), np.array([0.0, 1.0]))
    >>> data_token(a) == data_token(Dataset(np.zeros((2, 1)), np.array([0.0, 2.0])))
    False
    """
    values: tuple[Any, ...] = (data.X, data.y, data.groups, dict(data.fit_params))
    if data.score_params or data.split_params or data.routed:
        metadata = {name: dict(p) for name, p in sorted(data.score_params.items())}
        values += ("metadata", metadata, dict(data.split_params), data.routed)
    arrays = tuple(_rows(v) if isinstance(v, list) else v for v in values)
    return token_of("the data (X, y, groups or a fit parameter)", *arrays)


_PLAIN = frozenset({int, float, str, bool})


def _rows(values: list[Any]) -> Any:
    """A list as the tokenizer takes it fast, without losing what tells its elements apart.

    A list of plain values of one type (floats, ints, strings) as the array
    it converts to exactly; a list of lists row by row; anything else (rows
    of different kinds, dicts, objects) element by element.
    """
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and kinds <= _PLAIN:
        array = np.asarray(values)
        if array.dtype != object:
            return array
    if kinds and kinds <= {list}:
        return [_rows(row) for row in values]
    return values


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    if shape is not None:
        if len(shape) == 0:
            raise ValueError(
                f"X must be 2-D array-like of shape (n_samples, n_features); got a scalar {X!r}."
            )
        return int(shape[0])
    try:
        return len(X)
    except TypeError as err:
        raise TypeError(
            f"X must be array-like of shape (n_samples, n_features); got {type(X).__name__}."
        ) from err


def _indexable(values: Any) -> Any:
    """``values`` as scikit-learn's ``indexable`` makes it: rows can be taken from it.

    An object with neither rows nor items that only converts to an array
    (``__array__``) becomes that array, as scikit-learn's ``indexable`` makes
    it: the folds index, and the content keys token, the array it stands for.
    """
    if hasattr(values, "shape") or hasattr(values, "__getitem__") or hasattr(values, "iloc"):
        return values
    if hasattr(values, "__array__"):
        return np.asarray(values)
    return values


def n_rows_of(value: Any) -> int | None:
    """Rows of an array-like fit parameter as scikit-learn counts them, None if it has none.

    A fit parameter with as many rows as X is split with the rows, as in
    scikit-learn's ``_check_method_params``: arrays, lists, sparse matrices
    and objects that convert to an array; anything else is passed as is.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> n_rows_of(sp.eye(3, format="csr")), n_rows_of([1, 2]), n_rows_of("ab"), n_rows_of(3)
    (3, 2, None, None)
    """
    if isinstance(value, (str, bytes)) or hasattr(value, "fit"):
        return None
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return int(shape[0]) if shape and isinstance(shape[0], (int, np.integer)) else None
    if hasattr(value, "__len__"):
        try:
            return len(value)
        except TypeError:
            return None
    if hasattr(value, "__array__"):
        return n_rows_of(np.asarray(value))
    return None


def _check_y(y: Any) -> Any:
    """``y`` as an array with its rows checked; None and sparse matrices stay as given."""
    if y is None:
        return None
    if sp.issparse(y):  # a multilabel indicator: its stored values are the ones to check
        values = y.data
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            raise ValueError(
                "y (sparse) contains NaN or infinity. Drop or impute those rows before "
                "cross-validation."
            )
        return y.tocsr() if y.format not in ("csr", "csc") else y
    y_arr = np.asarray(y)
    if y_arr.ndim == 0:
        raise ValueError(f"y must be array-like of shape (n_samples,); got a scalar {y!r}.")
    if y_arr.dtype.kind in "fc" and not np.isfinite(y_arr).all():
        bad = np.flatnonzero(~np.isfinite(y_arr.reshape(len(y_arr), -1)).all(axis=1))
        raise ValueError(
            f"y contains NaN or infinity at {bad.size} row(s), first at index {int(bad[0])} "
            f"(value {y_arr[bad[0]]!r}). Drop or impute those rows before cross-validation."
        )
    if y_arr.dtype == object and any(v is None for v in y_arr.ravel()):
        raise ValueError("y contains None values; drop or impute those rows.")
    return y_arr


def _check_fit_params(fit_params: Any) -> dict[str, Any]:
    """Type-check ``fit_params`` before anything converts it."""
    if fit_params is None:
        return {}
    if not isinstance(fit_params, Mapping):
        raise TypeError(
            f"fit_params must be a dict of fit() argument name -> value; got {fit_params!r}. "
            "Pass e.g. fit_params={'sample_weight': w}, or None for no extra arguments."
        )
    bad = [name for name in fit_params if not isinstance(name, str)]
    if bad:
        raise TypeError(
            f"fit_params keys must be the str names of fit() arguments; got the key "
            f"{bad[0]!r}. Write them as in fit(), e.g. {{'sample_weight': w}}."
        )
    return dict(fit_params)


def check_dataset(
    X: Any,
    y: Any,
    groups: Any = None,
    fit_params: Any = None,
    *,
    score_params: Mapping[str, Mapping[str, Any]] | None = None,
    split_params: Mapping[str, Any] | None = None,
    routed: bool = False,
) -> Dataset:
    """Check shapes and targets before any compute.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), sparse matrix or None
        None for an unsupervised estimator.
    groups : array-like of shape (n_samples,), default=None
    fit_params : dict, default=None
    score_params : dict of str to dict, default=None
        Per scorer, its extra arguments (see :class:`Dataset`).
    split_params : dict, default=None
        The splitter's routed arguments (see :class:`Dataset`).
    routed : bool, default=False
        Whether scikit-learn's metadata routing decided them.

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        Empty data, length mismatch, or NaN/inf/None in ``y``.
    TypeError
        ``X`` not array-like, or ``fit_params`` not a dict of str to value.

    Examples
    --------
    >>> check_dataset([[0.0], [1.0]], [0.0, 1.0]).n_samples
    2
    """
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"X must be array-like of shape (n_samples, n_features); got {X!r}.")
    X, y = _indexable(X), _indexable(y)
    n_x = _n_rows(X)
    y_arr = _check_y(y)
    n_y = n_x if y_arr is None else _n_rows(y_arr)
    if n_x == 0 or n_y == 0:
        raise ValueError(
            f"X has {n_x} rows and y {n_y}: the data is empty. Pass at least a few samples."
        )
    if n_x != n_y:
        raise ValueError(
            f"X and y have different numbers of samples: X has {n_x} rows, y has {n_y}. "
            "Pass one target per row of X."
        )
    groups_arr = None
    if groups is not None:
        groups_arr = np.asarray(groups)
        if groups_arr.shape[:1] != (n_x,):
            raise ValueError(
                f"groups must have shape ({n_x},), one label per sample; got {groups_arr.shape}."
            )
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] == 0:
        raise ValueError(
            f"X has {n_x} rows but no columns (shape {tuple(shape)}): there is nothing to fit "
            "on. Pass at least one feature."
        )
    params = _check_fit_params(fit_params)
    for name, value in params.items():
        rows = n_rows_of(value)
        if rows == n_x:  # split with the rows: make it indexable once, as scikit-learn does
            params[name] = value.tocsr() if getattr(value, "format", None) == "coo" else value
            params[name] = _indexable(params[name])
        elif name.split("__")[-1] == "sample_weight" and rows is not None:
            raise ValueError(
                f"fit_params[{name!r}] has {rows} values for {n_x} samples; "
                "sample weights need one value per row of X (parcv takes each fold's rows). "
                "Pass an array of shape (n_samples,)."
            )
    if getattr(X, "format", None) == "coo":  # not row-indexable: convert once, as sklearn does
        X = X.tocsr()
    # y as given (a list stays a list, a Series a Series, as scikit-learn's indexable keeps
    # them), unless a coo matrix had to become a csr one.
    y_out = y_arr if sp.issparse(y) else y
    scored = _check_score_params(score_params, n_x)
    return Dataset(X=X, y=y_out, groups=groups_arr, fit_params=params, score_params=scored,
                   split_params=dict(split_params or {}), routed=bool(routed))  # fmt: skip


def _check_score_params(
    score_params: Mapping[str, Mapping[str, Any]] | None, n_samples: int
) -> dict[str, dict[str, Any]]:
    """Per-scorer arguments, without empty ones; a sample weight needs one value per row."""
    checked = {name: dict(p) for name, p in (score_params or {}).items() if p}
    for name, params in checked.items():
        weights: Any = params.get("sample_weight")
        rows = len(weights) if hasattr(weights, "__len__") else n_samples
        if rows != n_samples:
            raise ValueError(
                f"the sample_weight of scorer {name!r} has {rows} values for {n_samples} "
                "samples; each scored fold takes its rows of it. Pass an array of shape "
                "(n_samples,)."
            )
    return checked


def _input_tags(estimator: Any, params: list[dict[str, Any]]) -> Any:
    """The input tags that describe what ``estimator`` accepts as X, or None when unknown.

    A Pipeline's own tags do not say what its first step accepts (an imputer
    takes NaN, a vectorizer 1-D text): use the first step's, unless the
    space changes that step.
    A step that takes any input (``no_validation``: a ``FunctionTransformer``
    without ``validate``, a ``DummyClassifier``) says nothing: None.
    """
    from sklearn.utils import get_tags

    steps = getattr(estimator, "steps", None)
    if steps is not None:
        first_name, first = steps[0]
        changed = any(k == "steps" or k.split("__")[0] == first_name for p in params for k in p)
        if changed or first is None or isinstance(first, str):
            return None
        return _input_tags(first, [])
    if hasattr(estimator, "transformers") or hasattr(estimator, "transformer_list"):
        return None  # a ColumnTransformer or FeatureUnion: each part takes its own columns
    try:
        tags = get_tags(estimator)
    except Exception:  # an estimator without tags: nothing to check against
        return None
    return None if tags.no_validation else tags.input_tags


def accepts_text(estimator: Any, params: list[dict[str, Any]]) -> bool | None:
    """Whether ``estimator`` takes text columns in X (scikit-learn's ``string`` or
    ``categorical`` input tags, as an encoder has).

    ``params`` are the candidates' parameters (a space that changes a pipeline's
    first step makes it unknown). None when the tags do not say: a
    ColumnTransformer, whose parts each take their own columns, or a step
    without scikit-learn's tags.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> accepts_text(Ridge(), []), accepts_text(OneHotEncoder(), [])
    (False, True)
    """
    tags = _input_tags(estimator, params)
    return None if tags is None else bool(tags.string or tags.categorical)


def check_data_for(
    estimator: Any,
    data: Dataset,
    params: list[dict[str, Any]],
    *,
    each: bool = False,
    part: bool = False,
) -> None:
    """Refuse X or y that ``estimator`` cannot fit, before any fit is dispatched.

    One cheap check of the data against scikit-learn's estimator tags: inf
    where the tags do not allow it, complex or non-numeric X, and for a
    scikit-learn classifier a single class or a continuous target. NaN in X
    are followed through the pipeline to the step that first refuses them
    (:func:`parcv.plan.missing.diagnose_missing`: the steps' tags, or a tiny
    fit on a few rows where they do not say); the run is refused when every
    candidate refuses them (with ``each``: any). The shape of X is not
    checked against the tags, as scikit-learn's searches do not: tags such
    as ``two_d_array`` describe what an estimator is tested on, not all it
    accepts (DummyClassifier fits 1-D X, CheckingClassifier any X), so the
    estimator's own fit decides.

    Parameters
    ----------
    estimator : estimator object
    data : Dataset
    params : list of dict
        Each candidate's parameters.
    each : bool, default=False
        Refuse the run when one candidate refuses the NaN (``error_score="raise"``).
    part : bool, default=False
        ``params`` are one round of a search (see :func:`diagnose_missing`);
        ``y``, which no parameter changes, was checked with the search's plan.

    Raises
    ------
    ValueError
        The value that would fail every fit, and how to fix it.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.array([[0.0], [np.nan], [2.0], [1.0]])
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression())
    >>> check_data_for(pipe, check_dataset(X, [0, 1, 0, 1]), [{}])
    Traceback (most recent call last):
    ...
    ValueError: X holds NaN (first in row 1, column 0; 1 in all), and step 'logisticregression' \
(LogisticRegression) of the pipeline does not accept missing values. Impute them before it, e.g. \
make_pipeline(StandardScaler(), SimpleImputer(), LogisticRegression()); or drop those rows, or use \
an estimator that handles NaN (e.g. HistGradientBoostingClassifier).
    """
    tags = _input_tags(estimator, params)
    name = type(estimator).__name__
    if tags is not None and tags.two_d_array and not (tags.string or tags.dict):
        _check_table_rows(data.X, name)
    if tags is not None and getattr(tags, "pairwise", False):
        _check_kernel(data.X, name)
    if tags is not None:
        _check_x_for(data.X, tags, name)
    verdict = diagnose_missing(estimator, data.X, data.y, params, each=each, part=part)
    if verdict is not None and verdict.refused:
        raise ValueError(verdict.message())
    if not part:
        _check_y_for(estimator, data.y, name)


def _check_table_rows(X: Any, name: str) -> None:
    """X given as a list of rows to an estimator of tables: every row has the same length.

    Rows of any other kind (token lists of a text pipeline with a callable
    analyzer, dicts) reach estimators that take them, as in scikit-learn.
    """
    if not (isinstance(X, (list, tuple)) and X and isinstance(X[0], (list, tuple))):
        return
    lengths = sorted({len(row) for row in X if isinstance(row, (list, tuple))})
    if len(lengths) > 1:
        raise ValueError(
            f"X is a list of rows of different lengths ({lengths}), and {name} takes a table "
            "of shape (n_samples, n_features). Give every row the same features, or put a "
            "step that takes rows of any length first (e.g. CountVectorizer(analyzer=...))."
        )


def _check_kernel(X: Any, name: str) -> None:
    """A precomputed kernel is indexed on both axes: a square array or sparse matrix."""
    shape = getattr(X, "shape", None)
    if shape is None:
        raise ValueError(
            f"{name} takes a precomputed kernel (or affinity) matrix as X, which is indexed by "
            f"rows and columns: pass it as an array or a sparse matrix; got a "
            f"{type(X).__name__}. Pass np.asarray(X)."
        )
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(
            f"X should be a square kernel matrix: {name} takes a precomputed kernel (or "
            f"affinity) matrix of shape (n_samples, n_samples); got shape {tuple(shape)!r}. "
            "Pass the kernel between every pair of samples, e.g. X @ X.T."
        )


def _check_x_for(X: Any, tags: Any, name: str) -> None:
    values = X.data if sp.issparse(X) else X
    dtypes = getattr(X, "dtypes", None)  # a pandas DataFrame: check it if all numeric
    kinds = [] if dtypes is None else [getattr(d, "kind", "O") for d in dtypes]
    table = bool(kinds) and hasattr(X, "to_numpy") and getattr(X, "ndim", 0) == 2
    frame = table and all(kind in "biuf" for kind in kinds)
    if frame:  # a data frame is 2-D by nature: only its values are checked
        X = values = X.to_numpy(dtype=float)
    if not isinstance(values, np.ndarray):
        return  # lists, other tables: the estimator's own validation speaks
    if np.iscomplexobj(values):
        raise ValueError(
            f"X has complex dtype {values.dtype}; scikit-learn estimators such as {name} fit "
            "real numbers only. Pass X.real and X.imag as separate columns, or np.abs(X)."
        )
    numeric = values.dtype.kind in "biuf"
    if values.dtype.kind in "OUS" and not (tags.string or tags.categorical):
        try:
            values = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"X holds non-numeric values (dtype {X.dtype}, e.g. {values.flat[0]!r}) and "
                f"{name} takes numbers only ({err}). Encode them first, e.g. "
                "make_pipeline(OneHotEncoder(), estimator), or convert X to float."
            ) from err
        numeric = True
    if numeric and tags.allow_nan:
        bad = np.isinf(values)
        if bad.any():
            row = int(np.argwhere(bad)[0][0]) if not sp.issparse(X) else None
            where = f" (first in row {row})" if row is not None else ""
            raise ValueError(
                f"X holds inf{where}; {name} accepts NaN as missing but not infinite values. "
                "Replace them (e.g. X[np.isinf(X)] = np.nan, to treat them as missing) or drop "
                "those rows."
            )
    if numeric and not tags.allow_nan:  # NaN: diagnose_missing follows them to their step
        bad = np.isinf(values)
        if bad.any():
            row = int(np.argwhere(bad)[0][0]) if not sp.issparse(X) else None
            where = f" (first in row {row})" if row is not None else ""
            raise ValueError(
                f"X holds inf{where}, and {name} does not accept infinite values. Replace them "
                "(e.g. X[np.isinf(X)] = np.nan, to impute them as missing values) or drop those "
                "rows."
            )


def _check_y_for(estimator: Any, y: Any, name: str) -> None:
    from sklearn.base import is_classifier, is_regressor
    from sklearn.utils import get_tags
    from sklearn.utils.multiclass import type_of_target

    final = estimator
    while getattr(final, "steps", None):
        final = final.steps[-1][1]
    module = type(final).__module__
    if not module.startswith("sklearn.") or module.startswith("sklearn.utils."):
        # A user's estimator, or one of scikit-learn's test doubles (sklearn.utils._mocking),
        # may take any target: its own fits decide.
        return
    if y is None:
        _check_unsupervised(final, name)
        return
    if sp.issparse(y):
        y = y.toarray()  # a multilabel indicator, checked as the dense labels it holds
    y_arr = np.asarray(y)
    try:
        multi_output = get_tags(final).target_tags.multi_output
    except Exception:
        multi_output = True
    if y_arr.ndim > 2 or (y_arr.ndim == 2 and y_arr.shape[1] > 1 and not multi_output):
        raise ValueError(
            f"y has shape {y_arr.shape}, but {name} predicts one target per sample. Pass y of "
            "shape (n_samples,), or wrap it for several targets (e.g. "
            "sklearn.multioutput.MultiOutputRegressor / MultiOutputClassifier)."
        )
    if is_regressor(estimator) and y_arr.dtype.kind in "OUS":
        _check_numbers(y_arr, name)
    # scikit-learn's classifiers all refuse a continuous target (check_classification_targets).
    if not is_classifier(estimator):
        return
    try:
        target = type_of_target(y, input_name="y")
    except ValueError:
        return  # the estimator's own validation says what is wrong
    values = np.asarray(y).ravel()
    first = values[0].item() if isinstance(values[0], np.generic) else values[0]
    if target.startswith("continuous"):
        raise ValueError(
            f"y is continuous (e.g. {first!r}), but {name} is a classifier and needs class "
            "labels. Use a regressor for a numeric target, or bin y into classes first."
        )
    if target != "unknown" and len(np.unique(values.astype(str))) < 2:
        raise ValueError(
            f"y holds a single class {first!r}; {name} needs at least two classes to learn. "
            "Check the target column, or pass data with more than one class."
        )


def _check_numbers(y: Any, name: str) -> None:
    """Refuse a target of text for a regressor, naming the first value that is not a number."""
    try:
        y.astype(float)
    except (TypeError, ValueError):
        pass
    else:
        return  # numbers written as text: the regressor's own validation converts them
    for index, value in np.ndenumerate(y):
        try:
            float(value)
        except (TypeError, ValueError):
            where = index[0] if y.ndim == 1 else index
            shown = value.item() if isinstance(value, np.generic) else value
            raise ValueError(
                f"y[{where}] = {shown!r} is not a number, and {name} is a regressor: its target "
                "must be numeric. Fix or drop that sample, or use a classifier if y holds "
                "class labels."
            ) from None


def _check_unsupervised(final: Any, name: str) -> None:
    """Refuse ``y=None`` for a scikit-learn estimator that requires y (every fit would fail)."""
    from sklearn.utils import get_tags

    try:
        required = get_tags(final).target_tags.required
    except Exception:  # no tags: its own fits decide
        return
    if required:
        raise ValueError(
            f"y is None, but {name} is supervised: its fit requires a target. Pass y of "
            "shape (n_samples,), or use an unsupervised estimator (e.g. KMeans) to fit X alone."
        )
