"""A new user's first hour (issue 18): what the terminal, the run directory and the README show."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import warnings
from pathlib import Path

import pytest

import parcv
from parcv.cli import main

ROOT = Path(__file__).resolve().parents[2]

SMALL = """\
[data]
source = "sklearn:breast_cancer"
n_samples = 120

[estimator]
class = "sklearn.linear_model.LogisticRegression"
params = { max_iter = 200 }

[space]
C = [0.01, 1.0]

[cv]
cv = 3

[run]
backend = "serial"
"""


def _run_on_a_terminal(args, cwd):
    """Run ``python -m parcv.cli ARGS`` with stdout and stderr on a pseudo-terminal."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a real terminal on fds 0-2, 100 columns wide as a window
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        os.chdir(cwd)
        os.execvpe(sys.executable, [sys.executable, "-m", "parcv.cli", *args], os.environ)
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def test_a_run_on_a_terminal_shows_a_live_bar_with_the_best_score_and_writes_plots(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SMALL)
    code, text = _run_on_a_terminal(["run", str(spec), "--out", str(tmp_path / "run")], tmp_path)
    assert code == 0, text
    assert "7/7" in text  # 6 fits + the final refit: done/total
    assert "best=accuracy=" in text or "best=score=" in text, text
    assert "fit/s" in text or "s/fit" in text
    pngs = sorted(p.name for p in (tmp_path / "run").glob("*.png"))
    assert pngs, "no plots by default"
    report = (tmp_path / "run" / "report.md").read_text()
    assert all(name in report for name in pngs)


def test_off_a_terminal_the_run_is_quiet_but_still_plots(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(SMALL)
    assert main(["run", str(spec), "--out", str(tmp_path / "run")]) == 0
    assert "it/s" not in capsys.readouterr().err
    assert list((tmp_path / "run").glob("*.png"))


def _readme_blocks(language):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
@pytest.mark.parametrize("number", range(len(_readme_blocks("python"))))
def test_every_readme_python_block_runs(tmp_path, monkeypatch, number):
    monkeypatch.chdir(tmp_path)  # it may write files (results.json)
    code = _readme_blocks("python")[number]
    exec(compile(code, f"README.md python block {number}", "exec"), {})


def test_a_part_of_a_label_names_one_candidate_or_says_which_match():
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC

    X, y = make_classification(n_samples=60, random_state=0)
    grid = {"C": [0.1, 1, 10], "gamma": ["scale", 0.01]}
    s = parcv.search(SVC(), grid, X, y, cv=3, backend="serial")
    whole = s.compare("C=1, gamma='scale'", "C=10, gamma='scale'")
    # "C=1" matches two candidates (gamma 'scale' and 0.01): ambiguous, both named.
    with pytest.raises(
        ValueError, match=r"matches 2 candidates: \"C=1, gamma='scale'\", 'C=1, gamma=0.01'"
    ):
        s.compare("C=1", "C=10")
    assert s.compare("gamma='scale', C=1", "C=10, gamma='scale'").p_value == whole.p_value
    s1 = parcv.search(SVC(), {"C": [0.1, 1, 10]}, X, y, cv=3, backend="serial")
    assert s1.compare("C=1", "C=10").p_value == s1.compare(1, 2).p_value


def test_a_misspelt_none_is_a_spec_error_naming_the_line(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        SMALL.replace("C = [0.01, 1.0]", 'C = [1.0]\nclass_weight = ["balanced", "none"]')
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:11: space.class_weight = 'none' is not valid" in err
    assert '"None" for Python\'s None (TOML has no null)' in err
    assert not (tmp_path / "run").exists()
    # The documented spelling is None, and a string a parameter accepts stays a string.
    spec.write_text(
        SMALL.replace("C = [0.01, 1.0]", 'C = [1.0]\nclass_weight = ["balanced", "None"]')
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]) == 0


def test_a_candidate_whose_every_fit_fails_prints_its_first_error_on_the_terminal(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    text = SMALL.replace("C = [0.01, 1.0]", 'C = [1.0]\nsolver = ["lbfgs", "newton-cholesky"]')
    text = text.replace("max_iter = 200", 'max_iter = 200, penalty = "l1"')
    spec.write_text(
        text.replace('solver = ["lbfgs", "newton-cholesky"]', 'solver = ["liblinear", "lbfgs"]')
    )
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # not "error": the command prints its warnings
        assert main(["run", str(spec), "--out", str(tmp_path / "run")]) == 0  # lbfgs: no l1
    out = capsys.readouterr().out
    assert "3 of 7 fits failed." in out  # 6 fits + the final refit
    assert "\n  3 failed: candidate C=1.0, solver='lbfgs'\n" in out
    assert "\n  first error: ValueError: " in out
