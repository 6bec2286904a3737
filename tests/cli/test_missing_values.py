"""A missing value in a table is named by file, line (as an editor counts it) and column."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold, cross_val_score

from parcv.cli import main

HEADER = "a,b,c,label"
SPEC = """\
[data]
source = "{source}"
target = "label"
{extra}
[estimator]
class = "{estimator}"

[space]
{space}

[cv]
cv = 3

[report]
plots = false
"""
LOGISTIC = ("sklearn.linear_model.LogisticRegression", "C = [0.1, 1.0]")
BOOSTING = ("sklearn.ensemble.HistGradientBoostingClassifier", "max_depth = [2, 3]")


def _rows(n=60):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)).round(3)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _write_csv(path, X, y, blanks, *, lines_before=""):
    """``blanks``: (row, column) cells left empty; ``lines_before`` go after the header."""
    lines = [HEADER + lines_before]
    for i, (row, label) in enumerate(zip(X, y, strict=True)):
        cells = ["" if (i, j) in blanks else repr(float(v)) for j, v in enumerate(row)]
        lines.append(",".join([*cells, str(label)]))
    path.write_text("\n".join(lines) + "\n")


def _spec(tmp_path, model, source="d.csv", extra=""):
    spec = tmp_path / "spec.toml"
    estimator, space = model
    spec.write_text(SPEC.format(source=source, extra=extra, estimator=estimator, space=space))
    return spec


@pytest.mark.parametrize("command", ["run", "inspect"])
def test_an_estimator_without_nan_is_refused_before_any_fit_naming_the_cell(
    tmp_path, capsys, monkeypatch, command
):
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    _write_csv(tmp_path / "d.csv", X, y, {(4, 0), (8, 1), (20, 0)})
    spec = _spec(tmp_path, LOGISTIC)
    assert main([command, str(spec), "--backend", "serial"]) == 2
    err = capsys.readouterr().err
    # Row 4 is the file's line 6: the header is line 1. Before: "X holds NaN (first in row 4)".
    assert err == (
        "parcv: error: d.csv line 6, column 'a': the cell is empty (a missing value), and "
        "LogisticRegression does not accept missing values (3 missing values, in columns "
        "'a' (2) and 'b' (1)). Impute them in a pipeline: write [estimator] as steps = "
        '[{ name = "impute", class = "sklearn.impute.SimpleImputer" }, { name = "model", '
        'class = "sklearn.linear_model.LogisticRegression" }] (its params go into that step, '
        "and the [space] keys become model__C); or remove those rows, or use an estimator "
        'that accepts them (class = "sklearn.ensemble.HistGradientBoostingClassifier").\n'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "spec.toml"]  # nothing ran


def test_lines_are_counted_as_an_editor_counts_them(tmp_path, capsys, monkeypatch):
    """A quoted cell over three lines, and a blank line, come before the missing value."""
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    lines = [HEADER + ",note"]
    for i, (row, label) in enumerate(zip(X, y, strict=True)):
        cells = ["" if (i, j) == (3, 2) else repr(float(v)) for j, v in enumerate(row)]
        note = '"one\ntwo\nthree"' if i == 1 else "x"
        lines.append(",".join([*cells, str(label), note]) + ("\n" if i == 0 else ""))
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    spec = _spec(tmp_path, LOGISTIC, extra='features = ["a", "b", "c"]')
    assert main(["inspect", str(spec)]) == 2
    # header 1, row 0 on 2, a blank 3, row 1 on 4-6, row 2 on 7: row 3 on line 8.
    assert "d.csv line 8, column 'c': the cell is empty" in capsys.readouterr().err


def test_a_cell_reading_nan_is_missing_too(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    X[10, 2] = np.nan  # written as 'nan'
    _write_csv(tmp_path / "d.csv", X, y, set())
    assert main(["inspect", str(_spec(tmp_path, LOGISTIC))]) == 2
    err = capsys.readouterr().err
    assert "d.csv line 12, column 'c': the cell holds 'nan' (a missing value)" in err
    assert "(1 missing value, in column 'c' (1))" in err


def test_an_estimator_taking_nan_runs_and_the_start_line_and_report_say_so(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    blanks = {(4, 0), (8, 1), (20, 0)}
    _write_csv(tmp_path / "d.csv", X, y, blanks)
    spec = _spec(tmp_path, BOOSTING)
    assert main(["run", str(spec), "--backend", "serial", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "parcv: 3 missing values, in columns 'a' (2) and 'b' (1) (the first at d.csv line 6, "
        "column 'a'); HistGradientBoostingClassifier takes them as missing (NaN)\n"
    )
    report = (tmp_path / "runs" / "spec" / "report.md").read_text()
    assert (
        "| data | d.csv (60 samples x 3 features; 3 missing values, in columns 'a' (2) and "
        "'b' (1)) |" in report
    )
    # The blank cells reached the estimator as NaN: scikit-learn on the same folds agrees.
    results = json.loads((tmp_path / "runs" / "spec" / "results.json").read_text())
    X_nan = X.copy()
    for i, j in blanks:
        X_nan[i, j] = np.nan
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    for depth, got in zip([2, 3], _mean_scores(results), strict=True):
        model = HistGradientBoostingClassifier(max_depth=depth, random_state=0)
        assert got == pytest.approx(cross_val_score(model, X_nan, y, cv=cv).mean(), abs=1e-12)


def _mean_scores(results):
    """The mean test score of each candidate in results.json, in candidate order."""
    return [summary["mean"] for summary in results["summaries"]["score"]]


def test_an_array_source_names_row_and_column(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    X[7, 1] = np.nan
    np.savez(tmp_path / "d.npz", X=X, y=y)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(source="d.npz", extra="", estimator=LOGISTIC[0],
                                space=LOGISTIC[1]).replace('target = "label"\n', ""))  # fmt: skip
    assert main(["inspect", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "d.npz: X row 7, column 1: the cell holds 'nan' (a missing value)" in err
    assert "(1 missing value, in column 'column 1' (1))" in err


def test_a_subsample_names_the_line_of_the_row_it_kept(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    X, y = _rows(200)
    _write_csv(tmp_path / "d.csv", X, y, {(row, 0) for row in range(0, 200, 2)})
    spec = _spec(tmp_path, LOGISTIC, extra="n_samples = 50")
    assert main(["inspect", str(spec)]) == 2
    err = capsys.readouterr().err
    line = int(err.split("d.csv line ")[1].split(",")[0])
    assert (line - 2) % 2 == 0  # an even row: one of those left empty
    rows = (tmp_path / "d.csv").read_text().splitlines()
    assert rows[line - 1].startswith(",")  # that line's first cell is the empty one


# A pipeline: the step that first refuses the missing values is named, with the spec line
# that fixes it; one that takes them (an imputer first, HistGradientBoosting) is not refused.
SCALED = """\
[data]
source = "{source}"
{target}
[estimator]
steps = [
  {{ name = "scale", class = "sklearn.preprocessing.StandardScaler" }},
{impute}  {{ name = "model", class = "sklearn.linear_model.LogisticRegression" }},
]

[space]
{space}

[cv]
cv = 3
{search}
[report]
plots = false
"""
IMPUTE_LINE = '{ name = "impute", class = "sklearn.impute.SimpleImputer" }'


def _scaled(tmp_path, source, *, impute="", space="model__C = [0.1, 1.0]", search=""):
    target = "" if source.endswith(".npz") else 'target = "label"'
    spec = tmp_path / "spec.toml"
    text = SCALED.format(source=source, target=target, impute=impute, space=space, search=search)
    spec.write_text(text)
    return spec


def _write_source(tmp_path, source, X, y, blanks):
    """d.csv (read as a DataFrame) or d.npz (an ndarray), with NaN in the cells ``blanks``."""
    if source == "d.csv":
        _write_csv(tmp_path / source, X, y, blanks)
        return
    X = X.copy()
    for i, j in blanks:
        X[i, j] = np.nan
    np.savez(tmp_path / source, X=X, y=y)


@pytest.mark.parametrize(
    ("source", "first"),
    [("d.csv", "d.csv line 6, column 'a': the cell is empty"),
     ("d.npz", "d.npz: X row 4, column 0: the cell holds 'nan'")],
)  # fmt: skip
def test_a_pipeline_is_refused_naming_the_step_that_refuses_missing_values(
    tmp_path, capsys, monkeypatch, source, first
):
    """StandardScaler passes NaN on; LogisticRegression refuses them. Before: 'Pipeline takes
    them as missing', then every fit failed with a traceback and a Python-worded fix."""
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    _write_source(tmp_path, source, X, y, {(4, 0), (8, 1)})
    spec = _scaled(tmp_path, source)
    assert main(["run", str(spec), "--backend", "serial"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"parcv: error: {first} (a missing value), and step 'model' (LogisticRegression) of "
        "the pipeline does not accept missing values (2 missing "
        f"values, in columns {_columns(source)}). Add {IMPUTE_LINE} to [estimator] steps, "
        'before the step named "model"; or remove those rows, or use an estimator that '
        'accepts them (class = "sklearn.ensemble.HistGradientBoostingClassifier").\n'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [source, "spec.toml"]  # nothing ran


def _columns(source):
    a, b = ("'a'", "'b'") if source == "d.csv" else ("'column 0'", "'column 1'")
    return f"{a} (1) and {b} (1)"


@pytest.mark.parametrize("source", ["d.csv", "d.npz"])
def test_the_line_the_refusal_offers_makes_a_spec_that_runs_as_scikit_learn_does(
    tmp_path, capsys, monkeypatch, source
):
    """No false refusal: with the imputer the refusal named, the run starts, its start line
    names the step that takes the missing values, and its scores are scikit-learn's."""
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    blanks = {(4, 0), (8, 1)}
    _write_source(tmp_path, source, X, y, blanks)
    spec = _scaled(tmp_path, source, impute=f"  {IMPUTE_LINE},\n")
    assert main(["run", str(spec), "--backend", "serial", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.endswith(
        "; step 'impute' (SimpleImputer) of the pipeline takes them as missing (NaN)\n"
    )
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X_nan = X.copy()
    for i, j in blanks:
        X_nan[i, j] = np.nan
    results = json.loads((tmp_path / "runs" / "spec" / "results.json").read_text())
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    for C, got in zip([0.1, 1.0], _mean_scores(results), strict=True):
        model = make_pipeline(
            StandardScaler(), SimpleImputer(), LogisticRegression(C=C, random_state=0)
        )
        assert got == pytest.approx(cross_val_score(model, X_nan, y, cv=cv).mean(), abs=1e-12)


HGB = '{ class = "sklearn.ensemble.HistGradientBoostingClassifier", params = { max_iter = 5 } }'
SVC = '{ class = "sklearn.svm.SVC" }'
LOGREG = '{ class = "sklearn.linear_model.LogisticRegression" }'


@pytest.mark.parametrize(
    ("models", "refused"),
    [([LOGREG, SVC], True), ([LOGREG, HGB], False), ([HGB], False)],
)
def test_a_space_that_swaps_the_step_is_refused_only_when_every_candidate_refuses(
    tmp_path, capsys, monkeypatch, models, refused
):
    """Each candidate is walked; a candidate that takes the NaN leaves something to select.
    Before: a space that changed a step was never refused."""
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    _write_csv(tmp_path / "d.csv", X, y, {(4, 0)})
    spec = _scaled(tmp_path, "d.csv", space=f"model = [{', '.join(models)}]")
    assert main(["inspect", str(spec)]) == (2 if refused else 0)
    err = capsys.readouterr().err
    if refused:
        assert (
            "step 'model' (LogisticRegression) of the pipeline (candidate model="
            "LogisticRegression(random_state=0); every candidate refuses them) does not accept"
        ) in err
    else:
        assert err == ""


def test_with_error_score_raise_one_refusing_candidate_refuses_the_sweep(
    tmp_path, capsys, monkeypatch
):
    """The run would stop at that candidate's first fit: it is named before any."""
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    _write_csv(tmp_path / "d.csv", X, y, {(4, 0)})
    spec = _scaled(tmp_path, "d.csv", space=f"model = [{HGB}, {LOGREG}]",
                   search='\n[scoring]\nerror_score = "raise"\n')  # fmt: skip
    assert main(["inspect", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "step 'model' (LogisticRegression) of the pipeline (candidate model=" in err


def test_a_column_transformer_is_walked_per_part_on_a_table_with_a_text_column(
    tmp_path, capsys, monkeypatch
):
    """The NaN of column 'a' reach the part 'num' only; 'text' (OneHotEncoder) never sees
    them. Before: a ColumnTransformer first said nothing, and every fit failed."""
    monkeypatch.chdir(tmp_path)
    X, y = _rows()
    _write_csv(tmp_path / "d.csv", X, y, {(4, 0)})
    lines = (tmp_path / "d.csv").read_text().splitlines()
    cities = ["Paris", "Lyon", "Nice"]
    text = [lines[0] + ",city"] + [f"{row},{cities[i % 3]}" for i, row in enumerate(lines[1:])]
    (tmp_path / "d.csv").write_text("\n".join(text) + "\n")
    columns = (
        '{ class = "sklearn.compose.ColumnTransformer", params = { transformers = ['
        '["num", { class = "sklearn.preprocessing.PolynomialFeatures" }, ["a", "b", "c"]], '
        '["text", { class = "sklearn.preprocessing.OneHotEncoder" }, ["city"]]] } }'
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[data]\nsource = "d.csv"\ntarget = "label"\n\n[estimator]\nsteps = [\n'
        f'  {{ name = "columns", class = {columns[10:]},\n'
        '  { name = "model", class = "sklearn.linear_model.LogisticRegression" },\n]\n\n'
        "[cv]\ncv = 3\n"
    )
    assert main(["inspect", str(spec)]) == 2
    err = capsys.readouterr().err
    assert (
        "and step 'num' (PolynomialFeatures) of step 'columns' (ColumnTransformer) of the "
        "pipeline does not accept missing values (1 missing value, in column 'a' (1)). Write "
        "step 'num' (PolynomialFeatures) of step 'columns' (ColumnTransformer) of the pipeline "
        'as { class = "sklearn.pipeline.Pipeline", params = { steps = [["impute", { class = '
        '"sklearn.impute.SimpleImputer" }], ["num", { class = '
        '"sklearn.preprocessing.PolynomialFeatures" }]] } }' in err
    )
