"""
Your own table: text columns and a ColumnTransformer
====================================================

Real tables mix numbers and words: a city, a plan, a colour. parcv takes a pandas
``DataFrame`` as it is, so a ``ColumnTransformer`` picks its columns *by name* (one-hot codes
for the text columns, scaled numbers for the others), exactly as in scikit-learn. A spec takes
the same table from a CSV file: parcv reads it as ``pandas.read_csv`` does, with the same
dtypes.

Here a logistic regression on a small customer table (two text columns) is tuned over ``C``
by parcv, from Python and from a spec, and by scikit-learn's ``GridSearchCV`` on the same
folds: the three give the same numbers.
"""

# %%
# A table with text columns
# -------------------------
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import parcv
from parcv.cli import main

rng = np.random.default_rng(0)
n = 120
table = pd.DataFrame(
    {
        "age": rng.integers(18, 80, n),
        "city": rng.choice(["Lyon", "Nantes", "Paris", "Toulouse"], n),
        "plan": rng.choice(["basic", "family", "premium"], n, p=[0.5, 0.3, 0.2]),
        "monthly_fee": rng.gamma(4.0, 8.0, n).round(2),
    }
)
signal = (
    0.04 * (table["age"] - 45)
    - 0.05 * (table["monthly_fee"] - 32)
    + np.where(table["city"] == "Paris", 1.2, 0.0)
    + np.where(table["plan"] == "basic", 0.8, -0.4)
)
table["churned"] = np.where(signal + rng.normal(0, 0.8, n) > 0.3, "yes", "no")
print(table.head())
print(table.dtypes)

# %%
# The same search in parcv and in scikit-learn
# --------------------------------------------
# The ``ColumnTransformer`` names its columns; parcv passes the DataFrame's rows of each fold
# to it, as scikit-learn does.
X, y = table.drop(columns="churned"), table["churned"]
columns = ColumnTransformer(
    [
        ("text", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
        ("numbers", StandardScaler(), ["age", "monthly_fee"]),
    ]
)
model = Pipeline([("columns", columns), ("model", LogisticRegression())])
grid = {"model__C": [0.01, 0.1, 1.0, 10.0]}
cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)

result = parcv.search(model, grid, X, y, cv=cv, backend="serial")
reference = GridSearchCV(model, grid, cv=cv).fit(X, y)
print(result)
print(
    "same fold scores as GridSearchCV:",
    all(
        np.array_equal(result.cv_results_[f"split{k}_test_score"],
                       reference.cv_results_[f"split{k}_test_score"])
        for k in range(5)
    ),
)  # fmt: skip

# %%
# From a spec, with the table as a CSV file
# -----------------------------------------
# The same table saved as CSV, and a spec whose ``[estimator]`` is the same pipeline: its
# ``transformers`` are ``[name, { class = ..., params = {...} }, [columns]]``. The folds are
# the spec's default (5 stratified folds, shuffled with the run's seed); to compare with
# scikit-learn, the run's folds are read back from its store.
folder = Path(tempfile.mkdtemp())
table.to_csv(folder / "customers.csv", index=False)
spec = """\
[data]
source = "customers.csv"
target = "churned"

[[estimator.steps]]
name = "columns"
class = "sklearn.compose.ColumnTransformer"
[estimator.steps.params]
transformers = [
  ["text",
   { class = "sklearn.preprocessing.OneHotEncoder", params = { handle_unknown = "ignore" } },
   ["city", "plan"]],
  ["numbers", { class = "sklearn.preprocessing.StandardScaler" }, ["age", "monthly_fee"]],
]

[[estimator.steps]]
name = "model"
class = "sklearn.linear_model.LogisticRegression"

[space]
model__C = [0.01, 0.1, 1.0, 10.0]

[cv]
cv = 5

[run]
backend = "serial"

[report]
plots = false
"""
(folder / "spec.toml").write_text(spec)
main(["inspect", str(folder / "spec.toml")])
main(["run", str(folder / "spec.toml"), "--out", str(folder / "run"), "--quiet"])
from_spec = parcv.load(folder / "run" / "store.sqlite")
read_back = pd.read_csv(folder / "customers.csv")
folds = [(fold.train, fold.test) for fold in from_spec.splits]
same = GridSearchCV(model, grid, cv=folds).fit(read_back.drop(columns="churned"),
                                               read_back["churned"])  # fmt: skip
print(
    "the spec's scores equal GridSearchCV's on its folds:",
    np.array_equal(from_spec.cv_results_["mean_test_score"], same.cv_results_["mean_test_score"]),
)

# %%
# The validation curve
# --------------------
# Mean accuracy over the five folds, with its standard error, for each ``C``.
C = np.array(grid["model__C"])
summaries = result.summaries[result.refit_metric]
mean = np.array([s.mean for s in summaries])
se = np.array([s.se for s in summaries])
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.errorbar(C, mean, yerr=se, marker="o", capsize=3, label="parcv")
ax.plot(C, reference.cv_results_["mean_test_score"], "x", color="k", label="GridSearchCV")
ax.set_xscale("log")
ax.set_xlabel("C of the logistic regression")
ax.set_ylabel("CV accuracy")
ax.legend()
fig.tight_layout()
plt.show()
