"""Significance tests on result objects match parcv.stats / scipy on the same numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, RepeatedKFold

import parcv
from parcv.report.run_dir import RunInfo, render_report
from parcv.stats import corrected_resampled_ttest

X, Y = make_regression(n_samples=100, n_features=5, noise=20.0, random_state=0)
GRID = {"alpha": [0.1, 10.0, 100.0]}


@pytest.fixture(scope="module")
def result():
    cv = RepeatedKFold(n_splits=5, n_repeats=2, random_state=0)
    return parcv.search(Ridge(), GRID, X, Y, cv=cv, backend="serial")


def test_compare_uses_the_folds_of_the_search(result):
    a = np.array([result.cv_results_[f"split{i}_test_score"][0] for i in range(10)])
    b = np.array([result.cv_results_[f"split{i}_test_score"][2] for i in range(10)])
    got = result.compare("alpha=0.1", 2)
    want = corrected_resampled_ttest(a, b, n_train=80, n_test=20)
    assert got.p_value == want.p_value and got.statistic == want.statistic
    naive = result.compare(0, 2, test="paired_t")
    assert naive.p_value == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-12)
    assert naive.p_value < got.p_value  # the corrected test is more cautious
    by_id = result.compare(result.candidates[0].id, result.candidates[2].id)
    assert by_id.p_value == got.p_value


@pytest.mark.parametrize("test", ["5x2cv_t", "5x2cv_f"])
def test_a_5x2cv_test_runs_on_5_repeats_of_2_fold_cv_and_is_refused_on_other_folds(result, test):
    # On 10 folds of RepeatedKFold(5, 2) the test would return a number that means nothing.
    with pytest.raises(ValueError, match=r"5 repeats of 2-fold CV.*has 10 folds"):
        result.compare(0, 2, test=test)
    with pytest.raises(ValueError, match="RepeatedKFold"):
        result.compare_all(test=test)
    with pytest.raises(ValueError, match="RepeatedKFold"):
        result.best_vs_rest(test=test)
    cv = RepeatedKFold(n_splits=2, n_repeats=5, random_state=0)
    five_by_two = parcv.search(Ridge(), GRID, X, Y, cv=cv, backend="serial")
    scores = np.array([five_by_two.cv_results_[f"split{i}_test_score"] for i in range(10)]).T
    want = parcv.stats.TESTS[test](scores[0], scores[2])
    got = five_by_two.compare(0, 2, test=test)
    assert (got.statistic, got.p_value) == (want.statistic, want.p_value)


def test_compare_all_and_json_table(result):
    table = result.compare_all("paired_t")
    assert [(r.name_a, r.name_b) for r in table] == [
        ("alpha=0.1", "alpha=10.0"),
        ("alpha=0.1", "alpha=100.0"),
        ("alpha=10.0", "alpha=100.0"),
    ]
    exported = json.loads(result.to_json())["comparisons"]
    assert exported["test"] == "corrected_t" and exported["best"] == "alpha=0.1"
    assert "p_holm" in result.comparison_table()["text"] and "best vs rest" in result.to_text()
    rows = result.comparison_table()["rows"]["comparisons"]  # as columns in the JSON summary
    assert exported["columns"]["name_b"] == [r["name_b"] for r in rows]
    assert exported["columns"]["p_holm"] == [r["p_holm"] for r in rows]
    assert exported["assumptions"] == rows[0]["assumptions"] and "text" not in exported


def test_unknown_candidate_is_a_clear_error(result):
    with pytest.raises(ValueError, match="candidate 'alpha=5' is not in this result"):
        result.compare("alpha=5", 0)
    with pytest.raises(ValueError, match=r"Did you mean 'alpha=10.0'"):
        result.compare("alpha=10.5", 0)


def test_model_families_are_named_by_any_part_of_their_label_that_names_one():
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    Xc, yc = make_classification(n_samples=80, random_state=0)
    pipe = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression())])
    forest = RandomForestClassifier(n_estimators=5, random_state=0)
    families = [{"model": [LogisticRegression(max_iter=2000)]}, {"model": [forest]}]
    s = parcv.search(pipe, families, Xc, yc, cv=3, backend="serial")
    labels = [c.label for c in s.candidates]
    assert labels[0] == "model=LogisticRegression(max_iter=2000)"
    by_index = s.compare(0, 1)
    for name in ("LogisticRegression", "model=LogisticRegression",
                 "LogisticRegression(max_iter=2000)", "max_iter=2000"):  # fmt: skip
        got = s.compare(name, "RandomForest")
        assert (got.name_a, got.name_b, got.p_value) == (
            by_index.name_a,
            by_index.name_b,
            by_index.p_value,
        ), name
    depths = [families[0], {"model": [forest], "model__max_depth": [2, 20]}]
    s = parcv.search(pipe, depths, Xc, yc, cv=3, backend="serial")
    labels = [c.label for c in s.candidates]
    assert s.compare("LogisticRegression", "RandomForest, max_depth=20").name_b == labels[2]
    assert s.compare(0, "model__max_depth=2").name_b == labels[1]  # a whole part
    # Two forests now: "RandomForest" alone is ambiguous, and the error says which match.
    with pytest.raises(ValueError, match="'RandomForest' matches 2 candidates"):
        s.compare("LogisticRegression", "RandomForest")
    # Only from a word's start, numbers whole: "Forest" and "max_depth=200" name none.
    for name in ("Forest", "max_depth=200", "max_depth=2.5"):
        with pytest.raises(ValueError, match="is not in this result"):
            s.compare(name, 0)


def test_compare_procedures_on_the_same_outer_folds():
    outer = KFold(5, shuffle=True, random_state=0)
    a = parcv.nested_cv(Ridge(), {"alpha": [0.1, 1.0]}, X, Y, outer=outer, backend="serial")
    b = parcv.nested_cv(Ridge(), {"alpha": [100.0, 1000.0]}, X, Y, outer=outer, backend="serial")
    got = a.compare(b, test="paired_t")
    want = sps.ttest_rel(a.outer_scores["score"], b.outer_scores["score"])
    assert got.p_value == pytest.approx(want.pvalue, rel=1e-12)
    other = parcv.nested_cv(
        Ridge(),
        {"alpha": [0.1]},
        X,
        Y,
        outer=KFold(5, shuffle=True, random_state=1),
        backend="serial",
    )
    with pytest.raises(ValueError, match="different outer folds"):
        a.compare(other)
    assert "selection stability" in a.to_text()


def test_identical_fold_scores_mark_one_row_and_keep_the_table():
    # copy_X changes nothing: each alpha's two candidates have identical fold scores.
    cv = KFold(5, shuffle=True, random_state=0)
    r = parcv.search(Ridge(), {"alpha": [0.1, 100.0], "copy_X": [True, False]}, X, Y, cv=cv,
                     backend="serial")  # fmt: skip
    table = r.comparison_table()
    rows = {row["name_b"]: row for row in table["rows"]["comparisons"]}
    assert table["best"] == "alpha=0.1, copy_X=True" and len(rows) == 3
    twin = rows["alpha=0.1, copy_X=False"]
    assert twin["note"] == "identical fold scores"
    assert (twin["statistic"], twin["p_value"], twin["p_holm"], twin["rejected"]) == (None,) * 4
    assert twin["mean_difference"] == 0.0
    # The other rows are the corrected t-test of the fold scores, Holm-adjusted over those two.
    scores = {c.label: [r.cv_results_[f"split{i}_test_score"][c.index] for i in range(5)]
              for c in r.candidates}  # fmt: skip
    best = np.array(scores["alpha=0.1, copy_X=True"])
    p_values = []
    for name in ("alpha=100.0, copy_X=True", "alpha=100.0, copy_X=False"):
        want = corrected_resampled_ttest(best, np.array(scores[name]), n_train=80, n_test=20)
        assert rows[name]["statistic"] == want.statistic and rows[name]["p_value"] == want.p_value
        p_values.append(want.p_value)
    holm = [min(1.0, 2 * min(p_values)), min(1.0, max(2 * min(p_values), max(p_values)))]
    got = sorted([rows[n]["p_holm"] for n in rows if rows[n]["p_holm"] is not None])
    np.testing.assert_allclose(got, holm, rtol=1e-12)
    assert "n/a (identical fold scores)" in table["text"]
    assert json.loads(r.to_json())["comparisons"]["columns"]["note"][2]
    assert "| - | - | - | n/a (identical fold scores) |" in render_report(r, RunInfo("twins"))
    with pytest.raises(ValueError, match="variance of the differences"):
        r.best_vs_rest()  # the strict table still refuses; comparison_table() marks the row


def test_repr_of_a_comparison_is_a_short_table(result):
    # It was a 600-character dataclass dump; the README promises a short table.
    got = result.compare(0, 2)
    text = repr(got)
    lines = text.splitlines()
    assert len(lines) <= 5 and max(map(len, lines)) <= 100, text
    assert lines[0] == "TestResult: corrected_t, alpha=0.1 vs alpha=100.0 on 10 paired folds"
    for shown in (f"{got.mean_difference:.4g}", f"[{got.ci_low:.4g}, {got.ci_high:.4g}]",
                  f"{got.statistic:.4g}", f"p-value {got.p_value:.4g}", "95%"):  # fmt: skip
        assert shown in text, (shown, text)
    assert got.p_value < 0.05 and "alpha=0.1 scores higher (p < 0.05)" in text
    close = parcv.stats.paired_ttest([0.9, 0.8, 0.85], [0.85, 0.82, 0.84])
    assert close.p_value > 0.05 and "no significant difference at the 0.05 level" in repr(close)
    # A Bayesian test says its probabilities, a decision rule its decision.
    bayes = repr(result.compare(0, 2, test="bayesian_correlated_t", rope=0.01))
    assert "P(alpha=0.1 better)" in bayes and "practically equivalent" in bayes, bayes


@pytest.mark.parametrize("table", ["compare_all", "best_vs_rest"])
def test_repr_of_comparison_tables_is_short(result, table):
    text = repr(getattr(result, table)())
    assert text.startswith("ComparisonTable: ") and len(text.splitlines()) <= 5, text


def test_fold_sizes_read_from_a_store_equal_those_of_its_records(tmp_path):
    # A loaded result finds its first candidate's fits and its outer refits from the
    # store's unit columns; the reference is the same records walked one by one.
    from parcv.plan.record_table import RecordList
    from parcv.results.compare import _fold_sizes, _outer_fold_sizes

    store = tmp_path / "run.sqlite"
    parcv.nested_cv(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X[:47], Y[:47], outer=3, inner=4,
                    store=store, progress=False)  # fmt: skip
    loaded = parcv.load(store)
    assert isinstance(loaded.records, RecordList)
    plain = list(loaded.records)
    sizes = set()
    for outer in (None, 0, 1, 2):
        fits = [r for r in plain if r.unit.kind == "fit" and r.unit.outer == outer
                and r.unit.candidate == 0]  # fmt: skip
        expected = (float(np.mean([r.n_train for r in fits])),
                    float(np.mean([r.n_test for r in fits])))  # fmt: skip
        assert _fold_sizes(loaded.records, outer) == _fold_sizes(plain, outer) == expected
        sizes.add(expected)
    assert len(sizes) > 1  # 47 rows: the folds differ in size
    refits = [r for r in plain if r.unit.kind == "refit" and r.unit.outer is not None]
    assert len(refits) == 3
    assert _outer_fold_sizes(loaded, "score") == (
        float(np.mean([r.n_train for r in refits])),
        float(np.mean([r.n_test for r in refits])),
    )


def _plain_columns(table):
    """results.json's comparisons, plainly: from comparison_table()'s row dicts."""
    if not table["rows"]:
        return table
    rows = table["rows"]["comparisons"]
    tested = next((r for r in rows if r.get("p_value") is not None), rows[0])
    names = ("name_b", "mean_difference", "ci_low", "ci_high", "statistic", "p_value", "p_holm",
             "rejected", "note")  # fmt: skip
    return {
        "test": table["test"], "best": table["best"], "alpha": table["rows"]["alpha"],
        "confidence": tested.get("confidence"), "n_folds": tested.get("n"),
        "assumptions": tested.get("assumptions"),
        **({"left_out": table["left_out"]} if table.get("left_out") else {}),
        "columns": {name: [r.get(name) for r in rows] for name in names},
    }  # fmt: skip


def test_the_columns_of_the_comparisons_are_those_of_their_rows(result):
    # results.json and the report read the table as columns, made without a dict per row
    # (200 MB at 220,000 candidates): the same values as the rows comparison_table() gives.
    cv = KFold(5, shuffle=True, random_state=0)
    twins = parcv.search(Ridge(), {"alpha": [0.1, 100.0], "copy_X": [True, False]}, X, Y,
                         cv=cv, backend="serial")  # fmt: skip
    one = parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=cv, backend="serial")
    for r in (result, twins, one):
        columns = r.comparison_columns()  # first: made from the tests, not from the rows
        assert json.dumps(columns) == json.dumps(_plain_columns(r.comparison_table(text=False)))
        assert r.to_dict()["comparisons"] == columns
    assert twins.comparison_columns()["columns"]["note"].count("identical fold scores") == 1
    assert one.comparison_columns()["rows"] == []
