"""A resume after any edit gives a fresh run's numbers, and a neutral edit recomputes nothing.

Issue 47's differential property, with a fresh run as the oracle (not the key): generated
user packages (``tests/soundness_programs.py``) are run into a store, edited, resumed and
run afresh, in fresh processes and in one process that reloads the edited modules. These
are the bounded slice CI runs; ``scripts/resume_soundness.py`` runs many more cases.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.soundness_programs import Case, Outcome, cases, catalogue, check_cases, report


def _check(outcomes: list[Outcome]) -> None:
    failing = [o.case.summary() for o in outcomes if o.violations or o.problems]
    assert failing == [], report(outcomes)


@pytest.mark.slow
def test_each_kind_of_edit_resumes_to_a_fresh_runs_numbers(tmp_path):
    _check(check_cases(catalogue(), tmp_path))


@pytest.mark.slow
def test_random_edits_resume_to_a_fresh_runs_numbers(tmp_path):
    # Hypothesis draws the cases, then they run as one batch: a process starts in seconds
    # and each case's runs take a fraction of one, so running each example apart would
    # cost three process starts each. The report names every failing case with its
    # program and edit (no shrinking: the cases are small already).
    drawn: list[Case] = []

    @settings(max_examples=4, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
    @given(batch=st.lists(cases(), min_size=6, max_size=6, unique_by=Case.key))
    def draw(batch: list[Case]) -> None:
        drawn.extend(batch)

    draw()
    distinct = list({case.key(): case for case in drawn}.values())
    _check(check_cases(distinct, tmp_path))
