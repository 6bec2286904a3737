"""Benchmark content keys: a 1.1M-unit plan's keys against building that plan.

Plan (issue 20): nested CV, 10 outer x 5 inner folds x 20,000 candidates, plus the
all-data search of the final refit: 10 x 5 x 20,000 + 5 x 20,000 = 1,100,000 fit units.
Each phase runs in a fresh subprocess, so its peak memory (``ru_maxrss``) is its own:

* ``plan``: ``build_plan`` alone (what a run did before content keys);
* ``plan+keys``: ``build_plan``, then :func:`parcv.plan.keys.content_keys` and every
  unit's content key (``graph_keys``: a dict of 1.1M graph keys to hex digests).

Printed side by side: wall time of the plan and of the keys, peak RSS of each process
and the keys' ratio to the plan. Targets: keys < 10 s and the process with keys < 1 GB.

Run: python scripts/bench/keys.py [--candidates 20000] [--json out.json]
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import json
import resource
import subprocess
import sys
import time


def _phase(kind: str, n_candidates: int) -> dict[str, float]:
    import numpy as np
    from sklearn.linear_model import Ridge

    from parcv.plan.build import build_plan
    from parcv.plan.data import check_dataset
    from parcv.plan.keys import content_keys

    rng = np.random.default_rng(0)
    data = check_dataset(rng.normal(size=(200, 5)), rng.normal(size=200))
    alphas = list(np.logspace(-3, 3, n_candidates))
    start = time.perf_counter()
    plan = build_plan(Ridge(), {"alpha": alphas}, data, inner=5, outer=10, fast_cv=False)
    plan_s = time.perf_counter() - start
    out = {"plan_s": plan_s, "n_units": float(plan.n_units)}
    if kind == "keys":
        start = time.perf_counter()
        graph = content_keys(plan, data).graph_keys(plan)
        out["keys_s"] = time.perf_counter() - start
        out["n_keys"] = float(len(graph))
        out["n_distinct"] = float(len(set(graph.values())))
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=20_000)
    parser.add_argument("--json", help="also write the measurements here")
    parser.add_argument("--phase", choices=["plan", "keys"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(_phase(args.phase, args.candidates)))
        return 0
    runs = {}
    for phase in ("plan", "keys"):
        cmd = [sys.executable, __file__, "--phase", phase, "--candidates", str(args.candidates)]
        runs[phase] = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                text=True).stdout)  # fmt: skip
    plan, keys = runs["plan"], runs["keys"]
    print(f"plan: {int(plan['n_units']):,} units ({args.candidates:,} candidates, 10 x 5 folds)")
    print(f"{'':24}{'time (s)':>10}{'peak RSS (MB)':>16}")
    print(f"{'build_plan':24}{plan['plan_s']:>10.2f}{plan['peak_mb']:>16.0f}")
    print(
        f"{'build_plan + keys':24}{keys['plan_s'] + keys['keys_s']:>10.2f}{keys['peak_mb']:>16.0f}"
    )
    print(
        f"{'  of which keys':24}{keys['keys_s']:>10.2f}{keys['peak_mb'] - plan['peak_mb']:>16.0f}"
    )
    print(
        f"keys / plan: time {keys['keys_s'] / plan['plan_s']:.2f}x, "
        f"memory {keys['peak_mb'] / plan['peak_mb']:.2f}x; "
        f"{int(keys['n_keys']):,} keys, {int(keys['n_distinct']):,} distinct"
    )
    ok_time, ok_memory = keys["keys_s"] < 10, keys["peak_mb"] < 1024
    print(f"targets: keys < 10 s {'met' if ok_time else 'MISSED'}; "
          f"process < 1 GB {'met' if ok_memory else 'MISSED'}")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
