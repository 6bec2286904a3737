"""Issue 49, item 5: a resume from Python says what it reuses on stderr, as the CLI does.

The lines reach a user who configured no logging; ``progress=False`` silences them, as
does ``verbose=0`` where stderr is no terminal (as here: pytest captures it).
"""

from __future__ import annotations

import logging

import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv

# The logger of the start lines, by its name: what a user attaches a handler to.
START_LOG = logging.getLogger("parcv.start")


def _resume(store, capfd, **shown):
    X, y = make_regression(n_samples=30, n_features=2, noise=1.0, random_state=0)
    parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=2, backend="serial", store=store,
                 progress=False)  # fmt: skip
    capfd.readouterr()
    parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, y, cv=2, backend="serial",
                 store=store, resume=True, **shown)  # fmt: skip
    return capfd.readouterr().err


@pytest.mark.parametrize("shown", [{"progress": True}, {"verbose": 1}])
def test_a_resumed_search_says_on_stderr_what_it_reuses(tmp_path, capfd, shown):
    err = _resume(tmp_path / "run.sqlite", capfd, **shown)
    # The first run stored both folds of alpha 0.1 and 1.0: 4 of the new grid's fits.
    lines = [line for line in err.splitlines() if line.startswith("parcv: reusing")]
    assert len(lines) == 1, err
    assert lines[0].startswith("parcv: reusing 4 of ")
    assert "to compute" in lines[0]


@pytest.mark.parametrize("quiet", [{"progress": False}, {"verbose": 0}, {}])
def test_the_start_line_is_silenced_by_progress_false_or_verbose_0(tmp_path, capfd, quiet):
    assert _resume(tmp_path / "run.sqlite", capfd, **quiet) == ""


def test_a_resumed_halving_search_says_what_its_store_holds(tmp_path, capfd):
    X, y = make_regression(n_samples=60, n_features=2, noise=1.0, random_state=0)
    grid, halving = {"alpha": [0.1, 1.0, 10.0]}, parcv.Halving(min_resources=20)
    store = tmp_path / "run.sqlite"
    parcv.search(Ridge(), grid, X, y, cv=2, halving=halving, backend="serial", store=store,
                 progress=False)  # fmt: skip
    capfd.readouterr()
    parcv.search(Ridge(), grid, X, y, cv=2, halving=halving, backend="serial", store=store,
                 resume=True, progress=True)  # fmt: skip
    err = capfd.readouterr().err
    assert "parcv: the store holds " in err
    assert "parcv: reused " in err  # after the rounds: how many of their units came back


def test_a_handler_of_ones_own_takes_the_lines_instead_of_stderr(tmp_path, capfd):
    # Logging's own way to take a library's lines: a handler on its logger, at INFO.
    mine = logging.Handler()
    seen = []
    mine.emit = seen.append  # type: ignore[method-assign]
    START_LOG.addHandler(mine)
    START_LOG.setLevel(logging.INFO)
    try:
        err = _resume(tmp_path / "run.sqlite", capfd, progress=True)
    finally:
        START_LOG.removeHandler(mine)
        START_LOG.setLevel(logging.NOTSET)
    assert "parcv: reusing" not in err
    assert any(r.getMessage().startswith("reusing 4 of ") for r in seen)
