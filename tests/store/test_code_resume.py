"""A resume after an edit or an upgrade recomputes what changed and says why (issue 39).

Edits happen between processes, as a user's do: a script imports the user's modules from
a directory, runs a search into one store with ``resume=True``, a fresh run and
scikit-learn's ``GridSearchCV``, and prints all three with parcv's log. Upgrades are faked
by replacing the version lookup (``parcv.plan.code.distribution_version``), and a small
distribution installed into a temporary ``site-packages`` stands for a library that only
some candidates use.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import parcv
from parcv.cli import main
from parcv.plan import code, tokens
from parcv.report.text import RunInfo, render_report
from parcv.store.readers import read_unidentified
from tests.estimators import FIT_LOG, FitLogged, logged_fits
from tests.store.surgery import as_rows

ROOT = Path(__file__).resolve().parents[2]

HELPERS = """\
import numpy as np

SCALE = {scale}
LOSS_POWER = {loss}


def shrink(X):
    return {shrink}
"""

CFG = "POWER = {power}\n"

MODELS = """\
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

import cfg
import helpers
from helpers import shrink


class MyModel(RegressorMixin, BaseEstimator):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        Z = shrink(np.asarray(X, dtype=float))
        self.mean_ = y.mean()
        A = Z.T @ Z + {penalty} * np.eye(Z.shape[1])
        self.coef_ = np.linalg.solve(A, Z.T @ (y - self.mean_))
        return self

    def predict(self, X):
        return shrink(np.asarray(X, dtype=float)) @ self.coef_ + self.mean_


def neg_loss(estimator, X, y):
    return -float(np.mean(np.abs(estimator.predict(X) - y) ** helpers.LOSS_POWER))


transform = lambda X: np.sign(X) * np.abs(X) ** cfg.POWER  # noqa: E731
"""

RUN = """\
import json, logging, sys
import numpy as np
from sklearn.datasets import make_regression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import parcv
import models

logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
X, y = make_regression(n_samples=60, n_features=4, noise=10.0, random_state=0)
X = X * 3.0
pipe = make_pipeline(FunctionTransformer(), models.MyModel())
space = {"functiontransformer__func": [None, models.transform],
         "mymodel__alpha": [0.1, 30.0]}
common = dict(cv=3, scoring=models.neg_loss, refit=False, backend="serial", progress=False)
resumed = parcv.search(pipe, space, X, y, store=sys.argv[1], resume=True, **common)
fresh = parcv.search(pipe, space, X, y, **common)
theirs = GridSearchCV(pipe, space, cv=3, scoring=models.neg_loss, refit=False).fit(X, y)
print(json.dumps([r.cv_results_["mean_test_score"].tolist() for r in (resumed, fresh, theirs)]))
"""

BASE = {"scale": 1.0, "loss": 2, "shrink": "X * SCALE", "power": 1.0, "penalty": "self.alpha"}
# Each edit, applied on top of the earlier ones: what the run must say, and how many of its
# 12 fits (4 candidates x 3 folds) it recomputes.
EDITS = [
    ({"shrink": "np.tanh(X * SCALE)"}, "function shrink in helpers.py changed", 12),
    ({"scale": 0.5}, "constant SCALE in helpers.py changed", 12),
    ({"penalty": "2.0 * self.alpha"}, "method MyModel.fit in models.py changed", 12),
    # The lambda's global; models.py imports cfg, so every unit reaches it (whole modules).
    ({"power": 0.5}, "constant POWER in cfg.py changed", 12),
    ({"loss": 1}, "constant LOSS_POWER in helpers.py changed", 12),  # the scorer's
]


def _write(folder: Path, values: dict[str, object]) -> None:
    (folder / "helpers.py").write_text(HELPERS.format(**values))
    (folder / "cfg.py").write_text(CFG.format(**values))
    (folder / "models.py").write_text(MODELS.format(**values))


def _run(folder: Path, store: Path) -> tuple[list[list[float]], list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    done = subprocess.run([sys.executable, str(folder / "run.py"), str(store)], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr.splitlines()


@pytest.mark.slow
def test_edits_between_runs_recompute_what_they_reach_as_a_fresh_run_and_scikit_learn(tmp_path):
    folder, store = tmp_path / "project", tmp_path / "run.sqlite"
    folder.mkdir()
    (folder / "run.py").write_text(RUN)
    values = dict(BASE)
    _write(folder, values)
    (before, *_), _ = _run(folder, store)
    for edit, cause, n_recomputed in EDITS:
        values.update(edit)
        _write(folder, values)
        (resumed, fresh, theirs), log = _run(folder, store)
        np.testing.assert_array_equal(resumed, fresh)
        np.testing.assert_array_equal(resumed, theirs)
        assert not np.array_equal(resumed, before), edit  # the edit changes the numbers
        assert f"{cause}: {n_recomputed} units recomputed" in log, log
        assert f"reusing {12 - n_recomputed} of 12 units; {n_recomputed} to compute" in log
        before = resumed


# Upgrades ------------------------------------------------------------------------------------

X, Y = make_regression(n_samples=45, n_features=3, noise=10.0, random_state=0)


@pytest.fixture
def fakepkg(tmp_path, monkeypatch):
    """An installed distribution ``fakepkg`` 1.0 (in a site-packages folder) with ``shift``."""
    site = tmp_path / "site-packages"
    (site / "fakepkg").mkdir(parents=True)
    (site / "fakepkg" / "__init__.py").write_text("def shift(X):\n    return X + 1.0\n")
    info = site / "fakepkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("fakepkg\n")
    monkeypatch.syspath_prepend(str(site))
    _forget_origins(monkeypatch)
    import fakepkg

    yield fakepkg
    sys.modules.pop("fakepkg", None)
    code._top_level_distributions.cache_clear()


def _forget_origins(monkeypatch):
    code._top_level_distributions.cache_clear()
    monkeypatch.setattr(code, "_ORIGINS", {})


def _upgrade(monkeypatch, name, version):
    real = code.distribution_version
    monkeypatch.setattr(code, "distribution_version",
                        lambda dist: version if dist == name else real(dist))  # fmt: skip


def _search(fakepkg, store, **options):
    pipe = make_pipeline(FunctionTransformer(), FitLogged())
    space = {"functiontransformer__func": [None, fakepkg.shift], "fitlogged__alpha": [0.1, 3.0]}
    return parcv.search(pipe, space, X, Y, cv=3, refit=False, backend="serial", store=store,
                        progress=False, **options)  # fmt: skip


@pytest.fixture
def fit_log():
    FIT_LOG.unlink(missing_ok=True)
    yield logged_fits
    FIT_LOG.unlink(missing_ok=True)


def test_an_upgrade_recomputes_exactly_the_units_of_its_code_and_says_so(
    fakepkg, fit_log, tmp_path, monkeypatch, caplog
):
    store = tmp_path / "run.sqlite"
    first = _search(fakepkg, store)
    FIT_LOG.unlink()
    _upgrade(monkeypatch, "fakepkg", "1.1")
    with caplog.at_level(logging.INFO, logger="parcv"):
        again = _search(fakepkg, store, resume=True)
    # Only the candidates that run fakepkg.shift: 2 of 4 candidates x 3 folds.
    assert len(fit_log()) == 6
    assert "fakepkg 1.0 → 1.1: 6 units recomputed" in caplog.messages
    assert "reusing 6 of 12 units; 6 to compute" in caplog.messages
    np.testing.assert_array_equal(first.cv_results_["mean_test_score"],
                                  again.cv_results_["mean_test_score"])  # fmt: skip
    assert again.notes == []


def test_a_scikit_learn_upgrade_recomputes_every_unit_and_says_so(
    fakepkg, fit_log, tmp_path, monkeypatch, caplog
):
    store = tmp_path / "run.sqlite"
    _search(fakepkg, store)
    FIT_LOG.unlink()
    old = code.distribution_version("scikit-learn")
    _upgrade(monkeypatch, "scikit-learn", "99.0")
    with caplog.at_level(logging.INFO, logger="parcv"):
        _search(fakepkg, store, resume=True)
    assert len(fit_log()) == 12
    assert f"scikit-learn {old} → 99.0: 12 units recomputed" in caplog.messages


def test_resume_values_keeps_the_records_and_the_result_and_report_say_so(
    fakepkg, fit_log, tmp_path, monkeypatch, caplog
):
    store = tmp_path / "run.sqlite"
    first = _search(fakepkg, store)
    FIT_LOG.unlink()
    _upgrade(monkeypatch, "fakepkg", "2.0")
    with caplog.at_level(logging.INFO, logger="parcv"):
        kept = _search(fakepkg, store, resume="values")
    assert fit_log() == []  # nothing recomputed
    line = "fakepkg 1.0 → 2.0: 6 units kept from records of the earlier code (resume='values')"
    assert line in caplog.messages
    np.testing.assert_array_equal(first.cv_results_["mean_test_score"],
                                  kept.cv_results_["mean_test_score"])  # fmt: skip
    (note,) = kept.notes
    assert note.startswith("6 of 12 units took a stored record computed by other code")
    assert "fakepkg 1.0 → 2.0" in note
    loaded = parcv.load(store)
    assert loaded.notes == kept.notes
    report = render_report(loaded, RunInfo("run"))
    assert "## Records of other code" in report and "fakepkg 1.0 → 2.0" in report
    # A strict resume now recomputes them, and says so again.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="parcv"):
        strict = _search(fakepkg, store, resume=True)
    assert len(fit_log()) == 6 and strict.notes == []
    assert "fakepkg 1.0 → 2.0: 6 units recomputed" in caplog.messages
    assert parcv.load(store).notes == []


def test_a_run_in_rounds_keeps_its_resume_values_notes_on_load(fakepkg, tmp_path, monkeypatch):
    store = tmp_path / "run.sqlite"
    pipe = make_pipeline(FunctionTransformer(), FitLogged())
    space = {"functiontransformer__func": [fakepkg.shift], "fitlogged__alpha": [0.1, 1.0, 3.0]}
    common = dict(cv=3, backend="serial", store=store, progress=False,
                  strategy=parcv.Halving(min_resources=15, factor=3, random_state=0))  # fmt: skip
    parcv.search(pipe, space, X, Y, **common)
    _upgrade(monkeypatch, "fakepkg", "2.0")
    kept = parcv.search(pipe, space, X, Y, resume="values", **common)
    (note,) = kept.notes
    assert "fakepkg 1.0 → 2.0" in note
    assert parcv.load(store).notes == kept.notes


def test_resume_values_keeps_the_refits_of_other_code_too(tmp_path, monkeypatch, fit_log):
    store = tmp_path / "run.sqlite"
    space = {"alpha": [0.1, 3.0]}
    common = dict(outer=3, inner=3, backend="serial", store=store, progress=False)
    first = parcv.nested_cv(FitLogged(), space, X, Y, **common)
    FIT_LOG.unlink()
    _upgrade(monkeypatch, "scikit-learn", "99.0")
    kept = parcv.nested_cv(FitLogged(), space, X, Y, resume="values", **common)
    assert len(fit_log()) == 1  # the final model only: a store keeps no fitted model here
    np.testing.assert_array_equal(first.outer_scores["score"], kept.outer_scores["score"])
    assert sum(bool(r.kept) for r in kept.records) == 3 * 3 * 2 + 3 * 2 + 3


def test_parcv_inspect_resume_shows_the_counts_before_anything_runs(tmp_path, monkeypatch, capsys):
    spec, out = tmp_path / "tiny.toml", tmp_path / "run"
    spec.write_text(textwrap.dedent(TINY))
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial", "--quiet"]) == 0
    old = code.distribution_version("scikit-learn")
    _upgrade(monkeypatch, "scikit-learn", "99.0")
    capsys.readouterr()
    assert main(["inspect", str(spec), "--out", str(out), "--backend", "serial",
                 "--resume"]) == 0  # fmt: skip
    shown = capsys.readouterr().out
    assert f"scikit-learn {old} → 99.0: 6 units recomputed" in shown
    assert main(["inspect", str(spec), "--out", str(out), "--backend", "serial", "--resume",
                 "--rerun-triggers", "values"]) == 0  # fmt: skip
    assert "6 units kept from records of the earlier code" in capsys.readouterr().out
    assert main(["inspect", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    assert "6 more are stored for other code or versions" in capsys.readouterr().out
    # The run says it too, and keeps them with --rerun-triggers values.
    run = ["run", str(spec), "--out", str(out), "--backend", "serial", "--quiet", "--resume"]
    assert main([*run, "--rerun-triggers", "values"]) == 0
    said = capsys.readouterr().err
    assert "6 units kept from records of the earlier code" in said
    assert "## Records of other code" in (out / "report.md").read_text()
    assert main(["run", str(spec), "--out", str(out), "--rerun-triggers", "values"]) == 2


TINY = """\
[data]
source = "sklearn:diabetes"
n_samples = 60

[estimator]
class = "sklearn.linear_model.Ridge"

[space]
alpha = [0.1, 10.0]

[cv]
cv = 3

[report]
plots = false
"""


def test_a_store_of_the_schema_before_keeps_being_read_and_resumed(tmp_path, fit_log):
    store = tmp_path / "run.sqlite"
    space = {"alpha": [0.1, 3.0]}
    common = dict(cv=3, backend="serial", store=store, progress=False)
    first = parcv.search(FitLogged(), space, X, Y, **common)
    as_rows(store)  # every record a row, as schema 5 kept them
    with closing(sqlite3.connect(store)) as conn, conn:  # as schema 4 left it
        for table in ("identities", "environments", "kept"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("UPDATE meta SET value = '4' WHERE name = 'schema'")
    loaded = parcv.load(store)
    np.testing.assert_array_equal(loaded.cv_results_["mean_test_score"],
                                  first.cv_results_["mean_test_score"])  # fmt: skip
    FIT_LOG.unlink()
    grown = parcv.search(FitLogged(), {"alpha": [0.1, 3.0, 9.0]}, X, Y, resume=True, **common)
    assert len(fit_log()) == 3 + 1  # the new candidate's folds and the final refit
    assert grown.notes == []
    assert read_unidentified(store) == 0  # the records it took now say their code


def test_a_resume_of_candidates_without_a_seed_says_what_it_reuses(tmp_path, caplog):
    from sklearn.ensemble import RandomForestRegressor

    space = {"max_depth": [2, 3]}
    forest = RandomForestRegressor(n_estimators=3)
    store = tmp_path / "a.sqlite"
    with caplog.at_level(logging.INFO, logger="parcv"):
        parcv.search(forest, space, X, Y, cv=2, backend="serial", store=store)
        assert not [m for m in caplog.messages if "random_state=None" in m]  # nothing reused
        parcv.search(forest, space, X, Y, cv=2, backend="serial", store=store, resume=True)
    (line,) = [m for m in caplog.messages if "random_state=None" in m]
    assert line.startswith("the candidates leave random_state=None (random_state)")
    assert "set random_state to an int for reproducible runs" in line
    caplog.clear()
    seeded = {**space, "random_state": [0]}
    with caplog.at_level(logging.INFO, logger="parcv"):
        for resume in (False, True):
            parcv.search(forest, seeded, X, Y, cv=2, backend="serial",
                         store=tmp_path / "b.sqlite", resume=resume)  # fmt: skip
    assert caplog.messages[-1].startswith("reusing 4 of 5 units")
    assert not [m for m in caplog.messages if "random_state=None" in m]


ROUNDS_MODULE = """
import numpy as np

SCALE = 1.0


def scaled(X):
    return np.asarray(X) * SCALE
"""


def test_a_run_in_rounds_reads_each_module_once_per_call_and_afresh_on_the_next(
    tmp_path, monkeypatch
):
    # One tokenizer per call: the rounds of one call read the user's module once (not once
    # per round), and the next call reads it afresh, so a value changed between calls
    # recomputes what reads it, to the numbers of a fresh run.
    (tmp_path / "roundsmod.py").write_text(ROUNDS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "roundsmod", raising=False)
    import roundsmod

    reads: list[str] = []
    real = tokens.module_source
    monkeypatch.setattr(tokens, "module_source", lambda name: reads.append(name) or real(name))
    pipe = make_pipeline(FunctionTransformer(roundsmod.scaled), FitLogged())
    space = {"fitlogged__alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 1e4, 1e5, 1e6]}
    common = dict(cv=2, backend="serial", progress=False,
                  strategy=parcv.Halving(min_resources=8, factor=2, random_state=0))  # fmt: skip
    store = tmp_path / "run.sqlite"
    first = parcv.search(pipe, space, X, Y, store=store, **common)
    assert first.n_iterations_ == 3
    assert reads.count("roundsmod") == 1
    monkeypatch.setattr(roundsmod, "SCALE", 1000.0)
    again = parcv.search(pipe, space, X, Y, store=store, resume=True, **common)
    assert reads.count("roundsmod") == 2
    fresh = parcv.search(pipe, space, X, Y, **common)
    np.testing.assert_array_equal(again.cv_results_["mean_test_score"],
                                  fresh.cv_results_["mean_test_score"])  # fmt: skip
    assert not np.array_equal(again.cv_results_["mean_test_score"],
                              first.cv_results_["mean_test_score"])  # fmt: skip
