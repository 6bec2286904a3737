"""The report of a run directory: report.md, results.json, plots and, if asked, cv_results.csv.

The Markdown text itself is rendered by :func:`render_report`. ``parcv report DIR``
rebuilds them from a store (:func:`rebuild_report`); :func:`write_report` writes them
from Python, of a result object or of a store.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from parcv.errors import UnsafePathError
from parcv.report.html import render_html
from parcv.report.text import (
    RunInfo,
    headline,
    num,
    render_report,
    render_summary,
    search_of,
    small,
)
from parcv.results.export import jsonable
from parcv.results.objects import CVResult, NestedResult, SearchResult
from parcv.store.readers import collector_paused

__all__ = [
    "RESUME_COMMAND",
    "RUN_FILES",
    "RunInfo",
    "check_run_files",
    "cv_results_csv",
    "neutralise",
    "num",
    "rebuild_report",
    "render_report",
    "render_summary",
    "search_of",
    "small",
    "summary_json",
    "write_outputs",
    "write_private",
    "write_report",
]

logger = logging.getLogger(__name__)

Result = CVResult | SearchResult | NestedResult
# The store of a run directory, as `parcv run` writes it and `parcv report DIR` reads it.
STORE = "store.sqlite"


# The command that resumes a run, kept in its directory for the report of an unfinished run.
RESUME_COMMAND = "resume-command.txt"
# Every file parcv writes in a run directory, the PNG plots aside (every *.png there).
RUN_FILES = (
    *(f"{STORE}{suffix}" for suffix in ("", "-wal", "-shm", "-journal", ".lock", ".lock.json")),
    f"{STORE}.models",
    "spec.toml",
    "run.json",
    "results.json",
    "cv_results.csv",
    "report.html",
    "report.md",
    RESUME_COMMAND,
)


def _leaves(folder: Path, name: str) -> str | None:
    """Where the link ``folder/name`` leads when that is outside ``folder`` (None: not a link
    there, or one that stays inside)."""
    path = folder / name
    if not path.is_symlink():
        return None
    try:
        target = path.resolve()
    except (OSError, RuntimeError):  # a loop of links leads nowhere parcv may write
        return os.readlink(path)
    return None if target.is_relative_to(folder.resolve()) else str(target)


def _refuse_link(folder: Path, name: str, target: str) -> UnsafePathError:
    return UnsafePathError(
        f"{name} in the run directory {str(folder)!r} is a symbolic link to {target!r}, outside "
        "that directory; parcv writes the files of a run directory only inside it, never "
        f"through a link. Remove the link ({str(folder / name)!r}), or pass another run "
        "directory."
    )


def check_run_files(run_dir: str | Path) -> None:
    """Refuse a run directory where a file parcv writes is a link that leads out of it.

    Called before a run computes or a report is rebuilt, so that nothing is
    done that could not be written; :func:`write_private` checks each file
    again as it writes it.

    Raises
    ------
    UnsafePathError
        Naming the link, where it leads and what to do.
    """
    folder = Path(run_dir)
    if not folder.is_dir():
        return
    for name in (*RUN_FILES, *sorted(p.name for p in folder.glob("*.png"))):
        target = _leaves(folder, name)
        if target is not None:
            raise _refuse_link(folder, name, target)


def write_private(path: Path, content: str | bytes | Iterable[str]) -> Path:
    """Write a file readable and writable by the user only (mode 0600), never through a link.

    The content goes into a new file beside ``path`` (created 0600 by
    :func:`tempfile.mkstemp`), renamed over ``path`` with :func:`os.replace`:
    what was at ``path`` (a link included) is replaced, never opened, and its
    target is neither written nor chmod-ed. A link at ``path`` that leads out
    of its folder is refused: it was put there by someone, and replacing it
    silently would hide that. ``content`` may be an iterable of texts, written
    one after the other, so that a large file is never held whole in memory.

    Raises
    ------
    UnsafePathError
        ``path`` is a symbolic link that leads out of its folder.
    """
    folder, name = path.parent, path.name
    target = _leaves(folder, name)
    if target is not None:
        raise _refuse_link(folder, name, target)
    parts = [content] if isinstance(content, (str, bytes)) else content
    fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            for part in parts:
                fh.write(part.encode("utf-8") if isinstance(part, str) else part)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def _cell(value: Any) -> str:
    if value is np.ma.masked or value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(
            {k: _cell(v) if not isinstance(v, (int, float)) else v for k, v in value.items()},
            sort_keys=True,
        )
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value.item() if isinstance(value, np.generic) else value)


# A spreadsheet reads a cell that begins with one of these as a formula (OWASP, "CSV
# Injection"); a number written so (-0.5, +1e3, -inf) is a number and stays as it is.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)", re.I)


def neutralise(cell: str) -> str:
    """A CSV cell that no spreadsheet runs as a formula: one that would be gets a ``'`` first.

    As OWASP's CSV injection guidance advises, a cell that begins with ``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return, and is not a number, is prefixed with a
    single quote; every other cell, numbers included, is kept as it is.

    Examples
    --------
    >>> [neutralise(c) for c in ["=1+2", "@SUM(A1)", "-A1", "-0.5", "+1e3", "alpha"]]
    ["'=1+2", "'@SUM(A1)", "'-A1", '-0.5', '+1e3', 'alpha']
    """
    if cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def _column(values: Any) -> list[str]:
    """The cells of one column; a numeric array is converted in one call, not per cell."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "fiub":
        mask = np.ma.getmaskarray(values).tolist()
        text = repr if values.dtype.kind == "f" else str
        cells = np.ma.getdata(values).tolist()
        return ["" if m else text(v) for v, m in zip(cells, mask, strict=True)]
    return [_cell(v) for v in values]


# Per-candidate tables that repeat the store's rows: results.json leaves them out (a
# 100,001-unit run's cv_results_ took 5.5 MB and a second to write); the store has them.
_PER_CANDIDATE = ("cv_results", "inner_cv_results")


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    """``to_dict()`` without the per-candidate tables, also in a nested result's ``final``."""
    kept = {k: v for k, v in data.items() if k not in _PER_CANDIDATE}
    if isinstance(kept.get("final"), dict):
        kept["final"] = _summary(kept["final"])
    return kept


def summary_json(result: Result) -> str:
    """The text of results.json: the result's summary, one line per entry.

    ``cv_results_`` (and a nested result's inner ones) are left out: they are
    the store's rows, ``parcv.load(store).cv_results_``, and cv_results.csv
    when asked. Each entry is written compactly, by the json module's C
    encoder: with thousands of candidates an indented file took longer to
    write than the rest of the report.
    """
    return "".join(_summary_json_parts(result))


def _summary_json_parts(result: Result) -> Iterator[str]:
    """The text of :func:`summary_json` in pieces: each entry's, a table's column at a time.

    Written to results.json as they come, the pieces of a run with 220,000 candidates are
    never one 66 MB text, held with its list of entries and then its bytes.
    """
    # One entry made JSON-ready at a time: the summaries of 220,000 candidates as dicts took
    # 80 MB, held until the whole file was written.
    data = _summary(result.to_dict())
    yield "{\n"
    before = "  "
    for key, value in data.items():
        yield f"{before}{json.dumps(str(key))}: "
        yield from _json_parts(value, depth=2)
        before = ",\n  "
    yield "\n}\n"


def _json_parts(value: Any, *, depth: int) -> Iterator[str]:
    """``json.dumps(jsonable(value))`` in pieces: a dict's entries apart, ``depth`` levels down.

    The same text as one call gives (its separators ``", "`` and ``": "``), so
    results.json is byte for byte what it was.
    """
    if not depth or type(value) is not dict:
        yield json.dumps(jsonable(value))
        return
    before = "{"
    for key, item in value.items():
        yield f"{before}{json.dumps(str(key))}: "
        yield from _json_parts(item, depth=depth - 1)
        before = ", "
    yield "}" if value else "{}"


def cv_results_csv(result: Result) -> str:
    """``cv_results_`` of the all-data search (fold scores for a CV result) as CSV.

    Cells a spreadsheet would run as formulas are neutralised (:func:`neutralise`).
    """
    search = search_of(result)
    table: dict[str, Any]
    if search is not None:
        table = search.cv_results_
    elif isinstance(result, NestedResult):
        table = {"outer": [], **{k: [] for k in result.inner_cv_results[0]}}
        for o, inner in enumerate(result.inner_cv_results):
            for c in range(len(inner["params"])):
                table["outer"].append(o)
                for k, v in inner.items():
                    table[k].append(v[c])
    else:
        scores = cast(CVResult, result).scores
        table = {"fold": list(range(len(next(iter(scores.values()))))), **scores}
    out = io.StringIO()
    # The csv module's own dialect (RFC 4180: rows end in CRLF) quotes a cell that holds a
    # carriage return; with "\n" rows one would end its row where it stands.
    writer = csv.writer(out)
    names = list(table)
    writer.writerow([neutralise(n) for n in names])
    columns = ([neutralise(c) for c in _column(table[n])] for n in names)
    writer.writerows(zip(*columns, strict=True))
    return out.getvalue()


def _plots(run_dir: Path, result: Result, info: RunInfo) -> dict[str, bytes]:
    """Draw and write the plots; report.html embeds these bytes, never a file it reads."""
    if not info.plots:
        return {}
    from parcv.report.plots import render_plots

    images = render_plots(result, param=info.param, metric=info.metric)
    for name, png in images.items():
        write_private(run_dir / name, png)
    return images


def write_outputs(
    run_dir: str | Path, result: Result, info: RunInfo, *, cv_results: bool | None = None
) -> list[Path]:
    """Write results.json, run.json, the plots, report.html, report.md and maybe cv_results.csv.

    Every file gets mode 0600. ``cv_results.csv`` (one row per candidate) is
    written when ``cv_results`` is true, or when it is None and the run asked
    for it (``[report] cv_results = true``): the store holds the same rows,
    ``parcv.load(store).cv_results_``.

    Returns
    -------
    list of Path
        The files written, report.md last.
    """
    out = Path(run_dir)
    shown = info if cv_results is None else replace(info, cv_results=cv_results)
    files = [write_private(out / "results.json", _summary_json_parts(result))]
    if shown.cv_results:
        files.append(write_private(out / "cv_results.csv", cv_results_csv(result)))
    files.append(write_private(out / "run.json", json.dumps(info.to_dict(), indent=2) + "\n"))
    images = _plots(out, result, shown)
    files += [out / p for p in images]
    markdown = render_report(result, shown, list(images), stored=(out / STORE).is_file())
    page = render_html(markdown, images, headline(result))
    files.append(write_private(out / "report.html", page))
    files.append(write_private(out / "report.md", markdown))
    return files


def rebuild_report(
    run_dir: str | Path, *, cv_results: bool | None = None
) -> tuple[Result, RunInfo, list[Path]]:
    """Rebuild every report file of a run directory from its store, without any fit.

    ``cv_results`` (None: as the run asked) says whether to write cv_results.csv.

    Raises
    ------
    FileNotFoundError
        When the directory holds no ``store.sqlite``.
    UnsafePathError
        A file it would write there is a symbolic link that leads out of it.
    """
    from parcv.api import load

    out = Path(run_dir)
    store = out / STORE
    if not store.is_file():
        raise FileNotFoundError(
            f"no parcv store at {str(store)!r}; pass the run directory "
            "that `parcv run --out DIR` wrote, or the folder of a script's "
            "store='DIR/store.sqlite'."
        )
    check_run_files(out)
    info = _stored_info(out)
    with collector_paused():
        result = load(store)
        return result, info, write_outputs(out, result, info, cv_results=cv_results)


def _stored_info(run_dir: Path) -> RunInfo:
    """What a run directory's run.json says of its run; without one, its folder's name."""
    meta = run_dir / "run.json"
    if meta.is_file():
        return RunInfo.from_dict(json.loads(meta.read_text(encoding="utf-8")))
    return RunInfo(run_dir.resolve().name)


def write_report(
    result: Result | str | os.PathLike[str],
    directory: str | os.PathLike[str],
    *,
    title: str | None = None,
    param: str | None = None,
    metric: str | None = None,
    cv_results: bool | None = None,
) -> list[Path]:
    """Write the report and plots of a result, or of a stored run, into a folder.

    The files are those of ``parcv run`` and ``parcv report DIR``, drawn by the same
    code: ``report.md``, ``report.html`` (one self-contained page, the plots
    embedded), the PNG plots that apply to the result, ``results.json`` and
    ``run.json`` (and ``cv_results.csv`` when asked), each readable by you only.
    No fit runs.

    Parameters
    ----------
    result : CVResult, SearchResult, NestedResult, str or path-like
        What :func:`parcv.cross_validate`, :func:`parcv.search`,
        :func:`parcv.nested_cv` or :func:`parcv.load` returned (halving, Hyperband
        and sampler searches included); or a store a script wrote
        (``store="run.sqlite"``), read with :func:`parcv.load`; or a run directory of
        ``parcv run``, whose ``run.json`` then describes the run.
    directory : str or path-like
        Where to write; created if missing. Files of an earlier report there are
        replaced.
    title : str, default=None
        The report's title. By default what the ``run.json`` of the run directory
        given (or of ``directory``) says, else ``directory``'s name; the rest of that
        ``run.json`` (the run's mode, data, times, versions) is kept too.
    param : str, default=None
        The hyperparameter on the x axis of the validation curve (as ``[report]
        param`` of a spec); by default the numeric one with most values.
    metric : str, default=None
        The metric the plots show; by default the refit metric.
    cv_results : bool, default=None
        Also write ``cv_results.csv`` (one row per candidate). None: as a run
        directory's run asked, else not.

    Returns
    -------
    list of Path
        The files written, ``report.md`` last.

    Raises
    ------
    TypeError
        ``result`` is neither a result of parcv nor a path.
    FileNotFoundError
        No store at the path given.
    UnfinishedRunError
        The store holds a run that has not finished: finish it with ``resume=True``,
        or read what it has with ``parcv.load(store, partial=True)``.
    UnsafePathError
        A file it would write in ``directory`` (``report.html``, ``results.json``, ...)
        is a symbolic link that leads out of it: nothing is written.

    See Also
    --------
    parcv.report.ValidationCurveDisplay : One plot, drawn into a matplotlib Axes of
        your own (and the other displays of :mod:`parcv.report`).

    Notes
    -----
    ``parcv report DIR`` reads a store a script wrote too, when it is ``DIR/store.sqlite``:
    ``parcv.search(..., store="runs/ridge/store.sqlite")``, then ``parcv report runs/ridge``
    writes what ``write_report("runs/ridge", "runs/ridge")`` writes.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, y, cv=3, backend="serial")
    >>> with tempfile.TemporaryDirectory() as out:
    ...     files = parcv.write_report(r, out, title="ridge")
    ...     sorted(f.name for f in files)
    ['paired_differences.png', 'report.html', 'report.md', 'results.json', 'run.json', \
'validation_curve.png']
    """
    out = Path(directory)
    check_run_files(out)
    loaded, info = _report_source(result, out)
    info = replace(
        info,
        title=info.title if title is None else title,
        param=info.param if param is None else param,
        metric=info.metric if metric is None else metric,
    )
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    with collector_paused():
        return write_outputs(out, loaded, info, cv_results=cv_results)


def _report_source(result: Any, out: Path) -> tuple[Result, RunInfo]:
    """The result to report and what the report says of its run, from a result or a store."""
    if isinstance(result, (CVResult, SearchResult, NestedResult)):
        return result, _stored_info(out)
    if not isinstance(result, (str, os.PathLike)):
        raise TypeError(
            "result must be what parcv.cross_validate, search, nested_cv or load returned "
            f"(a CVResult, SearchResult or NestedResult), or the path of a store; got "
            f"{type(result).__name__!r}. Pass e.g. write_report(parcv.load('run.sqlite'), DIR)."
        )
    from parcv.api import load

    source = Path(result)
    store = source / STORE if source.is_dir() else source
    if not store.is_file():
        where = f"no {STORE} in the folder {str(source)!r}" if source.is_dir() else (
            f"no file at {str(source)!r}")  # fmt: skip
        raise FileNotFoundError(
            f"result: {where}. Pass the store= path the run was given, or the run "
            "directory of `parcv run`."
        )
    info = _stored_info(source if source.is_dir() else out)
    with collector_paused():
        loaded = load(store)
    if not isinstance(loaded, (CVResult, SearchResult, NestedResult)):
        raise TypeError(
            f"the store {str(store)!r} holds a {type(loaded).__name__}, which has no report; "
            "write_report takes the store of cross_validate, search or nested_cv."
        )
    return loaded, info
