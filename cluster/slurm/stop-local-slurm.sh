#!/usr/bin/env bash
# Stop the single-node Slurm cluster started by start-local-slurm.sh (idempotent).
#
# Cancels every job, then stops slurmd, slurmctld and munged by their pid files; nothing
# else is touched. Packages, configuration and logs stay for the next start.
#
# Usage: stop-local-slurm.sh [--slurm-only]    (--slurm-only: leave munged running)
set -euo pipefail

SLURM_ONLY=0
case ${1:-} in
--slurm-only) SLURM_ONLY=1 ;;
"") ;;
*) echo "usage: stop-local-slurm.sh [--slurm-only]" >&2 && exit 2 ;;
esac

# True when the pid in file $1 is a live (not zombie) process.
alive() {
    local pid state
    pid=$(cat "$1" 2>/dev/null) || return 1 # the daemon may remove it any moment
    [[ -n $pid && -r /proc/$pid/stat ]] || return 1
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ $state != Z ]]
}

# Stop the daemon whose pid is in file $1: TERM, up to 10 s, then KILL.
stop_daemon() {
    local file=$1 pid i
    alive "$file" || { rm -f "$file"; return 0; }
    pid=$(cat "$file" 2>/dev/null) || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        alive "$file" || break
        sleep 0.1
    done
    if alive "$file"; then
        kill -KILL "$pid" 2>/dev/null || true
        sleep 0.2
    fi
    rm -f "$file"
}

if alive /run/slurmctld.pid && command -v squeue >/dev/null; then
    # Cancel every job first, so their processes (e.g. Dask workers) end with them.
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [[ -n $jobs ]]; then
        # shellcheck disable=SC2086  # one job id per word
        timeout 10 scancel $jobs 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null || true) ]] && break
            sleep 0.2
        done
    fi
fi
stop_daemon /run/slurmd.pid
stop_daemon /run/slurmctld.pid
if [[ $SLURM_ONLY -eq 0 ]]; then
    stop_daemon /run/munge/munged.pid
fi
echo "stop-local-slurm: stopped" >&2
