"""How many of scikit-learn's own model-selection tests pass against parcv, without exclusions.

Loads the installed scikit-learn's ``model_selection/tests/test_search.py``,
``test_validation.py`` and ``test_successive_halving.py`` with their searches and
functions bound to parcv's (serial backend; see ``tests/sklearn_suite.py``; the Halving
searches only in the last), runs every test function of the three files with
pytest, and prints per file: test functions and parametrized cases, how many call
parcv, and how many pass. A function passes when each of its cases passes. With
``--failures`` it also lists each failing case with the first line of its error.

    python scripts/sklearn_parity.py                 # ~3 min on 2 cores
    python scripts/sklearn_parity.py --failures
    python scripts/sklearn_parity.py --json parity.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("search", "validation", "successive_halving")

MODULE = """
import pytest
from sklearn_suite import load_suite, parcv_only


@pytest.fixture
def global_random_seed():
    return 42


for _suite in {suites!r}:
    _module = load_suite("serial", _suite)
    for _name in dir(_module):
        if _name.startswith("test_") and callable(getattr(_module, _name)):
            globals()["test_" + _suite + "__" + _name] = parcv_only(
                getattr(_module, _name), drop_halving=_suite != "successive_halving"
            )
"""


class Recorder:
    """Record each case's outcome, first error line and whether it called parcv."""

    def __init__(self) -> None:
        self.cases: dict[str, dict] = {}
        self.calls = None

    def pytest_runtest_setup(self, item):
        import sklearn_suite

        self.calls = sklearn_suite.CALLS
        self._start = sklearn_suite.CALLS[0]

    def pytest_runtest_logreport(self, report):
        case = self.cases.setdefault(
            report.nodeid, {"outcome": "passed", "error": "", "calls_parcv": False}
        )
        if report.when == "call" and self.calls is not None:
            case["calls_parcv"] = self.calls[0] > self._start
        if report.failed:
            case["outcome"] = "failed"
            text = (
                str(report.longrepr.reprcrash.message)
                if hasattr(report.longrepr, "reprcrash")
                else str(report.longrepr)
            )
            case["error"] = text.splitlines()[0][:200] if text else ""
        elif report.skipped and case["outcome"] == "passed":
            case["outcome"] = "skipped"


def tally(cases: dict[str, dict]) -> dict[str, dict]:
    """Counts per file: functions and cases, those calling parcv, those passing."""
    table: dict[str, dict] = {}
    for suite in SUITES:
        functions: dict[str, list[dict]] = defaultdict(list)
        for nodeid, case in cases.items():
            name = nodeid.split("::")[-1].split("[")[0]
            if name.startswith("test_" + suite + "__"):
                functions[name].append(case)
        rows = {
            "functions": len(functions),
            "functions calling parcv": sum(
                any(c["calls_parcv"] for c in cs) for cs in functions.values()
            ),
            "functions passing": sum(
                all(c["outcome"] != "failed" for c in cs) for cs in functions.values()
            ),
            "functions calling parcv and passing": sum(
                any(c["calls_parcv"] for c in cs) and all(c["outcome"] != "failed" for c in cs)
                for cs in functions.values()
            ),
            "cases": sum(len(cs) for cs in functions.values()),
            "cases calling parcv": sum(c["calls_parcv"] for cs in functions.values() for c in cs),
            "cases passing": sum(c["outcome"] == "passed" for cs in functions.values() for c in cs),
            "cases skipped": sum(
                c["outcome"] == "skipped" for cs in functions.values() for c in cs
            ),
            "cases calling parcv and passing": sum(
                c["calls_parcv"] and c["outcome"] == "passed"
                for cs in functions.values()
                for c in cs
            ),
        }
        table[suite] = rows
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--failures", action="store_true", help="list every failing case")
    parser.add_argument("--json", type=Path, default=None, help="also write every case here")
    parser.add_argument("-k", default=None, help="only the tests pytest's -k selects")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    recorder = Recorder()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "test_sklearn_parity_all.py"
        path.write_text(MODULE.format(suites=SUITES))
        options = [str(path), "-q", "-p", "no:cacheprovider", "--no-header", "-rN",
                   "--rootdir", tmp,
                   "-o", "addopts=", "-o", "filterwarnings="]  # fmt: skip
        if args.k:
            options += ["-k", args.k]
        pytest.main(options, plugins=[recorder])
    table = tally(recorder.cases)
    width = max(len(k) for k in table["search"])
    print(f"\n{'':{width}}  " + "  ".join(f"{'test_' + s + '.py':>20}" for s in SUITES))
    for key in table["search"]:
        print(f"{key:{width}}  " + "  ".join(f"{table[s][key]:>20}" for s in SUITES))
    if args.failures:
        print()
        for nodeid, case in sorted(recorder.cases.items()):
            if case["outcome"] == "failed":
                mark = "" if case["calls_parcv"] else "(no parcv call) "
                print(f"{nodeid.split('::')[-1]}  {mark}{case['error']}")
    if args.json:
        args.json.write_text(json.dumps({"table": table, "cases": recorder.cases}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
