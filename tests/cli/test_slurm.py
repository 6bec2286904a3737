"""HPC: the batch scripts, the dask-jobqueue backend, and end-to-end sweeps on a real Slurm cluster.

The cluster tests need Slurm running on this machine (``.ci/run`` starts it with
cluster/slurm/start-local-slurm.sh); without it they are skipped with the reason.
Everything binds to 127.0.0.1: Dask runs with interface ``lo``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import parcv
from parcv.engine.backends.jobqueue import JobQueueBackend, make_cluster_backend
from parcv.errors import BackendError

REPO = Path(__file__).resolve().parents[2]
SBATCH = REPO / "scripts" / "slurm" / "parcv-sweep.sbatch"
QSUB = REPO / "scripts" / "pbs" / "parcv-sweep.qsub"
DATA = Path(__file__).resolve().parents[1] / "data"
SPEC = DATA / "slurm_sweep.toml"  # its estimator is data/slow_estimators.py
SHELL_SCRIPTS = [SBATCH, QSUB, *sorted((REPO / "cluster").rglob("*.sh"))]
JOB_TIMEOUT = 180.0
needs_jobqueue = pytest.mark.skipif(
    importlib.util.find_spec("dask_jobqueue") is None,
    reason="dask-jobqueue is not installed: pip install 'parcv[hpc]'",
)
# With pytest -n, these tests run on one worker, one after another: their jobs share the
# one local Slurm node's CPUs, and two sweeps queued behind each other would wait out
# JOB_TIMEOUT.
pytestmark = pytest.mark.xdist_group("slurm")
# Varies from run to run without changing any number.
UNSTABLE = re.compile(r"time|^worker$|^started$|^finished$")


# ---------------------------------------------------------------- helpers


def _env(**extra: str) -> dict[str, str]:
    """Environment for jobs and subprocesses: this parcv, this Python, the test estimator."""
    package_root = str(Path(parcv.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [package_root, str(DATA), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, PARCV_PYTHON=sys.executable, **extra)


def _stable(value: Any) -> Any:
    """The parts of results.json that must be identical on every backend."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not UNSTABLE.search(k)}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _assert_same_results(run_dir: Path, reference_dir: Path) -> None:
    got = json.loads((run_dir / "results.json").read_text())
    want = json.loads((reference_dir / "results.json").read_text())
    assert got["outer_scores"] == want["outer_scores"]
    assert _stable(got) == _stable(want)
    # results.json holds summaries; cv_results_ and the per-unit records are in the stores.
    a, b = (parcv.load(d / "store.sqlite") for d in (run_dir, reference_dir))
    np.testing.assert_array_equal(
        a.final.cv_results_["mean_test_accuracy"], b.final.cv_results_["mean_test_accuracy"]
    )
    got_records, want_records = (
        {r.key: _stable(r.to_dict()) for r in parcv.load(d / "store.sqlite").records}
        for d in (run_dir, reference_dir)
    )
    assert got_records == want_records


def _directives(script: Path, prefix: str) -> list[str]:
    """The scheduler directives of a batch script, as its scheduler reads them.

    Slurm and PBS stop reading directives at the first line that is not a comment.
    """
    found: list[str] = []
    for line in script.read_text().splitlines()[1:]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if stripped.startswith(prefix + " "):
            found.append(stripped[len(prefix) :].strip())
    return found


def _squeue(*args: str) -> str:
    return subprocess.run(
        ["squeue", "-h", *args], capture_output=True, text=True, timeout=20, check=True
    ).stdout.strip()


def _job_state(job: str) -> dict[str, str]:
    text = subprocess.run(
        ["scontrol", "show", "job", job], capture_output=True, text=True, timeout=20
    ).stdout
    return dict(re.findall(r"(\w+)=(\S*)", text))


def _wait_job(job: str, log: Path, timeout: float = JOB_TIMEOUT) -> dict[str, str]:
    """Poll squeue until the job left the queue; scancel it and fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while _squeue("-j", job):
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job], timeout=20)
            output = log.read_text() if log.exists() else "(no output)"
            pytest.fail(f"Slurm job {job} still running after {timeout:g} s:\n{output}")
        time.sleep(0.2)
    return _job_state(job)


def _submit(run_dir: Path, work: Path, *, spec: Path = SPEC) -> tuple[str, Path]:
    log = work / f"sweep-{time.monotonic_ns()}.out"
    args = [
        "sbatch",
        "--parsable",
        f"--chdir={work}",
        f"--output={log}",
        "--time=00:10:00",
        "--mem=2G",
        str(SBATCH),
        str(spec),
        str(run_dir),
    ]
    env = _env(PARCV_DASK_INTERFACE="lo", PARCV_WORKER_WAIT="120", PARCV_RUN_ARGS="--quiet")
    submitted = subprocess.run(args, env=env, capture_output=True, text=True, timeout=30)
    assert submitted.returncode == 0, submitted.stderr
    return submitted.stdout.strip().split(";")[0], log


def _count_records(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)) as db:
            tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
            if "records" not in tables:
                return 0
            # Fits that succeeded are stored a chunk at a time (schema 6), the others
            # one row each in records.
            fits = db.execute("select coalesce(sum(n), 0) from chunks").fetchone()[0]
            others = db.execute("select count(*) from records").fetchone()[0]
            return int(fits) + int(others)
    except sqlite3.Error:  # the driver is creating it right now
        return 0


def _dask_processes(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (e.g. a scheduler file)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if marker in cmdline and "distributed.cli" in cmdline and state != "Z":
            found.append(cmdline)
    return found


def _wait_no_processes(marker: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while _dask_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _dask_processes(marker) == []


# ---------------------------------------------------------------- scripts (no cluster)


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_parse(script: Path) -> None:
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_sbatch_directives() -> None:
    directives = dict(d.partition("=")[::2] for d in _directives(SBATCH, "#SBATCH"))
    for option in ("--nodes", "--ntasks-per-node", "--cpus-per-task", "--mem", "--time"):
        assert option in directives, f"{option} is not a directive of {SBATCH.name}"
    assert int(directives["--nodes"]) >= 1
    assert int(directives["--ntasks-per-node"]) >= 1
    assert re.fullmatch(r"\d+[KMGT]?", directives["--mem"])
    assert re.fullmatch(r"\d+:\d\d:\d\d", directives["--time"])
    assert re.fullmatch(r"B:TERM@\d+", directives["--signal"])


def test_qsub_directives() -> None:
    directives = _directives(QSUB, "#PBS")
    options: dict[str, list[str]] = {}
    for directive in directives:
        flag, _, value = directive.partition(" ")
        options.setdefault(flag, []).append(value.strip())
    assert options["-N"] == ["parcv-sweep"]
    assert options["-j"] == ["oe"]
    assert options["-S"] == ["/bin/bash"]
    assert "-V" in options
    resources = dict(r.split("=", 1) for r in options["-l"])
    assert re.fullmatch(r"\d+:\d\d:\d\d", resources["walltime"])
    chunk = resources["select"].split(":")
    assert chunk[0].isdigit() and int(chunk[0]) >= 1
    sizes = dict(part.split("=", 1) for part in chunk[1:])
    assert sizes.keys() >= {"ncpus", "mpiprocs", "mem"}
    assert sizes["ncpus"] == sizes["mpiprocs"]  # one Dask worker per core
    assert re.fullmatch(r"\d+[kmgt]?b", sizes["mem"])


@pytest.mark.parametrize("script", [SBATCH, QSUB], ids=lambda p: p.name)
def test_batch_scripts_document_their_parameters(script: Path) -> None:
    header = script.read_text().split("set -euo pipefail")[0]
    for parameter in ("nodes", "cores", "memory", "walltime", "spec", "output dir"):
        assert re.search(rf"^#\s+{parameter}\s", header, re.MULTILINE), parameter
    for line in (
        "--scheduler-file",
        "parcv.cli run",
        "--backend dask",
        "--resume",
        "cleanup",
    ):
        assert line in script.read_text()


def test_batch_scripts_refuse_to_run_outside_their_scheduler(tmp_path: Path) -> None:
    env = {k: v for k, v in _env().items() if not k.startswith(("SLURM_", "PBS_"))}
    slurm = subprocess.run(
        ["bash", str(SBATCH), str(SPEC)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert slurm.returncode != 0 and "submit it with sbatch" in slurm.stderr
    pbs = subprocess.run(
        ["bash", str(QSUB)],
        env=dict(env, PARCV_SPEC=str(SPEC)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert pbs.returncode != 0 and "submit it with qsub" in pbs.stderr


# ------------------------------------------------ parcv.engine.backends.jobqueue (no cluster)


@needs_jobqueue
def test_make_cluster_backend_builds_options() -> None:
    backend = make_cluster_backend(
        "slurm",
        jobs=3,
        cores=2,
        memory="2GiB",
        walltime="00:10:00",
        queue="debug",
        account="proj",
        interface="lo",
    )
    assert isinstance(backend, JobQueueBackend)
    assert (backend.kind, backend.jobs, backend.minimum_jobs, backend.cores_per_job) == (
        "slurm",
        3,
        1,
        2,
    )
    options = dict(backend.cluster_options)
    assert options["queue"] == "debug" and options["account"] == "proj"
    assert options["interface"] == "lo"
    assert options["death_timeout"] == 60
    # The dashboard shows code and data: loopback unless configured otherwise.
    assert options["scheduler_options"]["dashboard_address"] == "127.0.0.1:0"
    assert "security" not in options  # None options are left to dask's configuration


@needs_jobqueue
def test_make_cluster_backend_binds_a_host() -> None:
    backend = make_cluster_backend(
        "pbs",
        jobs=1,
        cores=1,
        memory="1GB",
        host="127.0.0.1",
        scheduler_options={"dashboard_address": ":8799"},
    )
    options = dict(backend.cluster_options)
    assert options["scheduler_options"] == {"dashboard_address": ":8799", "host": "127.0.0.1"}
    assert options["worker_extra_args"][-2:] == ["--host", "127.0.0.1"]


@needs_jobqueue
def test_make_cluster_backend_reads_dask_config() -> None:
    import dask

    with dask.config.set(
        {
            "jobqueue.slurm.cores": 4,
            "jobqueue.slurm.memory": "8GiB",
            "jobqueue.slurm.death-timeout": 120,
        }
    ):
        backend = make_cluster_backend("slurm", jobs=2)
    assert backend.cores_per_job == 4
    assert "cores" not in backend.cluster_options  # dask-jobqueue reads it itself
    assert backend.cluster_options["death_timeout"] == 120


@needs_jobqueue
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kind": "sge", "jobs": 1}, ValueError, "kind must be one of"),
        ({"jobs": 0}, ValueError, "jobs must be an int >= 1; got 0"),
        ({"jobs": None}, TypeError, "jobs must be an int >= 1; got None"),
        ({"jobs": 2, "minimum_jobs": 3}, ValueError, "minimum_jobs must be <= jobs"),
        ({"jobs": 1, "cores": 0}, ValueError, "cores must be an int >= 1"),
        ({"jobs": 1, "memory": 4}, TypeError, "memory must be a non-empty string"),
        ({"jobs": 1, "walltime": ""}, ValueError, "walltime must be a non-empty string"),
        ({"jobs": 1, "minimum_jobs": 0}, ValueError, "minimum_jobs must be an int >= 1"),
    ],
)
def test_make_cluster_backend_checks_its_input(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    kwargs = {"kind": "slurm", "cores": 1, "memory": "1GiB", **kwargs}
    with pytest.raises(error, match=match):
        make_cluster_backend(kwargs.pop("kind"), **kwargs)


@needs_jobqueue
def test_make_cluster_backend_needs_cores_and_memory() -> None:
    import dask

    with (
        dask.config.set({"jobqueue.slurm.cores": None, "jobqueue.slurm.memory": None}),
        pytest.raises(ValueError, match="cores and memory per job must be given or configured"),
    ):
        make_cluster_backend("slurm", jobs=1, cores=2)


@needs_jobqueue
def test_example_jobqueue_yaml_uses_dask_jobqueue_keys() -> None:
    import dask
    import dask_jobqueue
    import yaml

    example = yaml.safe_load((REPO / "cluster" / "jobqueue.yaml").read_text())["jobqueue"]
    defaults_path = Path(dask_jobqueue.__file__).parent / "jobqueue.yaml"
    defaults = yaml.safe_load(defaults_path.read_text())["jobqueue"]
    for kind, section in example.items():
        unknown = set(section) - set(defaults[kind])
        assert not unknown, f"cluster/jobqueue.yaml [{kind}] has unknown keys {unknown}"
    with dask.config.set({"jobqueue": example}):
        backend = make_cluster_backend("slurm", jobs=2)
    assert backend.cores_per_job == 8
    assert backend.cluster_options["scheduler_options"]["dashboard_address"] == "127.0.0.1:0"


def test_make_cluster_backend_without_dask_jobqueue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'parcv[hpc]'")):
        make_cluster_backend("slurm", jobs=1, cores=1, memory="1GiB")


# ---------------------------------------------------------------- a real Slurm cluster


@pytest.fixture(scope="session")
def slurm() -> str:
    """The default partition of a running Slurm cluster; skip (saying why) without one."""
    start = "start one with: bash cluster/slurm/start-local-slurm.sh (as root)"
    if shutil.which("sbatch") is None or shutil.which("scontrol") is None:
        pytest.skip(f"Slurm is not installed here (no sbatch/scontrol); {start}")
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.skip(f"scontrol ping timed out: the Slurm controller is not answering; {start}")
    if "UP" not in ping.stdout:
        reason = ((ping.stdout or ping.stderr).strip().splitlines() or ["no answer"])[0]
        pytest.skip(f"the Slurm controller is not up ({reason}); {start}")
    partitions = subprocess.run(
        ["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=20
    ).stdout.split()
    default = [p for p in partitions if p.endswith("*")] or partitions
    if not default:
        pytest.skip("Slurm is up but has no partition")
    return default[0].rstrip("*")


@pytest.fixture(scope="session")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example spec run by the serial backend: the numbers every cluster run must give."""
    out = tmp_path_factory.mktemp("local") / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "parcv.cli",
            "run",
            str(SPEC),
            "--backend",
            "serial",
            "--out",
            str(out),
            "--quiet",
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.cluster
@pytest.mark.slow
def test_sbatch_sweep_survives_a_cancel_resumes_and_equals_local_run(
    slurm: str, local_run: Path, tmp_path: Path
) -> None:
    run_dir, store = tmp_path / "run", tmp_path / "run" / "store.sqlite"
    first, log = _submit(run_dir, tmp_path)
    # Cancel the first job once it stored some results: a sweep that fails midway.
    deadline = time.monotonic() + JOB_TIMEOUT
    while _squeue("-j", first) and not _count_records(store) and time.monotonic() < deadline:
        time.sleep(0.2)
    subprocess.run(["scancel", first], capture_output=True, timeout=20)
    state = _wait_job(first, log)
    assert state["JobState"] in {"CANCELLED", "COMPLETED"}, log.read_text()
    _wait_no_processes(f"dask-scheduler-{first}.json")  # scheduler and workers are gone
    kept = _count_records(store)
    assert kept > 0, log.read_text()

    resubmitted = time.time()
    second, log = _submit(run_dir, tmp_path)
    state = _wait_job(second, log)
    assert (state["JobState"], state["ExitCode"]) == ("COMPLETED", "0:0"), log.read_text()
    _wait_no_processes(f"dask-scheduler-{second}.json")
    _assert_same_results(run_dir, local_run)
    records = parcv.load(run_dir / "store.sqlite").records  # results.json holds summaries
    from_first_job = sum(r.finished < resubmitted for r in records)
    assert 0 < from_first_job <= kept  # resumed from the store, not recomputed
    assert not (run_dir / f"dask-scheduler-{second}.json").exists()


@needs_jobqueue
@pytest.mark.cluster
@pytest.mark.slow
def test_cluster_slurm_runs_workers_as_jobs_and_equals_local_run(
    slurm: str, local_run: Path, tmp_path: Path
) -> None:
    name = f"parcv-test-{uuid.uuid4().hex[:8]}"
    env = _env(
        # dask's configuration (as jobqueue.yaml would set it): loopback, logs, a job name.
        DASK_JOBQUEUE__SLURM__INTERFACE="lo",
        DASK_JOBQUEUE__SLURM__LOG_DIRECTORY=str(tmp_path / "logs"),
        DASK_JOBQUEUE__SLURM__NAME=name,
    )
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "parcv.cli",
        "run",
        str(SPEC),
        "--cluster",
        "slurm",
        "--jobs",
        "2",
        "--cores",
        "1",
        "--memory",
        "1GiB",
        "--walltime",
        "00:10:00",
        "--queue",
        slurm,
        "--out",
        str(run_dir),
        "--quiet",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT)
    assert done.returncode == 0, done.stderr[-5000:]
    _assert_same_results(run_dir, local_run)
    assert list((tmp_path / "logs").glob(f"{name}-*.out")), "no worker ran as a Slurm job"
    _wait_no_jobs(name)


@needs_jobqueue
@pytest.mark.cluster
def test_jobqueue_backend_reports_a_refused_job_quickly(slurm: str, tmp_path: Path) -> None:
    from sklearn.linear_model import Ridge

    backend = make_cluster_backend(
        "slurm",
        jobs=1,
        cores=1,
        memory="1GiB",
        queue="no-such-partition",
        interface="lo",
        log_directory=str(tmp_path),
    )
    start = time.monotonic()
    with pytest.raises(BackendError, match=r"refused parcv's worker job: .*partition"):
        parcv.cross_validate(
            Ridge(),
            [[0.0], [1.0], [2.0], [3.0]],
            [0.0, 1.0, 2.0, 3.0],
            cv=2,
            backend=backend,
            progress=False,
        )
    assert time.monotonic() - start < 60


def _wait_no_jobs(name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while _squeue("-n", name) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _squeue("-n", name) == "", "worker jobs were left in the queue"


@needs_jobqueue
@pytest.mark.cluster
@pytest.mark.slow
def test_jobqueue_backend_over_tls_releases_its_jobs_when_the_run_fails(
    slurm: str, tmp_path: Path
) -> None:
    from sklearn.linear_model import Ridge

    from parcv.cli.tls import make_security

    # With TLS: parcv's client certificate serves its scheduler and the worker jobs too.
    pki = tmp_path / "pki"
    make_certs = REPO / "cluster" / "tls" / "make-certs.sh"
    subprocess.run(["bash", str(make_certs), str(pki)], check=True, capture_output=True, timeout=60)
    security = make_security(
        ca_file=pki / "ca.pem", cert=pki / "client.pem", key=pki / "client-key.pem"
    )
    name = f"parcv-test-{uuid.uuid4().hex[:8]}"
    backend = make_cluster_backend(
        "slurm",
        jobs=2,
        cores=1,
        memory="1GiB",
        walltime="00:05:00",
        queue=slurm,
        interface="lo",
        log_directory=str(tmp_path),
        job_name=name,
        security=security,
        no_worker_timeout=JOB_TIMEOUT,
    )
    X = [[float(i), float(i % 7)] for i in range(30)]
    y = [float(i % 5) for i in range(30)]
    # error_score="raise": the estimator's own ValueError, back from the TLS worker.
    with pytest.raises(ValueError, match="lbfgs") as info:
        parcv.cross_validate(
            Ridge(solver="lbfgs"), X, y, cv=3, backend=backend, error_score="raise", progress=False
        )
    assert "error_score='raise'" in "".join(getattr(info.value, "__notes__", []))
    worker_logs = "".join(p.read_text() for p in tmp_path.glob(f"{name}-*.err"))
    assert "Registered to:      tls://127.0.0.1:" in worker_logs, "no worker joined over TLS"
    _wait_no_jobs(name)


@pytest.mark.cluster
@pytest.mark.slow
def test_qsub_script_runs_a_sweep_with_a_stand_in_pbsdsh(local_run: Path, tmp_path: Path) -> None:
    # No PBS here: a pbsdsh that starts the command once per slot of PBS_NODEFILE on this
    # machine runs the real script's scheduler, workers, driver and shutdown.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pbsdsh = bin_dir / "pbsdsh"
    pbsdsh.write_text(
        "#!/usr/bin/env bash\n"
        "[[ ${1:-} == -- ]] && shift\n"
        "pids=()\n"
        'while read -r _; do "$@" </dev/null & pids+=($!); done <"$PBS_NODEFILE"\n'
        "trap 'kill \"${pids[@]}\" 2>/dev/null; wait' TERM\n"
        "wait\n"
    )
    pbsdsh.chmod(0o755)
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("localhost\nlocalhost\n")
    env = _env(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        PBS_O_WORKDIR=str(tmp_path),
        PBS_JOBID="4242.pbs",
        PBS_NODEFILE=str(nodefile),
        PARCV_SPEC=str(SPEC),
        PARCV_OUT="run",
        PARCV_DASK_INTERFACE="lo",
        PARCV_WORKER_WAIT="120",
        PARCV_RUN_ARGS="--quiet",
    )
    done = subprocess.run(
        ["bash", str(QSUB)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    _assert_same_results(tmp_path / "run", local_run)
    _wait_no_processes("dask-scheduler-4242.json")
    assert (tmp_path / "run" / "dask-logs" / "workers-4242.log").exists()
