"""Imported first by every benchmark script, before numpy.

One BLAS/OpenMP thread per process, for the script and every worker it starts (loky and
dask workers inherit the environment); and this checkout of parcv and the benchmark's
modules (``tools``, ``sleepy``: W3's estimator, pickled by name) importable in both.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
_HERE = Path(__file__).resolve().parent
_PATHS = [str(_HERE.parents[1]), str(_HERE)]
sys.path[:0] = [p for p in _PATHS if p not in sys.path]
_INHERITED = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
os.environ["PYTHONPATH"] = os.pathsep.join([*_PATHS, *(p for p in _INHERITED if p not in _PATHS)])
