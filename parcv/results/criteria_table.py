"""Criteria next to CV: per candidate, CV mean ± se and each criterion; who selects what."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.plan.build import Plan
from parcv.plan.kinds import Key
from parcv.plan.records import Record
from parcv.results.aggregate import fit_ok, fold_scores
from parcv.results.summary import rank_means, select_one_se, summarize_scores

__all__ = [
    "CriteriaRow",
    "CriteriaTable",
    "build_criteria_table",
    "criteria_choices",
    "method_title",
]

# Larger is better for the evidence (a log marginal likelihood); smaller for the rest.
_LARGER_IS_BETTER = ("evidence",)
_TITLES = {
    "cv": "CV best",
    "one_se": "one-SE",
    "aic": "AIC",
    "bic": "BIC",
    "cp": "Cp",
    "vc": "VC bound",
    "evidence": "evidence",
}


@dataclass(frozen=True, slots=True)
class CriteriaRow:
    """One candidate: its CV estimate and its criteria (NaN where undefined or failed).

    Examples
    --------
    >>> CriteriaRow(0, "degree=1", -0.5, 0.1, {"bic": 12.0}).to_dict()["bic"]
    12.0
    """

    candidate: int
    label: str
    mean: float
    se: float
    values: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {"candidate": self.candidate, "label": self.label, "mean": self.mean,
                "se": self.se, **self.values}  # fmt: skip


@dataclass(frozen=True, slots=True)
class CriteriaTable:
    """CV score ± standard error next to each criterion, and each method's choice.

    Attributes
    ----------
    metric : str
        The CV metric (greater is better).
    criteria : tuple of str
        Criteria computed (``"evidence"`` is the log evidence: larger is better).
    rows : tuple of CriteriaRow
        One per candidate, in candidate order.
    selected : dict of str to int
        Candidate chosen by each method: ``"cv"`` (best CV mean), ``"one_se"``
        (simplest within one standard error; complexity = the selection's, or
        the number of parameters), and each criterion.

    Examples
    --------
    >>> import parcv
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.linspace(-1.0, 1.0, 30).reshape(-1, 1)
    >>> y = X[:, 0] ** 2 + np.sin(7.0 * X[:, 0]) / 10.0
    >>> r = parcv.search(LinearRegression(), {"fit_intercept": [False, True]}, X, y, cv=3,
    ...                  criteria=["bic"], backend="serial")
    >>> r.criteria_table.label_of("bic")
    'fit_intercept=True'
    """

    metric: str
    criteria: tuple[str, ...]
    rows: tuple[CriteriaRow, ...]
    selected: dict[str, int]

    def label_of(self, method: str) -> str:
        """Label of the candidate a method selects."""
        return self.rows[self.selected[method]].label

    def to_text(self) -> str:
        """A fixed-width table, then one line naming each method's choice."""
        names = [c for c in self.criteria] + (["n_params"] if "n_params" not in self.criteria
                                                else [])  # fmt: skip
        width = max(len(r.label) for r in self.rows)
        header = f"{'candidate':<{width}}  {'CV ' + self.metric + ' (mean ± se)':>28}"
        header += "".join(f"  {_column(n):>12}" for n in names)
        lines = [header]
        for row in self.rows:
            cv = f"{row.mean:.6g} ± {row.se:.3g}"
            cells = "".join(f"  {_cell(row.values.get(n, math.nan)):>12}" for n in names)
            lines.append(f"{row.label:<{width}}  {cv:>28}{cells}")
        chosen = "; ".join(f"{method_title(m)}: {self.label_of(m)}" for m in self.selected)
        return "\n".join([*lines, "", f"selected by {chosen}"])

    def to_markdown(self) -> str:
        """A Markdown table: per candidate the CV mean ± se, each criterion, who selects it.

        Examples
        --------
        >>> rows = (CriteriaRow(0, "d=1", -0.9, 0.1, {"bic": 20.0, "n_params": 2.0}),
        ...         CriteriaRow(1, "d=3", -0.2, 0.05, {"bic": 12.0, "n_params": 4.0}))
        >>> table = CriteriaTable("score", ("bic",), rows, {"cv": 1, "bic": 1})
        >>> print(table.to_markdown())
        | candidate | CV score mean | ± se | BIC | n_params | selected by |
        | --- | ---: | ---: | ---: | ---: | --- |
        | d=1 | -0.9 | 0.1 | 20 | 2 |  |
        | d=3 | -0.2 | 0.05 | 12 | 4 | CV best, BIC |
        """
        names = [*self.criteria, "n_params"]
        picked: dict[int, list[str]] = {}
        for method, c in self.selected.items():
            picked.setdefault(c, []).append(method_title(method))
        titles = ["log evidence" if n == "evidence" else method_title(n) for n in names]
        lines = [
            f"| candidate | CV {self.metric} mean | ± se | {' | '.join(titles)} | selected by |",
            "| --- | ---: | ---: | " + "---: | " * len(names) + "--- |",
        ]
        for row in self.rows:
            cells = " | ".join(_cell(row.values.get(n, math.nan)) for n in names)
            se = f"{row.se:.3g}" if math.isfinite(row.se) else "n/a"
            chosen = ", ".join(picked.get(row.candidate, []))
            lines.append(f"| {row.label} | {_cell(row.mean)} | {se} | {cells} | {chosen} |")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view: rows and, per method, the selected index and label."""
        return {
            "metric": self.metric,
            "criteria": list(self.criteria),
            "rows": [r.to_dict() for r in self.rows],
            "selected": {
                m: {"candidate": c, "label": self.rows[c].label} for m, c in self.selected.items()
            },
        }


def method_title(method: str) -> str:
    """Return the display name of a selection method (``"bic"`` -> ``"BIC"``).

    Examples
    --------
    >>> method_title("one_se"), method_title("evidence")
    ('one-SE', 'evidence')
    """
    return _TITLES.get(method, method)


def _column(name: str) -> str:
    return "log evidence" if name == "evidence" else name


def _cell(value: float) -> str:
    return "nan" if not math.isfinite(value) else f"{value:.6g}"


def _criteria_values(
    plan: Plan, records: Mapping[Key, Record], outer: int | None, name: str
) -> NDArray[np.float64]:
    values = [records.get(("criteria", outer, c.index)) for c in plan.candidates]
    return np.array([math.nan if r is None or not r.ok else r.test_scores.get(name, math.nan)
                     for r in values])  # fmt: skip


def _pick(values: NDArray[np.float64], larger_is_better: bool) -> int | None:
    if np.isnan(values).all():
        return None
    return int(np.argmin(rank_means(values if larger_is_better else -values)))


def _one_se(plan: Plan, scores: NDArray[np.float64], n_params: NDArray[np.float64]) -> int | None:
    if np.isnan(np.average(scores, axis=1)).all():
        return None
    if plan.selection.rule == "one_se":
        params = [c.params for c in plan.candidates]
        try:
            return select_one_se(scores, lambda c: plan.selection.complexity_of(params[c]))
        except ValueError:
            pass  # a plan loaded from a store keeps a callable complexity only as its name
    if np.isnan(n_params).any():
        return None  # no complexity to rank candidates by
    return select_one_se(scores, lambda c: float(n_params[c]))


def criteria_choices(
    plan: Plan, records: Mapping[Key, Record], outer: int | None
) -> dict[str, int]:
    """Return the candidate each method selects on one outer fold (``None``: all data).

    ``"cv"`` is the best CV mean (ties: first), ``"one_se"`` the one-standard-error
    rule; failed fits never count. Methods that cannot choose (every value NaN,
    no complexity for one-SE) are left out.

    Parameters
    ----------
    plan : Plan
    records : mapping of key to Record
    outer : int or None

    Returns
    -------
    dict of str to int

    See Also
    --------
    build_criteria_table : The same choices, with the values they come from.
    """
    scores = fold_scores(plan, records, outer, plan.scoring.refit)
    scores[~fit_ok(plan, records, outer).all(axis=1)] = np.nan
    n_params = _criteria_values(plan, records, outer, "n_params")
    chosen: dict[str, int | None] = {
        "cv": _pick(np.average(scores, axis=1), larger_is_better=True),
        "one_se": _one_se(plan, scores, n_params),
    }
    for name in plan.criteria.names if plan.criteria is not None else ():
        chosen[name] = _pick(_criteria_values(plan, records, outer, name),
                             name in _LARGER_IS_BETTER)  # fmt: skip
    return {m: c for m, c in chosen.items() if c is not None}


def build_criteria_table(
    plan: Plan, records: Mapping[Key, Record], outer: int | None
) -> CriteriaTable | None:
    """Build the criteria table of one outer fold (``None``: all data), or None without criteria.

    Parameters
    ----------
    plan : Plan
    records : mapping of key to Record
    outer : int or None

    Returns
    -------
    CriteriaTable or None

    See Also
    --------
    CriteriaTable : An example.
    """
    if plan.criteria is None:
        return None
    metric = plan.scoring.refit
    scores = fold_scores(plan, records, outer, metric)
    names = (*plan.criteria.names, "n_params")
    columns = {n: _criteria_values(plan, records, outer, n) for n in names}
    rows = []
    for c in plan.candidates:
        summary = summarize_scores(scores[c.index])
        values = {n: float(columns[n][c.index]) for n in names}
        rows.append(CriteriaRow(c.index, c.label, summary.mean, summary.se, values))
    return CriteriaTable(metric, plan.criteria.names, tuple(rows),
                         criteria_choices(plan, records, outer))  # fmt: skip
