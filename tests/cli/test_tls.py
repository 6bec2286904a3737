"""TLS on loopback: certificates from cluster/tls/make-certs.sh, a TLS-only Dask cluster.

The scheduler and workers run as the ``dask scheduler`` / ``dask worker`` commands that
cluster/README.md documents, with encryption required. parcv with the client certificate
gets the serial backend's numbers; clients without a certificate, or with one from
another CA, are refused before any task of theirs can run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.svm import SVC

import parcv
from parcv.cli.tls import make_security

REPO = Path(__file__).resolve().parents[2]
MAKE_CERTS = REPO / "cluster" / "tls" / "make-certs.sh"
DATA = Path(__file__).resolve().parents[1] / "data"
SPEC = DATA / "slurm_sweep.toml"  # its estimator is data/slow_estimators.py
GRID = {"C": [0.1, 1.0, 10.0], "gamma": ["scale", 0.05]}
X, Y = make_classification(n_samples=120, n_features=6, n_informative=3, random_state=0)
CONNECT_TIMEOUT = 5.0


def _make_certs(directory: Path) -> Path:
    subprocess.run(
        ["bash", str(MAKE_CERTS), str(directory)], check=True, timeout=60, capture_output=True
    )
    return directory


def _dask_env() -> dict[str, str]:
    """Environment of Dask and CLI processes: this parcv and the test estimator importable."""
    package_root = str(Path(parcv.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [package_root, str(DATA), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION="True")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process group this module started: TERM, then KILL after 15 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot create test certificates")
    return _make_certs(tmp_path_factory.mktemp("tls") / "pki")


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory: pytest.TempPathFactory, pki: Path) -> Path:
    return _make_certs(tmp_path_factory.mktemp("tls-other") / "pki")


@pytest.fixture(scope="module")
def tls_cluster(pki: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A TLS-only scheduler and two worker processes on 127.0.0.1; yields the address."""
    run_dir = tmp_path_factory.mktemp("tls-cluster")
    scheduler_file = run_dir / "scheduler.json"
    env = _dask_env()
    processes: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], log: str) -> None:
        with open(run_dir / log, "wb") as out:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", *args],
                    env=env,
                    cwd=run_dir,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            )

    def tls(role: str) -> list[str]:
        return [
            "--tls-ca-file",
            str(pki / "ca.pem"),
            "--tls-cert",
            str(pki / f"{role}.pem"),
            "--tls-key",
            str(pki / f"{role}-key.pem"),
        ]

    try:
        start(
            [
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--protocol",
                "tls",
                "--scheduler-file",
                str(scheduler_file),
                "--dashboard-address",
                "127.0.0.1:0",
                *tls("scheduler"),
            ],
            "scheduler.log",
        )
        start(
            [
                "distributed.cli.dask_worker",
                "--scheduler-file",
                str(scheduler_file),
                "--host",
                "127.0.0.1",
                "--nworkers",
                "2",
                "--nthreads",
                "1",
                "--dashboard-address",
                "127.0.0.1:0",
                "--death-timeout",
                "30",
                *tls("worker"),
            ],
            "workers.log",
        )
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            if time.monotonic() > deadline or processes[0].poll() is not None:
                pytest.fail(
                    f"TLS scheduler did not start: {(run_dir / 'scheduler.log').read_text()}"
                )
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tls://127.0.0.1:")
        from distributed import Client

        with Client(address, security=_client_security(pki), timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in reversed(processes):
            _stop(process)


def _client_security(pki: Path) -> Any:
    return make_security(
        ca_file=pki / "ca.pem", cert=pki / "client.pem", key=pki / "client-key.pem"
    )


def _assert_same_nested(a: parcv.NestedResult, b: parcv.NestedResult) -> None:
    for metric, scores in a.outer_scores.items():
        np.testing.assert_array_equal(scores, b.outer_scores[metric])
    assert a.chosen_params == b.chosen_params
    for left, right in zip(a.inner_cv_results, b.inner_cv_results, strict=True):
        for key in (k for k in left if "test_" in k):
            np.testing.assert_array_equal(left[key], right[key])
    assert a.final is not None and b.final is not None
    assert a.final.best_params_ == b.final.best_params_
    np.testing.assert_array_equal(
        a.final.cv_results_["mean_test_score"], b.final.cv_results_["mean_test_score"]
    )


def test_make_certs_writes_private_keys(pki: Path) -> None:
    assert sorted(p.name for p in pki.iterdir()) == sorted(
        f"{name}{suffix}"
        for name in ("ca", "scheduler", "worker", "client")
        for suffix in (".pem", "-key.pem")
    )
    assert pki.stat().st_mode & 0o777 == 0o700
    for key in pki.glob("*-key.pem"):
        assert key.stat().st_mode & 0o777 == 0o600, key
    verify = subprocess.run(
        ["openssl", "verify", "-CAfile", str(pki / "ca.pem"), str(pki / "client.pem")],
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stderr


def test_make_certs_refuses_to_replace_a_ca(pki: Path) -> None:
    again = subprocess.run(["bash", str(MAKE_CERTS), str(pki)], capture_output=True, text=True)
    assert again.returncode == 1
    assert "--force" in again.stderr


@pytest.mark.cluster
def test_nested_cv_over_tls_equals_serial(tls_cluster: str, pki: Path) -> None:
    backend = parcv.DaskBackend(address=tls_cluster, security=_client_security(pki))
    remote = parcv.nested_cv(SVC(), GRID, X, Y, outer=3, inner=3, backend=backend, progress=False)
    serial = parcv.nested_cv(SVC(), GRID, X, Y, outer=3, inner=3, backend="serial", progress=False)
    _assert_same_nested(remote, serial)


def _run_cli(spec: Path, out: Path, *options: str) -> None:
    command = [
        sys.executable,
        "-m",
        "parcv.cli",
        "run",
        str(spec),
        "--out",
        str(out),
        "--quiet",
    ]
    done = subprocess.run(
        [*command, *options], env=_dask_env(), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-5000:]


@pytest.mark.cluster
@pytest.mark.slow
def test_parcv_run_with_tls_options_equals_serial(
    tls_cluster: str, pki: Path, tmp_path: Path
) -> None:
    _run_cli(
        SPEC,
        tmp_path / "tls",
        "--scheduler",
        tls_cluster,
        "--tls-ca-file",
        str(pki / "ca.pem"),
        "--tls-cert",
        str(pki / "client.pem"),
        "--tls-key",
        str(pki / "client-key.pem"),
    )
    _run_cli(SPEC, tmp_path / "serial", "--backend", "serial")
    got, want = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("tls", "serial"))
    assert got["outer_scores"] == want["outer_scores"]
    assert got["chosen_params"] == want["chosen_params"]
    # results.json holds summaries; the per-candidate tables come from the stores.
    a, b = (parcv.load(tmp_path / d / "store.sqlite") for d in ("tls", "serial"))
    for key in ("mean_test_accuracy", "split0_test_accuracy", "rank_test_accuracy"):
        np.testing.assert_array_equal(a.final.cv_results_[key], b.final.cv_results_[key])
    for left, right in zip(a.inner_cv_results, b.inner_cv_results, strict=True):
        np.testing.assert_array_equal(left["mean_test_accuracy"], right["mean_test_accuracy"])


def _refused(address: str, security: Any) -> None:
    """Connecting must fail quickly, with a clear error, before anything is submitted."""
    backend = parcv.DaskBackend(address=address, security=security, connect_timeout=CONNECT_TIMEOUT)
    start = time.monotonic()
    with pytest.raises(parcv.BackendError, match=re.escape(repr(address))):
        parcv.cross_validate(SVC(), X, Y, cv=3, backend=backend, progress=False)
    assert time.monotonic() - start < 3 * CONNECT_TIMEOUT


@pytest.mark.cluster
def test_client_without_certificate_is_refused(tls_cluster: str, pki: Path) -> None:
    _refused(tls_cluster, None)
    # A TLS client that trusts the CA but shows no certificate: the scheduler drops it.
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    context.check_hostname = False
    with pytest.raises((OSError, EOFError)):
        asyncio.run(_identity(tls_cluster, context))


async def _identity(address: str, context: ssl.SSLContext) -> object:
    from distributed.comm.core import connect

    comm = await connect(address, timeout=CONNECT_TIMEOUT, ssl_context=context)
    try:
        await comm.write({"op": "identity"})
        return await asyncio.wait_for(comm.read(), CONNECT_TIMEOUT)
    finally:
        comm.abort()


@pytest.mark.cluster
def test_client_with_certificate_of_another_ca_is_refused(
    tls_cluster: str, other_pki: Path, pki: Path
) -> None:
    # Another CA's client certificate, trusting that other CA...
    _refused(tls_cluster, _client_security(other_pki))
    # ...or trusting our CA but showing the other CA's certificate.
    from distributed.security import Security

    mixed = Security(
        require_encryption=True,
        tls_ca_file=str(pki / "ca.pem"),
        tls_client_cert=str(other_pki / "client.pem"),
        tls_client_key=str(other_pki / "client-key.pem"),
    )
    _refused(tls_cluster, mixed)


@pytest.mark.cluster
def test_plain_tcp_is_refused(tls_cluster: str) -> None:
    _refused(tls_cluster.replace("tls://", "tcp://"), None)


# A client of its own process: what it leaves behind when refused (a half-started Client,
# its IO-loop thread) cannot reach this test process, and a hang is a timeout, not a stall.
_ROGUE = """
import sys
from pathlib import Path
from distributed import Client
from parcv.cli.tls import make_security

address, marker, pki = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
security = None if not pki else make_security(
    ca_file=Path(pki[0]) / "ca.pem",
    cert=Path(pki[0]) / "client.pem",
    key=Path(pki[0]) / "client-key.pem",
)
try:
    with Client(address, security=security, timeout=%(timeout)r) as rogue:
        rogue.submit(marker.touch).result()
except Exception as err:
    print(f"refused: {type(err).__name__}: {err}")
    sys.exit(0)
print("connected")
sys.exit(1)
"""

_TASK_PREFIXES = """
import json
import sys
from pathlib import Path
from distributed import Client
from parcv.cli.tls import make_security

pki = Path(sys.argv[2])
security = make_security(
    ca_file=pki / "ca.pem", cert=pki / "client.pem", key=pki / "client-key.pem"
)
with Client(sys.argv[1], security=security, timeout=30) as client:
    # A lambda goes by value: the scheduler cannot import this script.
    prefixes = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    print(json.dumps(prefixes))
"""


def _python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        env=_dask_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.cluster
def test_refused_clients_ran_no_task(
    tls_cluster: str, pki: Path, other_pki: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    rogue = _ROGUE % {"timeout": CONNECT_TIMEOUT}
    for pki_args in ([], [str(other_pki)]):
        done = _python(rogue, tls_cluster, str(marker), *pki_args)
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        assert done.stdout.startswith("refused: "), done.stdout
    query = _python(_TASK_PREFIXES, tls_cluster, str(pki))
    assert query.returncode == 0, query.stderr[-3000:]
    prefixes = json.loads(query.stdout.strip().splitlines()[-1])
    assert not marker.exists()
    assert not [p for p in prefixes if "touch" in p]


def test_make_security_requires_encryption_for_every_role(pki: Path) -> None:
    security = _client_security(pki)
    assert security.require_encryption is True
    for role in ("client", "scheduler", "worker"):
        config = security.get_tls_config_for_role(role)
        assert config["ca_file"] == str((pki / "ca.pem").resolve())
        assert config["cert"] == str((pki / "client.pem").resolve())


def test_make_security_checks_its_files(pki: Path, other_pki: Path, tmp_path: Path) -> None:
    good = {"ca_file": pki / "ca.pem", "cert": pki / "client.pem", "key": pki / "client-key.pem"}
    with pytest.raises(FileNotFoundError, match=r"cert \(--tls-cert\) does not exist: .*nope\.pem"):
        make_security(**{**good, "cert": tmp_path / "nope.pem"})
    with pytest.raises(
        TypeError, match=r"ca_file \(--tls-ca-file\) must be a path to a PEM file; got None"
    ):
        make_security(**{**good, "ca_file": None})
    with pytest.raises(ValueError, match="are not a matching PEM certificate and private key"):
        make_security(**{**good, "key": other_pki / "client-key.pem"})
    not_pem = tmp_path / "ca.txt"
    not_pem.write_text("hello\n")
    with pytest.raises(ValueError, match=r"ca_file .* holds no PEM CA certificate"):
        make_security(**{**good, "ca_file": not_pem})
    open_key = tmp_path / "client-key.pem"
    shutil.copy(pki / "client-key.pem", open_key)
    open_key.chmod(0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        make_security(**{**good, "key": open_key})
