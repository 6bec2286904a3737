"""
Growing a sweep: resume from the store
======================================

With ``store="run.sqlite"`` every finished fit is committed to an SQLite file as it
arrives, under a *content key*: a digest of what determines the fit (the estimator and its
parameters, the train and test rows, the data, the scorers). A later call with
``resume=True`` reuses every stored record whose key it needs, whatever sweep stored it, and
computes only the rest. So a sweep can be interrupted and resumed, or grown — more grid
values, more repeats of the folds — paying only for what is new.

Here a search over an SVM's ``C`` is run, then grown by three more values of ``C`` and a
second value of ``gamma``: the fits of the first sweep are not run again, and the result is
that of a fresh run.
"""

# %%
# The first sweep
# ---------------
import logging
import sys
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import parcv

# parcv logs (it never prints) how many stored units a resumed run reuses.
logging.basicConfig(stream=sys.stdout, format="parcv log: %(message)s")
logging.getLogger("parcv").setLevel(logging.INFO)

X, y = load_breast_cancer(return_X_y=True)
model = make_pipeline(StandardScaler(), SVC())
cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
store = Path(tempfile.mkdtemp()) / "run.sqlite"

first_grid = {"svc__C": [0.1, 1.0, 10.0], "svc__gamma": ["scale"]}
first = parcv.search(model, first_grid, X, y, cv=cv, store=store, backend="serial")
print(first)

# %%
# Growing it
# ----------
# Three more values of ``C``, and ``gamma=0.001`` beside ``"scale"``: 12 candidates, of which
# the first sweep already scored 3.
grown_grid = {"svc__C": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0], "svc__gamma": ["scale", 0.001]}
started = time.time()
grown = parcv.search(model, grown_grid, X, y, cv=cv, store=store, resume=True, backend="serial")
print(grown)

# %%
# Which fits ran now? A reused record keeps the time it finished in the first sweep.
fits = [record for record in grown.records if record.unit.kind == "fit"]
reused = [record for record in fits if record.finished < started]
print(
    f"{len(fits)} CV fits in the grown sweep: {len(reused)} reused, {len(fits) - len(reused)} run"
)
reused_candidates = sorted({grown.candidates[r.unit.candidate].label for r in reused})
print("reused the fits of:", reused_candidates)

# %%
# The result equals a fresh run without the store:
fresh = parcv.search(model, grown_grid, X, y, cv=cv, backend="serial")
print(
    "same scores as a fresh run:",
    np.array_equal(grown.cv_results_["mean_test_score"], fresh.cv_results_["mean_test_score"]),
)

# %%
# A store can also be read back without computing anything: ``parcv.load`` rebuilds the
# result of the last run from its records.
loaded = parcv.load(store)
print("loaded best:", loaded.best_params_, f"{loaded.best_score_:.4f}")

# %%
# The grown sweep's validation curves; filled markers are the candidates whose fits came from
# the first sweep.
results = grown.cv_results_
fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
for color, gamma in zip(["C0", "C1"], grown_grid["svc__gamma"], strict=True):
    rows = [i for i, p in enumerate(results["params"]) if p["svc__gamma"] == gamma]
    C = [results["params"][i]["svc__C"] for i in rows]
    mean = results["mean_test_score"][rows]
    ax.semilogx(C, mean, "-", color=color, label=f"gamma={gamma!r}")
    for c, m, i in zip(C, mean, rows, strict=True):
        was_stored = grown.candidates[i].label in reused_candidates
        face, layer = (color, 3) if was_stored else ("white", 2)
        ax.plot(c, m, "o", color=color, markerfacecolor=face, zorder=layer)
ax.plot([], [], "o", color="grey", label="fits reused from the store")
ax.plot([], [], "o", color="grey", markerfacecolor="white", label="fits run by the resumed sweep")
ax.set_xlabel("C")
ax.set_ylabel("mean CV accuracy")
ax.set_title("The grown sweep")
ax.legend()
plt.show()
