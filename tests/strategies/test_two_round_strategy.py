"""A strategy written only against the documented contract, through every consumer.

``examples/two_round_strategy.py`` screens every candidate on a third of the rows and
scores the better half on all rows. Nothing outside that file and this test knows it: it
runs, resumes, reloads (whole and partial), reports, compares and intervals through the
matrix's consumers, and its schedule (what ``inspect`` prints) counts what the run stores.
"""

from __future__ import annotations

import pytest

from parcv.store.readers import read_counts
from parcv.strategies.strategy import SearchContext
from tests import strategy_matrix as matrix

CASE = next(c for c in matrix.own_cases() if c.name == "own, on rows")


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["search", "nested_cv"])
def test_it_runs_resumes_reloads_reports_and_compares(entry, user_code):
    cell = matrix.Cell(CASE, entry, "serial", user_code / "cell")
    outcomes = {name: matrix.check_cell(cell, name) for name in matrix.CONSUMERS}
    failed = {name: o.detail for name, o in outcomes.items() if o.status == "failed"}
    assert not failed
    ran = {"result", "load", "load partial", "interrupt and resume", "report", "seed",
           "resume values notes"}  # fmt: skip
    if entry == "nested_cv":
        ran |= {"compare", "interval ncv"}
    assert {name for name, o in outcomes.items() if o.status == "equal"} >= ran


def test_its_schedule_counts_the_units_the_run_stores(user_code):
    run = matrix.run_entry(CASE, "search", "serial", user_code / "run")
    space = CASE.api(None)["space"]
    candidates = tuple({"alpha": a} for a in space["alpha"])
    context = SearchContext(candidates, space, CASE.build(), len(matrix.X), matrix.INNER, None,
                            "score")  # fmt: skip
    schedule = CASE.api(None)["strategy"].schedule(context)
    assert schedule.exact
    assert schedule.n_units + 1 == read_counts(run.store)[0]  # and the winner's refit
