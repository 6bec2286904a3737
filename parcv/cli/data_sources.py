"""Data sources of a spec: .npz/.npy/.csv files, scikit-learn datasets, Python callables."""

from __future__ import annotations

import csv
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import is_classifier, is_regressor

from parcv.cli.spec import MISSING, Spec, SpecError, UsageError, check_type
from parcv.errors import did_you_mean, shown

__all__ = ["LoadedData", "MissingValues", "load_data"]

SKLEARN_LOADERS = ("breast_cancer", "diabetes", "digits", "iris", "linnerud", "wine")
SOURCES = ("a .csv, .npz or .npy file", "'sklearn:NAME'", "'python:module.function'")


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

    def refusal(self, estimator: Any) -> str:
        """Why the sweep cannot start: ``estimator`` does not take missing values."""
        name = type(estimator).__name__
        what = "is empty" if not self.cell.strip() else f"holds {shown(self.cell, 40)}"
        kind = "Classifier" if is_classifier(estimator) else "Regressor"
        return (
            f"{self.first}: the cell {what} (a missing value), and {name} does not accept "
            f"missing values ({self.summary()}). Fill them, remove those rows, or use an "
            f"estimator that accepts them: HistGradientBoosting{kind}, or a pipeline that "
            "starts with SimpleImputer."
        )


@dataclass(frozen=True)
class LoadedData:
    """X, y and groups of a spec, a one-line description of where they came from, and
    the missing values of its features (None: none)."""

    X: Any
    y: Any
    groups: Any
    description: str
    missing: MissingValues | None = None


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
    """Import ``module``; failing that, the file ``<module>.py`` beside the spec."""
    beside = base_dir / f"{module.replace('.', '/')}.py"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if not beside.is_file() or not module or err.name != module.split(".")[0]:
            raise
    loader = importlib.util.spec_from_file_location(f"_parcv_spec_data.{module}", beside)
    if loader is None or loader.loader is None:  # pragma: no cover - a .py file always loads
        raise ImportError(f"cannot load {str(beside)!r}")
    loaded = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(loaded)
    return loaded


def _python(path: str, table: Mapping[str, Any], base_dir: Path) -> tuple[Any, Any]:
    module, _, attr = path.rpartition(".")
    try:
        func = getattr(_import(module, base_dir), attr)
    except (ImportError, AttributeError, ValueError) as err:
        raise SpecError(
            "data.source",
            f"python:{path}",
            "'python:package.module.function' of a function returning (X, y), in an "
            "importable module or in a module file beside the spec",
            hint=str(err),
        ) from None
    out = func(**_params(table))
    if not isinstance(out, tuple) or len(out) < 2:
        raise SpecError(
            "data.source",
            f"python:{path}",
            "a function returning (X, y)",
            hint=f"It returned {type(out).__name__}.",
        )
    return out[0], out[1]


def _npz(path: Path, table: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    with np.load(path, allow_pickle=False) as archive:
        names = list(archive.files)
        picked: list[Any] = []
        for key, default in (("x_key", "X"), ("y_key", "y"), ("groups", None)):
            name = table.get(key, default)
            if name is None:
                picked.append(None)
                continue
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


def _first_word(values: list[str]) -> int | None:
    """Index of the first cell that is neither empty nor a number."""
    for i, value in enumerate(values):
        try:
            float(value) if value.strip() else None
        except ValueError:
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
    return _Rows([h.strip() for h in rows[0]], rows[1:], lines[1:], source)


_FIX = "remove the row or fill the value"


def _csv_target(rows: _Rows, name: str, values: list[str], regressor: str | None) -> Any:
    """The target column: numbers if every cell is one, else class labels (as read).

    A missing target is refused naming its line; so is a cell that is not a
    number when the estimator is a regressor (its name in ``regressor``).
    """
    empty = next((i for i, v in enumerate(values) if not v.strip()), None)
    if empty is not None:
        raise UsageError(
            f"{rows.where(empty, name)}: the cell is empty; every sample needs a target ({_FIX})."
        )
    y = _as_numbers(values)
    if y is not None:
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            raise UsageError(
                f"{rows.where(int(bad[0]), name)}: {values[bad[0]]!r} is not a finite number; "
                f"the target must be one for every sample ({_FIX})."
            )
        return y
    first = _first_word(values)
    if regressor is not None and first is not None:
        raise UsageError(
            f"{rows.where(first, name)}: {values[first]!r} is not a number; the target of a "
            f"regression must be numeric ({regressor} is a regressor): {_FIX}, or use a "
            "classifier if the column holds class labels."
        )
    return np.array(values)


@dataclass(frozen=True)
class _Cells:
    """Where a cell of X came from: its column's name, and its place in the source."""

    names: list[str]
    place: Callable[[int, int], tuple[str, str]]  # row, column -> where, the cell as read


def _array_cells(source: str, n_columns: int) -> _Cells:
    def place(row: int, column: int) -> tuple[str, str]:
        return f"{source}: X row {row}, column {column}", "nan"

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
    """The NaN of a numeric X (empty or "nan" cells of a table), by column, and the first."""
    values = np.asarray(X)
    if values.dtype.kind != "f" or values.ndim != 2:
        return None
    mask = np.isnan(values)
    if not mask.any():
        return None
    row, column = (int(i) for i in np.argwhere(mask)[0])  # the first in reading order
    counts = mask.sum(axis=0)
    columns = tuple((cells.names[j], int(n)) for j, n in enumerate(counts) if n)
    where, cell = cells.place(row, column)
    return MissingValues(int(mask.sum()), columns, where, cell)


def _csv(
    path: Path, table: Mapping[str, Any], *, source: str, regressor: str | None
) -> tuple[Any, Any, Any, _Cells]:
    delimiter = check_type(table.get("delimiter", ","), (str,), "data.delimiter", "one character")
    rows = _read_rows(path, delimiter, source)
    header, body = rows.header, rows.body
    columns = {
        name: [row[i] if i < len(row) else "" for row in body] for i, name in enumerate(header)
    }
    if "target" not in table:
        raise SpecError("data.target", MISSING, f"the name of the target column, one of {header}")
    for key in ("target", "groups"):
        if key in table and table[key] not in columns:
            raise SpecError(
                f"data.{key}",
                table[key],
                f"a column of {path.name}: {header}",
                hint=did_you_mean(table[key], header),
            )
    skip = {table["target"], table.get("groups")}
    features = table.get("features", [h for h in header if h not in skip])
    X = []
    for name in check_type(features, (list,), "data.features", f"a list of columns of {header}"):
        values = _as_numbers(columns[name]) if name in columns else None
        if values is None and name not in columns:
            raise SpecError(
                "data.features",
                name,
                f"columns of {path.name}: {header}",
                hint=did_you_mean(name, header),
            )
        if values is None:
            first = _first_word(columns[name]) if name in columns else None
            cell = "" if first is None else (
                f" Its cell on {source} line {rows.lines[first]} holds {columns[name][first]!r}."
            )  # fmt: skip
            raise SpecError(
                "data.features",
                name,
                f"numeric columns of {header}",
                hint="Encode text columns as numbers, or list only numeric ones in "
                f"data.features.{cell}",
            )
        X.append(values)
    y = _csv_target(rows, table["target"], columns[table["target"]], regressor)
    groups = np.array(columns[table["groups"]]) if "groups" in table else None
    return np.column_stack(X), y, groups, _csv_cells(rows, list(features))


def _file(source: str, spec: Spec, regressor: str | None) -> tuple[Any, Any, Any, _Cells | None]:
    path = Path(source).expanduser()
    path = path if path.is_absolute() else spec.base_dir / path
    readers = {".npz": _npz, ".npy": _npy}
    if path.suffix not in (*readers, ".csv"):
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
    }[path.suffix]
    for key in ("target", "features", "x_key", "y_key", "delimiter", "params"):
        if key in table and key not in allowed:
            raise SpecError(
                f"data.{key}", table[key], f"only {list(allowed)} for a {path.suffix} file"
            )
    if path.suffix == ".csv":
        return _csv(path, table, source=source, regressor=regressor)
    X, y, groups = readers[path.suffix](path, table)
    return X, y, groups, None


def _subsample(X: Any, y: Any, groups: Any, n: Any, seed: int) -> tuple[Any, Any, Any, Any]:
    """A random subset of ``n`` rows, in their order; the rows kept are returned last."""
    check_type(n, (int,), "data.n_samples", f"an int in [2, {len(y)}]")
    if not 2 <= n <= len(y):
        raise SpecError("data.n_samples", n, f"an int in [2, {len(y)}]")
    rows = np.sort(np.random.default_rng(seed).choice(len(y), size=n, replace=False))
    return X[rows], y[rows], None if groups is None else groups[rows], rows


def _regressor_name(estimator: Any) -> str | None:
    """The estimator's class name if it is a regressor (None if not, or not known)."""
    try:
        return type(estimator).__name__ if is_regressor(estimator) else None
    except Exception:  # an estimator without scikit-learn's tags: its own fit decides
        return None


def load_data(spec: Spec, *, estimator: Any = None, run_code: bool = True) -> LoadedData:
    """Load the data a spec names (relative file paths are relative to the spec).

    A CSV file's target column holds numbers if every cell is one, and class
    labels otherwise. An empty or non-finite target cell, or, for a regressor,
    a cell that is not a number, is refused naming its line in the file.

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
        An unknown source, a missing file or column, a non-numeric feature.
    UsageError
        A CSV target cell that is missing, or not a number for a regressor.

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
            prefix, _, name = source.partition(":")
            if prefix == "sklearn":
                X, y = _sklearn(name, table)
            else:
                X, y = _python(name, table, spec.base_dir)
            groups, cells = None, None
            if "groups" in table:
                raise SpecError("data.groups", table["groups"], "groups only from a file column")
        else:
            X, y, groups, cells = _file(source, spec, _regressor_name(estimator))
        X, y = np.asarray(X), np.asarray(y)
        cells = cells or _array_cells(source, X.shape[1] if X.ndim > 1 else 1)
        if "n_samples" in table:
            X, y, groups, kept = _subsample(X, y, groups, table["n_samples"], spec.run.seed)
            cells = _subset_cells(cells, kept)
    except SpecError as err:
        raise err.located(spec.source, spec.text) from None
    shape = f"{X.shape[0]} samples x {X.shape[1] if X.ndim > 1 else 1} features"
    grouped = "" if groups is None else f", {len(np.unique(groups))} groups"
    missing = _missing(X, cells)
    noted = "" if missing is None else f"; {missing.summary()}"
    return LoadedData(X, y, groups, f"{source} ({shape}{grouped}{noted})", missing)
