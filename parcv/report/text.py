"""The text of a report: Markdown sections and the one-screen summary of a result."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parcv.plan.kinds import KINDS, Key
from parcv.plan.space import format_params
from parcv.plan.splits import describe_folds
from parcv.results.criteria_table import CriteriaTable, method_title
from parcv.results.labels import readable_criteria, readable_failures
from parcv.results.objects import CVResult, NestedResult, SearchResult, kept_note
from parcv.results.predictions import predicts_labels
from parcv.results.trials import count_trials
from parcv.stats.intervals import CVInterval

__all__ = [
    "RunInfo",
    "mode_of",
    "num",
    "small",
    "render_report",
    "search_of",
    "render_summary",
]


Result = CVResult | SearchResult | NestedResult
MODES = {
    "cross_validate": "k-fold cross-validation of one model",
    "search": "selection by CV on all data and refit of the winner (select and refit); the "
    "winner's CV score is optimistic, use nested CV for an unbiased estimate",
    "holdout": "hold-out test set (train / validation / test): candidates are fitted on the "
    "training split and compared on the validation split; the winner is refitted on training "
    "+ validation and scored once on the test split",
    "nested": "nested CV: the outer folds estimate the whole selection procedure; the "
    "model to ship is selected and refitted on all data (select and refit)",
}


@dataclass(frozen=True)
class RunInfo:
    """What the report says about a run besides its result (kept in ``run.json``).

    Examples
    --------
    >>> RunInfo("demo").title
    'demo'
    """

    title: str
    description: str = ""
    mode: str = ""
    data: str = ""
    estimator: str = ""
    backend: str = ""
    seed: int | None = None
    param: str | None = None
    metric: str | None = None
    plots: bool = True
    cv_results: bool = False
    started: str = ""
    finished: str = ""
    seconds: float | None = None
    versions: dict[str, str] = field(default_factory=dict)
    # The folder of the spec a run came from: its own modules are imported from there.
    spec_folder: str = ""

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RunInfo:
        """Rebuild from :meth:`to_dict` output, ignoring unknown keys."""
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in values.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return asdict(self)


# At most this many folds, the best-vs-rest tests are said to have little power.
LOW_POWER_FOLDS = 5


def is_tie(difference: float, scale: float = 1.0) -> bool:
    """Whether a difference of mean scores is rounding noise (``-3.7e-17``): a tie.

    Scores are means of float sums, exact to about 1e-12 of their size; a
    difference below that is not a difference between candidates.

    Examples
    --------
    >>> is_tie(-3.700743415417188e-17), is_tie(1e-4)
    (True, False)
    """
    return math.isfinite(difference) and abs(difference) <= 1e-12 * max(1.0, abs(scale))


def num(value: float) -> str:
    """Format a score for reports: 6 significant digits (``nan`` when undefined)."""
    return "nan" if not math.isfinite(value) else f"{value:.6g}"


def small(value: float) -> str:
    """Format a standard error: 3 significant digits (``n/a`` for one fold)."""
    return "n/a" if not math.isfinite(value) else f"{value:.3g}"


def search_of(result: Result) -> SearchResult | None:
    """The all-data search of a result (the search itself, or a nested run's final)."""
    if isinstance(result, SearchResult):
        return result
    return result.final if isinstance(result, NestedResult) else None


def mode_of(result: Result) -> str:
    """The mode of a run, as a spec names it (a key of ``MODES``), from its result.

    A store written from Python has no spec to say it: its report reads the
    mode from the result, as ``parcv run`` of the same spec writes it.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    >>> mode_of(parcv.cross_validate(Ridge(), X, y, cv=3, backend="serial"))
    'cross_validate'
    """
    if isinstance(result, CVResult):
        return "cross_validate"
    if isinstance(result, SearchResult):
        return "search"
    one_split = not any(k.startswith("split1_") for k in result.inner_cv_results[0])
    return "holdout" if len(result.chosen) == 1 and one_split else "nested"


def _mode(result: Result, info: RunInfo) -> str:
    """The run's mode: as its spec said, or else as its result tells."""
    return info.mode or mode_of(result)


def _names(result: Result) -> dict[str, str]:
    """Each candidate's label to its readable label (floats rounded, candidates told apart)."""
    return {} if isinstance(result, CVResult) else result.readable_labels


def headline(result: Result) -> tuple[str, str]:
    """The estimate ± se of the refit metric in words, and which interval it is.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=30, n_features=2, noise=1.0, random_state=0)
    >>> r = parcv.cross_validate(Ridge(), X, y, cv=3, backend="serial")
    >>> headline(r)[1].split(";")[0]
    'mean ± one standard error of the mean over 3 folds (se = std / sqrt(3))'
    """
    if isinstance(result, NestedResult):
        metric = result.refit_metric
        est, where = result.estimate[metric], "outer test folds of nested CV"
    elif isinstance(result, CVResult):
        metric = next(iter(result.summaries))
        est, where = result.summaries[metric], "folds"
    else:
        metric = result.refit_metric
        est = result.summaries[metric][result.best_index_]
        where = "CV folds (optimistic: the candidate was selected on them)"
    if est.n == 1 or not math.isfinite(est.se):
        return f"{metric}: {num(est.mean)}", "score on one held-out test split (no standard error)"
    return (
        f"{metric}: {num(est.mean)} ± {small(est.se)}",
        f"mean ± one standard error of the mean over {est.n} {where} "
        f"(se = std / sqrt({est.n})); not a confidence interval",
    )


def _estimate(result: Result) -> list[str]:
    if isinstance(result, NestedResult) and len(result.chosen) == 1:
        rows, head = (
            result.estimate,
            (
                "Performance of the whole selection procedure: score on the held-out test split "
                "(one split, so no standard error)."
            ),
        )
    elif isinstance(result, NestedResult):
        rows, head = (
            result.estimate,
            (
                f"Performance of the whole selection procedure: mean ± se of the scores of "
                f"{len(result.chosen)} outer test folds."
            ),
        )
    elif isinstance(result, CVResult):
        rows, head = result.summaries, "Mean ± se of the fold scores."
    else:
        rows = {m: result.summaries[m][result.best_index_] for m in result.metrics}
        head = "CV score of the selected candidate (optimistic: it was selected on these folds)."
    lines = [
        "## Estimate",
        "",
        *(_intervals(result) if isinstance(result, (CVResult, NestedResult)) else []),
        head,
        "",
    ]
    if all(s.n == 1 for s in rows.values()):  # one split: a score, no spread to show
        lines += ["| metric | score |", "| --- | ---: |"]
        lines += [f"| {m} | {num(s.mean)} |" for m, s in rows.items()]
    else:
        lines += ["| metric | mean | ± se | std | folds |", "| --- | ---: | ---: | ---: | ---: |"]
        lines += [
            f"| {m} | {num(s.mean)} | {small(s.se)} | {small(s.std)} | {s.n} |"
            for m, s in rows.items()
        ]
    lines += _bbc_lines(result)
    if any(m.startswith("neg_") for m in rows):
        lines += [
            "",
            "`neg_*` metrics are negated errors (greater is better): negate them to "
            "read the error.",
        ]
    return [*lines, ""]


def _bbc_lines(result: Result) -> list[str]:
    """BBC-CV of the selected candidate's error beside its optimistic raw CV error."""
    search = result.final if isinstance(result, NestedResult) else result
    if not isinstance(search, SearchResult) or search.bbc is None:
        return []
    bbc, raw = search.bbc, search.bbc.details["raw"]
    where = " (selection on all data)" if isinstance(result, NestedResult) else ""
    return [
        "",
        f"Error of the selected candidate{where}: raw CV {num(raw)} (optimistic: it won on "
        f"those folds); BBC-CV {num(bbc.estimate)}, {bbc.confidence:.0%} interval "
        f"[{num(bbc.lower)}, {num(bbc.upper)}] (bootstrap bias-corrected CV, Tsamardinos et "
        "al. 2018; no extra fits).",
    ]


def _intervals(result: CVResult | NestedResult) -> list[str]:
    """The interval of the error first, the usual one beside it, and which is which."""
    naive, found = result.naive_interval, result.interval
    if naive is None:
        return []
    level = f"{naive.confidence:.0%}"
    nested = isinstance(result, NestedResult)
    folds = "outer fold" if nested else "fold"
    rows = ["| interval | error | lower | upper |", "| --- | ---: | ---: | ---: |"]
    if found is not None:
        name = _INTERVAL_NAMES.get(found.method, found.method)
        rows.append(f"| {name}, {level} | {num(found.estimate)} | {num(found.lower)} | "
                    f"{num(found.upper)} |")  # fmt: skip
        why = _interval_why(found, nested)
    else:
        why = result.interval_note.capitalize() + "."
    rows.append(f"| usual: mean ± z se of the {folds} losses, {level} | {num(naive.estimate)} | "
                f"{num(naive.lower)} | {num(naive.upper)} |")  # fmt: skip
    tail = (f"The usual interval treats the {folds}s as independent and can cover far less "
            "often than its nominal level.")  # fmt: skip
    whose = "the selection procedure (select by inner CV, refit)" if nested else "the model"
    return [f"Error of {whose} (loss scale, {level} intervals):", "", *rows, "", why, tail, ""]


_INTERVAL_NAMES = {
    "ncv": "nested CV (Bates, Hastie & Tibshirani)",
    "bbc": "BBC-CV of the selection on all data (Tsamardinos et al.)",
}


def _interval_why(found: CVInterval, nested: bool) -> str:
    """What the interval of a CV or a nested CV estimates, and what it cost."""
    if found.method == "bbc":
        return (
            "BBC-CV bootstraps the all-data search's out-of-fold losses (no extra fits); it "
            "estimates the error of the candidate selected there."
        )
    reps = int(found.details.get("n_repetitions", 0))
    if nested:
        selections = int(found.details.get("n_selections", 0))
        return (
            "The nested CV interval estimates how far this estimate can be from the error of "
            "the model that selecting and refitting on these data gives, from "
            f"{selections} more selections ({found.n_fits} fits; {reps} random fold "
            "assignments); it is bias-corrected and keeps roughly its nominal coverage."
        )
    return (
        f"The nested CV interval estimates how far this CV estimate can be from the error "
        f"of the model fitted on these data, from {found.n_fits} more fits ({reps} random "
        "fold assignments); it is bias-corrected and keeps roughly its nominal coverage."
    )


def _where(search: SearchResult) -> tuple[str, list[str]] | None:
    """The column that says where a row was scored, for a search in rounds (None: one round).

    A candidate appears once per rung it reached (halving), per bracket
    (Hyperband) or per round: the column tells the rows apart.
    """
    results = search.cv_results_
    if "iter" in results and "n_resources" in results:
        brackets = results.get("bracket")
        cells = [
            ("" if brackets is None else f"bracket {brackets[r]}, ")
            + f"rung {results['iter'][r]} ({results['n_resources'][r]})"
            for r in range(len(search.candidates))
        ]
        return "scored in (resource)", cells
    if "round" in results:
        return "round", [str(r) for r in results["round"]]
    return None


def _ranking(search: SearchResult, rest: str, names: dict[str, str], limit: int = 15) -> list[str]:
    metric = search.refit_metric
    suffix = metric if search.multimetric else "score"
    ranks = search.cv_results_[f"rank_test_{suffix}"]
    order = sorted(range(len(search.candidates)), key=lambda c: (ranks[c], c))
    one = search.n_splits_ == 1  # one validation split: a score per candidate, no se
    where = _where(search)
    head = f"| rank | {metric} |" if one else f"| rank | {metric} mean | ± se |"
    head += "" if where is None else f" {where[0]} |"
    lines = [f"{head} candidate |", "| ---: | ---: |" + ("" if one else " ---: |")
             + ("" if where is None else " --- |") + " --- |"]  # fmt: skip
    for c in order[:limit]:
        s = search.summaries[metric][c]
        mark = " **(selected)**" if c == search.best_index_ else ""
        score = num(s.mean) if one else f"{num(s.mean)} | {small(s.se)}"
        at = "" if where is None else f" {where[1][c]} |"
        lines.append(f"| {ranks[c]} | {score} |{at} {names[search.candidates[c].label]}{mark} |")
    if len(order) > limit:
        gap = "| | |" if one else "| | | |"
        gap += "" if where is None else " |"
        lines.append(f"{gap} ... {len(order) - limit} more {rest} |")
    return lines


def _selection(result: Result, rest: str) -> list[str]:
    if isinstance(result, CVResult):
        return []
    lines = ["## Selection", ""]
    names = _names(result)
    if isinstance(result, NestedResult):
        scores = result.outer_scores[result.refit_metric]
        labels = {c: names[label] for c, label in result.stability_labels.items()}
        lines += [
            "Candidate selected by the inner CV of each outer fold, and its outer test "
            f"score ({result.refit_metric}):",
            "",
            "| outer fold | score | selected |",
            "| ---: | ---: | --- |",
        ]
        lines += [f"| {o} | {num(scores[o])} | {labels[c]} |" for o, c in enumerate(result.chosen)]
        lines.append("")
    search = search_of(result)
    if search is not None:
        s = search.summaries[search.refit_metric][search.best_index_]
        # From the folds themselves: RepeatedKFold(5, n_repeats=2) is "5-fold CV repeated 2 times".
        how = describe_folds(search.splits) if search.splits else f"{search.n_splits_} splits"
        lines += [
            f"Model to ship: **{names[search.candidates[search.best_index_].label]}**, selected "
            f"by {how} on all data ({search.refit_metric} "
            f"{num(s.mean)}{'' if s.n == 1 else f' ± {small(s.se)}'}) and refitted on all data.",
            "",
        ]
        lines += [*_ranking(search, rest, names), ""]
    return lines


def _stability(result: Result) -> list[str]:
    if not isinstance(result, NestedResult):
        return []
    n = len(result.chosen)
    lines = [
        "## Selection stability over outer folds",
        "",
        "| candidate | selected | frequency | outer folds |",
        "| --- | ---: | ---: | --- |",
    ]
    names = result.readable_labels
    lines += [
        f"| {names[r.label]} | {r.count}/{n} | {r.frequency:.0%} | {', '.join(map(str, r.folds))} |"
        for r in result.stability
    ]
    return [*lines, ""]


def _significance(result: Result, limit: int = 15) -> list[str]:
    search = search_of(result)
    if search is None:
        return []
    table = search.comparison_columns()
    left_out = table.get("left_out")
    lines = [
        "## Significance: best vs rest",
        "",
        f"Best-mean candidate against every other on the same {search.n_splits_} fold(s): "
        "corrected resampled t-test (Nadeau & Bengio 2003), p-values Holm-adjusted."
        + (f" {left_out}" if left_out else ""),
        "",
    ]
    if search.n_splits_ < 2:
        return [
            *lines[:2],
            "One validation split: no test can compare candidates (a paired test needs "
            "several folds). Use k-fold CV to test their differences.",
            "",
        ]
    if search.n_splits_ <= LOW_POWER_FOLDS:
        lines += [
            f"With {search.n_splits_} folds these tests have little power: a real difference "
            "often gets p > 0.05, so 'no' here is weak evidence of no difference. More folds "
            "(a larger k, or repeated k-fold in [cv]) make them sharper.",
            "",
        ]
    if "columns" not in table:
        return [*lines, table.get("note", ""), ""]
    return [*lines, *_best_vs_rest_rows(table, _names(result), limit), ""]


def _best_vs_rest_rows(table: dict[str, Any], names: dict[str, str], limit: int) -> list[str]:
    """The table of the best against the others (``comparison_columns()``), readable names:
    at most ``limit`` rows, the closest competitors."""
    columns = table["columns"]
    n_rows = len(columns["name_b"])
    order: Iterable[int] = range(n_rows)
    if n_rows > limit:  # the closest competitors: the rest is in results.json
        order = sorted(order, key=columns["mean_difference"].__getitem__)[:limit]
    shown = [_row(columns, i) for i in order]
    # The best is named once: its label (a model family's can be long) on every row would
    # push the numbers off the page.
    lines = [
        f"Best: {names.get(table['best'], table['best'])}. Each row tests it against "
        "another candidate "
        "(mean diff: best minus other).",
        "",
        "| other | mean diff | 95% CI | t | p | p (Holm) | reject |",
        "| --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in shown:
        stat = "-" if r["statistic"] is None else f"{r['statistic']:.3g}"
        p = "-" if r["p_value"] is None else f"{r['p_value']:.3g}"
        holm = "-" if r["p_holm"] is None else f"{r['p_holm']:.3g}"
        diff = "0 (tied)" if is_tie(r["mean_difference"]) else num(r["mean_difference"])
        lines.append(
            f"| {names.get(r['name_b'], r['name_b'])} | {diff} | "
            f"[{num(r['ci_low'])}, {num(r['ci_high'])}] | {stat} | {p} | {holm} | "
            f"{_verdict(r)} |"
        )
    if n_rows > limit:
        lines.append(
            f"| | | | | | | ... {n_rows - limit} more (farther from the best) in results.json |"
        )
    return lines


def _row(columns: dict[str, list[Any]], i: int) -> dict[str, Any]:
    """Row ``i`` of a best-vs-rest table's columns (``comparison_columns()``): made only for
    the rows a text shows, where a dict per row of 220,000 took 200 MB."""
    return {name: values[i] for name, values in columns.items()}


def _labels(result: Result) -> list[str]:
    """Label of every candidate (also for a nested run without an all-data search)."""
    search = search_of(result)
    names = _names(result)
    if search is not None:
        return [names[c.label] for c in search.candidates]
    params = result.inner_cv_results[0]["params"] if isinstance(result, NestedResult) else []
    return [names[format_params(p)] for p in params]


def _criteria_values(
    table: CriteriaTable, search: SearchResult, names: dict[str, str]
) -> list[str]:
    return [
        f"Per candidate: its CV {table.metric} on all data (mean ± se over "
        f"{search.n_splits_} folds) next to each criterion of its fit on all data "
        "(AIC, BIC, Cp, VC bound: smaller is better; log evidence: larger is better).",
        "",
        readable_criteria(table, names).to_markdown(),
        "",
    ]


def _mode_of(choices: list[int | None], labels: list[str]) -> str:
    counts = Counter(c for c in choices if c is not None)
    if not counts:
        return "-"
    (c, n), *rest = counts.most_common()
    tie = ", tied" if rest and rest[0][1] == n else ""
    return f"{labels[c]} ({n}/{len(choices)}{tie})"


def _method_choices(result: Result, table: CriteriaTable | None) -> list[str]:
    labels = _labels(result)
    overall = {} if table is None else dict(table.selected)
    if not isinstance(result, NestedResult):
        lines = ["Candidate selected by each method:", "", "| method | selected |",
                 "| --- | --- |"]  # fmt: skip
        return [*lines, *(f"| {method_title(m)} | {labels[c]} |" for m, c in overall.items()), ""]
    per_fold = dict(result.criteria_choices)
    n = len(result.chosen)
    lines = [
        "Candidate selected by each method on all data and on the training part of each "
        "outer fold. The nested CV row is the procedure the estimate above measures: inner "
        "CV on each outer-training part, and on all data the model to ship.",
        "",
        "| method | all data | "
        + " | ".join(f"outer {o}" for o in range(n))
        + " | most frequent (outer) |",
        "| --- | --- | " + " | ".join("---" for _ in range(n)) + " | --- |",
    ]
    rows = {m: (overall.get(m), per_fold.get(m, [None] * n)) for m in {**overall, **per_fold}}
    final = result.final.best_index_ if result.final is not None else None
    rows["nested CV"] = (final, list(result.chosen))
    for method, (chosen, folds) in rows.items():
        cells = " | ".join("-" if c is None else labels[c] for c in folds)
        whole = "-" if chosen is None else labels[chosen]
        title = "**nested CV**" if method == "nested CV" else method_title(method)
        lines.append(f"| {title} | {whole} | {cells} | {_mode_of(folds, labels)} |")
    return [*lines, ""]


def _criteria(result: Result) -> list[str]:
    """CV next to the criteria per candidate, and which candidate each method selects."""
    if isinstance(result, CVResult):
        return []
    table = result.criteria_table
    if table is None and not getattr(result, "criteria_choices", None):
        return []
    lines = ["## Selection methods side by side", ""]
    search = search_of(result)
    if table is not None and search is not None:
        lines += _criteria_values(table, search, _names(result))
    return [*lines, *_method_choices(result, table)]


def _verdict(row: dict[str, Any]) -> str:
    if row["rejected"] is None:
        return f"n/a ({row.get('note') or 'no p-value'})"
    return "yes" if row["rejected"] else "no"


def _iteration_paths(result: Result) -> list[str]:
    """The iteration parameter scored as a path, and what early stopping left unfitted."""
    search = search_of(result)
    if search is None or search.iterations is None:
        return []
    it = search.iterations
    lines = [
        "## Iteration paths",
        "",
        f"`{it.param}` was scored as a path: one fit per (fold, point of the space), read at "
        f"{len(it.checkpoints)} counts from {it.checkpoints[0]} to {it.up_to}.",
    ]
    stopped = np.asarray(search.cv_results_.get("path_stopped", ()), dtype=bool)
    if it.patience is not None:
        n_paths = sum(bool(stopped[list(p)].any()) for p in search.paths)
        lines += [
            "",
            f"Early stopping (patience {it.patience} counts, tol {it.tol:g}) stopped "
            f"{n_paths} of {len(search.paths)} points; {int(stopped.sum())} of {stopped.size} "
            "(point, count) pairs were never fitted (NaN in `cv_results_`, column "
            "`path_stopped`).",
        ]
    return [*lines, ""]


def _pruned_trials(result: Result) -> list[str]:
    """A sampler with a pruner: its trials by how they ended, per search."""
    counts = count_trials(result)
    if not counts:
        return []
    rows = [f"| {c.where} | {c.n_trials} | {c.n_complete} | {c.n_pruned} | {c.n_failed} |"
            for c in counts]  # fmt: skip
    searches = [*getattr(result, "inner", ()), search_of(result)]
    config = next(s for s in searches if isinstance(s, SearchResult)).strategy or {}
    return [
        "## Pruned trials",
        "",
        f"{config.get('sampler', 'The sampler')} with {config.get('pruner', 'a pruner')}: each "
        "trial reported its mean test score over the folds at each checkpoint of "
        f"`{config.get('resource', {}).get('param', 'the path')}` and stopped when the pruner "
        "said so (`cv_results_` columns `trial`, `trial_state`, `reported`).",
        "",
        "| search | trials | complete | pruned | failed |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def _racing(result: Result) -> list[str]:
    """How many candidates each race dropped, and how many fits racing saved."""
    searches: list[tuple[str, SearchResult | dict[str, Any] | None]] = (
        [] if isinstance(result, CVResult) else [("all data", search_of(result))]
    )
    if isinstance(result, NestedResult):
        searches = [(f"outer fold {o}", r) for o, r in enumerate(result.inner_cv_results)]
        searches += [("all data", result.final)] if result.final is not None else []
    rows = []
    fits: set[Key] | None = None  # made only for a race: 100,000 keys cost a tenth of a second
    total_run = total = 0
    for where, found in searches:
        results = found.cv_results_ if isinstance(found, SearchResult) else found
        if results is None or "race_eliminated_after" not in results:
            continue
        if fits is None:
            fits = {r.key for r in result.records if KINDS[r.unit.kind].selects}
        dropped = np.asarray(results["race_eliminated_after"])
        n_folds = len({m[1] for k in results if (m := re.fullmatch(r"split(\d+)_test_.+", k))})
        outer = None if where == "all data" else int(where.rsplit(" ", 1)[1])
        run = sum(1 for k in fits if k[1] == outer)
        total_run, total = total_run + run, total + dropped.size * n_folds
        rows.append(f"| {where} | {int((dropped >= 0).sum())} of {dropped.size} | "
                    f"{run} of {dropped.size * n_folds} |")  # fmt: skip
    if not rows:
        return []
    head = [
        "## Racing",
        "",
        f"Racing skipped {total - total_run} of {total} fits: a dropped candidate's later "
        "folds were not run (a fold started before the decision is counted as run).",
        "",
        "| search | candidates dropped | fits run |",
        "| --- | --- | --- |",
    ]
    return [*head, *rows, ""]


def _outer_predictions(result: Result) -> list[str]:
    """The outer refits' pooled confusion matrix (classification) or residuals (regression)."""
    if not isinstance(result, NestedResult) or result.outer_predictions is None:
        return []
    try:
        pooled = result.outer_predictions.pooled(0, "predict")
    except ValueError as err:  # an outer refit failed, or predict was not kept
        return ["## Outer-fold predictions", "", f"Not available: {err}", ""]
    if predicts_labels(pooled):
        labels, matrix = result.confusion_matrix()
        lines = [
            "## Pooled confusion matrix",
            "",
            f"Predictions of the selected-and-refitted candidate of each outer fold on its "
            f"outer test rows, pooled over the {len(result.chosen)} outer folds "
            f"({int(matrix.sum())} predictions; rows: true label, columns: predicted).",
            "",
            "| true \\ predicted | " + " | ".join(str(v) for v in labels) + " |",
            "| --- |" + " ---: |" * len(labels),
        ]
        lines += [
            f"| {label} | " + " | ".join(str(int(v)) for v in row) + " |"
            for label, row in zip(labels, matrix, strict=True)
        ]
        return [*lines, ""]
    residuals = np.asarray(pooled.y_true, dtype=np.float64) - pooled.values.astype(np.float64)
    return [
        "## Pooled residuals",
        "",
        f"Residuals (true - predicted) of the selected-and-refitted candidate of each outer "
        f"fold on its outer test rows, pooled over the {len(result.chosen)} outer folds "
        f"({residuals.size} predictions): mean {num(float(residuals.mean()))}, root mean "
        f"square {num(float(np.sqrt(np.mean(residuals**2))))}, mean absolute "
        f"{num(float(np.mean(np.abs(residuals))))}.",
        "",
    ]


def _kept(result: Result) -> list[str]:
    """Units that took stored records of other code (``resume="values"``), named."""
    note = kept_note(getattr(result, "records", ()))
    return ["## Records of other code", "", note, ""] if note else []


def _failures(result: Result) -> list[str]:
    names = _names(result)
    lines = ["## Failures", "", readable_failures(result.failures, names).text]
    for label, counts in result.warning_counts.items():
        lines.append(f"- warnings in {names.get(label, label)}: "
                     + ", ".join(f"{k} x{v}" for k, v in counts.items()))  # fmt: skip
    return [*lines, ""]


def render_report(
    result: Result,
    info: RunInfo,
    plots: list[str] | None = None,
    plot_note: str = "",
    *,
    stored: bool = True,
) -> str:
    """Render the Markdown report of a result.

    Parameters
    ----------
    result : CVResult, SearchResult or NestedResult
    info : RunInfo
    plots : list of str, default=None
        File names of the PNG plots to embed.
    plot_note : str, default=""
        Why plots are missing, if they are.
    stored : bool, default=True
        Whether the report's folder holds the run's ``store.sqlite`` (a run directory),
        which its list of files then names.

    Returns
    -------
    str

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> import parcv
    >>> X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    >>> r = parcv.cross_validate(Ridge(), X, y, cv=3, backend="serial")
    >>> render_report(r, RunInfo("ridge")).splitlines()[0]
    '# ridge'
    """
    lines = [f"# {' '.join(info.title.splitlines())}", ""]
    if info.description:
        lines += [*_as_text(info.description), ""]
    facts = [
        ("mode", MODES.get(_mode(result, info), _mode(result, info))),
        ("data", info.data),
        ("estimator", f"`{info.estimator}`" if info.estimator else ""),
        ("backend", info.backend),
        ("seed", "" if info.seed is None else str(info.seed)),
        ("units", f"{result.failures.n_total} ({result.failures.n_failed} failed)"),
    ]
    lines += ["| | |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in facts if v]
    lines += [
        "",
        *_estimate(result),
        *_selection(result, _where_rest(info)),
        *_stability(result),
        *_outer_predictions(result),
        *_criteria(result),
        *_significance(result),
        *_racing(result),
        *_iteration_paths(result),
        *_pruned_trials(result),
        *_failures(result),
        *_kept(result),
    ]
    if plots or plot_note:
        lines += ["## Plots", ""] + [
            f"![{Path(p).stem.replace('_', ' ')}]({p})" for p in plots or []
        ]
        lines += [plot_note] if plot_note else []
        lines.append("")
    csv_file = ", `cv_results.csv` (one row per candidate)" if info.cv_results else ""
    store = "`store.sqlite` (every record), " if stored else ""
    lines += [f"Files: {store}`results.json` (summaries){csv_file}.", ""]
    return "\n".join(lines)


def _as_text(text: str) -> list[str]:
    """A user's text as Markdown lines that read as text (punctuation first escaped)."""
    # A line that begins with punctuation would be a heading, table, list, quote or image;
    # indentation would make a code block.
    lines = [line.strip() for line in text.splitlines()]
    return [f"\\{line}" if line[:1] in string.punctuation else line for line in lines]


def _where_rest(info: RunInfo) -> str:
    """Where the candidates the ranking leaves out are listed."""
    if info.cv_results:
        return "in cv_results.csv"
    return "in the store: `parcv.load(store).cv_results_`, or `parcv report --cv-results`"


def _failure_lines(failures: Any) -> str:
    """The count of failed fits; with failures, one line per candidate and the first error."""
    head = f"{failures.n_failed} of {failures.n_total} fits failed."
    if not failures.n_failed:
        return head
    lines = [head]
    lines += [f"  {n} failed: candidate {label}" for label, n in failures.by_candidate.items()]
    if failures.first_error:
        lines.append(f"  first error: {failures.first_error}")
    return "\n".join(lines)


def render_summary(result: CVResult | SearchResult | NestedResult, info: RunInfo) -> str:
    """One screen of text: the estimate, the selection, stability and failures."""
    names = _names(result)
    failures = readable_failures(result.failures, names)
    lines = [f"{info.title}: {_mode(result, info)}, {_failure_lines(failures)}"]
    if isinstance(result, NestedResult):
        est = result.estimate[result.refit_metric]
        over = f"mean ± se over {est.n} outer folds" if est.n > 1 else "one test split"
        lines.append(
            f"estimate ({result.refit_metric}): {num(est.mean)} ± {small(est.se)} ({over})"
        )
        lines += [
            f"  selected in {r.count}/{est.n} outer folds: {names[r.label]}"
            for r in result.stability[:5]
        ]
    elif isinstance(result, CVResult):
        lines += [
            f"{m}: {num(s.mean)} ± {small(s.se)} (mean ± se over {s.n} folds)"
            for m, s in result.summaries.items()
        ]
    lines += [c.line() for c in count_trials(result)]
    search = search_of(result)
    if search is not None:
        s = search.summaries[search.refit_metric][search.best_index_]
        lines.append(
            f"model to ship: {names[search.candidates[search.best_index_].label]} "
            f"(CV {search.refit_metric} {num(s.mean)} ± {small(s.se)})"
        )
        if search.criteria_table is not None:
            selected = search.criteria_table.selected
            criteria = readable_criteria(search.criteria_table, names)
            lines.append("selected by " + "; ".join(
                f"{method_title(m)}: {criteria.label_of(m)}" for m in selected
            ))  # fmt: skip
        table = search.comparison_columns()
        if "columns" in table:
            columns = table["columns"]
            difference = columns["mean_difference"]
            scale = abs(s.mean) if math.isfinite(s.mean) else 1.0
            tied = [names.get(b, b) for b, d in zip(columns["name_b"], difference, strict=True)
                    if is_tie(d, scale)]  # fmt: skip
            tested = [i for i, p in enumerate(columns["p_value"]) if p is not None]
            closest = min(tested or range(len(difference)), key=lambda i: abs(difference[i]))
            first = _row(columns, closest)
            holm = first["p_holm"]
            if tied:
                lines.append(f"best is tied with {', '.join(tied)} (equal mean score)")
            else:
                lines.append(
                    f"best vs closest ({names.get(first['name_b'], first['name_b'])}): diff "
                    f"{num(first['mean_difference'])}, p (Holm) "
                    f"{'-' if holm is None else f'{holm:.3g}'}"
                )
    return "\n".join(lines)
