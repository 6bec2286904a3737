from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import parcv
from parcv.engine.progress import check_progress
from tests.estimators import FailsOnAlpha

X = np.random.default_rng(0).normal(size=(40, 3))
Y = X[:, 0] + np.random.default_rng(1).normal(size=40)
ROOT = Path(__file__).resolve().parents[2]


def test_progress_bar_counts_done_failed_and_total(capsys):
    with pytest.warns(parcv.FitFailedWarning):
        parcv.search(
            FailsOnAlpha(), {"alpha": [-1.0, 1.0]}, X, Y, cv=3, backend="serial", progress=True
        )
    err = capsys.readouterr().err
    assert "7/7" in err  # 6 fits + the final refit
    assert "failed=3" in err
    assert "fit/s" in err or "s/fit" in err


def test_progress_is_silent_off_a_terminal(capsys):
    assert check_progress(None) is False  # pytest's stderr is not a terminal
    parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=3, backend="serial")
    assert capsys.readouterr().err == ""


def test_progress_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match="progress must be True, False or None"):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=3, backend="serial", progress="yes")


def test_progress_best_is_the_cv_score_the_result_reports(capsys):
    # The bar showed a mean over the folds done so far, per outer fold (0.9868), that
    # matched no number of the report (0.979 CV): it shows the all-data CV score of the
    # best candidate whose every fold is done, as the report writes it.
    result = parcv.nested_cv(Ridge(), {"alpha": [0.1, 100.0]}, X, Y, outer=3, inner=4,
                             backend="serial", progress=True)  # fmt: skip
    err = capsys.readouterr().err
    assert f"best CV score={result.final.best_score_:.6g}" in err, err


@pytest.mark.parametrize("packed", [False, True])
def test_progress_best_counts_only_candidates_whose_every_fold_is_done(packed):
    # packed: the batches as the local pool's workers send them (numbers in columns).
    from parcv.engine.progress import Progress
    from parcv.plan.record_batch import RecordBatch
    from parcv.plan.records import ErrorInfo, Record, Unit

    def rec(outer, inner, c, s):
        return Record(Unit("fit", outer, inner, c), "ok", {"accuracy": s}, {}, 0.0, 0.0, 1, 1)

    failed = Record(Unit("fit", None, 0, 2), "failed", {"accuracy": 1.0}, {}, 0.0, 0.0, 1, 1,
                    error=ErrorInfo("ValueError", "bad", ""))  # fmt: skip

    def update(batch):
        bar.update(RecordBatch.pack(batch) if packed else batch)

    bar = Progress(9, enabled=False, metric="accuracy", n_folds=2)
    update([rec(None, 0, 0, 0.5), rec(None, 0, 1, 0.9), rec(0, 0, 0, 1.0), rec(0, 1, 0, 1.0)])
    assert bar.best == ""  # no candidate has both folds on all data yet
    update([rec(None, 1, 0, 0.7), failed])
    assert bar.best == "accuracy=0.6" and bar.failed == 1
    update([rec(None, 1, 1, 0.8)])
    assert bar.best == "accuracy=0.85"


def test_a_run_with_its_bar_leaves_no_tqdm_monitor_thread_behind():
    # tqdm's first bar starts a monitor thread that lives as long as the process and, at
    # the wrong moment, warns from that thread: a test suite with warnings as errors then
    # failed whichever test ran next. A fresh process, so no other bar has started it.
    code = (
        "import threading, warnings\n"
        "warnings.simplefilter('error')\n"
        "import numpy as np, parcv\n"
        "from sklearn.linear_model import Ridge\n"
        "X = np.random.default_rng(0).normal(size=(40, 3)); y = X[:, 0]\n"
        "r = parcv.search(Ridge(), {'alpha': [0.1, 1.0]}, X, y, cv=3, backend='serial',\n"
        "                 progress=True)\n"
        "print(sorted(t.name for t in threading.enumerate()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "7/7" in done.stderr  # the bar was drawn
    assert done.stdout.strip() == "['MainThread']", done.stdout
