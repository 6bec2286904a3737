"""
Nested versus non-nested cross-validation
=========================================

This reproduces scikit-learn's example `Nested versus non-nested cross-validation
<https://scikit-learn.org/stable/auto_examples/model_selection/plot_nested_cross_validation_iris.html>`_
with parcv: an RBF support vector classifier on the iris data, ``C`` in ``[1, 10, 100]`` and
``gamma`` in ``[0.01, 0.1]``, inner and outer ``KFold(4, shuffle=True, random_state=i)`` for
trial ``i``.

The *non-nested* score is the best candidate's mean CV score (``best_score_``): the same folds
chose the candidate and scored it, so it is optimistic. *Nested CV* selects the candidate by an
inner CV on each outer-train part and scores that choice on the outer-test part, which the
selection never saw: it estimates the performance of the whole procedure "select by CV, then
refit". scikit-learn's example runs 30 trials; 6 are enough here to see the gap and keep the
example fast.
"""

# %%
# The data, the model and the grid, as in scikit-learn's example.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.svm import SVC

import parcv

X, y = load_iris(return_X_y=True)
svm = SVC(kernel="rbf")
grid = {"C": [1, 10, 100], "gamma": [0.01, 0.1]}
n_trials = 6

# %%
# Non-nested and nested scores, trial after trial
# -----------------------------------------------
# ``parcv.search`` is the non-nested search (select on all data); ``parcv.nested_cv`` runs the
# inner searches of the 4 outer folds in one task graph. ``refit=False``: we only want the
# estimate, not the model to ship. Next to parcv's nested scores we compute scikit-learn's,
# ``cross_val_score(GridSearchCV(...))`` on the same folds.
non_nested = np.zeros(n_trials)
nested = np.zeros(n_trials)
sklearn_nested = np.zeros(n_trials)
same_outer_scores = []
for i in range(n_trials):
    inner_cv = KFold(n_splits=4, shuffle=True, random_state=i)
    outer_cv = KFold(n_splits=4, shuffle=True, random_state=i)

    found = parcv.search(svm, grid, X, y, cv=inner_cv, refit=False, backend="serial")
    non_nested[i] = found.best_score_

    result = parcv.nested_cv(
        svm, grid, X, y, outer=outer_cv, inner=inner_cv, refit=False, backend="serial"
    )
    nested[i] = result.estimate["score"].mean

    reference = cross_val_score(GridSearchCV(svm, grid, cv=inner_cv), X, y, cv=outer_cv)
    sklearn_nested[i] = reference.mean()
    same_outer_scores.append(np.array_equal(result.outer_scores["score"], reference))

print("trial  non-nested  nested (parcv)  nested (scikit-learn)")
for i in range(n_trials):
    print(f"{i:>5}  {non_nested[i]:10.4f}  {nested[i]:14.4f}  {sklearn_nested[i]:21.4f}")
print("parcv's outer-fold scores equal scikit-learn's in every trial:", all(same_outer_scores))

# %%
# The non-nested score is optimistic
# ----------------------------------
# The difference is small on this easy problem (scikit-learn's 30 trials give 0.0076 on
# average), but it is positive in most trials: the winner's CV score has won a selection on
# the very folds that score it.
difference = non_nested - nested
print(f"average difference {difference.mean():.4f}, std {difference.std():.4f}")

# %%
# The last nested run, fold by fold: which candidate each outer fold selected, and its score on
# the outer-test part.
print(result.to_text())

# %%
# The scores of each trial and their difference, as in scikit-learn's figure.
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, layout="constrained")
trials = np.arange(n_trials)
top.plot(trials, non_nested, "o-", color="C3", label="non-nested CV (best_score_)")
top.plot(trials, nested, "s-", color="C0", label="nested CV (parcv)")
top.plot(trials, sklearn_nested, "x", color="black", markersize=9, label="nested CV (scikit-learn)")
top.set_ylabel("accuracy")
top.set_title("Non-nested and nested CV on the iris data")
top.legend(loc="lower right")
bottom.bar(trials, difference, color="C2")
bottom.axhline(0, color="black", linewidth=0.8)
bottom.set_xlabel("trial (random_state of both KFold splitters)")
bottom.set_ylabel("non-nested - nested")
plt.show()
