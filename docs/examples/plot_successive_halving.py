"""
Successive halving, as scikit-learn's HalvingGridSearchCV
=========================================================

Successive halving (Jamieson & Talwalkar 2016; Li et al.'s Hyperband builds on it) scores
every candidate with a small resource — here a subsample of the rows — keeps the best
``1 / factor`` of them and gives the survivors ``factor`` times more, rung after rung, until
a few candidates are left or the resource is spent. Most candidates are only ever fitted on a
small sample.

``search(..., halving=parcv.Halving(factor=3, random_state=0))`` runs each rung as a search on
parcv's engine. With the same ``cv`` and ``random_state``, the rungs, the candidates kept,
``cv_results_`` and the winner are those of scikit-learn's ``HalvingGridSearchCV``, which we
check below (the setting of scikit-learn's example `Comparison between grid search and
successive halving
<https://scikit-learn.org/stable/auto_examples/model_selection/plot_successive_halving_heatmap.html>`_,
on fewer rows).
"""

# %%
# parcv's halving search
# ----------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import HalvingGridSearchCV, StratifiedKFold
from sklearn.svm import SVC

import parcv

X, y = make_classification(n_samples=600, random_state=0)
grid = {"gamma": [1e-3, 1e-2, 1e-1, 1.0], "C": [1, 10, 100, 1000]}
cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)

result = parcv.search(
    SVC(), grid, X, y, cv=cv, halving=parcv.Halving(factor=3, random_state=0), backend="serial"
)
print("candidates per rung:", result.n_candidates_)
print("rows per rung:      ", result.n_resources_)
print("selected:", result.best_params_, f"accuracy {result.best_score_:.4f}")

# %%
# scikit-learn's HalvingGridSearchCV on the same folds
# ----------------------------------------------------
reference = HalvingGridSearchCV(SVC(), grid, cv=cv, factor=3, random_state=0).fit(X, y)
print("candidates per rung:", reference.n_candidates_)
print("rows per rung:      ", reference.n_resources_)
print("selected:", reference.best_params_, f"accuracy {reference.best_score_:.4f}")


def kept(cv_results, rung):
    """The candidates scored in one rung, as sorted (C, gamma) pairs."""
    return sorted(
        (p["C"], p["gamma"])
        for p, it in zip(cv_results["params"], cv_results["iter"], strict=True)
        if it == rung
    )


same_rungs = all(
    kept(result.cv_results_, k) == kept(reference.cv_results_, k)
    for k in range(len(result.n_candidates_))
)
print("same candidates in every rung:", same_rungs)
print(
    "same scores in every rung:",
    np.array_equal(result.cv_results_["mean_test_score"], reference.cv_results_["mean_test_score"]),
)
print("same winner:", result.best_params_ == reference.best_params_)

# %%
# The rungs
# ---------
# Each line is a candidate's mean CV accuracy in every rung it reached: grey lines were
# dropped, coloured ones reached the last rung, and the star is the winner. Several
# candidates of rung 0 share a score, so their dots overlap. ``result.rungs[k]``
# is rung ``k``'s own search result (its records and folds).
fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
lines = {}
for k, rung in enumerate(result.rungs):
    for params, mean in zip(
        rung.cv_results_["params"], rung.cv_results_["mean_test_score"], strict=True
    ):
        lines.setdefault((params["C"], params["gamma"]), []).append((k, mean))
last = len(result.rungs) - 1
floor = 0.8  # a few candidates of rung 0 score far lower; they are counted, not drawn
finalists = 0
for (C, gamma), points in lines.items():
    x, scores = zip(*points, strict=True)
    if x[-1] == last:  # reached the last rung: a colour and a legend entry of its own
        ax.plot(x, scores, "o-", color=f"C{finalists}", label=f"C={C}, gamma={gamma}")
        finalists += 1
    else:
        ax.plot(x, scores, "o-", color="grey", alpha=0.4)
n_below = sum(points[0][1] < floor for points in lines.values())
ax.set_ylim(floor, 1.0)
ax.text(0.02, 0.03, f"{n_below} candidates of rung 0 below {floor} (not shown)",
        transform=ax.transAxes, fontsize=8)  # fmt: skip
winner = lines[(result.best_params_["C"], result.best_params_["gamma"])][-1]
ax.plot(*winner, "*", color="gold", markeredgecolor="black", markersize=16, label="selected")
ax.set_xticks(
    range(len(result.rungs)),
    [
        f"rung {k}\n{n} candidates\n{r} rows"
        for k, (n, r) in enumerate(zip(result.n_candidates_, result.n_resources_, strict=True))
    ],
)
ax.set_ylabel("mean CV accuracy")
ax.set_title("Successive halving: each candidate's score in the rungs it reached")
ax.legend(loc="lower right")
plt.show()

# %%
# Halving runs more CV fits than the full grid, since every rung is a CV of its own, but most
# of them on a few rows. What it saves is rows fitted: the sum over rungs of candidates x rows,
# against 16 candidates x 600 rows for the full grid (with the same 5 folds each).
n_splits = cv.get_n_splits()
halving_fits = sum(result.n_candidates_) * n_splits
halving_rows = sum(n * r for n, r in zip(result.n_candidates_, result.n_resources_, strict=True))
full_rows = result.n_candidates_[0] * len(X)
print(f"halving:   {halving_fits} CV fits, candidates x rows = {halving_rows}")
print(f"full grid: {result.n_candidates_[0] * n_splits} CV fits, candidates x rows = {full_rows}")
