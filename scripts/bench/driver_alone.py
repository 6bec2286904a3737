"""The driver alone at scale: a pool of 16 stand-in workers whose fits cost nothing.

Each chunk's records are made (and pickled) at submit, outside the driver's measured CPU,
and handed back a quarter of the queue at a time, as a busy pool returns them; chunks are
sized as for 1 ms fits on 16 workers (``--chunk-seconds``: 0.05 s, about 45 units, as the
local pool asks for; the driver may scale that with the workers). What is left is the driver's own
cost per unit (planning, scheduling, unpickling, the table, the store), whatever the
machine's cores. Checkouts run one after the other in this process's children:

    python scripts/bench/driver_alone.py --candidates 2000 20000 \\
        --checkout start=/path/to/old/checkout --checkout now=.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import collections, pickle, shutil, sys, time
from contextlib import contextmanager
sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])
import numpy as np
from null_estimator import NullEstimator
from sklearn.datasets import load_diabetes
import parcv
from parcv.plan.records import Record
try:
    from parcv.plan.record_batch import RecordBatch
    pack = RecordBatch.pack
except ImportError:  # a checkout before workers sent batches
    pack = list
outside = [0.0]

class Pool:
    n_workers, chunk_seconds = 16, float(sys.argv[5])
    def __init__(self):
        self.queue, self.n = collections.OrderedDict(), 0
    def submit(self, units, plan=0):
        t = time.thread_time()
        self.n += 1
        records = [Record(u, "ok", {"score": 0.5 + 1e-6 * u.candidate}, {}, 0.001, 0.0001, 353,
                          89, worker=f"host:{self.n % 16}", started=1.7e9, finished=1.7e9 + 1e-3)
                   for u in units]
        self.queue[self.n] = pickle.dumps(pack(records))
        outside[0] += time.thread_time() - t
        return self.n
    def wait(self):
        for _ in range(max(1, len(self.queue) // 4)):
            ticket, data = self.queue.popitem(last=False)
            yield ticket, pickle.loads(data)
    def cancel(self):
        self.queue.clear()

class Backend:
    @contextmanager
    def open(self, plan, data):
        yield Pool()

X, y = load_diabetes(return_X_y=True)
n = int(sys.argv[3])
out = sys.argv[4]
shutil.rmtree(out, ignore_errors=True)
cpu = time.process_time()
parcv.nested_cv(NullEstimator(), {"alpha": list(np.logspace(-3, 3, n))}, X, y, outer=10,
                inner=5, backend=Backend(), store=f"{out}/store.sqlite", progress=False)
cpu = time.process_time() - cpu - outside[0]
print(f"{cpu / (55 * n + 11) * 1e6:.1f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--checkout", action="append", metavar="NAME=PATH")
    parser.add_argument(
        "--chunk-seconds", type=float, default=0.05, help="the stand-in pool's chunk_seconds"
    )
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    checkouts = [c.split("=", 1) for c in args.checkout or [f"now={here.parents[1]}"]]
    print("| units | " + " | ".join(f"{name} (µs/unit)" for name, _ in checkouts) + " |")
    print("|---|" + "---|" * len(checkouts))
    for n in args.candidates:
        cells = []
        for name, path in checkouts:
            out = f"/tmp/parcv-driver-alone-{name}"
            cmd = [sys.executable, "-c", _CHILD, str(Path(path).resolve()), str(here), str(n), out]
            cmd.append(str(args.chunk_seconds))
            env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
            done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
            cells.append(done.stdout.strip().splitlines()[-1])
        print(f"| {55 * n + 11:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
