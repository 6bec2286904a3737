"""The backend of a spec's run: serial, local, a Dask scheduler, or an HPC cluster (+ TLS)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from parcv.cli.spec import MISSING, Spec, UsageError

__all__ = ["make_backend"]


def _optional(module: str, option: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:
            raise
        raise UsageError(
            f"{option} needs the module {module}, which this parcv installation "
            "does not have yet. Upgrade parcv, or run without it."
        ) from None


def _security(spec: Spec) -> Any:
    tls = spec.table("tls")
    if not tls:
        return None
    for name in ("ca_file", "cert", "key"):
        if name not in tls:
            flag = "--tls-ca-file" if name == "ca_file" else f"--tls-{name}"
            raise spec.error(
                f"tls.{name} ({flag})",
                MISSING,
                "a PEM file: TLS needs ca_file, cert and key together",
            )
    paths = {k: str(spec.base_dir / Path(v).expanduser()) for k, v in tls.items()}
    security = _optional("parcv.cli.tls", "[tls] / --tls-*")
    return security.make_security(ca_file=paths["ca_file"], cert=paths["cert"], key=paths["key"])


def _cluster_backend(spec: Spec, security: Any) -> tuple[Any, int | None, str]:
    run, cluster = spec.run, spec.table("cluster")
    for name in ("kind", "jobs"):
        if name not in cluster:
            allowed = "'slurm' or 'pbs'" if name == "kind" else "an int >= 1 (most batch jobs)"
            flag = "--cluster" if name == "kind" else "--jobs"
            raise spec.error(f"cluster.{name} ({flag})", MISSING, allowed)
    for name, value in (
        ("backend", run.backend if run.backend != "dask" else None),
        ("scheduler", run.scheduler),
        ("scheduler_file", run.scheduler_file),
        ("n_jobs", run.n_jobs),
    ):
        if value is not None:
            raise spec.error(
                f"run.{name} (--{name.replace('_', '-')})",
                value,
                "nothing: a [cluster] (--cluster) starts its own Dask workers",
                "Size the cluster with cluster.jobs/cores (--jobs/--cores).",
            )
    hpc = _optional("parcv.engine.backends.jobqueue", "[cluster] / --cluster")
    options = {
        k: cluster.get(k) for k in ("jobs", "cores", "memory", "walltime", "queue", "account")
    }
    backend = hpc.make_cluster_backend(cluster["kind"], security=security, **options)
    size = f"up to {options['jobs']} jobs x {options['cores'] or 'default'} cores"
    return backend, None, f"dask on a {cluster['kind']} cluster ({size})"


def _check_scheduler_file(spec: Spec) -> None:
    """A scheduler file that exists must be one (one still to be written is waited for)."""
    from parcv.engine.backends.dask import check_scheduler_file

    path = spec.run.scheduler_file
    if path is None or not Path(path).exists():
        return
    try:
        check_scheduler_file(path, "run.scheduler_file (--scheduler-file)")
    except ValueError as err:
        raise UsageError(f"{spec.source}: {err}") from None


def _workers(n_jobs: int | None) -> str:
    from parcv.engine.backends.local import check_n_jobs  # -1: every core, -2: all but one

    return "all cores as workers" if n_jobs is None else f"{check_n_jobs(n_jobs)} workers"


def _backend_name(spec: Spec) -> str:
    """The spec's ``run.backend``, or the one its scheduler options imply."""
    run = spec.run
    return run.backend or ("dask" if run.scheduler or run.scheduler_file else "local")


def runs_on_local_pool(spec: Spec) -> bool:
    """Whether the spec's units run on a local pool (no cluster, backend "local")."""
    return not spec.table("cluster") and _backend_name(spec) == "local"


def make_backend(
    spec: Spec, *, connect_timeout: float | None = None
) -> tuple[Any, int | None, str]:
    """Return (backend, n_jobs, description) from the spec's run, cluster and tls options.

    ``connect_timeout`` (seconds) is the Dask backend's: refused with any other.

    Examples
    --------
    >>> from parcv.cli.spec import parse_spec
    >>> spec = parse_spec('[data]\\nsource="sklearn:iris"\\n[estimator]\\nclass="a.B"\\n'
    ...                   '[run]\\nbackend="local"\\nn_jobs=2\\n')
    >>> make_backend(spec)
    ('local', 2, 'local (2 workers)')
    """
    run, security = spec.run, _security(spec)
    backend = _backend_name(spec)
    if connect_timeout is not None and (spec.table("cluster") or backend != "dask"):
        raise UsageError(
            f"--connect-timeout {connect_timeout:g} is for a Dask scheduler or cluster; the "
            f"backend here is {'a [cluster] (--cluster)' if spec.table('cluster') else backend!r}. "
            "Drop --connect-timeout, or pass --scheduler, --scheduler-file or --backend dask."
        )
    if spec.table("cluster"):
        return _cluster_backend(spec, security)
    if backend != "dask":
        for name, value in (
            ("scheduler", run.scheduler),
            ("scheduler_file", run.scheduler_file),
            ("tls", security),
        ):
            if value is not None:
                raise spec.error(
                    "run.backend (--backend)", backend, f"'dask' (or unset) with {name}"
                )
        workers = "1 worker" if backend == "serial" else _workers(run.n_jobs)
        return backend, run.n_jobs, f"{backend} ({workers})"
    return _dask_backend(spec, security, connect_timeout)


def _check_tls_files(spec: Spec, security: Any) -> None:
    """A ``tls://`` scheduler needs certificate files: refuse at once without any."""
    import dask.config

    address = str(spec.run.scheduler or "")
    configured = dask.config.get("distributed.comm.tls.ca-file", None)
    if address.startswith("tls://") and security is None and not configured:
        raise spec.error(
            "run.scheduler (--scheduler)",
            address,
            "a tls:// address together with TLS files",
            "Pass --tls-ca-file, --tls-cert and --tls-key (or a [tls] table with ca_file, cert "
            "and key; cluster/tls/make-certs.sh DIR makes them), or use a tcp:// address.",
        )


def _dask_backend(
    spec: Spec, security: Any, connect_timeout: float | None
) -> tuple[Any, int | None, str]:
    from parcv.engine.backends import DaskBackend
    from parcv.engine.backends.local import check_n_jobs

    run = spec.run
    remote = run.scheduler or run.scheduler_file
    if remote and run.n_jobs is not None:
        raise spec.error(
            "run.n_jobs (--n-jobs)",
            run.n_jobs,
            "nothing with a scheduler",
            "The scheduler's cluster has its own workers.",
        )
    _check_scheduler_file(spec)
    _check_tls_files(spec, security)
    options: dict[str, Any] = {"security": security}
    if connect_timeout is not None:
        options["connect_timeout"] = connect_timeout
    dask = DaskBackend(
        address=run.scheduler,
        scheduler_file=run.scheduler_file,
        # -1 (every core) is a count only once resolved
        n_workers=None if remote or run.n_jobs is None else check_n_jobs(run.n_jobs),
        **options,
    )
    size = "one per core" if run.n_jobs is None else check_n_jobs(run.n_jobs)
    where = f"at {remote}" if remote else f"local cluster, {size} workers"
    return dask, None, f"dask ({where})"
