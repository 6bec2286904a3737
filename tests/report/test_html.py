"""report.html opens in a real headless browser: no errors, the estimate and the plots shown."""

from __future__ import annotations

import re

import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.report.run_dir import RunInfo, write_outputs
from parcv.report.text import num, small
from tests.browser import CHROMIUM, console_problems, dump_dom, screenshot


def _result():
    X, y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
    grid = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0]}
    return parcv.nested_cv(Ridge(), grid, X, y, outer=4, inner=3, backend="serial")


def test_report_html_is_one_file_with_the_estimate_first_and_plots_embedded(tmp_path):
    result = _result()
    files = write_outputs(tmp_path, result, RunInfo("ridge", mode="nested"))
    assert tmp_path / "report.html" in files and files[-1].name == "report.md"
    page = (tmp_path / "report.html").read_text()
    est = result.estimate[result.refit_metric]
    top = page.index('class="headline"')
    assert page.index(f"{num(est.mean)} ± {small(est.se)}") > top
    assert top < page.index("<h2>")  # the estimate comes before every section
    assert "not a confidence interval" in page
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert page.count('src="data:image/png;base64,') == len(pngs) == 4
    assert not re.search(r'src="(?!data:)', page)  # nothing loaded from beside the file


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_report_html_loads_without_errors_in_headless_chromium(tmp_path):
    write_outputs(tmp_path, _result(), RunInfo("ridge", mode="nested"))
    url = (tmp_path / "report.html").as_uri()
    shot = tmp_path / "shot.png"
    dom = dump_dom(url)
    assert dom.returncode == 0, dom.stderr
    assert not console_problems(dom.stderr), dom.stderr
    assert 'class="headline"' in dom.stdout
    assert dom.stdout.count("<img ") == 4
    assert dom.stdout.count('class="sortable"') >= 3
    done = screenshot(url, shot, "1200,2000")
    assert done.returncode == 0 and shot.stat().st_size > 10_000, done.stderr
