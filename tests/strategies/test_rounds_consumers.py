"""A run in rounds read back: its resume='values' notes, an unfinished run's partial view,
what Ctrl-C and the resume count (issue 48, items 4, 5 and 8).

Every strategy is interrupted the same way: its estimator raises KeyboardInterrupt at
a given fit (counted in the environment, which the serial backend shares), as a Ctrl-C
typed at that moment; the reference is the same run left to finish.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.datasets import make_regression
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import parcv
from parcv.cli import main
from parcv.store.readers import read_stored_kinds
from tests.estimators import FitLogged
from tests.store.test_code_resume import _upgrade, fakepkg  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
X, Y = make_regression(n_samples=90, n_features=4, noise=20.0, random_state=0)
ALPHAS = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]}


def _tick() -> None:
    """Count a fit; raise KeyboardInterrupt at the fit PARCV_TEST_STOP names (as Ctrl-C)."""
    fits = int(os.environ.get("PARCV_TEST_FITS", "0")) + 1
    os.environ["PARCV_TEST_FITS"] = str(fits)
    if fits == int(os.environ.get("PARCV_TEST_STOP", "0")):
        raise KeyboardInterrupt  # as if Ctrl-C was pressed here


class StopsRidge(Ridge):
    def fit(self, X, y, sample_weight=None):
        _tick()
        return super().fit(X, y, sample_weight=sample_weight)


class StopsBoosting(GradientBoostingRegressor):
    def fit(self, X, y, sample_weight=None, monitor=None):
        _tick()
        return super().fit(X, y, sample_weight=sample_weight, monitor=monitor)


def _case(name: str) -> tuple[object, object, dict[str, object]]:
    """The estimator, space and strategy option of each strategy under test."""
    if name == "halving":
        return StopsRidge(), ALPHAS, {"strategy": parcv.Halving(random_state=0)}
    if name == "hyperband":
        space = parcv.RandomSpace({"alpha": loguniform(1e-3, 1e3)}, random_state=0)
        return StopsRidge(), space, {"strategy": parcv.Hyperband("max_iter", 3)}
    if name == "sampler":
        pytest.importorskip("optuna")
        sampler = parcv.Sampler("tpe", n_trials=6, batch=2, seed=0)
        return StopsRidge(), {"alpha": loguniform(1e-3, 1e3)}, {"strategy": sampler}
    assert name == "early_stopping"
    it = parcv.Iterations("n_estimators", up_to=8, every=2, patience=1)
    return StopsBoosting(random_state=0), {"max_depth": [1, 2, 3]}, {"iterations": it}


STRATEGIES = ["halving", "hyperband", "sampler", "early_stopping"]


def _run(name: str, kind: str, store: Path, *, stop: int = 0, **options: object) -> object:
    estimator, space, strategy = _case(name)
    os.environ["PARCV_TEST_FITS"], os.environ["PARCV_TEST_STOP"] = "0", str(stop)
    common = dict(backend="serial", store=store, progress=False, **strategy, **options)
    if kind == "search":
        return parcv.search(estimator, space, X, Y, cv=KFold(3), **common)
    return parcv.nested_cv(estimator, space, X, Y, outer=2, inner=KFold(3), **common)


@pytest.fixture
def fits(monkeypatch):
    """The fit counter in the environment, put back after the test."""
    monkeypatch.setenv("PARCV_TEST_FITS", "0")
    monkeypatch.setenv("PARCV_TEST_STOP", "0")
    return lambda: int(os.environ["PARCV_TEST_FITS"])


def _stored(store: Path) -> tuple[int, int]:
    """Units of the store's last run (every plan of it) with a record: (searches', refits')."""
    kinds = read_stored_kinds(store)
    refits = kinds.pop("refit", 0) + kinds.pop("final", 0)
    return sum(kinds.values()), refits


def _interrupted(name: str, kind: str, store: Path, fits, share: float = 0.8) -> tuple[str, object]:
    """Run to the end (the reference, counting its fits), then again into ``store``,
    stopped at ``share`` of them: what the interrupt said, and the reference."""
    reference = _run(name, kind, store.with_name("reference.sqlite"))
    stop = max(2, int(share * fits()))
    with pytest.raises(parcv.RunInterrupted) as info:
        _run(name, kind, store, stop=stop)
    return str(info.value), reference


# --- 5. load(partial=True) of an unfinished run in rounds ---------------------------------


def _rows(result, part) -> list[tuple[str, float]]:
    """The (params, mean_test_score) rows the full result gives the rounds of ``part``."""
    results = result.cv_results_
    where = np.asarray(results["iter" if "iter" in results else "round"]) == part.round
    if "bracket" in results:
        where &= np.asarray(results["bracket"]) == int(part.label.rsplit(" ", 1)[-1])
    rows = np.flatnonzero(where)
    return sorted((json.dumps(results["params"][i], sort_keys=True), results["mean_test_score"][i])
                  for i in rows)  # fmt: skip


def _searches(result: object) -> dict[int | None, object]:
    if isinstance(result, parcv.NestedResult):
        found = dict(enumerate(result.inner))
        if result.final is not None:
            found[None] = result.final
        return found
    return {None: result}


# Each strategy once, each kind twice, to keep CI's time: the strategy matrix's "load
# partial" column meets every strategy on both kinds (scripts/strategy_matrix.py runs every
# cell; CI's slice of it, one kind each).
PARTIAL = [("halving", "search"), ("hyperband", "nested_cv"), ("sampler", "search"),
           ("early_stopping", "nested_cv")]  # fmt: skip


@pytest.mark.parametrize(("name", "kind"), PARTIAL)
def test_partial_load_of_an_interrupted_run_in_rounds_is_its_finished_rounds(
    tmp_path, fits, name, kind
):
    # Before: UnfinishedRunError, though the docs promise the partial view.
    store = tmp_path / "s.sqlite"
    _, ran = _interrupted(name, kind, store, fits)
    partial = parcv.load(store, partial=True)
    assert isinstance(partial, parcv.PartialResult) and partial.kind == kind
    assert (partial.n_done, partial.n_done) == (sum(_stored(store)), partial.n_done)
    assert partial.n_done < partial.n_units
    finished = [p for p in partial.parts if p.finished]
    assert finished and len(finished) < len(partial.parts)
    reference = _searches(ran)
    for part in finished:  # the finished rounds are those of the run left to finish
        rows = slice(part.first, part.first + part.n_rows)
        pairs = zip(partial.params[rows], partial.mean_test_score[rows], strict=True)
        got = sorted((json.dumps(p, sort_keys=True), m) for p, m in pairs)
        want = _rows(reference[part.search], part)
        assert [p for p, _ in got] == [p for p, _ in want], part
        np.testing.assert_array_equal([m for _, m in got], [m for _, m in want])
        assert (partial.n_folds_done[rows] == part.n_folds).all()
    running = next(p for p in partial.parts if not p.finished)
    where = "all data" if running.search is None else f"outer fold {running.search}"
    said = "; ".join(partial.missing)
    assert f"the search on {where}: round {running.round}" in said, said
    with pytest.raises(parcv.UnfinishedRunError, match=r"\d+ of \d+ units done"):
        parcv.load(store)


def test_partial_load_of_a_finished_run_in_rounds_is_its_result(tmp_path, fits):
    store = tmp_path / "s.sqlite"
    ran = _run("halving", "search", store)
    assert parcv.load(store, partial=True).to_json() == ran.to_json()


def test_partial_view_of_a_run_stopped_before_its_first_round_says_nothing_is_done(tmp_path, fits):
    store = tmp_path / "s.sqlite"
    with pytest.raises(parcv.RunInterrupted):
        _run("halving", "nested_cv", store, stop=1)
    partial = parcv.load(store, partial=True)
    assert partial.n_done == 0 and partial.parts and not any(p.finished for p in partial.parts)
    assert "the search on outer fold 0: round 0 (0 of 18 units)" in "; ".join(partial.missing)
    assert "Unfinished run" in partial.to_markdown()


HOOKS = """\
import os
import subprocess
import sys

from sklearn.linear_model import Ridge


class Stops(Ridge):
    def fit(self, X, y, sample_weight=None):
        fits = int(os.environ.get("PARCV_TEST_FITS", "0")) + 1
        os.environ["PARCV_TEST_FITS"] = str(fits)
        if fits == int(os.environ.get("PARCV_TEST_STOP", "0")):
            raise KeyboardInterrupt
        if fits == int(os.environ.get("PARCV_TEST_REPORT", "0")):
            # `parcv report` of this run while it runs: another process reads the store.
            done = subprocess.run([sys.executable, "-m", "parcv.cli", "report",
                                   os.environ["PARCV_TEST_RUN_DIR"]],
                                  capture_output=True, text=True)
            with open(os.environ["PARCV_TEST_RUN_DIR"] + ".said", "w") as said:
                said.write(f"{done.returncode}\\n{done.stdout}{done.stderr}")
        return super().fit(X, y, sample_weight=sample_weight)
"""

SPECS = {
    "halving": ("alpha = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]", "halving = { factor = 3 }"),
    "hyperband": (
        "alpha = { loguniform = [1e-3, 1e3] }",
        'hyperband = { resource = "max_iter", max_resources = 9 }\nn_iter = 9\nrandom_state = 0',
    ),
    "sampler": (
        "alpha = { loguniform = [1e-3, 1e3] }",
        'sampler = { kind = "tpe", seed = 0, n_trials = 6, batch = 2 }',
    ),
}


def _spec(tmp_path: Path, monkeypatch, name: str) -> tuple[list[str], Path]:
    """A spec of strategy ``name`` with the Stops estimator: its run command and directory."""
    if name == "sampler":
        pytest.importorskip("optuna")
    (tmp_path / "stophooks.py").write_text(HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT)]))
    space, search = SPECS[name]
    spec = tmp_path / f"{name}.toml"
    spec.write_text(
        '[data]\nsource = "sklearn:diabetes"\nn_samples = 90\n'
        '[estimator]\nclass = "stophooks.Stops"\n'
        f"[space]\n{space}\n[search]\n{search}\n"
        "[cv]\nouter = 2\ninner = 3\n[report]\nplots = false\n"
    )
    out = tmp_path / "run"
    monkeypatch.setenv("PARCV_TEST_RUN_DIR", str(out))
    return ["run", str(spec), "--out", str(out), "--backend", "serial"], out


def test_parcv_report_of_an_interrupted_halving_run_writes_its_partial_view(
    tmp_path, monkeypatch, capsys, fits
):
    # Before: parcv report raised UnfinishedRunError for a run in rounds.
    run, out = _spec(tmp_path, monkeypatch, "halving")
    monkeypatch.setenv("PARCV_TEST_STOP", "60")  # the three searches' first rungs: 54 fits
    assert main(run) == 130
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "unfinished run:" in printed and "--resume" in printed
    report = (out / "report.md").read_text()
    assert "# Unfinished run" in report
    assert "round 0: finished" in report and "round 1:" in report, report


def test_parcv_report_of_a_running_halving_run_writes_its_partial_view(
    tmp_path, monkeypatch, capsys, fits
):
    run, out = _spec(tmp_path, monkeypatch, "halving")
    monkeypatch.setenv("PARCV_TEST_REPORT", "60")  # in a fit of the second rungs
    assert main(run) == 0
    said = Path(f"{out}.said").read_text()
    assert said.startswith("0\n"), said
    assert "unfinished run:" in said and "Report of the folds done so far" in said, said


# --- 8. what Ctrl-C and the resume count ----------------------------------------------------


@pytest.mark.parametrize("name", list(SPECS))
def test_ctrl_c_of_a_spec_in_rounds_counts_the_units_it_keeps_and_the_resume_reuses_them(
    tmp_path, monkeypatch, capsys, fits, name
):
    # Before (sampler): "0 finished units are kept"; the resume "reusing 0 of 24 units; 18 to
    # compute" (the spec's placeholder plan), then reused 172.
    run, out = _spec(tmp_path, monkeypatch, name)
    monkeypatch.setenv("PARCV_TEST_STOP", "40")
    assert main(run) == 130
    err = capsys.readouterr().err
    kept = re.search(r"interrupted\. (\d+) finished units?(?: \(and (\d+) refits?[^)]*\))? are "
                     r"kept", err)  # fmt: skip
    assert kept is not None, err
    n_kept, n_refits = _stored(out / "store.sqlite")
    assert n_kept > 0 and (int(kept[1]), int(kept[2] or 0)) == (n_kept, n_refits), err
    monkeypatch.setenv("PARCV_TEST_STOP", "0")
    assert main([*run, "--resume"]) == 0
    captured = capsys.readouterr()
    said = re.search(r"parcv: the store holds (\d+) finished units?(?: \(and (\d+) refits?[^)]*"
                     r"\))? of its last run; each round reuses those it proposes again, of at "
                     r"most (\d+) units", captured.err)  # fmt: skip
    assert said is not None, captured.err
    assert (int(said[1]), int(said[2] or 0)) == (n_kept, n_refits), captured.err
    assert "reusing" not in captured.err  # nothing counted from the spec's placeholder plan
    # ... and the resume reused them all: the same rounds, proposed again.
    reused = re.search(r"(\d+) units: (\d+) reused from the store", captured.out)
    assert reused is not None, captured.out
    assert int(reused[2]) == n_kept + n_refits, (captured.err, captured.out)
    assert int(said[3]) >= int(reused[1]) - 3  # the bound of the searches' fits (3 refits)


@pytest.mark.parametrize("name", STRATEGIES)
def test_the_apis_ctrl_c_of_a_run_in_rounds_counts_the_units_its_resume_reuses(
    tmp_path, caplog, fits, name
):
    store = tmp_path / "s.sqlite"
    said, fresh = _interrupted(name, "nested_cv", store, fits, share=0.5)
    n_kept, n_refits = _stored(store)
    kept = f"{n_kept} finished units" + (
        f" (and {n_refits} refit{'s' * (n_refits != 1)} of a chosen candidate)" if n_refits else ""
    )
    assert f"Interrupted. {kept} are safe" in said, said
    with caplog.at_level("INFO", logger="parcv"):
        resumed = _run(name, "nested_cv", store, resume=True)
    assert f"the store holds {kept} of its last run; each round reuses" in caplog.text
    assert re.search(rf"reused {n_kept} of \d+ units; \d+ computed", caplog.text), caplog.text
    np.testing.assert_array_equal(resumed.outer_scores["score"], fresh.outer_scores["score"])
    assert resumed.chosen_params == fresh.chosen_params


# --- 4. resume="values" notes survive load, for every strategy ------------------------------


@pytest.mark.parametrize("kind", ["search", "nested_cv"])
@pytest.mark.parametrize("name", ["halving", "sampler"])
def test_a_run_in_rounds_resumed_with_values_keeps_its_notes_on_load(
    fakepkg,  # noqa: F811 (the fixture imported above)
    tmp_path,
    monkeypatch,
    name,
    kind,
):
    pipe = make_pipeline(FunctionTransformer(fakepkg.shift), FitLogged())
    if name == "sampler":
        pytest.importorskip("optuna")
        space = {"fitlogged__alpha": loguniform(1e-3, 1e3)}
        strategy = parcv.Sampler("tpe", n_trials=4, batch=2, seed=0)
    else:
        space = {"fitlogged__alpha": [0.1, 1.0, 3.0]}
        strategy = parcv.Halving(min_resources=15, factor=3, random_state=0)
    store = tmp_path / "run.sqlite"
    common = dict(backend="serial", store=store, progress=False, strategy=strategy)

    def run(**options):
        if kind == "search":
            return parcv.search(pipe, space, X, Y, cv=KFold(3), **common, **options)
        return parcv.nested_cv(pipe, space, X, Y, outer=2, inner=KFold(3), **common, **options)

    run()
    _upgrade(monkeypatch, "fakepkg", "2.0")
    for _ in range(2):  # the second resume reuses every unit, kept again
        kept = run(resume="values")
        (note,) = kept.notes
        assert "fakepkg 1.0 → 2.0" in note
        loaded = parcv.load(store)
        assert loaded.notes == kept.notes and loaded.to_json() == kept.to_json()
