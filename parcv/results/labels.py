"""Candidate labels as people read them: continuous values rounded, candidates still told apart.

A candidate's label (:func:`parcv.plan.space.format_params`) writes every value
exactly: it names the candidate in ``compare("alpha=0.1", ...)``,
``to_frame()`` and ``results.json``. A value drawn from a continuous
distribution then reads ``C=0.13572804957316492``; the texts and plots a
person reads show :func:`readable_labels` instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from parcv.plan.space import format_params
from parcv.results.aggregate import FailureSummary
from parcv.results.criteria_table import CriteriaTable
from parcv.stats import ComparisonTable

__all__ = [
    "SIGNIFICANT_DIGITS",
    "readable_comparisons",
    "readable_criteria",
    "readable_failures",
    "readable_candidate_labels",
    "readable_labels",
]

# Significant digits of a continuous value in a readable label, at least.
SIGNIFICANT_DIGITS = 4
# From this many digits on a float is written exactly (repr): two floats always differ there.
_EXACT = 17


def readable_labels(params: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Map each candidate's label to the label people read: floats rounded, still distinct.

    A float is written with :data:`SIGNIFICANT_DIGITS` significant digits
    (``C=0.1357``) unless fewer write it exactly (``alpha=10.0`` stays as
    it is). Candidates whose rounded labels would read alike get more digits,
    as many as tell them apart (``alpha=0.123456`` and ``alpha=0.123457``);
    other values (ints, strings, estimators) are written as in the label.

    Parameters
    ----------
    params : iterable of mapping of str to object
        The candidates' parameters; the same candidate may come more than once.

    Returns
    -------
    dict of str to str
        Each distinct candidate's label (:func:`~parcv.plan.space.format_params`)
        to its readable label; two distinct labels never map to the same text.

    Examples
    --------
    >>> shown = readable_labels([{"C": 0.13572804957316492}, {"C": 10.0}])
    >>> shown["C=0.13572804957316492"], shown["C=10.0"]
    ('C=0.1357', 'C=10.0')
    >>> sorted(readable_labels([{"a": 0.123456}, {"a": 0.123457}]).values())
    ['a=0.123456', 'a=0.123457']
    """
    exact: dict[str, Mapping[str, Any]] = {}
    for p in params:
        exact.setdefault(format_params(p), p)
    return _readable(exact)


def readable_candidate_labels(candidates: Iterable[Any]) -> dict[str, str]:
    """:func:`readable_labels` of candidates (``label`` and ``params``), their labels as given."""
    exact: dict[str, Mapping[str, Any]] = {}
    for c in candidates:
        exact.setdefault(c.label, c.params)
    return _readable(exact)


def _readable(exact: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each label's readable text, ``exact`` mapping the labels to their parameters.

    Each round gives one more digit to every label that reads as another, until
    none does (exact at the end, so it ends). Only the texts a round touched can
    read alike after it: a 220,000-candidate grid needs a few rounds, and
    grouping every text again in each took seconds.
    """
    digits = dict.fromkeys(exact, SIGNIFICANT_DIGITS)
    shown = {label: _label(p, SIGNIFICANT_DIGITS) for label, p in exact.items()}
    alike: dict[str, list[str]] = {}
    for label, text in shown.items():
        alike.setdefault(text, []).append(label)
    clashes = [text for text, labels in alike.items() if len(labels) > 1]
    while clashes:
        # Every label of a clash moves on at once, as in one pass over all the texts.
        groups = [alike.pop(text) for text in clashes]
        touched: dict[str, None] = {}
        for labels in groups:
            for label in labels:
                digits[label] = min(digits[label] + 1, _EXACT)
                shown[label] = now = _label(exact[label], digits[label])
                alike.setdefault(now, []).append(label)
                touched[now] = None
        clashes = [text for text in touched if len(alike[text]) > 1]
    return shown


def _label(params: Mapping[str, Any], digits: int) -> str:
    """The label of one candidate with its floats at ``digits`` significant digits."""
    if digits >= _EXACT or not params:
        return format_params(params)
    if len(params) == 1:  # a grid of one parameter: 220,000 labels, each made in a few rounds
        ((name, value),) = params.items()
        return f"{name}={_text(value if type(value) is float else _plain(value), digits)}"
    return ", ".join(f"{name}={_text(_plain(params[name]), digits)}" for name in sorted(params))


def _plain(value: Any) -> Any:
    # numpy scalars read as the Python numbers they are, as in format_params.
    return value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value


def _text(value: Any, digits: int) -> str:
    """``repr(value)`` with its floats (also in a tuple, list or dict) rounded."""
    if isinstance(value, float):
        rounded = f"{value:.{digits}g}"
        exact = not math.isfinite(value) or float(rounded) == value
        return repr(value) if exact else rounded
    if type(value) in (tuple, list):
        items = [_text(_plain(v), digits) for v in value]
        if isinstance(value, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if type(value) is dict:
        return "{" + ", ".join(f"{k!r}: {_text(_plain(v), digits)}" for k, v in value.items()) + "}"
    return repr(value)


def readable_failures(failures: FailureSummary, names: Mapping[str, str]) -> FailureSummary:
    """The failure summary with its candidates named by their readable labels (``names``)."""
    by_candidate = {names.get(label, label): n for label, n in failures.by_candidate.items()}
    return replace(failures, by_candidate=by_candidate)


def readable_comparisons(table: ComparisonTable, names: Mapping[str, str]) -> ComparisonTable:
    """The comparison table with its candidates named by their readable labels (``names``)."""
    return replace(
        table,
        results=tuple(replace(r, name_a=names.get(r.name_a, r.name_a),
                              name_b=names.get(r.name_b, r.name_b)) for r in table.results),
        undefined=tuple(replace(u, name_a=names.get(u.name_a, u.name_a),
                                name_b=names.get(u.name_b, u.name_b)) for u in table.undefined),
        best=None if table.best is None else names.get(table.best, table.best),
    )  # fmt: skip


def readable_criteria(table: CriteriaTable, names: Mapping[str, str]) -> CriteriaTable:
    """The criteria table with its candidates named by their readable labels (``names``)."""
    rows = tuple(replace(row, label=names.get(row.label, row.label)) for row in table.rows)
    return replace(table, rows=rows)
