"""Bad backend input, in Python or on the command line: refused before any work starts.

Every message names the parameter (or flag), the value received and how to fix it.
"""

from __future__ import annotations

import re
import socket
import threading
import time

import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.cli import main
from parcv.cli.demo import run_demo
from parcv.cli.spec import parse_spec
from parcv.cli.sweep import make_backend
from parcv.engine.backends import check_backend
from parcv.engine.backends.dask import _wait_for_file, check_scheduler_file
from parcv.engine.backends.jobqueue import JobQueueBackend
from parcv.engine.backends.local import check_n_jobs
from tests.cli.test_cli import TINY

X, Y = make_regression(n_samples=60, n_features=3, random_state=0)
N_JOBS = r"n_jobs must be a positive int, -1 for every core \(-2 all but one\) or None; got "


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"threads": "x"}, TypeError, r"threads must be an int >= 1 or None; got 'x'\. Pass 1"),
        ({"threads": 0}, ValueError, r"threads must be an int >= 1 or None; got 0\. Pass 1"),
        ({"threads": 1.5}, TypeError, r"threads must be an int >= 1 or None; got 1\.5\."),
        ({"n_jobs": 0}, ValueError, N_JOBS + r"0\. Pass the number of worker processes"),
        ({"n_jobs": 2.0}, TypeError, N_JOBS + r"2\.0\."),
        ({"n_jobs": True}, TypeError, N_JOBS + "True"),
        ({"idle_timeout": -1}, ValueError, r"idle_timeout must be a number of seconds > 0; got -1"),
        ({"idle_timeout": 0}, ValueError, r"idle_timeout must be .*; got 0\. Pass the seconds"),
        ({"idle_timeout": None}, TypeError, r"idle_timeout must be a number of seconds > 0; got N"),
        ({"idle_timeout": float("nan")}, ValueError, r"idle_timeout must be .*; got nan"),
        ({"idle_timeout": float("inf")}, ValueError, r"idle_timeout must be .*; got inf"),
    ],
)
def test_local_backend_refuses_bad_fields_when_built(kwargs, error, match):
    with pytest.raises(error, match=match):
        parcv.LocalBackend(**kwargs)


@pytest.mark.parametrize("n_jobs", [None, 1, 2, -1, -2])
def test_local_backend_keeps_every_n_jobs_check_n_jobs_resolves(n_jobs):
    assert parcv.LocalBackend(n_jobs=n_jobs).n_jobs == n_jobs
    assert check_n_jobs(n_jobs) >= 1


def test_a_bad_local_backend_fails_before_search_runs():
    # Used to fail inside a worker: "failed outside any fit ... run again to complete".
    with pytest.raises(TypeError, match="threads must be an int >= 1 or None; got 'x'"):
        parcv.search(
            Ridge(),
            {"alpha": [1.0]},
            X,
            Y,
            cv=3,
            backend=parcv.LocalBackend(n_jobs=1, threads="x"),
        )


def test_serial_and_batch_job_backends_check_their_fields():
    with pytest.raises(ValueError, match=r"threads must be an int >= 1 or None; got 0\. Pass 1"):
        parcv.SerialBackend(threads=0)
    with pytest.raises(ValueError, match="threads must be an int >= 1 or None; got 0"):
        JobQueueBackend(kind="pbs", jobs=1, threads=0)
    with pytest.raises(ValueError, match=r"no_worker_timeout must be a number .*; got -1\. Pass"):
        JobQueueBackend(kind="pbs", jobs=1, no_worker_timeout=-1)
    with pytest.raises(ValueError, match=r"threads must be .*; got 0\. Pass 1"):
        parcv.DaskBackend(threads=0)


@pytest.mark.parametrize(
    ("cls", "name"),
    [(parcv.LocalBackend, "local"), (parcv.SerialBackend, "serial"), (parcv.DaskBackend, "dask")],
)
def test_a_backend_class_is_refused_with_how_to_make_an_instance(cls, name):
    message = rf"pass {cls.__name__}\(\.\.\.\) \(an instance\), or backend='{name}'"
    with pytest.raises(TypeError, match=f"not the class '{cls.__name__}'; {message}"):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=3, backend=cls)


def test_check_backend_names_the_bad_value_and_the_fix():
    with pytest.raises(ValueError, match=r"backend must be one of .*; got 'Local'\. Did you mean"):
        check_backend("Local")
    with pytest.raises(ValueError, match=r"got 'ray'\. Pass one of these names"):
        check_backend("ray")
    with pytest.raises(TypeError, match=r"an object with open\(plan, data\); got 3\. Pass"):
        check_backend(3)
    with pytest.raises(ValueError, match=N_JOBS + "0"):
        check_backend("dask", 0)
    with pytest.raises(TypeError, match=N_JOBS + "'2'"):
        check_backend("local", "2")
    with pytest.raises(TypeError, match=N_JOBS + "'abc'"):
        check_backend("serial", "abc")  # one process runs, but a bad value is still refused
    assert check_backend("serial", 2) == parcv.SerialBackend()
    # n_jobs would be ignored: the object is already sized.
    with pytest.raises(ValueError, match=r"n_jobs sizes a backend given by name; got n_jobs=4"):
        parcv.search(
            Ridge(), {"alpha": [1.0]}, X, Y, cv=3, backend=parcv.LocalBackend(n_jobs=2), n_jobs=4
        )
    assert check_backend("local", -2) == parcv.LocalBackend(n_jobs=-2)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("hello: [1", "it is not JSON"),
        ("", "it is empty"),
        ("[1]", "it holds a JSON list"),
        ('{"port": 8786}', 'it has no "address" string'),
    ],
)
def test_a_scheduler_file_that_is_not_one_says_what_is_wrong(tmp_path, content, problem):
    path = tmp_path / "scheduler.json"
    path.write_text(content)
    where = re.escape(f"scheduler_file {str(path)!r} is not a Dask scheduler file: {problem}")
    with pytest.raises(ValueError, match=where):
        check_scheduler_file(path)
    backend = parcv.DaskBackend(scheduler_file=path, connect_timeout=0.2)
    start = time.monotonic()
    # Used to be "cannot reach Dask at ... (AssertionError: )".
    with pytest.raises(parcv.BackendError, match=f"{where}.*dask scheduler --scheduler-file"):
        parcv.cross_validate(Ridge(), X, Y, cv=3, backend=backend)
    assert time.monotonic() - start < 5


def test_a_scheduler_file_that_cannot_be_read_names_it(tmp_path):
    with pytest.raises(
        ValueError, match=re.escape(f"cannot read scheduler_file {str(tmp_path)!r}")
    ):
        check_scheduler_file(tmp_path)
    path = tmp_path / "scheduler.json"
    path.write_text('{"address": "tcp://10.0.0.5:8786", "id": "Scheduler-1"}')
    assert check_scheduler_file(path) == "tcp://10.0.0.5:8786"


def test_a_scheduler_file_still_being_written_is_waited_for(tmp_path):
    path = tmp_path / "scheduler.json"
    path.write_text("")  # created, not yet written
    writer = threading.Timer(0.1, path.write_text, ['{"address": "tcp://127.0.0.1:1"}'])
    writer.start()
    try:
        _wait_for_file(str(path), 2.0)
    finally:
        writer.join()


def test_the_demo_checks_backend_and_n_jobs_before_creating_its_directory(tmp_path):
    out = tmp_path / "demo"
    with pytest.raises(ValueError, match=N_JOBS + "0"):
        run_demo(out, n_jobs=0, quick=True)
    with pytest.raises(TypeError, match="not the class 'LocalBackend'"):
        run_demo(out, backend=parcv.LocalBackend, quick=True)
    assert not out.exists()


# --- the command line: usage errors exit 2 and name the flag ---------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--seed", "-1"],
            "argument --seed: expected an int from 0 to 4294967295, e.g. 0; got '-1'",
        ),
        (["--seed", str(2**32)], f"argument --seed: expected an int from 0 to {2**32 - 1}"),
        (
            ["--backend", "local", "--n-jobs", "0"],
            "argument --n-jobs: expected an int >= 1, -1 for every core or -2 for all but one; "
            "got '0'",
        ),
        (["--cluster", "slurm", "--jobs", "0"], "argument --jobs: expected an int >= 1; got '0'"),
        (["--cluster", "slurm", "--jobs", "1", "--cores", "-3"], "argument --cores: expected"),
        (["--connect-timeout", "0"], "argument --connect-timeout: expected a number of seconds"),
        (["--connect-timeout", "nan"], "argument --connect-timeout: expected a number of seconds"),
        (["--connect-timeout", "5"], "--connect-timeout 5 is for a Dask scheduler or cluster"),
        (["--resume", "--overwrite"], "argument --overwrite: not allowed with argument --resume"),
    ],
)
def test_bad_flag_values_are_usage_errors_before_anything_is_created(
    tmp_path, capsys, options, message
):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), *options]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_demo_n_jobs_zero_is_a_usage_error(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--n-jobs", "0", "--out", str(out)]) == 2
    assert "argument --n-jobs: expected an int >= 1" in capsys.readouterr().err
    assert not out.exists()


def test_n_jobs_minus_two_and_minus_one_still_work(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    assert main(["inspect", str(spec), "--backend", "local", "--n-jobs", "-2"]) == 0
    assert f"local ({check_n_jobs(-2)} workers)" in capsys.readouterr().out
    # -1 reached DaskBackend(n_workers=-1) unresolved, which refuses it.
    dask, _, where = make_backend(parse_spec(TINY + '[run]\nbackend = "dask"\nn_jobs = -1\n'))
    assert dask.n_workers == check_n_jobs(-1)
    assert where == f"dask (local cluster, {check_n_jobs(-1)} workers)"


@pytest.mark.parametrize(
    ("content", "problem"),
    [("hello: [1", "it is not JSON"), ('{"port": 8786}', 'it has no "address" string')],
)
def test_a_scheduler_file_that_is_not_one_is_a_usage_error(tmp_path, capsys, content, problem):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    scheduler = tmp_path / "scheduler.json"
    scheduler.write_text(content)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--scheduler-file", str(scheduler)]) == 2
    err = capsys.readouterr().err
    assert f"(--scheduler-file) {str(scheduler)!r} is not a Dask scheduler file: {problem}" in err
    assert not out.exists()


def test_unreachable_scheduler_names_the_timeout_flag_and_leaves_no_run_dir(tmp_path, capsys):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    run = ["run", str(spec), "--scheduler", address, "--connect-timeout", "0.5", "--quiet"]
    start = time.monotonic()
    assert main([*run, "--out", str(tmp_path / "runs" / "tiny")]) == 1
    err = capsys.readouterr().err
    assert f"cannot reach Dask at {address!r}" in err and "after 0.5 s" in err
    assert "--connect-timeout SECONDS" in err
    assert time.monotonic() - start < 15
    assert not (tmp_path / "runs").exists()  # nor the parents made for it
    # An existing run directory stays, without the empty store (a rerun needs no --resume).
    (tmp_path / "kept").mkdir()
    assert main([*run, "--out", str(tmp_path / "kept")]) == 1
    assert list((tmp_path / "kept").iterdir()) == []
    assert make_backend(parse_spec(TINY), connect_timeout=None)[0] == "local"
    dask, _, _ = make_backend(
        parse_spec(TINY + f'[run]\nscheduler = "{address}"\n'), connect_timeout=2.5
    )
    assert dask.connect_timeout == 2.5


def test_a_run_directory_that_cannot_be_created_is_a_usage_error(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "run"  # under a file: [Errno 20] Not a directory
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 2
    err = capsys.readouterr().err
    assert f"cannot create the run directory {str(out)!r}: Not a directory. Pass --out" in err


YAML = "data:\n  source: sklearn:diabetes\nestimator:\n  class: sklearn.linear_model.Ridge\n"


@pytest.mark.parametrize("name", ["spec.yaml", "spec.YML", "spec.toml"])
def test_a_yaml_spec_is_told_specs_are_toml(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_text(YAML)
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "specs are TOML files" in err and "see examples/*.toml" in err
    assert ("It looks like YAML" in err) == (name == "spec.toml")


def test_a_toml_typo_gets_no_yaml_hint(tmp_path, capsys):
    path = tmp_path / "typo.toml"
    path.write_text("[data\nsource = 1\n")
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "valid TOML" in err and "YAML" not in err
