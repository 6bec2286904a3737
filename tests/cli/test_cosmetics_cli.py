"""Issue 49, item 7: the CLI's words (did-you-mean, failure text) read as a spec user's."""

from __future__ import annotations

import pytest

from parcv.cli import main

BASE = """\
[data]
source = "sklearn:diabetes"
n_samples = 60

[estimator]
class = "sklearn.linear_model.Ridge"
"""


def test_a_misspelt_module_and_class_are_both_corrected(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(
        BASE.replace("sklearn.linear_model.Ridge", "sklearn.linaer_model.LogisticRegresion")
    )
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Did you mean 'sklearn.linear_model.LogisticRegression'?" in err
    assert "sklearn.linear_model.LogisticRegresion'" not in err  # not half-corrected


def test_the_failure_text_of_a_run_speaks_the_spec_and_command_line(tmp_path, capsys):
    # Every candidate fails alike ('lbfgs' needs positive=True): parcv stops after the first
    # wave, and says how to debug and resume as a spec user does it, in plain grammar.
    path = tmp_path / "fails.toml"
    path.write_text(
        BASE
        + 'params = { solver = "lbfgs" }\n[space]\nalpha = [1.0, 2.0, 3.0]\n'
        + '[cv]\nmode = "search"\ncv = 2\n[run]\nbackend = "serial"\n'
    )
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert 'setting error_score = "raise" in [scoring].' in err
    assert "(--resume keeps what finished)" in err
    assert "3 of 6 fits failed with the following error" in err
    for python in ("error_score='raise'", "resume=True", "run of"):
        assert python not in err


# The CLI prints warnings itself (one line each); the suite's "error" filter would raise it.
@pytest.mark.filterwarnings("default::sklearn.exceptions.FitFailedWarning")
def test_a_failure_warning_of_a_run_speaks_the_spec(tmp_path, capsys):
    path = tmp_path / "some_fail.toml"
    path.write_text(
        BASE + '[space]\nsolver = ["auto", "lbfgs"]\n[cv]\nmode = "search"\ncv = 3\n'
        '[run]\nbackend = "serial"\n'
    )
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "parcv: FitFailedWarning:" in err
    assert 'setting error_score = "raise" in [scoring].' in err
    assert "their scores are error_score = nan in [scoring]." in err
    assert "error_score='raise'" not in err and "error_score=nan" not in err
