"""parcv inspect of a search in rounds shows what the run will use, counted as the run stores it.

Issue 48, items 7 and 11: inspect of a sampler spec crashed on a ``python:`` data source
(the grid check ran on the sampler's distributions) and showed a placeholder plan
("candidates 1: (defaults)" and its rows); of a Hyperband spec, the ``n_iter`` draws
its brackets never use. The oracle is the run's store: its fits, refits, training rows
and candidates.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from parcv.cli import main
from parcv.store.readers import read_records, read_rounds

DIABETES = '[data]\nsource = "sklearn:diabetes"\nn_samples = 60\n'
RIDGE = '[estimator]\nclass = "sklearn.linear_model.Ridge"\n'
SAMPLER = (
    DIABETES + RIDGE + "[space]\nalpha = { loguniform = [1e-3, 1e3] }\n"
    '[search]\nsampler = { kind = "tpe", seed = 0, n_trials = 4, batch = 2 }\n[cv]\ncv = 3\n'
)
NESTED_SAMPLER = SAMPLER.replace("n_trials = 4", "n_trials = 3").replace(
    "[cv]\ncv = 3\n", "[cv]\nouter = 2\ninner = 3\n"
)
HYPERBAND = (
    '[data]\nsource = "sklearn:breast_cancer"\nn_samples = 90\n'
    '[estimator]\nclass = "sklearn.linear_model.SGDClassifier"\n'
    'params = { tol = "None", random_state = 0 }\n'
    "[space]\nalpha = { loguniform = [1e-4, 1e-1] }\n"
    '[search]\nn_iter = 5\nhyperband = { resource = "max_iter", max_resources = 9 }\n'
    "[cv]\ncv = 3\n"
)
HALVING = (
    DIABETES + RIDGE + "[space]\nalpha = [0.01, 0.1, 1.0, 10.0, 100.0, 1e3]\n[cv]\ninner = 3\n"
    "[search]\nhalving = { factor = 2, min_resources = 20 }\n"
)
SPECS = {
    "sampler": SAMPLER,
    "nested_sampler": NESTED_SAMPLER,
    "hyperband": HYPERBAND,
    "halving": HALVING,
}
NEEDS_OPTUNA = {"sampler", "nested_sampler"}


def _write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _inspect(capsys, spec, out):
    assert main(["inspect", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    return capsys.readouterr().out


def _shown(text):
    """The counts inspect prints: candidates, fits, refits, training rows, and whether exact."""
    candidates = re.search(r"^candidates (at most )?(\d+)", text, re.M)
    units = re.search(r"^units +(at most )?(\d+) fits \+ (\d+) refit\(s\) = (\d+)$", text, re.M)
    work = re.search(r"^work +(at most )?([\d,]+) training rows", text, re.M)
    assert candidates and units and work, text
    assert int(units[2]) + int(units[3]) == int(units[4])
    exact = units[1] is None
    assert (candidates[1] is None) == exact == (work[1] is None), text
    return {
        "candidates": int(candidates[2]),
        "fits": int(units[2]),
        "refits": int(units[3]),
        "rows": int(work[2].replace(",", "")),
    }, exact


def _stored(store):
    """The same counts, read from the run's store: each round's part plan and each refit."""
    fits = refits = rows = 0
    ids: dict[str, set[int]] = {}
    for pid, row in read_rounds(store).items():
        records = read_records(store, pid)
        part = json.loads(row.plan).get("part")
        if part is None:  # an outer fold's refit, or the final fit on all data
            refits += len(records)
            continue
        fits += len(records)
        rows += sum(int(r.n_train) for r in records.values())
        ids.setdefault(row.search, set()).update(part["ids"])
    candidates = max(len(found) for found in ids.values())
    return {"candidates": candidates, "fits": fits, "refits": refits, "rows": rows}


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_the_counts_inspect_prints_are_what_the_run_stores(tmp_path, capsys, kind):
    if kind in NEEDS_OPTUNA:
        pytest.importorskip("optuna")
    # The counts are the store's: the report is written without its plots.
    spec = _write(tmp_path, SPECS[kind] + "[report]\nplots = false\n")
    out = tmp_path / "run"
    shown, exact = _shown(_inspect(capsys, spec, out))
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    stored = _stored(out / "store.sqlite")
    if exact:
        assert shown == stored
    else:  # a bound: the run stays within it (and here, without a race, reaches it)
        assert all(stored[k] <= shown[k] for k in shown), (shown, stored)
        assert stored == shown


def test_a_sampler_spec_shows_its_schedule_not_a_placeholder_plan(tmp_path, capsys):
    pytest.importorskip("optuna")
    text = _inspect(capsys, _write(tmp_path, SAMPLER), tmp_path / "run")
    # Before: "candidates 1: (defaults)" and the rows of 3 fits of the estimator as given.
    assert "(defaults)" not in text
    assert "candidates at most 4, proposed by the sampler strategy from the space (alpha)" in text
    assert '[search] sampler = { kind = "tpe", seed = 0, n_trials = 4, batch = 2 }' in text
    assert "units      at most 12 fits + 1 refit(s) = 13" in text
    assert "work       at most 480 training rows over all fits (40 per fit)" in text


def test_a_hyperband_spec_shows_the_brackets_draws_not_n_iters(tmp_path, capsys):
    text = _inspect(capsys, _write(tmp_path, HYPERBAND), tmp_path / "run")
    # Before: "candidates 5: alpha=0.0044...; ..." (the n_iter draws no bracket uses).
    assert "candidates 17, proposed by the hyperband strategy from the space (alpha)" in text
    assert "[search] n_iter = 5 is not used" in text
    assert "alpha=" not in text


def test_a_halving_spec_counts_the_rows_of_its_subsampled_rungs(tmp_path, capsys):
    text = _inspect(capsys, _write(tmp_path, HALVING), tmp_path / "run")
    # 18 fits on 13 of the 40 training rows of a fold (20 of 60), 9 on 26 (40 of 60).
    assert "work       468 training rows over all fits (17 per fit)" in text  # before: 720
    assert "candidates 6: alpha=0.01; alpha=0.1; alpha=1.0; alpha=10.0, ... (2 more)" in text


# --- a python: data source: inspect reads no data, and checks no grid -------------------

PYTHON_DATA = '[data]\nsource = "python:my_data.load"\n'


@pytest.mark.parametrize("kind", ["sampler", "hyperband"])
def test_inspect_of_a_python_source_with_a_strategy_checks_no_grid(
    tmp_path, capsys, monkeypatch, kind
):
    if kind == "sampler":
        pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_data.py").write_text(
        "raise AssertionError('inspect imported the data source')\n"
    )
    text = re.sub(r"\[data\]\n(.*\n)+?(?=\[estimator\])", PYTHON_DATA, SPECS[kind])
    spec = _write(tmp_path, text)
    # Before (sampler): exit 1, "TypeError: space['alpha'] is a distribution ... Pass n_iter=...".
    assert main(["inspect", str(spec)]) == 0
    captured = capsys.readouterr()
    assert "n_iter=" not in captured.out + captured.err
    assert "python:my_data.load (read at run time" in captured.out
    assert f"candidates proposed by the {kind} strategy from the space (alpha)" in captured.out
    if kind == "sampler":
        assert '[search] sampler = { kind = "tpe", seed = 0, n_trials = 4, batch = 2 }' in (
            captured.out
        )
    else:  # before: the 5 draws of n_iter, which no bracket uses
        assert "alpha=" not in captured.out
        assert "[search] n_iter = 5 is not used" in captured.out


# --- missing values: the check that reads the space's points skips a sampler's ------------


@pytest.mark.parametrize(
    ("estimator", "code"),
    [("sklearn.ensemble.HistGradientBoostingRegressor", 0), ("sklearn.linear_model.Ridge", 2)],
)
def test_missing_values_with_a_sampler_space_are_checked_not_a_grid(
    tmp_path, capsys, monkeypatch, estimator, code
):
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).normal(size=(30, 2)).round(3)
    lines = ["a,b,y", *(f"{'' if i == 4 else a},{b},{a + b}" for i, (a, b) in enumerate(X))]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    param = "learning_rate" if "HistGradient" in estimator else "alpha"
    spec = _write(
        tmp_path,
        f'[data]\nsource = "d.csv"\ntarget = "y"\n[estimator]\nclass = "{estimator}"\n'
        f"[space]\n{param} = {{ loguniform = [0.01, 1.0] }}\n"
        '[search]\nsampler = { kind = "random", seed = 0, n_trials = 2 }\n[cv]\ncv = 3\n',
    )
    # Before: exit 1 for both, "TypeError: space[...] is a distribution ... Pass n_iter=...".
    assert main(["inspect", str(spec)]) == code
    captured = capsys.readouterr()
    assert "n_iter=" not in captured.err
    if code:
        assert "d.csv line 6, column 'a': the cell is empty (a missing value)" in captured.err
