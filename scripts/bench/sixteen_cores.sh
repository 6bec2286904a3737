#!/usr/bin/env bash
# Issue 40's measurements on a lent 16-core machine, in two prepared calls (no network there:
# the wheels parcv needs beyond the machine's own packages travel in .whl, see README.md).
#
#   bash scripts/bench/sixteen_cores.sh compare START [OUTDIR]
#     1. driver.py, checkouts START and this one side by side: the 1,100,011-unit nested-CV
#        sweep with 1 ms fits and 16 workers, on the local pool and on a Dask cluster of 16
#        single-threaded workers, each stopped after 25 s (its numbers are per stored unit);
#     2. nested.py: W2 and W1 against scikit-learn, dask-ml and joblib-dask, one round each.
#   bash scripts/bench/sixteen_cores.sh full [OUTDIR]
#     3. driver.py, this checkout: the same sweeps whole, with their report and load.
#   bash scripts/bench/sixteen_cores.sh workloads [OUTDIR]
#     4. nested.py: W1, W2 and W3 against scikit-learn, joblib-dask and dask-ml, one round
#        (a call of its own: with `full` it would outlast one device command's 10 minutes).
#
# START is a checkout holding parcv/ (e.g. `git archive COMMIT parcv | tar -x -C .start`, a
# folder git ignores, carried along). Run from the repository root.
set -u
part=$1
shift
if [ "$part" = compare ]; then
    start=$1
    shift
fi
out=${1:-${OUT:-/tmp/parcv-sixteen}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nproc
sweep=(scripts/bench/driver.py --workers 16 --candidates 20000 --backends local dask
    --fit-ms 1 --no-plan)
if [ "$part" = compare ]; then
    timeout 240 python3 "${sweep[@]}" --checkout start="$start" --checkout now=. \
        --timeout 25 --json "$out/compare16.json" 2>&1 | tee "$out/compare16.log"
    timeout 60 python3 scripts/bench/nested.py --workload W2 --repeats 1 \
        --json "$out/w2.json" 2>&1 | tee "$out/w2.log"
    timeout 200 python3 scripts/bench/nested.py --workload W1 --repeats 1 \
        --json "$out/w1.json" 2>&1 | tee "$out/w1.log"
elif [ "$part" = workloads ]; then
    timeout 330 python3 scripts/bench/nested.py --workload all --repeats 1 \
        --json "$out/workloads.json" 2>&1 | tee "$out/workloads.log"
else
    timeout 420 python3 "${sweep[@]}" --timeout 170 --json "$out/driver16.json" 2>&1 |
        tee "$out/driver16.log"
fi
