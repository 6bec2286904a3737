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
# Every criterion has its own scale, so we plot each one minus its smallest value (for the
# evidence, the negative log evidence): the minimum of each curve is its choice.
cv_mse = -least_squares.cv_results_["mean_test_score"]
chosen = {
    "10-fold CV (MSE)": degrees[int(np.argmin(cv_mse))],
    "AIC": degrees[int(np.argmin(aic))],
    "BIC": degrees[int(np.argmin(bic))],
    "evidence": bayes_degrees[int(np.argmax(log_evidence))],
}
for method, d in chosen.items():
    print(f"{method:<17} selects degree {d}")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
left.plot(degrees, n_samples * np.log(cv_mse / cv_mse.min()), "o-", label="CV: N log(MSE / min)")
left.plot(degrees, aic - aic.min(), "s-", label="AIC - min")
left.plot(degrees, bic - bic.min(), "^-", label="BIC - min")
left.plot(bayes_degrees, log_evidence.max() - log_evidence, "d-", label="-log evidence - min")
left.set_ylim(-2, 40)
left.set_xlabel("polynomial degree d")
left.set_ylabel("criterion minus its minimum (smaller is better)")
left.set_title("Each method's curve over the degree")
left.legend()

grid = np.linspace(0, 1, 200)[:, np.newaxis]
right.plot(x, y, "o", color="black", label="data")
right.plot(grid, np.sin(2 * np.pi * grid), "--", color="grey", label="sin(2πx)")
for d in sorted(set(chosen.values())):
    methods = ", ".join(m.split(" ")[0] for m, c in chosen.items() if c == d)
    fit = polynomial.set_params(polynomialfeatures__degree=d).fit(X, y)
    right.plot(grid, fit.predict(grid), label=f"degree {d} ({methods})")
right.set_ylim(-2, 2)
right.set_xlabel("x")
right.set_ylabel("y")
right.set_title("The selected fits")
right.legend(fontsize=8)
plt.show()

# %%
# BIC penalises each parameter by :math:`\log N \approx 3.4` instead of AIC's 2, so it picks
# the smaller cubic; CV and AIC, which both estimate prediction error, agree on degree 5. The
# evidence rises sharply up to degree 4 and is then nearly flat: with the prior variance fitted
# by type-II maximum likelihood, extra weights are shrunk rather than fitted to the noise,
# so the posterior over degrees spreads over 4 to 8. For the error of the whole "select the
# degree by CV" procedure, see nested CV (the first example of this gallery).
