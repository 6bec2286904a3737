"""Result records returned by the significance tests in :mod:`parcv.stats`."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "FriedmanResult",
    "JsonValue",
    "TestResult",
    "UndefinedComparison",
    "ComparisonTable",
    "import_pandas",
]


JsonValue = float | int | str | bool | None | list["JsonValue"] | dict[str, "JsonValue"]


def _check_not_nan(owner: str, name: str, value: float | None) -> None:
    """Raise if a numeric field is NaN, so NaN never leaks out silently."""
    if value is not None and math.isnan(value):
        raise ValueError(
            f"{owner}.{name} must not be NaN; got {value!r}. This is a bug in "
            "parcv.stats: please report it with the scores that produced it."
        )


@dataclass(frozen=True, slots=True)
class TestResult:
    """Outcome of comparing candidate A with candidate B on the same folds.

    Differences are always ``A - B``, so with greater-is-better scores a
    positive ``mean_difference`` favours A.

    Parameters
    ----------
    test : str
        Name of the test, e.g. ``"paired_t"``.
    statistic : float or None
        Test statistic; None when the procedure has none.
    p_value : float or None
        Two-sided p-value; None for Bayesian tests and decision rules.
    probabilities : dict of str to float or None
        Posterior probabilities ``p_left`` (B better), ``p_rope`` (practically
        equivalent) and ``p_right`` (A better) for Bayesian tests, else None.
    mean_difference : float
        Mean of ``A - B`` over the paired observations.
    ci_low, ci_high : float
        Interval for the mean difference at level ``confidence`` (a credible
        interval for Bayesian tests).
    confidence : float
        Level of the interval, e.g. 0.95.
    n : int
        Number of paired observations (folds, or samples for McNemar).
    df : float, tuple of float or None
        Degrees of freedom of the reference distribution, if any.
    assumptions : str
        What the test assumes, in plain words.
    name_a, name_b : str, default="A", "B"
        Names of the two candidates.
    decision : str or None, default=None
        For decision rules: the better candidate's name or ``"undecided"``.
    details : dict of str to float, default={}
        Extra per-test numbers, e.g. means and standard errors.

    Examples
    --------
    >>> from parcv.stats import paired_ttest
    >>> result = paired_ttest([0.9, 0.8, 0.85], [0.8, 0.75, 0.8])
    >>> result.test, result.n, result.df
    ('paired_t', 3, 2.0)
    >>> sorted(result.to_dict())[:3]
    ['assumptions', 'ci_high', 'ci_low']
    """

    __test__ = False  # keep pytest from collecting this class as a test case

    test: str
    statistic: float | None
    p_value: float | None
    probabilities: dict[str, float] | None = field(hash=False)
    mean_difference: float
    ci_low: float
    ci_high: float
    confidence: float
    n: int
    df: float | tuple[float, float] | None
    assumptions: str
    name_a: str = "A"
    name_b: str = "B"
    decision: str | None = None
    details: dict[str, float] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # A name is written only for the message: a best-vs-rest table of 220,000
        # candidates makes as many results.
        for name in ("statistic", "p_value", "mean_difference", "ci_low", "ci_high"):
            _check_not_nan("TestResult", name, getattr(self, name))
        for field_name, numbers in (
            ("probabilities", self.probabilities),
            ("details", self.details),
        ):
            for key, value in (numbers or {}).items():
                if value is not None and math.isnan(value):
                    _check_not_nan("TestResult", f"{field_name}[{key!r}]", value)
        if self.p_value is not None and not 0.0 <= self.p_value <= 1.0:
            raise ValueError(
                f"TestResult.p_value must lie in [0, 1]; got {self.p_value!r}. "
                "Pass a probability, or None for tests without a p-value."
            )

    def __repr__(self) -> str:
        """A short table: the test, the two candidates, the difference, the verdict.

        Examples
        --------
        >>> from parcv.stats import paired_ttest
        >>> print(repr(paired_ttest([0.9, 0.8, 0.85], [0.8, 0.75, 0.8])))
        TestResult: paired_t, A vs B on 3 paired folds
          mean difference A - B: 0.06667, 95% interval [-0.005044, 0.1384]
          statistic 4 (df 2), p-value 0.05719
          verdict: no significant difference at the 0.05 level
        """
        a, b = self.name_a, self.name_b
        paired = "samples" if self.test.startswith("mcnemar") else "folds"
        dfs = () if self.df is None else self.df if isinstance(self.df, tuple) else (self.df,)
        df = ", ".join(f"{d:.4g}" for d in dfs) or None
        lines = [
            f"TestResult: {self.test}, {a} vs {b} on {self.n} paired {paired}",
            f"  mean difference A - B: {self.mean_difference:.4g}, {self.confidence:.0%} "
            f"interval [{self.ci_low:.4g}, {self.ci_high:.4g}]",
        ]
        numbers = [] if self.statistic is None else [f"statistic {self.statistic:.4g}"]
        numbers[-1:] = [f"{numbers[-1]} (df {df})"] if numbers and df is not None else numbers[-1:]
        numbers += [] if self.p_value is None else [f"p-value {self.p_value:.4g}"]
        if numbers:
            lines.append("  " + ", ".join(numbers))
        return "\n".join([*lines, f"  verdict: {self._verdict()}"])

    def _verdict(self) -> str:
        """The decision, the posterior probabilities, or the p-value against 0.05, in words."""
        a, b = self.name_a, self.name_b
        if self.decision is not None:
            return self.decision if self.decision == "undecided" else f"{self.decision} is better"
        if self.probabilities is not None:
            p = self.probabilities
            right, rope, left = (p.get(k, 0.0) for k in ("p_right", "p_rope", "p_left"))
            return (f"P({a} better) {right:.3g}, practically equivalent {rope:.3g}, "
                    f"P({b} better) {left:.3g}")  # fmt: skip
        if self.p_value is None:
            return "no p-value"
        if self.p_value >= 0.05:
            return "no significant difference at the 0.05 level"
        return f"{a if self.mean_difference > 0 else b} scores higher (p < 0.05)"

    def to_dict(self) -> dict[str, JsonValue]:
        """Return the result as a JSON-serializable dict.

        Returns
        -------
        dict
            Every field; ``df`` pairs become lists.

        Examples
        --------
        >>> import json
        >>> from parcv.stats import paired_ttest
        >>> text = json.dumps(paired_ttest([3.0, 2.0, 4.0], [1.0, 1.5, 2.0]).to_dict())
        >>> '"test": "paired_t"' in text
        True
        """
        df: JsonValue = list(self.df) if isinstance(self.df, tuple) else self.df
        return {
            "test": self.test,
            "name_a": self.name_a,
            "name_b": self.name_b,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "probabilities": None if self.probabilities is None else dict(self.probabilities),
            "mean_difference": self.mean_difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
            "n": self.n,
            "df": df,
            "decision": self.decision,
            "details": dict(self.details),
            "assumptions": self.assumptions,
        }


# The keys of TestResult.to_dict() (every field), and those it writes as the field itself.
_TEST_RESULT_KEYS = frozenset(f.name for f in fields(TestResult))
_PLAIN_FIELDS = _TEST_RESULT_KEYS - {"probabilities", "df", "details"}


@dataclass(frozen=True, slots=True)
class UndefinedComparison:
    """A pair a test cannot compare, kept in a table as a marked row.

    A t-type test divides by the variance of the fold differences, so two
    candidates with identical fold scores (e.g. a parameter the model
    ignores) have no statistic and no p-value; the row says why.

    Parameters
    ----------
    test : str
        Name of the test that could not be computed.
    name_a, name_b : str
        Names of the two candidates.
    mean_difference : float
        Mean of ``A - B`` (the same on every fold).
    n : int
        Number of paired folds.
    note : str
        Why there is no statistic, e.g. ``"identical fold scores"``.

    Examples
    --------
    >>> row = UndefinedComparison("corrected_t", "a", "b", 0.0, 5, "identical fold scores")
    >>> row.to_dict()["p_value"], row.to_dict()["note"]
    (None, 'identical fold scores')
    """

    test: str
    name_a: str
    name_b: str
    mean_difference: float
    n: int
    note: str

    def to_dict(self) -> dict[str, JsonValue]:
        """Return the row in the shape of :meth:`TestResult.to_dict`, plus ``note``."""
        return {
            "test": self.test,
            "name_a": self.name_a,
            "name_b": self.name_b,
            "statistic": None,
            "p_value": None,
            "probabilities": None,
            "mean_difference": self.mean_difference,
            # The difference is the same on every fold: the interval is that one point.
            "ci_low": self.mean_difference,
            "ci_high": self.mean_difference,
            "confidence": None,
            "n": self.n,
            "df": None,
            "decision": None,
            "details": {},
            "assumptions": "",
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class FriedmanResult:
    """Outcome of the Friedman test over several candidates on the same folds.

    Parameters
    ----------
    statistic : float
        Friedman chi-square statistic, corrected for ties.
    p_value : float
        Upper-tail p-value from chi-square with ``df`` degrees of freedom.
    df : int
        ``n_candidates - 1``.
    iman_davenport_statistic : float
        Iman and Davenport's F statistic (``inf`` when the ranks never vary).
    iman_davenport_p_value : float
        Upper-tail p-value of F with ``iman_davenport_df`` degrees of freedom.
    iman_davenport_df : tuple of int
        ``(k - 1, (k - 1) * (N - 1))``.
    average_ranks : dict of str to float
        Average rank of each candidate; rank 1 is the best (highest score).
    n_folds, n_candidates : int
        Shape of the score table.
    assumptions : str
        What the test assumes, in plain words.

    Examples
    --------
    >>> from parcv.stats import friedman_test
    >>> result = friedman_test([[3.0, 2.0, 1.0], [3.0, 1.0, 2.0], [3.0, 2.0, 1.0]])
    >>> {name: round(rank, 3) for name, rank in result.average_ranks.items()}
    {'0': 1.0, '1': 2.333, '2': 2.667}
    """

    statistic: float
    p_value: float
    df: int
    iman_davenport_statistic: float
    iman_davenport_p_value: float
    iman_davenport_df: tuple[int, int]
    average_ranks: dict[str, float] = field(hash=False)
    n_folds: int
    n_candidates: int
    assumptions: str

    def __post_init__(self) -> None:
        for name in (
            "statistic",
            "p_value",
            "iman_davenport_statistic",
            "iman_davenport_p_value",
        ):
            _check_not_nan("FriedmanResult", name, getattr(self, name))

    def to_dict(self) -> dict[str, JsonValue]:
        """Return the result as a JSON-serializable dict.

        Returns
        -------
        dict
            Every field; tuples become lists.

        Examples
        --------
        >>> from parcv.stats import friedman_test
        >>> friedman_test([[1.0, 2.0], [1.0, 3.0], [2.0, 1.0]]).to_dict()["df"]
        1
        """
        return {
            "test": "friedman",
            "statistic": self.statistic,
            "p_value": self.p_value,
            "df": self.df,
            "iman_davenport_statistic": self.iman_davenport_statistic,
            "iman_davenport_p_value": self.iman_davenport_p_value,
            "iman_davenport_df": list(self.iman_davenport_df),
            "average_ranks": dict(self.average_ranks),
            "n_folds": self.n_folds,
            "n_candidates": self.n_candidates,
            "assumptions": self.assumptions,
        }


def _format_number(value: float | None) -> str:
    """Format a table cell: 4 significant digits, '-' for None."""
    return "-" if value is None else f"{value:.4g}"


def _table_row(result: TestResult, adjusted: float | None, alpha: float) -> list[str]:
    """Build one text-table row for a pairwise result."""
    if result.probabilities is not None:
        verdict = "P(L/R/R)=" + "/".join(
            f"{result.probabilities[key]:.3f}" for key in ("p_left", "p_rope", "p_right")
        )
    elif adjusted is not None:
        verdict = "yes" if adjusted <= alpha else "no"
    else:
        verdict = result.decision or "-"
    return [
        result.name_a,
        result.name_b,
        result.test,
        _format_number(result.mean_difference),
        f"[{result.ci_low:.4g}, {result.ci_high:.4g}]",
        _format_number(result.statistic),
        _format_number(result.p_value),
        _format_number(adjusted),
        verdict,
    ]


@dataclass(frozen=True, slots=True, repr=False)
class ComparisonTable:
    """Several pairwise comparisons with adjusted p-values (Holm's by default).

    Parameters
    ----------
    results : tuple of TestResult
        One result per compared pair, ``A - B`` oriented.
    adjusted_p_values : tuple of float or None
        p-values adjusted by ``correction``, aligned with ``results``; None
        for tests without p-values.
    alpha : float
        Family-wise error rate used for ``rejected``.
    best : str or None, default=None
        Name of the reference candidate for best-versus-rest tables.
    undefined : tuple of UndefinedComparison, default=()
        Pairs the test could not compare (e.g. identical fold scores): listed
        after the tested pairs, with no p-value, and left out of the
        adjustment.
    correction : {"holm", "bonferroni"} or None, default="holm"
        How ``adjusted_p_values`` were adjusted; None: not at all.
    left_out : str, default=""
        The candidates the table does not compare and why, in words (a pruned
        sampler's search compares its complete trials only); empty when it
        compares them all.

    Examples
    --------
    >>> from parcv.stats import compare_all
    >>> table = compare_all({"x": [1.0, 2.0, 3.0], "y": [0.5, 1.9, 2.2]})
    >>> len(table), table.rejected
    (1, (False,))
    >>> print(table.to_text().splitlines()[0].split())
    ['A', 'B', 'test', 'mean_diff', 'ci', 'statistic', 'p', 'p_holm', 'reject']
    """

    results: tuple[TestResult, ...]
    adjusted_p_values: tuple[float | None, ...]
    alpha: float
    best: str | None = None
    undefined: tuple[UndefinedComparison, ...] = ()
    correction: str | None = "holm"
    left_out: str = ""

    def __post_init__(self) -> None:
        if self.correction not in ("holm", "bonferroni", None):
            raise ValueError(
                f"correction must be 'holm', 'bonferroni' or None; got {self.correction!r}. "
                "Name the method that adjusted adjusted_p_values."
            )
        if len(self.results) != len(self.adjusted_p_values):
            raise ValueError(
                "adjusted_p_values must have one entry per result; got "
                f"{len(self.adjusted_p_values)!r} for {len(self.results)!r} results. "
                "Pass None for results without a p-value."
            )

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[TestResult]:
        return iter(self.results)

    @property
    def adjusted_column(self) -> str:
        """Name of the adjusted p-value column: ``p_holm``, ``p_bonferroni`` or ``p_unadjusted``."""
        return f"p_{self.correction or 'unadjusted'}"

    @property
    def rejected(self) -> tuple[bool | None, ...]:
        """Whether each null hypothesis is rejected at ``alpha`` after the correction."""
        return tuple(None if p is None else p <= self.alpha for p in self.adjusted_p_values)

    def to_text(self) -> str:
        """Render an aligned plain-text table, one row per comparison.

        Returns
        -------
        str
            Header plus one line per result, columns padded to align.

        Examples
        --------
        >>> from parcv.stats import compare_all
        >>> text = compare_all({"a": [1.0, 2.0], "b": [0.0, 1.5]}).to_text()
        >>> len(text.splitlines())
        2
        """
        header = [
            "A",
            "B",
            "test",
            "mean_diff",
            "ci",
            "statistic",
            "p",
            self.adjusted_column,
            "reject",
        ]
        rows = [header] + [
            _table_row(result, adjusted, self.alpha)
            for result, adjusted in zip(self.results, self.adjusted_p_values, strict=True)
        ]
        rows += [
            [u.name_a, u.name_b, u.test, _format_number(u.mean_difference), "-", "-", "-", "-",
             f"n/a ({u.note})"]
            for u in self.undefined
        ]  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        return "\n".join(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows
        )

    def to_dict(self) -> dict[str, JsonValue]:
        """Return the table as a JSON-serializable dict.

        Returns
        -------
        dict
            ``alpha``, ``best``, ``correction``, ``left_out`` and a list of
            per-comparison dicts, each with ``p_holm`` and ``rejected`` added.

        Examples
        --------
        >>> from parcv.stats import compare_all
        >>> compare_all({"a": [1.0, 2.0], "b": [0.0, 1.5]}).to_dict()["alpha"]
        0.05
        """
        rows: list[JsonValue] = []
        for result, adjusted, rejected in zip(
            self.results, self.adjusted_p_values, self.rejected, strict=True
        ):
            row = result.to_dict()
            row[self.adjusted_column] = adjusted
            row["rejected"] = rejected
            rows.append(row)
        for undefined in self.undefined:
            rows.append({**undefined.to_dict(), self.adjusted_column: None, "rejected": None})
        return {
            "alpha": self.alpha,
            "best": self.best,
            "correction": self.correction,
            "left_out": self.left_out,
            "comparisons": rows,
        }

    def columns(self, names: Sequence[str]) -> dict[str, list[JsonValue]]:
        """The rows of :meth:`to_dict` as columns: ``name`` to each row's ``row.get(name)``.

        Read from the results without a dict per row: a table of 220,000 pairs
        took 200 MB as rows.

        Examples
        --------
        >>> from parcv.stats import compare_all
        >>> compare_all({"a": [1.0, 2.0], "b": [0.0, 1.5]}).columns(["name_b", "rejected"])
        {'name_b': ['b'], 'rejected': [False]}
        """
        undefined = [{**u.to_dict(), self.adjusted_column: None, "rejected": None}
                     for u in self.undefined]  # fmt: skip
        out: dict[str, list[JsonValue]] = {}
        for name in names:
            found: list[JsonValue]
            if name == self.adjusted_column:
                found = list(self.adjusted_p_values)
            elif name == "rejected":
                found = list(self.rejected)
            elif name in _PLAIN_FIELDS:
                found = [getattr(r, name) for r in self.results]
            elif name in _TEST_RESULT_KEYS:  # the rest of a row as to_dict() writes it
                found = [r.to_dict()[name] for r in self.results]
            else:
                found = [None] * len(self.results)
            out[name] = found + [row.get(name) for row in undefined]
        return out

    def to_frame(self) -> Any:
        """Return the table as a pandas DataFrame, one row per pair.

        Returns
        -------
        pandas.DataFrame
            Columns ``A``, ``B``, ``test``, ``mean_diff``, ``ci_low``,
            ``ci_high``, ``statistic``, ``p``, the adjusted p-value column
            (``p_holm``, ``p_bonferroni`` or ``p_unadjusted``), ``reject``
            and ``note`` (why an undefined pair has no statistic).

        Raises
        ------
        ImportError
            If pandas is not installed (``pip install 'parcv[pandas]'``).

        Examples
        --------
        >>> from parcv.stats import compare_all
        >>> frame = compare_all({"a": [1.0, 2.0, 3.0], "b": [0.0, 1.5, 2.0]}).to_frame()
        >>> list(frame.columns[:3]), len(frame)
        (['A', 'B', 'test'], 1)
        """
        pandas = import_pandas("ComparisonTable.to_frame")
        rows = [
            {"A": r.name_a, "B": r.name_b, "test": r.test, "mean_diff": r.mean_difference,
             "ci_low": r.ci_low, "ci_high": r.ci_high, "statistic": r.statistic, "p": r.p_value,
             self.adjusted_column: adjusted, "reject": rejected, "note": ""}
            for r, adjusted, rejected in zip(
                self.results, self.adjusted_p_values, self.rejected, strict=True
            )
        ] + [
            {"A": u.name_a, "B": u.name_b, "test": u.test, "mean_diff": u.mean_difference,
             "ci_low": None, "ci_high": None, "statistic": None, "p": None,
             self.adjusted_column: None, "reject": None, "note": u.note}
            for u in self.undefined
        ]  # fmt: skip
        columns = ["A", "B", "test", "mean_diff", "ci_low", "ci_high", "statistic", "p",
                   self.adjusted_column, "reject", "note"]  # fmt: skip
        return pandas.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        """A short table: what was compared and the first rows of :meth:`to_text`."""
        tests = sorted({r.test for r in self.results} | {u.test for u in self.undefined})
        kind = "best vs rest" if self.best is not None else "pairwise"
        head = (
            f"ComparisonTable: {len(self.results) + len(self.undefined)} {kind} comparisons "
            f"({', '.join(tests) or 'none'}), p-values adjusted by "
            f"{self.correction or 'nothing'}, alpha={self.alpha:g}"
        )
        left_out = [self.left_out] if self.left_out else []
        return "\n".join([head, *left_out, *_first_lines(self.to_text(), _REPR_ROWS + 1)])


_REPR_ROWS = 6


def _first_lines(text: str, n: int) -> list[str]:
    """The first ``n`` lines of ``text`` and how many more there are."""
    lines = text.splitlines()
    more = [f"... {len(lines) - n} more rows"] if len(lines) > n else []
    return lines[:n] + more


def import_pandas(feature: str) -> Any:
    """Import pandas for ``feature`` (a ``to_frame`` method), or say how to install it.

    Examples
    --------
    >>> import_pandas("to_frame").DataFrame.__name__
    'DataFrame'
    """
    try:
        import pandas
    except ImportError as err:
        raise ImportError(
            f"{feature} needs pandas, which is not installed. Install it with "
            "pip install 'parcv[pandas]' (or pip install pandas), or use to_dict() instead."
        ) from err
    return pandas
