"""Result records returned by the significance tests in :mod:`parcv.stats`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["FriedmanResult", "JsonValue", "TestResult", "UndefinedComparison"]

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
        numbers = {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "mean_difference": self.mean_difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }
        numbers.update((f"probabilities[{k!r}]", v) for k, v in (self.probabilities or {}).items())
        numbers.update((f"details[{k!r}]", v) for k, v in self.details.items())
        for name, value in numbers.items():
            _check_not_nan("TestResult", name, value)
        if self.p_value is not None and not 0.0 <= self.p_value <= 1.0:
            raise ValueError(
                f"TestResult.p_value must lie in [0, 1]; got {self.p_value!r}. "
                "Pass a probability, or None for tests without a p-value."
            )

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
