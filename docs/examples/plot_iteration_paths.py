"""
Iteration paths and early stopping
==================================

How many boosting rounds? A grid over ``n_estimators`` fits a new model for every count,
although the model with 100 trees holds the one with 50. ``parcv.Iterations`` scores the
iteration count as a *path*: one fit per (fold, point of the rest of the space), read at
every checkpoint — for gradient boosting through its staged predictions. ``cv_results_`` has
one row per (point, count), as a grid over the count would, and the scores are those of
separate fits, bit for bit.

With ``patience``, a point's path stops once its mean CV score has not improved for that
many checkpoints (as ``xgb.cv(early_stopping_rounds=...)`` decides): the later counts are
never fitted. Below, gradient boosting on Friedman's regression problem #1, with three
learning rates.
"""

# %%
# The search
# ----------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.model_selection import GridSearchCV, KFold

import parcv

X, y = make_friedman1(n_samples=300, noise=1.0, random_state=0)
model = GradientBoostingRegressor(max_depth=2, subsample=0.8, random_state=0)
space = {"learning_rate": [0.05, 0.3, 1.0]}
cv = KFold(n_splits=4, shuffle=True, random_state=0)
iterations = parcv.Iterations("n_estimators", up_to=300, every=10, patience=5)

result = parcv.search(
    model,
    space,
    X,
    y,
    cv=cv,
    scoring="neg_mean_squared_error",
    iterations=iterations,
    backend="serial",
)
print("selected:", result.best_params_, f"CV MSE {-result.best_score_:.3f}")

# %%
# One fit per (fold, learning rate), 12 in all, was read at up to 30 checkpoints (10, 20, ...,
# 300 trees); the paths that stopped early are marked in ``path_stopped``, and their later
# counts are NaN and were never fitted. A grid over ``n_estimators`` would have fitted 360
# models, the largest with 300 trees.
results = result.cv_results_
n_points = len(result.paths)
print(f"{len(results['params'])} (learning rate, n_estimators) candidates, {n_points} paths")
print("checkpoints:", iterations.checkpoints[:3], "...", iterations.checkpoints[-1])
for path in result.paths:
    rate = results["params"][path[0]]["learning_rate"]
    stopped = np.asarray(results["path_stopped"])[list(path)]
    last = results["params"][path[int(np.argmax(stopped)) - 1 if stopped.any() else -1]]
    status = (
        f"stopped after n_estimators={last['n_estimators']}" if stopped.any() else "ran to the end"
    )
    print(f"  learning_rate={rate}: {status}")

# %%
# Check against separate fits
# ---------------------------
# scikit-learn's ``GridSearchCV`` over a few counts fits one model per count; its scores are
# the path's at those counts.
counts = [10, 50, 100]
reference = GridSearchCV(
    model.set_params(learning_rate=0.3),
    {"n_estimators": counts},
    cv=cv,
    scoring="neg_mean_squared_error",
).fit(X, y)
rows = [
    i
    for i, p in enumerate(results["params"])
    if p["learning_rate"] == 0.3 and p["n_estimators"] in counts
]
print("path scores:      ", results["mean_test_score"][rows])
print("GridSearchCV's:   ", reference.cv_results_["mean_test_score"])
print(
    "equal:",
    np.array_equal(results["mean_test_score"][rows], reference.cv_results_["mean_test_score"]),
)

# %%
# The paths
# ---------
# Mean CV error ± one standard error over the folds for each learning rate; a cross marks
# where a path stopped early, the star the selected (learning rate, count). A large learning
# rate reaches its best error in a few rounds and then overfits; the small one is still
# improving after 300 rounds.
fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
checkpoints = np.asarray(iterations.checkpoints)
for color, path in zip(["C0", "C1", "C2"], result.paths, strict=True):
    path = [c for c in path if not results["path_stopped"][c]]
    mse = -np.asarray(results["mean_test_score"])[path]
    se = np.asarray(results["std_test_score"])[path] / np.sqrt(cv.get_n_splits() - 1)
    x = checkpoints[: len(path)]
    rate = results["params"][path[0]]["learning_rate"]
    ax.plot(x, mse, color=color, label=f"learning_rate={rate}")
    ax.fill_between(x, mse - se, mse + se, color=color, alpha=0.2)
    if len(path) < len(checkpoints):
        ax.plot(x[-1], mse[-1], "x", color="black", markersize=10, mew=2)
best = result.best_index_
ax.plot(
    results["params"][best]["n_estimators"],
    -results["mean_test_score"][best],
    "*",
    color="gold",
    markeredgecolor="black",
    markersize=16,
    label="selected",
)
ax.set_xlabel("n_estimators (boosting rounds; black cross: stopped early)")
ax.set_ylabel("mean CV squared error ± se")
ax.set_ylim(0, None)
ax.set_title("Iteration paths of gradient boosting, early stopping with patience 5")
ax.legend()
plt.show()
