"""report.html opens in a real headless browser: no errors, the estimate and the plots shown."""

from __future__ import annotations

import base64
import json
import re

import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.cli import main
from parcv.report.run_dir import RunInfo, write_outputs
from parcv.report.text import num, small
from tests.browser import CHROMIUM, console_problems, open_page


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
    shot = tmp_path / "shot.png"
    opened = open_page(tmp_path / "report.html", shot=shot, width=1200, height=2000)
    assert opened.returncode == 0, opened.stderr
    assert not console_problems(opened.stderr), opened.stderr
    assert 'class="headline"' in opened.dom
    assert opened.dom.count("<img ") == 4
    assert opened.dom.count('class="sortable"') >= 3
    assert shot.stat().st_size > 10_000, opened.stderr


def _run_with(tmp_path, description):
    """Run a tiny spec whose description is ``description``; the run directory."""
    spec = tmp_path / "described.toml"
    spec.write_text(
        f"description = {description!r}\n\n"  # a TOML literal string: as written
        '[data]\nsource = "sklearn:diabetes"\nn_samples = 60\n\n'
        '[estimator]\nclass = "sklearn.linear_model.Ridge"\n\n'
        '[space]\nalpha = [0.1, 10.0]\n\n[cv]\ncv = 3\n\n[run]\nbackend = "serial"\n'
    )
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    return out


def _secret(tmp_path):
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG the user's private bytes")
    return secret, base64.b64encode(secret.read_bytes()).decode("ascii")


def test_a_description_embeds_no_local_file_in_report_html(tmp_path, capsys):
    secret, encoded = _secret(tmp_path)
    out = _run_with(tmp_path, f"![x]({secret})")
    page = (out / "report.html").read_text()
    assert encoded not in page
    plots = sorted(p.name for p in out.glob("*.png"))
    assert page.count('src="data:image/png;base64,') == len(plots) == 2  # parcv's own plots
    assert f"<p>![x]({secret})</p>" in page  # shown as the text it is


def test_an_edited_run_json_embeds_no_local_file_and_links_only_to_the_web(tmp_path, capsys):
    secret, encoded = _secret(tmp_path)
    out = _run_with(tmp_path, "plain")
    run_json = json.loads((out / "run.json").read_text())
    run_json["description"] = (
        f"![x]({secret})\n## not a heading\n| not | a table |\n"
        f"see [the wiki](https://example.org/a?b=1&c=2), not [this](file://{secret}) "
        'or [that](javascript:alert(1)) or [quote](https://x.org/" onmouseover="alert(1))'
    )
    (out / "run.json").write_text(json.dumps(run_json))
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert encoded not in page and page.count('src="data:image/png;base64,') == 2
    assert "<h2>not a heading</h2>" not in page and "<p>## not a heading</p>" in page
    assert "<p>| not | a table |</p>" in page
    assert '<a href="https://example.org/a?b=1&amp;c=2">the wiki</a>' in page
    assert page.count("<a href=") == 1  # file:, javascript: and a broken-out quote: no link
    assert f"[this](file://{secret})" in page
