"""
Tuning a booster with TPE and Hyperband pruning, in nested CV
=============================================================

Optuna's documentation recommends a model-based sampler with a pruner for boosters: TPE
proposes each trial from the ones before, and Hyperband stops the poor ones after a few
boosting iterations instead of letting them run to the end. ``parcv.Sampler(...,
pruner=..., resource=parcv.Iterations(...))`` is that study, run on parcv's engine: each
trial is scored along its iteration path, reports its mean test score over the inner
folds at each checkpoint (the iteration count is Optuna's step) and stops when
``trial.should_prune()`` says so.

In a nested CV each outer fold runs a study of its own on its training rows, so the outer
scores estimate what *the whole tuning procedure* (TPE with pruning) achieves on new data,
not what the best trial scored on the data that chose it.

The numbers are checked against Optuna's own ``study.optimize`` on the first outer
fold's rows: the same trials, states, intermediate values and values.
"""

# %%
# The nested search
# -----------------
# A histogram gradient booster on the breast-cancer data (its ten mean measurements), its
# learning rate and tree size tuned, its number of iterations the resource: checkpoints at
# 10, 20, 30 and 40 iterations. 12 trials per outer fold, 3 outer and 3 inner folds;
# ``early_stopping=False``, so that every fit runs the iterations it is asked for.
import matplotlib.pyplot as plt
import numpy as np
import optuna
from scipy.stats import loguniform
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold, cross_val_score

import parcv
from parcv.strategies.sampler import rebuild_pruned_study

X, y = load_breast_cancer(return_X_y=True)
X = X[:, :10]  # the ten mean measurements of each tumour's cells (of 30 columns)
model = HistGradientBoostingClassifier(early_stopping=False, random_state=0)
space = {"learning_rate": loguniform(0.005, 0.5), "max_leaf_nodes": [2, 4, 8, 16, 31]}
path = parcv.Iterations("max_iter", up_to=40, every=10)
outer = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
inner = StratifiedKFold(n_splits=3, shuffle=True, random_state=1)


def strategy():
    pruner = optuna.pruners.HyperbandPruner(min_resource=10, max_resource=40)
    return parcv.Sampler("tpe", n_trials=12, seed=0, pruner=pruner, resource=path)


result = parcv.nested_cv(
    model,
    space,
    X,
    y,
    outer=outer,
    inner=inner,
    scoring="accuracy",
    strategy=strategy(),
    backend="serial",
    progress=False,
)
print(result)

# %%
# What pruning saved
# ------------------
# ``cv_results_`` of a pruned search has a row per (trial, checkpoint) with the columns
# ``trial``, ``trial_state`` and ``reported``: a trial's last reported checkpoint is how far
# it got. A trial pruned at 10 iterations cost a quarter of one run to 40.
for o, search in enumerate(result.inner):
    cv = search.cv_results_
    reached: dict[int, int] = {}
    states: dict[int, str] = {}
    for row, trial in enumerate(cv["trial"]):
        states[trial] = cv["trial_state"][row]
        if cv["reported"][row]:
            reached[trial] = max(reached.get(trial, 0), cv["params"][row]["max_iter"])
    counts = {s: list(states.values()).count(s) for s in sorted(set(states.values()))}
    spent = sum(reached.values()) / (len(states) * path.up_to)
    print(
        f"outer fold {o}: {counts}; iterations reached: {spent:.0%} of every trial run "
        f"to {path.up_to}; chosen {result.chosen_params[o]}"
    )

# %%
# The intermediate values
# -----------------------
# Each line is a trial's mean inner accuracy at each checkpoint it reached, on the first
# outer fold; a cross marks where a trial was pruned.
cv = result.inner[0].cv_results_
fig, ax = plt.subplots(figsize=(6.5, 4))
for trial in sorted(set(cv["trial"])):
    rows = [r for r in range(len(cv["trial"])) if cv["trial"][r] == trial and cv["reported"][r]]
    steps = [cv["params"][r]["max_iter"] for r in rows]
    means = [cv["mean_test_score"][r] for r in rows]
    pruned = cv["trial_state"][rows[0]] == "PRUNED" if rows else False
    ax.plot(
        steps,
        means,
        marker=".",
        color="tab:gray" if pruned else "tab:blue",
        alpha=0.6 if pruned else 0.9,
    )
    if pruned:
        ax.plot(steps[-1], means[-1], "x", color="black")
ax.set_xlabel("boosting iterations (the step)")
ax.set_ylabel("mean inner accuracy")
ax.set_title("TPE with Hyperband pruning, outer fold 0 (gray: pruned)")
fig.tight_layout()

# %%
# The outer estimate
# ------------------
# The outer scores are those of the booster each outer fold's study chose, refit on that
# fold's training rows and scored on its test rows: the estimate of the tuning procedure.
scores = result.outer_scores["score"]
print(f"outer accuracy: {np.round(scores, 4)}, mean {scores.mean():.4f}")

# %%
# The same as Optuna's own study
# ------------------------------
# On the first outer fold's training rows, an Optuna user's objective: fit every inner
# fold at each checkpoint, report the mean, stop when told. ``rebuild_pruned_study`` gives
# parcv's trials back as an Optuna study.
train = next(outer.split(X, y))[0]
folds = list(inner.split(X[train], y[train]))


def objective(trial):
    params = {
        "learning_rate": trial.suggest_float("learning_rate", 0.005, 0.5, log=True),
        "max_leaf_nodes": trial.suggest_categorical("max_leaf_nodes", [2, 4, 8, 16, 31]),
    }
    mean = np.nan
    for count in path.all_checkpoints:
        booster = clone(model).set_params(max_iter=count, **params)
        mean = cross_val_score(booster, X[train], y[train], cv=folds).mean()
        trial.report(mean, count)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return mean


optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(
    study_name="parcv",
    direction="maximize",
    sampler=optuna.samplers.TPESampler(seed=0),
    pruner=optuna.pruners.HyperbandPruner(min_resource=10, max_resource=40),
)
study.optimize(objective, n_trials=12)
ours = rebuild_pruned_study(result.inner[0], space=space)
same = [
    (a.state, a.params, a.intermediate_values, a.value)
    == (b.state, b.params, b.intermediate_values, b.value)
    for a, b in zip(ours.trials, study.trials, strict=True)
]
print(f"trials equal to Optuna's: {sum(same)} of {len(same)}")
