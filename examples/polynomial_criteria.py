"""Select a polynomial degree by CV, nested CV, AIC/BIC/Cp and the evidence.

Noisy data from a cubic; candidates are Bayesian linear regressions on the
basis ``[1, x, ..., x^d]`` for ``d = 0..8``, each with its noise and prior
variances set by type-II maximum likelihood. One ``search`` scores every
degree by 10-fold CV and, in the same task graph, fits each degree once on
all data for its AIC, BIC, Mallows' Cp and log evidence; ``nested_cv``
repeats every method on each outer-train part, so the choices of each
method can be compared fold by fold.

Run: python examples/polynomial_criteria.py
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from sklearn.model_selection import KFold

import parcv
from parcv.bayes import BayesianLinearRegression, model_posterior

DEGREES = list(range(9))
CRITERIA = ["aic", "bic", "cp", "evidence"]


def cubic_data(
    n_samples: int = 100, noise: float = 0.5, random_state: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``y = 0.5 - x - 2 x^2 + 3 x^3 + noise`` at ``x ~ U(-1, 1)``."""
    rng = np.random.default_rng(random_state)
    x = rng.uniform(-1.0, 1.0, n_samples)
    y = 0.5 - x - 2.0 * x**2 + 3.0 * x**3 + rng.normal(0.0, noise, n_samples)
    return x[:, np.newaxis], y


def select_degrees(random_state: int = 1, backend: str = "serial") -> dict[str, object]:
    """Run the search and the nested CV; return the results and each method's degree."""
    X, y = cubic_data(random_state=random_state)
    space = {"degree": DEGREES}
    options = {"scoring": "neg_mean_squared_error", "criteria": CRITERIA, "backend": backend}
    search = parcv.search(
        BayesianLinearRegression(), space, X, y,
        cv=KFold(10, shuffle=True, random_state=0), **options,
    )  # fmt: skip
    nested = parcv.nested_cv(
        BayesianLinearRegression(), space, X, y, refit=False,
        outer=KFold(5, shuffle=True, random_state=1),
        inner=KFold(5, shuffle=True, random_state=2), **options,
    )  # fmt: skip
    table = search.criteria_table
    if table is None:
        raise RuntimeError("search returned no criteria table although criteria were requested.")
    degrees: dict[str, object] = {method: DEGREES[c] for method, c in table.selected.items()}
    degrees["nested_cv"] = Counter(nested.chosen).most_common(1)[0][0]
    return {"search": search, "nested": nested, "degrees": degrees}


def main(random_state: int = 1) -> dict[str, object]:
    """Print the criteria table and every method's choice side by side."""
    out = select_degrees(random_state)
    search, nested = out["search"], out["nested"]
    table = search.criteria_table  # type: ignore[attr-defined]
    print("per degree: 10-fold CV MSE (as neg. MSE, mean ± se) next to each criterion\n")
    print(table.to_text())
    evidences = [row.values["evidence"] for row in table.rows]
    posterior = model_posterior(evidences)
    print("\nmodel posterior p(degree | data) from the evidences (uniform prior):")
    print("  " + "  ".join(f"d={d}: {p:.3f}" for d, p in zip(DEGREES, posterior, strict=True)))
    nested_est = nested.estimate["score"]  # type: ignore[attr-defined]
    print(f"\nnested CV estimate of the CV-selection procedure: MSE {-nested_est.mean:.4f} "
          f"± {nested_est.se:.4f}")  # fmt: skip
    print("\nselected degree, all data and on each of the 5 outer-train parts:")
    choices = nested.criteria_choices  # type: ignore[attr-defined]
    names = {"cv": "CV (best mean)", "one_se": "CV (one-SE rule)", "aic": "AIC", "bic": "BIC",
             "cp": "Mallows' Cp", "evidence": "evidence (type-II ML)"}  # fmt: skip
    degrees = out["degrees"]
    for method, title in names.items():
        per_fold = [DEGREES[c] if c is not None else None for c in choices.get(method, [])]
        print(f"  {title:<22} {degrees[method]!s:>3}   outer folds: {per_fold}")  # type: ignore[index]
    print(
        f"  {'nested CV (mode)':<22} {degrees['nested_cv']!s:>3}   "  # type: ignore[index]
        f"outer folds: {[DEGREES[c] for c in nested.chosen]}"
    )  # type: ignore[attr-defined]
    return out


if __name__ == "__main__":
    main()
