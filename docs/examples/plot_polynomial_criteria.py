"""
Choosing a polynomial degree: CV, AIC, BIC and the evidence
===========================================================

The textbook setting of model selection (Bishop, *Pattern Recognition and Machine Learning*,
ch. 1 and 3): a few noisy observations of :math:`\\sin(2\\pi x)`, fitted by polynomials
:math:`f(x) = w_0 + w_1 x + \\dots + w_d x^d`. A large degree fits every noisy point and
generalises badly; which degree should we pick?

Four answers, all from one call each:

* **cross-validation**: the degree with the smallest mean squared error on held-out folds;
* **AIC** :math:`= -2\\log L + 2 M` and **BIC** :math:`= -2\\log L + M\\log N`: the training
  fit penalised by the number of parameters :math:`M` (parcv computes them from one fit of
  each candidate on all data, in the same task graph as the CV fits);
* **the Bayesian evidence** :math:`p(y \\mid d) = \\int p(y \\mid w, d)\\,p(w)\\,dw` of a
  Bayesian linear regression whose noise and prior variances are set by type-II maximum
  likelihood (``parcv.bayes.BayesianLinearRegression``).

Each of parcv's numbers is checked against an independent computation: AIC and BIC against
statsmodels' ``OLS``, the log evidence against the Gaussian density of :math:`y` computed with
scipy.
"""

# %%
# Data: 30 points of sin(2πx) plus Gaussian noise
# ------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
import statsmodels.api as sm
from scipy.stats import multivariate_normal
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

import parcv
from parcv.bayes import BayesianLinearRegression, model_posterior

rng = np.random.default_rng(3)
n_samples = 30
x = rng.uniform(0.0, 1.0, n_samples)
y = np.sin(2 * np.pi * x) + rng.normal(0.0, 0.3, n_samples)
X = x[:, np.newaxis]
degrees = list(range(1, 9))
cv = KFold(n_splits=10, shuffle=True, random_state=0)

# %%
# CV, AIC and BIC of least-squares polynomials
# --------------------------------------------
# ``criteria=["aic", "bic"]`` adds one fit per degree on all data and its criteria; the CV
# scores come from the same search. The number of parameters is counted from the fitted
# model's coefficients (``d`` weights and the intercept). We stop at degree 8: beyond it the
# monomial basis on [0, 1] is so ill-conditioned that least-squares solvers (scikit-learn's
# and statsmodels') no longer agree on the residuals.
polynomial = make_pipeline(PolynomialFeatures(include_bias=False), LinearRegression())
least_squares = parcv.search(
    polynomial,
    {"polynomialfeatures__degree": degrees},
    X,
    y,
    cv=cv,
    scoring="neg_mean_squared_error",
    criteria=["aic", "bic"],
    backend="serial",
)
table = least_squares.criteria_table
print(table.to_text())

# %%
# The same AIC and BIC from statsmodels' ordinary least squares on the Vandermonde matrix:
aic = np.array([row.values["aic"] for row in table.rows])
bic = np.array([row.values["bic"] for row in table.rows])
fits = [sm.OLS(y, np.vander(x, d + 1, increasing=True)).fit() for d in degrees]
print("degree   AIC parcv  AIC statsmodels   BIC parcv  BIC statsmodels")
for d, a, b, fit in zip(degrees, aic, bic, fits, strict=True):
    print(f"{d:>6}  {a:10.4f}  {fit.aic:15.4f}  {b:10.4f}  {fit.bic:15.4f}")
print("agree:", np.allclose(aic, [f.aic for f in fits]) and np.allclose(bic, [f.bic for f in fits]))

# %%
# The Bayesian evidence
# ---------------------
# ``BayesianLinearRegression(degree=d)`` puts a Gaussian prior on the weights; fitting it
# maximises the evidence over the noise variance ``sigma2`` and the prior variance ``tau2``.
# ``criteria=["evidence"]`` records its log evidence for every degree.
bayes_degrees = list(range(0, 9))
bayes = parcv.search(
    BayesianLinearRegression(),
    {"degree": bayes_degrees},
    X,
    y,
    cv=cv,
    scoring="neg_mean_squared_error",
    criteria=["evidence"],
    backend="serial",
)
log_evidence = np.array([row.values["evidence"] for row in bayes.criteria_table.rows])

# %%
# Check: the evidence is the density of :math:`y \sim N(0,\ \sigma^2 I + \tau^2 \Phi\Phi^T)`,
# with the variances the fit found and :math:`\Phi` the basis :math:`[1, x, \dots, x^d]`.
by_hand = []
for d in bayes_degrees:
    model = BayesianLinearRegression(degree=d).fit(X, y)
    phi = np.vander(x, d + 1, increasing=True)
    cov = model.sigma2_ * np.eye(n_samples) + model.tau2_ * phi @ phi.T
    by_hand.append(multivariate_normal(np.zeros(n_samples), cov).logpdf(y))
print("degree  log evidence (parcv)  by hand")
for d, a, b in zip(bayes_degrees, log_evidence, by_hand, strict=True):
    print(f"{d:>6}  {a:20.4f}  {b:7.4f}")
print("agree:", np.allclose(log_evidence, by_hand))

# %%
# With a uniform prior over the degrees, the evidences give the posterior probability of
# each degree:
posterior = model_posterior(log_evidence)
print("  ".join(f"d={d}: {p:.2f}" for d, p in zip(bayes_degrees, posterior, strict=True)))

# %%
# What each method selects
# ------------------------
# Each method's curve over the degree, on its own scale; the filled marker is its choice.
cv_mse = -least_squares.cv_results_["mean_test_score"]
cv_se = np.array([row.se for row in table.rows])
chosen = {
    "10-fold CV": degrees[int(np.argmin(cv_mse))],
    "AIC": degrees[int(np.argmin(aic))],
    "BIC": degrees[int(np.argmin(bic))],
    "evidence": bayes_degrees[int(np.argmax(log_evidence))],
}
for method, d in chosen.items():
    print(f"{method:<11} selects degree {d}")

curves = [
    ("10-fold CV", degrees, cv_mse, "CV mean squared error ± se"),
    ("AIC", degrees, aic, "AIC (smaller is better)"),
    ("BIC", degrees, bic, "BIC (smaller is better)"),
    ("evidence", bayes_degrees, log_evidence, "log evidence (larger is better)"),
]
fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharex=True, layout="constrained")
for ax, (method, ds, values, ylabel), color in zip(
    axes.flat, curves, ["C0", "C1", "C2", "C3"], strict=True
):
    ax.plot(ds, values, "o-", color=color, markerfacecolor="white")
    if method == "10-fold CV":
        ax.fill_between(ds, values - cv_se, values + cv_se, color=color, alpha=0.2)
        ax.set_yscale("log")
    pick = ds.index(chosen[method])
    ax.plot(chosen[method], values[pick], "o", color=color, markersize=10)
    ax.set_title(f"{method}: degree {chosen[method]}")
    ax.set_ylabel(ylabel)
for ax in axes[1]:
    ax.set_xlabel("polynomial degree d")
plt.show()

# %%
# The fits the methods select, with the data and the function that generated them:
fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
grid = np.linspace(0, 1, 200)[:, np.newaxis]
ax.plot(x, y, "o", color="black", label="data")
ax.plot(grid, np.sin(2 * np.pi * grid), "--", color="grey", label="sin(2πx)")
for d in sorted(set(chosen.values())):
    methods = ", ".join(m for m, c in chosen.items() if c == d)
    fit = polynomial.set_params(polynomialfeatures__degree=d).fit(X, y)
    ax.plot(grid, fit.predict(grid), label=f"degree {d} ({methods})")
ax.set_ylim(-2, 2)
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.set_title("The selected least-squares fits")
ax.legend(fontsize=8)
plt.show()

# %%
# BIC penalises each parameter by :math:`\log N \approx 3.4` instead of AIC's 2, so it picks
# the smaller cubic; CV and AIC, which both estimate prediction error, agree on degree 5. The
# evidence rises sharply up to degree 4 and is then nearly flat: with the prior variance fitted
# by type-II maximum likelihood, extra weights are shrunk rather than fitted to the noise,
# so the posterior over degrees spreads over 4 to 8. For the error of the whole "select the
# degree by CV" procedure, see nested CV (the first example of this gallery).
