"""
Shared pipeline prefixes: fit the PCA once per fold
===================================================

In a grid over ``PCA(n_components)`` x ``LogisticRegression(C)``, every candidate with the
same ``n_components`` fits the very same PCA on a fold: only the classifier differs.
scikit-learn's ``GridSearchCV`` fits that PCA again for every ``C`` (unless you give the
pipeline a ``memory`` cache). parcv sees that candidates set the same parameters on the
first steps of a ``Pipeline`` and fits those steps once per fold, then hands the fitted
prefix to every candidate that shares it. Each fit's record says, in ``reused_steps``, how
many leading steps it took already fitted.

The scores are those of fitting every candidate from scratch, bit for bit: we check them
against scikit-learn's ``GridSearchCV``.
"""

# %%
# A PCA x logistic regression grid on the digits
# -----------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

import parcv

X, y = load_digits(return_X_y=True)
X, y = X[:600], y[:600]  # a subset keeps the example fast
pipe = Pipeline([("pca", PCA(random_state=0)), ("logistic", LogisticRegression(max_iter=2000))])
grid = {"pca__n_components": [5, 10, 20, 30], "logistic__C": [0.001, 0.01, 0.1, 1.0]}
cv = StratifiedKFold(n_splits=4, shuffle=True, random_state=0)

result = parcv.search(pipe, grid, X, y, cv=cv, backend="serial")
print(result)

# %%
# How many PCAs were fitted?
# --------------------------
# Every CV fit that reused no step fitted its own PCA; the others took the PCA fitted on the
# same fold with the same ``n_components``.
fits = [record for record in result.records if record.unit.kind == "fit"]
n_pca_fits = sum(record.reused_steps == 0 for record in fits)
n_folds = cv.get_n_splits()
n_components = grid["pca__n_components"]
print(f"CV fits: {len(fits)} ({len(fits) // n_folds} candidates x {n_folds} folds)")
print(f"PCA fits with shared prefixes: {n_pca_fits} ({len(n_components)} per fold)")
print(f"PCA fits without sharing (as GridSearchCV): {len(fits)}")

# %%
# The same scores as scikit-learn's GridSearchCV
# ----------------------------------------------
# parcv runs every fit with one BLAS thread (parallelism comes from its workers). A
# multi-threaded BLAS may sum in another order and round differently, which can flip a
# prediction that sits on a tie; so for a bit-for-bit comparison we run scikit-learn with one
# BLAS thread too.
with threadpool_limits(limits=1):
    reference = GridSearchCV(pipe, grid, cv=cv).fit(X, y)
same = all(
    np.array_equal(
        result.cv_results_[f"split{k}_test_score"], reference.cv_results_[f"split{k}_test_score"]
    )
    for k in range(n_folds)
)
print("every fold's score equal to GridSearchCV's:", same)
print(
    "best:",
    result.best_params_,
    "== GridSearchCV's:",
    result.best_params_ == reference.best_params_,
)

# %%
# Where the sharing happened: for each candidate and fold, the number of steps it reused (0:
# it fitted the PCA itself; 1: it took the PCA fitted for another ``C``), next to the mean
# accuracy of each candidate.
reused = np.zeros((len(result.candidates), n_folds), dtype=int)
for record in fits:
    reused[record.unit.candidate, record.unit.inner] = record.reused_steps
# Candidates are in scikit-learn's order: C varies slowest, n_components fastest.
means = result.cv_results_["mean_test_score"].reshape(len(grid["logistic__C"]), len(n_components))

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
left.imshow(reused, cmap="Greys", vmin=0, vmax=4, aspect="auto")
for (row, col), value in np.ndenumerate(reused):
    left.text(
        col, row, "reused PCA" if value else "fitted PCA", ha="center", va="center", fontsize=7
    )
left.set_yticks(range(len(result.candidates)), [c.label for c in result.candidates], fontsize=7)
left.set_xticks(range(n_folds), [str(k + 1) for k in range(n_folds)])
left.set_xlabel("CV fold")
left.set_title(f"{n_pca_fits} PCA fits instead of {len(fits)}")
for i, k in enumerate(n_components):
    right.semilogx(grid["logistic__C"], means[:, i], "o-", label=f"n_components={k}")
right.set_xlabel("C of the logistic regression")
right.set_ylabel("mean CV accuracy")
right.set_title("Validation curves")
right.legend()
plt.show()
