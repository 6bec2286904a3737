"""The command line: example specs end to end, exit codes, interrupt and resume, options."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import sqlite3
import stat
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import parcv
from parcv import RunOptions, SerialBackend
from parcv.cli import main
from parcv.cli.spec import load_spec, parse_spec
from parcv.cli.sweep import build_job, make_backend
from parcv.errors import StoreDamagedError
from parcv.report.run_dir import num, small
from parcv.store.readers import read_records

ROOT = Path(__file__).resolve().parents[2]
try:
    import matplotlib  # noqa: F401

    HAS_MATPLOTLIB = True
except ImportError:  # the plot extra is optional: reports then say how to get plots
    HAS_MATPLOTLIB = False
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))
REPORT_FILES = ("store.sqlite", "results.json", "report.md", "run.json")

TINY = """\
[data]
source = "sklearn:diabetes"
n_samples = 80

[estimator]
class = "sklearn.linear_model.Ridge"

[space]
alpha = [0.1, 10.0]

[cv]
cv = 3

[report]
plots = false     # plots are checked with the examples and in test_report.py
"""


def _estimate_rows(result):
    """(metric, mean, se) rows the report must show for a result."""
    if isinstance(result, parcv.NestedResult):
        return [(m, s.mean, s.se) for m, s in result.estimate.items()]
    return [
        (m, s[result.best_index_].mean, s[result.best_index_].se)
        for m, s in result.summaries.items()
    ]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_spec_runs_through_the_cli_and_reports_the_result(tmp_path, capsys, path):
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--backend", "serial", "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == f"Report: {out / 'report.md'}"
    for name in REPORT_FILES:
        assert (out / name).is_file(), name
    assert list(out.glob("*.png")) or not HAS_MATPLOTLIB, "no plot was written"
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for file in out.iterdir():  # the saved model's folder (saved by default) is 0700
        mode = 0o700 if file.is_dir() else 0o600
        assert stat.S_IMODE(file.stat().st_mode) == mode, file.name
    for model in (out / "store.sqlite.models").glob("*"):
        assert stat.S_IMODE(model.stat().st_mode) == 0o600, model.name
    result = parcv.load(out / "store.sqlite")
    report = (out / "report.md").read_text()
    for metric, mean, se in _estimate_rows(result):
        one = not np.isfinite(se)  # one test split (hold-out): a score, no se column
        assert (
            f"| {metric} | {num(mean)} |" if one else f"| {metric} | {num(mean)} | {small(se)} |"
        ) in report
    search = result if isinstance(result, parcv.SearchResult) else result.final
    # As the report shows it: floats to 4 significant digits (every digit in the data).
    shipped = result.readable_labels[search.candidates[search.best_index_].label]
    assert f"Model to ship: **{shipped}**" in report
    saved = json.loads((out / "results.json").read_text())
    assert saved["kind"] == ("search" if isinstance(result, parcv.SearchResult) else "nested_cv")
    assert not (out / "cv_results.csv").exists()  # only when asked: the store holds the rows


def _csv_means(path, key):
    with open(path, newline="") as fh:
        return [float(row[key]) for row in csv.DictReader(fh)]


def test_cv_results_csv_is_written_only_when_asked(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial", "--quiet"]) == 0
    assert not (out / "cv_results.csv").exists()
    saved = json.loads((out / "results.json").read_text())
    assert "cv_results" not in saved and saved["summaries"]["score"]  # summaries only
    report = (out / "report.md").read_text()
    assert "`cv_results.csv`" not in report and "`results.json` (summaries)." in report
    run_json = (out / "run.json").read_text()
    assert main(["report", str(out), "--cv-results"]) == 0
    means = parcv.load(out / "store.sqlite").cv_results_["mean_test_score"]
    np.testing.assert_array_equal(_csv_means(out / "cv_results.csv", "mean_test_score"), means)
    assert "`cv_results.csv` (one row per candidate)" in (out / "report.md").read_text()
    assert (out / "run.json").read_text() == run_json  # the option holds for this report only
    (out / "cv_results.csv").unlink()
    assert main(["report", str(out)]) == 0
    assert not (out / "cv_results.csv").exists()
    spec.write_text(TINY + "cv_results = true\n")
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial", "--overwrite"]) == 0
    np.testing.assert_array_equal(_csv_means(out / "cv_results.csv", "mean_test_score"), means)
    capsys.readouterr()


def test_stored_result_equals_a_direct_api_call(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY + '[scoring]\nmetrics = ["r2", "neg_mean_squared_error"]\nrefit = "r2"\n')
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--backend", "serial", "--quiet"]) == 0
    direct = build_job(load_spec(path)).run(RunOptions(backend="serial", progress=False))
    stored = parcv.load(out / "store.sqlite")
    for key in ("mean_test_r2", "split1_test_neg_mean_squared_error"):
        np.testing.assert_array_equal(stored.cv_results_[key], direct.cv_results_[key])
    assert stored.best_params_ == direct.best_params_


def test_summary_inspect_and_dry_run_do_not_run(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    out = tmp_path / "run"
    for command in (["inspect", str(spec)], ["run", str(spec), "--dry-run"]):
        assert main([*command, "--out", str(out), "--backend", "local", "--n-jobs", "2"]) == 0
        text = capsys.readouterr().out
        assert "candidates 2: alpha=0.1; alpha=10.0" in text
        assert "units      6 fits + 1 refit(s) = 7" in text
        assert "local (2 workers); chunks: 7 (one unit each)" in text
        assert "none yet" in text
    assert not out.exists()
    assert main(["inspect", str(spec), "--probe", "--backend", "serial"]) == 0
    assert "probe      one fit took" in capsys.readouterr().out
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial", "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "model to ship: alpha=" in text and "7 units" in text
    assert json.loads((out / "run.json").read_text())["seed"] == 3
    assert main(["inspect", str(spec), "--out", str(out), "--seed", "3"]) == 0
    assert "holds 7 units; 6 of this plan's 6 fits are among them" in capsys.readouterr().out
    spec.write_text(TINY + '[search]\nselection = "one_se"\ncomplexity = "alpha"\n')
    assert main(["inspect", str(spec), "--out", str(out), "--seed", "3"]) == 0
    assert "holds 7 units; 6 of this plan's 6 fits are among them" in capsys.readouterr().out
    spec.write_text(TINY.replace("[0.1, 10.0]", "[0.1, 20.0]"))
    assert main(["inspect", str(spec), "--out", str(out), "--seed", "3"]) == 0
    assert "holds 7 units; 3 of this plan's 6 fits are among them" in capsys.readouterr().out


def test_rerun_needs_resume_or_overwrite(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    run = ["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial", "--quiet"]
    assert main(run) == 0
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "(command line: --resume)" in err and "overwrite=True (--overwrite)" in err
    assert main([*run, "--resume"]) == 0
    assert main([*run, "--overwrite"]) == 0
    (tmp_path / "file").write_text("")
    assert main(["run", str(spec), "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_failed_run_exits_1(tmp_path, capsys):
    # A value only fit() refuses (a bad alpha is now a usage error, before any fit).
    spec = tmp_path / "fail.toml"
    spec.write_text(
        TINY.replace("alpha = [0.1, 10.0]", 'solver = ["auto", "lbfgs"]')
        + '[scoring]\nerror_score = "raise"\n'
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial"]) == 1
    err = capsys.readouterr().err
    # The estimator's own error (as scikit-learn raises it), with parcv's note on where.
    assert "parcv: run failed: ValueError" in err and "solver='lbfgs'" in err


def test_a_failed_run_resumed_with_a_numeric_error_score_keeps_its_fits(tmp_path, capsys):
    spec = tmp_path / "fail.toml"
    failing = TINY.replace("alpha = [0.1, 10.0]", 'solver = ["auto", "lbfgs"]')
    spec.write_text(failing + '[scoring]\nerror_score = "raise"\n')
    run = ["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial", "--quiet"]
    assert main(run) == 1
    before = read_records(tmp_path / "run" / "store.sqlite")
    assert before and all(r.ok for r in before.values())  # the fits before the failure
    spec.write_text(failing + "[scoring]\nerror_score = nan\n")
    assert main(run) == 2  # the store holds this plan's fits: resume or overwrite
    assert "error_score (stored 'raise', now 'nan')" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # not "error": the command prints its warnings
        assert main([*run, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "FitFailedWarning: \n3 fits failed out of a total of 6" in err
    assert "excluded from selection" in err
    after = read_records(tmp_path / "run" / "store.sqlite")
    assert all(after[key] == record for key, record in before.items())
    assert len(after) == 7 and sum(not r.ok for r in after.values()) == 3


def test_a_warning_of_the_checks_is_printed_once(tmp_path, capsys):
    # diabetes' y is whole numbers, so accuracy is not refused; Ridge's predictions fail it.
    spec = tmp_path / "acc.toml"
    spec.write_text(TINY + '[scoring]\nmetrics = ["accuracy"]\n')
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # not "error": the command prints its warnings
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial"]) == 0
    err = capsys.readouterr().err
    assert err.count("but Ridge is a regressor") == 1
    # The fits succeed and every score fails: as in scikit-learn, each is error_score
    # (NaN), said once, and the first candidate is selected.
    assert err.count("UserWarning: Scoring failed") == 1
    assert err.count("mean score (metric 'accuracy') on all data is NaN") == 1


def test_resumed_count_is_what_the_run_did_not_redo(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    run = ["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial"]
    assert main(run) == 0
    # The model is saved by default: nothing is redone on resume.
    assert main([*run, "--resume"]) == 0
    captured = capsys.readouterr()
    reusing = "reusing 6 of 7 units; 0 to compute, and 1 refit of the chosen candidate, reused "
    assert f"parcv: {reusing}if the store holds it" in captured.err
    assert "7 units: 7 reused from the store (including 1 refit of a chosen candidate), 0 " in (
        captured.out
    )
    # Another selection: the fits are kept; the final refit is redone only if another
    # candidate is chosen (one_se may pick alpha=10.0, or keep alpha=0.1 when it is alone).
    spec.write_text(TINY + '[search]\nselection = "one_se"\ncomplexity = "alpha"\n')
    assert main([*run, "--resume"]) == 0
    text = capsys.readouterr().out
    same = "model to ship: alpha=0.1 " in text
    assert f"7 units: {7 if same else 6} reused from the store" in text
    # A grown grid: the old candidate's fits are reused, the new one's computed.
    spec.write_text(TINY.replace("[0.1, 10.0]", "[0.1, 10.0, 30.0]"))
    assert main([*run, "--resume"]) == 0
    assert "reusing 6 of 10 units; 3 to compute, and 1 refit of" in capsys.readouterr().err
    # Without --resume an edited spec is refused, with the hint.
    spec.write_text(TINY.replace("[0.1, 10.0]", "[0.1, 20.0]"))
    assert main(run) == 2
    assert "Or pass resume=True (--resume) to reuse" in capsys.readouterr().err


START = re.compile(
    r"parcv: reusing (\d+) of (\d+) units; (\d+) to compute"
    r"(?:, and (\d+) refits? of the chosen candidates?, reused if the store holds (?:it|them))?"
)
END = re.compile(
    r"(\d+) units: (\d+) reused from the store"
    r"(?: \(including (\d+) refits? of (?:a )?chosen candidates?\))?, (\d+) computed"
)


def test_a_resumed_run_says_the_same_counts_at_its_start_and_at_its_end(tmp_path, capsys):
    spec = tmp_path / "nested.toml"
    nested = TINY.replace("cv = 3", "outer = 3\ninner = 3")
    spec.write_text(nested)
    run = ["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial"]
    assert main(run) == 0
    capsys.readouterr()
    # A grown grid: the new candidate is never chosen, so the stored refits are reused.
    spec.write_text(nested.replace("[0.1, 10.0]", "[0.1, 10.0, 1e6]"))
    assert main([*run, "--resume"]) == 0
    captured = capsys.readouterr()
    start, end = START.search(captured.err), END.search(captured.out)
    assert start and end, (captured.err, captured.out)
    found, n_units, to_compute, pending = (int(g or 0) for g in start.groups())
    n_end, reused, refits_reused, computed = (int(g or 0) for g in end.groups())
    assert n_units == n_end == 3 * 3 * 3 + 3 * 3 + 3 + 1  # nested fits, all-data fits, refits
    assert (found, to_compute, pending) == (18 + 6, 12, 4)  # 3 outer refits and the final
    assert refits_reused == 4  # the same candidates are chosen: every refit is reused
    assert reused == found + refits_reused and computed == n_units - reused
    assert computed == to_compute + pending - refits_reused


def test_identical_units_of_one_run_are_counted_as_fitted_once(tmp_path, capsys):
    spec = tmp_path / "twice.toml"
    families = TINY.replace("[space]\nalpha = [0.1, 10.0]", "[[space]]\nalpha = [0.1]\n"
                            "[[space]]\nalpha = [0.1, 10.0]")  # fmt: skip
    spec.write_text(families)
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial"]) == 0
    out = capsys.readouterr().out
    # 3 candidates x 3 folds and the final refit; alpha=0.1's 3 fits are listed twice.
    assert "10 units computed (3 of them identical to another unit, fitted once)" in out


def test_prune_drops_the_units_the_last_run_did_not_use(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY.replace("[0.1, 10.0]", "[0.1, 10.0, 30.0]"))
    out = tmp_path / "run"
    run = ["run", str(spec), "--out", str(out), "--backend", "serial", "--quiet"]
    assert main(run) == 0
    spec.write_text(TINY)
    assert main([*run, "--resume"]) == 0
    before = parcv.load(out / "store.sqlite")
    capsys.readouterr()
    assert main(["prune", str(out)]) == 0
    text = capsys.readouterr().out  # the 3 fits of alpha=30 (and the old final, if another)
    assert "units the last run did not use; 7 kept" in text and "Dropped 0" not in text
    after = parcv.load(out / "store.sqlite")
    assert [r.test_scores for r in after.records] == [r.test_scores for r in before.records]
    assert after.best_estimator_.alpha == before.best_estimator_.alpha


def test_usage_errors_exit_2(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    cases = [
        (["--backend", "local", "--scheduler", "tcp://127.0.0.1:1"], "run.backend (--backend)"),
        (["--cluster", "slurm", "--jobs", "2", "--n-jobs", "2"], "run.n_jobs (--n-jobs)"),
        (["--cluster", "slurm"], "cluster.jobs (--jobs) is missing"),
        (["--scheduler", "tcp://127.0.0.1:1", "--n-jobs", "2"], "run.n_jobs (--n-jobs)"),
        (["--scheduler", "a", "--scheduler-file", "b"], "not allowed with argument"),
        (["--n-jobs", "zero"], "argument --n-jobs: expected an int >= 1"),
        (["--timeout", "0"], "argument --timeout: expected a number of seconds > 0"),
        (["--backend", "serial", "--timeout", "5"], "timeout 5 s needs a backend that can"),
    ]
    for options, message in cases:
        assert main(["run", str(spec), "--out", str(tmp_path / "r"), *options]) == 2, options
        assert message in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    assert "a readable UTF-8 TOML file" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "no parcv store" in capsys.readouterr().err


def test_cluster_and_tls_options_reach_hpc_and_security(tmp_path, monkeypatch, capsys):
    calls = {}
    hpc = types.ModuleType("parcv.engine.backends.jobqueue")
    security = types.ModuleType("parcv.cli.tls")

    def make_cluster_backend(kind, **options):
        calls["cluster"] = (kind, options)
        return SerialBackend()

    def make_security(**paths):
        calls["tls"] = paths
        return "SECURITY"

    hpc.make_cluster_backend = make_cluster_backend
    security.make_security = make_security
    monkeypatch.setitem(sys.modules, "parcv.engine.backends.jobqueue", hpc)
    monkeypatch.setitem(sys.modules, "parcv.cli.tls", security)
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY + '[cluster]\nkind = "pbs"\nqueue = "short"\njobs = 1\n')
    monkeypatch.chdir(tmp_path)
    options = [
        "--cluster",
        "slurm",
        "--jobs",
        "3",
        "--cores",
        "4",
        "--memory",
        "8GB",
        "--walltime",
        "00:10:00",
        "--account",
        "acct",
        "--tls-ca-file",
        "ca.pem",
        "--tls-cert",
        "me.pem",
        "--tls-key",
        "me.key",
    ]
    assert main(["run", str(spec), "--out", "run", "--quiet", *options]) == 0
    assert calls["cluster"] == (
        "slurm",
        {
            "jobs": 3,
            "cores": 4,
            "memory": "8GB",
            "walltime": "00:10:00",
            "queue": "short",
            "account": "acct",
            "security": "SECURITY",
        },
    )
    assert calls["tls"] == {
        "ca_file": str(tmp_path / "ca.pem"),
        "cert": str(tmp_path / "me.pem"),
        "key": str(tmp_path / "me.key"),
    }
    assert (
        "dask on a slurm cluster (up to 3 jobs x 4 cores)"
        in (tmp_path / "run/report.md").read_text()
    )
    # --backend local drops the spec's cluster; a missing module is a clear usage error.
    assert main(["run", str(spec), "--out", "run2", "--quiet", "--backend", "serial"]) == 0
    monkeypatch.setitem(sys.modules, "parcv.engine.backends.jobqueue", None)
    assert main(["run", str(spec), "--out", "run3"]) == 2
    assert "needs the module parcv.engine.backends.jobqueue" in capsys.readouterr().err


def test_scheduler_and_tls_make_a_dask_backend(monkeypatch):
    security = types.ModuleType("parcv.cli.tls")
    security.make_security = lambda **paths: "SECURITY"
    monkeypatch.setitem(sys.modules, "parcv.cli.tls", security)
    spec = parse_spec(
        TINY + '[run]\nscheduler = "tls://10.0.0.5:8786"\n'
        '[tls]\nca_file = "a"\ncert = "b"\nkey = "c"\n'
    )
    backend, n_jobs, where = make_backend(spec)
    assert isinstance(backend, parcv.DaskBackend) and n_jobs is None
    assert (backend.address, backend.security) == ("tls://10.0.0.5:8786", "SECURITY")
    assert where == "dask (at tls://10.0.0.5:8786)"
    local, _, _ = make_backend(parse_spec(TINY + '[run]\nbackend = "dask"\nn_jobs = 2\n'))
    assert local.n_workers == 2 and local.address is None


SLOW_MODULE = """
import time
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

class SlowMean(BaseEstimator, RegressorMixin):
    def __init__(self, shift=0.0, delay=0.04):
        self.shift, self.delay = shift, delay

    def fit(self, X, y):
        time.sleep(self.delay)
        self.mean_ = float(np.mean(y)) + self.shift
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
"""

SLOW_SPEC = """\
[data]
source = "sklearn:make_regression"
params = { n_samples = 40, n_features = 2, random_state = 0 }

[estimator]
class = "slowmod.SlowMean"

[space]
shift = [0.0, 0.5, 1.0, 1.5]

[cv]
outer = 3
inner = 3

[report]
plots = false
"""


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_exits_130_keeps_the_store_and_resume_completes(
    tmp_path, signum, sigint_reaches_children, capsys
):
    # SIGTERM is what a batch scheduler sends before the walltime: handled like Ctrl-C.
    (tmp_path / "slowmod.py").write_text(SLOW_MODULE)
    spec = tmp_path / "slow.toml"
    spec.write_text(SLOW_SPEC)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    command = [
        sys.executable,
        "-m",
        "parcv.cli",
        "run",
        str(spec),
        "--out",
        str(out),
        "--backend",
        "serial",
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    store = out / "store.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if store.is_file() and len(read_records(store)) >= 5:
                break
        except (sqlite3.DatabaseError, StoreDamagedError):  # tables not yet written
            pass
        time.sleep(0.05)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    stored = len(read_records(store))
    assert 5 <= stored < 52  # 4 x 3 x 3 inner + 4 x 3 all-data fits, 3 refits, final
    assert "Resume with:" in stderr and "--resume" in stderr
    assert not (out / "report.md").exists()
    # The report of an unfinished run says how far it got, instead of failing.
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"unfinished run: {stored} of 52 units done" in printed and "--resume" in printed
    partial = (out / "report.md").read_text()
    assert partial.startswith("# Unfinished run") and "Not known yet: the nested CV" in partial
    resumed = subprocess.run(
        [*command, "--resume"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{stored} reused from the store" in resumed.stdout
    assert len(read_records(store)) == 52
    assert (out / "report.md").is_file()


CHATTY_CLUSTER = """
import sys
import types
import warnings
from contextlib import contextmanager

import distributed  # imported before the CLI sets up logging: with a stderr handler of its own

import parcv
from parcv.cli import main


class InProcessCluster:
    # Like the dask-jobqueue backend: the scheduler runs in this process, its logs are
    # not silenced, and the cluster starts and closes within the run.
    @contextmanager
    def open(self, plan, data):
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, silence_logs=False,
            dashboard_address=None,
        ) as cluster:
            with parcv.DaskBackend(cluster=cluster).open(plan, data) as executor:
                yield executor


hpc = types.ModuleType("parcv.engine.backends.jobqueue")
hpc.make_cluster_backend = lambda kind, **options: InProcessCluster()
sys.modules["parcv.engine.backends.jobqueue"] = hpc
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.cluster
def test_cluster_run_prints_no_dask_info_logs_unless_verbose(tmp_path):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY_CLUSTER)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    stderr = {}
    for extra in ([], ["--verbose"]):
        out = tmp_path / f"run{len(extra)}"
        command = [sys.executable, str(script), "run", str(spec), "--cluster", "slurm",
                   "--jobs", "1", "--out", str(out), "--quiet", *extra]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert (out / "report.md").is_file()
        stderr[bool(extra)] = done.stderr
    assert "INFO" not in stderr[False], stderr[False][-3000:]
    assert "distributed.scheduler - INFO" in stderr[True]  # the same run, asked to be verbose


@pytest.mark.slow
def test_timeout_and_retry_failed_from_the_spec_and_the_command_line(tmp_path, capsys):
    hanging = TINY.replace(
        'class = "sklearn.linear_model.Ridge"',
        'class = "tests.estimators.Faulty"\nparams = { fault = "hang", on_alpha = 10.0 }',
    )
    spec = tmp_path / "hang.toml"
    spec.write_text(hanging + "[scoring]\nerror_score = -1e6\n[run]\ntimeout = 2\n")
    run = ["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "local",
           "--n-jobs", "2", "--quiet"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(run) == 0
        first = read_records(tmp_path / "run" / "store.sqlite")
        failed = {k for k, r in first.items() if not r.ok}
        assert {k[3] for k in failed} == {1} and len(failed) == 3  # alpha=10, every fold
        assert all("timed out after 2 s" in first[k].error.message for k in failed)
        assert main([*run, "--resume"]) == 0  # recorded failures are kept ...
        kept = read_records(tmp_path / "run" / "store.sqlite")
        assert all(kept[k].finished == first[k].finished for k in failed)
        assert main([*run, "--resume", "--retry-failed", "--timeout", "1"]) == 0  # ... unless
    again = read_records(tmp_path / "run" / "store.sqlite")
    assert all("timed out after 1 s" in again[k].error.message for k in failed)
    assert all(again[k] == first[k] for k in first if k not in failed and k != ("final",))
    for bad in ("timeout = -1", "timeout = true", 'retry_failed = "yes"'):
        spec.write_text(hanging + f"[run]\n{bad}\n")
        assert main(run) == 2, bad
        assert f"run.{bad.split()[0]}" in capsys.readouterr().err


def test_a_halving_spec_reports_every_rung_and_resumes_them_all(tmp_path, capsys):
    spec = tmp_path / "halving.toml"
    spec.write_text(
        '[data]\nsource = "sklearn:diabetes"\nn_samples = 90\n'
        '[estimator]\nclass = "sklearn.linear_model.Ridge"\n'
        "[space]\nalpha = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]\n"
        "[search]\nhalving = { factor = 3 }\n[cv]\ncv = 3\n"
        "[report]\nplots = false\n"  # the rungs' plot is checked in tests/report
    )
    run = ["run", str(spec), "--out", str(tmp_path / "run"), "--backend", "serial"]
    assert main(run) == 0
    assert "25 units computed;" in capsys.readouterr().out  # 6 x 3 + 2 x 3 fits and the refit
    assert main([*run, "--resume"]) == 0
    captured = capsys.readouterr()
    assert "25 units: 25 reused from the store" in captured.out
    # Not the full search's plan's count ("reusing 0 of 19 units"): the rungs' units.
    assert ("parcv: the store holds 24 finished units (and 1 refit of a chosen candidate) of "
            "its last run; each round reuses those it proposes again, of at most 24 units"
            in captured.err)  # fmt: skip
    assert "reusing" not in captured.err
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["kind"] == "halving" and saved["n_candidates"] == [6, 2]
