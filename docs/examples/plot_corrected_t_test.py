"""
Comparing two models with the corrected resampled t-test
========================================================

This follows scikit-learn's example `Statistical comparison of models using grid search
<https://scikit-learn.org/stable/auto_examples/model_selection/plot_grid_search_stats.html>`_:
support vector classifiers with linear, polynomial and RBF kernels on noisy two-moons data,
scored by ROC AUC over 10 times repeated stratified 10-fold CV.

Are the two best candidates really different? The scores of one candidate on the 100 folds
are not independent: every two training sets share most of their rows. A plain paired t-test
ignores that and finds differences too often; Nadeau and Bengio's *corrected resampled
t-test* inflates the variance of the mean difference from :math:`s^2/J` to
:math:`(1/J + n_{test}/n_{train})\\,s^2`. It is what ``result.compare(a, b)`` runs by default.
Below, its p-value is set next to the one computed by hand, with the formula of
scikit-learn's example.
"""

# %%
# The search
# ----------
# 4 candidates x 100 folds, run on a local pool of two worker processes (``backend="local",
# n_jobs=2``); the scores are bit for bit those of ``backend="serial"``.
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import t
from sklearn.datasets import make_moons
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.svm import SVC

import parcv

X, y = make_moons(noise=0.352, random_state=1, n_samples=100)
param_grid = [
    {"kernel": ["linear"]},
    {"kernel": ["poly"], "degree": [2, 3]},
    {"kernel": ["rbf"]},
]
cv = RepeatedStratifiedKFold(n_splits=10, n_repeats=10, random_state=0)
result = parcv.search(
    SVC(random_state=0), param_grid, X, y, cv=cv, scoring="roc_auc", backend="local", n_jobs=2
)
print(result)

# %%
# Every candidate's ROC AUC on the 100 folds, best first. The lines join the scores of one
# fold: the candidates rise and fall together from fold to fold, which is why the comparison
# must be paired, and why the folds' correlation matters.
n_folds = result.n_splits_
order = np.argsort(result.cv_results_["rank_test_score"], kind="stable")
scores = np.array([result.cv_results_[f"split{k}_test_score"] for k in range(n_folds)])[:, order]
labels = [result.candidates[c].label for c in order]
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
ax.plot(np.arange(len(order)), scores.T, color="grey", alpha=0.15, linewidth=0.8)
ax.plot(np.arange(len(order)), scores.mean(axis=0), "o-", color="C3", label="mean over folds")
ax.set_xticks(np.arange(len(order)), labels, fontsize=8)
ax.set_xlabel("candidate (best first)")
ax.set_ylabel("ROC AUC on a test fold")
ax.set_title("Scores of each fold (grey lines) for every candidate")
ax.legend()
plt.show()

# %%
# parcv's comparison of the two best
# ----------------------------------
# A candidate is named by its label, or any part of it naming only that candidate.
best, runner_up = labels[0], labels[1]
test = result.compare(best, runner_up)
print(f"{test.name_a} versus {test.name_b}: {test.test}")
print(
    f"  mean difference {test.mean_difference:.4f}, "
    f"95% interval [{test.ci_low:.4f}, {test.ci_high:.4f}]"
)
print(f"  t = {test.statistic:.4f} with {test.df:.0f} degrees of freedom, p = {test.p_value:.4f}")
print(f"  assumes: {test.assumptions}")


# %%
# The same test by hand, as in scikit-learn's example
# ---------------------------------------------------
# scikit-learn's ``corrected_std`` and ``compute_corrected_ttest``. Its p-value is one-sided
# (is the best better than the runner-up?); parcv reports the two-sided p-value, twice the
# one-sided one.
def corrected_std(differences, n_train, n_test):
    kr = len(differences)
    corrected_var = np.var(differences, ddof=1) * (1 / kr + n_test / n_train)
    return np.sqrt(corrected_var)


def compute_corrected_ttest(differences, df, n_train, n_test):
    mean = np.mean(differences)
    std = corrected_std(differences, n_train, n_test)
    t_stat = mean / std
    p_val = t.sf(np.abs(t_stat), df)  # right-tailed t-test
    return t_stat, p_val


differences = scores[:, 0] - scores[:, 1]
train, test_rows = next(cv.split(X, y))
t_stat, p_val = compute_corrected_ttest(
    differences, len(differences) - 1, len(train), len(test_rows)
)
print(f"by hand:  t = {t_stat:.6f}, one-sided p = {p_val:.6f}, two-sided p = {2 * p_val:.6f}")
print(f"parcv:    t = {test.statistic:.6f}, two-sided p = {test.p_value:.6f}")
print("agree:", np.isclose(t_stat, test.statistic) and np.isclose(2 * p_val, test.p_value))

# %%
# The uncorrected paired t-test on the same folds finds the difference far more significant
# than it is:
naive = result.compare(best, runner_up, test="paired_t")
print(f"paired t (uncorrected): t = {naive.statistic:.3f}, p = {naive.p_value:.4f}")
print(f"corrected resampled t:  t = {test.statistic:.3f}, p = {test.p_value:.4f}")

# %%
# Every candidate against the best, Holm-adjusted for the number of comparisons:
print(result.best_vs_rest())
