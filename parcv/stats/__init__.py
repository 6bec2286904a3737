"""The stats wing: significance tests over per-fold scores of candidates on the same folds.

It owns the paired tests (``paired``), the tests made for resampled scores
(``resampled``), rank tests (``ranks``), McNemar's test (``mcnemar``), tests by
name and multiple comparisons (``multiple``), and the shared result types
(``result``) and checks (``checks``), and the racing of candidates over folds
(``racing``). Scores are greater-is-better (the
scikit-learn convention); negate losses first. Every pairwise test returns a
:class:`TestResult` oriented as ``A - B``. The wing is pure: it imports numpy and scipy only.

Pairwise tests, selectable by name in :func:`compare`:

- ``"one_se_rule"``: :func:`one_se_rule_compare`
- ``"paired_t"``: :func:`paired_ttest`
- ``"wilcoxon"``: :func:`wilcoxon_test`
- ``"corrected_t"``: :func:`corrected_resampled_ttest`
- ``"5x2cv_t"``: :func:`five_by_two_cv_ttest`
- ``"5x2cv_f"``: :func:`five_by_two_cv_ftest`
- ``"bayesian_correlated_t"``: :func:`bayesian_correlated_ttest`

Other tests: :func:`mcnemar_test` (hold-out predictions), :func:`friedman_test`,
:func:`nemenyi_critical_difference`, :func:`average_ranks`, and the multiple
comparison helpers :func:`holm_adjust`, :func:`bonferroni_adjust`,
:func:`adjust_p_values`, :func:`compare_all` and :func:`holm_best_vs_rest`.
"""

from __future__ import annotations

from parcv.stats.mcnemar import CochranQResult, cochran_q_test, mcnemar_test
from parcv.stats.multiple import (
    CORRECTIONS,
    TESTS,
    adjust_p_values,
    bonferroni_adjust,
    compare,
    compare_all,
    holm_adjust,
    holm_best_vs_rest,
)
from parcv.stats.paired import (
    corrected_resampled_ttest,
    one_se_rule_compare,
    paired_ttest,
    wilcoxon_test,
)
from parcv.stats.racing import RaceResult, RaceStep, Racing, race_step, run_race
from parcv.stats.ranks import average_ranks, friedman_test, nemenyi_critical_difference
from parcv.stats.resampled import (
    bayesian_correlated_ttest,
    five_by_two_cv_ftest,
    five_by_two_cv_ttest,
)
from parcv.stats.result import ComparisonTable, FriedmanResult, TestResult

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "adjust_p_values",
    "bonferroni_adjust",
    "ComparisonTable",
    "FriedmanResult",
    "TestResult",
    "average_ranks",
    "bayesian_correlated_ttest",
    "compare",
    "compare_all",
    "corrected_resampled_ttest",
    "five_by_two_cv_ftest",
    "five_by_two_cv_ttest",
    "friedman_test",
    "holm_adjust",
    "holm_best_vs_rest",
    "mcnemar_test",
    "cochran_q_test",
    "CochranQResult",
    "nemenyi_critical_difference",
    "one_se_rule_compare",
    "paired_ttest",
    "race_step",
    "run_race",
    "wilcoxon_test",
    "RaceResult",
    "RaceStep",
    "Racing",
]
