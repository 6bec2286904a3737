"""Benchmark exact fast leave-one-out: parcv against RidgeCV and brute-force GridSearchCV.

Problem (issue 6): n=1000 samples, d=20 features, 20 ridge alphas, leave-one-out.

* brute force: ``GridSearchCV(Ridge(), cv=LeaveOneOut())`` refits 20 x 1000 times (plus one
  refit). By default only ``--brute-alphas`` alphas are run on all 1000 folds and the time is
  extrapolated linearly to 20 alphas (every fit costs the same); ``--full`` runs all of it.
* ``RidgeCV(alphas)``: scikit-learn's closed form, one decomposition for all alphas.
* parcv ``search(Ridge(), {"alpha": alphas}, cv=LeaveOneOut())``: fast CV, on the serial
  backend and on the local (joblib) backend, each including parcv's refit of the best alpha.

Checks: the same best alpha everywhere; parcv's LOO mean squared error of every alpha (the CV
score) equal to RidgeCV's and to the brute-force refits' to 1e-10 relative; and every per-sample
LOO squared error equal to 1e-10 relative to the errors' scale (max |difference| / max error).
The element-wise relative difference is printed too: it is large only where an error is
itself tiny (a residual of 1e-4 on targets of 10 carries rounding of 1e-14), and RidgeCV and the
brute-force refits differ from each other there just as much. BLAS/OpenMP use one thread.

Times are medians of interleaved repeats, as this process's CPU time (``time.process_time``;
robust on a busy machine, and everything but the local backend runs in this process with one
thread) and as wall time. The targets (parcv within 3x of RidgeCV, >= 1000x faster than brute
force) are judged on CPU time.

Run: python scripts/bench/fast_loo.py [--repeats 30] [--brute-alphas 2] [--full] [--json out]
"""

from __future__ import annotations

import _setup  # noqa: F401  (first: pins BLAS threads before numpy, sets the paths)

# isort: split
import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import GridSearchCV, LeaveOneOut
from threadpoolctl import threadpool_limits

import parcv

N_SAMPLES, N_FEATURES, N_ALPHAS = 1000, 20, 20
RTOL = 1e-10


def make_problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """The issue's problem: a noisy linear model, 20 log-spaced alphas."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_SAMPLES, N_FEATURES))
    y = X @ rng.normal(size=N_FEATURES) + rng.normal(scale=2.0, size=N_SAMPLES)
    return X, y, [float(a) for a in np.logspace(-3, 4, N_ALPHAS)]


def timed(call: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall-clock and this process's CPU seconds of one call, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def run_parcv(X: np.ndarray, y: np.ndarray, alphas: list[float], backend: Any) -> Any:
    return parcv.search(Ridge(), {"alpha": alphas}, X, y, cv=LeaveOneOut(),
                        scoring="neg_mean_squared_error", backend=backend)  # fmt: skip


def run_ridgecv(X: np.ndarray, y: np.ndarray, alphas: list[float]) -> RidgeCV:
    return RidgeCV(alphas=alphas, store_cv_results=True).fit(X, y)


def loo_errors(result: Any) -> np.ndarray:
    """Per-sample LOO squared errors, shape (n_samples, n_alphas), from a parcv result."""
    n = result.n_splits_
    return -np.column_stack([result.cv_results_[f"split{i}_test_score"] for i in range(n)]).T


def interleaved(
    calls: dict[str, Callable[[], Any]], repeats: int
) -> dict[str, dict[str, list[float]]]:
    """Time each call ``repeats`` times, interleaved so machine load hits all alike."""
    times: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": []} for n in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            wall, cpu, _ = timed(call)
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    return times


def brute_force(X: np.ndarray, y: np.ndarray, alphas: list[float], n_alphas: int) -> dict:
    """GridSearchCV with LOO on ``n_alphas`` of the alphas; time extrapolated to all."""
    subset = alphas[:: max(1, len(alphas) // n_alphas)][:n_alphas]
    search = GridSearchCV(Ridge(), {"alpha": subset}, cv=LeaveOneOut(),
                          scoring="neg_mean_squared_error", n_jobs=1)  # fmt: skip
    _, seconds, fitted = timed(lambda: search.fit(X, y))  # CPU time: n_jobs=1, one thread
    n_fits = len(subset) * len(y)
    per_fit = seconds / (n_fits + 1)
    return {
        "alphas": subset,
        "seconds_measured": seconds,
        "n_fits_measured": n_fits + 1,
        "seconds_all": per_fit * (len(alphas) * len(y) + 1),
        "extrapolated": len(subset) < len(alphas),
        "errors": -np.column_stack(
            [fitted.cv_results_[f"split{i}_test_score"] for i in range(len(y))]
        ).T,
        "best_alpha": fitted.best_params_["alpha"],
    }


def differences(ours: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """How far two (n_samples, n_alphas) arrays of LOO squared errors are apart."""
    return {
        "cv_score_rel": float(np.max(np.abs(ours.mean(axis=0) - ref.mean(axis=0))
                                     / ref.mean(axis=0))),
        "per_sample_scaled": float(np.max(np.abs(ours - ref)) / np.max(ref)),
        "per_sample_elementwise": float(np.max(np.abs(ours - ref) / np.maximum(ref, 1e-300))),
    }  # fmt: skip


def check(X: np.ndarray, y: np.ndarray, alphas: list[float], brute: dict) -> dict[str, Any]:
    ours = run_parcv(X, y, alphas, "serial")
    local = run_parcv(X, y, alphas, parcv.LocalBackend(n_jobs=2))
    ref = run_ridgecv(X, y, alphas)
    errors = loo_errors(ours)
    columns = [alphas.index(a) for a in brute["alphas"]]
    return {
        "fast_cv_used": bool(ours.fast_cv and local.fast_cv),
        "best_alpha": {"parcv": ours.best_params_["alpha"], "RidgeCV": float(ref.alpha_),
                       f"brute force ({len(brute['alphas'])} alphas)": brute["best_alpha"]},
        # With --full the brute-force search saw every alpha: its choice must agree too.
        "same_best_alpha": ours.best_params_["alpha"] == float(ref.alpha_)
        and (brute["extrapolated"] or brute["best_alpha"] == ours.best_params_["alpha"]),
        "vs_RidgeCV": differences(errors, ref.cv_results_),
        "vs_brute_force": differences(errors[:, columns], brute["errors"]),
        "RidgeCV_vs_brute_force": differences(ref.cv_results_[:, columns], brute["errors"]),
        "serial_equals_local_bitwise": bool(np.array_equal(errors, loo_errors(local))),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--brute-alphas", type=int, default=2)
    parser.add_argument("--full", action="store_true", help="run all 20,001 brute-force fits")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    X, y, alphas = make_problem()
    with threadpool_limits(limits=1):
        brute = brute_force(X, y, alphas, N_ALPHAS if args.full else args.brute_alphas)
        local = parcv.LocalBackend(n_jobs=2)
        cold = timed(lambda: run_parcv(X, y, alphas, local))[0]  # wall: the work is in workers
        times = interleaved({
            "RidgeCV": lambda: run_ridgecv(X, y, alphas),
            "parcv serial": lambda: run_parcv(X, y, alphas, "serial"),
            "parcv local (2 workers, warm pool)": lambda: run_parcv(X, y, alphas, local),
        }, args.repeats)  # fmt: skip
        checks = check(X, y, alphas, brute)
    report = summarise(times, cold, brute, checks)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    ok = checks["same_best_alpha"] and checks["fast_cv_used"]
    for key in ("vs_RidgeCV", "vs_brute_force"):
        ok = ok and max(checks[key]["cv_score_rel"], checks[key]["per_sample_scaled"]) < RTOL
    return 0 if ok else 1


def summarise(times: dict, cold: float, brute: dict, checks: dict) -> dict[str, Any]:
    median = {n: {k: statistics.median(v) for k, v in t.items()} for n, t in times.items()}
    ridgecv, serial = median["RidgeCV"]["cpu"], median["parcv serial"]["cpu"]
    return {
        "problem": {"n_samples": N_SAMPLES, "n_features": N_FEATURES, "n_alphas": N_ALPHAS},
        "median_seconds": median,
        "min_seconds": {n: {k: min(v) for k, v in t.items()} for n, t in times.items()},
        "parcv_local_cold_seconds": cold,
        "brute_force": {k: v for k, v in brute.items() if k != "errors"},
        "parcv_serial_over_RidgeCV": serial / ridgecv,
        "parcv_serial_over_RidgeCV_wall": median["parcv serial"]["wall"]
        / median["RidgeCV"]["wall"],
        "brute_force_over_parcv_serial": brute["seconds_all"] / serial,
        "targets": {
            "within_3x_of_RidgeCV": serial / ridgecv <= 3.0,
            "at_least_1000x_faster_than_brute_force": brute["seconds_all"] / serial >= 1000.0,
        },
        "checks": checks,
    }


def print_report(r: dict[str, Any]) -> None:
    b = r["brute_force"]
    how = (f"extrapolated from {b['n_fits_measured']} fits ({len(b['alphas'])} alphas x 1000 "
           f"folds + refit) in {b['seconds_measured']:.2f} s" if b["extrapolated"]
           else f"measured, {b['n_fits_measured']} fits")  # fmt: skip
    print(f"fast leave-one-out, n={N_SAMPLES}, d={N_FEATURES}, {N_ALPHAS} ridge alphas, "
          "1 BLAS thread; medians (min) of interleaved repeats\n")  # fmt: skip
    print(f"{'tool':<36} {'CPU time':>18} {'wall time':>18} {'CPU x RidgeCV':>14}")
    ridgecv = r["median_seconds"]["RidgeCV"]["cpu"]
    print(f"{'GridSearchCV(Ridge(), LeaveOneOut())':<36} {b['seconds_all']:>17.1f}s "
          f"{'':>18} {b['seconds_all'] / ridgecv:>14.0f}\n    ({how})")  # fmt: skip
    for name, t in r["median_seconds"].items():
        low = r["min_seconds"][name]
        cpu = f"{t['cpu'] * 1e3:.2f} ({low['cpu'] * 1e3:.2f}) ms"
        wall = f"{t['wall'] * 1e3:.2f} ({low['wall'] * 1e3:.2f}) ms"
        print(f"{name:<36} {cpu:>18} {wall:>18} {t['cpu'] / ridgecv:>14.2f}")
    print(f"{'parcv local, cold (starts the pool)':<36} {'':>18} "
          f"{r['parcv_local_cold_seconds']:>17.2f}s")  # fmt: skip
    print("(CPU time is this process's: the local backend's work runs in its workers.)")
    print_checks(r)


def print_checks(r: dict[str, Any]) -> None:
    t, c = r["targets"], r["checks"]
    print(
        f"\nparcv serial / RidgeCV: {r['parcv_serial_over_RidgeCV']:.2f}x CPU time "
        f"({r['parcv_serial_over_RidgeCV_wall']:.2f}x wall) (target <= 3x: "
        f"{'met' if t['within_3x_of_RidgeCV'] else 'NOT met'})"
    )
    print(
        f"brute force / parcv serial: {r['brute_force_over_parcv_serial']:.0f}x (target >= "
        f"1000x: {'met' if t['at_least_1000x_faster_than_brute_force'] else 'NOT met'})"
    )
    print(
        f"best alpha: {c['best_alpha']} (same: {c['same_best_alpha']}); fast CV used: "
        f"{c['fast_cv_used']}"
    )
    print(
        f"\nLOO squared errors (limit {RTOL:.0e}): CV score = per-alpha mean, relative; "
        "per sample relative to the largest error; per sample element-wise relative"
    )
    for key, name in (("vs_RidgeCV", "parcv vs RidgeCV"), ("vs_brute_force", "parcv vs brute"),
                      ("RidgeCV_vs_brute_force", "RidgeCV vs brute")):  # fmt: skip
        d = c[key]
        print(
            f"  {name:<17} CV score {d['cv_score_rel']:.1e}   per sample "
            f"{d['per_sample_scaled']:.1e}   element-wise {d['per_sample_elementwise']:.1e}"
        )
    print(f"serial == local bit for bit: {c['serial_equals_local_bitwise']}")


if __name__ == "__main__":
    sys.exit(main())
