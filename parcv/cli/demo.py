"""The demo job: the classic polynomial-degree selection and a real dataset, by nested CV.

Both sweeps are embedded spec files run like ``parcv run``: each gets a run
directory with its SQLite store, report and plots; ``report.md`` at the top
gathers both.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from parcv.cli.spec import Spec, override_run, parse_spec
from parcv.cli.sweep import RunOutcome, prepare_run_dir, run_spec
from parcv.engine.backends import check_backend
from parcv.errors import PlanMismatchError
from parcv.report.run_dir import RunInfo, render_summary, write_private
from parcv.results.objects import NestedResult

__all__ = [
    "DEMO_SPECS",
    "DemoOutcome",
    "DemoRun",
    "polynomial_data",
    "polynomial_model",
    "run_demo",
]

logger = logging.getLogger(__name__)

POLYNOMIAL = """\
name = "polynomial-degree"
description = "Degree of a polynomial regression on noisy sin(2πx): \
nested CV estimates the error of selecting the degree by CV, and ships the degree selected \
on all data."

[data]
source = "python:parcv.cli.demo.polynomial_data"
params = {{ n_samples = {n_samples}, noise = 0.3, random_state = 0 }}

[estimator]
steps = [
  {{ name = "polynomialfeatures", class = "sklearn.preprocessing.PolynomialFeatures", \
params = {{ include_bias = false }} }},
  {{ name = "linearregression", class = "sklearn.linear_model.LinearRegression" }},
]

[space]
polynomialfeatures__degree = {{ range = [1, {max_degree}] }}

[cv]
outer = 5
inner = 5

[scoring]
metrics = "neg_mean_squared_error"
return_train_score = true

[report]
param = "polynomialfeatures__degree"
"""

BREAST_CANCER = """\
name = "breast-cancer"
description = "Regularisation of a scaled logistic regression on scikit-learn's breast-cancer \
data (569 tumours, 30 features), selected by nested CV."

[data]
source = "sklearn:breast_cancer"

[estimator]
steps = [
  {{ name = "standardscaler", class = "sklearn.preprocessing.StandardScaler" }},
  {{ name = "logisticregression", class = "sklearn.linear_model.LogisticRegression", \
params = {{ max_iter = 2000 }} }},
]

[space]
logisticregression__C = {{ logspace = [-3, 2, {n_values}] }}

[cv]
outer = 5
inner = 3

[scoring]
metrics = ["accuracy", "roc_auc"]
refit = "accuracy"
return_train_score = true
"""

DEMO_SPECS = {"polynomial": POLYNOMIAL, "breast_cancer": BREAST_CANCER}


def polynomial_data(
    n_samples: int = 60, *, noise: float = 0.3, random_state: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Draw noisy samples of ``sin(2 pi x)`` on [0, 1] (Bishop 2006, ch. 1).

    Parameters
    ----------
    n_samples : int, default=60
    noise : float, default=0.3
        Standard deviation of the Gaussian noise on y.
    random_state : int, default=0

    Returns
    -------
    X : ndarray of shape (n_samples, 1)
    y : ndarray of shape (n_samples,)

    Examples
    --------
    >>> X, y = polynomial_data(5)
    >>> X.shape, y.shape
    ((5, 1), (5,))
    """
    rng = np.random.default_rng(random_state)
    x = rng.uniform(0.0, 1.0, n_samples)
    y = np.sin(2 * np.pi * x) + rng.normal(0.0, noise, n_samples)
    return x[:, np.newaxis], y


def polynomial_model() -> Any:
    """Return the polynomial regression pipeline whose ``degree`` is selected."""
    return make_pipeline(PolynomialFeatures(include_bias=False), LinearRegression())


def demo_spec(name: str, *, quick: bool = False) -> Spec:
    """Return one embedded demo spec (``"polynomial"`` or ``"breast_cancer"``).

    Examples
    --------
    >>> demo_spec("polynomial", quick=True).mode
    'nested'
    """
    sizes = (
        {"n_samples": 60, "max_degree": 8, "n_values": 3}
        if quick
        else {"n_samples": 100, "max_degree": 13, "n_values": 6}
    )
    return parse_spec(DEMO_SPECS[name].format(**sizes), source=f"demo:{name}")


@dataclass(frozen=True)
class DemoRun:
    """One demo sweep: its run directory, result and one-screen summary."""

    run_dir: Path
    result: NestedResult
    summary: str


@dataclass(frozen=True)
class DemoOutcome:
    """Both demo sweeps and the directory holding them."""

    runs: list[DemoRun]
    out_dir: Path

    @property
    def polynomial(self) -> NestedResult:
        """Result of the polynomial-degree sweep."""
        return self.runs[0].result

    @property
    def breast_cancer(self) -> NestedResult:
        """Result of the breast-cancer sweep."""
        return self.runs[1].result


def _run_one(spec: Spec, out: Path, progress: bool | None) -> RunOutcome:
    # Same plan already stored: resume (computes only what is missing); else start again.
    try:
        return run_spec(spec, out=out, resume=True, progress=progress)
    except PlanMismatchError:
        logger.info("%s holds another plan's results; starting again", out)
        return run_spec(spec, out=out, overwrite=True, progress=progress)


def _nested(text: str, folder: str) -> str:
    """Demote headings one level and point image links into the sweep's folder."""
    text = re.sub(r"^(#+) ", r"#\1 ", text, flags=re.MULTILINE)
    return re.sub(r"\]\((\w+\.png)\)", rf"]({folder}/\1)", text)


def run_demo(
    out_dir: str | Path = "parcv-demo",
    *,
    backend: Any = "local",
    n_jobs: int | None = None,
    quick: bool = False,
    progress: bool | None = False,
) -> DemoOutcome:
    """Run both demo sweeps by nested CV into run directories, and the combined report.

    Parameters
    ----------
    out_dir : str or Path, default="parcv-demo"
        Created with mode 0700; holds ``polynomial/`` and ``breast_cancer/``
        (each a run directory with ``store.sqlite``) and ``report.md``.
    backend : {"serial", "local", "dask"}, default="local"
    n_jobs : int, default=None
        Workers; None uses every core.
    quick : bool, default=False
        Smaller sweeps (for tests).
    progress : bool or None, default=False
        Progress bars (None: when stderr is a terminal).

    Returns
    -------
    DemoOutcome

    Raises
    ------
    TypeError, ValueError
        A bad ``backend`` or ``n_jobs``, before any directory is created.
    """
    check_backend(backend, n_jobs)
    out = prepare_run_dir(out_dir)
    runs, parts = (
        [],
        [
            "# parcv demo",
            "",
            "Two model selections by nested CV, each in its own run directory "
            "(`parcv report DIR` rebuilds its report from the store).",
            "",
        ],
    )
    for name in DEMO_SPECS:
        spec = override_run(demo_spec(name, quick=quick), backend=backend, n_jobs=n_jobs)
        outcome = _run_one(spec, out / name, progress)
        result = cast(NestedResult, outcome.result)  # both demo specs are nested
        info = RunInfo(spec.name, mode=spec.mode)
        runs.append(DemoRun(outcome.run_dir, result, render_summary(result, info)))
        report = (outcome.run_dir / "report.md").read_text(encoding="utf-8")
        parts += [_nested(report, name), ""]
    write_private(out / "report.md", "\n".join(parts))
    return DemoOutcome(runs, out)
