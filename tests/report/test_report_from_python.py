"""Issue 49, item 5: parcv.write_report writes from Python what ``parcv report DIR`` writes.

Of a result object or of a store a script wrote; ``parcv report DIR`` reads that store
too. The page opens in the headless browser the suite uses for report.html.
"""

from __future__ import annotations

import re

import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.cli import main
from tests.browser import CHROMIUM, console_problems, open_page

X, Y = make_regression(n_samples=45, n_features=3, noise=10.0, random_state=0)
PLOTS = {"fold_scores.png", "paired_differences.png", "selection_frequency.png",
         "validation_curve.png"}  # fmt: skip


def _snapshot(folder):
    """The report files of a folder: the text of each, the bytes of each plot."""
    files = {
        p.name: p.read_bytes() for p in folder.iterdir() if not p.name.startswith("store.sqlite")
    }
    return {n: b if n.endswith(".png") else b.decode("utf-8") for n, b in files.items()}


@pytest.fixture(scope="module")
def script_run(tmp_path_factory):
    """A script's nested CV, its store in a folder of its own, as the docs advise."""
    run_dir = tmp_path_factory.mktemp("ridge")
    result = parcv.nested_cv(Ridge(), {"alpha": [0.1, 10.0, 1e4]}, X, Y, outer=3, inner=3,
                             backend="serial", store=run_dir / "store.sqlite")  # fmt: skip
    return run_dir, result


def test_a_result_reported_from_python_is_what_parcv_report_writes_of_its_store(script_run, capsys):
    run_dir, result = script_run
    files = parcv.write_report(result, run_dir)
    assert files[-1] == run_dir / "report.md"
    assert "cv_results.csv" not in {f.name for f in files}  # not unless asked
    from_python = _snapshot(run_dir)
    assert set(from_python) >= PLOTS
    assert main(["report", str(run_dir)]) == 0
    capsys.readouterr()
    from_cli = _snapshot(run_dir)
    assert set(from_python) == set(from_cli)
    assert {n for n in from_cli if n.endswith(".png")} == PLOTS
    for name in from_cli:
        assert from_python[name] == from_cli[name], name
    assert "`store.sqlite` (every record)" in from_cli["report.md"]


def test_a_store_path_reported_elsewhere_has_the_same_text_and_plots(script_run, tmp_path):
    run_dir, result = script_run
    parcv.write_report(result, run_dir)
    beside = _snapshot(run_dir)
    out = tmp_path / "elsewhere" / "report"
    files = parcv.write_report(run_dir / "store.sqlite", out, title=run_dir.name)
    assert {f.name for f in files} == set(beside)
    elsewhere = _snapshot(out)
    assert {n: b for n, b in elsewhere.items() if n.endswith(".png")} == {
        n: b for n, b in beside.items() if n.endswith(".png")
    }
    # No store in that folder: the report does not name one there.
    assert "store.sqlite" not in elsewhere["report.md"]
    strip = re.compile(r"^Files: .*$", re.MULTILINE)
    assert strip.sub("", elsewhere["report.md"]) == strip.sub("", beside["report.md"])
    assert (out.stat().st_mode & 0o077) == 0 and all((f.stat().st_mode & 0o077) == 0 for f in files)


def test_write_report_takes_a_run_directory_a_title_and_the_reports_options(script_run, tmp_path):
    run_dir, _ = script_run
    files = parcv.write_report(run_dir, tmp_path / "copy", title="mine", param="alpha",
                               cv_results=True)  # fmt: skip
    assert "cv_results.csv" in {f.name for f in files}
    assert (tmp_path / "copy" / "report.md").read_text().startswith("# mine\n")
    assert '"param": "alpha"' in (tmp_path / "copy" / "run.json").read_text()


def test_a_halving_search_reports_its_rungs(tmp_path):
    r = parcv.search(Ridge(), {"alpha": [0.1, 10.0, 1e4]}, X, Y, cv=3, backend="serial",
                     halving=parcv.Halving(min_resources=15, random_state=0))  # fmt: skip
    names = {f.name for f in parcv.write_report(r, tmp_path)}
    assert {"halving.png", "validation_curve.png", "report.html"} <= names


def test_write_report_says_what_it_takes(tmp_path):
    with pytest.raises(TypeError, match=r"result must be what parcv\.cross_validate"):
        parcv.write_report({"alpha": 1.0}, tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no store\.sqlite in the folder"):
        parcv.write_report(tmp_path, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="no file at"):
        parcv.write_report(tmp_path / "missing.sqlite", tmp_path / "out")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_a_report_written_from_python_loads_without_errors_in_headless_chromium(tmp_path):
    cv = parcv.cross_validate(Ridge(), X, Y, cv=3, backend="serial")
    files = parcv.write_report(cv, tmp_path, title="ridge from a script")
    opened = open_page(tmp_path / "report.html")
    assert opened.returncode == 0, opened.stderr
    assert not console_problems(opened.stderr), opened.stderr
    assert "<title>ridge from a script</title>" in opened.dom
    assert 'class="headline"' in opened.dom
    pngs = [f for f in files if f.suffix == ".png"]
    assert [f.name for f in pngs] == ["fold_scores.png"]
    assert opened.dom.count('<img alt="fold scores" src="data:image/png;base64,') == 1
