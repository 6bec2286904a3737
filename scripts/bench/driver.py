"""Benchmark parcv's driver at scale (issue 40): what one unit costs it, in CPU and memory.

The sweep is issue 40's: nested CV, 10 outer x 5 inner folds of C candidates plus the
all-data search and its final refit, 55 C + 11 units (C = 2,000: 110,011; C = 20,000:
1,100,011). Its estimator (``null_estimator.NullEstimator``) fits and scores in a few
microseconds with fixed numbers, so what is measured is the driver: planning, dispatching,
collecting, storing and putting the result together. Only parcv's public API and command
line are used, so the script measures any checkout (``--checkout NAME=PATH``, repeatable:
the child processes import parcv from PATH). Every measurement is a fresh process:

* the sweep, ``parcv.nested_cv(..., store=DIR/store.sqlite)`` (``--paths api``, the default;
  ``--call search``: ``parcv.search`` of C candidates x 5 folds, 5 C + 1 units, the whole
  call a user makes, as issue 50 measures it)
  or ``parcv run`` in-process (``--paths cli``: it also loads the store and writes the
  report), on the local pool of 2 workers or on a Dask cluster of 2 single-threaded worker
  processes that runs in a process of its own (its scheduler's CPU is not the driver's).
  The driver's CPU is ``time.process_time()`` of its process (every thread, no worker) over
  the call, imports and data loading excluded: CPU time hardly moves on a busy machine,
  wall time does. Also its peak RSS (``ru_maxrss``), units/s (units over the call's wall
  time) and the workers' and Dask scheduler's CPU;
* ``parcv report DIR`` then ``parcv.load(DIR/store.sqlite)``, each a process measured by
  ``os.wait4``: wall, CPU and peak RSS, imports included. The run directory's bytes per
  unit are counted after the report;
* the plan of 11,000,011 units (10 outer x 10 inner x 100,000 candidates drawn from a
  log-uniform): ``parcv inspect`` of its spec, and how long ``parcv run`` of it takes to
  store its first unit (then Ctrl-C), each under an address-space limit (``--memory-limit``)
  so a plan that would take the machine's memory fails instead.

``--fit-ms 1`` makes each fit keep a core busy 1 ms, as a cheap model's: parcv then sends
chunks of about 50 units to the local pool (200 to Dask) instead of thousands, and its
per-chunk costs show.
A sweep stopped by ``--timeout`` is interrupted (Ctrl-C, as a user would) and reported with
the units it stored (``parcv.load(..., partial=True)``) and the CPU per stored unit.

Run: git worktree add /tmp/before b2d12fc
     python scripts/bench/driver.py --checkout before=/tmp/before --checkout now=.
     python scripts/bench/driver.py --candidates 20000 --backends local --no-plan
     python scripts/bench/driver.py --quick                      (tiny sizes, a smoke run)
     python scripts/bench/driver.py --candidates 2000 --backends local --no-plan \\
         --profile /tmp/prof                 (a cProfile of each driver, its top printed)
     python scripts/bench/driver.py --show before.json now.json    (tables of --json files)
     python scripts/bench/driver.py --plan-only --checkout before=/tmp/before --checkout now=.
                    (issue 50: the 11M-unit plan alone, inspect and the first unit stored)
     python scripts/bench/driver.py --call search --split --candidates 20000 220000 \\
         --no-plan --checkout before=/tmp/before --checkout now=.
                    (issue 50: the whole call, its driver CPU split into plan, keys, store,
                     loop and results; "other" is the rest: checks, data, imports inside)
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
_CHECKOUT = "PARCV_BENCH_CHECKOUT"  # in a child: the checkout of parcv it imports
# Workers of each sweep (``--workers``; the children read it from their environment).
_WORKERS = "PARCV_BENCH_WORKERS"
N_WORKERS = int(os.environ.get(_WORKERS, "2"))
TARGET_US = 30.0  # driver CPU per unit
TARGET_PEAK_MB = 600.0  # driver peak RSS at 1.1M units
TARGET_PLAN = (30.0, 1024.0)  # parcv inspect of the 11M-unit plan: seconds, MB
TARGET_READ = (15.0, 1024.0)  # parcv report and parcv.load at 1.1M units: seconds, MB


def _paths(checkout: str, inherited: str) -> str:
    """``PYTHONPATH`` with ``checkout`` and this directory first (not this checkout's root)."""
    first = [checkout, str(HERE)]
    rest = [p for p in inherited.split(os.pathsep) if p and p not in (*first, str(ROOT))]
    return os.pathsep.join(first + rest)


if os.environ.get(_CHECKOUT):  # a child: parcv from its checkout, here and in its workers
    os.environ["PYTHONPATH"] = _paths(os.environ[_CHECKOUT], os.environ["PYTHONPATH"])
    sys.path[:] = os.environ["PYTHONPATH"].split(os.pathsep) + [
        p for p in sys.path if p not in (os.environ[_CHECKOUT], str(HERE), str(ROOT))
    ]


def n_units(n_candidates: int, inner: int = 5, call: str = "nested") -> int:
    """Units of 10-fold nested CV with the all-data search: fits, refits, the final refit.

    ``call="search"``: a search's, 5 folds of each candidate and the final refit.

    >>> n_units(2_000), n_units(20_000), n_units(100_000, inner=10)
    (110011, 1100011, 11000011)
    >>> n_units(20_000, call="search"), n_units(220_000, call="search")
    (100001, 1100001)
    """
    if call == "search":
        return 5 * n_candidates + 1
    return 11 * inner * n_candidates + 11


def spec_text(
    n_candidates: int,
    *,
    inner: int = 5,
    random: bool = False,
    fit_seconds: float = 0.0,
    call: str = "nested",
) -> str:
    """The sweep's spec: a grid of ``n_candidates`` alphas, or as many draws (``random``)."""
    folds = "cv = 5" if call == "search" else f"outer = 10\ninner = {inner}"
    if random:
        space = f"alpha = {{ loguniform = [0.001, 1000.0] }}\n\n[search]\nn_iter = {n_candidates}"
    else:
        space = f"alpha = {{ logspace = [-3, 3, {n_candidates}] }}"
    return (
        'name = "driver-bench"\n\n[data]\nsource = "sklearn:diabetes"\n\n'
        f'[estimator]\nclass = "null_estimator.NullEstimator"\n'
        f"params = {{ fit_seconds = {fit_seconds} }}\n\n"
        f"[space]\n{space}\n\n[cv]\n{folds}\n\n[run]\nseed = 0\n"
    )


# ---------------------------------------------------------------------------------------------
# Child processes (``--child``): each writes what it measured to ``--result`` as JSON.


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _workers_cpu() -> float:
    """CPU seconds of this process's workers: those it reaped and those still alive."""
    import psutil

    total = sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])
    for child in psutil.Process().children(recursive=True):
        with suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total


# The driver's stages ``--split`` times (module, function): each stage's own CPU, the stages
# it calls left out. Planning, identity (content keys and the plan's fingerprint), the
# store (opening it: the plan's description and folds; then each batch written), the loop
# (dispatching, collecting, progress), and putting the result together. A checkout without
# one of them is timed without it.
_STAGES = {
    "plan": [("parcv.api", "build_plan"), ("parcv.cli.sweep", "build_plan")],
    "keys": [("parcv.engine.session", "content_keys"), ("parcv.engine.session", "fingerprint")],
    "store": [("parcv.engine.session", "_open")],
    "loop": [("parcv.engine.session", "run_plan")],
    "results": [
        ("parcv.api", "make_search_result"),
        ("parcv.api", "make_nested_result"),
        ("parcv.api", "load"),
    ],
}


class _Split:
    """CPU seconds (``time.process_time``) of each stage, exclusive of the stages inside it."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(_STAGES, 0.0)
        self._inner: list[float] = []  # per open stage: CPU its inner stages took

    def timed(self, stage: str, func: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            self._inner.append(0.0)
            try:
                return func(*args, **kwargs)
            finally:
                took = time.process_time() - start
                self.spent[stage] += took - self._inner.pop()
                if self._inner:
                    self._inner[-1] += took

        return wrapper

    def install(self) -> None:
        """Wrap each stage where the driver calls it, and the opened store's ``add``."""
        import importlib

        for stage, places in _STAGES.items():
            for module_name, name in places:
                module = importlib.import_module(module_name)
                if hasattr(module, name):
                    setattr(module, name, self.timed(stage, getattr(module, name)))
        session = importlib.import_module("parcv.engine.session")
        opened = session._open

        def open_and_time_writes(*args: Any, **kwargs: Any) -> Any:
            store = opened(*args, **kwargs)
            kind = type(store)
            if not getattr(kind.add, "_split", False):
                kind.add = self.timed("store", kind.add)
                kind.add._split = True
            return store

        session._open = open_and_time_writes


def _child_run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the sweep once (``nested_cv`` or ``parcv run``); its CPU, wall time and peak RSS."""
    import numpy as np
    from null_estimator import NullEstimator
    from sklearn.datasets import load_diabetes

    import parcv
    from parcv.cli import main

    if args.backend == "dask":
        import distributed  # noqa: F401  (an import, not the driver's work)
    X, y = load_diabetes(return_X_y=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend: Any = (
        parcv.LocalBackend(n_jobs=N_WORKERS)
        if args.backend == "local"
        else parcv.DaskBackend(address=args.scheduler)
    )
    split = _Split() if args.split else None
    if split is not None:
        split.install()
    profile = None
    if args.profile_out:
        import cProfile

        profile = cProfile.Profile()  # wall clock: thread_time (a syscall) costs 6x
    base_mb, interrupted, rc = _peak_mb(), False, 0
    cpu, wall = time.process_time(), time.perf_counter()
    if profile is not None:
        profile.enable()
    try:
        if args.path == "cli":
            rc = main(
                [
                    "run",
                    args.spec,
                    "--out",
                    str(out),
                    "--backend",
                    args.backend,
                    "--quiet",
                    "--overwrite",
                    *(
                        ["--n-jobs", str(N_WORKERS)]
                        if args.backend == "local"
                        else ["--scheduler", args.scheduler]
                    ),
                ]
            )
        elif args.call == "search":
            space = {"alpha": list(np.logspace(-3, 3, args.candidates))}
            parcv.search(
                NullEstimator(fit_seconds=args.fit_ms / 1e3),
                space,
                X,
                y,
                cv=5,
                backend=backend,
                store=out / "store.sqlite",
                progress=False,
            )
        else:
            space = {"alpha": list(np.logspace(-3, 3, args.candidates))}
            parcv.nested_cv(
                NullEstimator(fit_seconds=args.fit_ms / 1e3),
                space,
                X,
                y,
                outer=10,
                inner=5,
                backend=backend,
                store=out / "store.sqlite",
                progress=False,
            )
    except KeyboardInterrupt:  # --timeout: Ctrl-C, the stored units are kept
        interrupted = True
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profile is not None:
        profile.disable()
        profile.dump_stats(args.profile_out)
    return {
        "cpu": cpu,
        "wall": wall,
        "peak_mb": _peak_mb(),
        "base_mb": base_mb,
        "rc": rc,
        "interrupted": interrupted,
        "workers_cpu": _workers_cpu(),
        "parcv": parcv.__file__,
        **({} if split is None else {"split": split.spent}),
    }


def _child_load(args: argparse.Namespace) -> dict[str, Any]:
    """``parcv.load`` the store; if the run did not finish, how many units it stored."""
    import parcv

    try:
        parcv.load(args.out)
    except parcv.UnfinishedRunError:
        partial: Any = parcv.load(args.out, partial=True)
        return {"n_done": partial.n_done, "finished": False}
    return {"finished": True}


def _child_cluster(args: argparse.Namespace) -> None:
    """A Dask scheduler here and ``N_WORKERS`` single-threaded workers beside it; stops when
    stdin closes.

    The workers and their nannies run in a ``dask worker`` process of their own (a child of
    this one), so this process's CPU is the scheduler's alone: a ``LocalCluster`` would run
    the nannies in the scheduler's process and event loop. As the cluster parcv starts for
    itself: the workers' profiler off, no Active Memory Manager.
    """
    import dask
    from distributed import Client, LocalCluster

    config = {"distributed.scheduler.active-memory-manager.start": False}
    with dask.config.set(config):
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=0, processes=True, dashboard_address=None
        )
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED="False")
    workers = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_worker",
            cluster.scheduler_address,
            "--nworkers",
            str(N_WORKERS),
            "--nthreads",
            "1",
            "--no-dashboard",
        ],
        env=env,
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    with Client(cluster) as client:  # type: ignore[no-untyped-call]
        client.wait_for_workers(N_WORKERS, timeout=120)
    Path(args.out).write_text(f"{cluster.scheduler_address} {workers.pid}")
    sys.stdin.read()
    workers.terminate()
    workers.wait(timeout=60)
    cluster.close()


# ---------------------------------------------------------------------------------------------
# The parent: starts the children and measures them from outside.


@dataclass(frozen=True)
class Usage:
    """What a child cost (``os.wait4`` of it alone): wall, CPU, peak RSS; its exit status."""

    wall: float
    cpu: float
    peak_mb: float
    rc: int
    stopped: bool  # interrupted by ``stop_when`` or past its timeout
    tail: str


def _env(checkout: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore", **{_CHECKOUT: str(checkout)})
    env["PYTHONPATH"] = _paths(str(checkout), env.get("PYTHONPATH", ""))
    return env


def _child(
    cmd: list[str],
    checkout: Path,
    work: Path,
    *,
    timeout: float,
    memory_gb: float | None = None,
    stop_when: Callable[[], bool] | None = None,
) -> Usage:
    """Run ``cmd`` (in ``work``, a session of its own) with ``checkout``'s parcv; measure it.

    Once ``stop_when()`` is true or past ``timeout`` (polled every 0.2 s), the child gets
    SIGINT (Ctrl-C), and its process group SIGKILL 60 s later if it is still there.
    """
    size = None if memory_gb is None else int(memory_gb * 2**30)

    def limit() -> None:
        if size is not None:
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            env=_env(checkout),
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            preexec_fn=limit,
        )
        stopped = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter()
            if stopped is None and (now > start + timeout or (stop_when and stop_when())):
                os.kill(proc.pid, signal.SIGINT)
                stopped = now
            if stopped is not None and now > stopped + 60:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.2)
        wall = time.perf_counter() - start
        with suppress(ProcessLookupError):  # what it left behind (a pool's workers)
            os.killpg(proc.pid, signal.SIGKILL)
        err.seek(0)
        tail = err.read().decode(errors="replace")[-1500:]
    return Usage(
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        os.waitstatus_to_exitcode(status),
        stopped is not None,
        tail,
    )


def _me(mode: str, result: Path, *extra: str) -> list[str]:
    return [sys.executable, __file__, "--child", mode, "--result", str(result), *extra]


def _cpu_of(pid: int) -> tuple[float, float]:
    """CPU seconds of process ``pid`` itself and of its descendants."""
    import psutil

    me = psutil.Process(pid)
    kids = 0.0
    for child in me.children(recursive=True):
        with suppress(psutil.Error):
            kids += sum(child.cpu_times()[:2])
    return sum(me.cpu_times()[:2]), kids


class Cluster:
    """A Dask cluster in a child process running ``checkout``'s parcv (``_child_cluster``):
    its ``address``, and ``workers``, the pid of its ``dask worker`` process (the nannies;
    the workers are its children)."""

    def __init__(self, checkout: Path, work: Path) -> None:
        address = work / "scheduler.txt"
        address.unlink(missing_ok=True)
        cmd = [sys.executable, __file__, "--child", "cluster", "--out", str(address)]
        self.proc = subprocess.Popen(
            cmd,
            env=_env(checkout),
            cwd=work,
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.perf_counter() + 120
        while not (address.is_file() and address.read_text()):
            if self.proc.poll() is not None or time.perf_counter() > deadline:
                self.close()
                raise RuntimeError("the Dask cluster did not start")
            time.sleep(0.2)
        self.address, pid = address.read_text().split()
        self.workers = int(pid)

    def close(self) -> None:
        with suppress(OSError, subprocess.TimeoutExpired):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=60)
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)


def _read(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text())) if path.is_file() else {}


def measure_run(
    checkout: Path,
    work: Path,
    label: str,
    *,
    path: str,
    backend: str,
    n_candidates: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One sweep by ``checkout``'s parcv, then ``parcv report`` and ``parcv.load`` of it."""
    out, result = work / f"run-{label}", work / f"{label}.json"
    shutil.rmtree(out, ignore_errors=True)
    result.unlink(missing_ok=True)
    spec = work / f"sweep-{n_candidates}.toml"
    spec.write_text(spec_text(n_candidates, fit_seconds=args.fit_ms / 1e3, call=args.call))
    cmd = _me(
        "run",
        result,
        "--path",
        path,
        "--backend",
        backend,
        "--candidates",
        str(n_candidates),
        "--fit-ms",
        str(args.fit_ms),
        "--call",
        args.call,
        *(["--split"] if args.split else []),
        "--spec",
        str(spec),
        "--out",
        str(out),
    )
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        cmd += ["--profile-out", str(args.profile / f"{label}.pstats")]
    row: dict[str, Any] = {
        "checkout": label.split(":")[0],
        "path": path,
        "backend": backend,
        "units": n_units(n_candidates, call=args.call),
        "call": args.call,
        "fit_ms": args.fit_ms,
        "workers": args.workers,
    }
    cluster = Cluster(checkout, work) if backend == "dask" else None
    try:
        if cluster is not None:
            cmd += ["--scheduler", cluster.address]
            before = _cpu_of(cluster.proc.pid)[0], *_cpu_of(cluster.workers)
        usage = _child(cmd, checkout, work, timeout=args.timeout)
        if cluster is not None:
            after = _cpu_of(cluster.proc.pid)[0], *_cpu_of(cluster.workers)
            row["scheduler_cpu"] = after[0] - before[0]
            row["nannies_cpu"] = after[1] - before[1]
            row["workers_cpu"] = after[2] - before[2]
    finally:
        if cluster is not None:
            cluster.close()
    row["driver"] = _read(result)
    row["usage"] = asdict(usage)
    store = out / "store.sqlite"
    if not row["driver"] or row["driver"]["rc"] or not store.is_file():
        row["failed"] = f"rc {usage.rc}: {usage.tail[-600:]}"
        return row
    load = _child(
        _me("load", work / "load.json", "--out", str(store)), checkout, work, timeout=args.timeout
    )
    row["load"] = {**asdict(load), **_read(work / "load.json")}
    if row["load"].get("finished") and not row["driver"]["interrupted"]:
        report = [sys.executable, "-m", "parcv.cli", "report", str(out)]
        row["report"] = asdict(_child(report, checkout, work, timeout=args.timeout))
    row["dir_bytes"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return row


def _first_record(store: Path) -> bool:
    """Whether the store holds a record yet: a ``records`` row, or a chunk (schema 6 on)."""
    if not store.is_file():
        return False
    with suppress(sqlite3.Error), closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as c:
        tables = {row[0] for row in c.execute("SELECT name FROM sqlite_master")}
        return any(
            c.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None
            for table in ("records", "chunks")
            if table in tables
        )
    return False


def measure_plan(
    checkout: Path, work: Path, label: str, *, n_candidates: int, args: argparse.Namespace
) -> dict[str, Any]:
    """The big plan: ``parcv inspect`` of its spec, and a run of it until its first unit."""
    spec = work / f"plan-{n_candidates}.toml"
    spec.write_text(spec_text(n_candidates, inner=10, random=True))
    out = work / f"plan-run-{label}"
    shutil.rmtree(out, ignore_errors=True)
    parcv = [sys.executable, "-m", "parcv.cli"]
    limit = {"timeout": args.plan_timeout, "memory_gb": args.memory_limit}
    inspect = _child([*parcv, "inspect", str(spec)], checkout, work, **limit)
    row = {"checkout": label, "units": n_units(n_candidates, inner=10), "inspect": asdict(inspect)}
    first: list[float] = []
    start = time.perf_counter()

    def stored() -> bool:
        if not first and _first_record(out / "store.sqlite"):
            first.append(time.perf_counter() - start)
        return bool(first)

    run = _child(
        [
            *parcv,
            "run",
            str(spec),
            "--out",
            str(out),
            "--backend",
            "local",
            "--n-jobs",
            str(N_WORKERS),
            "--quiet",
        ],
        checkout,
        work,
        stop_when=stored,
        **limit,
    )
    row["first_unit"] = {**asdict(run), "first_s": first[0] if first else None}
    shutil.rmtree(out, ignore_errors=True)
    return row


# ---------------------------------------------------------------------------------------------
# The tables.


def _run_metrics(row: dict[str, Any]) -> dict[str, float | None]:
    """The printed numbers of one sweep (None: not measured)."""
    driver = row["driver"]
    done = row["units"] if row["load"].get("finished") else row["load"].get("n_done")
    if not done:
        return {"units stored": done}
    out: dict[str, float | None] = {
        "units stored": done,
        "driver CPU (us/unit)": 1e6 * driver["cpu"] / done,
        "driver peak RSS (MB)": driver["peak_mb"],
        "  of which before the call (MB)": driver["base_mb"],
        "units/s": done / driver["wall"],
        "wall (s)": driver["wall"],
        "workers CPU (us/unit)": 1e6 * row.get("workers_cpu", driver["workers_cpu"]) / done,
        "workers busy (% of wall x workers)": 100
        * row.get("workers_cpu", driver["workers_cpu"])
        / (driver["wall"] * row.get("workers", N_WORKERS)),
        "Dask scheduler CPU (us/unit)": 1e6 * row["scheduler_cpu"] / done
        if "scheduler_cpu" in row
        else None,
        "Dask scheduler CPU (% of wall)": 100 * row["scheduler_cpu"] / driver["wall"]
        if "scheduler_cpu" in row
        else None,
        "Dask nannies CPU (us/unit)": 1e6 * row["nannies_cpu"] / done
        if "nannies_cpu" in row
        else None,
        "run directory (B/unit)": row["dir_bytes"] / done,
    }
    for stage, cpu in driver.get("split", {}).items():
        out[f"  {stage} (us/unit)"] = 1e6 * cpu / done
    if "split" in driver:
        out["  other (us/unit)"] = 1e6 * (driver["cpu"] - sum(driver["split"].values())) / done
    for name, part in (("parcv report", row.get("report")), ("parcv.load", row["load"])):
        if part is not None and not part["rc"]:
            out[f"{name} wall (s)"] = part["wall"]
            out[f"{name} CPU (s)"] = part["cpu"]
            out[f"{name} peak RSS (MB)"] = part["peak_mb"]
    return out


def _plan_metrics(row: dict[str, Any]) -> dict[str, float | None]:
    inspect, run = row["inspect"], row["first_unit"]
    ok = not inspect["rc"]
    return {
        "parcv inspect wall (s)": inspect["wall"] if ok else None,
        "parcv inspect CPU (s)": inspect["cpu"] if ok else None,
        "parcv inspect peak RSS (MB)": inspect["peak_mb"] if ok else None,
        "parcv run: first unit stored after (s)": run["first_s"],
        "parcv run: stopped or failed after (s)": run["wall"],
        "parcv run: exit status (130: Ctrl-C)": run["rc"],
        "parcv run: peak RSS (MB)": run["peak_mb"],
    }


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _table(title: str, names: list[str], rows: dict[str, list[float | None]]) -> list[str]:
    """A markdown table: a column per checkout, and the last over the first."""
    ratio = len(names) > 1
    head = ["", *names, *([f"{names[-1]}/{names[0]}"] if ratio else [])]
    lines = [f"{title}\n", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for metric, values in rows.items():
        cells = [metric, *(_fmt(v) for v in values)]
        if ratio:
            first, last = values[0], values[-1]
            cells.append(f"{last / first:.2f}" if first and last is not None else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def print_tables(runs: list[dict[str, Any]], plans: list[dict[str, Any]], names: list[str]) -> None:
    groups: dict[tuple[int, str, str], dict[str, dict[str, Any]]] = {}
    for row in runs:
        groups.setdefault((row["units"], row["backend"], row["path"]), {})[row["checkout"]] = row
    for (units, backend, path), by_name in groups.items():
        call = next(iter(by_name.values())).get("call", "nested")
        how = (
            f"parcv.{'search' if call == 'search' else 'nested_cv'}"
            if path == "api"
            else "parcv run"
        )
        where = "local pool" if backend == "local" else "Dask"
        metrics = {n: _run_metrics(r) for n, r in by_name.items() if "failed" not in r}
        for n, r in by_name.items():
            if "failed" in r:
                print(f"!! {n} failed: {r['failed']}")
            elif r["driver"]["interrupted"]:
                print(f"!! {n}: stopped after --timeout; per stored unit")
        keys = list(next((m for m in metrics.values() if len(m) > 1), {"units stored": None}))
        table = {k: [metrics.get(n, {}).get(k) for n in names] for k in keys}
        fit_ms = next(iter(by_name.values())).get("fit_ms", 0)
        fits = f"fits of {fit_ms} ms" if fit_ms else "null fits"
        title = f"{units:,} units, {how}, {where}, {N_WORKERS} workers, {fits}"
        print("\n".join(_table(title, names, table)), end="\n\n")
    if plans:
        by_name = {row["checkout"]: _plan_metrics(row) for row in plans}
        keys = list(next(iter(by_name.values())))
        table = {k: [by_name.get(n, {}).get(k) for n in names] for k in keys}
        draws = (plans[0]["units"] - 11) // 110
        title = f"the plan of {plans[0]['units']:,} units ({draws:,} draws x 10 outer x 10 inner)"
        print("\n".join(_table(title, names, table)), end="\n\n")
        for row in plans:
            for part in ("inspect", "first_unit"):
                if row[part]["rc"] and not (part == "first_unit" and row[part]["first_s"]):
                    print(
                        f"!! {row['checkout']} {part}: rc {row[part]['rc']} after "
                        f"{row[part]['wall']:.0f} s (stopped: {row[part]['stopped']}; a "
                        f"MemoryError is --memory-limit): {row[part]['tail'][-300:]}"
                    )


def print_targets(runs: list[dict[str, Any]], plans: list[dict[str, Any]], name: str) -> None:
    """Issue 40's targets, on checkout ``name`` at its largest sweep (and its plan)."""
    mine = [
        m
        for r in runs
        if r["checkout"] == name and "failed" not in r
        for m in [_run_metrics(r)]
        if "driver CPU (us/unit)" in m
    ]
    if mine:
        big = max(int(m["units stored"] or 0) for m in mine)
        at = [m for m in mine if m["units stored"] == big]
        us = max(m["driver CPU (us/unit)"] or 0.0 for m in at)
        peak = max(m["driver peak RSS (MB)"] or 0.0 for m in at)
        print(
            f"targets ({name}, {big:,} units): driver CPU {us:.0f} us/unit (<= {TARGET_US:.0f}"
            f"); driver peak {peak:.0f} MB (<= {TARGET_PEAK_MB:.0f} at 1.1M units)"
        )
        for what in ("parcv report", "parcv.load"):
            walls = [m[f"{what} wall (s)"] or 0.0 for m in at if f"{what} wall (s)" in m]
            peaks = [m[f"{what} peak RSS (MB)"] or 0.0 for m in at if f"{what} wall (s)" in m]
            if walls:
                print(
                    f"  {what}: {max(walls):.1f} s, {max(peaks):.0f} MB (<= "
                    f"{TARGET_READ[0]:.0f} s, {TARGET_READ[1]:.0f} MB at 1.1M units)"
                )
    for row in plans:
        if row["checkout"] == name and not row["inspect"]["rc"]:
            print(
                f"  plan of {row['units']:,} units: parcv inspect {row['inspect']['wall']:.1f} "
                f"s, {row['inspect']['peak_mb']:.0f} MB (< {TARGET_PLAN[0]:.0f} s, "
                f"{TARGET_PLAN[1]:.0f} MB)"
            )


def print_profile(path: Path, top: int = 25) -> None:
    import pstats

    for key in ("cumulative", "tottime"):
        print(f"-- {path.name}: top {top} by {key} (the main thread, wall clock)")
        pstats.Stats(str(path)).sort_stats(key).print_stats(top)


def show(paths: list[Path]) -> None:
    """Print the tables of measurements saved by ``--json`` (one run, or several merged)."""
    saved = [json.loads(path.read_text()) for path in paths]
    runs = [row for one in saved for row in one["runs"]]
    plans = [row for one in saved for row in one["plans"]]
    names = list(dict.fromkeys(row["checkout"] for row in [*runs, *plans]))
    print_tables(runs, plans, names)
    print_targets(runs, plans, names[-1])


def _checkouts(given: list[str]) -> list[tuple[str, Path]]:
    out = []
    for item in given or [f"now={ROOT}"]:
        name, sep, path = item.partition("=")
        root = Path(path).expanduser().resolve()
        if not sep or not name or ":" in name or not (root / "parcv" / "__init__.py").is_file():
            raise SystemExit(
                f"--checkout: expected NAME=PATH (a checkout holding parcv/, a "
                f"NAME without ':'); got {item!r}"
            )
        out.append((name, root))
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add(
        "--checkout",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a checkout of parcv to measure (repeatable; default: this one)",
    )
    add(
        "--candidates",
        type=int,
        nargs="+",
        default=[2_000, 20_000],
        help="sweep sizes in candidates (55 C + 11 units; default 2000 20000)",
    )
    add("--backends", nargs="+", choices=["local", "dask"], default=["local", "dask"])
    add("--workers", type=int, default=N_WORKERS, help="workers of each sweep (default 2)")
    add(
        "--paths",
        nargs="+",
        choices=["api", "cli"],
        default=["api"],
        help="api: parcv.nested_cv; cli: parcv run (with its report)",
    )
    add("--plan-candidates", type=int, default=100_000, help="the big plan's draws")
    add("--no-plan", dest="plan", action="store_false", help="leave the big plan out")
    add("--plan-only", action="store_true", help="only the big plan: no sweep")
    add(
        "--memory-limit",
        type=float,
        default=4.0,
        metavar="GB",
        help="address space of the big plan's processes (default 4)",
    )
    add("--plan-timeout", type=float, default=300.0, help="seconds per big-plan process")
    add(
        "--timeout",
        type=float,
        default=3600.0,
        help="seconds per sweep; then Ctrl-C, and the units it stored are reported",
    )
    add(
        "--fit-ms",
        type=float,
        default=0.0,
        help="each fit keeps a core busy this long (1: as a cheap model; chunks as small)",
    )
    add(
        "--call",
        choices=["nested", "search"],
        default="nested",
        help="nested: 10x5 nested CV (55 C + 11 units); search: parcv.search, cv=5 (5 C + 1)",
    )
    add(
        "--split",
        action="store_true",
        help="time the driver's stages (plan, keys, store, loop, results) apart",
    )
    add("--quick", action="store_true", help="tiny sizes, a smoke run")
    add("--json", type=Path, help="also write every measurement here")
    add(
        "--show",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="print the tables of measurements written before by --json, and exit",
    )
    add("--keep", type=Path, help="work (and keep the run directories) here")
    add(
        "--profile",
        type=Path,
        metavar="DIR",
        help="write a cProfile (pstats) of each sweep's driver here; print its top",
    )
    add("--child", choices=["run", "load", "cluster"], help=argparse.SUPPRESS)
    for name in (
        "--result",
        "--path",
        "--backend",
        "--spec",
        "--out",
        "--scheduler",
        "--profile-out",
    ):
        add(name, help=argparse.SUPPRESS)
    return parser


def main() -> int:
    global N_WORKERS
    args = _parser().parse_args()
    N_WORKERS = args.workers
    os.environ[_WORKERS] = str(args.workers)  # the children's
    if args.child == "cluster":
        _child_cluster(args)
        return 0
    if args.child:
        args.candidates = args.candidates[0]
        child = _child_run if args.child == "run" else _child_load
        Path(args.result).write_text(json.dumps(child(args)))
        return 0
    if args.show:
        show(args.show)
        return 0
    if args.quick:
        args.candidates, args.plan_candidates = [4], 20
    if args.plan_only:
        args.candidates, args.plan = [], True
    checkouts = _checkouts(args.checkout)
    names = [n for n, _ in checkouts]
    work = (args.keep or Path(tempfile.mkdtemp(prefix="parcv-driver-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    plans: list[dict[str, Any]] = []
    print(f"checkouts: {', '.join(f'{n}={p}' for n, p in checkouts)}; work in {work}", flush=True)

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps({"runs": runs, "plans": plans}, indent=1))

    for n_candidates in args.candidates:
        for backend in args.backends:
            for path in args.paths:
                for name, root in checkouts:
                    label = f"{name}:{path}-{backend}-{n_units(n_candidates, call=args.call)}"
                    row = measure_run(
                        root,
                        work,
                        label,
                        path=path,
                        backend=backend,
                        n_candidates=n_candidates,
                        args=args,
                    )
                    runs.append(row)
                    save()
                    cpu = row["driver"].get("cpu")
                    print(
                        f"[{label}] {row['usage']['wall']:.0f} s, driver CPU "
                        f"{'-' if cpu is None else f'{cpu:.1f} s'}"
                        f"{'; FAILED' if 'failed' in row else ''}",
                        flush=True,
                    )
    if args.plan:
        for name, root in checkouts:
            plans.append(
                measure_plan(root, work, name, n_candidates=args.plan_candidates, args=args)
            )
            save()
            print(f"[{name}:plan] inspect rc {plans[-1]['inspect']['rc']}", flush=True)
    print()
    print_tables(runs, plans, names)
    print_targets(runs, plans, names[-1])
    load = os.getloadavg()
    print(
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores "
        "(wall times include waiting for a core; CPU times do not)"
    )
    if args.profile:
        for prof in sorted(args.profile.glob("*.pstats")):
            print_profile(prof)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any("failed" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
