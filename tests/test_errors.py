"""parcv's warnings point at the caller's line, however deep parcv's own stack is."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold

import parcv
from parcv.errors import warn_at_caller
from tests.estimators import FailsOnAlpha

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 3))
y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=60)


def _caught(call, category):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    found = [w for w in caught if issubclass(w.category, category)]
    assert found, [str(w.message) for w in caught]
    return found


@pytest.mark.parametrize(
    ("call", "category"),
    [
        # plan: a learning curve whose sizes repeat
        (lambda: parcv.learning_curve(Ridge(), X, y, train_sizes=[10, 10, 20], cv=3,
                                      backend="serial"), RuntimeWarning),
        # results: a candidate that fails in every fold is left out of the selection
        (lambda: parcv.search(FailsOnAlpha(), {"alpha": [-1.0, 1.0]}, X, y, cv=3,
                              backend="serial"), parcv.FitFailedWarning),
        # engine: cross_validate with some folds failing
        # engine: cross_validate with some folds failing (KFold(3): the last fold trains on
        # rows 0-39, all of class 0)
        (lambda: parcv.cross_validate(LogisticRegression(), X, np.r_[np.zeros(40), np.ones(20)],
                                      cv=KFold(3), backend="serial"), parcv.FitFailedWarning),
    ],
)  # fmt: skip
def test_warnings_point_at_the_callers_line(call, category):
    for warning in _caught(call, category):
        assert warning.filename == __file__, (warning.filename, str(warning.message))


def test_warn_at_caller_skips_only_parcvs_frames():
    def here():
        warn_at_caller("from a test", UserWarning)

    with pytest.warns(UserWarning, match="from a test") as caught:
        here()
    assert caught[0].filename == __file__
    assert caught[0].lineno == here.__code__.co_firstlineno + 1


# -- Every "not a valid name" error suggests the closest names, through one helper ------------


def _search_result():
    return parcv.search(Ridge(), {"alpha": [0.1, 10.0]}, X, y, cv=3, backend="serial")


def _predictions():
    s = parcv.search(
        Ridge(), {"alpha": [0.1]}, X, y, cv=3, backend="serial", return_predictions=True
    )
    return s.out_of_fold(0, "predcit")


MISTYPED_NAMES = [
    # (what is called, the closest name it must suggest)
    (lambda: parcv.cross_validate(Ridge(), X, y, backend="lcoal"), "'local'"),
    (lambda: parcv.cross_validate(Ridge(), X, y, backend="serial", n_jbos=1), "'n_jobs'"),
    (lambda: parcv.cross_validate(Ridge(), X, y, backend="serial", scoring="r_2"), "'r2'"),
    (lambda: parcv.search(Ridge(), {"alpah": [1.0]}, X, y, backend="serial"), "'alpha'"),
    (lambda: parcv.Iterations("max_iter", 10, method="stagged"), "'staged'"),
    (lambda: parcv.Racing(test="fridman"), "'friedman'"),
    (lambda: parcv.stats.compare([1, 2, 3], [2, 3, 5], test="paired_tt"), "'paired_t'"),
    (lambda: parcv.RunOptions(journal="wall"), "'wal'"),
    (
        lambda: parcv.search(Ridge(), {"alpha": [1.0]}, X, y, backend="serial", criteria=["bicc"]),
        "'bic'",
    ),
    (lambda: _search_result().compare("alpha=10", 0, metric="scroe"), "'score'"),
    (lambda: _search_result().compare("alpha=0.2", 1), "'alpha=0.1'"),
    (_predictions, "'predict'"),
]


@pytest.mark.parametrize(("call", "closest"), MISTYPED_NAMES)
def test_a_mistyped_name_of_the_api_gets_the_closest_names(call, closest):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert f"Did you mean {closest}" in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("argv", "closest"),
    [
        (["rnu", "x.toml"], "'run'"),
        (["run", "x.toml", "--backend", "dsak"], "'dask'"),
        (["run", "x.toml", "--reusme"], "'--resume'"),
        (["run", "x.toml", "--journal", "WAL"], "'wal'"),
    ],
)
def test_a_mistyped_name_on_the_command_line_gets_the_closest_names(capsys, argv, closest):
    from parcv.cli import main

    assert main(argv) == 2
    assert f"Did you mean {closest}?" in capsys.readouterr().err


def test_one_helper_finds_the_closest_names():
    # No module of parcv but errors.py asks difflib: every suggestion reads alike.
    root = Path(parcv.__file__).parent
    users = [p for p in root.rglob("*.py") if "difflib" in p.read_text(encoding="utf-8")]
    assert [p.relative_to(root).as_posix() for p in users] == ["errors.py"]
