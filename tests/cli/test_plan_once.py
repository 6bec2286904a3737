"""Issue 50: ``parcv run`` builds its plan once (at millions of units a plan takes seconds)."""

from __future__ import annotations

import pytest

import parcv.api
import parcv.cli.sweep
from parcv.cli import main

SPEC = """\
[data]
source = "sklearn:diabetes"
n_samples = 60

[estimator]
class = "sklearn.linear_model.Ridge"

{space}

[cv]
{cv}

[run]
backend = "serial"

[report]
plots = false
"""


@pytest.mark.parametrize(
    "space, cv",
    [
        ("[space]\nalpha = [0.1, 1.0, 10.0]", "cv = 3"),  # a search
        ("[space]\nalpha = [0.1, 1.0, 10.0]", "outer = 3\ninner = 2"),  # nested CV
        ("", "cv = 3"),  # cross-validation of one estimator
    ],
    ids=["search", "nested", "cross_validate"],
)
def test_a_run_builds_its_plan_once(tmp_path, monkeypatch, capsys, space, cv):
    built = []
    build = parcv.cli.sweep.build_plan

    def counted(*args, **kwargs):
        built.append(args[0])
        return build(*args, **kwargs)

    for module in (parcv.cli.sweep, parcv.api):
        monkeypatch.setattr(module, "build_plan", counted)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(space=space, cv=cv))
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    capsys.readouterr()
    assert len(built) == 1
    assert (tmp_path / "run" / "report.md").exists()
