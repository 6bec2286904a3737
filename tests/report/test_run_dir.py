"""The files of a run directory stay in it: no write through a link, no formula cell in a CSV."""

from __future__ import annotations

import csv
import stat

import numpy as np
import pytest

import parcv
from parcv.cli import main
from parcv.errors import UnsafePathError

TINY = """\
[data]
source = "sklearn:diabetes"
n_samples = 60

[estimator]
class = "sklearn.linear_model.Ridge"

[space]
alpha = [0.1, 10.0]

[cv]
cv = 3

[run]
backend = "serial"

[report]
plots = false
"""


def _run(tmp_path, capsys, spec_text=TINY):
    spec = tmp_path / "tiny.toml"
    spec.write_text(spec_text)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    return spec, out


def _victim(tmp_path):
    """A file of the user's outside the run directory, readable by others (mode 0644)."""
    victim = tmp_path / "mine.txt"
    victim.write_text("the user's own file\n")
    victim.chmod(0o644)
    return victim


def _untouched(victim):
    assert victim.read_text() == "the user's own file\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


@pytest.mark.parametrize("name", ["report.html", "report.md", "results.json", "cv_results.csv"])
def test_parcv_report_writes_no_file_through_a_link_that_leaves_the_run_directory(
    tmp_path, capsys, name
):
    _, out = _run(tmp_path, capsys)
    victim = _victim(tmp_path)
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(victim)
    assert main(["report", str(out), "--cv-results"]) == 2
    err = capsys.readouterr().err
    assert f"{name} in the run directory {str(out)!r} is a symbolic link to {str(victim)!r}" in err
    assert f"Remove the link ({str(out / name)!r})" in err, err
    _untouched(victim)


def test_a_link_inside_the_run_directory_is_replaced_not_written_through(tmp_path, capsys):
    _, out = _run(tmp_path, capsys)
    (out / "kept.md").write_text("a copy the user keeps\n")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(out / "kept.md")
    assert main(["report", str(out)]) == 0
    capsys.readouterr()
    assert (out / "kept.md").read_text() == "a copy the user keeps\n"
    assert not (out / "report.md").is_symlink()
    assert (out / "report.md").read_text().startswith("# tiny")


@pytest.mark.parametrize("name", ["store.sqlite.lock", "store.sqlite.lock.json"])
def test_resume_takes_no_lock_through_a_link(tmp_path, capsys, name):
    spec, out = _run(tmp_path, capsys)
    victim = _victim(tmp_path)
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(victim)
    assert main(["run", str(spec), "--out", str(out), "--resume", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{name} in the run directory {str(out)!r} is a symbolic link to {str(victim)!r}" in err
    _untouched(victim)


def test_the_store_lock_refuses_a_linked_lock_file_from_python(tmp_path):
    from parcv.store.lock import lock_store

    victim = _victim(tmp_path)
    (tmp_path / "run.sqlite.lock").symlink_to(victim)
    linked = r"lock file '.*run.sqlite.lock' of store .* is a symbolic link"
    with pytest.raises(UnsafePathError, match=linked), lock_store(tmp_path / "run.sqlite"):
        pass
    _untouched(victim)


def test_a_saved_model_replaces_a_link_at_its_name_and_leaves_its_target_alone(tmp_path, capsys):
    spec, out = _run(tmp_path, capsys)
    [model] = (out / "store.sqlite.models").glob("final-*.joblib")
    victim = _victim(tmp_path)
    model.unlink()
    model.symlink_to(victim)
    assert main(["run", str(spec), "--out", str(out), "--overwrite", "--quiet"]) == 0
    _untouched(victim)
    assert not model.is_symlink() and stat.S_IMODE(model.stat().st_mode) == 0o600
    assert parcv.load(out / "store.sqlite").best_estimator_.alpha == 0.1


def test_write_report_refuses_a_link_that_leaves_its_folder(tmp_path, capsys):
    _, out = _run(tmp_path, capsys)
    victim = _victim(tmp_path)
    report = tmp_path / "report"
    report.mkdir()
    (report / "results.json").symlink_to(victim)
    with pytest.raises(UnsafePathError, match=r"results.json in the run directory .* is a symb"):
        parcv.write_report(out, report)
    _untouched(victim)
    assert sorted(p.name for p in report.iterdir()) == ["results.json"]  # nothing written


TAGGED = """\
from sklearn.base import BaseEstimator, RegressorMixin
import numpy as np


class Tagged(BaseEstimator, RegressorMixin):
    def __init__(self, tag=""):
        self.tag = tag

    def fit(self, X, y):
        self.mean_ = float(np.mean(y)) + len(self.tag)
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
"""

# (the candidate's tag, the cell cv_results.csv must hold): OWASP's CSV injection
# guidance, a cell that a spreadsheet would read as a formula starts with a quote.
TAGS = [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
    ("+A1", "'+A1"),
    ("-A1+2", "'-A1+2"),
    ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
    ("\tA1", "'\tA1"),
    ("\rA1", "'\rA1"),
    ("-0.5", "-0.5"),  # numbers stay numbers
    ("+1e3", "+1e3"),
    ("-inf", "-inf"),
    ("plain", "plain"),
]


def test_cv_results_csv_neutralises_formula_cells_and_keeps_numbers(tmp_path, capsys):
    (tmp_path / "tagged.py").write_text(TAGGED)
    tags = ", ".join('"' + t.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
                     .replace("\r", "\\r") + '"' for t, _ in TAGS)  # fmt: skip
    text = TINY.replace("sklearn.linear_model.Ridge", "tagged.Tagged")
    text = text.replace("alpha = [0.1, 10.0]", f"tag = [{tags}]")
    text += 'cv_results = true\n\n[scoring]\nmetrics = ["neg_mean_squared_error"]\n'
    _, out = _run(tmp_path, capsys, text)
    with open(out / "cv_results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [row["param_tag"] for row in rows] == [cell for _, cell in TAGS]
    scores = [row["mean_test_neg_mean_squared_error"] for row in rows]
    assert all(s.startswith("-") for s in scores)  # negative errors: numbers, kept as written
    loaded = parcv.load(out / "store.sqlite").cv_results_["mean_test_neg_mean_squared_error"]
    np.testing.assert_array_equal([float(s) for s in scores], loaded)
