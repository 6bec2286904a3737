"""A new user's first hour (issue 18): what the terminal, the run directory and the README show."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import textwrap
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
params = { max_iter = 5000 }  # converges: the fits' warnings reach the user

[space]
C = [0.01, 1.0]

[cv]
cv = 3

[run]
backend = "serial"
"""
# The same run, its report without plots: for the tests that look at something else (the
# plots of SMALL's report are checked by the two tests of the terminal and off it).
UNPLOTTED = SMALL + "\n[report]\nplots = false\n"


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
    assert "best CV accuracy=" in text or "best CV score=" in text, text
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
    code = textwrap.dedent(_readme_blocks("python")[number])  # blocks inside a list are indented
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
    text = text.replace("max_iter = 5000", 'max_iter = 5000, penalty = "l1"')
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


def test_a_regression_metric_on_a_classifier_is_a_spec_error_before_any_fit(tmp_path, capsys):
    from sklearn.datasets import load_iris

    iris = load_iris()
    rows = [",".join(["a", "b", "c", "d", "species"])]
    names = iris.target_names[iris.target]
    rows += [",".join([*map(str, x), t]) for x, t in zip(iris.data, names, strict=True)]
    (tmp_path / "iris.csv").write_text("\n".join(rows) + "\n")
    spec = tmp_path / "spec.toml"
    text = SMALL.replace('source = "sklearn:breast_cancer"\nn_samples = 120',
                         'source = "iris.csv"\ntarget = "species"')  # fmt: skip
    text = text.replace("sklearn.linear_model.LogisticRegression", "sklearn.svm.SVC")
    text = text.replace("params = { max_iter = 5000 }", "")
    spec.write_text(text + '\n[scoring]\nmetrics = ["neg_mean_squared_error"]\n')
    assert main(["run", str(spec), "--out", str(tmp_path / "run")]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err and "Scoring failed" not in err
    assert "'neg_mean_squared_error' is a regression metric" in err
    assert "SVC is a classifier" in err and "'accuracy'" in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()  # nothing ran, nothing was kept


def _parcv(*args, cwd, timeout=120, **kw):
    return subprocess.run(
        [sys.executable, "-m", "parcv.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def test_report_into_a_closed_pipe_exits_quietly(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(UNPLOTTED)
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    cmd = f"{sys.executable} -m parcv.cli report {tmp_path / 'run'} | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.count("\n") == 1
    assert done.stderr == ""  # no BrokenPipeError, no "Exception ignored"
    assert done.returncode in (0, 141)


@pytest.mark.slow
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounting a tiny tmpfs needs root"
)
def test_a_full_disk_keeps_finished_units_and_prints_the_resume_command(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(disk)]).returncode:
        pytest.skip("this machine cannot mount a tmpfs (a container without the capability)")
    try:
        spec = tmp_path / "spec.toml"
        grid = "C = { logspace = [-3, 3, 400] }"
        spec.write_text(SMALL.replace("C = [0.01, 1.0]", grid))
        done = _parcv("run", str(spec), "--out", str(disk / "run"), "--quiet", cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert f"the disk holding {disk / 'run'} is full" in done.stderr
        assert "finished units are kept in" in done.stderr
        assert f"parcv run {spec} --out {disk / 'run'} --quiet --resume" in done.stderr
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_tls_scheduler_without_tls_files_is_refused_at_once(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SMALL)
    done = _parcv("run", str(spec), "--scheduler", "tls://127.0.0.1:9", cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert "--tls-ca-file, --tls-cert and --tls-key" in done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_misspelt_space_key_names_its_line_and_the_likely_key(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(SMALL.replace("C = [0.01, 1.0]", "c = [0.01, 1.0]"))
    assert main(["inspect", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:10: space.c = [0.01, 1.0] is not valid" in err
    assert "Did you mean 'C'?" in err


def test_help_points_to_the_spec_format_and_examples_and_describes_arguments(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "examples/*.toml" in text and "parcv init" in text
    for command in ("run", "inspect", "report", "init"):
        assert main([command, "--help"]) == 0
        usage = capsys.readouterr().out
        positional = usage.split("positional arguments:")[1].split("options:")[0]
        lines = [ln for ln in positional.splitlines() if ln.strip()]
        assert all(len(ln.split(None, 1)) == 2 for ln in lines), usage  # name + help


@pytest.mark.slow
def test_init_writes_a_starter_spec_that_runs(tmp_path, capsys):
    assert main(["init", str(tmp_path / "new" / "spec.toml")]) == 0  # makes its folder
    assert main(["init", str(tmp_path / "spec.toml")]) == 0
    assert main(["init", str(tmp_path / "spec.toml")]) == 2  # never overwrites unasked
    text = (tmp_path / "spec.toml").read_text()
    assert text.count("#") > 15  # commented
    small = text.replace('"sklearn:breast_cancer"', '"sklearn:breast_cancer"\nn_samples = 100')
    (tmp_path / "small.toml").write_text(small.replace("[-3, 2, 6]", "[-1, 1, 2]"))
    out = tmp_path / "run"
    args = ["run", str(tmp_path / "small.toml"), "--out", str(out), "--backend", "serial"]
    assert main(args) == 0
    assert "estimate (accuracy)" in capsys.readouterr().out


def test_resume_reuses_every_unit_and_says_so_in_inspect_and_run(tmp_path, capsys):
    # The run saves its final model, so a resume redoes nothing: the counts agree.
    spec = tmp_path / "spec.toml"
    spec.write_text(UNPLOTTED)
    run = ["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]
    assert main(run) == 0
    assert main(["inspect", str(spec), "--out", str(tmp_path / "run")]) == 0
    text = capsys.readouterr().out
    assert "6 of this plan's 6 fits are among them" in text
    assert main([*run[:-1], "--resume"]) == 0
    out = capsys.readouterr().out
    assert "7 units: 7 reused from the store" in out


def test_a_directory_parcv_did_not_create_is_refused_unless_overwrite(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(UNPLOTTED)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("my own notes")
    assert main(["run", str(spec), "--out", str(mine), "--quiet"]) == 2
    assert "holds files parcv did not write (report.md)" in capsys.readouterr().err
    assert (mine / "report.md").read_text() == "my own notes"
    assert sorted(p.name for p in mine.iterdir()) == ["report.md"]
    assert main(["run", str(spec), "--out", str(mine), "--quiet", "--overwrite"]) == 0
    # parcv's own directory: a rerun needs --resume or --overwrite as before, not this refusal.
    assert main(["run", str(spec), "--out", str(mine), "--quiet", "--resume"]) == 0


def test_a_clean_run_leaves_no_wal_files_and_records_times_and_versions(tmp_path):
    import json
    from datetime import datetime

    import numpy
    import sklearn

    spec = tmp_path / "spec.toml"
    spec.write_text(UNPLOTTED)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0
    assert not [p.name for p in out.iterdir() if p.name.endswith(("-wal", "-shm"))]
    info = json.loads((out / "run.json").read_text())
    started = datetime.fromisoformat(info["started"])
    finished = datetime.fromisoformat(info["finished"])
    assert started <= finished and started.tzinfo is not None
    assert abs((finished - started).total_seconds() - info["seconds"]) < 1.0
    assert info["versions"]["parcv"] == parcv.__version__
    assert info["versions"]["scikit-learn"] == sklearn.__version__
    assert info["versions"]["numpy"] == numpy.__version__
    assert "dask" in info["versions"] and "distributed" in info["versions"]


def test_an_exact_tie_is_called_tied_in_summary_report_and_plot(tmp_path):
    from sklearn.datasets import make_regression
    from sklearn.linear_model import Ridge

    from parcv.report.plots import paired_differences
    from parcv.report.run_dir import RunInfo, render_report, render_summary

    X, y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
    # copy_X changes nothing: each alpha's two candidates have equal scores on every fold.
    grid = {"alpha": [0.1, 100.0], "copy_X": [True, False]}
    s = parcv.search(Ridge(), grid, X, y, cv=3, backend="serial")
    best = s.candidates[s.best_index_].label
    other = best.replace("copy_X=True", "copy_X=False")
    summary = render_summary(s, RunInfo("tie"))
    assert f"best is tied with {other}" in summary and "diff" not in summary
    report = render_report(s, RunInfo("tie"))
    assert f"Best: {best}." in report and f"| {other} | 0 (tied) |" in report
    fig = paired_differences(s)
    assert "tied with" in fig._suptitle.get_text()
    assert any("tied" in t.get_text() for ax in fig.axes for t in ax.texts)


def test_a_holdout_report_has_no_rows_of_na_and_few_folds_warn_of_low_power(tmp_path):
    out = tmp_path / "ho"
    spec = ROOT / "examples" / "holdout.toml"
    assert main(["run", str(spec), "--out", str(out), "--quiet", "--backend", "serial"]) == 0
    report = (out / "report.md").read_text()
    assert "n/a" not in report
    assert "One validation split: no test can compare candidates" in report
    spec = tmp_path / "spec.toml"
    spec.write_text(SMALL)
    assert main(["run", str(spec), "--out", str(tmp_path / "cv"), "--quiet"]) == 0
    assert "With 3 folds these tests have little power" in (tmp_path / "cv/report.md").read_text()
