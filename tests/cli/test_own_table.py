"""A spec takes the user's own table as it is: text and categorical columns, DataFrames."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

import parcv
from parcv.cli import main
from parcv.cli.build import use_spec_folder
from parcv.cli.data_sources import load_data
from parcv.cli.spec import SpecError, UsageError, load_spec, parse_spec
from parcv.cli.sweep import build_job
from parcv.plan.data import Dataset, data_token

PIPELINE = """\
[data]
source = "{source}"
target = "label"
{extra}
[[estimator.steps]]
name = "prep"
class = "sklearn.compose.ColumnTransformer"
params = {{ transformers = [["text", {{ class = "sklearn.preprocessing.OneHotEncoder", \
params = {{ handle_unknown = "ignore" }} }}, ["city", "colour"]]], remainder = "passthrough" }}

[[estimator.steps]]
name = "model"
class = "sklearn.linear_model.LogisticRegression"

[space]
model__C = [0.1, 1.0]

[cv]
cv = {{ kind = "kfold", n_splits = 3, shuffle = false }}

[run]
backend = "serial"

[report]
plots = false
"""


def _write_table(path, n=30, *, seed=0):
    """A table with two text columns, a float and an int column, and a label column."""
    rng = np.random.default_rng(seed)
    city = rng.choice(["Paris", "Lyon", "Nice"], n)
    colour = rng.choice(["red", "blue"], n)
    x1 = rng.normal(size=n).round(3)
    count = rng.integers(0, 9, n)
    label = np.where((city == "Paris") ^ (x1 > 0), "yes", "no")
    lines = ["x1,city,count,colour,label"]
    lines += [
        f"{a},{b},{c},{d},{e}" for a, b, c, d, e in zip(x1, city, count, colour, label, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _spec(tmp_path, source="d.csv", extra=""):
    path = tmp_path / "spec.toml"
    path.write_text(PIPELINE.format(source=source, extra=extra))
    return path


def _sklearn_search(X, y):
    prep = ColumnTransformer(
        [("text", OneHotEncoder(handle_unknown="ignore"), ["city", "colour"])],
        remainder="passthrough",
    )
    model = Pipeline([("prep", prep), ("model", LogisticRegression(random_state=0))])
    search = GridSearchCV(model, {"model__C": [0.1, 1.0]}, cv=KFold(3))
    return search.fit(X, y)


def test_a_csv_with_text_columns_loads_as_pandas_reads_it(tmp_path):
    _write_table(tmp_path / "d.csv")
    data = load_data(load_spec(_spec(tmp_path)))
    expected = pd.read_csv(tmp_path / "d.csv")
    pd.testing.assert_frame_equal(data.X, expected.drop(columns="label"))
    assert data.y.tolist() == expected["label"].tolist()
    assert data.description == "d.csv (30 samples x 4 features, 2 text columns: 'city', 'colour')"


def test_a_spec_with_a_column_transformer_on_names_matches_grid_search_cv(tmp_path, capsys):
    _write_table(tmp_path / "d.csv")
    out = tmp_path / "run"
    assert main(["run", str(_spec(tmp_path)), "--out", str(out), "--quiet"]) == 0
    result = parcv.load(out / "store.sqlite")
    table = pd.read_csv(tmp_path / "d.csv")
    expected = _sklearn_search(table.drop(columns="label"), table["label"])
    for key in ("split0_test_score", "split1_test_score", "split2_test_score", "mean_test_score"):
        np.testing.assert_array_equal(result.cv_results_[key], expected.cv_results_[key])


def test_every_backend_fits_the_table_a_spec_reads(tmp_path, backend):
    _write_table(tmp_path / "d.csv")
    data = load_data(load_spec(_spec(tmp_path)))
    job_model = build_job(load_spec(_spec(tmp_path))).estimator
    result = parcv.search(job_model, {"model__C": [0.1, 1.0]}, data.X, data.y, cv=KFold(3),
                          backend=backend)  # fmt: skip
    table = pd.read_csv(tmp_path / "d.csv")
    expected = _sklearn_search(table.drop(columns="label"), table["label"])
    np.testing.assert_array_equal(
        result.cv_results_["mean_test_score"], expected.cv_results_["mean_test_score"]
    )


def test_a_resumed_spec_reuses_the_same_table_and_recomputes_an_edited_cell(tmp_path, capsys):
    csv = _write_table(tmp_path / "d.csv")
    run = ["run", str(_spec(tmp_path)), "--out", str(tmp_path / "run")]
    assert main(run) == 0
    capsys.readouterr()
    assert main([*run, "--resume"]) == 0
    assert "reusing 6 of 7 units; 0 to compute" in capsys.readouterr().err
    lines = csv.read_text().splitlines()
    lines[5] = lines[5].replace("Paris", "Lille") if "Paris" in lines[5] else lines[5] + "x"
    csv.write_text("\n".join(lines) + "\n")
    assert main([*run, "--resume"]) == 0
    assert "reusing 0 of 7 units; 6 to compute" in capsys.readouterr().err


def test_a_table_is_identified_by_its_cells_names_and_dtypes(tmp_path):
    def token(text):
        (tmp_path / "t.csv").write_text(text)
        spec = parse_spec(
            '[data]\nsource = "t.csv"\ntarget = "y"\n[estimator]\nclass = "sklearn.svm.SVC"\n',
            base_dir=tmp_path,
        )
        data = load_data(spec)
        return data_token(Dataset(data.X, data.y))

    base = "a,b,y\n1,u,0\n2,v,1\n"
    assert token(base) == token(base)
    assert len({token(base), token(base.replace("u", "w")), token(base.replace("a,", "c,")),
                token(base.replace("2,", "2.0,"))}) == 4  # fmt: skip


def test_inspect_and_the_report_state_the_text_columns(tmp_path, capsys):
    _write_table(tmp_path / "d.csv")
    said = "d.csv (30 samples x 4 features, 2 text columns: 'city', 'colour')"
    assert main(["inspect", str(_spec(tmp_path))]) == 0
    assert f"data       {said}" in capsys.readouterr().out
    out = tmp_path / "run"
    assert main(["run", str(_spec(tmp_path)), "--out", str(out), "--quiet"]) == 0
    assert said in (out / "report.md").read_text()
    # The run's start line says it too, before any fit.
    assert capsys.readouterr().err.startswith(
        "parcv: the features hold 2 text columns: 'city', 'colour' (the estimator's steps "
        "take them)\n"
    )


def test_a_python_source_keeps_the_dataframe_it_returns(tmp_path):
    (tmp_path / "mine.py").write_text(
        "import pandas as pd\n\n"
        "def table():\n"
        "    X = pd.DataFrame({'city': ['a', 'b', 'c', 'a', 'b', 'c'], 'x': [1.0, 2, 3, 4, 5, 6]},"
        " index=[10, 11, 12, 13, 14, 15])\n"
        "    return X, pd.Series([0, 1, 0, 1, 0, 1], index=X.index, name='y'), list('ppqqrr')\n"
    )
    text = '[data]\nsource = "python:mine.table"\nn_samples = 4\n'
    spec = parse_spec(text + '[estimator]\nclass = "sklearn.svm.SVC"\n', base_dir=tmp_path)
    data = load_data(spec)
    assert isinstance(data.X, pd.DataFrame) and list(data.X.columns) == ["city", "x"]
    rows = np.sort(np.random.default_rng(0).choice(6, size=4, replace=False))
    assert data.X.index.tolist() == (10 + rows).tolist()  # rows by position, not by label
    np.testing.assert_array_equal(np.asarray(data.y), rows % 2)
    assert list(data.groups) == [list("ppqqrr")[i] for i in rows]
    assert "4 samples x 2 features, 3 groups, 1 text column: 'city'" in data.description


@pytest.mark.parametrize("elsewhere", ["module", "folder"])
def test_the_module_beside_the_spec_wins_over_one_of_its_name_elsewhere(
    tmp_path, monkeypatch, elsewhere
):
    # The spec's folder comes first, as for a script: a `mine.py` (or a bare `mine/`
    # folder, which Python imports as a namespace package) elsewhere on the path does
    # not hide the spec's own `mine.py`.
    other = tmp_path / "other"
    other.mkdir()
    if elsewhere == "module":
        (other / "mine.py").write_text("def table():\n    raise AssertionError('the wrong mine')\n")
    else:
        (other / "mine").mkdir()
    monkeypatch.syspath_prepend(str(other))
    monkeypatch.delitem(sys.modules, "mine", raising=False)
    here = tmp_path / "spec"
    here.mkdir()
    (here / "mine.py").write_text(
        "import numpy as np\n\ndef table():\n    return np.eye(4), np.arange(4.0)\n"
    )
    spec = parse_spec(
        '[data]\nsource = "python:mine.table"\n[estimator]\nclass = "sklearn.svm.SVR"\n',
        base_dir=here,
    )
    np.testing.assert_array_equal(load_data(spec).y, np.arange(4.0))


def test_a_text_column_for_a_numbers_only_estimator_is_refused_in_spec_words(tmp_path):
    _write_table(tmp_path / "d.csv")
    path = tmp_path / "spec.toml"
    path.write_text(
        '[data]\nsource = "d.csv"\ntarget = "label"\n'
        '[estimator]\nclass = "sklearn.linear_model.LogisticRegression"\n'
    )
    with pytest.raises(UsageError) as info:
        build_job(load_spec(path))
    text = str(info.value)
    assert text.startswith("d.csv line 2, column 'city': "), text
    assert "LogisticRegression takes numbers only" in text and "'colour'" in text
    assert "sklearn.compose.ColumnTransformer" in text and "data.features" in text


def test_a_data_error_names_only_keys_the_spec_wrote(tmp_path):
    np.savez(tmp_path / "d.npz", features=np.eye(4), y=np.arange(4.0))
    spec = parse_spec(
        '[data]\nsource = "d.npz"\n[estimator]\nclass = "sklearn.svm.SVR"\n',
        base_dir=tmp_path,
        source="s.toml",
    )
    with pytest.raises(SpecError) as info:
        load_data(spec)
    text = str(info.value)
    assert "data.x_key is missing" in text and "'features'" in text and "'X'" in text, text
    assert "x_key = 'X'" not in text
    _write_table(tmp_path / "d.csv")
    bad = parse_spec(
        '[data]\nsource = "d.csv"\ntarget = "label"\nfeatures = ["x1", "cty"]\n'
        '[estimator]\nclass = "sklearn.svm.SVC"\n',
        base_dir=tmp_path,
        source="s.toml",
    )
    with pytest.raises(SpecError, match=r"s.toml:4: data.features = 'cty'.*'city'"):
        load_data(bad)


def test_a_parquet_file_is_read_with_pyarrow_or_refused_naming_it(tmp_path, monkeypatch):
    _write_table(tmp_path / "d.csv")
    spec = _spec(tmp_path, source="d.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    (tmp_path / "d.parquet").write_bytes(b"PAR1")
    with pytest.raises(UsageError, match=r"d.parquet.*needs pyarrow.*pip install pyarrow"):
        load_data(load_spec(spec))
    monkeypatch.undo()
    pytest.importorskip("pyarrow")
    table = pd.read_csv(tmp_path / "d.csv").astype({"colour": "category"})
    table.to_parquet(tmp_path / "d.parquet")
    data = load_data(load_spec(spec))
    pd.testing.assert_frame_equal(data.X, table.drop(columns="label"))
    assert "1 text column: 'city', 1 categorical column: 'colour'" in data.description
    table.assign(label=[np.nan if i == 3 else float(i) for i in range(30)]).to_parquet(
        tmp_path / "d.parquet"
    )
    with pytest.raises(UsageError, match=r"^d.parquet: row 3, column 'label': nan is not a fin"):
        load_data(load_spec(spec))


def test_two_specs_with_modules_of_one_name_each_read_their_own(tmp_path, monkeypatch):
    """A spec's folder first on the path: a same-named module another spec's run imported
    earlier in this process is not the one this spec reads."""
    for i, folder in enumerate(("a", "b")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ownmod.py").write_text(
            f"import numpy as np\n\ndef table():\n    return np.full((6, 2), {i}.0), [0, 1] * 3\n"
        )
    monkeypatch.setattr(sys, "path", list(sys.path))  # the CLI's own process: restored after
    monkeypatch.delitem(sys.modules, "ownmod", raising=False)
    loaded = []
    for folder in ("a", "b"):
        text = '[data]\nsource = "python:ownmod.table"\n[estimator]\nclass = "sklearn.svm.SVC"\n'
        spec = parse_spec(text, base_dir=tmp_path / folder)
        use_spec_folder(tmp_path / folder)
        loaded.append(float(np.asarray(load_data(spec).X)[0, 0]))
    sys.modules.pop("ownmod", None)
    assert loaded == [0.0, 1.0]
