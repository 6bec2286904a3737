"""
Two objectives: accuracy against fit time, and the Pareto front
===============================================================

A larger booster is often a little more accurate and a lot slower. Rather than fix a
budget in advance, search both objectives at once and look at the trade-offs: the
*Pareto front* is every trial that no other trial beats on both, here at least as
accurate *and* at least as fast. ``parcv.Sampler(..., objectives=...)`` runs Optuna's
multi-objective study (NSGA-II below) round by round on parcv's engine: each trial is told
its mean accuracy and its mean fit time over the folds.

Each point of the front is a CV mean, with a standard error: two trials a hair apart in
accuracy cannot be told apart by these folds. The plot shows the front with error bars
on both axes, and below a ``select`` rule uses them: ship the fastest trial whose accuracy
is within one standard error of the best (the one-standard-error rule, applied to time).

The numbers are compared with Optuna's own bookkeeping: the front Optuna's study makes of
the same trials and values (``study.best_trials``) is parcv's front.
"""

# %%
# The search
# ----------
# A histogram gradient booster on the breast-cancer data; the space is the learning rate,
# the number of boosting iterations and the size of each tree. NSGA-II proposes 16 trials,
# 8 per generation. A fit time is measured, not computed: another run (or a busier machine)
# measures other times and NSGA-II then proposes other trials from the second generation on.
import matplotlib.pyplot as plt
import numpy as np
import optuna
from scipy.stats import loguniform, randint
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold

import parcv
from parcv.report import ParetoFrontDisplay

X, y = load_breast_cancer(return_X_y=True)
model = HistGradientBoostingClassifier(early_stopping=False, random_state=0)
space = {
    "learning_rate": loguniform(0.01, 1.0),
    "max_iter": randint(5, 61),
    "max_leaf_nodes": randint(2, 32),
}
cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
objectives = {"accuracy": "maximize", "fit_time": "minimize"}

result = parcv.search(
    model,
    space,
    X,
    y,
    cv=cv,
    scoring={"accuracy": "accuracy"},
    refit="accuracy",
    strategy=parcv.Sampler(
        "nsga2", n_trials=16, seed=0, objectives=objectives, options={"population_size": 8}
    ),
    backend="serial",
)
front = parcv.pareto_front(result)
print(f"{len(result.cv_results_['params'])} trials, {len(front)} on the Pareto front")
for i, trial in enumerate(front.trials):
    mark = "  <- shipped (best accuracy)" if i == front.selected else ""
    print(
        f"  trial {trial:2d}: accuracy {front.mean('accuracy')[i]:.4f} "
        f"± {front.se('accuracy')[i]:.4f}, fit {front.mean('fit_time')[i] * 1000:6.1f} ms{mark}"
    )

# %%
# Optuna's front of the same trials
# ---------------------------------
# An Optuna study with the same directions, told the same values, keeps the same trials as
# its ``best_trials``.
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(directions=list(objectives.values()))
cv_results = result.cv_results_
study.add_trials(
    [
        optuna.trial.create_trial(
            values=[cv_results["mean_test_accuracy"][i], cv_results["mean_fit_time"][i]],
            params={},
            distributions={},
        )
        for i in range(len(cv_results["params"]))
    ]
)
print("Optuna's best_trials:", [t.number for t in study.best_trials])
print("parcv's front:       ", list(front.trials))

# %%
# Choosing by a rule of one's own
# -------------------------------
# ``select`` receives the front and returns the place of the trial to ship. The rule below is
# the one-standard-error rule with time as the complexity: among the trials within one
# standard error of the best accuracy, the fastest. Applied to this front below; passed as
# ``parcv.Sampler(..., select=fastest_within_one_se)``, the search ships that trial and
# refits it on all data.
def fastest_within_one_se(front):
    """The fastest front trial whose accuracy is within one standard error of the best."""
    accuracy, se = front.mean("accuracy"), front.se("accuracy")
    best = int(np.argmax(accuracy))
    close = np.flatnonzero(accuracy >= accuracy[best] - se[best])
    return int(close[np.argmin(front.mean("fit_time")[close])])


chosen = fastest_within_one_se(front)
print(
    f"one-SE rule on this front: trial {front.trials[chosen]}, accuracy "
    f"{front.mean('accuracy')[chosen]:.4f} in {front.mean('fit_time')[chosen] * 1000:.1f} ms, "
    f"against trial {front.trials[front.selected]}: {front.mean('accuracy')[front.selected]:.4f} "
    f"in {front.mean('fit_time')[front.selected] * 1000:.1f} ms"
)
print("its parameters:", front.params[chosen])

# %%
# The front, with its uncertainty
# -------------------------------
# Grey dots are every trial; the front carries one standard error over the folds on both
# axes; the star is the trial shipped by default, the front's best accuracy (which needs no
# exchange rate between accuracy and milliseconds), and the square the one-SE rule's.
display = ParetoFrontDisplay.from_result(result)
display.ax_.plot(front.mean("fit_time")[chosen], front.mean("accuracy")[chosen], "s",
                 markersize=11, markerfacecolor="none", markeredgecolor="C3",
                 label=f"one-SE rule: trial {front.trials[chosen]}")  # fmt: skip
display.ax_.set_xscale("log")
display.ax_.legend(loc="lower right", fontsize=9)
plt.show()
