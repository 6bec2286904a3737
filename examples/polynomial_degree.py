"""Select the degree of a polynomial regression by nested CV.

Run: python examples/polynomial_degree.py
"""

from __future__ import annotations

import parcv
from parcv.cli.demo import polynomial_data, polynomial_model


def main() -> parcv.NestedResult:
    """Nested CV over degrees 1..12 on noisy sin(2 pi x); print the estimate and choices."""
    X, y = polynomial_data(100, noise=0.3, random_state=0)
    space = {"polynomialfeatures__degree": list(range(1, 13))}
    result = parcv.nested_cv(
        polynomial_model(), space, X, y, outer=5, inner=5, scoring="neg_mean_squared_error"
    )
    est = result.estimate["score"]
    print(f"nested-CV MSE of the whole selection procedure: {-est.mean:.4f} ± {est.se:.4f} (se)")
    print(
        "degree chosen in each outer fold:",
        [p["polynomialfeatures__degree"] for p in result.chosen_params],
    )
    assert result.final is not None
    print("degree shipped (selected on all data):", result.final.best_params_)
    return result


if __name__ == "__main__":
    main()
