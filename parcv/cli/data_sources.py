"""Data sources of a spec: .csv/.parquet/.npz/.npy files, scikit-learn datasets, Python callables.

A table (.csv, .parquet) gives its features as a pandas DataFrame, with the dtypes pandas
infers, so a ``ColumnTransformer`` selects its columns by name; a ``python:`` source's
X, y and groups are kept as the function returns them.
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import io
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import is_regressor

from parcv.cli.spec import MISSING, Spec, SpecError, UsageError, check_type
from parcv.errors import did_you_mean, shown
from parcv.plan.missing import MissingVerdict, NanStep, find_nan, imputer_name

__all__ = ["LoadedData", "MissingValues", "TextColumns", "load_data"]

SKLEARN_LOADERS = ("breast_cancer", "diabetes", "digits", "iris", "linnerud", "wine")
SOURCES = ("a .csv, .parquet, .npz or .npy file", "'sklearn:NAME'", "'python:module.function'")


@dataclass(frozen=True)
class MissingValues:
    """The missing cells of a table's features: how many, per column, and the first one.

    Examples
    --------
    >>> m = MissingValues(3, (("age", 2), ("income", 1)), "d.csv line 7, column 'age'", "")
    >>> m.summary()
    "3 missing values, in columns 'age' (2) and 'income' (1)"
    """

    count: int
    columns: tuple[tuple[str, int], ...]  # column, its count; in the table's order
    first: str  # where the first is: file and line as an editor counts them, and column
    cell: str  # what that cell holds ("" when empty)

    def summary(self) -> str:
        """How many are missing, and in which columns."""
        parts = [f"{shown(name, 60)} ({n})" for name, n in self.columns]
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        noun = "value" if self.count == 1 else "values"
        return f"{self.count} missing {noun}, in column{'s' * (len(parts) > 1)} {listed}"

    def refusal(self, verdict: MissingVerdict) -> str:
        """Why the sweep cannot start, in the spec's words: the step that refuses the
        missing values (see :func:`parcv.plan.missing.diagnose_missing`), and the lines
        that fix it."""
        found = verdict.refusal()
        if found is None:
            raise ValueError("no candidate refuses the missing values")  # a caller's mistake
        step, params = found
        what = "is empty" if not self.cell.strip() else f"holds {shown(self.cell, 40)}"
        taking = f"HistGradientBoosting{verdict.kind}"
        other = f' (class = "sklearn.ensemble.{taking}")' if verdict.kind else ""
        return (
            f"{self.first}: the cell {what} (a missing value), and {step.describe()}"
            f"{verdict.candidate_words()} does not accept missing values ({self.summary()}). "
            f"{self._fix(step, params)}; or remove those rows, or use an estimator that "
            f"accepts them{other}."
        )

    @staticmethod
    def _fix(step: NanStep, params: Mapping[str, Any]) -> str:
        """The spec lines that put an imputer right before ``step``."""
        imputer = '{ class = "sklearn.impute.SimpleImputer" }'
        cls = type(step.estimator)
        path = [p for p in cls.__module__.split(".") if not p.startswith("_")]
        where = ".".join([*path, cls.__name__])
        if not step.chain:  # [estimator] class = ...: a pipeline of two steps
            keys = ", ".join(f"model__{key}" for key in params)
            keys = f", and the [space] keys become {keys}" if keys else ""
            return (
                'Impute them in a pipeline: write [estimator] as steps = [{ name = "impute", '
                f'class = "sklearn.impute.SimpleImputer" }}, {{ name = "model", class = "{where}" '
                f"}}] (its params go into that step{keys})"
            )
        if step.holder is not None and len(step.chain) == 1:  # a step of [estimator] steps
            name = imputer_name([n for n, _ in step.holder])
            return (
                f'Add {{ name = "{name}", class = "sklearn.impute.SimpleImputer" }} to '
                f'[estimator] steps, before the step named "{step.name}"'
            )
        parent = NanStep(step.chain[-2][1], step.chain[:-1], None, step.top).describe()
        if step.holder is not None:  # a step of a pipeline inside
            return f'Add ["impute", {imputer}] to the steps of {parent}, before "{step.name}"'
        return (
            f'Write {step.describe()} as {{ class = "sklearn.pipeline.Pipeline", params = '
            f'{{ steps = [["impute", {imputer}], ["{step.name}", {{ class = "{where}" }}]] }} }}'
        )


@dataclass(frozen=True)
class TextColumns:
    """The columns of a table's features that hold text or categories, and the first text cell.

    Examples
    --------
    >>> t = TextColumns(("city", "colour"), (), "d.csv line 2, column 'city'", "Paris")
    >>> t.summary()
    "2 text columns: 'city', 'colour'"
    """

    text: tuple[str, ...]  # columns of strings (or other objects), in the table's order
    categorical: tuple[str, ...]  # columns of pandas' category dtype
    first: str  # where the first text cell is: file and line as an editor counts them, column
    cell: str  # what that cell holds

    def summary(self) -> str:
        """How many columns hold text and how many categories, by name."""
        parts = []
        for noun, names in (("text", self.text), ("categorical", self.categorical)):
            if names:
                listed = ", ".join(shown(name, 60) for name in names)
                parts.append(f"{len(names)} {noun} column{'s' * (len(names) > 1)}: {listed}")
        return ", ".join(parts)

    def refusal(self, estimator: Any) -> str:
        """Why the sweep cannot start: ``estimator`` takes numbers only."""
        name = type(estimator).__name__
        listed = ", ".join(shown(column, 60) for column in self.text)
        return (
            f"{self.first}: {shown(self.cell, 40)} is not a number, so the column is text, "
            f"and {name} takes numbers only (text columns: {listed}). If the column holds "
            "numbers, correct that cell (an empty cell is a missing value). To use text "
            "columns, encode them in [estimator]: make it steps whose first step is class = "
            '"sklearn.compose.ColumnTransformer" with params transformers = [["text", { class '
            '= "sklearn.preprocessing.OneHotEncoder" }, [<the text columns>]]] and remainder = '
            '"passthrough" (see "Your own table" in the spec reference); or name only numeric '
            "columns in data.features."
        )


@dataclass(frozen=True)
class LoadedData:
    """X, y and groups of a spec, a one-line description of where they came from, the
    missing values of its features (None: none) and its text columns (None: none)."""

    X: Any
    y: Any
    groups: Any
    description: str
    missing: MissingValues | None = None
    text: TextColumns | None = None


def _params(table: Mapping[str, Any]) -> dict[str, Any]:
    return dict(check_type(table.get("params", {}), (dict,), "data.params", "a table of arguments"))


def _sklearn(name: str, table: Mapping[str, Any]) -> tuple[Any, Any]:
    import sklearn.datasets as datasets

    makers = sorted(n for n in dir(datasets) if n.startswith("make_"))
    allowed = (
        f"'sklearn:' followed by one of {list(SKLEARN_LOADERS)} or a generator {makers[:6]}..."
    )
    if name in SKLEARN_LOADERS:
        X, y = getattr(datasets, f"load_{name}")(return_X_y=True, **_params(table))
        return X, y
    if name in makers:
        try:
            out = getattr(datasets, name)(**_params(table))
        except TypeError as err:
            raise SpecError(
                "data.params", table.get("params"), f"the arguments of {name}", hint=str(err)
            ) from None
        return out[0], out[1]
    raise SpecError(
        "data.source",
        f"sklearn:{name}",
        allowed,
        hint=did_you_mean(name, [*SKLEARN_LOADERS, *makers], end=" ")
        + "Files need no prefix; downloads (fetch_*) are not supported.",
    )


def _import(module: str, base_dir: Path) -> Any:
    """Import ``module``, the file ``<module>.py`` beside the spec first.

    The spec's folder comes first, as a script's does: a module of the same name
    elsewhere on the import path (or a bare folder, which Python would import as a
    namespace package) does not hide the spec's own file.
    """
    beside = base_dir / f"{module.replace('.', '/')}.py"
    if not module or not beside.is_file() or _found_at(module) == beside.resolve():
        return importlib.import_module(module)
    loader = importlib.util.spec_from_file_location(f"_parcv_spec_data.{module}", beside)
    if loader is None or loader.loader is None:  # pragma: no cover - a .py file always loads
        raise ImportError(f"cannot load {str(beside)!r}")
    loaded = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(loaded)
    return loaded


def _found_at(module: str) -> Path | None:
    """The file an import of ``module`` would load now, or None (not found, no file)."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = None if found is None else found.origin
    return Path(origin).resolve() if origin and Path(origin).is_file() else None


def _python(path: str, table: Mapping[str, Any], base_dir: Path) -> tuple[Any, Any, Any]:
    module, _, attr = path.rpartition(".")
    try:
        func = getattr(_import(module, base_dir), attr)
    except (ImportError, AttributeError, ValueError) as err:
        raise SpecError(
            "data.source",
            f"python:{path}",
            "'python:package.module.function' of a function returning (X, y) or "
            "(X, y, groups), in an "
            "importable module or in a module file beside the spec",
            hint=str(err),
        ) from None
    out = func(**_params(table))
    if not isinstance(out, tuple) or len(out) not in (2, 3):
        got = f"a tuple of {len(out)}" if isinstance(out, tuple) else type(out).__name__
        raise SpecError(
            "data.source",
            f"python:{path}",
            "a function returning (X, y) or (X, y, groups)",
            hint=f"It returned {got}.",
        )
    return out[0], out[1], out[2] if len(out) == 3 else None


def _npz(path: Path, table: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    with np.load(path, allow_pickle=False) as archive:
        names = list(archive.files)
        picked: list[Any] = []
        for key, default in (("x_key", "X"), ("y_key", "y"), ("groups", None)):
            name = table.get(key, default)
            if name is None:
                picked.append(None)
                continue
            if name not in names and key not in table:  # the default: say which key to add
                raise SpecError(
                    f"data.{key}",
                    MISSING,
                    f"the name of the array of {default} in {path.name}, one of {names}",
                    hint=f"{path.name} has no array named {default!r}, the default.",
                )
            if name not in names:
                raise SpecError(
                    f"data.{key}",
                    name,
                    f"an array name in {path.name}: {names}",
                    hint=did_you_mean(name, names),
                )
            picked.append(archive[name])
    return picked[0], picked[1], picked[2]


def _column(table: Mapping[str, Any], key: str, n_columns: int, default: int | None) -> int | None:
    value = table.get(key, default)
    if value is None:
        return None
    check_type(value, (int,), f"data.{key}", f"a column index in [-{n_columns}, {n_columns})")
    if not -n_columns <= value < n_columns:
        raise SpecError(f"data.{key}", value, f"a column index in [-{n_columns}, {n_columns})")
    return int(value) % n_columns


def _npy(path: Path, table: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    array = np.load(path, allow_pickle=False)
    if array.ndim != 2 or array.shape[1] < 2:
        raise SpecError(
            "data.source",
            str(path),
            "a 2-D .npy array with the target as a column",
            hint=f"It has shape {array.shape}; use .npz with arrays X and y instead.",
        )
    target = _column(table, "target", array.shape[1], -1)
    groups = _column(table, "groups", array.shape[1], None)
    keep = [c for c in range(array.shape[1]) if c not in (target, groups)]
    return array[:, keep], array[:, target], None if groups is None else array[:, groups]


def _as_numbers(values: list[str]) -> NDArray[Any] | None:
    try:
        return np.array([float(v) if v.strip() else np.nan for v in values])
    except ValueError:
        return None


def _first_word(values: list[Any]) -> int | None:
    """Index of the first cell that is neither empty (None: missing) nor a number."""
    for i, value in enumerate(values):
        if value is None:
            continue
        try:
            float(value) if not isinstance(value, str) or value.strip() else None
        except (TypeError, ValueError):
            return i
    return None


@dataclass(frozen=True)
class _Rows:
    """A CSV file's data rows, each with the line it starts on (the header is line 1)."""

    header: list[str]
    body: list[list[str]]
    lines: list[int]
    source: str

    def where(self, row: int, column: str) -> str:
        return f"{self.source} line {self.lines[row]}, column {column!r}"


def _read_rows(path: Path, delimiter: str, source: str) -> _Rows:
    """Read the rows; blank lines are skipped (as pandas.read_csv skips them)."""
    rows, lines = [], []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        start = 1
        for row in reader:
            if row:
                rows.append(row)
                lines.append(start)
            start = reader.line_num + 1  # a quoted cell may span several lines
    if len(rows) < 2:
        raise SpecError("data.source", str(path), "a CSV file with a header row and data rows")
    header = [h.strip() for h in rows[0]]
    twice = next((h for i, h in enumerate(header) if h in header[:i]), None)
    if twice is not None:
        raise UsageError(
            f"{source} line {lines[0]}: the header names the column {twice!r} twice; give "
            "each column its own name."
        )
    for row, line in zip(rows[1:], lines[1:], strict=True):
        if any(cell.strip() for cell in row[len(header) :]):
            raise UsageError(
                f"{source} line {line}: {len(row)} cells, but the header names {len(header)} "
                "columns; remove the extra cells, or name their column in the header."
            )
    return _Rows(header, rows[1:], lines[1:], source)


_FIX = "remove the row or fill the value"


def _target(where: Callable[[int], str], values: list[str], regressor: str | None) -> Any:
    """The target column: numbers if every cell is one, else class labels (as read).

    A missing target is refused naming its place (``where`` of its row); so is
    a cell that is not a number when the estimator is a regressor (its name in
    ``regressor``).
    """
    empty = next((i for i, v in enumerate(values) if not v.strip()), None)
    if empty is not None:
        raise UsageError(
            f"{where(empty)}: the cell is empty; every sample needs a target ({_FIX})."
        )
    y = _as_numbers(values)
    if y is not None:
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            raise UsageError(
                f"{where(int(bad[0]))}: {values[bad[0]]!r} is not a finite number; "
                f"the target must be one for every sample ({_FIX})."
            )
        return y
    first = _first_word(values)
    if regressor is not None and first is not None:
        raise UsageError(
            f"{where(first)}: {values[first]!r} is not a number; the target of a "
            f"regression must be numeric ({regressor} is a regressor): {_FIX}, or use a "
            "classifier if the column holds class labels."
        )
    return np.array(values)


@dataclass(frozen=True)
class _Cells:
    """Where a cell of X came from: its column's name, and its place in the source."""

    names: list[str]
    place: Callable[[int, int], tuple[str, str]]  # row, column -> where, the cell as read


def _array_cells(source: str, X: Any) -> _Cells:
    """The cells of an array or a DataFrame, placed by row and column of X (from 0)."""
    if _is_frame(X):
        names = [str(c) for c in X.columns]

        def place_named(row: int, column: int) -> tuple[str, str]:
            return f"{source}: X row {row}, column {names[column]!r}", str(X.iat[row, column])

        return _Cells(names, place_named)

    def place(row: int, column: int) -> tuple[str, str]:
        return f"{source}: X row {row}, column {column}", "nan"

    n_columns = X.shape[1] if X.ndim > 1 else 1
    return _Cells([f"column {j}" for j in range(n_columns)], place)


def _csv_cells(rows: _Rows, features: list[str]) -> _Cells:
    def place(row: int, column: int) -> tuple[str, str]:
        name = features[column]
        index, cells = rows.header.index(name), rows.body[row]
        return rows.where(row, name), cells[index] if index < len(cells) else ""

    return _Cells(list(features), place)


def _subset_cells(cells: _Cells, kept: Any) -> _Cells:
    """The cells of the rows ``kept`` (``data.n_samples``), still placed in the source."""

    def place(row: int, column: int) -> tuple[str, str]:
        return cells.place(int(kept[row]), column)

    return _Cells(cells.names, place)


def _missing(X: Any, cells: _Cells) -> MissingValues | None:
    """The NaN of X's numbers (empty or "nan" cells of a table, a DataFrame's numeric
    columns), by column, and the first in reading order."""
    found = find_nan(X)
    if found is None:
        return None
    columns = tuple((cells.names[j], int(n)) for j, n in enumerate(found.counts) if n)
    where, cell = cells.place(*found.first)
    return MissingValues(found.count, columns, where, cell)


def _named_columns(table: Mapping[str, Any], header: list[str], name: str) -> list[str]:
    """The feature columns of a table; the target and groups columns are checked too."""
    if "target" not in table:
        raise SpecError("data.target", MISSING, f"the name of the target column, one of {header}")
    for key in ("target", "groups"):
        if key in table and table[key] not in header:
            raise SpecError(
                f"data.{key}",
                table[key],
                f"a column of {name}: {header}",
                hint=did_you_mean(table[key], header),
            )
    if "features" not in table:
        features = [h for h in header if h not in (table["target"], table.get("groups"))]
        if not features:
            raise UsageError(
                f"{name} has no column besides the target {table['target']!r} (and groups): "
                "add the feature columns to it."
            )
        return features
    allowed = f"a list of columns of {name}: {header}"
    features = check_type(table["features"], (list,), "data.features", allowed)
    for column in features:
        if column not in header:
            raise SpecError(
                "data.features", column, allowed, hint=did_you_mean(str(column), header)
            )
    twice = next((c for i, c in enumerate(features) if c in features[:i]), None)
    if not features or twice is not None:
        raise SpecError("data.features", features, f"{allowed}, each at most once, at least one")
    return list(features)


def _csv_frame(rows: _Rows, features: list[str]) -> Any:
    """The feature columns as pandas.read_csv reads them (its dtypes, "NA" and empty cells
    missing), from the rows already read: row i of the frame is ``rows.body[i]``."""
    import pandas as pd

    picked = [rows.header.index(name) for name in features]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows.body:
        writer.writerow([row[i] if i < len(row) else "" for i in picked])
    buffer.seek(0)
    # low_memory=False: one dtype per column, inferred from all its cells (not per chunk).
    return pd.read_csv(buffer, header=None, names=features, low_memory=False)


def _csv(
    path: Path, table: Mapping[str, Any], *, source: str, regressor: str | None
) -> tuple[Any, Any, Any, _Cells]:
    delimiter = check_type(table.get("delimiter", ","), (str,), "data.delimiter", "one character")
    rows = _read_rows(path, delimiter, source)
    features = _named_columns(table, rows.header, path.name)

    def column(name: str) -> list[str]:
        index = rows.header.index(name)
        return [row[index] if index < len(row) else "" for row in rows.body]

    target = table["target"]
    y = _target(lambda row: rows.where(row, target), column(target), regressor)
    groups = np.array(column(table["groups"])) if "groups" in table else None
    return _csv_frame(rows, features), y, groups, _csv_cells(rows, features)


def _parquet(
    path: Path, table: Mapping[str, Any], *, source: str, regressor: str | None
) -> tuple[Any, Any, Any, _Cells]:
    try:
        import pyarrow  # noqa: F401  # pandas reads Parquet with it; its dtypes, not another's
    except ImportError:
        raise UsageError(
            f"{source}: reading a Parquet file needs pyarrow, which is not installed. Install "
            "it (pip install pyarrow), or save the table as CSV."
        ) from None
    import pandas as pd

    frame = pd.read_parquet(path, engine="pyarrow")
    header = [str(c) for c in frame.columns]
    frame.columns = pd.Index(header)
    features = _named_columns(table, header, path.name)
    target = table["target"]

    def where(row: int, name: str = target) -> str:
        return f"{source}: row {row}, column {name!r}"

    values = frame[target]
    if values.dtype.kind in "iuf":
        y = values.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            raise UsageError(
                f"{where(int(bad[0]))}: {float(y[bad[0]])!r} is not a finite number; the target "
                f"must be one for every sample ({_FIX})."
            )
    else:
        y = _target(where, ["" if pd.isna(v) else str(v) for v in values], regressor)
    groups = frame[table["groups"]].to_numpy() if "groups" in table else None
    X = frame[features]

    def place(row: int, column: int) -> tuple[str, str]:
        return where(row, features[column]), str(X.iat[row, column])

    return X, y, groups, _Cells(list(features), place)


_TABLES = {".csv": _csv, ".parquet": _parquet}


def _file(source: str, spec: Spec, regressor: str | None) -> tuple[Any, Any, Any, _Cells | None]:
    path = Path(source).expanduser()
    path = path if path.is_absolute() else spec.base_dir / path
    readers = {".npz": _npz, ".npy": _npy}
    if path.suffix not in (*readers, *_TABLES):
        raise SpecError("data.source", source, " or ".join(SOURCES))
    if not path.is_file():
        raise SpecError(
            "data.source",
            source,
            "an existing file",
            hint=f"No file at {str(path)!r} (relative paths are relative to the spec).",
        )
    table = spec.table("data")
    allowed = {
        ".npz": ("x_key", "y_key", "groups"),
        ".npy": ("target", "groups"),
        ".csv": ("target", "features", "groups", "delimiter"),
        ".parquet": ("target", "features", "groups"),
    }[path.suffix]
    for key in ("target", "features", "x_key", "y_key", "delimiter", "params"):
        if key in table and key not in allowed:
            raise SpecError(
                f"data.{key}", table[key], f"only {list(allowed)} for a {path.suffix} file"
            )
    if path.suffix in _TABLES:
        return _TABLES[path.suffix](path, table, source=source, regressor=regressor)
    X, y, groups = readers[path.suffix](path, table)
    return X, y, groups, None


def _take(values: Any, rows: Any) -> Any:
    """The rows ``rows`` (positions) of an array, a sparse matrix or a pandas object."""
    return values.iloc[rows] if hasattr(values, "iloc") else values[rows]


def _subsample(X: Any, y: Any, groups: Any, n: Any, seed: int) -> tuple[Any, Any, Any, Any]:
    """A random subset of ``n`` rows, in their order; the rows kept are returned last."""
    check_type(n, (int,), "data.n_samples", f"an int in [2, {len(y)}]")
    if not 2 <= n <= len(y):
        raise SpecError("data.n_samples", n, f"an int in [2, {len(y)}]")
    rows = np.sort(np.random.default_rng(seed).choice(len(y), size=n, replace=False))
    return _take(X, rows), _take(y, rows), None if groups is None else _take(groups, rows), rows


def _is_frame(X: Any) -> bool:
    """Whether X is a pandas DataFrame (pandas is not imported to know it)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(X, pandas.DataFrame)


def _as_rows(values: Any) -> Any:
    """Arrays, sparse matrices and pandas objects as given; lists and tuples as an array."""
    return values if values is None or hasattr(values, "shape") else np.asarray(values)


def _text_columns(X: Any, cells: _Cells) -> TextColumns | None:
    """The text and categorical columns of a DataFrame X, and its first text cell."""
    if not _is_frame(X):
        return None
    import pandas as pd

    text, categorical, first = [], [], None
    for j, dtype in enumerate(X.dtypes):
        if isinstance(dtype, pd.CategoricalDtype):
            categorical.append(cells.names[j])
        elif pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            text.append(cells.names[j])
            column = X.iloc[:, j]
            gone = column.isna().tolist()
            values = [None if out else v for v, out in zip(column.tolist(), gone, strict=True)]
            row = None if first is not None else _first_word(values)
            first = first if row is None else cells.place(row, j)
    if not text and not categorical:
        return None
    where, cell = first if first is not None else ("", "")
    return TextColumns(tuple(text), tuple(categorical), where, cell)


def _regressor_name(estimator: Any) -> str | None:
    """The estimator's class name if it is a regressor (None if not, or not known)."""
    try:
        return type(estimator).__name__ if is_regressor(estimator) else None
    except Exception:  # an estimator without scikit-learn's tags: its own fit decides
        return None


def load_data(spec: Spec, *, estimator: Any = None, run_code: bool = True) -> LoadedData:
    """Load the data a spec names (relative file paths are relative to the spec).

    A table's (.csv, .parquet) features are a pandas DataFrame with the dtypes
    pandas infers: text and categorical columns are kept, and named in the
    description. Its target column holds numbers if every cell is one, and
    class labels otherwise. An empty or non-finite target cell, or, for a
    regressor, a cell that is not a number, is refused naming its line in the
    file. A ``python:`` source's X, y and groups are kept as it returns them
    (a DataFrame stays one; ``data.n_samples`` takes rows by position).

    Parameters
    ----------
    spec : Spec
    estimator : estimator object, default=None
        The spec's estimator, for the target a CSV file must hold.
    run_code : bool, default=True
        Whether a ``python:`` source's function may be called. Without, its
        data is not read: X, y and groups are None (``parcv inspect`` runs no
        code a spec names).

    Returns
    -------
    LoadedData

    Raises
    ------
    SpecError
        An unknown source, a missing file or column, a key that does not fit the source.
    UsageError
        A target cell that is missing, or not a number for a regressor; a CSV
        header naming a column twice, or a row with more cells than the header;
        a Parquet file without pyarrow installed.

    Examples
    --------
    >>> from parcv.cli.spec import parse_spec
    >>> spec = parse_spec('[data]\\nsource = "sklearn:iris"\\nn_samples = 30\\n'
    ...                   '[estimator]\\nclass = "sklearn.svm.SVC"\\n')
    >>> load_data(spec).X.shape
    (30, 4)
    """
    table = spec.table("data")
    source = str(table["source"])
    if source.startswith("python:") and not run_code:
        return LoadedData(None, None, None, f"{source} (read at run time, by calling it)")
    try:
        if source.startswith(("sklearn:", "python:")):
            if "groups" in table:
                raise SpecError("data.groups", table["groups"], "groups only from a file column")
            prefix, _, name = source.partition(":")
            if prefix == "sklearn":
                (X, y), groups = _sklearn(name, table), None
            else:
                X, y, groups = _python(name, table, spec.base_dir)
            cells = None
        else:
            X, y, groups, cells = _file(source, spec, _regressor_name(estimator))
        X, y, groups = _as_rows(X), _as_rows(y), _as_rows(groups)
        cells = cells or _array_cells(source, X)
        if "n_samples" in table:
            X, y, groups, kept = _subsample(X, y, groups, table["n_samples"], spec.run.seed)
            cells = _subset_cells(cells, kept)
    except SpecError as err:
        raise err.located(spec.source, spec.text) from None
    shape = f"{X.shape[0]} samples x {X.shape[1] if X.ndim > 1 else 1} features"
    grouped = "" if groups is None else f", {len(np.unique(groups))} groups"
    text = _text_columns(X, cells)
    kinds = "" if text is None else f", {text.summary()}"
    missing = _missing(X, cells)
    noted = "" if missing is None else f"; {missing.summary()}"
    return LoadedData(X, y, groups, f"{source} ({shape}{grouped}{kinds}{noted})", missing, text)
