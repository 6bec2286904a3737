"""Sweep spec files: schema errors name the key, the value and what is allowed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.model_selection import (
    GroupKFold,
    ParameterSampler,
    RepeatedKFold,
    StratifiedKFold,
)
from sklearn.pipeline import Pipeline

import parcv
from parcv import RandomSpace, ThreeWayHoldOut
from parcv.cli import main
from parcv.cli.build import build_estimator, build_scheme, build_scoring, build_space
from parcv.cli.data_sources import load_data
from parcv.cli.spec import SpecError, find_line, load_spec, override_run, override_table, parse_spec
from parcv.cli.sweep import UsageError, build_job
from parcv.criteria.tasks import CriteriaRequest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))

BASE = """\
[data]
source = "sklearn:diabetes"
n_samples = 60

[estimator]
class = "sklearn.linear_model.Ridge"
"""


SEARCH = BASE + "[space]\nalpha = [1.0, 2.0]\n[search]\n"  # the next key is on line 10


def _spec(text: str) -> str:
    return textwrap.dedent(text)


# (spec text, words the message must contain: the key, the bad value, what is allowed)
BAD_SPECS = [
    (SEARCH + "racing = { burn_in = 1 }\n", [":10: search.racing.burn_in = 1", "burn_in must"]),
    (SEARCH + "racing = { bruin = 3 }\n", ["search.racing.bruin", "Did you mean 'burn_in'"]),
    (
        SEARCH + 'iterations = { param = "max_iter", up_to = 0 }\n',
        [":10: search.iterations.up_to = 0", "up_to must be an int >= 1"],
    ),
    (
        SEARCH + 'iterations = { param = "max_iter", up_to = 5, pateince = 2 }\n',
        ["search.iterations.pateince", "Did you mean 'patience'"],
    ),
    (SEARCH + "halving = { factor = 1 }\n", [":10: search.halving.factor = 1", "factor must"]),
    (SEARCH + "halving = { fctor = 3 }\n", ["search.halving.fctor", "Did you mean 'factor'"]),
    (
        SEARCH + 'hyperband = { resource = "n_samples", max_resources = 9 }\n',
        ["search.hyperband.resource", "resource must name"],
    ),
    ("[data\nsource = 1\n", ["(toml syntax)", "line 1"]),
    (BASE + "[runn]\nseed = 1\n", ["runn = ", "Did you mean 'run'"]),
    (BASE + "[cv]\noutr = 5\n", [":8: cv.outr = 5", "Did you mean 'outer'"]),
    ('[estimator]\nclass = "sklearn.linear_model.Ridge"\n', ["data is missing", "[data]"]),
    ("[data]\nn_samples = 3\n[estimator]\nclass = 'a.B'\n", ["data.source is missing"]),
    (BASE + '[run]\nbackend = "gpu"\n', [":8: run.backend = 'gpu'", "['serial', 'local', 'dask']"]),
    (BASE + "[run]\nn_jobs = 0\n", ["run.n_jobs = 0", "an int >= 1"]),
    (BASE + '[report]\ncv_results = "yes"\n', [":8: report.cv_results = 'yes'", "true or false"]),
    (BASE + "[run]\nseed = 4294967296\n", ["run.seed = 4294967296", "from 0 to 4294967295"]),
    (BASE + "[run]\nn_jobs = -3\n", ["run.n_jobs = -3", "-1 for every core or -2"]),
    (BASE + "[space]\nalpha = [1.0]\n[cv]\nouter = 1\n", [":10: cv.outer = 1", "int k >= 2"]),
    (
        BASE + '[space]\nalpha = [1.0]\n[cv]\nouter = { kind = "kfould" }\n',
        ["cv.outer.kind = 'kfould'", "'kfold'"],
    ),
    (BASE + "[space]\nalpha = 1.0\n", [":8: space.alpha = 1.0", "Wrap a single value in a list"]),
    (
        BASE + "[space]\nalpha = { loguniform = [0.001, 1.0] }\n",
        ["space.alpha.loguniform = [0.001, 1.0]", "n_iter"],
    ),
    (
        BASE.replace("Ridge", "Rigde"),
        [
            ":6: estimator.class = 'sklearn.linear_model.Rigde'",
            "import path",
            "Did you mean 'sklearn.linear_model.Ridge'?",
        ],
    ),
    # Every "not a valid name" of a spec says the closest names (one helper: did_you_mean).
    (
        BASE.replace("linear_model.Ridge", "linear_model.LogisticRegresion"),
        [
            "estimator.class = 'sklearn.linear_model.LogisticRegresion'",
            "Did you mean 'sklearn.linear_model.LogisticRegression'?",
        ],
    ),
    (
        BASE.replace("linear_model.Ridge", "linear_modle.Ridge"),
        ["Did you mean 'sklearn.linear_model.Ridge'?"],
    ),
    (
        BASE.replace("sklearn.linear_model.Ridge", "Ridge"),
        ["estimator.class = 'Ridge'", "Did you mean 'sklearn.linear_model.Ridge'?"],
    ),
    (
        BASE + "params = { alhpa = 1.0 }\n",
        ["estimator.params.alhpa = 1.0", "Did you mean 'alpha'?"],
    ),
    (
        BASE + '[scoring]\nmetrics = "acuracy"\n',
        ["scoring.metrics = 'acuracy'", "scorer names", "Did you mean 'accuracy'?"],
    ),
    (
        BASE
        + '[space]\nalpha = [1.0]\n[scoring]\nmetrics = ["r2", "neg_max_error"]\nrefit = "R2"\n',
        ["scoring.refit = 'R2'", "Did you mean 'r2'?"],
    ),
    (
        BASE + "[space]\nalpha = [1.0]\n[cv]\nouter = { kind = 'kfodl' }\n",
        ["cv.outer.kind = 'kfodl'", "Did you mean 'kfold'?"],
    ),
    (BASE + "[run]\njournal = 'wall'\n", ["run.journal = 'wall'", "Did you mean 'wal'?"]),
    (
        BASE + "[space]\nalpha = [1.0]\n[report]\nparam = 'alpah'\n",
        ["report.param = 'alpah'", "Did you mean 'alpha'?"],
    ),
    (
        BASE.replace("sklearn:diabetes", "sklearn:diabetis"),
        ["data.source = 'sklearn:diabetis'", "Did you mean 'diabetes'?"],
    ),
    (BASE.replace("sklearn:diabetes", "nothere.csv"), ["data.source = 'nothere.csv'", "existing"]),
    (BASE + "[space]\nalpha = [1.0]\n[search]\nstrategy = 'grid'\nn_iter = 3\n", ["search.n_iter"]),
    (
        BASE + '[space]\nalpha = [1.0]\n[cv]\nmode = "search"\nouter = 3\n',
        ["cv.mode = 'search'", "'nested'"],
    ),
    (
        BASE + '[space]\nalpha = [1.0]\n[scoring]\nmetrics = ["r2", "explained_variance"]\n'
        'refit = "mae"\n',
        ["scoring.refit = 'mae'", "['r2', 'explained_variance']"],
    ),
    (BASE + '[cluster]\nkind = "sge"\n', ["cluster.kind = 'sge'", "['slurm', 'pbs']"]),
    (BASE + '[tls]\nca_file = "ca.pem"\n', ["tls.cert (--tls-cert) is missing"]),
    (BASE + '[cv]\ncv = { kind = "group" }\n', ["cv.cv.kind = 'group'", "groups"]),
    (BASE + "[space]\nalpha = { range = [1.5, 3] }\n", ["space.alpha.range", "of ints"]),
    (
        SEARCH + 'criteria = ["aic", "bicc"]\n',
        [":10: search.criteria = 'bicc'", "['aic', 'bic', 'cp', 'vc', 'evidence']", "'bic'?"],
    ),
    (SEARCH + 'criteria = "bic"\n', [":10: search.criteria = 'bic'", "non-empty list"]),
    (SEARCH + "criteria = []\n", [":10: search.criteria = []", "non-empty list"]),
    (SEARCH + 'criteria = ["bic", "bic"]\n', ["search.criteria = ['bic', 'bic']", "once"]),
    (
        SEARCH + 'criteria = { names = ["bic"], n_param = 3 }\n',
        [":10: search.criteria.n_param = 3", "Did you mean 'n_params'"],
    ),
    (SEARCH + "criteria = { n_params = 3 }\n", ["search.criteria.names is missing"]),
    (
        SEARCH + 'criteria = { names = ["bic"], n_params = -1 }\n',
        [":10: search.criteria.n_params = -1", "an int >= 0"],
    ),
    (
        SEARCH + 'criteria = { names = ["bic"], noise_variance = 0 }\n',
        [":10: search.criteria.noise_variance = 0", "a number > 0"],
    ),
    (
        SEARCH + 'criteria = ["bic", "evidence"]\n',
        [":10: search.criteria = ['bic', 'evidence']", "undefined for Ridge", "marginal"],
    ),
    (SEARCH + 'criteria = ["vc"]\n', ["search.criteria = ['vc']", "'cp' for regression"]),
    (BASE + '[search]\ncriteria = ["bic"]\n', ["no [search] table without a [space]"]),
    (
        BASE + '[run]\njournal = "wal2"\n',
        [":8: run.journal = 'wal2'", "['wal', 'delete']", "NFS"],
    ),
    (
        SEARCH + 'selection = "one_se"\ncomplexity = "alpah"\n',
        [":11: search.complexity = 'alpah'", "parameter of the space", "['alpha']", "'alpha'?"],
    ),
    (
        SEARCH + 'complexity = "alpha"\n',
        [":10: search.complexity = 'alpha'", "selection = 'best'", "selection = 'one_se'"],
    ),
    (
        BASE + '[space]\nsolver = ["auto", "svd"]\n[search]\nselection = "one_se"\n'
        'complexity = "solver"\n',
        [":11: search.complexity = 'solver'", "numeric", "space has solver = ['auto', 'svd']"],
    ),
    (
        BASE + "[[space]]\nalpha = [1.0]\n[[space]]\nfit_intercept = [false]\n[search]\n"
        'selection = "one_se"\ncomplexity = "alpha"\n',
        [":13: search.complexity = 'alpha'", "space[1] does not set it"],
    ),
    (
        BASE + '[space]\nalpha = ["0.1", "1.0"]\n',
        ["every candidate is rejected", "alpha='0.1'", "'alpha' parameter of Ridge"],
    ),
    (
        BASE + '[space]\nalpha = [1.0, "0.1"]\n[scoring]\nerror_score = "raise"\n',
        ["candidate alpha='0.1' is rejected", "error_score=float('nan')"],
    ),
]


@pytest.mark.parametrize(("text", "words"), BAD_SPECS, ids=[w[0][:28] for _, w in BAD_SPECS])
def test_bad_spec_exits_2_naming_key_value_and_allowed(tmp_path, capsys, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"parcv: error: {path}")
    for word in words:
        assert word in err
    assert not (tmp_path / "run").exists()  # nothing was created, nothing ran


def test_spec_error_carries_key_value_allowed_and_line():
    with pytest.raises(SpecError) as info:
        parse_spec(BASE + '[run]\nbackend = "gpu"\n', source="x.toml")
    err = info.value
    assert (err.key, err.value, err.line, err.source) == ("run.backend", "gpu", 8, "x.toml")
    assert "serial" in err.allowed


def test_find_line_follows_tables_arrays_of_tables_and_inline_arrays():
    text = _spec("""\
        [estimator]
        steps = [
          { name = "a", class = "x.A" },
          { name = "b", class = "x.B" },
        ]
        [[space]]
        a__c = [1]
        [[space]]
        b__c = [2]
        """)
    assert find_line(text, "estimator.steps[1].class") == 4
    assert find_line(text, "space[1].b__c") == 9
    assert find_line(text, "space[0]") == 6
    assert find_line(text, "nothing.here") is None


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_spec_parses_and_builds(path):
    spec = load_spec(path)
    job = build_job(spec)
    assert job.plan().n_units > 0
    assert spec.mode in ("search", "nested")


def test_overrides_replace_run_options_and_tables():
    spec = parse_spec(BASE + '[run]\nseed = 3\nbackend = "local"\n[cluster]\nkind = "pbs"\n')
    spec = override_run(spec, seed=None, backend="serial", n_jobs=2)
    assert (spec.run.seed, spec.run.backend, spec.run.n_jobs) == (3, "serial", 2)
    for n_jobs in (-1, -2):  # as on the command line
        assert parse_spec(BASE + f"[run]\nn_jobs = {n_jobs}\n").run.n_jobs == n_jobs
    assert override_table(spec, "cluster", {"jobs": 4}).table("cluster") == {
        "kind": "pbs",
        "jobs": 4,
    }
    assert override_table(spec, "cluster", {}, replace_all=True).table("cluster") == {}


def test_estimators_pipelines_none_and_seeded_random_state():
    est = build_estimator(
        {
            "steps": [
                {"class": "sklearn.preprocessing.StandardScaler"},
                {
                    "name": "tree",
                    "class": "sklearn.tree.DecisionTreeClassifier",
                    "params": {"max_depth": "None"},
                },
            ]
        },
        seed=7,
    )
    assert isinstance(est, Pipeline)
    assert [name for name, _ in est.steps] == ["standardscaler", "tree"]
    assert est.get_params()["tree__max_depth"] is None
    assert est.get_params()["tree__random_state"] == 7
    explicit = build_estimator({"class": "sklearn.svm.SVC", "params": {"random_state": 1}}, seed=7)
    assert explicit.random_state == 1
    with pytest.raises(SpecError, match=r"estimator\.steps"):
        build_estimator({"steps": [], "class": "sklearn.svm.SVC"})


def test_space_grids_ranges_and_random_distributions_match_sklearn():
    grid, selection = build_space(
        {"a": {"range": [1, 4]}, "b": {"geomspace": [1, 100, 3]}, "c": ["x", "None"]}, {}, 0
    )
    assert grid == {"a": [1, 2, 3], "b": [1.0, 10.0, 100.0], "c": ["x", None]}
    assert selection.rule == "best"
    space, _ = build_space(
        {"C": {"loguniform": [0.1, 10.0]}, "k": {"int": [1, 3]}, "u": {"uniform": [2, 5]}},
        {"n_iter": 6},
        seed=4,
    )
    assert isinstance(space, RandomSpace)
    assert (space.n_iter, space.random_state) == (6, 4)
    reference = {
        "C": stats.loguniform(0.1, 10.0),
        "k": stats.randint(1, 4),
        "u": stats.uniform(2, 3),
    }
    ours = list(ParameterSampler(space.distributions, 6, random_state=4))
    theirs = list(ParameterSampler(reference, 6, random_state=4))
    assert ours == theirs
    assert all(1 <= p["k"] <= 3 and 2 <= p["u"] <= 5 for p in ours)
    families, _ = build_space([{"m": [{"class": "sklearn.svm.SVC"}]}, {"n": [1]}], {}, 0)
    assert isinstance(families, list) and len(families) == 2
    one_se = build_space({"d": [1, 2]}, {"selection": "one_se", "complexity": "d"}, 0)[1]
    assert (one_se.rule, one_se.complexity) == ("one_se", "d")


def test_schemes_are_seeded_and_follow_estimator_and_groups():
    kw = {"classifier": True, "grouped": False, "seed": 5}
    auto = build_scheme(4, "cv.cv", **kw)
    assert isinstance(auto, StratifiedKFold) and auto.random_state == 5 and auto.shuffle
    grouped = build_scheme(3, "cv.cv", classifier=False, grouped=True, seed=0)
    assert isinstance(grouped, GroupKFold)
    rep = build_scheme(
        {"kind": "repeated", "n_splits": 3, "n_repeats": 2},
        "cv.cv",
        classifier=False,
        grouped=False,
        seed=1,
    )
    assert isinstance(rep, RepeatedKFold) and rep.get_n_splits() == 6
    holdout = build_scheme(
        {"kind": "holdout", "train": 0.5, "valid": 0.25, "test": 0.25},
        "cv.outer",
        holdout=True,
        **kw,
    )
    assert holdout == ThreeWayHoldOut(0.5, 0.25, 0.25, random_state=5)
    with pytest.raises(SpecError, match=r"cv\.inner\.kind = 'holdout'"):
        build_scheme({"kind": "holdout"}, "cv.inner", **kw)
    with pytest.raises(SpecError, match=r"cv\.cv\.shuffl"):
        build_scheme({"shuffl": False}, "cv.cv", **kw)


def test_scoring_one_name_becomes_a_named_metric():
    assert build_scoring({"metrics": "r2"}, "nested") == {"scoring": ["r2"], "refit": "r2"}
    assert build_scoring({"metrics": "r2"}, "cross_validate") == {"scoring": ["r2"]}
    out = build_scoring({"error_score": "nan", "return_train_score": True}, "search")
    assert np.isnan(out["error_score"]) and out["return_train_score"] is True
    with pytest.raises(SpecError, match=r"scoring\.refit is missing"):
        build_scoring({"metrics": ["r2", "explained_variance"]}, "search")


def test_csv_npz_npy_sources_and_subsampling(tmp_path):
    (tmp_path / "d.csv").write_text("g,a,b,label\nu,1,2,yes\nu,3,,no\nv,5,6,yes\nw,7,8,no\n")
    spec = parse_spec(
        '[data]\nsource = "d.csv"\ntarget = "label"\ngroups = "g"\n'
        '[estimator]\nclass = "sklearn.svm.SVC"\n',
        base_dir=tmp_path,
    )
    data = load_data(spec)
    assert data.X.shape == (4, 2) and np.isnan(data.X.iloc[1, 1])
    assert list(data.y) == ["yes", "no", "yes", "no"] and list(data.groups) == list("uuvw")
    np.savez(tmp_path / "d.npz", features=np.eye(5), y=np.arange(5.0))
    npz = parse_spec(
        '[data]\nsource = "d.npz"\nx_key = "features"\nn_samples = 3\n'
        '[estimator]\nclass = "sklearn.svm.SVR"\n',
        base_dir=tmp_path,
    )
    assert load_data(npz).X.shape == (3, 5)
    np.save(tmp_path / "d.npy", np.arange(12.0).reshape(4, 3))
    npy = parse_spec(
        '[data]\nsource = "d.npy"\ntarget = 0\n[estimator]\nclass = "sklearn.svm.SVR"\n',
        base_dir=tmp_path,
    )
    loaded = load_data(npy)
    assert list(loaded.y) == [0.0, 3.0, 6.0, 9.0] and loaded.X.shape == (4, 2)
    text = parse_spec(
        '[data]\nsource = "d.csv"\ntarget = "label"\nfeatures = ["g"]\n'
        '[estimator]\nclass = "sklearn.svm.SVC"\n',
        base_dir=tmp_path,
        source="s",
    )
    assert load_data(text).X["g"].tolist() == list("uuvw")  # a text column is kept as it is


def _csv_spec(tmp_path, rows, *, target="y", estimator="sklearn.linear_model.Ridge", extra=""):
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    text = f'[data]\nsource = "data.csv"\ntarget = "{target}"\n{extra}'
    text += f'[estimator]\nclass = "{estimator}"\n[cv]\ncv = 3\n[run]\nbackend = "serial"\n'
    (tmp_path / "spec.toml").write_text(text)
    return load_spec(tmp_path / "spec.toml")


NUMBERS = ["x1,x2,y"] + [f"{i / 7:.4f},{i % 5},{1.3 + i / 11:.4f}" for i in range(30)]


def _with_cell(rows, line, value):
    """``rows`` with the last cell of the row on ``line`` (1-based, the header is line 1)."""
    edited = list(rows)
    edited[line - 1] = edited[line - 1].rsplit(",", 1)[0] + f",{value}"
    return edited


def test_a_csv_target_cell_that_is_not_a_number_is_named_by_its_line(tmp_path, capsys):
    rows = _with_cell(_with_cell(NUMBERS, 17, "NA"), 21, "?")
    spec = _csv_spec(tmp_path, rows)
    with pytest.raises(UsageError) as info:
        build_job(spec)
    text = str(info.value)
    assert text.startswith("data.csv line 17, column 'y': 'NA' is not a number;"), text
    assert "Ridge is a regressor" in text and "remove the row or fill the value" in text
    assert main(["run", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "data.csv line 17, column 'y': 'NA' is not a number" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("cell", ["", "  ", "nan", "inf"])
def test_a_missing_or_infinite_csv_target_is_named_by_its_line(tmp_path, cell):
    with pytest.raises(UsageError) as info:
        build_job(_csv_spec(tmp_path, _with_cell(NUMBERS, 9, cell)))
    said = "the cell is empty" if not cell.strip() else f"{cell!r} is not a finite number"
    assert str(info.value).startswith(f"data.csv line 9, column 'y': {said}; "), info.value


def test_an_empty_class_cell_is_refused_naming_its_line_not_made_a_class(tmp_path):
    labels = ["x1,x2,label"] + [f"{i},{i % 3},{'yes' if i % 2 else 'no'}" for i in range(20)]
    logistic = "sklearn.linear_model.LogisticRegression"
    with pytest.raises(UsageError) as info:
        build_job(_csv_spec(tmp_path, _with_cell(labels, 6, ""), target="label",
                            estimator=logistic))  # fmt: skip
    text = str(info.value)
    assert text.startswith("data.csv line 6, column 'label': the cell is empty;"), text
    assert "remove the row or fill the value" in text
    # Words are class labels, as before (the type of the column is unchanged).
    job = build_job(_csv_spec(tmp_path, labels, target="label", estimator=logistic))
    assert sorted(set(job.data.y)) == ["no", "yes"]


def test_csv_lines_count_as_an_editor_shows_them(tmp_path):
    # A quoted cell spanning two lines, and a blank line (skipped, as pandas skips it).
    rows = ["g,x1,y", '"a', 'b",1.0,2.0', "c,2.0,3.0", "", "d,3.0,NA", "e,4.0,5.0"]
    with pytest.raises(UsageError, match=r"^data.csv line 6, column 'y': 'NA' is not a number"):
        build_job(_csv_spec(tmp_path, rows, extra='groups = "g"\n'))
    data = build_job(
        _csv_spec(tmp_path, [*rows[:5], "d,3.0,4.0", rows[6]], extra='groups = "g"\n')
    ).data
    assert data.y.tolist() == [2.0, 3.0, 4.0, 5.0] and data.groups.tolist() == [
        "a\nb",
        "c",
        "d",
        "e",
    ]


def test_a_csv_feature_that_is_not_a_number_names_its_line(tmp_path):
    rows = [*NUMBERS[:12], "0.5,?,1.0", *NUMBERS[13:]]
    with pytest.raises(UsageError, match=r"^data.csv line 13, column 'x2': '\?' is not a number"):
        build_job(_csv_spec(tmp_path, rows))


def test_sklearn_generators_and_python_callables():
    spec = parse_spec(
        '[data]\nsource = "sklearn:make_regression"\n'
        "params = { n_samples = 25, n_features = 3, random_state = 0 }\n"
        '[estimator]\nclass = "sklearn.svm.SVR"\n'
    )
    assert load_data(spec).X.shape == (25, 3)
    demo = parse_spec(
        '[data]\nsource = "python:parcv.cli.demo.polynomial_data"\n'
        "params = { n_samples = 12 }\n[estimator]\nclass = 'sklearn.svm.SVR'\n"
    )
    assert load_data(demo).X.shape == (12, 1)


def test_criteria_and_journal_reach_the_plan_and_the_run_options():
    listed = build_job(parse_spec(SEARCH + 'criteria = ["aic", "bic"]\n'))
    assert listed.plan().criteria == CriteriaRequest(("aic", "bic"))
    text = SEARCH + 'criteria = { names = ["bic"], n_params = 3, noise_variance = 1 }\n'
    spec = parse_spec(text + '[run]\njournal = "delete"\n')
    assert build_job(spec).plan().criteria == CriteriaRequest(
        ("bic",), n_params=3, noise_variance=1.0
    )
    assert (spec.run.journal, parse_spec(BASE).run.journal) == ("delete", "wal")
    assert build_job(parse_spec(SEARCH)).plan().criteria is None


def test_python_data_source_may_be_a_module_file_beside_the_spec(tmp_path):
    (tmp_path / "my_data_here.py").write_text(
        "import numpy as np\n\n"
        "def make(n=5):\n"
        "    return np.arange(2.0 * n).reshape(n, 2), np.arange(float(n))\n"
    )
    text = '[data]\nsource = "python:my_data_here.make"\nparams = { n = 7 }\n'
    text += '[estimator]\nclass = "sklearn.linear_model.Ridge"\n'
    (tmp_path / "spec.toml").write_text(text)
    data = load_data(load_spec(tmp_path / "spec.toml"))
    np.testing.assert_array_equal(data.X, np.arange(14.0).reshape(7, 2))
    np.testing.assert_array_equal(data.y, np.arange(7.0))
    # Not beside this spec (nor importable): the error names the source and the two places.
    with pytest.raises(SpecError, match=r"data.source = 'python:my_data_here.make'.*beside"):
        load_data(parse_spec(text, base_dir=tmp_path / "elsewhere"))


def test_search_racing_builds_a_race_that_the_run_uses(tmp_path):
    text = BASE.replace("n_samples = 60", "n_samples = 80") + (
        "[space]\nalpha = [0.01, 1.0, 1e4, 1e5, 1e6]\n[cv]\ninner = 8\n"
        "[search]\nracing = { burn_in = 3, alpha = 0.1 }\n"
    )
    job = build_job(parse_spec(text))
    assert job.options["racing"] == parcv.Racing(burn_in=3, alpha=0.1)
    result = job.run(parcv.RunOptions(backend="serial"))
    assert "race_eliminated_after" in result.cv_results_


def test_search_iterations_builds_the_path_that_the_run_scores():
    text = BASE.replace(
        "sklearn.linear_model.Ridge", "sklearn.ensemble.GradientBoostingRegressor"
    ) + (
        "[space]\nmax_depth = [1, 2]\n[cv]\ninner = 3\n"
        '[search]\niterations = { param = "n_estimators", up_to = 20, every = 5, patience = 2 }\n'
    )
    job = build_job(parse_spec(text))
    assert job.options["iterations"] == parcv.Iterations("n_estimators", 20, every=5, patience=2)
    result = job.run(parcv.RunOptions(backend="serial"))
    assert len(result.cv_results_["params"]) == 2 * 4
    assert "n_estimators" in result.best_params_
    assert "path_stopped" in result.cv_results_


def test_search_halving_builds_a_halving_search_that_the_run_uses():
    text = BASE + (
        "[space]\nalpha = [0.01, 0.1, 1.0, 10.0, 100.0, 1e3]\n[cv]\ninner = 3\n"
        "[search]\nhalving = { factor = 2, min_resources = 20 }\n"
    )
    job = build_job(parse_spec(text))
    assert job.options["halving"] == parcv.Halving(factor=2, min_resources=20, random_state=0)
    result = job.run(parcv.RunOptions(backend="serial"))
    assert isinstance(result, parcv.HalvingResult)
    assert result.n_resources_ == [20, 40] and result.n_candidates_ == [6, 3]
    assert "rung 1 (40)" in result.to_text()


def test_search_hyperband_runs_brackets_over_the_draws_of_the_space():
    text = _spec("""\
        [data]
        source = "sklearn:breast_cancer"
        n_samples = 90

        [estimator]
        class = "sklearn.linear_model.SGDClassifier"
        params = { tol = "None", random_state = 0 }

        [space]
        alpha = { loguniform = [1e-4, 1e-1] }

        [search]
        n_iter = 5
        hyperband = { resource = "max_iter", max_resources = 9 }

        [cv]
        cv = 3
        """)
    job = build_job(parse_spec(text))
    assert job.options["halving"] == parcv.Hyperband("max_iter", 9)
    result = job.run(parcv.RunOptions(backend="serial"))
    assert isinstance(result, parcv.HyperbandResult)
    assert [b.n_candidates_[0] for b in result.brackets] == [9, 5, 3]


def test_a_cross_validate_spec_asks_for_the_nested_cv_interval():
    text = BASE + (
        "[cv]\ninner = 4\n"
        + '[scoring]\nmetrics = ["neg_mean_squared_error"]\ninterval = "ncv"\n'
        + "ncv_repetitions = 2\n"
    )
    result = build_job(parse_spec(text)).run(parcv.RunOptions(backend="serial"))
    assert result.interval is not None and result.interval.n_fits == 2 * 4 * 5 // 2


def test_the_interval_is_refused_in_a_search_spec():
    with pytest.raises(SpecError, match=r"scoring\.interval"):
        build_job(parse_spec(SEARCH + '[scoring]\ninterval = "ncv"\n'))
