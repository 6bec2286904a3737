"""A Dask worker computes only what its key says: one with other versions installed is refused.

A worker's versions are faked, without installing anything, by replacing
``installed_version`` inside its process (and putting it back after the test).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sklearn
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

import parcv
from parcv import DaskBackend, Halving
from parcv.engine.runner import distribution_versions, run_plan
from parcv.engine.work import run_units
from parcv.plan.build import build_plan
from parcv.plan.code import CodeEntry, Environment
from parcv.plan.data import check_dataset
from parcv.plan.records import Record
from parcv.store.readers import read_records

X = np.random.default_rng(0).normal(size=(60, 3))
Y = X @ np.array([1.0, -2.0, 0.5]) + np.random.default_rng(1).normal(size=60)
ALPHAS = {"alpha": [0.1, 1.0, 10.0]}
SKLEARN = sklearn.__version__


def _fake_versions(fake: dict[str, str]) -> None:
    """On a worker: report ``fake`` versions (the others as installed); count each lookup."""
    from parcv.engine.backends import _dask_executor as ex

    real = getattr(ex.installed_version, "real", ex.installed_version)
    calls: list[str] = []

    def lookup(name: str) -> str | None:
        calls.append(name)
        return fake[name] if name in fake else real(name)

    lookup.real, lookup.calls = real, calls  # type: ignore[attr-defined]
    ex.installed_version = lookup


def _real_versions() -> None:
    from parcv.engine.backends import _dask_executor as ex

    ex.installed_version = getattr(ex.installed_version, "real", ex.installed_version)


def _lookups() -> list[str]:
    from parcv.engine.backends import _dask_executor as ex

    return list(getattr(ex.installed_version, "calls", []))


@contextmanager
def _workers(cluster: Any) -> Iterator[tuple[Any, list[str]]]:
    """A client of ``cluster`` and its worker addresses; every worker's real lookup on exit."""
    from distributed import Client

    with Client(cluster, set_as_default=False) as client:
        try:
            yield client, sorted(client.nthreads())
        finally:
            client.run(_real_versions)


def _refused(address: str, here: str, keyed: str) -> str:
    """The refusal's words, as a pattern for ``pytest.raises``."""
    return re.escape(
        f"the Dask worker {address} has {here} where this run's keys were computed with "
        f"{keyed}: its records would be stored under keys that do not describe them. Install "
        "the same versions on the workers (or run the driver where the workers' environment "
        "is) and run again"
    )


def _search(cluster: Any, store: Path, halving: Halving | None = None) -> Any:
    backend = DaskBackend(cluster=cluster)
    return parcv.search(Ridge(), ALPHAS, X, Y, cv=KFold(3), halving=halving, backend=backend,
                        store=store)  # fmt: skip


@pytest.mark.cluster
def test_a_worker_with_other_versions_is_refused_naming_package_versions_and_worker(
    dask_cluster_1, tmp_path
):
    store = tmp_path / "run.sqlite"
    with _workers(dask_cluster_1) as (client, [address]):
        client.run(_fake_versions, {"scikit-learn": "0.0.1"})
        refused = _refused(address, "scikit-learn 0.0.1", SKLEARN)
        with pytest.raises(parcv.BackendError, match=refused) as info:
            _search(dask_cluster_1, store)
    # One message, once: not one per unit, nor the worker's exception chained under it.
    assert str(info.value).count("scikit-learn") == 1
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert len(read_records(store)) == 0  # not one record computed with the other version


@pytest.mark.cluster
def test_only_records_of_workers_with_the_keys_versions_are_stored(dask_cluster_2, tmp_path):
    store = tmp_path / "run.sqlite"
    with _workers(dask_cluster_2) as (client, [good, bad]):
        client.run(_fake_versions, {"numpy": "1.0.0", "scipy": "0.1"}, workers=[bad])
        pids = client.run(os.getpid)
        # Both named in one message, each beside its own.
        keyed = f"numpy {version('numpy')} and scipy {version('scipy')}"
        refused = _refused(bad, "numpy 1.0.0 and scipy 0.1", keyed)
        with pytest.raises(parcv.BackendError, match=refused):
            _search(dask_cluster_2, store)
    workers = {r.worker.rpartition(":")[2] for r in read_records(store).values()}
    assert workers <= {str(pids[good])}


@pytest.mark.cluster
def test_matching_versions_run_as_usual_each_worker_checking_once(dask_cluster_2):
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": list(np.logspace(-2, 2, 8))}, data, inner=3, outer=3)
    ref = run_plan(plan, data, parcv.SerialBackend())
    versions = {"scikit-learn": SKLEARN, "numpy": version("numpy")}
    with _workers(dask_cluster_2) as (client, _):
        client.run(_fake_versions, {})  # each worker reports its own versions, counted
        got = run_plan(plan, data, DaskBackend(cluster=dask_cluster_2), versions=versions)
        lookups = client.run(_lookups)
    assert {k: r.test_scores for k, r in got.items()} == {k: r.test_scores for k, r in ref.items()}
    # Dozens of chunks, yet each worker looked each distribution up once at most.
    assert all(set(Counter(names).values()) <= {1} for names in lookups.values())
    assert {name for names in lookups.values() for name in names} == set(versions)


@pytest.mark.cluster
def test_an_editable_install_is_compared_by_its_version_alone(dask_cluster_1):
    # A worker cannot digest the driver's files: the version before "+files." is compared.
    installed = version("parcv")
    same = Environment([CodeEntry("parcv", "editable", f"{installed}+files.0123abcd", "/src")])
    other = Environment([CodeEntry("parcv", "editable", "0.0.0+files.0123abcd", "/src")])
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), ALPHAS, data, inner=3)
    backend = DaskBackend(cluster=dask_cluster_1)
    assert run_plan(plan, data, backend, versions=distribution_versions([same]))
    with _workers(dask_cluster_1) as (_, [address]):
        refused = _refused(address, f"parcv {installed}", "0.0.0")
        with pytest.raises(parcv.BackendError, match=refused):
            run_plan(plan, data, backend, versions=distribution_versions([other]))
        # A distribution the worker lacks altogether.
        refused = _refused(address, "no parcv-made-up installed", "1.0")
        with pytest.raises(parcv.BackendError, match=refused):
            run_plan(plan, data, backend, versions={"parcv-made-up": "1.0"})


@pytest.mark.cluster
def test_a_run_in_rounds_checks_the_workers_too(dask_cluster_1, tmp_path):
    with _workers(dask_cluster_1) as (client, [address]):
        client.run(_fake_versions, {"scikit-learn": "0.0.1"})
        refused = _refused(address, "scikit-learn 0.0.1", SKLEARN)
        with pytest.raises(parcv.BackendError, match=refused):
            _search(dask_cluster_1, tmp_path / "run.sqlite", halving=Halving(random_state=0))


class _RefusedAfterOne:
    """Yields its first chunk's records, then fails as a Dask executor whose worker refused."""

    n_workers, chunk_seconds, chunk_rate, depth = 2, 0.0, math.inf, 2

    def __init__(self, plan, data):
        self.plan, self.data, self.queue = plan, data, {}

    def submit(self, units):
        self.queue[len(self.queue)] = units
        return len(self.queue) - 1

    def wait(self):
        yield 0, run_units(self.plan, self.data, self.queue.pop(0))
        raise parcv.BackendError("the Dask worker tcp://w has ...")

    def cancel(self):
        self.queue.clear()


class _RefusingBackend:
    @contextmanager
    def open(self, plan, data):
        yield _RefusedAfterOne(plan, data)


def test_records_finished_before_a_refusal_are_stored_first():
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), ALPHAS, data, inner=3)
    stored: list[Record] = []
    with pytest.raises(parcv.BackendError, match="tcp://w"):
        run_plan(plan, data, _RefusingBackend(), on_batch=stored.extend)
    assert [r.unit for r in stored] == [plan.units[0]]
