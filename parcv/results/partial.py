"""What an unfinished run already knows: units done, scores so far, what is missing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.plan.build import Plan
from parcv.plan.kinds import KINDS, Key, kind_of
from parcv.plan.records import Record
from parcv.plan.space import format_params
from parcv.results.labels import readable_labels
from parcv.stats.result import import_pandas

__all__ = ["PartialResult", "RoundPart", "make_partial_result", "missing_parts"]

_ESTIMATES = {
    "cross_validate": "the cross-validated score (mean and standard error over every fold)",
    "search": "the selected candidate (best_params_), its score and the final refit on all data",
    "nested_cv": "the nested CV estimate (every outer fold's refit and test score)",
}


def missing_parts(missing: Sequence[Key]) -> list[str]:
    """The missing units, in words: fits, refits of outer folds, the final refit.

    Examples
    --------
    >>> missing_parts([("fit", 0, 1, 2), ("refit", 0), ("refit", 2), ("final",)])
    ['1 fits', 'the refits of outer folds 0, 2', 'the final refit on all data']
    """
    parts = []
    n_fits = sum(1 for k in missing if not KINDS[k[0]].after_fits)
    if n_fits:
        parts.append(f"{n_fits} fits")
    refits = sorted(int(k[1]) for k in missing if k[0] == "refit")
    if refits:
        parts.append("the refits of outer folds " + ", ".join(map(str, refits)))
    if ("final",) in missing:
        parts.append("the final refit on all data")
    return parts


@dataclass(frozen=True)
class RoundPart:
    """One part of a round of a run in rounds, as far as it got: a slice of the table's rows.

    Attributes
    ----------
    search : int or None
        The outer fold whose training rows its search searches (None: all data).
    round, part : int
        Its round, and its place among the round's parts (Hyperband's brackets).
    label : str
        The part's label ("bracket 2"; "" for most strategies).
    resource : int or None
        Its resource (halving's rows or iterations), when it has one.
    first, n_rows : int
        Its candidates are the table's rows ``first`` to ``first + n_rows - 1``.
    n_folds : int
        The folds each of its candidates is scored on.
    n_done, n_units : int
        Its units done, and all of them.
    """

    search: int | None
    round: int
    part: int
    label: str
    resource: int | None
    first: int
    n_rows: int
    n_folds: int
    n_done: int
    n_units: int

    @property
    def finished(self) -> bool:
        """Whether every unit of the part is done (its rows are those of the full result)."""
        return self.n_done == self.n_units

    @property
    def where(self) -> str:
        """The search it belongs to, in words."""
        return "all data" if self.search is None else f"outer fold {self.search}"


@dataclass(frozen=True)
class PartialResult:
    """The part of an interrupted run's result that its finished units determine.

    Returned by ``parcv.load(store, partial=True)`` for a run that did not
    finish. Nothing is selected and no estimate is given from part of the
    folds: ``missing`` says which estimates are not known yet, and the
    per-candidate table holds the scores of the folds done so far.

    Attributes
    ----------
    kind : {"cross_validate", "search", "nested_cv"}
    n_done, n_units : int
        Units finished and units the run needs.
    missing : list of str
        The missing units, in words.
    estimates_missing : str
        The estimates the missing units hold back.
    params : list of dict
        One per candidate.
    metric : str
        The metric of ``mean_test_score`` (the selection metric).
    n_folds_done : ndarray of int
        Per candidate: inner folds scored (of all data, and of every outer fold).
    mean_test_score, std_test_score : ndarray of float
        Per candidate, over the folds done (NaN with none).
    outer_test_scores : dict of int to float
        Nested CV: the test score of each outer fold whose refit is done.
    parts : tuple of RoundPart
        A run in rounds (halving, Hyperband, a sampler, early stopping): each
        part of each round its searches proposed so far, in order, with the
        rows of the table that are its candidates. A finished part's rows are
        those of the full result (the same means); an unfinished one's are over
        the folds done. Empty for a run in one round, whose rows are its
        candidates. ``n_folds`` is then the most folds of any part.
    """

    kind: str
    n_done: int
    n_units: int
    missing: list[str]
    params: list[dict[str, Any]]
    metric: str
    n_folds_done: NDArray[np.int64]
    n_folds: int
    mean_test_score: NDArray[np.float64]
    std_test_score: NDArray[np.float64]
    outer_test_scores: dict[int, float]
    parts: tuple[RoundPart, ...] = ()

    @property
    def estimates_missing(self) -> str:
        return _ESTIMATES.get(self.kind, "the run's estimates")

    @property
    def status(self) -> str:
        """One line: how far the run got and what is missing."""
        return (
            f"unfinished run: {self.n_done} of {self.n_units} units done; missing "
            f"{'; '.join(self.missing)}. Not known yet: {self.estimates_missing}."
        )

    def __repr__(self) -> str:
        return f"PartialResult({self.kind}, {self.n_done} of {self.n_units} units done)"

    def to_frame(self) -> Any:
        """The per-candidate table as a pandas DataFrame."""
        pd = import_pandas("PartialResult.to_frame()")
        rows: dict[str, Any] = {}
        if self.parts:
            of = [p for p in self.parts for _ in range(p.n_rows)]
            rows = {"search": [p.search for p in of], "round": [p.round for p in of]}
        rows |= {
            "params": [repr(p) for p in self.params],
            "n_folds_done": self.n_folds_done,
            f"mean_test_{self.metric}": self.mean_test_score,
            f"std_test_{self.metric}": self.std_test_score,
        }
        return pd.DataFrame(rows)

    def to_markdown(self, resume_hint: str = "") -> str:
        """A short report of the run so far."""
        lines = [
            "# Unfinished run", "",
            f"{self.n_done} of {self.n_units} units done; missing {'; '.join(self.missing)}.",
            f"Not known yet: {self.estimates_missing}.", "",
        ]  # fmt: skip
        if resume_hint:
            lines += [f"Resume it (only the missing units are computed): `{resume_hint}`", ""]
        if self.outer_test_scores:
            done = ", ".join(f"{o}: {s:.4g}" for o, s in sorted(self.outer_test_scores.items()))
            lines += [f"Test scores of the outer folds refitted so far: {done}.", ""]
        lines += [
            f"Scores of the folds done so far ({self.metric}; a mean over fewer folds is "
            "not comparable with one over all of them):", "",
        ]  # fmt: skip
        if self.parts:
            return "\n".join(lines + self._rounds_lines()) + "\n"
        lines += ["| candidate | folds done | mean | std |", "|---|---|---|---|"]
        for i, label in enumerate(_labels(self.params)):
            mean, std = self.mean_test_score[i], self.std_test_score[i]
            lines.append(
                f"| {label} | {self.n_folds_done[i]} of {self.n_folds} | "
                f"{_num(mean)} | {_num(std)} |"
            )
        return "\n".join(lines) + "\n"

    def _rounds_lines(self) -> list[str]:
        """The table of a run in rounds: per search, its rounds' parts as far as they got."""
        lines: list[str] = []
        labels = _labels(self.params)
        searches = list(dict.fromkeys(p.search for p in self.parts))
        for search in searches:
            parts = [p for p in self.parts if p.search == search]
            lines += [f"## The search on {parts[0].where}", ""]
            for p in parts:
                label = f" ({p.label})" if p.label else ""
                done = "finished" if p.finished else f"{p.n_done} of {p.n_units} units done"
                lines += [f"round {p.round}{label}: {done}", ""]
                lines += ["| candidate | folds done | mean | std |", "|---|---|---|---|"]
                for i in range(p.first, p.first + p.n_rows):
                    mean, std = self.mean_test_score[i], self.std_test_score[i]
                    lines.append(
                        f"| {labels[i]} | {self.n_folds_done[i]} of {p.n_folds} | "
                        f"{_num(mean)} | {_num(std)} |"
                    )
                lines.append("")
        return lines


def _labels(params: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each candidate's readable label (floats rounded, told apart); "(as given)": none set."""
    names = readable_labels(params)
    return [names[format_params(p)] if p else "(as given)" for p in params]


def _num(value: float) -> str:
    return "" if not np.isfinite(value) else f"{value:.4g}"


def make_partial_result(
    kind: str, plan: Plan, records: Mapping[Key, Record], missing: Sequence[Key], n_units: int
) -> PartialResult:
    """Gather what the finished ``records`` of ``plan`` say, and what ``missing`` holds back."""
    metric = plan.scoring.refit
    scores: list[list[float]] = [[] for _ in plan.candidates]
    for key, record in records.items():
        if not KINDS[key[0]].selects or not record.ok:
            continue
        cand = record.unit.candidate
        if "fold_scores" in kind_of(record.unit).keeps and record.folds is not None:  # fast CV
            scores[cand] += [float(s) for s in record.folds.test[metric]]
        elif metric in record.test_scores:
            scores[cand].append(float(record.test_scores[metric]))
    n_folds = sum(len(plan.inner_folds[o]) for o in plan.inner_folds)
    own = set(plan.nested_outers)  # not the selections of the nested CV interval
    outer = {
        int(k[1]): float(r.test_scores.get(metric, np.nan))
        for k, r in records.items()
        if k[0] == "refit" and r.ok and k[1] in own
    }
    return PartialResult(
        kind=kind,
        n_done=n_units - len(missing),
        n_units=n_units,
        missing=missing_parts(missing),
        params=[dict(c.params) for c in plan.candidates],
        metric=metric,
        n_folds_done=np.array([len(s) for s in scores], dtype=np.int64),
        n_folds=n_folds,
        mean_test_score=np.array([np.mean(s) if s else np.nan for s in scores]),
        std_test_score=np.array([np.std(s) if s else np.nan for s in scores]),
        outer_test_scores=outer,
    )
