"""The loopback ``LocalCluster`` parcv starts: its nannies restart workers as long as it lives.

dask's ``LocalCluster`` closes a nanny for good when the worker it restarted
has not registered within ``distributed.deploy.lost-worker-timeout`` (15 s) of
the death. On a loaded machine a restart takes longer (a new process imports
distributed, numpy and scikit-learn on a busy core), so two workers killed at
once, or a candidate that kills every worker it touches, ended the run. The
cluster parcv starts keeps every nanny for the whole run, and the executor waits
for a worker as long as a nanny is starting one (:func:`worker_on_its_way`).
Imported only when a cluster starts: it imports ``distributed``.
"""

from __future__ import annotations

from typing import Any

import dask
from distributed import LocalCluster, Nanny
from distributed.core import Status
from distributed.deploy.cluster import Cluster

__all__ = ["start_local_cluster", "worker_on_its_way"]

# Worker processes of one thread, on loopback, no dashboard.
_OPTIONS: dict[str, Any] = dict(
    threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
)
# ... and without dask's statistical profiler: every 10 ms it walks the task thread's stack
# on the worker's event loop, holding the GIL. On ~1 ms fits (W2) it made each fit 15-25 %
# slower (a Ridge fit took 1.46-1.49x the driver's time with it, 1.18-1.34x without).
_CONFIG: dict[str, Any] = {"distributed.worker.profile.enabled": False}
_FAILURES = "distributed.scheduler.allowed-failures"


class _KeptNannies(LocalCluster):
    """A ``LocalCluster`` that never closes a nanny whose worker died: it restarts it.

    ``SpecCluster`` closes the nanny of a removed worker ``lost-worker-timeout``
    later unless a worker of the same name registered by then; here a removal
    only updates the cluster's list of workers, as ``Cluster`` does.
    """

    def _update_worker_status(self, op: str, msg: Any) -> None:
        if op == "remove":
            Cluster._update_worker_status(self, op, msg)  # type: ignore[no-untyped-call]
        else:
            super()._update_worker_status(op, msg)  # type: ignore[no-untyped-call]


def start_local_cluster(n_workers: int, *, max_crashes: int, security: Any = None) -> Any:
    """Start the loopback cluster parcv runs on when given no other.

    The scheduler counts the workers a task may kill before it fails with
    ``KilledWorker`` (``max_crashes``); its HTTP server (health, metrics) listens
    on a free port, never 8787.
    """
    # The nannies hand the config to their workers, also to those they restart.
    with dask.config.set({**_CONFIG, _FAILURES: max_crashes - 1}):
        return _KeptNannies(  # type: ignore[no-untyped-call]
            n_workers=n_workers,
            security=security,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            **_OPTIONS,
        )


def worker_on_its_way(cluster: Any) -> bool:
    """Whether a nanny of ``cluster`` (in this process) holds a live worker process.

    Starting (a restart) or running but not registered yet: a worker will come,
    however long that takes. False for clusters without nannies here (a
    scheduler elsewhere, batch jobs) and when every nanny's start failed.
    """
    try:
        nannies = list(getattr(cluster, "workers", {}).values())
    except Exception:  # not a dict of workers: nothing here to ask
        return False
    for nanny in nannies:
        if not isinstance(nanny, Nanny) or nanny.status != Status.running:
            continue
        process = nanny.process
        if process is not None and process.is_alive():  # type: ignore[no-untyped-call]
            return True
    return False
