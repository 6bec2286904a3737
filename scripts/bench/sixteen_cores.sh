#!/usr/bin/env bash
# Issue 40's measurements on a lent 16-core machine, as one prepared call (no network there:
# the wheels parcv needs beyond the machine's own packages travel in .whl, see README.md).
#   1. driver.py: the 1,100,011-unit nested-CV sweep with 1 ms fits, 16 workers, on the
#      local pool and on a Dask cluster of 16 single-threaded workers, with its report and
#      load (each sweep stopped after 140 s: then its numbers are per stored unit);
#   2. nested.py: W2 and W1 against scikit-learn, dask-ml and joblib-dask, one round each.
# Run from the repository root: bash scripts/bench/sixteen_cores.sh [OUTDIR]
set -u
out=${1:-${OUT:-/tmp/parcv-sixteen}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nproc
timeout 380 python3 scripts/bench/driver.py --workers 16 --candidates 20000 \
    --backends local dask --fit-ms 1 --no-plan --timeout 140 --keep /tmp/parcv-driver16 \
    --json "$out/driver16.json" 2>&1 | tee "$out/driver16.log"
timeout 60 python3 scripts/bench/nested.py --workload W2 --repeats 1 \
    --json "$out/w2.json" 2>&1 | tee "$out/w2.log"
timeout 120 python3 scripts/bench/nested.py --workload W1 --repeats 1 \
    --json "$out/w1.json" 2>&1 | tee "$out/w1.log"
