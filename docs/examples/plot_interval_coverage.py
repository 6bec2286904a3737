"""
Does the CV interval cover the error? The nested CV interval
============================================================

The usual confidence interval from K-fold CV, the mean fold error :math:`\\pm z\\,\\mathrm{se}`,
treats the K fold errors as independent. They are not (the training sets overlap), and the
interval is meant for the error of *the model fitted on these data*, :math:`\\mathrm{Err}_{XY}`,
which CV estimates poorly. Bates, Hastie and Tibshirani ("Cross-validation: what does it
estimate and how well does it do it?", JASA 2023) show that this interval can cover far less
often than its nominal level, and propose the *nested CV* (NCV) interval: it estimates the
mean squared error of the CV estimate by CV inside CV, corrects the estimate's bias, and keeps
roughly the nominal coverage.

``parcv.cross_validate(..., interval="ncv")`` computes both. Here we check their coverage
in a small simulation: ordinary least squares with 20 features on 60 samples, 90% intervals,
and the true error of each fitted model measured on a fresh sample of 20,000 rows.

This is a *cheap* simulation, to run in seconds: 30 data sets and 10 NCV repetitions each
(the authors use 200 repetitions and thousands of data sets). A coverage estimated from 30
data sets has a standard error near 0.05, so read the numbers as rough;
``scripts/bench/interval_coverage.py`` in the repository runs the paper's settings at full
size.
"""

# %%
# One data set
# ------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error

import parcv

n_samples, n_features, noise = 60, 20, 1.0
beta = np.full(n_features, 0.3)


def draw(n, rng):
    """Rows of the linear model y = X beta + noise."""
    X = rng.normal(size=(n, n_features))
    return X, X @ beta + rng.normal(scale=noise, size=n)


def intervals(seed):
    """One data set: its naive and NCV intervals, and its fitted model's true error."""
    rng = np.random.default_rng(seed)
    X, y = draw(n_samples, rng)
    result = parcv.cross_validate(
        LinearRegression(),
        X,
        y,
        cv=5,
        scoring="neg_mean_squared_error",
        interval="ncv",
        confidence=0.9,
        ncv_repetitions=10,
        backend="serial",
    )
    X_new, y_new = draw(20_000, rng)  # a large fresh sample: the true error
    model = LinearRegression().fit(X, y)
    true_error = mean_squared_error(y_new, model.predict(X_new))
    return result.naive_interval, result.interval, true_error


naive, ncv, true_error = intervals(0)
print(f"true error of the fitted model: {true_error:.3f}")
print(f"naive interval: {naive.estimate:.3f}  [{naive.lower:.3f}, {naive.upper:.3f}]")
print(
    f"NCV interval:   {ncv.estimate:.3f}  [{ncv.lower:.3f}, {ncv.upper:.3f}]  ({ncv.n_fits} fits)"
)

# %%
# The NCV interval's centre is below the CV estimate: CV trains on 4/5 of the rows, so it
# overestimates the error of the model fitted on all of them, and NCV corrects for that bias.
# With 60 rows and 20 features its interval is wide, and its lower end can even fall below
# zero.
#
# The simulation
# --------------
# The same on 30 data sets: does each interval contain the true error of the model fitted on
# that data set?
n_datasets = 30
rows = []
for seed in range(n_datasets):
    naive, ncv, true_error = intervals(seed)
    rows.append((true_error, naive.lower, naive.upper, ncv.lower, ncv.upper))
rows = np.array(rows)
true_error = rows[:, 0]
covered_naive = (rows[:, 1] <= true_error) & (true_error <= rows[:, 2])
covered_ncv = (rows[:, 3] <= true_error) & (true_error <= rows[:, 4])
print("nominal coverage 0.90")
for name, covered, width in [
    ("naive (mean ± z se)", covered_naive, rows[:, 2] - rows[:, 1]),
    ("nested CV (NCV)", covered_ncv, rows[:, 4] - rows[:, 3]),
]:
    se = np.sqrt(covered.mean() * (1 - covered.mean()) / n_datasets)
    print(f"{name:<20} coverage {covered.mean():.2f} ± {se:.2f}, mean width {width.mean():.2f}")

# %%
# Each data set's two intervals, with the true error of its fitted model (sorted by the true
# error). Red intervals miss it. The naive interval is narrow and often misses; the NCV
# interval is wider, as wide as the uncertainty actually is.
order = np.argsort(true_error)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), sharey=True, layout="constrained")
for ax, (lo, hi), covered, name in zip(
    axes,
    [(1, 2), (3, 4)],
    [covered_naive, covered_ncv],
    ["naive interval (mean ± z se)", "nested CV interval"],
    strict=True,
):
    for i, j in enumerate(order):
        color = "C0" if covered[j] else "C3"
        ax.plot([i, i], [rows[j, lo], rows[j, hi]], color=color, linewidth=2.5)
    ax.plot(np.arange(n_datasets), true_error[order], "k.", label="true error of the fitted model")
    ax.set_title(f"{name}: covers {covered.sum()} of {n_datasets}")
    ax.set_xlabel("data set (sorted by true error)")
    ax.legend(loc="upper left")
axes[0].set_ylabel("mean squared error (90% interval)")
plt.show()
