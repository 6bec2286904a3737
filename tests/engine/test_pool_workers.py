"""The local pool's workers: forked from a server of the driver's, yet as spawned ones.

Each test runs a driver of its own in a subprocess: the server is started once per
driver process, and what is checked (the driver's script, its environment) is the
driver's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(script: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_a_script_without_a_main_guard_runs_once_and_its_pool_equals_serial(tmp_path):
    # loky's workers never imported the driver's script, and users' scripts rely on it;
    # the standard library's forkserver (and spawn) import it in every worker.
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent("""
        import json
        from pathlib import Path

        import numpy as np
        from sklearn.base import BaseEstimator, RegressorMixin
        from sklearn.linear_model import Ridge

        import parcv

        with Path("ran.txt").open("a") as ran:
            ran.write("the script ran\\n")


        class ScaledRidge(BaseEstimator, RegressorMixin):  # defined here, in __main__
            def __init__(self, alpha=1.0):
                self.alpha = alpha

            def fit(self, X, y):
                self.model_ = Ridge(alpha=self.alpha).fit(X * 2.0, y)
                return self

            def predict(self, X):
                return self.model_.predict(X * 2.0)


        rng = np.random.default_rng(0)
        X = rng.normal(size=(60, 4))
        y = X @ np.arange(4.0) + rng.normal(size=60)
        space = {"alpha": [0.1, 1.0, 10.0]}
        scores = {}
        for backend in ("local", "serial"):
            result = parcv.search(ScaledRidge(), space, X, y, cv=3, backend=backend,
                                  n_jobs=2 if backend == "local" else None)
            scores[backend] = result.cv_results_["mean_test_score"].tolist()
        print(json.dumps(scores))
    """)
    )
    proc = _run(script)
    assert (tmp_path / "ran.txt").read_text() == "the script ran\n", proc.stderr[-3000:]
    scores = json.loads(proc.stdout.splitlines()[-1])
    assert scores["local"] == scores["serial"]


def test_workers_start_in_the_drivers_environment_each_with_its_own_random_numbers(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(
        textwrap.dedent("""
        import json
        import os

        import psutil

        from parcv.engine.backends._forkserver import start_server, worker_context
        from tests.engine.pool_probe import report

        start_server()
        start_server()  # one server: started once
        children = psutil.Process().children()
        servers = [p.pid for p in children if "forkserver" in " ".join(p.cmdline())]
        context = worker_context()
        for name in ("first", "second"):
            os.environ["PARCV_PROBE"] = name  # changed after the server started
            worker = context.Process(target=report, args=(f"{name}.json",))
            worker.start()
            worker.join()
            assert worker.exitcode == 0, worker.exitcode
        print(json.dumps({"driver": os.getpid(), "servers": servers}))
    """)
    )
    proc = _run(script)
    started = json.loads(proc.stdout.splitlines()[-1])
    first, second = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("first", "second"))
    assert [first["environment"], second["environment"]] == ["first", "second"]
    assert first["draw"] != second["draw"]  # forked, both would draw the server's next number
    assert first["main_script"] is None and second["main_script"] is None  # not driver.py
    # Both forked from the one server the driver started before them (start_server).
    assert started["servers"] == [first["parent"]] == [second["parent"]] != [started["driver"]]
