"""Plots of a result: the report's PNGs, and the Display objects they are drawn by.

Each plot a person may want in a notebook is a scikit-learn style display
(``ValidationCurveDisplay.from_result(result, ax=ax)``, ``.plot(ax=None)``,
``figure_`` and ``ax_``); the report's figure of it is that display drawn on a
pyplot-free ``Figure`` of the report's size, so both draw the same.

Validation curve (train and test score vs a hyperparameter), per-fold
paired differences of the best and the runner-up, selection
frequency over outer folds, outer-fold scores, the outer refits' pooled
confusion matrix or residuals (with stored predictions), a search's
learning curves and bias-variance trade-off, and its iteration paths.
"""

from __future__ import annotations

import io
import math
import numbers
import re
import textwrap
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter

from parcv.plan.space import format_params
from parcv.report.text import num
from parcv.results.compare import candidate_scores
from parcv.results.halving import HalvingResult, HyperbandResult
from parcv.results.labels import readable_labels
from parcv.results.objects import CVResult, NestedResult, SearchResult
from parcv.results.predictions import predicts_labels
from parcv.results.trials import complete_trial_rows
from parcv.strategies.pareto import ParetoFront, nondominated, outer_objectives, pareto_front
from parcv.strategies.sampler import check_optuna_space, import_optuna, rebuild_study

__all__ = [
    "DISPLAYS",
    "FoldScoresDisplay",
    "HalvingRungsDisplay",
    "PairedDifferencesDisplay",
    "ParamImportanceDisplay",
    "ParetoFrontDisplay",
    "SamplerTrialsDisplay",
    "SelectionFrequencyDisplay",
    "ValidationCurveDisplay",
    "bias_variance_tradeoff",
    "figures",
    "halving_rungs",
    "intermediate_values",
    "iteration_paths",
    "learning_curves",
    "render_plots",
    "validation_curve",
    "paired_differences",
    "selection_frequency",
    "fold_scores",
    "outer_predictions",
    "param_importances",
    "sampler_trials",
]

Result = CVResult | SearchResult | NestedResult


def _shown(metric: str) -> str:
    """The axis label of a metric: its name and sign as scikit-learn scores it, as in the report.

    ``neg_*`` scores stay negated (the report's tables, ``results.json`` and
    ``cv_results_`` show them so): the label says which way is better.
    """
    if metric.startswith("neg_"):
        return f"{metric} (negated error: higher is better)"
    return f"{metric} (higher is better)"


def _short(label: str, width: int = 38) -> str:
    """Drop pipeline step prefixes and estimator arguments (model families); cut the rest.

    Its floats are left as they are: it shortens readable labels
    (:func:`~parcv.results.labels.readable_labels`), whose digits tell candidates apart.
    """
    label = re.sub(r"\b\w+__", "", label)
    label = re.sub(r"\b\w+='?(\w+)\([^()]*\)'?", r"\1", label)
    return label if len(label) <= width else label[: width - 1] + "…"


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")  # nothing clipped
    return buffer.getvalue()


def _is_number(value: Any) -> bool:
    if type(value) in _NUMBERS:  # asked once per candidate: the ABC's check is the slow way
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# Real numbers that are not bools, by exact type.
_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})


def _curve_param(params: list[dict[str, Any]], param: str | None) -> str | None:
    """``param`` if some candidate has a number for it, else the numeric one with most values."""
    if param is not None:
        return param if any(_is_number(p.get(param)) for p in params) else None
    counts = {}
    for name in sorted({n for p in params for n in p}):
        values = {p[name] for p in params if _is_number(p.get(name))}
        if len(values) > 1:
            counts[name] = len(values)
    return max(counts, key=lambda n: counts[n]) if counts else None


def _others(params: dict[str, Any], name: str) -> str:
    """The exact label of a candidate's parameters other than ``name`` (its slice; "": none)."""
    others = {k: v for k, v in params.items() if k != name}
    return format_params(others) if others else ""


def _slice_names(
    params: list[dict[str, Any]], name: str, groups: dict[str, list[int]]
) -> dict[str, str]:
    """Each slice's text in a legend or title: its readable label, shortened ("": none)."""
    slices = {key: {k: v for k, v in params[rows[0]].items() if k != name}
              for key, rows in groups.items() if key}  # fmt: skip
    names = readable_labels(slices.values())
    return {key: _short(names[key], 60) if key else "" for key in groups}


def _is_level(value: Any) -> bool:
    """A value of the x parameter that is no number but a setting of it (None, "sqrt", True).

    ``max_depth=None`` is often the best depth; such values are drawn right of the axis's
    numbers, each at its own tick, rather than left out of the curve.
    """
    return value is None or isinstance(value, (str, bool))


def _curve_groups(
    params: list[dict[str, Any]], param: str, rows: list[int]
) -> dict[str, list[int]]:
    """Candidates of ``rows`` with a numeric ``param`` (or a level such as None), one group
    per value of the others: numbers in order, then the levels."""
    groups: dict[str, list[int]] = {}
    for c in rows:
        value = params[c].get(param, _MISSING)
        if _is_number(value) or (value is not _MISSING and _is_level(value)):
            groups.setdefault(_others(params[c], param), []).append(c)
    return {k: sorted(v, key=lambda c: _x_order(params[c][param])) for k, v in groups.items()}


def _x_order(value: Any) -> tuple[bool, float, str]:
    """Numbers in order, then the levels (None, strings) by their text."""
    return (not _is_number(value), float(value) if _is_number(value) else 0.0, repr(value))


_MISSING = object()


def _level_positions(values: list[Any], log: bool) -> dict[str, float]:
    """Where each level (None, a string) of the x parameter is drawn: right of the numbers,
    one step apart, a step being the numbers' mean spacing (a factor on a log axis)."""
    numbers_ = np.unique([float(v) for v in values if _is_number(v)])
    levels = sorted({repr(v) for v in values if not _is_number(v)})
    if not levels:
        return {}
    if numbers_.size == 0:
        return {text: float(i) for i, text in enumerate(levels)}
    last = float(numbers_[-1])
    if log:
        step = (numbers_[-1] / numbers_[0]) ** (1 / max(numbers_.size - 1, 1))
        return {text: last * float(step) ** (i + 1) for i, text in enumerate(levels)}
    step = float(np.mean(np.diff(numbers_))) if numbers_.size > 1 else 1.0
    return {text: last + step * (i + 1) for i, text in enumerate(levels)}


def _mean_se(search: SearchResult, key: str, rows: list[int]) -> tuple[Any, Any]:
    """Mean and standard error over folds (``std / sqrt(k - 1)``) of some candidates."""
    mean = np.asarray(search.cv_results_[f"mean_{key}"], dtype=float)[rows]
    std = np.asarray(search.cv_results_[f"std_{key}"], dtype=float)[rows]
    return mean, std / np.sqrt(max(search.n_splits_ - 1, 1))


def _mean_se_line(
    ax: Any,
    x: Any,
    mean_se: tuple[Any, Any],
    color: str,
    *,
    text: str,
    scattered: bool,
    train: bool = False,
) -> None:
    """Draw means with ± se: error bars, or past :data:`DENSE_POINTS` a line in a band.

    Thousands of error bars take seconds to draw and read as a smear; a band
    (or, for scattered points, the points alone) shows the same.
    """
    mean, se = mean_se
    marker, size, width = ("s", 3, 1.0) if train else ("o", 4, 1.5)
    if len(x) <= DENSE_POINTS:
        fmt = marker if scattered else marker + ("--" if train else "-")
        ax.errorbar(x, mean, yerr=se, fmt=fmt, color=color, capsize=3, markersize=size,
                    linewidth=width, label=text)  # fmt: skip
        return
    if scattered:
        ax.plot(x, mean, ".", color=color, markersize=2, label=f"{text} (± se not drawn)")
        return
    ax.plot(x, mean, "--" if train else "-", color=color, linewidth=width, label=f"{text}, ± se")
    ax.fill_between(x, mean - se, mean + se, color=color, alpha=0.25, linewidth=0)


def _log_axis(ax: Any, x: Any) -> None:
    """A log axis for values spread geometrically over two decades or more (a logspace grid).

    An evenly spaced grid (``n_neighbors`` 1, 5, ..., 29) stays linear, even
    when it spans a decade: the axis is log only if every value is positive,
    the largest is at least :data:`LOG_SPAN` times the smallest, and the
    distinct values are spaced more evenly on a log scale than on a linear
    one. A log axis is labelled at the values (no minor labels).
    """
    values = np.unique(np.asarray(x, dtype=float))
    if not _geometric(values):
        return
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    # Label the values themselves when they are few and spread out (a log grid).
    if len(values) <= 10 and np.all(values[1:] / values[:-1] >= 1.5):
        ax.set_xticks(values, [f"{v:g}" for v in values])


# A log x axis needs the values to span at least this factor (two decades).
LOG_SPAN = 100.0


def _geometric(values: Any) -> bool:
    """Whether sorted distinct values are positive, span :data:`LOG_SPAN`, and are log-spaced."""
    if len(values) < 2 or values[0] <= 0 or values[-1] / values[0] < LOG_SPAN:
        return False

    def unevenness(v: Any) -> float:  # coefficient of variation of the gaps
        gaps = np.diff(v)
        return float(np.std(gaps) / np.mean(gaps))

    return unevenness(np.log(values)) <= unevenness(values)


# Slices drawn as lines at most; beyond, only the selected candidate's slice is drawn.
MAX_LINES = 8
# Past this many candidates on one line, their ± se is a band rather than error bars.
DENSE_POINTS = 200
# Panels of a validation curve at most (one per x parameter: model families).
MAX_PANELS = 4
# Font sizes, in points, of every plot: legends and annotations, titles.
TEXT_SIZE = 9
TITLE_SIZE = 10
# The x axis of a plot by fold: numbered as the report's tables and cv_results_ (split0_).
FOLDS = "fold (numbered from 0)"


def _legend(ax: Any, **kwargs: Any) -> None:
    """The legend of every plot, in one readable size."""
    ax.legend(fontsize=TEXT_SIZE, **kwargs)


def _panels(search: SearchResult, param: str | None) -> list[tuple[str, list[int]]]:
    """The x parameter of each panel and its candidates: one panel per family's parameter.

    Candidates with the same parameter names (a model family, or several
    families sharing a parameter such as ``C``) are plotted against their
    numeric parameter with most values; families with different ones get a
    panel each, so the selected candidate is on the plot whatever its family.
    With ``param``, only the candidates that have it.
    """
    params = search.cv_results_["params"]
    if param is not None:
        name = _curve_param(params, param)
        return [] if name is None else [(name, list(range(len(params))))]
    families: dict[tuple[str, ...], list[int]] = {}
    for c, p in enumerate(params):
        families.setdefault(tuple(sorted(p)), []).append(c)
    panels: dict[str, list[int]] = {}
    for rows in families.values():
        name = _curve_param([params[c] for c in rows], None)
        if name is not None:
            panels.setdefault(name, []).extend(rows)
    if len(panels) > MAX_PANELS:  # the largest ones, and always the selected candidate's
        keep = sorted(panels, key=lambda n: -len(panels[n]))[:MAX_PANELS]
        mine = next((n for n in panels if search.best_index_ in panels[n]), None)
        if mine is not None and mine not in keep:
            keep[-1] = mine
        panels = {n: panels[n] for n in panels if n in keep}
    return [(n, sorted(rows)) for n, rows in panels.items()]


def _raced_out(search: SearchResult) -> set[int]:
    """Candidates a race dropped (their mean over all folds is undefined)."""
    dropped = search.cv_results_.get("race_eliminated_after")
    return set() if dropped is None else {int(c) for c in np.flatnonzero(np.asarray(dropped) >= 0)}


def _raced_note(search: SearchResult, rows: list[int]) -> str:
    """Which candidates of ``rows`` a race dropped, and after which fold (numbered from 0)."""
    if not rows:
        return ""
    after = np.asarray(search.cv_results_["race_eliminated_after"])[rows]
    folds = ", ".join(str(k) for k in sorted({int(k) for k in after}))
    what = "1 candidate" if len(rows) == 1 else f"{len(rows)} candidates"
    return (f"not drawn: {what} dropped by racing after fold{'s' if ',' in folds else ''} "
            f"{folds} (race.png)")  # fmt: skip


def validation_curve(
    search: SearchResult, *, param: str | None = None, metric: str | None = None
) -> Figure | None:
    """Plot validation (and train) score vs one hyperparameter, mean ± se over folds.

    With other parameters in the space (a 2-D grid, model families), each
    value of them is its own line, labelled in the legend (up to
    :data:`MAX_LINES`; beyond, only the selected candidate's slice is drawn
    and the title names it). Model families with different numeric
    parameters get a panel each (up to :data:`MAX_PANELS`), so the selected
    candidate, marked with a star, is on the plot. Candidates a race dropped
    are not drawn (their mean over all folds is undefined); the title says
    how many and after which fold.

    Parameters
    ----------
    search : SearchResult
        With ``return_train_score=True`` the training curve of every line is
        drawn too (dashed, in the line's colour).
    param : str, default=None
        Parameter on the x axis (one panel); by default the numeric one with
        most values in each family.
    metric : str, default=None
        Defaults to the refit metric.

    Returns
    -------
    Figure or None
        None when no numeric parameter takes two values.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> grid = {"alpha": [0.01, 0.1, 1.0, 10.0]}
    >>> r = parcv.search(Ridge(), grid, X, y, cv=3, backend="serial")
    >>> validation_curve(r).axes[0].get_xscale()
    'log'
    """
    display = ValidationCurveDisplay(search, param=param, metric=metric)
    return _report_figure(display) if display.panels else None


# One panel's lines (candidates by slice label), its title, whether points are scattered.
_CurveLines = tuple[dict[str, list[int]], str, bool]


def _curve_panels(search: SearchResult, param: str | None) -> list[tuple[str, _CurveLines]]:
    """The panels of a validation curve: each one's x parameter and lines (none: no curve)."""
    raced = _raced_out(search)
    panels = []
    for name, rows in _panels(search, param):
        drawn = _curve_lines(search, name, [c for c in rows if c not in raced])
        if drawn is not None:
            panels.append((name, drawn))
    return panels


def _draw_validation_curve(
    axes: list[Any], search: SearchResult, panels: list[tuple[str, _CurveLines]], metric: str
) -> None:
    """Draw :func:`validation_curve`'s panels on ``axes`` (one Axes per panel)."""
    suffix = metric if search.multimetric else "score"
    raced = _raced_out(search)
    fig = axes[0].figure
    shown = False
    for ax, (name, (groups, _, scattered)) in zip(axes, panels, strict=True):
        shown |= _draw_curves(ax, search, name, groups, suffix, scattered=scattered)
        ax.set_xlabel(name)
        ax.grid(alpha=0.3)
        if sum(len(rows) for rows in groups.values()) > DENSE_POINTS:
            # Beside: "best" tries its places against every point, 1 s of 2 at 220,000.
            _legend(ax, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        else:
            _legend(ax, loc="best")
    axes[0].set_ylabel(_shown(metric))
    over = (
        f"mean ± se over {search.n_splits_} folds"
        if search.n_splits_ > 1
        else "score on one validation split"
    )
    notes = [] if shown else [f"selected: {_short(search.readable_label(search.best_index_), 60)}"
                              " (not on this plot)"]  # fmt: skip
    notes += [_raced_note(search, sorted(raced))] if raced else []
    if len(panels) == 1:
        title = panels[0][1][1]
        axes[0].set_title("\n".join([f"{title}: {over}", *notes]), fontsize=TITLE_SIZE)
    else:
        head = f"Validation curves, one panel per parameter of the model families: {over}"
        fig.suptitle("\n".join([head, *notes]), fontsize=TITLE_SIZE)
        for ax, (_, (_, how, scattered)) in zip(axes, panels, strict=True):
            if scattered or "slice" in how:  # what a panel shows, when not all its lines
                ax.set_title(how, fontsize=TEXT_SIZE)


def _curve_lines(search: SearchResult, name: str, rows: list[int]) -> _CurveLines | None:
    """One panel's lines (candidates by slice label), its title, whether points are scattered."""
    params = search.cv_results_["params"]
    best = search.best_index_
    groups = _curve_groups(params, name, rows)
    chosen = _others(params[best], name) if any(best in g for g in groups.values()) else None
    scattered = all(len(v) == 1 for v in groups.values())
    if scattered:  # every other parameter varies too (random search): points, not lines
        rows = sorted(
            (c for v in groups.values() for c in v), key=lambda c: _x_order(params[c][name])
        )
        groups = {"": rows}
    sliced = len(groups) > MAX_LINES
    n_slices = len(groups)
    if sliced:
        key = chosen if chosen is not None else max(groups, key=lambda k: len(groups[k]))
        groups = {key: groups[key]}
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    if not groups:
        return None
    if scattered:
        title = "Validation scores (other parameters vary too)"
    elif sliced:
        key = next(iter(groups))
        what = f" at {_slice_names(params, name, groups)[key]}" if key else ""
        title = f"Validation curve{what} (one slice of {n_slices})"
    elif len(groups) > 1:
        title = "Validation curves, one line per value of the other parameters"
    else:
        title = "Validation curve"
    return groups, title, scattered


def _draw_curves(
    ax: Any, search: SearchResult, name: str, groups: dict[str, list[int]], suffix: str, *,
    scattered: bool,
) -> bool:  # fmt: skip
    """Draw one panel's lines (validation, and training when scored); True if the star is on it."""
    params = search.cv_results_["params"]
    best = search.best_index_
    train = f"mean_train_{suffix}" in search.cv_results_
    values = [params[c][name] for rows in groups.values() for c in rows]
    numbers_ = np.array([v for v in values if _is_number(v)], dtype=float)
    levels = _level_positions(values, log=_geometric(np.unique(numbers_)))

    def position(c: int) -> float:
        value = params[c][name]
        return float(value) if _is_number(value) else levels[repr(value)]

    shown = _slice_names(params, name, groups)
    for i, (key, rows) in enumerate(groups.items()):
        one = len(groups) == 1
        color = "tab:red" if one else f"C{i % 10}"
        text = f"validation: {shown[key]}" if key else "validation (CV test folds)"
        # The numbers are a line; a level (None) is a point of its own, in the line's colour.
        # One pass each: "c not in counted" took 2 s for 20,000 candidates (quadratic).
        numeric = [_is_number(params[c][name]) for c in rows]
        counted = [c for c, n in zip(rows, numeric, strict=True) if n]
        levels_ = [c for c, n in zip(rows, numeric, strict=True) if not n]
        for part, label in ((counted, text), (levels_, None)):
            if not part:
                continue
            x = np.array([position(c) for c in part])
            lone = label is None or scattered
            _mean_se_line(ax, x, _mean_se(search, f"test_{suffix}", part), color,
                          text=label or "_nolegend_", scattered=lone)  # fmt: skip
            if train:  # every line's training curve: dashed, in its colour (one legend entry)
                tlabel = (f"training folds{': ' + shown[key] if key else ''}" if one
                          else "training folds (dashed, in each line's colour)"
                          if i == len(groups) - 1
                          else "_nolegend_")  # fmt: skip
                _mean_se_line(ax, x, _mean_se(search, f"train_{suffix}", part),
                              "tab:blue" if one else color,
                              text=tlabel if label else "_nolegend_", scattered=lone,
                              train=True)  # fmt: skip
    _log_axis(ax, numbers_ if numbers_.size else np.zeros(1))
    if levels:
        _level_ticks(ax, numbers_, levels)
    if not any(best in rows for rows in groups.values()):
        return False
    score = float(search.cv_results_[f"mean_test_{suffix}"][best])
    mark = f"selected: {_short(search.readable_label(best), 50)}"
    ax.plot([position(best)], [score], "*", color="black", markersize=14,
            label=mark, zorder=5)  # fmt: skip
    return True


def _level_ticks(ax: Any, numbers_: Any, levels: dict[str, float]) -> None:
    """Ticks at the numbers (when few) or the axis's own, and one per level, named by it."""
    distinct = np.unique(numbers_)
    if 0 < distinct.size <= 10:
        ticks = [(float(v), f"{v:g}") for v in distinct]
    else:
        low, high = (float(distinct[0]), float(distinct[-1])) if distinct.size else (0.0, 0.0)
        ticks = [(float(t), f"{t:g}") for t in ax.get_xticks() if low <= t <= high]
    ticks += [(where, text) for text, where in levels.items()]
    ax.set_xticks([t for t, _ in ticks], [text for _, text in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    if distinct.size:  # the levels are no continuation of the numbers: a break between them
        first = min(levels.values())
        log = ax.get_xscale() == "log"
        middle = np.sqrt(distinct[-1] * first) if log else (distinct[-1] + first) / 2
        ax.axvline(float(middle), color="grey", linestyle=":", linewidth=1)


def paired_differences(search: SearchResult, *, metric: str | None = None) -> Figure | None:
    """Plot per-fold scores of the best and the runner-up, and their paired differences.

    Returns
    -------
    Figure or None
        None with fewer than two candidates or two folds.
    """
    display = PairedDifferencesDisplay(search, metric=metric)
    return _report_figure(display) if display.pair is not None else None


def _best_pair(scores: Any, rows: Any = None) -> tuple[int, int] | None:
    """The best candidate and the runner-up by mean fold score; None if there is no pair.

    ``scores`` is (candidates, folds); a candidate with a failed fold has a NaN mean (as
    in selection) and ranks last. ``rows``: the candidates compared, if not all (a pruned
    sampler's complete trials, as its comparisons read them).
    """
    if rows is not None:
        pair = _best_pair(scores[rows])
        return None if pair is None else (int(rows[pair[0]]), int(rows[pair[1]]))
    incomplete = np.isnan(scores).any(axis=1)  # failed folds, or folds a race did not run
    if (
        scores.shape[0] < 2
        or scores.shape[1] < 2
        or (incomplete.sum() > 1 and (~incomplete).sum() < 2)
    ):
        return None
    means = np.nan_to_num(np.mean(scores, axis=1), nan=-np.inf)
    best, runner = (int(c) for c in np.argsort(-means, kind="stable")[:2])
    return best, runner


def _draw_paired_differences(
    axes: list[Any], search: SearchResult, metric: str, scores: Any, pair: tuple[int, int]
) -> None:
    """Draw :func:`paired_differences` on ``axes``: the fold scores, then their differences."""
    best, runner = pair
    labels = [_short(search.readable_label(c)) for c in (best, runner)]
    label = _shown(metric)
    folds = np.arange(scores.shape[1])  # numbered from 0, as the tables and split0_ in cv_results_
    left, right = axes
    fig = left.figure
    for c, text, color in ((best, labels[0], "tab:red"), (runner, labels[1], "tab:blue")):
        left.plot(folds, scores[c], "o-", color=color, label=text)
    left.set(xlabel=FOLDS, ylabel=label, title="Score on each test fold")
    diff = scores[best] - scores[runner]
    right.bar(folds, diff, color=np.where(diff >= 0, "tab:green", "tab:gray"))
    right.axhline(0.0, color="black", linewidth=0.8)
    right.axhline(
        float(np.mean(diff)),
        color="tab:red",
        linestyle="--",
        label=f"mean difference {np.mean(diff):.3g}",
    )
    what = "best - runner-up"
    tied = bool(np.all(np.abs(diff) <= 1e-12 * max(1.0, float(np.nanmax(np.abs(scores))))))
    if tied:
        right.text(
            0.5,
            0.5,
            "tied: equal scores on every fold",
            transform=right.transAxes,
            ha="center",
            va="center",
            fontsize=11,
        )
    try:
        p = f"\ncorrected t-test p = {search.compare(best, runner, metric=metric).p_value:.3g}"
    except ValueError:  # e.g. identical scores on every fold
        p = ""
    right.set(
        xlabel="fold",
        ylabel=f"{what} (> 0: best is better)",
        title=f"Paired difference on each fold{p}",
    )
    for ax in (left, right):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.title.set_fontsize(TITLE_SIZE)
        ax.grid(alpha=0.3)
        _legend(ax)
    versus = "tied with" if tied else "vs"
    among = "" if complete_trial_rows(search) is None else " complete trial"
    fig.suptitle(f"Best vs runner-up{among} by mean {metric}: {labels[0]} {versus} {labels[1]}",
                 fontsize=TITLE_SIZE)  # fmt: skip


def race(search: SearchResult, *, metric: str | None = None) -> Figure:
    """Plot a race: each candidate's fold scores, and the fold after which it was dropped.

    Rows are candidates (survivors first, then by how long they lasted), columns
    the CV folds in the order they were scored; blank cells were never run.
    """
    results = search.cv_results_
    key = "score" if not search.multimetric else (metric or search.refit_metric)
    n_folds = search.n_splits_
    scores = np.array([results[f"split{k}_test_{key}"] for k in range(n_folds)]).T
    dropped = np.asarray(results["race_eliminated_after"])
    order = np.lexsort((-np.nan_to_num(results[f"mean_test_{key}"], nan=-np.inf),
                        -np.where(dropped < 0, n_folds, dropped)))  # fmt: skip
    labels = [_short(search.readable_label(c), 40) for c in order]
    fig = Figure(figsize=(8.0, max(2.6, 1.4 + 0.22 * len(order))), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(scores[order]), aspect="auto", cmap="viridis",
                      interpolation="nearest")  # fmt: skip
    fig.colorbar(image, ax=ax, label=f"test {key} (blank: not run)")
    for row, c in enumerate(order):
        if dropped[c] >= 0:
            ax.plot(dropped[c] + 0.5, row, marker="|", color="red", markersize=9, mew=2)
    ax.set_yticks(np.arange(len(order)), labels, fontsize=7 if len(order) > 20 else 9)
    ax.set_xticks(np.arange(n_folds), [str(k) for k in range(n_folds)])
    ax.set_xlabel(f"{FOLDS}, in the order scored (red bar: dropped after this fold)")
    n_dropped = int((dropped >= 0).sum())
    ax.set_title(f"Race: {n_dropped} of {len(order)} candidates dropped", fontsize=TITLE_SIZE)
    return fig


def iteration_paths(search: SearchResult, *, metric: str | None = None) -> Figure | None:
    """Plot each point's mean test score ± se over the iteration counts, early stops marked.

    One line per point of the space (the best :data:`MAX_LINES` by their best
    checkpoint, and always the selected one's); a path that stopped early ends
    at the checkpoint where it stopped, marked with a cross. The selected
    (point, count) is a star.
    """
    iterations = search.iterations
    if iterations is None or not search.paths:
        return None
    key = "score" if not search.multimetric else (metric or search.refit_metric)
    label = _shown(key)
    results = search.cv_results_
    means = np.asarray(results[f"mean_test_{key}"], dtype=float)
    stopped = np.asarray(results.get("path_stopped", np.zeros(len(means), dtype=bool)))
    best_of = [np.nanmax(means[list(p)]) if np.isfinite(means[list(p)]).any() else -np.inf
               for p in search.paths]  # fmt: skip
    chosen = next(j for j, p in enumerate(search.paths) if search.best_index_ in p)
    shown = sorted(range(len(search.paths)), key=lambda j: -best_of[j])[:MAX_LINES]
    if chosen not in shown:
        shown[-1] = chosen
    fig = Figure(figsize=(7.2, 4.2), layout="constrained")
    ax = fig.add_subplot()
    colors = [f"C{i % 10}" for i in range(len(shown))]
    x_all = np.asarray(iterations.checkpoints)
    params = [c.params for c in search.candidates]
    slices = {_others(params[search.paths[j][0]], iterations.param): [search.paths[j][0]]
              for j in shown}  # fmt: skip
    names = _slice_names(params, iterations.param, slices)
    for color, j in zip(colors, shown, strict=True):
        rows = [c for c in search.paths[j] if not stopped[c]]
        mean, se = _mean_se(search, f"test_{key}", rows)
        x = x_all[: len(rows)]
        others = names[_others(params[search.paths[j][0]], iterations.param)] or "(defaults)"
        _mean_se_line(ax, x, (mean, se), color, text=others, scattered=False)
        if len(rows) < len(x_all):
            ax.plot(x[-1], mean[-1], "x", color="black", markersize=9, mew=2)
    best = search.best_index_
    ax.plot(results["params"][best][iterations.param], means[best], "*", color="gold",
            markeredgecolor="black", markersize=16, label="selected", zorder=5)  # fmt: skip
    n_stopped = sum(bool(stopped[list(p)].any()) for p in search.paths)
    ax.set_xlabel(f"{iterations.param} (iterations; black cross: stopped early)")
    ax.set_ylabel(f"mean test {label}, ± se over folds")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    more = "" if len(shown) == len(search.paths) else f"; the best {len(shown)} drawn"
    ax.set_title(f"Iteration paths: {n_stopped} of {len(search.paths)} stopped early{more}",
                 fontsize=TITLE_SIZE)  # fmt: skip
    _legend(ax)
    return fig


def _rung_paths(search: HalvingResult, key: str) -> dict[str, list[tuple[int, float]]]:
    """Each candidate's (rung, mean test score) in every rung it reached, by candidate."""
    resource = search.resource
    paths: dict[str, list[tuple[int, float]]] = {}
    for k, rung in enumerate(search.rungs):
        means = np.asarray(rung.cv_results_[f"mean_test_{key}"], dtype=float)
        for params, mean in zip(rung.cv_results_["params"], means, strict=True):
            name = repr(sorted((n, v) for n, v in params.items() if n != resource))
            paths.setdefault(name, []).append((k, mean))
    return paths


def _rung_limits(searches: list[HalvingResult], key: str) -> tuple[float, float] | None:
    """The y limits of a halving plot: the scores of the candidates past the first rung.

    Those candidates' whole paths (their first rung too) set the range, padded by
    :data:`RUNG_PAD` of it, so that the later rungs are readable: the first rung's
    worst candidates, dropped at once, would stretch it many times (a score of
    -1.7 beside 0.99). A search of one rung sets it with all its scores. None:
    no finite score to scale to.
    """
    kept = [y for search in searches for points in _rung_paths(search, key).values()
            if len(points) > 1 or len(search.rungs) == 1 for _, y in points]  # fmt: skip
    values = np.asarray(kept, dtype=float)
    values = values[np.isfinite(values)]
    if not values.size:
        return None
    low, high = float(values.min()), float(values.max())
    pad = RUNG_PAD * (high - low) if high > low else RUNG_PAD * max(abs(high), 1.0)
    return low - pad, high + pad


# The y axis of a halving plot reaches this fraction of its scores' range beyond them.
RUNG_PAD = 0.05


def _rung_lines(
    ax: Any, search: HalvingResult, key: str, limits: tuple[float, float] | None
) -> tuple[int, int]:
    """One halving search on ``ax``: each candidate's mean score per rung it reached.

    A score outside ``limits`` is marked by a triangle at the axis's edge; returns
    how many are below it and above it.
    """
    resource = search.resource
    paths = _rung_paths(search, key)
    last = len(search.rungs) - 1
    best = search.rungs[-1].cv_results_["params"][search.rungs[-1].best_index_]
    winner = repr(sorted((n, v) for n, v in best.items() if n != resource))
    for points in paths.values():
        x, y = zip(*points, strict=True)
        reached = x[-1] == last
        style = dict(color="C0", alpha=0.9, linewidth=1.2) if reached else dict(
            color="grey", alpha=0.35, linewidth=0.8)  # fmt: skip
        ax.plot(x, y, "o-", markersize=3, **style)
    x, y = zip(*paths[winner], strict=True)
    ax.plot(x[-1], y[-1], "*", color="gold", markeredgecolor="black", markersize=15, zorder=5)
    ticks = [f"rung {k}\n{n} cand.\n{resource}={r}"
             for k, (n, r) in enumerate(zip(search.n_candidates_, search.n_resources_,
                                            strict=True))]  # fmt: skip
    ax.set_xticks(range(len(search.rungs)), ticks, fontsize=TEXT_SIZE)
    if limits is None:
        return 0, 0
    ax.set_ylim(*limits)
    outside = []
    for edge, marker, beyond in ((limits[0], "v", np.less), (limits[1], "^", np.greater)):
        points = [(k, y) for path in paths.values() for k, y in path if beyond(y, edge)]
        if points:
            ax.plot([k for k, _ in points], [edge] * len(points), marker, color="grey",
                    markersize=6, alpha=0.7, clip_on=False, zorder=4)  # fmt: skip
        outside.append(len(points))
    return outside[0], outside[1]


def halving_rungs(result: HalvingResult | HyperbandResult, *, metric: str | None = None) -> Figure:
    """Plot a halving search: each candidate's mean test score in every rung it reached.

    Grey: dropped at a rung; blue: reached the last rung; the star is the
    winner. A Hyperband search has one panel per bracket (the best one's
    winner is the search's).
    """
    return _report_figure(HalvingRungsDisplay(result, metric=metric))


def _brackets(result: HalvingResult | HyperbandResult) -> list[HalvingResult]:
    """The halving searches of a result: Hyperband's brackets, or the one search."""
    return list(result.brackets) if isinstance(result, HyperbandResult) else [result]


def _draw_halving_rungs(
    axes: list[Any], result: HalvingResult | HyperbandResult, metric: str | None
) -> None:
    """Draw :func:`halving_rungs` on ``axes``, one per bracket."""
    key = "score" if not result.multimetric else (metric or result.refit_metric)
    label = _shown(key)
    searches = _brackets(result)
    fig = axes[0].figure
    limits = _rung_limits(searches, key)
    below = above = 0
    for j, (ax, search) in enumerate(zip(axes, searches, strict=True)):
        under, over = _rung_lines(ax, search, key, limits)
        below, above = below + under, above + over
        if isinstance(result, HyperbandResult):
            best = " (best)" if j == result.best_bracket_ else ""
            ax.set_title(f"bracket {j}{best}", fontsize=TEXT_SIZE)
    axes[0].set_ylabel(f"mean test {label}")
    if isinstance(result, HyperbandResult):
        title = (f"Hyperband: {len(searches)} brackets of successive halving (grey: dropped; "
                 "star: a bracket's winner; the best bracket's is selected)")  # fmt: skip
    else:
        counts = " → ".join(str(n) for n in result.n_candidates_)
        title = f"Successive halving: candidates per rung {counts} (grey: dropped; star: selected)"
    off = [f"{n} below the axis" for n in [below] if n] + [f"{n} above it" for n in [above] if n]
    if off:
        title += (f"\n{' and '.join(off)} (first-rung scores, each a triangle at the edge); "
                  "it spans the candidates past the first rung")  # fmt: skip
    fig.suptitle(title, fontsize=TITLE_SIZE)


def selection_frequency(result: NestedResult) -> Figure:
    """Plot how many outer folds selected each candidate."""
    return _report_figure(SelectionFrequencyDisplay(result))


def _draw_selection_frequency(ax: Any, result: NestedResult) -> None:
    """Draw :func:`selection_frequency` on ``ax``."""
    rows = result.stability
    n = len(result.chosen)
    y = np.arange(len(rows))
    ax.barh(y, [r.count for r in rows], color="tab:blue")
    ax.set_yticks(y, [_short(result.readable_labels[r.label]) for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, n)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"outer folds that selected it (of {n})")
    ax.set_title("Selection frequency over outer folds", fontsize=TITLE_SIZE)
    ax.grid(axis="x", alpha=0.3)


def fold_scores(result: NestedResult | CVResult, *, metric: str | None = None) -> Figure:
    """Plot the score of each outer fold (nested) or fold (CV) with the mean ± se band.

    With one fold (a hold-out test set) there is no mean or band to draw: the
    one score alone. Folds are numbered from 0, as in the report's tables,
    ``to_frame()`` and ``cv_results_`` (``split0_``); the candidate each outer fold
    selected is told by its point's marker, named in the legend (text at the
    points would overlap where neighbouring folds score alike), or, for one
    hold-out fold, written at its point.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.cross_validate(Ridge(), X, y, cv=3, backend="serial")
    >>> [t.get_text() for t in fold_scores(r).axes[0].get_legend().get_texts()][0]
    'mean ± se over 3 folds'
    """
    return _report_figure(FoldScoresDisplay(result, metric=metric))


def _draw_fold_scores(ax: Any, result: NestedResult | CVResult, metric: str | None) -> None:
    """Draw :func:`fold_scores` on ``ax``."""
    if isinstance(result, NestedResult):
        metric = metric if metric in result.outer_scores else result.refit_metric
        scores, est = result.outer_scores[metric], result.estimate[metric]
        names = [result.readable_labels[result.stability_labels[c]] for c in result.chosen]
        title, xlabel = "Outer-fold test scores of the selected candidates", f"outer {FOLDS}"
    else:
        metric = metric if metric in result.summaries else next(iter(result.summaries))
        key = f"test_{metric}" if f"test_{metric}" in result.scores else "test_score"
        scores, est, names = result.scores[key], result.summaries[metric], []
        title, xlabel = "Test score of each fold", FOLDS
    scores = np.asarray(scores, dtype=float)
    folds = np.arange(len(scores))
    if len(scores) > 1:
        if np.isfinite(est.se):
            ax.axhspan(est.mean - est.se, est.mean + est.se, color="tab:red", alpha=0.15,
                       label=f"mean ± se over {len(scores)} folds")  # fmt: skip
        ax.axhline(est.mean, color="tab:red", linestyle="--", label=f"mean {num(est.mean)}")
        if names:
            _selected_points(ax, folds, scores, names)
        else:
            ax.plot(folds, scores, "o", color="black", label="test score of the fold")
        ax.set_xticks(folds)
    else:  # a hold-out test set: one score, no mean or se
        title = "Score on the hold-out test set" + (" of the selected candidate" if names else "")
        ax.plot(folds, scores, "o", color="black", label=f"test score {num(float(scores[0]))}")
        ax.set_xticks(folds, ["hold-out test set"])
        xlabel = ""
    ax.set_xlim(-0.5, len(scores) - 0.5)
    ax.margins(y=0.3)  # room above and below the points
    if names and len(scores) == 1:  # one hold-out fold: its choice at its point
        ax.annotate(
            textwrap.fill(_short(names[0], 84), 28),
            (0, scores[0]),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            va="bottom",
            fontsize=TEXT_SIZE,
        )
    ax.set(xlabel=xlabel, ylabel=_shown(metric))
    ax.set_title(title, fontsize=TITLE_SIZE)
    ax.grid(alpha=0.3)
    _legend(ax, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside: never over a label


# Markers of the outer folds' points, one per candidate they selected.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def _selected_points(ax: Any, folds: Any, scores: Any, names: list[str]) -> None:
    """Each outer fold's score, marked by the candidate it selected (named in the legend)."""
    chosen = list(dict.fromkeys(names))  # in order of first selection
    for i, name in enumerate(chosen):
        mine = [k for k, n in enumerate(names) if n == name]
        ax.plot(folds[mine], scores[mine], _MARKERS[i % len(_MARKERS)], color=f"C{i % 10}",
                markersize=8, label=f"selected {_short(name, 45)}")  # fmt: skip


def outer_predictions(result: NestedResult) -> Figure | None:
    """Plot the outer refits' pooled confusion matrix, or residuals against predictions.

    None when the run kept no predictions (or an outer refit has none).
    """
    if result.outer_predictions is None:
        return None
    try:
        pooled = result.outer_predictions.pooled(0, "predict")
    except ValueError:
        return None
    fig = Figure(figsize=(5.6, 4.6), layout="constrained")
    ax = fig.add_subplot()
    if predicts_labels(pooled):
        labels, matrix = result.confusion_matrix()
        ax.imshow(matrix, cmap="Blues")
        for (i, j), count in np.ndenumerate(matrix):
            dark = count > matrix.max() / 2
            ax.text(j, i, str(count), ha="center", va="center",
                    color="white" if dark else "black", fontsize=TEXT_SIZE)  # fmt: skip
        ticks = np.arange(labels.size)
        ax.set_xticks(ticks, [_short(str(v), 12) for v in labels])
        ax.set_yticks(ticks, [_short(str(v), 12) for v in labels])
        ax.set(xlabel="predicted label", ylabel="true label")
        ax.set_title("Pooled confusion matrix of the outer folds", fontsize=TITLE_SIZE)
        return fig
    predicted = pooled.values.astype(np.float64)
    residuals = np.asarray(pooled.y_true, dtype=np.float64) - predicted
    ax.axhline(0.0, color="tab:red", linestyle="--", linewidth=1)
    ax.plot(predicted, residuals, "o", markersize=3, alpha=0.6, color="black")
    ax.set(xlabel="predicted (outer refit)", ylabel="residual (true - predicted)")
    ax.set_title("Pooled residuals of the outer folds", fontsize=TITLE_SIZE)
    ax.grid(alpha=0.3)
    return fig


def _band(ax: Any, x: Any, scores: Any, style: dict[str, Any]) -> None:
    """Mean over folds as a line, ± one standard error as a band."""
    values = np.asarray(scores, dtype=float)
    mean = np.nanmean(values, axis=1)
    k = values.shape[1]
    se = np.nanstd(values, axis=1, ddof=1) / np.sqrt(k) if k > 1 else np.zeros_like(mean)
    ax.plot(x, mean, **style)
    ax.fill_between(x, mean - se, mean + se, color=style["color"], alpha=0.15, linewidth=0)


def learning_curves(search: SearchResult) -> Figure | None:
    """Plot training and test error against the training-set size, mean ± se over folds.

    One pair of lines (training dashed, test solid) per candidate of
    ``search.learning_curves`` (the selected one, or up to
    :data:`MAX_LINES` of them: the selected one and its neighbours in the
    search's order). A gap that stays wide as the training set grows is
    variance; two curves that meet high is bias.

    Returns
    -------
    Figure or None
        None when the search computed no learning curve.
    """
    curves = search.learning_curves
    if not curves:
        return None
    shown = sorted(curves, key=lambda c: (c != search.best_index_, abs(c - search.best_index_)))
    shown = sorted(shown[:MAX_LINES])
    first = curves[shown[0]]
    label = _shown(first.metric)
    fig = Figure(figsize=(7.2, 4.8), layout="constrained")
    ax = fig.add_subplot()
    for i, c in enumerate(shown):
        curve = curves[c]
        color = f"C{i % 10}"
        name = _short(search.readable_label(c), 40) if len(shown) > 1 else ""
        best = " (selected)" if c == search.best_index_ and len(shown) > 1 else ""
        x = curve.train_sizes_abs.astype(float)
        _band(
            ax,
            x,
            curve.test_scores,
            {"color": color, "marker": "o", "label": f"test folds {name}{best}".rstrip()},
        )
        _band(ax, x, curve.train_scores,
              {"color": color, "marker": "s", "linestyle": "--",
               "label": f"training rows {name}{best}".rstrip()})  # fmt: skip
    ax.set_xlabel("training-set size (rows)")
    ax.set_ylabel(label)
    folds = first.test_scores.shape[1]
    what = "selected candidate" if len(shown) == 1 else f"{len(shown)} candidates"
    ax.set_title(f"Learning curve of the {what}: training vs test, mean ± se over {folds} "
                 "folds", fontsize=TITLE_SIZE)  # fmt: skip
    ax.grid(alpha=0.3)
    _legend(ax, loc="best")
    return fig


def bias_variance_tradeoff(search: SearchResult, *, param: str | None = None) -> Figure | None:
    """Plot bias², variance and expected loss on the hold-out test set along the candidates.

    The x axis is the numeric parameter with most values (or ``param``);
    candidates whose other parameters differ from the selected one's are
    left out. Without a numeric parameter, the candidates in search order.

    Returns
    -------
    Figure or None
        None when the search computed no decomposition.
    """
    tradeoff = search.bias_variance
    if tradeoff is None:
        return None
    params = tradeoff.params
    name = _curve_param(params, param)
    rows: list[int] = []
    if name is not None:
        key, best = name, params[search.best_index_]
        rows = [c for c, p in enumerate(params)
                if _is_number(p.get(key)) and _others(p, key) == _others(best, key)]  # fmt: skip
        rows = sorted(rows, key=lambda c: params[c][key])
        x = np.array([params[c][key] for c in rows], dtype=float)
    if name is None or len(rows) < 2:
        name, rows = None, list(range(len(params)))
        x = np.arange(len(rows), dtype=float)
    first = tradeoff.results[0]
    bias = "bias²" if first.loss == "mse" else "bias"
    fig = Figure(figsize=(7.2, 4.8), layout="constrained")
    ax = fig.add_subplot()
    lines = ((tradeoff.avg_expected_loss, "expected loss", "black", "o-"),
             (tradeoff.avg_bias, bias, "tab:blue", "s--"),
             (tradeoff.avg_var, "variance", "tab:red", "^--"))  # fmt: skip
    for values, text, color, fmt in lines:
        ax.plot(x, values[rows], fmt, color=color, label=text)
    if search.best_index_ in rows:
        where = x[rows.index(search.best_index_)]
        ax.axvline(where, color="gray", linestyle=":", label="selected by CV")
    if name is None:
        ax.set_xticks(x, [_short(search.readable_label(c), 20) for c in rows], rotation=30,
                      fontsize=TEXT_SIZE - 1, ha="right")  # fmt: skip
        ax.set_xlabel("candidate")
    else:
        _log_axis(ax, x)
        ax.set_xlabel(name)
    loss = "squared error" if first.loss == "mse" else "0-1 loss"
    ax.set_ylabel(f"{loss} on the hold-out test set")
    ax.set_title(f"Bias-variance trade-off ({first.n_rounds} bootstrap fits per candidate)",
                 fontsize=TITLE_SIZE)  # fmt: skip
    ax.grid(alpha=0.3)
    _legend(ax, loc="best")
    return fig


def figures(
    result: Result, *, param: str | None = None, metric: str | None = None
) -> dict[str, Figure]:
    """Every plot that applies to a result, as a matplotlib Figure by file name.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, y, cv=3, backend="serial")
    >>> sorted(figures(r))
    ['paired_differences.png', 'validation_curve.png']
    """
    drawn: dict[str, Figure | None] = {}
    search = result if isinstance(result, SearchResult) else getattr(result, "final", None)
    if search is not None:
        known = search.metrics
    else:
        known = tuple(result.outer_scores if isinstance(result, NestedResult) else result.summaries)
    metric = metric if metric in known else None
    if search is not None:
        drawn["validation_curve.png"] = validation_curve(search, param=param, metric=metric)
        drawn["paired_differences.png"] = paired_differences(search, metric=metric)
        drawn["learning_curve.png"] = learning_curves(search)
        drawn["bias_variance.png"] = bias_variance_tradeoff(search, param=param)
    if isinstance(result, NestedResult):
        if len(result.chosen) > 1:  # one outer split (a hold-out test set): one full bar
            drawn["selection_frequency.png"] = selection_frequency(result)
        drawn["outer_predictions.png"] = outer_predictions(result)
    if search is not None and "race_eliminated_after" in search.cv_results_:
        drawn["race.png"] = race(search, metric=metric)
    if search is not None and search.iterations is not None:
        drawn["iteration_paths.png"] = iteration_paths(search, metric=metric)
    if isinstance(search, (HalvingResult, HyperbandResult)):
        drawn["halving.png"] = halving_rungs(search, metric=metric)
    if search is not None and (search.strategy or {}).get("name") == "sampler":
        drawn.update(_sampler_plots(search, metric))
    if search is not None and (search.strategy or {}).get("objectives"):
        front = ParetoFrontDisplay.from_result_unplotted(result)
        drawn["pareto_front.png"] = _report_figure(front) if len(front.front) else None
    if isinstance(result, (NestedResult, CVResult)):
        drawn["fold_scores.png"] = fold_scores(result, metric=metric)
    return {name: fig for name, fig in drawn.items() if fig is not None}


def _sampler_plots(search: SearchResult, metric: str | None) -> dict[str, Figure | None]:
    """A sampler's search: score by trial with the best so far and the trial it selected,
    a pruner's intermediate values, and fANOVA importances.

    The importances need Optuna (the run had it; a report elsewhere may not): without
    it, that plot is left out. Each parameter's space is read from the values its
    trials took (:func:`_trial_space`): the run stores the trials, not the space.
    """
    config = search.strategy or {}
    table = _trial_table(search, metric)
    drawn: dict[str, Figure | None] = {
        "sampler_trials.png": _report_figure(SamplerTrialsDisplay(**table.trials_plot())),
    }
    if "trial_state" in search.cv_results_:  # a pruner: rows are (trial, checkpoint)
        suffix = table.metric if search.multimetric else "score"
        drawn["intermediate_values.png"] = intermediate_values(
            _trials_of(search, suffix), metric=table.metric, config=config
        )
    try:
        drawn["param_importance.png"] = param_importances(
            table.params, table.values, space=_trial_space(table.params), metric=table.metric
        )
    except ImportError:
        drawn["param_importance.png"] = None
    return drawn


@dataclass(frozen=True)
class _TrialTable:
    """A sampler's search as its plots read it: each trial's parameters and value, the winner.

    ``values``: NaN for a trial that failed, that a race dropped or that a pruner
    stopped (its study ranks it by no value); ``selected``: the place of the trial
    the search selected (``best_index_``'s), which ``how`` says how it was chosen
    where that is not its mean alone.
    """

    metric: str
    params: list[dict[str, Any]]
    values: Any
    selected: int
    how: str
    sampler: str
    batch: int

    def trials_plot(self) -> dict[str, Any]:
        """The arguments of :class:`SamplerTrialsDisplay`."""
        return {"values": self.values, "metric": self.metric, "sampler": self.sampler,
                "batch": self.batch, "selected": self.selected, "how": self.how}  # fmt: skip


def _trial_table(search: SearchResult, metric: str | None) -> _TrialTable:
    """The trials of a sampler's search, by trial: without a pruner, a row is a trial.

    With a pruner the rows are (trial, checkpoint): a trial's value is Optuna's, its
    mean at the last checkpoint if it completed, and the selected trial is the one
    whose row the search selected.
    """
    config = search.strategy or {}
    cv = search.cv_results_
    name = metric or search.refit_metric
    suffix = name if search.multimetric else "score"
    if "trial_state" in cv:
        trials = _trials_of(search, suffix)
        params = [t["params"] for t in trials.values()]
        values = np.array([t["steps"][-1][1] if t["steps"] and t["state"] == "COMPLETE"
                           else math.nan for t in trials.values()])  # fmt: skip
        selected = list(trials).index(int(cv["trial"][search.best_index_]))
    else:
        params = [dict(p) for p in cv["params"]]
        values = np.asarray(cv[f"mean_test_{suffix}"], dtype=float)
        selected = int(search.best_index_)
    how = ""
    if config.get("select"):
        how = f"picked by select={config['select']} from the Pareto front"
    elif config.get("objectives"):
        how = f"the Pareto front's best {search.refit_metric}"
    return _TrialTable(name, params, values, selected, how, str(config.get("sampler", "")),
                       int(config.get("batch", 1)))  # fmt: skip


def _trials_of(search: SearchResult, suffix: str) -> dict[int, dict[str, Any]]:
    """A pruned sampler's trials: each one's state, parameters and reported (step, mean)."""
    cv = search.cv_results_
    param = str(((search.strategy or {}).get("resource") or {}).get("param", ""))
    means = np.asarray(cv[f"mean_test_{suffix}"], dtype=float)
    trials: dict[int, dict[str, Any]] = {}
    for row, number in enumerate(np.asarray(cv["trial"]).tolist()):
        params = dict(cv["params"][row])
        step = params.pop(param, None)
        trial = trials.setdefault(number, {"state": str(cv["trial_state"][row]),
                                           "params": params, "steps": []})  # fmt: skip
        if cv["reported"][row]:
            trial["steps"].append((step, float(means[row])))
    return dict(sorted(trials.items()))


def intermediate_values(
    trials: dict[int, dict[str, Any]], *, metric: str = "score", config: Any = None
) -> Figure | None:
    """Each trial's mean test score at the checkpoints it reported, as Optuna's plot of them.

    Parameters
    ----------
    trials : dict of int to dict
        By trial number: ``state`` (``"COMPLETE"``, ``"PRUNED"`` or ``"FAIL"``)
        and ``steps``, the (checkpoint, mean test score) pairs it reported.
    metric : str, default="score"
    config : dict or None, default=None
        The sampler's ``config()`` (its sampler, pruner and path), for the labels.

    Returns
    -------
    Figure or None
        None when no trial reported a value.

    Examples
    --------
    >>> fig = intermediate_values({0: {"state": "COMPLETE", "steps": [(1, 0.5), (2, 0.6)]},
    ...                            1: {"state": "PRUNED", "steps": [(1, 0.2)]}})
    >>> fig.axes[0].get_title()
    'Intermediate values: 2 trials, 1 pruned'
    """
    reported = {n: t for n, t in trials.items() if t["steps"]}
    if not reported:
        return None
    config = config or {}
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.add_subplot()
    for trial in reported.values():
        steps, means = zip(*trial["steps"], strict=True)
        pruned = trial["state"] == "PRUNED"
        ax.plot(steps, means, color="tab:gray" if pruned else "tab:blue",
                alpha=0.6 if pruned else 0.9, linewidth=1.0, marker=".")  # fmt: skip
        if pruned:
            ax.plot(steps[-1], means[-1], "x", color="black")
    n_pruned = sum(t["state"] == "PRUNED" for t in trials.values())
    param = (config.get("resource") or {}).get("param", "step")
    ax.set_xlabel(f"{param} (the step; black cross: pruned there)")
    ax.set_ylabel(f"mean test {metric} over the folds")
    ax.set_title(f"Intermediate values: {len(trials)} trials, {n_pruned} pruned",
                 fontsize=TITLE_SIZE)  # fmt: skip
    ax.grid(alpha=0.3)
    return fig


def _trial_space(params: list[dict[str, Any]]) -> dict[str, Any]:
    """Each parameter's space, from the values its trials took, as fANOVA should see it.

    Numbers are a range (Optuna's ``IntDistribution`` or ``FloatDistribution`` from the
    smallest to the largest value taken), which fANOVA splits as numbers, as it does a
    sampler's own numeric distributions; other values are categories. Taken as
    categories, a continuous parameter's trials are as many one-hot columns as trials,
    each seen once: fANOVA then took minutes and could not tell a parameter that
    decides the score from one that does not.
    """
    optuna = import_optuna()
    space: dict[str, Any] = {}
    for name in sorted({n for p in params for n in p}):
        taken = [p[name] for p in params if name in p]
        if all(_is_number(v) and np.isfinite(v) for v in taken):
            if all(isinstance(v, numbers.Integral) for v in taken):
                space[name] = optuna.distributions.IntDistribution(int(min(taken)), int(max(taken)))
            else:
                low, high = float(min(taken)), float(max(taken))
                space[name] = optuna.distributions.FloatDistribution(low, high)
        else:
            space[name] = sorted(set(taken), key=repr)
    return space


def render_plots(
    result: Result, *, param: str | None = None, metric: str | None = None
) -> dict[str, bytes]:
    """Render every plot that applies to a result, as PNG bytes by file name.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, y, cv=3, backend="serial")
    >>> sorted(render_plots(r))
    ['paired_differences.png', 'validation_curve.png']
    """
    return {name: _png(fig) for name, fig in figures(result, param=param, metric=metric).items()}


def sampler_trials(
    values: Any,
    *,
    metric: str = "score",
    sampler: str = "",
    batch: int = 1,
    selected: int | None = None,
    how: str = "",
) -> Figure:
    """Plot a model-based search: each trial's mean test score and the best so far.

    Parameters
    ----------
    values : array-like of shape (n_trials,)
        Each trial's mean test score, in trial order; NaN for a trial that
        failed or that a race dropped (counted in the title, not drawn).
    metric : str, default="score"
        The refit metric, for the axis label.
    sampler : str, default=""
        The sampler's name for the title, e.g. ``"TPESampler"``.
    batch : int, default=1
        Trials per round: with more than one, thin lines separate the rounds.
    selected : int or None, default=None
        The trial the search selected, starred. None: the first best mean (the
        best trial of a study of one objective).
    how : str, default=""
        How that trial was selected, for the legend, where not by its mean
        (e.g. ``"picked by select=fastest from the Pareto front"``).

    Returns
    -------
    Figure

    Examples
    --------
    >>> fig = sampler_trials([0.8, float("nan"), 0.85, 0.83], sampler="TPESampler", batch=2)
    >>> [round(float(v), 2) for v in fig.axes[0].lines[0].get_ydata()]
    [0.8, 0.8, 0.85, 0.85]
    """
    return _report_figure(SamplerTrialsDisplay(values, metric=metric, sampler=sampler,
                                                batch=batch, selected=selected,
                                                how=how))  # fmt: skip


def _draw_sampler_trials(ax: Any, display: SamplerTrialsDisplay) -> None:
    """Draw :func:`sampler_trials` on ``ax``."""
    y, batch = display.values, display.batch
    x = np.arange(len(y))
    best = np.maximum.accumulate(np.where(np.isnan(y), -np.inf, y))
    best = np.where(np.isneginf(best), np.nan, best)
    ax.step(x, best, where="post", color="C1", linewidth=1.5, label="best so far")
    ok = ~np.isnan(y)
    ax.plot(x[ok], y[ok], "o", color="C0", markersize=4, alpha=0.8, label="trial")
    top = display.selected
    if top is None and ok.any():
        top = int(np.nanargmax(y))  # the first of equal means, as the study's best trial
    if top is not None and ok[top]:
        how = f", {display.how}" if display.how else ""
        ax.plot(top, y[top], "*", color="gold", markeredgecolor="black", markersize=15,
                zorder=5, label=f"selected: trial {top}{how}")  # fmt: skip
    if batch > 1:
        for edge in range(batch, len(y), batch):
            ax.axvline(edge - 0.5, color="grey", alpha=0.25, linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial" + (f" (rounds of {batch})" if batch > 1 else ""))
    ax.set_ylabel(f"mean test {_shown(display.metric)}")
    missing = int((~ok).sum())
    note = f"; {missing} failed or dropped" if missing else ""
    name = f"{display.sampler}: " if display.sampler else ""
    ax.set_title(f"{name}mean test score by trial ({len(y)} trials{note})", fontsize=TITLE_SIZE)
    ax.grid(alpha=0.3)
    _legend(ax, loc="lower right")


def param_importances(
    params: Any,
    values: Any,
    *,
    space: Any,
    metric: str = "score",
    seed: int = 0,
    max_depth: int = 8,
) -> Figure | None:
    """Plot each parameter's importance by Optuna's fANOVA evaluator, from the trials.

    A study is rebuilt from the trials (their parameters and mean scores) and
    ``optuna.importance.get_param_importances`` with
    ``FanovaImportanceEvaluator(seed=seed)`` computes the share of the score's
    variance each parameter explains. Where at most one parameter varies, it
    explains all of it: its share is 1.0 (and 0.0 each constant one's), as
    Optuna's normalized importances give, without fitting fANOVA's forest.

    Parameters
    ----------
    params : list of dict
        Each trial's parameters (keys outside ``space`` are left out).
    values : array-like of shape (n_trials,)
        Each trial's mean test score; NaN for failed or dropped trials (left out).
    space : dict
        The sampler's space, as :func:`parcv.strategies.sampler.check_optuna_space` takes it.
    metric : str, default="score"
        The refit metric, for the title.
    seed : int, default=0
        The evaluator's seed (its random forest): fixed, a report draws the same.
    max_depth : int, default=8
        Depth of the evaluator's 64 trees. Optuna's default, 64, grows a leaf per
        trial, and Optuna sums the marginal variances over the leaves in Python: for
        1,000 trials of 3 parameters that took 32 s, depth 8 took 3 s with every
        share within 0.005 of the default's (also at 200 trials). The trees of a
        few dozen trials are shallower than 8: the shares are then the default's.

    Returns
    -------
    Figure or None
        None with fewer than two scored trials, scores that are all equal, or
        no parameter that varies (nothing to explain).

    Examples
    --------
    >>> space = {"a": [1, 2, 3], "b": [0.0, 1.0]}
    >>> params = [{"a": a, "b": b} for a in (1, 2, 3) for b in (0.0, 1.0)]
    >>> fig = param_importances(params, [p["a"] + 0.01 * p["b"] for p in params], space=space)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['a', 'b']
    """
    display = ParamImportanceDisplay.from_trials(params, values, space=space, metric=metric,
                                                 seed=seed, max_depth=max_depth)  # fmt: skip
    return None if display is None else _report_figure(display)


def _importances(
    params: Any, values: Any, *, space: Any, seed: int, max_depth: int
) -> tuple[dict[str, float], int, str] | None:
    """Each parameter's share of the variance (fANOVA), the scored trials, how it was found."""
    optuna = import_optuna()
    study = rebuild_study(params, values, space=space)
    scored = [t.value for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    n_scored = len(scored)
    if n_scored < 2 or len(set(scored)) < 2:
        return None
    distributions = check_optuna_space(space).distributions
    varied = [n for n, d in distributions.items() if not d.single()]
    if not varied:
        return None
    if len(varied) == 1:  # it explains all of the variance: no forest to fit
        shares = {n: float(n in varied) for n in distributions}
        # Ordered as Optuna orders them (its _sort_dict_by_importance).
        importances = dict(reversed(sorted(shares.items(), key=lambda item: item[1])))
        how = "one parameter varies"
    else:
        evaluator = optuna.importance.FanovaImportanceEvaluator(max_depth=max_depth, seed=seed)
        importances = optuna.importance.get_param_importances(study, evaluator=evaluator)
        how = "Optuna's fANOVA"
    return dict(importances), n_scored, how


def _draw_param_importances(
    ax: Any, importances: dict[str, float], n_scored: int, how: str, metric: str
) -> None:
    """Draw :func:`param_importances` on ``ax``."""
    names = list(importances)
    ax.barh(np.arange(len(names)), [importances[n] for n in names], color="tab:blue")
    ax.set_yticks(np.arange(len(names)), [_short(n) for n in names])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of the variance of mean test {metric}")
    ax.set_title(f"Parameter importance ({n_scored} scored trials; {how})",
                 fontsize=TITLE_SIZE)  # fmt: skip
    ax.grid(axis="x", alpha=0.3)


# --- Display objects: each plot above, drawn into a matplotlib Axes of one's own -----------


def _report_figure(display: _Display) -> Figure:
    """The report's figure of a display: a pyplot-free Figure of its size, drawn once."""
    fig = Figure(figsize=display.figsize, layout="constrained")
    n = display.n_panels
    axes = [fig.add_subplot()] if n == 1 else list(fig.subplots(1, n, sharey=display.sharey))
    display.plot(ax=axes)
    return fig


def _panel_axes(
    ax: Any, n: int, figsize: tuple[float, float], sharey: bool
) -> tuple[list[Any], Any]:
    """The Axes of ``n`` panels, and the Axes they split (None if not split).

    ``ax`` is None (a new pyplot figure of the report's size), one Axes (split into ``n``
    side by side when ``n > 1``, as scikit-learn's ``PartialDependenceDisplay`` does) or
    ``n`` Axes, one per panel.
    """
    from matplotlib.axes import Axes

    if ax is None:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=figsize, layout="constrained")
        return ([fig.add_subplot()] if n == 1 else list(fig.subplots(1, n, sharey=sharey))), None
    if isinstance(ax, Axes):
        if n == 1:
            return [ax], None
        spec = ax.get_subplotspec()
        if spec is None:
            raise ValueError(
                f"ax must be an Axes of a grid (from plt.subplots or fig.add_subplot) to be "
                f"split into this plot's {n} panels; got {ax!r}, placed by hand. Pass {n} "
                "Axes, one per panel, or ax=None for a new figure."
            )
        ax.set_axis_off()
        grid = spec.subgridspec(1, n)
        first = ax.figure.add_subplot(grid[0, 0])
        rest = [ax.figure.add_subplot(grid[0, i], sharey=first if sharey else None)
                for i in range(1, n)]  # fmt: skip
        return [first, *rest], ax
    axes = list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != n or not all(isinstance(a, Axes) for a in axes):
        raise ValueError(
            f"ax must be None, one matplotlib Axes or {n} of them (one per panel of this "
            f"plot); got {ax!r}. Pass e.g. ax=plt.subplots(1, {n})[1]."
        )
    return axes, None


def _search_for(result: Any, display: str) -> SearchResult:
    """The search a display draws: the result itself, or a nested result's search on all data."""
    search = result.final if isinstance(result, NestedResult) else result
    if not isinstance(search, SearchResult):
        whose = (
            "a NestedResult without a search on all data (refit=False)"
            if isinstance(result, NestedResult)
            else repr(type(result).__name__)
        )
        raise TypeError(
            f"{display}.from_result needs the result of parcv.search or parcv.nested_cv "
            f"(a SearchResult, or a NestedResult with its search on all data); got {whose}."
        )
    return search


_D = TypeVar("_D", bound="_Display")


class _Display:
    """What every display shares: its panels, its size in the report, and :meth:`plot`.

    A subclass sets :attr:`n_panels` (one Axes each), :attr:`figsize` and
    :attr:`sharey`, says in :meth:`_empty` why it has nothing to draw, and draws in
    :meth:`_draw`.
    """

    sharey = False
    figure_: Any
    ax_: Any
    axes_: Any
    bounding_ax_: Any

    @property
    def n_panels(self) -> int:
        """Axes the plot draws on, side by side."""
        return 1

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure (and of ``plot(ax=None)``'s)."""
        raise NotImplementedError

    def _empty(self) -> str:
        """Why there is nothing to draw (and what to do); empty when there is."""
        return ""

    def plot(self: _D, ax: Any = None) -> _D:
        """Draw the plot, as the report draws it.

        Parameters
        ----------
        ax : matplotlib Axes, array-like of Axes or None, default=None
            Where to draw. None: a new figure (pyplot's ``plt.figure``), of the size
            the report's PNG has. A plot of several panels takes as many Axes, one per
            panel, or one Axes of a grid, which it splits side by side (then hidden,
            kept as ``bounding_ax_``).

        Returns
        -------
        display
            This display, with ``figure_`` (the figure drawn on), ``ax_`` (the first
            panel's Axes) and ``axes_`` (an array of every panel's).

        Raises
        ------
        ValueError
            Nothing to draw (the message says why), or ``ax`` of the wrong count.
        """
        empty = self._empty()
        if empty:
            raise ValueError(empty)
        axes, self.bounding_ax_ = _panel_axes(ax, self.n_panels, self.figsize, self.sharey)
        self._draw(axes)
        self.axes_ = np.asarray(axes, dtype=object)
        self.ax_ = axes[0]
        self.figure_ = axes[0].figure
        return self

    def _draw(self, axes: list[Any]) -> None:
        raise NotImplementedError


class ValidationCurveDisplay(_Display):
    """Validation (and training) score against a hyperparameter: ``validation_curve.png``.

    Mean ± se over folds of each candidate, one line per value of the other
    parameters, the selected candidate starred; model families with different
    numeric parameters get a panel each. See :func:`validation_curve` for what
    is drawn when.

    Parameters
    ----------
    search : SearchResult
    param : str, default=None
        Parameter on the x axis (one panel); by default the numeric one with most
        values in each model family.
    metric : str, default=None
        Defaults to the refit metric.

    Attributes
    ----------
    panels : list of (str, tuple)
        Each panel's x parameter and its lines; empty when no numeric parameter takes
        two values.
    figure_, ax_, axes_
        Set by :meth:`plot`.

    See Also
    --------
    sklearn.model_selection.ValidationCurveDisplay : The same convention, for one estimator.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> from parcv.report import ValidationCurveDisplay
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, y, cv=3, backend="serial")
    >>> fig, ax = plt.subplots()
    >>> display = ValidationCurveDisplay.from_result(r, ax=ax)
    >>> display.ax_ is ax, display.figure_ is fig, ax.get_xlabel()
    (True, True, 'alpha')
    >>> plt.close(fig)
    """

    sharey = True

    def __init__(
        self, search: SearchResult, *, param: str | None = None, metric: str | None = None
    ) -> None:
        self.search, self.param = search, param
        self.metric = metric or search.refit_metric
        self.panels = _curve_panels(search, param)

    @property
    def n_panels(self) -> int:
        """One panel per model family's x parameter."""
        return max(len(self.panels), 1)

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        n = len(self.panels)
        return (7.2 if n <= 1 else min(4.4 * n + 0.8, 15.0), 4.8)

    @classmethod
    def from_result(
        cls, result: Any, *, param: str | None = None, metric: str | None = None, ax: Any = None
    ) -> ValidationCurveDisplay:
        """Plot the validation curve of a search (a nested run's: its search on all data).

        Parameters
        ----------
        result : SearchResult or NestedResult
            What :func:`parcv.search`, :func:`parcv.nested_cv` or :func:`parcv.load`
            returned (halving, Hyperband and sampler searches included).
        param, metric
            As for the class.
        ax : matplotlib Axes, array-like of Axes or None, default=None
            See :meth:`plot`.

        Returns
        -------
        ValidationCurveDisplay

        Raises
        ------
        TypeError
            ``result`` holds no search.
        ValueError
            No numeric parameter takes two values (or none named ``param`` does).
        """
        return cls(_search_for(result, cls.__name__), param=param, metric=metric).plot(ax=ax)

    def _empty(self) -> str:
        if self.panels:
            return ""
        which = "no parameter" if self.param is None else f"parameter {self.param!r}"
        return (
            f"no validation curve to draw: {which} takes two or more numeric values among "
            "the candidates. Pass param= a parameter the space varies over numbers."
        )

    def _draw(self, axes: list[Any]) -> None:
        _draw_validation_curve(axes, self.search, self.panels, self.metric)


class PairedDifferencesDisplay(_Display):
    """The best and the runner-up on each fold, and their differences: ``paired_differences.png``.

    Left, each fold's test score of the best candidate and of the runner-up (by
    mean); right, the per-fold difference (best - runner-up), its mean and the
    corrected resampled t-test's p-value.

    Parameters
    ----------
    search : SearchResult
    metric : str, default=None
        Defaults to the refit metric.

    Attributes
    ----------
    scores : ndarray of shape (n_candidates, n_splits)
        Each candidate's test score on each fold.
    pair : (int, int) or None
        The best candidate and the runner-up (indices of ``cv_results_``); None with
        fewer than two candidates or two folds.
    figure_, ax_, axes_
        Set by :meth:`plot`; ``axes_`` is (scores, differences).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> from parcv.report import PairedDifferencesDisplay
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.search(Ridge(), {"alpha": [0.1, 100.0]}, X, y, cv=3, backend="serial")
    >>> display = PairedDifferencesDisplay.from_result(r)
    >>> display.pair, len(display.axes_)
    ((0, 1), 2)
    >>> plt.close(display.figure_)
    """

    def __init__(self, search: SearchResult, *, metric: str | None = None) -> None:
        self.search = search
        self.metric = metric or search.refit_metric
        self.scores = candidate_scores(search, self.metric)
        self.pair = _best_pair(self.scores, complete_trial_rows(search))

    @property
    def n_panels(self) -> int:
        """The fold scores, then their differences."""
        return 2

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        return (10.0, 4.4)

    @classmethod
    def from_result(
        cls, result: Any, *, metric: str | None = None, ax: Any = None
    ) -> PairedDifferencesDisplay:
        """Plot the best and the runner-up of a search (a nested run's: its search on all data).

        Parameters
        ----------
        result : SearchResult or NestedResult
        metric : str, default=None
        ax : matplotlib Axes, array-like of 2 Axes or None, default=None
            See :meth:`plot`.

        Returns
        -------
        PairedDifferencesDisplay

        Raises
        ------
        TypeError
            ``result`` holds no search.
        ValueError
            Fewer than two candidates or two folds with scores.
        """
        return cls(_search_for(result, cls.__name__), metric=metric).plot(ax=ax)

    def _empty(self) -> str:
        if self.pair is not None:
            return ""
        n, k = self.scores.shape
        return (
            "no paired differences to draw: they need two candidates with every fold "
            f"scored, on two or more folds; got {n} candidate(s) on {k} fold(s). Search "
            "over two or more candidates with cv >= 2."
        )

    def _draw(self, axes: list[Any]) -> None:
        assert self.pair is not None  # plot() checked it (_empty)
        _draw_paired_differences(axes, self.search, self.metric, self.scores, self.pair)


class SelectionFrequencyDisplay(_Display):
    """How many outer folds selected each candidate: ``selection_frequency.png``.

    Parameters
    ----------
    result : NestedResult

    Attributes
    ----------
    counts : dict of str to int
        Each selected candidate's label and the outer folds that selected it, as
        ``result.stability``.
    figure_, ax_, axes_
        Set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> from parcv.report import SelectionFrequencyDisplay
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.nested_cv(Ridge(), {"alpha": [0.1, 100.0]}, X, y, outer=3, inner=2,
    ...                     backend="serial")
    >>> display = SelectionFrequencyDisplay.from_result(r)
    >>> display.counts
    {'alpha=0.1': 3}
    >>> plt.close(display.figure_)
    """

    def __init__(self, result: NestedResult) -> None:
        self.result = result
        self.counts = {row.label: row.count for row in result.stability}

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        return (6.4, max(2.4, 1.2 + 0.45 * len(self.result.stability)))

    @classmethod
    def from_result(cls, result: Any, *, ax: Any = None) -> SelectionFrequencyDisplay:
        """Plot the selection frequency of a nested CV run.

        Parameters
        ----------
        result : NestedResult
            What :func:`parcv.nested_cv` (or :func:`parcv.load` of its store) returned.
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        SelectionFrequencyDisplay

        Raises
        ------
        TypeError
            ``result`` is not a nested CV result.
        """
        if not isinstance(result, NestedResult):
            raise TypeError(
                "SelectionFrequencyDisplay.from_result needs the result of parcv.nested_cv "
                f"(a NestedResult: outer folds select); got {type(result).__name__!r}."
            )
        return cls(result).plot(ax=ax)

    def _draw(self, axes: list[Any]) -> None:
        _draw_selection_frequency(axes[0], self.result)


class FoldScoresDisplay(_Display):
    """The test score of each (outer) fold with the mean ± se band: ``fold_scores.png``.

    Parameters
    ----------
    result : NestedResult or CVResult
    metric : str, default=None
        Defaults to the refit metric (the first one for a CV result).

    Attributes
    ----------
    scores : ndarray of shape (n_splits,)
        The score of each (outer) fold, as drawn.
    figure_, ax_, axes_
        Set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> from parcv.report import FoldScoresDisplay
    >>> X, y = make_regression(n_samples=40, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.cross_validate(Ridge(), X, y, cv=3, backend="serial")
    >>> fig, ax = plt.subplots()
    >>> display = FoldScoresDisplay.from_result(r, ax=ax)
    >>> bool((display.scores == r["test_score"]).all()), display.figure_ is fig
    (True, True)
    >>> plt.close(fig)
    """

    def __init__(self, result: NestedResult | CVResult, *, metric: str | None = None) -> None:
        self.result, self.metric = result, metric
        if isinstance(result, NestedResult):
            name = metric if metric in result.outer_scores else result.refit_metric
            scores = result.outer_scores[name]
        else:
            name = metric if metric in result.summaries else next(iter(result.summaries))
            scores = result.scores[f"test_{name}" if f"test_{name}" in result.scores
                                   else "test_score"]  # fmt: skip
        self.scores = np.asarray(scores, dtype=float)

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        # Wider with a legend of the selected candidates beside the axes.
        return (9.6 if isinstance(self.result, NestedResult) else 8.4, 4.2)

    @classmethod
    def from_result(
        cls, result: Any, *, metric: str | None = None, ax: Any = None
    ) -> FoldScoresDisplay:
        """Plot the fold scores of a CV or nested CV run.

        Parameters
        ----------
        result : CVResult or NestedResult
            What :func:`parcv.cross_validate` or :func:`parcv.nested_cv` (or
            :func:`parcv.load`) returned.
        metric : str, default=None
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        FoldScoresDisplay

        Raises
        ------
        TypeError
            ``result`` has no folds of its own to score (a search).
        """
        if not isinstance(result, (NestedResult, CVResult)):
            raise TypeError(
                "FoldScoresDisplay.from_result needs the result of parcv.cross_validate or "
                f"parcv.nested_cv; got {type(result).__name__!r}. For a search's folds, use "
                "PairedDifferencesDisplay."
            )
        return cls(result, metric=metric).plot(ax=ax)

    def _draw(self, axes: list[Any]) -> None:
        _draw_fold_scores(axes[0], self.result, self.metric)


class HalvingRungsDisplay(_Display):
    """Each candidate's mean test score in every rung it reached: ``halving.png``.

    Grey: dropped at a rung; blue: reached the last rung; the star is the winner.
    A Hyperband search has one panel per bracket.

    Parameters
    ----------
    result : HalvingResult or HyperbandResult
    metric : str, default=None
        Defaults to the refit metric.

    Attributes
    ----------
    brackets : list of HalvingResult
        The halving searches drawn, one per panel.
    figure_, ax_, axes_
        Set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> from parcv.report import HalvingRungsDisplay
    >>> X, y = make_regression(n_samples=60, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, y, cv=2,
    ...                  halving=parcv.Halving(min_resources=20), backend="serial")
    >>> display = HalvingRungsDisplay.from_result(r)
    >>> len(display.axes_), r.n_candidates_
    (1, [3, 1])
    >>> plt.close(display.figure_)
    """

    sharey = True

    def __init__(
        self, result: HalvingResult | HyperbandResult, *, metric: str | None = None
    ) -> None:
        self.result, self.metric = result, metric
        self.brackets = _brackets(result)

    @property
    def n_panels(self) -> int:
        """One panel per bracket."""
        return len(self.brackets)

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        return (min(3.2 * len(self.brackets) + 1.5, 14), 4.2)

    @classmethod
    def from_result(
        cls, result: Any, *, metric: str | None = None, ax: Any = None
    ) -> HalvingRungsDisplay:
        """Plot the rungs of a successive halving or Hyperband search.

        Parameters
        ----------
        result : HalvingResult, HyperbandResult or NestedResult
            A nested run's search on all data is drawn.
        metric : str, default=None
        ax : matplotlib Axes, array-like of Axes or None, default=None
            See :meth:`plot` (one Axes per bracket).

        Returns
        -------
        HalvingRungsDisplay

        Raises
        ------
        TypeError
            ``result`` is no halving or Hyperband search.
        """
        search = _search_for(result, cls.__name__)
        if not isinstance(search, (HalvingResult, HyperbandResult)):
            raise TypeError(
                "HalvingRungsDisplay.from_result needs a successive halving or Hyperband "
                f"search (halving=parcv.Halving(...) or parcv.Hyperband(...)); got "
                f"{type(search).__name__!r}."
            )
        return cls(search, metric=metric).plot(ax=ax)

    def _draw(self, axes: list[Any]) -> None:
        _draw_halving_rungs(axes, self.result, self.metric)


def _sampler_search(result: Any, display: str) -> SearchResult:
    """The search of a sampler's run, or a TypeError naming what to pass."""
    search = _search_for(result, display)
    if (search.strategy or {}).get("name") != "sampler":
        raise TypeError(
            f"{display}.from_result needs a search run by a sampler "
            f"(strategy=parcv.Sampler(...)); got a search by "
            f"{(search.strategy or {}).get('name', 'a grid or random space')!s}."
        )
    return search


class SamplerTrialsDisplay(_Display):
    """A model-based search: each trial's mean test score and the best so far.

    ``sampler_trials.png`` of a :class:`parcv.Sampler` search.

    Parameters
    ----------
    values : array-like of shape (n_trials,)
        Each trial's mean test score, in trial order; NaN for a trial that failed or
        that a race dropped (counted in the title, not drawn).
    metric : str, default="score"
        The refit metric, for the axis label.
    sampler : str, default=""
        The sampler's name for the title, e.g. ``"TPESampler"``.
    batch : int, default=1
        Trials per round: with more than one, thin lines separate the rounds.
    selected : int or None, default=None
        The trial the search selected, starred. None: the first best mean (the
        best trial of a study of one objective).
    how : str, default=""
        How that trial was selected, for the legend, where not by its mean.

    Attributes
    ----------
    values : ndarray of shape (n_trials,)
    figure_, ax_, axes_
        Set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from parcv.report import SamplerTrialsDisplay
    >>> display = SamplerTrialsDisplay([0.8, 0.7, 0.85]).plot()
    >>> display.ax_.lines[0].get_ydata().tolist()  # the best so far
    [0.8, 0.8, 0.85]
    >>> plt.close(display.figure_)
    """

    def __init__(
        self,
        values: Any,
        *,
        metric: str = "score",
        sampler: str = "",
        batch: int = 1,
        selected: int | None = None,
        how: str = "",
    ) -> None:
        self.values = np.asarray(values, dtype=float)
        self.metric, self.sampler, self.batch = metric, sampler, batch
        self.selected, self.how = selected, how

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        return (6.4, 4.0)

    @classmethod
    def from_result(
        cls, result: Any, *, metric: str | None = None, ax: Any = None
    ) -> SamplerTrialsDisplay:
        """Plot the trials of a sampler's search (a nested run's: its search on all data).

        The star marks the trial the search selected (``best_index_``'s): with
        several objectives, the trial of the Pareto front it shipped; with a
        pruner, each trial is one point, its value if it completed.

        Parameters
        ----------
        result : SearchResult or NestedResult
            Of a search with ``strategy=parcv.Sampler(...)``.
        metric : str, default=None
            Defaults to the refit metric.
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        SamplerTrialsDisplay

        Raises
        ------
        TypeError
            ``result`` is no sampler's search.
        """
        search = _sampler_search(result, cls.__name__)
        return cls(**_trial_table(search, metric).trials_plot()).plot(ax=ax)

    def _draw(self, axes: list[Any]) -> None:
        _draw_sampler_trials(axes[0], self)


class ParamImportanceDisplay(_Display):
    """Each parameter's share of the variance of the mean test score: ``param_importance.png``.

    Parameters
    ----------
    importances : dict of str to float
        Each parameter's share, in the order drawn (top first).
    n_scored : int
        The scored trials the shares come from (for the title).
    method : str
        How the shares were found, e.g. ``"Optuna's fANOVA"`` (for the title).
    metric : str, default="score"

    Attributes
    ----------
    importances : dict of str to float
    figure_, ax_, axes_
        Set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from parcv.report import ParamImportanceDisplay
    >>> display = ParamImportanceDisplay({"C": 0.75, "gamma": 0.25}, n_scored=20,
    ...                                  method="Optuna's fANOVA").plot()
    >>> [float(bar.get_width()) for bar in display.ax_.patches]
    [0.75, 0.25]
    >>> plt.close(display.figure_)
    """

    def __init__(
        self, importances: dict[str, float], *, n_scored: int, method: str, metric: str = "score"
    ) -> None:
        self.importances = dict(importances)
        self.n_scored, self.method, self.metric = n_scored, method, metric

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        return (6.4, max(2.4, 1.2 + 0.45 * len(self.importances)))

    @classmethod
    def from_trials(
        cls,
        params: Any,
        values: Any,
        *,
        space: Any,
        metric: str = "score",
        seed: int = 0,
        max_depth: int = 8,
    ) -> ParamImportanceDisplay | None:
        """The display of trials' importances as :func:`param_importances` finds them, unplotted.

        None when there is nothing to explain (see :func:`param_importances`).
        """
        found = _importances(params, values, space=space, seed=seed, max_depth=max_depth)
        if found is None:
            return None
        importances, n_scored, method = found
        return cls(importances, n_scored=n_scored, method=method, metric=metric)

    @classmethod
    def from_result(
        cls,
        result: Any,
        *,
        metric: str | None = None,
        seed: int = 0,
        max_depth: int = 8,
        ax: Any = None,
    ) -> ParamImportanceDisplay:
        """Plot the parameter importances of a sampler's search, by Optuna's fANOVA.

        Each parameter's space is read from the values its trials took, as the report
        does (the store keeps the trials, not the space).

        Parameters
        ----------
        result : SearchResult or NestedResult
            Of a search with ``strategy=parcv.Sampler(...)``.
        metric : str, default=None
            Defaults to the refit metric.
        seed, max_depth : int, default=0, 8
            Of the fANOVA evaluator, as for :func:`param_importances`.
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        ParamImportanceDisplay

        Raises
        ------
        TypeError
            ``result`` is no sampler's search.
        ValueError
            Fewer than two scored trials, equal scores, or no parameter that varies.
        ImportError
            Optuna is not installed.
        """
        search = _sampler_search(result, cls.__name__)
        table = _trial_table(search, metric)
        display = cls.from_trials(table.params, table.values, space=_trial_space(table.params),
                                  metric=table.metric, seed=seed, max_depth=max_depth)  # fmt: skip
        if display is None:
            raise ValueError(
                "no parameter importance to draw: it needs two or more scored trials with "
                "different scores and a parameter that varies."
            )
        return display.plot(ax=ax)

    def _draw(self, axes: list[Any]) -> None:
        _draw_param_importances(axes[0], self.importances, self.n_scored, self.method,
                                self.metric)  # fmt: skip


class ParetoFrontDisplay(_Display):
    """A search of several objectives: its Pareto front, each mean ± se: ``pareto_front.png``.

    Every complete trial is a grey dot at its objectives' CV means; the front's
    trials (no other is better on every objective) are joined and carry error
    bars of one standard error over the folds on both axes; the shipped trial is
    starred. The first objective is on the y axis, each other one on the x axis
    of a panel of its own. For a nested CV (its search on all data), crosses
    mark each outer fold's chosen trial at its outer scores
    (:func:`~parcv.strategies.pareto.outer_objectives`): the estimate of the
    whole procedure, per objective.

    Parameters
    ----------
    front : ParetoFront
        See :func:`parcv.pareto_front`.
    trials : array-like of shape (n_trials, n_objectives) or None, default=None
        Every trial's means (NaN rows, failed trials, are left out).
    outer : dict of str to ndarray or None, default=None
        Each objective's outer score per outer fold, drawn as crosses.

    Attributes
    ----------
    front : ParetoFront
    figure_, ax_, axes_
        Set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from parcv.report import ParetoFrontDisplay
    >>> from parcv.strategies.pareto import ParetoFront
    >>> front = ParetoFront(("r2", "fit_time"), ("maximize", "minimize"), (0, 2),
    ...                     ({"alpha": 0.1}, {"alpha": 10.0}), np.array([[0.9, 0.3], [0.7, 0.1]]),
    ...                     np.array([[0.02, 0.01], [0.03, 0.01]]), selected=0)
    >>> display = ParetoFrontDisplay(front).plot()
    >>> display.ax_.get_xlabel(), display.ax_.get_ylabel()
    ('mean fit_time (minimize)', 'mean test r2 (maximize)')
    >>> plt.close(display.figure_)
    """

    def __init__(self, front: ParetoFront, *, trials: Any = None, outer: Any = None) -> None:
        self.front = front
        self.trials = None if trials is None else np.asarray(trials, dtype=float)
        self.outer = None if outer is None else {k: np.asarray(v, dtype=float)
                                                 for k, v in dict(outer).items()}  # fmt: skip

    @property
    def n_panels(self) -> int:
        """One panel per objective after the first, up to :data:`MAX_PANELS`."""
        return min(len(self.front.objectives) - 1, MAX_PANELS)

    @property
    def figsize(self) -> tuple[float, float]:
        """Width and height in inches of the report's figure."""
        return (max(6.4, 4.2 * self.n_panels), 4.4)

    def _empty(self) -> str:
        if not len(self.front):
            return "no Pareto front to draw: every trial failed."
        return ""

    @classmethod
    def from_result_unplotted(cls, result: Any) -> ParetoFrontDisplay:
        """The display of a result's front and trials (and a nested CV's outer scores)."""
        search = _sampler_search(result, cls.__name__)
        front = pareto_front(search)
        cv = search.cv_results_
        trials = np.column_stack([_objective_means(cv, n) for n in front.objectives])
        outer = outer_objectives(result) if hasattr(result, "outer_scores") else None
        return cls(front, trials=trials, outer=outer)

    @classmethod
    def from_result(cls, result: Any, *, ax: Any = None) -> ParetoFrontDisplay:
        """Plot the Pareto front of a search of several objectives (a nested run's: on all data).

        Parameters
        ----------
        result : SearchResult or NestedResult
            Of a search with ``strategy=parcv.Sampler(..., objectives=...)``.
        ax : matplotlib Axes, array-like of Axes or None, default=None

        Returns
        -------
        ParetoFrontDisplay

        Raises
        ------
        TypeError
            ``result`` is no sampler's search.
        ValueError
            The sampler searched one objective, or every trial failed.
        """
        return cls.from_result_unplotted(result).plot(ax=ax)

    def _draw(self, axes: list[Any]) -> None:
        for j, ax in enumerate(axes, start=1):
            _draw_pareto_front(ax, self.front, j, self.trials, self.outer)


def _objective_means(cv: dict[str, Any], name: str) -> Any:
    key = f"mean_{name}" if name in ("fit_time", "score_time") else f"mean_test_{name}"
    return np.asarray(cv[key], dtype=float)


def _draw_pareto_front(
    ax: Any, front: ParetoFront, x: int, trials: Any, outer: dict[str, Any] | None
) -> None:
    """Draw objective ``x`` against the first of :class:`ParetoFrontDisplay` on ``ax``."""
    names, directions = front.objectives, front.directions
    if trials is not None:
        ok = ~np.isnan(trials).any(axis=1)
        ax.plot(trials[ok, x], trials[ok, 0], "o", color="tab:gray", alpha=0.5, markersize=4,
                label=f"trial ({int(ok.sum())} complete)")  # fmt: skip
    # The edge of what the front dominates, on these two objectives: a staircase (with more
    # objectives, front trials off it are better on another one).
    order = np.argsort(front.means[:, x], kind="stable")
    pair = nondominated(front.means[:, [0, x]], [directions[0], directions[x]])
    ax.step(front.means[order, x][pair[order]], front.means[order, 0][pair[order]],
            where="pre" if directions[x] == "maximize" else "post", color="C0", alpha=0.5,
            linewidth=1.0)  # fmt: skip
    ax.errorbar(front.means[:, x], front.means[:, 0], xerr=front.ses[:, x],
                yerr=front.ses[:, 0], fmt="o", color="C0", capsize=3, markersize=5,
                label=f"Pareto front ({len(front)}), mean ± se")  # fmt: skip
    if front.selected is not None:
        s = front.selected
        ax.plot(front.means[s, x], front.means[s, 0], "*", color="gold", markeredgecolor="black",
                markersize=15, zorder=5, label=f"selected: trial {front.trials[s]}")  # fmt: skip
    if outer is not None and names[0] in outer and names[x] in outer:
        ax.plot(outer[names[x]], outer[names[0]], "x", color="black", markersize=7,
                label="outer folds' choices, outer scores")  # fmt: skip
    ax.set_xlabel(f"{_objective_label(names[x])} ({directions[x]})")
    ax.set_ylabel(f"{_objective_label(names[0])} ({directions[0]})")
    ax.set_title(f"Pareto front: {names[0]} against {names[x]}", fontsize=TITLE_SIZE)
    ax.grid(alpha=0.3)
    _legend(ax, loc="best")


def _objective_label(name: str) -> str:
    return f"mean {name}" if name in ("fit_time", "score_time") else f"mean test {name}"


DISPLAYS = (
    ValidationCurveDisplay,
    PairedDifferencesDisplay,
    SelectionFrequencyDisplay,
    FoldScoresDisplay,
    HalvingRungsDisplay,
    SamplerTrialsDisplay,
    ParamImportanceDisplay,
    ParetoFrontDisplay,
)
