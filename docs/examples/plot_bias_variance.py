"""
Learning curves and the bias-variance trade-off
===============================================

Two classic diagnostics of model complexity, each a set of independent fits that parcv runs
as units of one task graph:

* the **bias-variance decomposition** of the expected squared error on a hold-out test set:
  the model is fitted on bootstrap samples of the training set and predicts the test set each
  time; the spread of its predictions is the *variance*, the squared error of their mean the
  *bias* (which here holds the noise of the targets too). ``parcv.bias_variance`` draws the
  bootstrap samples mlxtend's ``bias_variance_decomp`` draws, so its numbers are mlxtend's;
* the **learning curve**: train and test scores as the training set grows,
  ``parcv.learning_curve``, with scikit-learn's ``learning_curve`` numbers.

The model is a regression tree on noisy :math:`\\sin(2\\pi x)`; its ``max_depth`` sets the
complexity.
"""

# %%
# Data
# ----
import matplotlib.pyplot as plt
import numpy as np
from mlxtend.evaluate import bias_variance_decomp
from sklearn.model_selection import KFold
from sklearn.model_selection import learning_curve as sklearn_learning_curve
from sklearn.tree import DecisionTreeRegressor

import parcv

rng = np.random.default_rng(0)
x = rng.uniform(0.0, 1.0, 400)
y = np.sin(2 * np.pi * x) + rng.normal(0.0, 0.3, 400)
X = x[:, np.newaxis]
X_train, y_train, X_test, y_test = X[:200], y[:200], X[200:], y[200:]

# %%
# Bias and variance along the depth
# ---------------------------------
# 50 bootstrap rounds per depth (mlxtend's default is 200), with mlxtend's numbers beside.
depths = list(range(1, 9))
rows = []
for depth in depths:
    tree = DecisionTreeRegressor(max_depth=depth, random_state=0)
    ours = parcv.bias_variance(
        tree, X_train, y_train, X_test, y_test, loss="mse", n_rounds=50, random_state=0,
        backend="serial",
    )  # fmt: skip
    theirs = bias_variance_decomp(
        tree, X_train, y_train, X_test, y_test, loss="mse", num_rounds=50, random_seed=0
    )
    rows.append((*ours, *theirs))
rows = np.array(rows)
print("depth   expected loss        bias (+ noise)       variance")
print("        parcv    mlxtend     parcv    mlxtend     parcv    mlxtend")
for depth, r in zip(depths, rows, strict=True):
    pairs = [f"{r[k]:.4f}   {r[k + 3]:.4f}" for k in range(3)]
    print(f"{depth:>5}   " + "      ".join(pairs))
print("agree:", np.allclose(rows[:, :3], rows[:, 3:]))

# %%
# Shallow trees are biased (a few steps cannot follow the sine); deep trees follow the noise
# of their bootstrap sample, so their predictions vary. The expected loss is smallest in
# between. The dashed line is the noise variance, 0.09, the part of the error no model can
# remove (it sits inside the bias here).
fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
ax.plot(depths, rows[:, 0], "o-", color="black", label="expected squared error")
ax.plot(depths, rows[:, 1], "s-", color="C0", label="bias² (+ noise)")
ax.plot(depths, rows[:, 2], "^-", color="C3", label="variance")
ax.axhline(0.09, color="grey", linestyle="--", label="noise variance")
ax.set_xlabel("max_depth of the tree")
ax.set_ylabel("squared error on the test set")
ax.set_title("Bias-variance trade-off (parcv, 50 bootstrap rounds per depth)")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.show()

# %%
# Learning curves
# ---------------
# For a shallow and a deep tree: the shallow tree's train and test errors meet early at a
# high level (bias); the deep tree's train error is near zero and its test error falls slowly as
# rows are added (variance). Each curve is checked against scikit-learn's on the same folds.
cv = KFold(n_splits=5, shuffle=True, random_state=0)
sizes = np.linspace(0.1, 1.0, 6)
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
for ax, depth in zip(axes, [2, 8], strict=True):
    tree = DecisionTreeRegressor(max_depth=depth, random_state=0)
    curve = parcv.learning_curve(
        tree, X, y, train_sizes=sizes, cv=cv, scoring="neg_mean_squared_error", backend="serial"
    )
    n_rows, train, test = curve
    reference = sklearn_learning_curve(
        tree, X, y, train_sizes=sizes, cv=cv, scoring="neg_mean_squared_error"
    )
    same = all(np.array_equal(a, b) for a, b in zip(curve, reference, strict=True))
    print(f"max_depth={depth}: equal to scikit-learn's learning_curve: {same}")
    for scores, name, color in [(train, "train", "C0"), (test, "test", "C3")]:
        mean, std = -scores.mean(axis=1), scores.std(axis=1)
        ax.plot(n_rows, mean, "o-", color=color, label=f"{name} error")
        ax.fill_between(n_rows, mean - std, mean + std, color=color, alpha=0.2)
    ax.axhline(0.09, color="grey", linestyle="--", label="noise variance")
    ax.set_title(f"max_depth={depth}")
    ax.set_xlabel("training rows")
    ax.legend()
axes[0].set_ylabel("mean squared error ± std over 5 folds")
plt.show()
