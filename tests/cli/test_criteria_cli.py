"""Criteria through the command line: spec keys, the side-by-side report, load, journal.

The polynomial example spec (noisy data from a cubic, candidates = degree) runs once
through ``parcv run``; its report is checked against computations that do not use
parcv's selection code: scikit-learn's CV and GridSearchCV on the same folds, BIC by
hand from least squares, and the evidence maximised over both variances with the
Gaussian density of scipy.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

import parcv
from parcv.bayes import BayesianLinearRegression
from parcv.cli import main
from parcv.cli.spec import load_spec
from parcv.cli.sweep import build_job
from parcv.report.run_dir import num

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "polynomial_criteria.toml"
DEGREES = list(range(9))
INNER = KFold(10, shuffle=True, random_state=0)  # the spec's cv.inner
OUTER = KFold(5, shuffle=True, random_state=1)  # the spec's cv.outer


def _cubic_data() -> tuple[np.ndarray, np.ndarray]:
    spec = importlib.util.spec_from_file_location(
        "polynomial_criteria", ROOT / "examples" / "polynomial_criteria.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cubic_data(n_samples=100, noise=0.5, random_state=1)


X, Y = _cubic_data()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("criteria") / "run"
    assert main(["run", str(SPEC), "--out", str(out), "--backend", "serial", "--quiet"]) == 0
    return out


def _table(report: str, header: str) -> dict[str, list[str]]:
    """Rows of the Markdown table whose header starts with ``header``, keyed by first cell."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def _design(x: np.ndarray, degree: int) -> np.ndarray:
    return np.vander(x[:, 0], degree + 1, increasing=True)


def _bic(X: np.ndarray, y: np.ndarray, degree: int, fitted: np.ndarray | None = None) -> float:
    """BIC = -2 log L + M log N, Gaussian noise at its ML variance RSS / N (OLS by default)."""
    if fitted is None:
        design = _design(X, degree)
        fitted = design @ np.linalg.lstsq(design, y, rcond=None)[0]
    n, rss = len(y), float(np.sum((y - fitted) ** 2))
    log_likelihood = -0.5 * n * (math.log(2.0 * math.pi * rss / n) + 1.0)
    return -2.0 * log_likelihood + (degree + 1) * math.log(n)


def _max_log_evidence(X: np.ndarray, y: np.ndarray, degree: int) -> float:
    """Type-II ML: the largest log N(y; 0, s2 I + t2 Phi Phi^T) over s2, t2 (scipy's density)."""
    gram = _design(X, degree) @ _design(X, degree).T
    eye = np.eye(len(y))

    def minus_log_evidence(log_variances: np.ndarray) -> float:
        cov = np.exp(log_variances[0]) * eye + np.exp(log_variances[1]) * gram
        logdet = np.linalg.slogdet(cov)[1]
        return 0.5 * (len(y) * math.log(2.0 * math.pi) + logdet + y @ np.linalg.solve(cov, y))

    starts = ([0.0, 0.0], [-2.0, 2.0])
    best = min((optimize.minimize(minus_log_evidence, s, method="L-BFGS-B") for s in starts),
               key=lambda r: r.fun)  # fmt: skip
    cov = np.exp(best.x[0]) * eye + np.exp(best.x[1]) * gram
    return float(sps.multivariate_normal.logpdf(y, np.zeros(len(y)), cov))


def test_report_puts_cv_next_to_each_criterion_as_computed_independently(run_dir):
    report = (run_dir / "report.md").read_text()
    assert "## Selection methods side by side" in report
    rows = _table(report, "| candidate | CV neg_mean_squared_error mean |")
    assert list(rows) == [f"degree={d}" for d in DEGREES]
    header = [c.strip() for c in report.split("| candidate | CV ")[1].splitlines()[0].split("|")]
    assert header[1:-1] == ["± se", "AIC", "BIC", "Cp", "log evidence", "n_params", "selected by"]
    cv_means, bics, evidences = [], [], []
    for d in DEGREES:
        model = BayesianLinearRegression(degree=d)
        scores = cross_val_score(model, X, Y, cv=INNER, scoring="neg_mean_squared_error")
        cv_means.append(scores.mean())
        fitted = model.fit(X, Y).predict(X)
        evidences.append(_max_log_evidence(X, Y, d))
        mean, se, _aic, bic, _cp, evidence, n_params, _ = rows[f"degree={d}"]
        assert mean == num(scores.mean())
        assert float(se) == pytest.approx(scores.std(ddof=1) / math.sqrt(10), rel=5e-3)
        assert bic == num(_bic(X, Y, d, fitted))  # the report shows 6 significant digits
        assert float(evidence) == pytest.approx(evidences[-1], rel=1e-5)
        assert n_params == str(d + 1)
        bics.append(_bic(X, Y, d))  # least squares: the classical BIC, no prior
    # Every method finds the cubic, and the report says so.
    assert np.argmax(cv_means) == np.argmin(bics) == np.argmax(evidences) == 3
    assert rows["degree=3"][-1] == "CV best, one-SE, AIC, BIC, Cp, evidence"
    assert all(rows[f"degree={d}"][-1] == "" for d in DEGREES if d != 3)


def test_report_shows_each_methods_choice_per_outer_fold_as_computed_independently(run_dir):
    report = (run_dir / "report.md").read_text()
    rows = _table(report, "| method | all data |")
    assert list(rows) == ["CV best", "one-SE", "AIC", "BIC", "Cp", "evidence", "**nested CV**"]
    assert {rows[m][0] for m in rows} == {"degree=3"}  # on all data every method picks 3
    nested, bic = [], []
    for train, _ in OUTER.split(X):
        grid = GridSearchCV(BayesianLinearRegression(), {"degree": DEGREES}, cv=INNER,
                            scoring="neg_mean_squared_error").fit(X[train], Y[train])  # fmt: skip
        nested.append(f"degree={grid.best_params_['degree']}")
        by_bic = np.argmin([_bic(X[train], Y[train], d) for d in DEGREES])
        bic.append(f"degree={by_bic}")
    assert rows["**nested CV**"][1:6] == nested
    assert rows["CV best"][1:6] == nested  # selection rule "best": the same inner-CV choice
    assert rows["BIC"][1:6] == bic == ["degree=3"] * 5
    assert rows["BIC"][6] == "degree=3 (5/5)"
    count = nested.count("degree=3")
    assert rows["**nested CV**"][6] == f"degree=3 ({count}/5)" and count >= 3
    # The nested-CV estimate shown is that of the same procedure.
    result = parcv.load(run_dir / "store.sqlite")
    assert [f"degree={c}" for c in result.chosen] == nested


def test_loaded_run_equals_the_python_api_result(run_dir):
    stored = parcv.load(run_dir / "store.sqlite")
    direct = parcv.nested_cv(
        BayesianLinearRegression(), {"degree": DEGREES}, X, Y, outer=OUTER, inner=INNER,
        scoring=["neg_mean_squared_error"], refit="neg_mean_squared_error",
        criteria=["aic", "bic", "cp", "evidence"],
        backend="serial",
    )  # fmt: skip
    assert stored.criteria_table == direct.criteria_table
    assert stored.criteria_choices == direct.criteria_choices
    assert stored.chosen == direct.chosen
    saved = json.loads((run_dir / "results.json").read_text())
    assert saved["final"]["criteria"] == direct.criteria_table.to_dict()


TINY = """\
[data]
source = "sklearn:diabetes"
n_samples = 60

[estimator]
class = "sklearn.linear_model.LinearRegression"

[space]
fit_intercept = [true, false]

[cv]
cv = 3

[report]
plots = false
"""


def test_spec_n_params_reaches_every_criterion(tmp_path):
    path = tmp_path / "n_params.toml"
    path.write_text(TINY + '[search]\ncriteria = { names = ["aic", "bic"], n_params = 7 }\n')
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--backend", "serial",
                 "--quiet"]) == 0  # fmt: skip
    table = parcv.load(tmp_path / "run" / "store.sqlite").criteria_table
    for row in table.rows:  # BIC - AIC = M (log N - 2), whatever the fit
        assert row.values["n_params"] == 7
        assert row.values["bic"] - row.values["aic"] == pytest.approx(7 * (math.log(60) - 2))
    assert "## Selection methods side by side" in (tmp_path / "run" / "report.md").read_text()
    direct = build_job(load_spec(path)).run(parcv.RunOptions(backend="serial", progress=False))
    assert direct.criteria_table == table


def _journal_mode(path: Path) -> str:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]


def test_journal_from_the_spec_or_the_command_line(tmp_path, capsys, monkeypatch):
    import parcv.store.opening as opening

    opened = []  # the journal mode each store is opened with (a clean close folds WAL back)
    connect = opening._connect  # patched where open_store looks it up
    monkeypatch.setattr(opening, "_connect", lambda p, j: opened.append(j) or connect(p, j))
    path = tmp_path / "tiny.toml"
    path.write_text(TINY + '[run]\njournal = "delete"\n')
    run = ["run", str(path), "--backend", "serial", "--quiet"]
    assert main([*run, "--out", str(tmp_path / "spec")]) == 0
    assert opened == ["delete"]
    assert _journal_mode(tmp_path / "spec" / "store.sqlite") == "delete"
    assert main([*run, "--out", str(tmp_path / "flag"), "--journal", "wal"]) == 0
    assert opened == ["delete", "wal"]
    capsys.readouterr()
    assert main([*run, "--out", str(tmp_path / "bad"), "--journal", "off"]) == 2
    assert "invalid choice: 'off'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
