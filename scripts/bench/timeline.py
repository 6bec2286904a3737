"""Where a parcv run's wall time goes, worker by worker, from its records' timestamps.

Runs one workload with parcv (local pool or Dask cluster) a few times back to back on
warm workers. For each run it prints the wall time (and W3's efficiency), then per
worker: when its first unit started, how many units it ran, when its last one ended and
the idle gaps between them (ms from the call). Last comes the bound of the waves: the
workers that run the most units end no earlier than the earliest start plus that many
units of the run's mean duration.

    python scripts/bench/timeline.py W3 --runs 3
    python scripts/bench/timeline.py W3 --backend dask
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import contextlib
import itertools
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WorkerSpan:
    """One worker's share of a run, in seconds from the call."""

    worker: str
    first_start: float
    n_units: int
    last_end: float
    gaps: float  # idle time between its consecutive units
    busy: float  # summed unit durations (started -> finished)


def spans(records: Iterable[Any], t0: float) -> list[WorkerSpan]:
    """Each worker's span, from records with ``worker``, ``started`` and ``finished``.

    Records of one fast-CV unit share their timestamps and count as one unit.

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> recs = [R(worker="a", started=1.0, finished=2.0), R(worker="a", started=2.5, finished=3.0)]
    >>> spans(recs, 0.5)
    [WorkerSpan(worker='a', first_start=0.5, n_units=2, last_end=2.5, gaps=0.5, busy=1.5)]
    """
    by_worker: dict[str, set[tuple[float, float]]] = {}
    for r in records:
        by_worker.setdefault(r.worker, set()).add((r.started, r.finished))
    out = []
    for worker, units in by_worker.items():
        ordered = sorted(units)
        gaps = sum(b[0] - a[1] for a, b in itertools.pairwise(ordered))
        out.append(
            WorkerSpan(
                worker,
                ordered[0][0] - t0,
                len(ordered),
                ordered[-1][1] - t0,
                gaps,
                sum(end - start for start, end in ordered),
            )
        )
    return sorted(out, key=lambda s: s.first_start)


def wave_bound(workers: list[WorkerSpan]) -> float:
    """Earliest start + ceil(units / workers) x the mean unit duration (s from the call)."""
    n_units = sum(s.n_units for s in workers)
    mean = sum(s.busy for s in workers) / n_units
    return min(s.first_start for s in workers) + math.ceil(n_units / len(workers)) * mean


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f}"


def _print_run(wall: float, workers: list[WorkerSpan], ideal: float | None) -> None:
    eff = f", efficiency {ideal / wall:.3f}" if ideal else ""
    n_units = sum(s.n_units for s in workers)
    print(f"wall {wall:.3f} s{eff}; units {n_units} on workers {len(workers)}")
    print("  worker      start  units    end  gaps  (ms from the call)")
    for s in workers:
        print(
            f"  {s.worker[-10:]:>10} {_ms(s.first_start):>6} {s.n_units:>6} "
            f"{_ms(s.last_end):>6} {_ms(s.gaps):>5}"
        )
    bound = wave_bound(workers)
    eff_bound = f" (efficiency {ideal / bound:.3f})" if ideal else ""
    last = max(s.last_end for s in workers)
    print(f"  waves bound {_ms(bound)} ms{eff_bound}; last unit ended {_ms(last)} ms")


def main(argv: list[str] | None = None) -> int:
    """Run the workload ``--runs`` times on warm workers and print each run's timeline."""
    from threadpoolctl import threadpool_limits
    from tools import DaskCluster, _nested, make_workload, warm_up

    import parcv

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["W1", "W2", "W3"])
    parser.add_argument("--backend", choices=["local", "dask"], default="local")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--w3-workers", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    args = parser.parse_args(argv)
    w3_workers = args.n_jobs if args.quick else args.w3_workers
    workload = make_workload(
        args.workload, quick=args.quick, n_jobs=args.n_jobs, w3_workers=w3_workers
    )
    job = workload.job
    threadpool_limits(1)
    with contextlib.ExitStack() as stack:
        backend: Any = parcv.LocalBackend(n_jobs=job.n_jobs)
        if args.backend == "dask":
            cluster = DaskCluster(job.n_jobs)
            stack.callback(cluster.close)
            stack.enter_context(cluster.running())
            backend = parcv.DaskBackend(client=cluster.client)
        warm_up(lambda j: _nested(j, backend), job)
        print(workload.title)
        for _ in range(args.runs):
            t0 = time.time()
            result = _nested(job, backend)
            wall = time.time() - t0
            _print_run(wall, spans(result.records, t0), workload.nominal_ideal)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
