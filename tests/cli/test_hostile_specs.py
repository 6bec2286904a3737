"""A spec does no more than it says: inspect runs no code, outputs stay put, depth is bounded."""

from __future__ import annotations

import pytest

from parcv.cli import main
from parcv.cli.spec import MAX_DEPTH, check_depth, load_spec

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


def _shell_source(marker):
    return f"""\
[data]
source = "python:subprocess.getoutput"
params = {{ cmd = "touch {marker}" }}

[estimator]
class = "sklearn.linear_model.LogisticRegression"

[space]
C = [0.1, 1.0, 10.0]

[cv]
outer = 3
inner = 2
"""


def test_inspect_calls_no_python_data_source(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    spec = tmp_path / "shell.toml"
    spec.write_text(_shell_source(marker))
    assert main(["inspect", str(spec)]) == 0
    assert not marker.exists()  # before: inspect ran the shell command
    out = capsys.readouterr().out
    assert "python:subprocess.getoutput (read at run time, by calling it)" in out
    assert "candidates 3: C=0.1; C=1.0; C=10.0" in out
    assert "outer StratifiedKFold(n_splits=3" in out
    assert "inspect calls no function a spec names" in out
    assert main(["run", str(spec), "--dry-run"]) == 0  # the same text
    assert not marker.exists()


def test_inspect_imports_no_module_file_beside_the_spec(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_data.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('imported').touch()\n"
        "def load():\n    from sklearn.datasets import load_diabetes\n"
        "    return load_diabetes(return_X_y=True)\n"
    )
    spec = tmp_path / "mine.toml"
    spec.write_text(TINY.replace('"sklearn:diabetes"\nn_samples = 60', '"python:my_data.load"'))
    assert main(["inspect", str(spec)]) == 0
    assert not (tmp_path / "imported").exists()
    assert "my_data.load (read at run time" in capsys.readouterr().out


@pytest.mark.parametrize("out", ["../x", "ABSOLUTE", "~/x", "runs/../../x", ""])
def test_a_spec_cannot_send_its_outputs_outside_the_current_folder(
    tmp_path, capsys, monkeypatch, out
):
    # Every path tried lies inside tmp_path, should the check ever let one through.
    here, home = tmp_path / "here", tmp_path / "home"
    here.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    out = str(tmp_path / "x") if out == "ABSOLUTE" else out
    spec = here / "away.toml"
    spec.write_text(TINY + f'\n[run]\nbackend = "serial"\nout = "{out}"\n')
    for command in ("run", "inspect"):
        assert main([command, str(spec)]) == 2
        err = capsys.readouterr().err
        assert f"away.toml:19: run.out = {out!r} is not valid" in err, err
        assert "a folder inside the one parcv runs from" in err
        assert "say so on the command line: --out" in err
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert written == ["here", "here/away.toml", "home"]  # nothing written anywhere


@pytest.mark.parametrize("out", ["link/run", "link", "runs/../link/run"])
def test_a_spec_cannot_send_its_outputs_outside_through_a_symlinked_folder(
    tmp_path, capsys, monkeypatch, out
):
    here, away = tmp_path / "here", tmp_path / "away"
    here.mkdir()
    away.mkdir()
    (here / "link").symlink_to(away)  # came with the spec, as in a shared or cloned folder
    monkeypatch.chdir(here)
    spec = here / "away.toml"
    spec.write_text(TINY + f'\n[run]\nbackend = "serial"\nout = "{out}"\n')
    for command in ("run", "inspect"):
        assert main([command, str(spec)]) == 2
        err = capsys.readouterr().err
        assert f"away.toml:19: run.out = {out!r} is not valid" in err, err
        leads = away / "run" if out.endswith("run") else away
        assert f"{out!r} leads to {str(leads)!r} through a symbolic link" in err, err
        assert "say so on the command line: --out" in err
    assert list(away.iterdir()) == []  # nothing written there


def test_the_command_line_may_send_outputs_anywhere(tmp_path, capsys, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    spec = here / "away.toml"
    spec.write_text(TINY + '\n[run]\nbackend = "serial"\nout = "../elsewhere"\n')
    assert main(["run", str(spec), "--quiet", "--out", str(tmp_path / "chosen")]) == 0
    assert (tmp_path / "chosen" / "report.md").is_file()
    assert not (tmp_path / "elsewhere").exists()
    inside = here / "inside.toml"
    inside.write_text(TINY + '\n[run]\nbackend = "serial"\nout = "runs/mine"\n')
    assert main(["run", str(inside), "--quiet"]) == 0
    assert (here / "runs" / "mine" / "report.md").is_file()


def _deep_specs():
    base = '[data]\nsource = "sklearn:iris"\n[estimator]\nclass = "sklearn.svm.SVC"\n'
    arrays = base + "[space]\nC = " + "[" * 10_000 + "1" + "]" * 10_000 + "\n"
    key = base + "[space]\n" + ".".join(f"k{i}" for i in range(5_000)) + " = [1]\n"
    bagging = '{class = "sklearn.ensemble.BaggingClassifier", params = {estimator = '
    inline = '[data]\nsource = "sklearn:iris"\n[estimator]\nclass = "sklearn.svm.SVC"\n'
    inline += "[space]\nC = [1.0]\nx = " + bagging * 300 + "1" + "}}" * 300 + "\n"
    tables = '[data]\nsource = "sklearn:iris"\n'
    for i in range(300):
        tables += f'[estimator{".params.estimator" * i}]\nclass = "sklearn.ensemble.Bagging"\n'
    return {
        "arrays": (arrays, 6, "'C, 10002 levels deep'"),
        "dotted-key": (key, 6, "'k0.k1.k2.…, 5002 levels deep'"),
        "inline-tables": (inline, 7, "'x, 602 levels deep'"),
        "estimator-tables": (tables, 35, "'estimator.params.estimator.…, 33 levels deep'"),
    }


@pytest.mark.parametrize("kind", list(_deep_specs()))
def test_an_over_deep_spec_is_a_located_spec_error(tmp_path, capsys, kind):
    text, line, value = _deep_specs()[kind]
    spec = tmp_path / "deep.toml"
    spec.write_text(text)
    assert main(["inspect", str(spec)]) == 2  # before: a RecursionError of 1,000 frames, exit 1
    err = capsys.readouterr().err
    assert err.startswith(f"parcv: error: {spec}:{line}: (nesting) = {value} is not valid")
    assert f"at most {MAX_DEPTH} levels" in err
    assert len(err) < 400 and "Traceback" not in err


def test_depth_counts_structure_not_strings_or_comments():
    check_depth('x = "' + "[" * 100 + '"  # ' + "{" * 100 + "\n")
    check_depth("[a.b.c]\nd.e.f = [[1, 2], {g = [3]}]\n")  # 3 + 2 + 3 = 8 levels
    with pytest.raises(ValueError, match=r"spec:2: \(nesting\)"):
        check_depth("[a]\nb = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")


def test_every_example_spec_is_within_the_depth_limit():
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml")):
        load_spec(path)
