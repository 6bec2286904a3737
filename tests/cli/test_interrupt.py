"""Ctrl-C during `parcv run`, at each moment of a run: what is said, what is kept, the exit code.

Each run is a real subprocess whose hooks send SIGINT to the process itself at one moment
(while loading the data, creating the store, fitting, writing the report, after printing
the report's path): Python raises KeyboardInterrupt at that point, as for a Ctrl-C typed in
the terminal, with no sleeps or timing to get right.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.cli import main
from parcv.store.readers import read_records

ROOT = Path(__file__).resolve().parents[2]

HOOKS = """
import os
import signal
import sys

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

MOMENT = os.environ.get("INTERRUPT_AT", "")
FITS = []


def interrupt(moment):
    if moment == MOMENT:
        os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt at the next bytecode


def load():
    interrupt("data")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    return X, X @ [1.0, 2.0] + rng.normal(size=30)


class Mean(BaseEstimator, RegressorMixin):
    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X, y):
        FITS.append(1)
        if len(FITS) == int(os.environ.get("INTERRUPT_FIT", "3")):
            interrupt("fit")
        self.mean_ = float(np.mean(y)) + self.shift
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
"""

DRIVER = """
import sys

import hooks
import parcv.cli.sweep
import parcv.store.writer
from parcv.cli import main


def hooked(module, name, moment):
    real = getattr(module, name)

    def call(*args, **kwargs):
        hooks.interrupt(moment)
        return real(*args, **kwargs)

    setattr(module, name, call)


hooked(parcv.store.writer, "_index_blob", "store")  # inside the store's creation
hooked(parcv.cli.sweep, "write_outputs", "report")


class Stdout:
    # Ctrl-C just after the report's path is printed.
    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        self.stream.write(text)
        if text.startswith("Report:"):
            hooks.interrupt("printed")
        return len(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


sys.stdout = Stdout(sys.stdout)
sys.exit(main(sys.argv[1:]))
"""

SPEC = """\
[data]
source = "python:hooks.load"

[estimator]
class = "hooks.Mean"

[space]
shift = [0.0, 0.5]

[cv]
outer = 3
inner = 3

[report]
plots = false
"""
N_UNITS = 2 * 3 * 3 + 2 * 3 + 3 + 1  # inner fits, all-data fits, refits, final


def _run(
    tmp_path: Path, moment: str, *extra: str, fit: int = 3
) -> tuple[subprocess.CompletedProcess, list]:
    (tmp_path / "hooks.py").write_text(HOOKS)
    (tmp_path / "driver.py").write_text(DRIVER)
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC)
    words = ["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial", *extra]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        # A resume keeps the hooks' constants (INTERRUPT_AT is code the fits read: a change
        # recomputes them) and moves the interrupt past the last fit instead.
        "INTERRUPT_AT": moment or "fit",
        "INTERRUPT_FIT": str(fit if moment else 10**6),
    }
    done = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), *words],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    return done, words


def _leftovers(run_dir: Path) -> list[str]:
    return sorted(p.name for p in run_dir.glob("store.sqlite-*"))


def _resume_hint(words: list[str]) -> str:
    return shlex.join(["parcv", *words, "--resume"])


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["data", "store"])
def test_interrupt_before_any_unit_says_nothing_was_stored(
    tmp_path, moment, sigint_reaches_children
):
    done, words = _run(tmp_path, moment)
    assert done.returncode == 130, done.stderr
    assert "nothing was stored" in done.stderr
    assert shlex.join(["parcv", *words]) in done.stderr
    # The run directory this run made, with its store cut short, is gone again.
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_interrupt_while_fitting_says_how_many_units_are_kept_and_how_to_resume(
    tmp_path, sigint_reaches_children, capsys
):
    done, words = _run(tmp_path, "fit")
    assert done.returncode == 130, done.stderr
    run_dir = tmp_path / "run"
    stored = len(read_records(run_dir / "store.sqlite"))
    assert stored == 2, done.stderr  # the third fit was interrupted
    said = re.search(r"(\d+) finished units are kept in (\S+)\. Resume with:\n  (.+)", done.stderr)
    assert said is not None, done.stderr
    assert int(said[1]) == stored and said[3] == _resume_hint(words)
    assert _leftovers(run_dir) == []  # the store was closed: no -wal or -shm file
    # The report of the unfinished run names the spec the run was started with.
    assert main(["report", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    assert "SPEC" not in printed and _resume_hint(words) in printed
    assert _resume_hint(words) in (run_dir / "report.md").read_text()
    # Resuming finishes the run.
    resumed = _run(tmp_path, "", "--resume")[0]
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_records(run_dir / "store.sqlite")) == N_UNITS


@pytest.mark.slow
def test_the_units_ctrl_c_keeps_are_the_units_the_resume_reuses(tmp_path, sigint_reaches_children):
    # Interrupted at the 10th fit (serial): outer fold 0's six fits, its refit, three more.
    # The store holds 9 records, one a refit, which a resume reuses only once the fits
    # choose their candidate again: both messages count the 8 other units alike.
    done, _ = _run(tmp_path, "fit", fit=10)
    assert done.returncode == 130, done.stderr
    kept = re.search(r"interrupted\. (\d+) finished units \(and 1 refit of a chosen", done.stderr)
    assert kept is not None, done.stderr
    resumed = _run(tmp_path, "", "--resume")[0]
    assert resumed.returncode == 0, resumed.stderr
    reusing = re.search(r"reusing (\d+) of \d+ units", resumed.stderr)
    assert reusing is not None, resumed.stderr
    assert kept[1] == reusing[1] == "8"


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["report", "printed"])
def test_interrupt_after_every_unit_is_done_exits_0(tmp_path, moment, sigint_reaches_children):
    done, _ = _run(tmp_path, moment)
    run_dir = tmp_path / "run"
    assert done.returncode == 0, done.stderr
    assert len(read_records(run_dir / "store.sqlite")) == N_UNITS
    assert _leftovers(run_dir) == []
    if moment == "report":
        rebuild = shlex.join(["parcv", "report", str(run_dir)])
        assert "every unit is done" in done.stderr and rebuild in done.stderr, done.stderr
        assert main(["report", str(run_dir)]) == 0
        assert (run_dir / "report.md").is_file()


class _StopsAtTenthFit(Ridge):
    # The count lives outside the class (in the environment, which the serial backend shares):
    # a class attribute is part of the class's code, and a changed one recomputes its units.
    def fit(self, X, y, **kwargs):
        fits = int(os.environ["PARCV_TEST_FITS"]) + 1
        os.environ["PARCV_TEST_FITS"] = str(fits)
        if fits == 10:
            raise KeyboardInterrupt  # as if Ctrl-C was pressed here
        return super().fit(X, y, **kwargs)


def test_the_apis_interrupt_message_counts_the_units_its_resume_reuses(
    tmp_path, caplog, monkeypatch
):
    X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    store = tmp_path / "run.sqlite"
    grid = {"alpha": [0.1, 1.0]}
    monkeypatch.setenv("PARCV_TEST_FITS", "0")
    with pytest.raises(parcv.RunInterrupted, match=r"Interrupted\. 8 finished units \(and 1 refit"):
        parcv.nested_cv(_StopsAtTenthFit(), grid, X, y, outer=3, inner=3, backend="serial",
                        store=store)  # fmt: skip
    monkeypatch.setenv("PARCV_TEST_FITS", "100")
    with caplog.at_level(logging.INFO, logger="parcv"):
        parcv.nested_cv(_StopsAtTenthFit(), grid, X, y, outer=3, inner=3, backend="serial",
                        store=store, resume=True)  # fmt: skip
    assert "reusing 8 of " in caplog.text
