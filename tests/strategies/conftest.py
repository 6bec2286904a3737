"""Fixtures of the strategy tests."""

from __future__ import annotations

import sys

import pytest

from tests import strategy_matrix as matrix


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """The matrix's estimator module, importable as a user's own module beside their spec."""
    monkeypatch.syspath_prepend(str(tmp_path))
    matrix.write_module(tmp_path)
    yield tmp_path
    sys.modules.pop("matrixmod", None)
