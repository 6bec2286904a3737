"""Issue 50: every output of a run grows linearly with it.

A summary once walked the store's records once per candidate (10,000 candidates: more
than 11 minutes). Each output is timed, in CPU seconds of this process, on a run of
``N`` and of ``4 N`` candidates: linear growth takes about 4 times as long, quadratic
growth about 16 times; the bound is 8. Both runs are small, so the test stays short.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import parcv
from parcv.cli import main
from tests.estimators import FoldShift

N = 150
X = np.arange(60.0).reshape(30, 2)
Y = np.zeros(30)


def _cpu(call, repeats=3):
    """The least CPU time of ``repeats`` calls (the least is the least disturbed)."""
    spent = []
    for _ in range(repeats):
        start = time.process_time()
        call()
        spent.append(time.process_time() - start)
    return min(spent)


def _spec(n, tmp_path):
    constants = ", ".join(f"{c / 10:.1f}" for c in range(n))
    spec = tmp_path / f"spec{n}.toml"
    spec.write_text(
        '[data]\nsource = "sklearn:diabetes"\nn_samples = 60\n\n'
        '[estimator]\nclass = "sklearn.dummy.DummyRegressor"\n'
        'params = { strategy = "constant" }\n\n'
        f"[space]\nconstant = [{constants}]\n\n[cv]\ncv = 3\n"
    )
    return spec


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Searches of N and 4 N candidates, each stored in a folder of its own."""
    found = {}
    for n in (N, 4 * N):
        folder = tmp_path_factory.mktemp(f"n{n}")
        alphas = {"alpha": [float(a) for a in range(n)]}
        parcv.search(FoldShift(), alphas, X, Y, cv=3, backend="serial",
                     store=folder / "store.sqlite")  # fmt: skip
        found[n] = folder
    return found


def _outputs(folder, capsys):
    """Each output of a stored run, as a call that computes it afresh."""
    store = folder / "store.sqlite"

    def report():
        parcv.write_report(store, folder / "report")

    def cli_report():
        assert main(["report", str(folder)]) == 0
        capsys.readouterr()

    return {
        "load": lambda: parcv.load(store),
        "summary": lambda: parcv.load(store).to_text(),
        "comparison table": lambda: parcv.load(store).comparison_table(),
        "results.json": lambda: parcv.load(store).to_dict(),
        "report from Python": report,
        "parcv report": cli_report,
    }


def test_every_output_of_a_run_grows_linearly_with_its_candidates(stores, capsys):
    small, large = _outputs(stores[N], capsys), _outputs(stores[4 * N], capsys)
    assert "same difference on every fold" in parcv.load(stores[4 * N] / "store.sqlite").to_text()
    ratios = {name: _cpu(large[name]) / max(_cpu(small[name]), 1e-3) for name in small}
    assert all(r <= 8.0 for r in ratios.values()), {k: round(r, 1) for k, r in ratios.items()}


def test_inspect_grows_linearly_with_the_candidates(tmp_path, capsys):
    def inspect(n):
        spec = _spec(n, tmp_path)
        return lambda: (main(["inspect", str(spec)]), capsys.readouterr())

    ratio = _cpu(inspect(4 * N)) / _cpu(inspect(N))
    assert ratio <= 8.0, ratio
