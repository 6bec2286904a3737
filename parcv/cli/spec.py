"""Sweep spec files (TOML): parse and validate them, with errors that point at the line.

A spec names the data, the estimator, the candidate space, the CV scheme,
the scoring and the run options of one sweep. This module checks its shape
and types; :mod:`parcv.cli.sweep` turns a checked spec into objects and runs it.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from parcv.errors import ParcvError, did_you_mean, shorten, shown

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10 has no tomllib
    import tomli as tomllib  # type: ignore[no-redef]

from parcv.criteria.tasks import CRITERIA
from parcv.store.checks import JOURNAL_MODES

__all__ = [
    "MISSING",
    "Spec",
    "SpecError",
    "check_depth",
    "check_keys",
    "check_out",
    "check_type",
    "find_line",
    "RunTable",
    "load_spec",
    "parse_spec",
    "override_run",
    "override_table",
    "UsageError",
    "check_choice",
    "check_int",
    "check_strings",
]


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


class SpecError(ParcvError, ValueError):
    """A spec key holds a value that is not allowed.

    Parameters
    ----------
    key : str
        Dotted key, e.g. ``"cv.outer.n_splits"`` or ``"space[1].model__C"``.
    value : object
        The value found (``MISSING`` when a required key is absent).
    allowed : str
        What is allowed instead, in words.
    hint : str, default=""
        How to fix it.
    line : int, default=None
        1-based line of the key in the file, when it can be found.
    source : str, default="spec"
        File name shown in the message.

    Examples
    --------
    >>> print(SpecError("run.n_jobs", 0, "an int >= 1 or -1", line=3, source="a.toml"))
    a.toml:3: run.n_jobs = 0 is not valid; allowed: an int >= 1 or -1.
    """

    def __init__(
        self,
        key: str,
        value: Any,
        allowed: str,
        *,
        hint: str = "",
        line: int | None = None,
        source: str = "spec",
    ) -> None:
        self.key, self.value, self.allowed, self.hint = key, value, allowed, hint
        self.line, self.source = line, source
        where = f"{source}:{line}: " if line is not None else f"{source}: "
        # A key, value or hint from the spec is shown cut: a 1 MB name is not echoed in full.
        name = shorten(key, 120)
        if value is MISSING:
            what = f"{name} is missing; expected {allowed}."
        else:
            what = f"{name} = {shown(value)} is not valid; allowed: {allowed}."
        super().__init__(where + what + (f" {shorten(hint, 400)}" if hint else ""))

    def located(self, source: str, text: str | None) -> SpecError:
        """Return the same error with the file name and, if found, the line number."""
        line = self.line if self.line is not None or text is None else find_line(text, self.key)
        return SpecError(
            self.key, self.value, self.allowed, hint=self.hint, line=line, source=source
        )


class UsageError(ParcvError, ValueError):
    """The sweep cannot start as asked: bad option combination, data or missing module."""


def check_keys(table: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    """Raise a :class:`SpecError` for the first key of ``table`` not in ``allowed``."""
    for key, value in table.items():
        if key not in allowed:
            name = f"{where}.{key}" if where else key
            raise SpecError(
                name, value, f"the keys {list(allowed)}", hint=did_you_mean(key, allowed)
            )


def check_type(value: Any, types: tuple[type, ...], key: str, allowed: str) -> Any:
    """Return ``value`` if it has one of ``types`` (bool is never an int); else raise."""
    if isinstance(value, bool) and bool not in types:
        raise SpecError(key, value, allowed)
    if not isinstance(value, types):
        raise SpecError(key, value, allowed)
    return value


_HEADER = re.compile(r"^\s*\[(\[)?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")


def _parts(key: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for part in key.split("."):
        m = re.fullmatch(r"(.*?)\[(\d+)\]", part)
        out.append((m.group(1), int(m.group(2))) if m else (part, None))
    return out


def find_line(text: str, key: str) -> int | None:
    """Return the 1-based line where a dotted key is set, or None if not found.

    Examples
    --------
    >>> find_line('[run]\\nseed = 1\\n[cv]\\nouter = { kind = "x" }\\n', "cv.outer.kind")
    4
    """
    lines = text.splitlines()
    parts = [p for p in _parts(key) if p[0]]
    headers = [(i, m.group(2)) for i, ln in enumerate(lines) if (m := _HEADER.match(ln))]
    start, end, used = 0, headers[0][0] if headers else len(lines), 0
    found: int | None = None
    for n in range(len(parts), 0, -1):
        name = ".".join(p[0] for p in parts[:n])
        hits = [i for i, h in headers if h == name]
        nth = parts[n - 1][1] or 0
        if len(hits) > nth:
            start = found = hits[nth]
            later = [i for i, _ in headers if i > start]
            end, used = (later[0] if later else len(lines)), n
            break
    skip = 0
    for name, index in parts[used:]:
        pattern = re.compile(rf"(^|[\s{{,]){re.escape(name)}\s*=|\"{re.escape(name)}\"\s*=")
        hits = [i for i in range(start, end) if pattern.search(lines[i])]
        if len(hits) <= skip:
            break
        start = found = hits[skip]
        skip = index or 0
    return None if found is None else found + 1


def check_choice(table: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...]) -> None:
    """``table[key]``, when present, must be one of ``choices``."""
    if key in table and table[key] not in choices:
        raise SpecError(
            f"{where}.{key}",
            table[key],
            f"one of {list(choices)}",
            hint=did_you_mean(str(table[key]), choices),
        )


def check_int(
    table: Mapping[str, Any], key: str, where: str, low: int, high: int | None = None
) -> None:
    """``table[key]``, when present, must be an int from ``low`` to ``high``.

    ``n_jobs`` may also be -1 (every core) or -2 (all but one), as on the command line.
    """
    if key in table:
        allowed = f"an int >= {low}" if high is None else f"an int from {low} to {high}"
        extra = key == "n_jobs"
        allowed += ", -1 for every core or -2 for all but one" if extra else ""
        value = check_type(table[key], (int,), f"{where}.{key}", allowed)
        outside = value < low or (high is not None and value > high)
        if outside and not (extra and value in (-1, -2)):
            raise SpecError(f"{where}.{key}", value, allowed)


def check_strings(table: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    """Each of ``keys`` present in ``table`` must be a string."""
    for key in keys:
        if key in table:
            check_type(table[key], (str,), f"{where}.{key}", "a string")


# Every table and key a spec may hold; anything else is a schema error.
SCHEMA: dict[str, tuple[str, ...]] = {
    "": (
        "name",
        "description",
        "data",
        "estimator",
        "space",
        "search",
        "cv",
        "scoring",
        "run",
        "cluster",
        "tls",
        "report",
    ),
    "data": (
        "source",
        "target",
        "features",
        "groups",
        "x_key",
        "y_key",
        "params",
        "n_samples",
        "delimiter",
    ),
    "estimator": ("class", "params", "steps"),
    "search": (
        "strategy",
        "n_iter",
        "random_state",
        "selection",
        "complexity",
        "criteria",
        "racing",
        "iterations",
        "halving",
        "hyperband",
        "sampler",
    ),
    "cv": ("mode", "cv", "inner", "outer"),
    "scoring": (
        "metrics",
        "refit",
        "return_train_score",
        "error_score",
        "predictions",
        "interval",
        "confidence",
        "ncv_repetitions",
    ),
    "run": (
        "backend",
        "n_jobs",
        "scheduler",
        "scheduler_file",
        "seed",
        "out",
        "save_models",
        "journal",
        "timeout",
        "retry_failed",
    ),
    "cluster": ("kind", "jobs", "cores", "memory", "walltime", "queue", "account"),
    "tls": ("ca_file", "cert", "key"),
    "report": ("param", "metric", "plots", "cv_results"),
}
BACKENDS = ("serial", "local", "dask")
CLUSTER_KINDS = ("slurm", "pbs")
MODES = ("cross_validate", "search", "nested")
CRITERIA_KEYS = ("names", "n_params", "noise_variance")


@dataclass(frozen=True, slots=True)
class RunTable:
    """How to run a spec: backend, workers, seed, run directory (the ``[run]`` table)."""

    backend: str | None = None
    n_jobs: int | None = None
    scheduler: str | None = None
    scheduler_file: str | None = None
    seed: int = 0
    out: str | None = None
    save_models: bool = True  # the final model is what a user ships: keep it by default
    journal: str = "wal"
    timeout: float | None = None  # seconds one unit may run
    retry_failed: bool = False  # with --resume, run units recorded as failed again


@dataclass(frozen=True, slots=True)
class Spec:
    """A checked sweep spec.

    Parameters
    ----------
    tables : dict
        The TOML document after schema checks (keys and basic types).
    run : RunTable
        The ``[run]`` table; command-line options are merged with
        :func:`override_run`.
    mode : {"cross_validate", "search", "nested"}
        Which API call runs the sweep.
    source : str, default="spec"
        File name, for messages.
    base_dir : Path, default=Path(".")
        Relative data and TLS paths are relative to this directory.
    text : str, default=""
        The original text, to find line numbers for later errors.
    """

    tables: dict[str, Any] = field(repr=False)
    run: RunTable
    mode: str
    source: str = "spec"
    base_dir: Path = Path(".")
    text: str = field(default="", repr=False)

    @property
    def name(self) -> str:
        """The spec's ``name`` (or the file stem)."""
        return str(self.tables.get("name") or Path(self.source).stem)

    def table(self, name: str) -> dict[str, Any]:
        """Return one top-level table (empty if absent)."""
        value = self.tables.get(name, {})
        return value if isinstance(value, dict) else {}

    def error(self, key: str, value: Any, allowed: str, hint: str = "") -> SpecError:
        """Build a :class:`SpecError` located in this spec's file."""
        return SpecError(key, value, allowed, hint=hint).located(self.source, self.text)


def _check_run(run: Mapping[str, Any]) -> RunTable:
    check_choice(run, "backend", "run", BACKENDS)
    check_int(run, "n_jobs", "run", 1)
    check_int(run, "seed", "run", 0, 2**32 - 1)  # numpy seeds
    check_strings(run, ("scheduler", "scheduler_file", "out"), "run")
    if "scheduler" in run and "scheduler_file" in run:
        raise SpecError(
            "run.scheduler_file",
            run["scheduler_file"],
            "either run.scheduler or run.scheduler_file, not both",
        )
    for flag in ("save_models", "retry_failed"):
        if flag in run:
            check_type(run[flag], (bool,), f"run.{flag}", "true or false")
    if "timeout" in run:
        seconds = "a number of seconds > 0, e.g. 600"
        check_type(run["timeout"], (int, float), "run.timeout", seconds)
        if isinstance(run["timeout"], bool) or not 0 < run["timeout"] < math.inf:
            raise SpecError(
                "run.timeout", run["timeout"], seconds,
                hint="Leave it out for no limit; a unit running longer is stopped and recorded "
                "as failed.",
            )  # fmt: skip
    if "journal" in run and run["journal"] not in JOURNAL_MODES:
        use = "Use 'delete' when the run directory is on NFS or Lustre, else 'wal'."
        did = did_you_mean(run["journal"], JOURNAL_MODES)
        raise SpecError(
            "run.journal",
            run["journal"],
            f"one of {list(JOURNAL_MODES)}",
            hint=f"{did} {use}" if did else use,
        )
    return RunTable(**dict(run))


def _check_criteria_names(names: Any, key: str) -> None:
    allowed = f"a non-empty list of names from {list(CRITERIA)}"
    check_type(names, (list,), key, allowed)
    if not names:
        raise SpecError(key, names, allowed, hint="Add e.g. criteria = ['bic', 'evidence'].")
    for name in names:
        if name not in CRITERIA:
            raise SpecError(key, name, allowed, hint=did_you_mean(str(name), CRITERIA))
    if len(set(names)) != len(names):
        raise SpecError(key, names, f"{allowed}, each named once")


def _check_criteria(search: Mapping[str, Any]) -> None:
    """Check ``search.criteria``: a list of names, or a table {names, n_params, noise_variance}."""
    if "criteria" not in search:
        return
    value, key = search["criteria"], "search.criteria"
    if not isinstance(value, dict):
        _check_criteria_names(value, key)
        return
    check_keys(value, CRITERIA_KEYS, key)
    if "names" not in value:
        raise SpecError(f"{key}.names", MISSING, f"a list of names from {list(CRITERIA)}")
    _check_criteria_names(value["names"], f"{key}.names")
    check_int(value, "n_params", key, 0)
    if "noise_variance" in value:
        variance = check_type(
            value["noise_variance"], (int, float), f"{key}.noise_variance", "a number > 0"
        )
        if not variance > 0:
            raise SpecError(f"{key}.noise_variance", variance, "a number > 0")


def _check_tables(doc: Mapping[str, Any]) -> None:
    for name in ("data", "estimator", "search", "cv", "scoring", "run", "cluster", "tls", "report"):
        if name in doc:
            check_type(doc[name], (dict,), name, f"a table [{name}]")
            check_keys(doc[name], SCHEMA[name], name)
    for name in ("data", "estimator"):
        if name not in doc:
            raise SpecError(
                name, MISSING, f"a table [{name}]", hint="See examples/*.toml for a complete spec."
            )
    if "source" not in doc["data"]:
        raise SpecError(
            "data.source",
            MISSING,
            "a file (.csv, .npz, .npy), 'sklearn:NAME' or 'python:module.function'",
        )
    check_strings(doc["data"], ("source",), "data")
    check_strings(doc, ("name", "description"), "")
    if "space" in doc:
        check_type(doc["space"], (dict, list), "space", "a table [space] or tables [[space]]")
    cluster, tls, report = doc.get("cluster", {}), doc.get("tls", {}), doc.get("report", {})
    check_choice(cluster, "kind", "cluster", CLUSTER_KINDS)
    for key in ("jobs", "cores"):
        check_int(cluster, key, "cluster", 1)
    check_strings(cluster, ("memory", "walltime", "queue", "account"), "cluster")
    check_strings(tls, SCHEMA["tls"], "tls")
    check_strings(report, ("param", "metric"), "report")
    _check_criteria(doc.get("search", {}))
    for key in ("plots", "cv_results"):
        if key in report:
            check_type(report[key], (bool,), f"report.{key}", "true or false")


def _mode(doc: Mapping[str, Any]) -> str:
    cv = doc.get("cv", {})
    check_choice(cv, "mode", "cv", MODES)
    if "cv" in cv and "inner" in cv:
        raise SpecError("cv.inner", cv["inner"], "either cv.cv or cv.inner (the same scheme)")
    inferred = "nested" if "outer" in cv else "search" if "space" in doc else "cross_validate"
    mode = str(cv.get("mode", inferred))
    if "outer" in cv and mode != "nested":
        raise SpecError(
            "cv.mode",
            mode,
            "'nested' when cv.outer is set",
            hint="Remove cv.outer, or set mode = 'nested'.",
        )
    if mode != "cross_validate" and "space" not in doc:
        raise SpecError(
            "space",
            MISSING,
            f"a [space] table for mode {mode!r}",
            hint="Add e.g. [space] alpha = [0.1, 1.0], or use mode = 'cross_validate'.",
        )
    if mode == "cross_validate" and "space" in doc:
        raise SpecError("cv.mode", mode, "'search' or 'nested' when a [space] is given")
    return mode


# How deep a spec may nest tables, dotted keys, arrays and inline tables, all counted
# together: the deepest real specs (an estimator inside a pipeline inside a space) need
# about 10. Deeper ones end in the TOML parser's or parcv's recursion.
MAX_DEPTH = 32
# Strings (whose brackets, dots and '=' are no structure) and comments, in TOML's forms.
_STRING_OR_COMMENT = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*',
    re.DOTALL,
)
_TABLE_HEADER = re.compile(r"^\s*\[\[?([^\]]*)\]")


def _blank_strings(text: str) -> str:
    """``text`` with each string reduced to ``""`` and comments removed, lines kept."""

    def blank(match: re.Match[str]) -> str:
        token = match.group(0)
        return "" if token.startswith("#") else '""' + "\n" * token.count("\n")

    return _STRING_OR_COMMENT.sub(blank, text)


def check_depth(text: str, source: str = "spec") -> None:
    """Refuse a spec nested deeper than ``MAX_DEPTH``, before parsing it.

    Each line's depth counts the parts of its table header, of its dotted
    keys and its open arrays and inline tables; a parser would recurse that
    deep. Strings and comments do not count.

    Examples
    --------
    >>> check_depth("[space]\\nC = " + "[" * 40 + "]" * 40, source="deep.toml")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    parcv.cli.spec.SpecError: deep.toml:2: (nesting) = 'C, 42 levels deep' is not valid; ...
    """
    header, table, open_brackets = 0, "", 0
    for number, line in enumerate(_blank_strings(text).splitlines(), start=1):
        if open_brackets == 0 and (match := _TABLE_HEADER.match(line)):
            table = match.group(1).strip()
            header = table.count(".") + 1
            line = line[match.end() :]
        keys = [re.split(r"[{,\[]", part)[-1] for part in line.split("=")[:-1]]
        parts = max((k.count(".") + 1 for k in keys), default=0)
        deepest = open_brackets
        for char in line:
            if char in "[{":
                open_brackets += 1
                deepest = max(deepest, open_brackets)
            elif char in "]}":
                open_brackets = max(open_brackets - 1, 0)
        depth = header + parts + deepest
        if depth > MAX_DEPTH:
            name = (keys[0].strip() if keys else "") or table  # the outermost key
            name = ".".join(name.split(".")[:3]) + (".…" if name.count(".") > 2 else "")
            raise SpecError(
                "(nesting)", f"{name[:40]}, {depth} levels deep",
                f"at most {MAX_DEPTH} levels of tables, dotted keys, arrays and inline "
                "tables together",
                hint="A sweep spec needs a few: flatten this value.",
                line=number, source=source,
            )  # fmt: skip


def parse_spec(text: str, *, source: str = "spec", base_dir: str | Path = ".") -> Spec:
    """Parse and check the text of a spec.

    Parameters
    ----------
    text : str
        TOML text.
    source : str, default="spec"
        Name shown in error messages (usually the file path).
    base_dir : str or Path, default="."
        Directory that relative paths in the spec are relative to.

    Returns
    -------
    Spec

    Raises
    ------
    SpecError
        Invalid TOML, an unknown table or key, a missing required key, or a
        value of the wrong type; the message names the key, the value, what
        is allowed and the line.

    Examples
    --------
    >>> spec = parse_spec('[data]\\nsource = "sklearn:iris"\\n'
    ...                   '[estimator]\\nclass = "sklearn.svm.SVC"\\n')
    >>> spec.mode, spec.run.seed
    ('cross_validate', 0)
    >>> parse_spec('[data]\\nsource = "sklearn:iris"\\n[estimator]\\nklass = "x"\\n')
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    parcv.cli.spec.SpecError: spec:4: estimator.klass = 'x' is not valid; ... Did you mean 'class'?
    """
    check_depth(text, source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SpecError(
            "(toml syntax)", str(err), "valid TOML (https://toml.io)", source=source
        ) from None
    try:
        check_keys(doc, SCHEMA[""], "")
        _check_tables(doc)
        mode = _mode(doc)
        run = _check_run(doc.get("run", {}))
    except SpecError as err:
        raise err.located(source, text) from None
    return Spec(doc, run, mode, source, Path(base_dir), text)


def load_spec(path: str | Path) -> Spec:
    """Read and check a spec file; relative paths in it are relative to its directory.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Spec

    Raises
    ------
    SpecError
        As :func:`parse_spec`, or when the file cannot be read.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(
            "SPEC", str(p), "a readable UTF-8 TOML file", hint=str(err), source=str(p)
        ) from None
    return parse_spec(text, source=str(p), base_dir=p.resolve().parent)


def check_out(spec: Spec) -> None:
    """Refuse a spec's ``run.out`` outside the folder parcv runs from.

    A spec file may come from anyone: where outputs land outside the current
    folder is the command line's choice (``--out``, which replaces ``run.out``);
    call this only when the command line gave none. The path is resolved, symbolic
    links followed: a folder on its way that links out of the current folder is
    refused as ``..`` is.

    Examples
    --------
    >>> check_out(parse_spec('[data]\\nsource = "sklearn:iris"\\n[estimator]\\nclass = "x.Y"\\n'
    ...                      '[run]\\nout = "../../x"\\n'))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    parcv.cli.spec.SpecError: spec:6: run.out = '../../x' is not valid; allowed: a folder ...
    """
    out = spec.run.out
    if out is None:
        return
    allowed = ("a folder inside the one parcv runs from (a relative path that does not climb "
               "out with '..' or through a symbolic link)")  # fmt: skip
    command_line = f"say so on the command line: --out {shlex.quote(out)}"
    path = Path(out).expanduser()
    parts = Path(os.path.normpath(path)).parts
    if not out.strip() or path.is_absolute() or (parts and parts[0] == ".."):
        raise spec.error("run.out", out, allowed, f"To write elsewhere, {command_line}")
    # The text stays inside; where it leads is what counts: a folder on the way may be a link.
    here = Path.cwd().resolve()
    try:
        leads = (here / path).resolve()
    except (OSError, RuntimeError) as err:  # a loop of links
        raise spec.error("run.out", out, allowed, f"It cannot be resolved: {err}.") from None
    if not leads.is_relative_to(here):
        raise spec.error(
            "run.out", out, allowed,
            f"{out!r} leads to {str(leads)!r} through a symbolic link. To write there, "
            f"{command_line}",
        )  # fmt: skip


def override_run(spec: Spec, **options: Any) -> Spec:
    """Return ``spec`` with run options replaced by those that are not None.

    Examples
    --------
    >>> spec = parse_spec('[data]\\nsource = "sklearn:iris"\\n[estimator]\\nclass = "x.Y"\\n'
    ...                   '[run]\\nseed = 3\\nbackend = "local"\\n')
    >>> run = override_run(spec, seed=None, backend="serial").run
    >>> run.backend, run.seed
    ('serial', 3)
    """
    given = {k: v for k, v in options.items() if v is not None}
    return replace(spec, run=replace(spec.run, **given))


def override_table(
    spec: Spec, name: str, values: Mapping[str, Any], *, replace_all: bool = False
) -> Spec:
    """Return ``spec`` with keys of table ``name`` set from ``values`` (None values dropped).

    ``replace_all`` drops the spec's own table first (an empty result removes it).

    Examples
    --------
    >>> spec = parse_spec('[data]\\nsource = "sklearn:iris"\\n[estimator]\\nclass = "x.Y"\\n')
    >>> override_table(spec, "cluster", {"kind": "slurm", "jobs": None}).table("cluster")
    {'kind': 'slurm'}
    """
    tables = dict(spec.tables)
    merged = {} if replace_all else dict(spec.table(name))
    merged.update({k: v for k, v in values.items() if v is not None})
    if merged:
        tables[name] = merged
    else:
        tables.pop(name, None)
    return replace(spec, tables=tables)
