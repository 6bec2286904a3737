"""``parcv init``: a commented starter spec that ``parcv run`` accepts as written."""

from __future__ import annotations

from pathlib import Path

__all__ = ["STARTER", "write_starter"]

STARTER = """\
# A parcv sweep spec (TOML). Run it with `parcv run spec.toml`; `parcv inspect spec.toml`
# shows the plan first. Every key is checked: a wrong one is refused with its line.
# More complete specs: examples/*.toml in parcv's source tree.
name = "my-sweep"
description = "Logistic regression on the breast-cancer data: how strong a regularisation?"

[data]
source = "sklearn:breast_cancer"   # or "data.csv" with target = "label"; "x.npz"; "x.npy";
                                   # "python:module.function" returning (X, y)

[estimator]                        # one class with params, or a pipeline of steps
steps = [
  { name = "scale", class = "sklearn.preprocessing.StandardScaler" },
  { name = "model", class = "sklearn.linear_model.LogisticRegression" },
]

[space]                            # the candidates: every combination of these values
model__C = { logspace = [-3, 2, 6] }      # 0.001, 0.01, ..., 100
model__class_weight = ["None", "balanced"]  # TOML has no null: "None" is Python's None

[cv]
outer = 5                          # nested CV: 5 outer folds estimate the whole procedure,
inner = 3                          # 3 inner folds select C in each; drop `outer` for a
                                   # plain search (select and refit) with cv = 5

[search]
selection = "best"                 # or "one_se" with complexity = "model__C"

[scoring]
metrics = ["accuracy", "roc_auc"]
refit = "accuracy"                 # the metric that selects
return_train_score = true          # training curve in the validation-curve plot

[run]
backend = "local"                  # serial | local | dask (with scheduler = "tcp://...")
seed = 0                           # splits, searches and random_state come from it
"""


def write_starter(path: str | Path) -> Path:
    """Write :data:`STARTER` to ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from parcv.cli.spec import load_spec
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     spec = load_spec(write_starter(Path(tmp) / "spec.toml"))
    >>> spec.mode, spec.table("scoring")["refit"]
    ('nested', 'accuracy')
    """
    out = Path(path)
    out.write_text(STARTER, encoding="utf-8")
    return out
