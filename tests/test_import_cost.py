"""``import parcv`` and ``parcv --version`` load none of the heavy libraries.

Each check runs in a fresh interpreter, so what the test session has already imported
does not hide an eager import.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import parcv

ROOT = Path(__file__).resolve().parents[1]

# What the public names pull in: seconds of imports before any code runs.
HEAVY = ("sklearn", "scipy", "pandas", "numpy", "joblib", "matplotlib", "dask", "distributed",
         "optuna")  # fmt: skip


def _loaded_after(code: str) -> list[str]:
    """The HEAVY modules a fresh interpreter has loaded after running ``code``."""
    report = f"print(json.dumps(sorted(set({HEAVY!r}) & set(sys.modules))))"
    probe = f"{code}\nimport json, sys\n{report}"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_parcv_loads_no_heavy_library():
    assert _loaded_after("import parcv") == []


def test_parcv_version_loads_no_heavy_library():
    code = "from parcv.cli.main import main\nassert main(['--version']) == 0"
    assert _loaded_after(code) == []


def test_the_probe_sees_an_eager_import():
    assert _loaded_after("from parcv import search") != []  # the checks above can fail


@pytest.mark.parametrize("name", sorted(set(parcv.__all__) - {"__version__"}))
def test_each_public_name_is_its_modules_object(name):
    import importlib

    value = getattr(parcv, name)
    home = importlib.import_module(parcv._EXPORTS[name])
    assert value is getattr(home, name)
    assert name in dir(parcv)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'parcv' has no attribute 'serach'"):
        parcv.serach  # noqa: B018


def test_each_public_module_is_an_attribute_after_import_parcv_alone():
    # In a fresh interpreter: in the test session another test may have imported them,
    # which hid this (docs/api.rst's check of its names passed only after such a test).
    code = (
        "import parcv\n"
        "for name in ('bayes', 'criteria', 'fastloo', 'gp', 'report', 'stats', 'strategies'):\n"
        "    assert getattr(parcv, name).__name__ == 'parcv.' + name, name\n"
        "assert 'GaussianProcessLOO' in parcv.gp.__all__"
    )
    assert "sklearn" in _loaded_after(code)  # ran to its end: parcv.gp imports scikit-learn
