"""A spec's own modules: a class in a module beside the spec, on every backend, from any cwd.

The runs are ``parcv`` commands in their own processes, started from another folder than
the spec's, as a user types them: nothing of this test's interpreter (its ``sys.path``,
its loaded modules) reaches them. The reference is scikit-learn on the same folds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import Pipeline

import parcv
from parcv.cli import main

MODULE = """\
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin


class Tx(BaseEstimator, TransformerMixin):
    def __init__(self, scale=1.0):
        self.scale = scale

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.asarray(X) * self.scale
"""

SPEC = """\
[data]
source = "sklearn:make_regression"
params = {{ n_samples = 30, n_features = 3, noise = 5.0, random_state = 0 }}

[estimator]
steps = [
  {{ name = "tx", class = "{module}.Tx", params = {{ scale = 2.0 }} }},
  {{ name = "ridge", class = "sklearn.linear_model.Ridge" }},
]

[cv]
cv = {{ kind = "kfold", n_splits = 3, shuffle = false }}

[report]
plots = false
"""


def _write(folder: Path, module: str, source: str = MODULE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(source)
    spec = folder / "own.toml"
    spec.write_text(SPEC.format(module=module))
    return spec


def _parcv(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``parcv WORDS`` in a process of its own, in ``cwd``, with no PYTHONPATH of this test's."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "parcv.cli", *words],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _scores(run_dir: Path) -> np.ndarray:
    return np.asarray(parcv.load(run_dir / "store.sqlite")["test_score"])


def _reference(folder: Path, module: str) -> np.ndarray:
    """scikit-learn's scores of the same pipeline on the same folds (module loaded by path)."""
    found = importlib.util.spec_from_file_location(f"_reference_{module}", folder / f"{module}.py")
    loaded = importlib.util.module_from_spec(found)
    found.loader.exec_module(loaded)
    X, y = parcv_data()
    pipe = Pipeline([("tx", loaded.Tx(scale=2.0)), ("ridge", Ridge(random_state=0))])
    return cross_val_score(pipe, X, y, cv=KFold(3), scoring="r2")


def parcv_data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_regression

    X, y = make_regression(n_samples=30, n_features=3, noise=5.0, random_state=0)
    return X, y


@pytest.mark.parametrize(
    "backend",
    [
        ["--backend", "serial"],
        ["--backend", "local", "--n-jobs", "2"],
        pytest.param(["--backend", "dask", "--n-jobs", "2"], marks=pytest.mark.cluster),
    ],
    ids=["serial", "local", "dask"],
)
def test_a_class_in_a_module_beside_the_spec_runs_from_another_folder(tmp_path, backend):
    module = f"own_tx_{backend[1]}"
    spec = _write(tmp_path / "specs", module)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "run"
    done = _parcv("run", str(spec), "--out", str(out), "--quiet", *backend, cwd=elsewhere)
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_allclose(_scores(out), _reference(spec.parent, module), rtol=1e-12)
    # The run directory says where the spec's own modules came from.
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["spec_folder"] == str(spec.parent.resolve())


@pytest.mark.cluster
def test_workers_of_a_running_scheduler_import_the_spec_modules(tmp_path, dask_cluster_1):
    # The cluster's worker was started by this test process, before the spec's folder
    # existed: it finds the module only through what the run sets up on its workers.
    module = "own_tx_remote"
    spec = _write(tmp_path / "remote-specs", module)
    out = tmp_path / "run"
    address = dask_cluster_1.scheduler_address
    done = _parcv("run", str(spec), "--out", str(out), "--quiet", "--scheduler", address,
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_allclose(_scores(out), _reference(spec.parent, module), rtol=1e-12)


@pytest.mark.slow
def test_an_edit_of_the_module_then_a_resume_gives_the_fresh_run_numbers(tmp_path):
    module = "own_tx_edited"
    spec = _write(tmp_path / "specs", module)
    first_cwd, second_cwd = tmp_path / "a", tmp_path / "b"
    first_cwd.mkdir()
    second_cwd.mkdir()
    out = tmp_path / "run"
    local = ["--backend", "local", "--n-jobs", "2", "--quiet"]
    done = _parcv("run", str(spec), "--out", str(out), *local, cwd=first_cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    before = _scores(out)
    # The transformer now scales absolute values: a different model, other numbers.
    (spec.parent / f"{module}.py").write_text(
        MODULE.replace("np.asarray(X) * self.scale", "np.abs(np.asarray(X)) * self.scale")
    )
    # Resumed from another folder, with the command the run directory keeps.
    resume = (out / "resume-command.txt").read_text().split()
    assert resume[0] == "parcv"
    done = _parcv(*resume[1:], cwd=second_cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{module}.py changed" in done.stderr, done.stderr
    fresh = tmp_path / "fresh"
    done = _parcv("run", str(spec), "--out", str(fresh), *local, cwd=second_cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_array_equal(_scores(out), _scores(fresh))
    assert not np.array_equal(_scores(out), before)
    np.testing.assert_allclose(_scores(fresh), _reference(spec.parent, module), rtol=1e-12)


def test_a_missing_module_says_where_parcv_looked_and_how_to_fix_it(tmp_path, capsys):
    spec = _write(tmp_path / "specs", "own_tx_missing")
    spec.write_text(SPEC.format(module="own_tx_not_there"))
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "estimator.steps[0].class = 'own_tx_not_there.Tx' is not valid" in err
    assert "No module named 'own_tx_not_there'" in err
    # Where it looked: the spec's folder, first on Python's import path.
    assert (
        f"looked in the spec's folder, then on the rest of Python's import path "
        f"(sys.path: {spec.parent.resolve()}, " in err
    ), err
    assert "own_tx_not_there.py" in err and "PYTHONPATH" in err  # how to fix it
    assert not (tmp_path / "run" / "store.sqlite").exists()  # refused before any fit


def test_a_local_pool_started_before_the_folder_was_on_the_path_imports_from_it(
    tmp_path, monkeypatch
):
    # From Python: the pool's worker started (and loky copied sys.path into it) before the
    # module's folder was on the path; the plan's payload says where to import it from.
    X, y = parcv_data()
    backend = parcv.LocalBackend(n_jobs=1)
    parcv.cross_validate(Ridge(), X, y, cv=KFold(3), backend=backend, progress=False)
    module = "own_tx_late"
    folder = tmp_path / "late"
    _write(folder, module)
    monkeypatch.syspath_prepend(str(folder))
    loaded = importlib.import_module(module)
    pipe = Pipeline([("tx", loaded.Tx(scale=2.0)), ("ridge", Ridge(random_state=0))])
    result = parcv.cross_validate(pipe, X, y, cv=KFold(3), backend=backend, progress=False)
    np.testing.assert_allclose(result["test_score"], _reference(folder, module), rtol=1e-12)


def test_a_worker_that_cannot_see_the_folder_says_which_and_how_to_fix_it(tmp_path):
    from parcv.engine.backends.base import WorkerImports

    missing = str(tmp_path / "not-shared")
    imports = WorkerImports((missing,), ("mod2",), driver=-1)
    with pytest.raises(FileNotFoundError) as caught:
        imports.check()
    message = str(caught.value)
    assert repr(missing) in message and "mod2" in message
    assert "file system the workers share" in message and "install the module" in message
