"""The report of a run directory: report.md, results.json, plots and, if asked, cv_results.csv.

The Markdown text itself is rendered by :func:`render_report`.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np

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
from parcv.store.sqlite import collector_paused

__all__ = [
    "RunInfo",
    "cv_results_csv",
    "num",
    "rebuild_report",
    "render_report",
    "render_summary",
    "search_of",
    "small",
    "summary_json",
    "write_outputs",
    "write_private",
]

logger = logging.getLogger(__name__)

Result = CVResult | SearchResult | NestedResult


def write_private(path: Path, content: str | bytes) -> Path:
    """Write a file readable and writable by the user only (mode 0600)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(data)
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
    data = jsonable(_summary(result.to_dict()))
    entries = (f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in data.items())
    return "{\n" + ",\n".join(entries) + "\n}\n"


def cv_results_csv(result: Result) -> str:
    """``cv_results_`` of the all-data search (fold scores for a CV result) as CSV."""
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
    writer = csv.writer(out, lineterminator="\n")
    names = list(table)
    writer.writerow(names)
    writer.writerows(zip(*(_column(table[n]) for n in names), strict=True))
    return out.getvalue()


def _plots(run_dir: Path, result: Result, info: RunInfo) -> tuple[list[str], str]:
    if not info.plots:
        return [], ""
    from parcv.report.plots import render_plots

    images = render_plots(result, param=info.param, metric=info.metric)
    for name, png in images.items():
        write_private(run_dir / name, png)
    return list(images), ""


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
    files = [write_private(out / "results.json", summary_json(result))]
    if shown.cv_results:
        files.append(write_private(out / "cv_results.csv", cv_results_csv(result)))
    files.append(write_private(out / "run.json", json.dumps(info.to_dict(), indent=2) + "\n"))
    plots, note = _plots(out, result, shown)
    files += [out / p for p in plots]
    markdown = render_report(result, shown, plots, note)
    page = render_html(markdown, out, headline(result))
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
    """
    from parcv.api import load

    out = Path(run_dir)
    store = out / "store.sqlite"
    if not store.is_file():
        raise FileNotFoundError(
            f"no parcv store at {str(store)!r}; pass the run directory "
            "that `parcv run --out DIR` wrote."
        )
    meta = out / "run.json"
    info = (
        RunInfo.from_dict(json.loads(meta.read_text(encoding="utf-8")))
        if meta.is_file()
        else RunInfo(out.resolve().name)
    )
    with collector_paused():
        result = load(store)
        return result, info, write_outputs(out, result, info, cv_results=cv_results)
