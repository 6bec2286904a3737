"""
Racing: drop the clearly worse candidates early
===============================================

A grid search scores every candidate on every fold, although after a few folds many
candidates are plainly worse than the best. *Racing* (Maron & Moore's Hoeffding races; the
F-race of Birattari et al.) scores the folds in order and, after a burn-in of a few folds and
each further fold, drops every candidate that a paired test on the folds scored so far finds
worse than the current best. A dropped candidate's later folds are never fitted.

``parcv.Racing`` uses the one-sided Nadeau-Bengio corrected t-test of each survivor against
the current best, Holm-adjusted at each decision. Below, an RBF support vector classifier's ``C``
and ``gamma`` are raced over 10 folds on the breast-cancer data, and the winner is compared with a
full grid search (parcv's and scikit-learn's ``GridSearchCV``).
"""

# %%
# The full grid
# -------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import parcv

X, y = load_breast_cancer(return_X_y=True)
model = make_pipeline(StandardScaler(), SVC())
grid = {"svc__C": [0.1, 1, 10, 100], "svc__gamma": [0.0001, 0.001, 0.01, 0.1, 1]}
cv = StratifiedKFold(n_splits=10, shuffle=True, random_state=0)

full = parcv.search(model, grid, X, y, cv=cv, backend="serial")
reference = GridSearchCV(model, grid, cv=cv).fit(X, y)
print("full grid, parcv:        ", full.best_params_, f"{full.best_score_:.4f}")
print("full grid, scikit-learn: ", reference.best_params_, f"{reference.best_score_:.4f}")

# %%
# The race
# --------
# The same search with ``racing=parcv.Racing(burn_in=3, alpha=0.05)``: every candidate runs
# on the first 3 folds, then the losers are dropped fold after fold. A decision reads only the
# folds scored up to it, so every backend and number of workers drops the same candidates.
raced = parcv.search(
    model, grid, X, y, cv=cv, racing=parcv.Racing(burn_in=3, alpha=0.05), backend="serial"
)
print(raced)


def n_cv_fits(result):
    """Number of CV fits that ran (leaving out the final refit)."""
    return sum(record.unit.kind == "fit" for record in result.records)


print(f"CV fits: full grid {n_cv_fits(full)}, race {n_cv_fits(raced)}")
print("same winner:", raced.best_params_ == full.best_params_ == reference.best_params_)
print("same winner's CV score:", raced.best_score_ == full.best_score_)

# %%
# When was each candidate dropped? ``race_eliminated_after`` is the last fold a candidate ran
# (-1: it survived to the end), and ``race_p_value`` the adjusted p-value that dropped it.
results = raced.cv_results_
n_folds = raced.n_splits_
dropped = np.asarray(results["race_eliminated_after"])
folds_run = np.where(dropped < 0, n_folds, dropped + 1)
mean_score = np.nan_to_num(results["mean_test_score"], nan=-1.0)
order = np.lexsort((-mean_score, -folds_run))  # survivors first, then by how long they lasted
for c in order:
    if dropped[c] < 0:
        status = f"survived, mean accuracy {results['mean_test_score'][c]:.4f}"
    else:
        status = f"dropped after fold {dropped[c] + 1} (p = {results['race_p_value'][c]:.3g})"
    print(f"  {raced.candidates[c].label:<32} {status}")

# %%
# The race, fold by fold
# ----------------------
# Each row is a candidate, each column a fold in the order scored; blank cells were never
# fitted. The red bar marks the fold after which a candidate was dropped.
scores = np.array([results[f"split{k}_test_score"] for k in range(n_folds)]).T
params = [raced.candidates[c].params for c in order]
labels = [f"C={p['svc__C']:g}, gamma={p['svc__gamma']:g}" for p in params]
fig, ax = plt.subplots(figsize=(7.5, 5.5), layout="constrained")
image = ax.imshow(np.ma.masked_invalid(scores[order]), aspect="auto", cmap="viridis", vmin=0.85)
fig.colorbar(image, ax=ax, extend="min", label="test accuracy (blank: not fitted)")
for row, c in enumerate(order):
    if dropped[c] >= 0:
        ax.plot(dropped[c] + 0.5, row, marker="|", color="red", markersize=12, mew=2.5)
ax.set_yticks(np.arange(len(order)), labels, fontsize=8)
ax.set_xticks(np.arange(n_folds), [str(k + 1) for k in range(n_folds)])
ax.set_xlabel("CV fold, in the order scored (red bar: dropped after this fold)")
ax.set_title(f"Race: {int((dropped >= 0).sum())} of {len(order)} candidates dropped")
plt.show()

# %%
# ``alpha`` bounds the chance of dropping a candidate that is not worse *at one decision*, not
# over the whole race; a larger ``burn_in`` or a smaller ``alpha`` races more cautiously. A
# dropped candidate cannot be selected, and its later folds are NaN in ``cv_results_``.
