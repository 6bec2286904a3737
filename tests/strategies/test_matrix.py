"""Every strategy through every entry point and consumer: the CI slice of the matrix.

The rows and columns are generated (:mod:`tests.strategy_matrix`): a strategy class of
``parcv.strategies`` or a sampler name added to ``SAMPLERS`` is a new row without a new
test, and a consumer added to ``CONSUMERS`` a new column. ``scripts/strategy_matrix.py``
runs every cell on both backends.
"""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

from tests import strategy_matrix as matrix

CASES = matrix.matrix_cases()


def _strategy_modules() -> list[types.ModuleType]:
    """Every module of ``parcv.strategies``, imported (here, not in the matrix's module: a
    module of the ``tests`` package importing by computed names costs every run)."""
    import parcv.strategies as package

    return [importlib.import_module(f"{package.__name__}.{info.name}")
            for info in pkgutil.iter_modules(package.__path__)]  # fmt: skip


def test_every_strategy_class_has_a_row():
    assert matrix.uncovered_strategies(CASES, _strategy_modules()) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "entry", "backend", "consumers"),
    [pytest.param(*cell, id=f"{cell[0].name}-{cell[1]}-{cell[2]}".replace(" ", "_"))
     for cell in matrix.ci_slice(CASES)],
)  # fmt: skip
def test_cell(case, entry, backend, consumers, user_code):
    cell = matrix.Cell(case, entry, backend, user_code / "cell", plots="report" in consumers)
    outcomes = [matrix.check_cell(cell, consumer) for consumer in consumers]
    failed = [f"{o.consumer}: {o.detail}" for o in outcomes if o.status == "failed"]
    assert not failed, "\n\n".join(failed)
    for o in outcomes:
        if o.status == "refused":  # raised before any fit, with a reason the docs give
            assert matrix.documented(o.detail) is not None, o


@pytest.mark.parametrize(("phrase", "page"), sorted(matrix.REFUSALS.items()))
def test_each_refusal_is_documented(phrase, page):
    assert phrase in " ".join((matrix.ROOT / page).read_text().split())


def test_the_ci_slice_meets_every_strategy_and_entry_point_with_every_consumer():
    cells = matrix.ci_slice(CASES)
    met = {(case.name, consumer) for case, _, _, consumers in cells for consumer in consumers}
    assert met == {(case.name, consumer) for case in CASES for consumer in matrix.CONSUMERS}
    entries = {(entry, consumer) for _, entry, backend, consumers in cells
               if backend == "serial" for consumer in consumers}  # fmt: skip
    assert entries == {(e, c) for e in matrix.ENTRIES for c in matrix.CONSUMERS}
    assert {case.name for case, _, backend, _ in cells if backend == "local"} == {
        case.name for case in CASES
    }
