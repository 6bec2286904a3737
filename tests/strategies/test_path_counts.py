"""What inspect counts for an iteration path is what the run stores and says it computed.

Issue 48 (consumer "inspect counts = what the run stores"): a spec with ``[search]
iterations`` showed "units 18 fits + 3 refit(s) = 21" where the run stored and said it
computed 75 units. A unit is one stored record, a score of one candidate on one fold;
an iteration path's fold is one fit read at every checkpoint of its window, so its units
are its checkpoint scores. Inspect says so ("72 scores of 18 fits + 3 refit(s) = 75"),
and every count a run shows -- the bar, "N units computed", the Ctrl-C message and the
resume line -- counts the same units.

The references are independent of inspect: the store's records (scores and refits), the
estimator's own ``fit`` calls (the fits, and their training rows), the run's closing line,
and the decisions the early-stopping run stored (which paths stopped).
"""

from __future__ import annotations

import json
import re

import pytest
from sklearn.ensemble import GradientBoostingRegressor

from parcv.cli import main
from parcv.store.readers import read_counts, read_records, read_rounds, read_stored_kinds

DATA = '[data]\nsource = "sklearn:diabetes"\nn_samples = 40\n'
BOOSTING = (
    '[estimator]\nclass = "sklearn.ensemble.GradientBoostingRegressor"\n'
    "params = { max_depth = 1, random_state = 0 }\n"
    "[space]\nlearning_rate = [0.1, 0.3]\n"
)
CV = {"search": "[cv]\ncv = 3\n", "nested": "[cv]\nouter = 2\ninner = 3\n"}
PATHS = {
    "iterations": '[search]\niterations = { param = "n_estimators", up_to = 4 }\n',
    # Windows (1, 2) and (3, 4): two rounds, each path grown anew to its window's end.
    "patience": '[search]\niterations = { param = "n_estimators", up_to = 4, patience = 1 }\n',
}


def _spec(tmp_path, path, cv):
    spec = tmp_path / "spec.toml"
    report = "[report]\nplots = false\n"  # the tests count units: no plots to draw
    spec.write_text(DATA + BOOSTING + PATHS[path] + CV[cv] + report)
    return spec


@pytest.fixture
def fits(monkeypatch):
    """The training rows of every ``GradientBoostingRegressor.fit`` call, in order."""
    rows: list[int] = []
    real = GradientBoostingRegressor.fit

    def fit(self, X, y, sample_weight=None, monitor=None):
        rows.append(len(X))
        return real(self, X, y, sample_weight=sample_weight, monitor=monitor)

    monkeypatch.setattr(GradientBoostingRegressor, "fit", fit)
    return rows


def _shown(text):
    """Inspect's units and work lines: scores, fits, refits, total, rows, and whether exact."""
    units = re.search(
        r"^units +(at most )?(\d+) scores of (\d+) fits? \+ (\d+) refit\(s\) = (\d+)$", text, re.M
    )
    work = re.search(
        r"^work +(at most )?([\d,]+) training rows over all fits \(([\d,]+) per fit\)$", text, re.M
    )
    assert units and work, text
    assert (units[1] is None) == (work[1] is None), text
    scores, n_fits, refits, total = (int(units[i]) for i in range(2, 6))
    assert scores + refits == total, text
    rows = int(work[2].replace(",", ""))
    assert int(work[3].replace(",", "")) == rows // n_fits, text
    shown = {"scores": scores, "fits": n_fits, "refits": refits, "units": total, "rows": rows}
    return shown, units[1] is None


def _stored(store, rows, n_computed):
    """The same counts from the run: its store, its fit calls and its closing line."""
    kinds = read_stored_kinds(store)
    n_records, n_units = read_counts(store)
    assert n_records == n_units == sum(kinds.values()) == n_computed
    refitted = [r for pid in (0, *read_rounds(store)) for key, r in
                read_records(store, pid).items() if key[0] in ("refit", "final")]  # fmt: skip
    refits = kinds.get("refit", 0) + kinds.get("final", 0)
    assert len(refitted) == refits
    # Every fit call but the refits' is a fit of the searches.
    return {
        "scores": kinds["fit"],
        "fits": len(rows) - refits,
        "refits": refits,
        "units": n_computed,
        "rows": sum(rows) - sum(int(r.n_train) for r in refitted),
    }


@pytest.mark.parametrize("cv", ["search", "nested"])
def test_inspect_counts_the_scores_and_fits_of_an_iteration_path(tmp_path, capsys, fits, cv):
    spec, out = _spec(tmp_path, "iterations", cv), tmp_path / "run"
    assert main(["inspect", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    # Before: "units      6 fits + 1 refit(s) = 25" (search), "18 fits + 3 refit(s) = 75".
    shown, exact = _shown(capsys.readouterr().out)
    assert exact
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    computed = re.search(r"^(\d+) units computed", capsys.readouterr().out, re.M)
    assert computed, "no closing line"
    assert shown == _stored(out / "store.sqlite", fits, int(computed[1]))
    # One fit per (point, fold), read at each of the 4 checkpoints.
    assert shown["scores"] == 4 * shown["fits"]


def _stopped(store):
    """Whether any path stopped early, as the run's decisions say (``stopped_at``)."""
    return any(json.loads(row.decision or "{}").get("stopped_at")
               for row in read_rounds(store).values())  # fmt: skip


@pytest.mark.parametrize("cv", ["search", "nested"])
def test_inspect_bounds_the_scores_and_fits_of_early_stopping(tmp_path, capsys, fits, cv):
    spec, out = _spec(tmp_path, "patience", cv), tmp_path / "run"
    assert main(["inspect", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    # Before: "units      at most 24 fits + 1 refit(s) = 25" and "(13 per fit)" (search):
    # 24 is the scores, of 12 fits of 26 training rows.
    shown, exact = _shown(capsys.readouterr().out)
    assert not exact
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    computed = re.search(r"^(\d+) units computed", capsys.readouterr().out, re.M)
    assert computed, "no closing line"
    stored = _stored(out / "store.sqlite", fits, int(computed[1]))
    assert all(stored[k] <= shown[k] for k in shown), (shown, stored)
    # Every window grows each running path once per fold, scored at its 2 checkpoints.
    assert stored["scores"] == 2 * stored["fits"]
    if not _stopped(out / "store.sqlite"):  # then the run reaches its bound
        assert stored == shown


@pytest.fixture
def bars(monkeypatch):
    """The total every progress bar of a run starts with."""
    from parcv.engine.progress import Progress

    totals: list[int] = []
    real = Progress.__init__

    def init(self, total, *args, **kwargs):
        totals.append(total)
        real(self, total, *args, **kwargs)

    monkeypatch.setattr(Progress, "__init__", init)
    return totals


@pytest.mark.parametrize("path", ["iterations", "patience"])
def test_the_bar_ctrl_c_and_resume_count_the_units_inspect_counts(
    tmp_path, capsys, monkeypatch, bars, path
):
    spec, out = _spec(tmp_path, path, "nested"), tmp_path / "run"
    assert main(["inspect", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    shown, _ = _shown(capsys.readouterr().out)
    real = GradientBoostingRegressor.fit
    n_fits = []

    def fit(self, X, y, sample_weight=None, monitor=None):
        n_fits.append(1)
        if len(n_fits) == 20:
            raise KeyboardInterrupt  # as if Ctrl-C was pressed here
        return real(self, X, y, sample_weight=sample_weight, monitor=monitor)

    monkeypatch.setattr(GradientBoostingRegressor, "fit", fit)
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 130
    said = capsys.readouterr().err
    assert bars == [shown["units"]]  # the bar's total is inspect's units (at most)
    kinds = read_stored_kinds(out / "store.sqlite")
    stored, refits = kinds["fit"], kinds.get("refit", 0) + kinds.get("final", 0)
    # The scores kept, and apart the refits (a resume reuses them once their fits chose).
    kept = re.search(r"interrupted\. (\d+) finished units?(?: \(and (\d+) refits?[^)]*\))? are "
                     r"kept", said)  # fmt: skip
    assert kept, said
    assert (int(kept[1]), int(kept[2] or 0)) == (stored, refits), said
    assert 0 < stored < shown["scores"]
    monkeypatch.setattr(GradientBoostingRegressor, "fit", real)
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial", "--resume"]) == 0
    said = capsys.readouterr().err
    if path == "iterations":  # one plan: each unit is looked up before the run
        reusing = re.search(r"reusing (\d+) of (\d+) units; (\d+) to compute, and (\d+) refits",
                            said)  # fmt: skip
        assert reusing, said
        n_reused, n_units, n_computed, n_refits = (int(reusing[i]) for i in range(1, 5))
        assert (n_reused, n_units, n_refits) == (stored, shown["units"], shown["refits"]), said
        assert n_reused + n_computed + n_refits == n_units
    else:  # rounds: each is looked up as it is proposed, of at most the schedule's units
        told = re.search(r"the store holds (\d+) finished units?.* of at most (\d+) units", said)
        assert told, said
        assert int(told[1]) == stored and int(told[2]) == shown["scores"], said


def test_inspect_probe_times_one_fit_of_a_path_and_counts_its_fits(tmp_path, capsys):
    spec = _spec(tmp_path, "iterations", "search")
    # Before: "ValueError: too many values to unpack" (a path unit makes 4 records).
    assert main(["inspect", str(spec), "--probe", "--backend", "serial"]) == 0
    text = capsys.readouterr().out
    assert "units      24 scores of 6 fits + 1 refit(s) = 25" in text
    assert "chunks: 7 (one fit each)" in text  # the 6 fits and the refit the driver sends
    probe = re.search(r"^probe +one fit took ([\d.e-]+) s: about ([\d.e-]+) CPU-s", text, re.M)
    assert probe, text
    assert float(probe[2]) == pytest.approx(7 * float(probe[1]), rel=2e-2)
