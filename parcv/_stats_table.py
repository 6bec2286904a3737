"""The table of several pairwise comparisons returned by :mod:`parcv.stats`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from parcv._stats_result import JsonValue, TestResult, UndefinedComparison

__all__ = ["ComparisonTable"]


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


@dataclass(frozen=True, slots=True)
class ComparisonTable:
    """Several pairwise comparisons with Holm-adjusted p-values.

    Parameters
    ----------
    results : tuple of TestResult
        One result per compared pair, ``A - B`` oriented.
    adjusted_p_values : tuple of float or None
        Holm step-down adjusted p-values, aligned with ``results``; None for
        tests without p-values.
    alpha : float
        Family-wise error rate used for ``rejected``.
    best : str or None, default=None
        Name of the reference candidate for best-versus-rest tables.
    undefined : tuple of UndefinedComparison, default=()
        Pairs the test could not compare (e.g. identical fold scores): listed
        after the tested pairs, with no p-value, and left out of Holm's
        adjustment.

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

    def __post_init__(self) -> None:
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
    def rejected(self) -> tuple[bool | None, ...]:
        """Whether each null hypothesis is rejected at ``alpha`` after Holm."""
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
            "p_holm",
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
            ``alpha``, ``best`` and a list of per-comparison dicts, each with
            ``p_holm`` and ``rejected`` added.

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
            row["p_holm"] = adjusted
            row["rejected"] = rejected
            rows.append(row)
        for undefined in self.undefined:
            rows.append({**undefined.to_dict(), "p_holm": None, "rejected": None})
        return {"alpha": self.alpha, "best": self.best, "comparisons": rows}
