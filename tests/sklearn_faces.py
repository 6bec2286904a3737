"""parcv's searches and functions with a backend as their default, for scikit-learn's tests.

Each class is written out here rather than made in a loop: a module that stores into its
own ``globals()`` or imports by computed name makes parcv count every loaded module of
the user's own in each unit's key (sound, and slow in a test process that has loaded
every test module). ``CALLS`` counts the calls (``scripts/sklearn_parity.py`` reads it).
"""

from __future__ import annotations

import functools
import inspect

import parcv

CALLS = [0]


def _init(base: type, backend: str):
    """``base.__init__`` with ``backend`` (and two workers on the pool) as its defaults."""

    def __init__(self, *args, **options):
        CALLS[0] += 1
        options.setdefault("backend", backend)
        if backend == "local":
            options.setdefault("n_jobs", 2)  # the test machines have two cores
        base.__init__(self, *args, **options)

    # get_params and clone read the constructor's names: those of parcv's class.
    __init__.__signature__ = inspect.signature(base.__init__)  # type: ignore[attr-defined]
    return __init__


class SerialGridSearchCV(parcv.GridSearchCV):
    __init__ = _init(parcv.GridSearchCV, "serial")


class SerialRandomizedSearchCV(parcv.RandomizedSearchCV):
    __init__ = _init(parcv.RandomizedSearchCV, "serial")


class SerialHalvingGridSearchCV(parcv.HalvingGridSearchCV):
    __init__ = _init(parcv.HalvingGridSearchCV, "serial")


class SerialHalvingRandomSearchCV(parcv.HalvingRandomSearchCV):
    __init__ = _init(parcv.HalvingRandomSearchCV, "serial")


class LocalGridSearchCV(parcv.GridSearchCV):
    __init__ = _init(parcv.GridSearchCV, "local")


class LocalRandomizedSearchCV(parcv.RandomizedSearchCV):
    __init__ = _init(parcv.RandomizedSearchCV, "local")


class LocalHalvingGridSearchCV(parcv.HalvingGridSearchCV):
    __init__ = _init(parcv.HalvingGridSearchCV, "local")


class LocalHalvingRandomSearchCV(parcv.HalvingRandomSearchCV):
    __init__ = _init(parcv.HalvingRandomSearchCV, "local")


FACES = {
    "serial": (SerialGridSearchCV, SerialRandomizedSearchCV, SerialHalvingGridSearchCV,
               SerialHalvingRandomSearchCV),
    "local": (LocalGridSearchCV, LocalRandomizedSearchCV, LocalHalvingGridSearchCV,
              LocalHalvingRandomSearchCV),
}  # fmt: skip


FUNCTIONS = {
    "cross_validate": parcv.cross_validate,
    "cross_val_score": parcv.cross_val_score,
    "cross_val_predict": parcv.cross_val_predict,
    "learning_curve": parcv.learning_curve,
    "validation_curve": parcv.validation_curve,
    "permutation_test_score": parcv.permutation_test_score,
}


def function(name: str, backend: str):
    """parcv's function ``name`` with ``backend`` (and two workers on the pool) as its default."""
    target = FUNCTIONS[name]

    @functools.wraps(target)
    def call(*args, **options):
        CALLS[0] += 1
        options.setdefault("backend", backend)
        if backend == "local":
            options.setdefault("n_jobs", 2)
        return target(*args, **options)

    return call
