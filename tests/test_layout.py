"""The layout of parcv/: wings whose imports point one way, no cycle, documented paths kept.

``lint-imports`` checks the contracts in ``pyproject.toml``. A wrong-way import planted in a
copy of the package must make it fail, so the contract is shown to bite.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.api import read_configuration

ROOT = Path(__file__).resolve().parents[1]
WINGS = (
    "plan",
    "strategies",
    "engine",
    "store",
    "results",
    "stats",
    "criteria",
    "fastcv",
    "report",
    "cli",
)
LINT = [str(Path(sys.executable).parent / "lint-imports")]


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(LINT, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def test_import_contracts_are_kept():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("parcv/plan/space.py", "from parcv.engine import runner  # noqa: F401"),
        ("parcv/results/summary.py", "from parcv.store import readers  # noqa: F401"),
        ("parcv/stats/paired.py", "import distributed  # noqa: F401"),
        ("parcv/plan/records.py", "from parcv.plan import units  # noqa: F401"),
    ],
)
def test_a_wrong_way_import_breaks_the_contracts(tmp_path, module, line):
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copytree(ROOT / "parcv", copy / "parcv", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    target = copy / module
    target.write_text(target.read_text() + "\n" + line + "\n")
    result = _lint(copy)
    assert result.returncode != 0, result.stdout
    assert "BROKEN" in result.stdout


def test_no_import_cycle_between_modules():
    graph = grimp.build_graph("parcv", exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    cycles = []
    for module in modules:
        for other in graph.find_modules_directly_imported_by(module):
            if other == module or other.startswith(module + "."):
                continue  # a package importing its own modules (re-exports)
            if module.startswith(other + "."):
                continue  # importing a name of one's own package
            back = graph.find_shortest_chain(importer=other, imported=module)
            if back is not None and not any(m.startswith(module + ".") for m in back):
                cycles.append((module, *back))
    assert cycles == []


def _plan_breaches(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    """The imports of ``graph`` that break the plan wing's contracts in pyproject.toml."""
    contracts = {
        c["type"]: c
        for c in read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]
        if "parcv.plan" in (*c.get("containers", ()), *c.get("ancestors", ()))
    }
    layers = contracts["layers"]
    wrong = graph.find_illegal_dependencies_for_layers(
        layers=layers["layers"], containers=set(layers["containers"])
    )
    ancestors = contracts["acyclic_siblings"]["ancestors"]
    breakers = [graph.nominate_cycle_breakers(ancestor) for ancestor in ancestors]
    return {(d.importer, d.imported) for d in wrong}.union(*breakers)


def test_the_plan_wing_has_no_circle_even_through_type_annotations():
    # lint-imports leaves out imports under TYPE_CHECKING (exclude_type_checking_imports), and
    # the old circle of build, keys, kinds, records and units ran through exactly those.
    graph = grimp.build_graph("parcv", exclude_type_checking_imports=False)
    assert _plan_breaches(graph) == set()
    graph.add_import(importer="parcv.plan.kinds", imported="parcv.plan.build")
    assert ("parcv.plan.kinds", "parcv.plan.build") in _plan_breaches(graph)


def test_each_wing_says_what_it_owns():
    for wing in WINGS:
        module = importlib.import_module(f"parcv.{wing}")
        first, _, rest = (module.__doc__ or "").partition("\n")
        assert " wing" in first and "owns" in rest, wing
    top = {p.name for p in (ROOT / "parcv").glob("*.py")}
    # The documented paths parcv.bayes, parcv.gp and parcv.fastloo are thin re-exports;
    # estimators.py is the scikit-learn face over api.py (GridSearchCV and kin).
    assert top == {
        "__init__.py",
        "api.py",
        "errors.py",
        "estimators.py",
        "bayes.py",
        "gp.py",
        "fastloo.py",
    }


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("parcv.stats", ["compare", "compare_all", "corrected_resampled_ttest", "mcnemar_test",
                         "friedman_test", "holm_adjust", "TestResult", "ComparisonTable"]),
        ("parcv.criteria", ["compute_aic", "compute_bic", "compute_criteria", "count_params"]),
        ("parcv.bayes", ["BayesianLinearRegression", "log_evidence"]),
        ("parcv.gp", ["GaussianProcessLOO", "compute_gp_objective"]),
        ("parcv.fastloo", ["compute_hat_matrix", "fast_cv_predictions", "supports_fast_cv"]),
        ("parcv.cli", ["main"]),
    ],
)  # fmt: skip
def test_documented_module_paths_still_import(path, names):
    module = importlib.import_module(path)
    for name in names:
        assert name in module.__all__
        assert getattr(module, name) is not None


def test_documented_classes_are_the_wings_own():
    import parcv.bayes
    import parcv.gp
    from parcv.criteria.bayes import BayesianLinearRegression
    from parcv.criteria.gp import GaussianProcessLOO

    assert parcv.bayes.BayesianLinearRegression is BayesianLinearRegression
    assert parcv.gp.GaussianProcessLOO is GaussianProcessLOO
