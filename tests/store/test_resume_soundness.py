"""A resume after an edit returns a fresh run's numbers, whatever the edit reaches (issue 47).

The user's code runs as a user runs it: modules in a project folder, a driver script run
in a new Python process (or, the notebook case, one process that reloads), searches stored
in SQLite and resumed after the edit. The oracle is never a key: a resumed search's
numbers must equal those of a fresh search into an empty store, and the edit must change
those numbers (else a stale resume could not show). The opposite cost is checked too: an
edit that changes no code (a docstring, a comment, a layout) recomputes nothing.

A new Python process costs seconds here (importing scikit-learn), so the cases that edit
files between processes share one project: each case has its own modules, the driver runs
every case's search once before and once after all the edits, and each test checks its own
searches.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import parcv

ROOT = Path(__file__).resolve().parents[2]

# The driver's start: data, and one search that returns its scores and what parcv said.
PRELUDE = """\
import json
import logging
import os
import sys

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import parcv

VALUE = float(os.environ.get("VALUE", "1.0"))  # set at run time: in no source file
rng = np.random.default_rng(0)
X = rng.normal(size=(90, 4)) * [1.0, 3.0, 10.0, 0.3]
y = (X[:, 0] + np.abs(X[:, 1]) + rng.normal(size=90) > 2.0).astype(int)
SPACE = {"logisticregression__C": [0.01, 1.0]}


class Said(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def search(estimator, space, scoring="neg_log_loss", *, store):
    said, logger = Said(), logging.getLogger("parcv")
    logger.setLevel(logging.INFO)
    logger.addHandler(said)
    try:
        result = parcv.search(estimator, space, X, y, cv=3, scoring=scoring, refit=False,
                              backend="serial", progress=False, store=store, resume=True)
    finally:
        logger.removeHandler(said)
    return {"scores": result.cv_results_["mean_test_score"].tolist(), "log": said.lines}


def pipe(*steps):
    return make_pipeline(*steps, LogisticRegression())

"""


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _edit(file: Path, *replacements: tuple[str, str]) -> None:
    text = file.read_text()
    for old, new in replacements:
        assert old in text, (file.name, old)  # an edit that misses would test nothing
        text = text.replace(old, new)
    file.write_text(text)


def _python(folder: Path, *args: object, value: float | None = None) -> str:
    """Run ``python *args`` in a new process in ``folder``, with the folder importable."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
        # An edit of equal size within one second would otherwise load the stale .pyc.
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",  # one order of sums in every process: equal numbers
        "OPENBLAS_NUM_THREADS": "1",
    }
    env.pop("VALUE", None)
    if value is not None:
        env["VALUE"] = repr(value)
    done = subprocess.run([sys.executable, *map(str, args)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def _reuse_line(said: dict) -> str:
    return next((line for line in said["log"] if line.startswith("reusing")), "(no resume)")


def _assert_resumed_as_fresh(runs: Sequence[dict], names: list[str]) -> None:
    """Each search named: the edit changes its numbers, and the resume gives the fresh ones."""
    before, resumed, fresh = runs
    for name in names:
        assert fresh[name]["scores"] != before[name]["scores"], f"{name}: the edit changed nothing"
    stale = {
        name: f"resumed {resumed[name]['scores']} vs fresh {fresh[name]['scores']}, "
        f"{_reuse_line(resumed[name])}"
        for name in names
        if resumed[name]["scores"] != fresh[name]["scores"]
    }
    assert not stale, f"stale after the edit: {stale}"


# The modules of the shared project -----------------------------------------------------------

# 1. The user's own transformer and estimator, edited.
TRANSFORMER = """\
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin


class Tx(TransformerMixin, BaseEstimator):
    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.log1p(np.abs(X))
"""

CONSTANT = """\
from sklearn.base import BaseEstimator, TransformerMixin

FACTOR = 1.0


class Tx(TransformerMixin, BaseEstimator):
    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return X * FACTOR
"""

# ``score`` comes from ClassifierMixin and calls ``predict``; GatedClf declares its
# ``predict`` behind ``available_if``, as scikit-learn's own meta-estimators do.
PREDICTOR = """\
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if


class Clf(ClassifierMixin, BaseEstimator):
    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.direction_ = X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)
        return self

    def predict(self, X):
        return (X @ self.direction_ > self.shift).astype(int)


class GatedClf(ClassifierMixin, BaseEstimator):
    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.direction_ = X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)
        return self

    @available_if(lambda self: True)
    def predict(self, X):
        return (X @ self.direction_ > self.shift).astype(int)
"""

FLIP = ("X @ self.direction_ > self.shift", "X @ self.direction_ < self.shift")

# 2. Anonymous code held by a module global, whose captured value is edited.
FACTORY = """\
import numpy as np


def scaled(k):
    def apply(Z):
        return Z * k

    return apply


helper = scaled(1.0)


def transform(X):
    return helper(np.asarray(X, dtype=float))
"""

DEFAULT = """\
import numpy as np

helper = lambda Z, k=1.0: Z * k  # noqa: E731


def transform(X):
    return helper(np.asarray(X, dtype=float))
"""

DECORATOR = """\
import numpy as np


def times(k):
    def decorate(function):
        def wrapper(Z):  # no functools.wraps
            return function(Z) * k

        return wrapper

    return decorate


@times(1.0)
def helper(Z):
    return Z


def transform(X):
    return helper(np.asarray(X, dtype=float))
"""

# 3. and 4. Module attributes the driver sets at run time: ``cfg`` is a module without a file
# that the driver makes, ``settable`` a file module whose file says FACTOR = 1.0. The
# closures live in a module of their own so that no edited source is near them.
USES_CFG = """\
import cfg
from sklearn.base import BaseEstimator, TransformerMixin


class Tx(TransformerMixin, BaseEstimator):
    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return X * cfg.SCALE
"""

CLOSURES = """\
def scale_of(module):
    return lambda X: X * module.SCALE


def factor_of(module):
    return lambda X: X * module.FACTOR
"""

# 6. Edits that change no code: a module docstring, method docstrings, comments, blank lines
# and a call broken over lines.
COSMETIC = [
    ("import numpy as np\n", '"""A transformer of my own."""\n\nimport numpy as np\n\n'),
    ("class Tx(", "# Fixed: nothing is learnt.\nclass Tx(\n    "),
    ("    def fit(self, X, y=None):\n",
     '    def fit(self, X, y=None):\n        """Learn nothing."""\n\n'),
    ("    def transform(self, X):\n",
     '\n    def transform(self, X):\n        """Shrink large values."""  # as a log does\n'),
    ("np.log1p(np.abs(X))", "np.log1p(\n            np.abs(X)\n        )"),
]  # fmt: skip

# 8. Modules of a package without ``__init__.py`` (a namespace package): a transformer reads
# a sibling's constant through the package (``import nsp.knobs``) or imported from it; a
# third transformer reads nothing of its siblings. The driver sets both siblings' constants.
NS_THROUGH = """\
from sklearn.base import BaseEstimator, TransformerMixin

import nsp.knobs


class Tx(TransformerMixin, BaseEstimator):
    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return X * nsp.knobs.FACTOR
"""

NS_FROM = NS_THROUGH.replace("import nsp.knobs", "from nsp import knobs").replace(
    "nsp.knobs.FACTOR", "knobs.FACTOR"
)

NS_ALONE = """\
from sklearn.base import BaseEstimator, TransformerMixin

from nsp.helpers import log_abs


class Tx(TransformerMixin, BaseEstimator):
    FACTOR = 1.0  # its own, not a sibling's; the names its code reads are its siblings' too

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        other = log_abs(X) * self.FACTOR
        return other
"""

DRIVER = """\
import types

cfg = types.ModuleType("cfg")  # no file: a namespace of settings the driver makes
cfg.SCALE = VALUE
sys.modules["cfg"] = cfg

import closures  # noqa: E402
import constant  # noqa: E402
import cosmetic  # noqa: E402
import decorator  # noqa: E402
import default  # noqa: E402
import factory  # noqa: E402
import predictor  # noqa: E402
import settable  # noqa: E402
import transformer  # noqa: E402
import uses_cfg  # noqa: E402
import nsp.alone  # noqa: E402
import nsp.knobs  # noqa: E402
import nsp.other  # noqa: E402
import nsp.through  # noqa: E402
import nsp.via_from  # noqa: E402

if "VALUE" in os.environ:
    settable.FACTOR = VALUE
    nsp.knobs.FACTOR = VALUE
    nsp.other.FACTOR = VALUE

SEARCHES = {
    "transform": (pipe(transformer.Tx()), SPACE),
    "constant": (pipe(constant.Tx()), SPACE),
    "predict": (predictor.Clf(), {"shift": [0.0, 5.0]}, None),
    "gated_predict": (predictor.GatedClf(), {"shift": [0.0, 5.0]}, None),
    "closure": (pipe(FunctionTransformer(factory.transform)), SPACE),
    "default": (pipe(FunctionTransformer(default.transform)), SPACE),
    "decorator": (pipe(FunctionTransformer(decorator.transform)), SPACE),
    "fileless_closure": (pipe(FunctionTransformer(closures.scale_of(cfg))), SPACE),
    "fileless_transformer": (pipe(uses_cfg.Tx()), SPACE),
    "set_transformer": (pipe(settable.Tx()), SPACE),
    "set_closure": (pipe(FunctionTransformer(closures.factor_of(settable))), SPACE),
    "cosmetic": (pipe(cosmetic.Tx()), SPACE),
    "namespace_through": (pipe(nsp.through.Tx()), SPACE),
    "namespace_from": (pipe(nsp.via_from.Tx()), SPACE),
    "namespace_alone": (pipe(nsp.alone.Tx()), SPACE),
}
print(json.dumps([
    {name: search(*how, store=os.path.join(folder, name + ".sqlite"))
     for name, how in SEARCHES.items()}
    for folder in sys.argv[1:]
]))
"""

FILES = {
    "transformer.py": TRANSFORMER,
    "constant.py": CONSTANT,
    "predictor.py": PREDICTOR,
    "factory.py": FACTORY,
    "default.py": DEFAULT,
    "decorator.py": DECORATOR,
    "uses_cfg.py": USES_CFG,
    "closures.py": CLOSURES,
    "settable.py": CONSTANT,
    "cosmetic.py": TRANSFORMER,
    "nsp/knobs.py": "FACTOR = 1.0\n",
    "nsp/other.py": "FACTOR = 1.0\n",
    "nsp/through.py": NS_THROUGH,
    "nsp/via_from.py": NS_FROM,
    "nsp/alone.py": NS_ALONE,
    "nsp/helpers.py": "import numpy as np\n\n\ndef log_abs(X):\n    return np.log1p(np.abs(X))\n",
    "run.py": PRELUDE + DRIVER,
}

EDITS = {
    "transformer.py": [("np.log1p(", "np.sqrt(")],
    "constant.py": [("FACTOR = 1.0", "FACTOR = 100.0")],
    "predictor.py": [FLIP],
    "factory.py": [("scaled(1.0)", "scaled(100.0)")],
    "default.py": [("k=1.0", "k=100.0")],
    "decorator.py": [("@times(1.0)", "@times(100.0)")],
    "cosmetic.py": COSMETIC,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run every search, edit the modules, set VALUE=100 and run again: before, resumed, fresh."""
    tmp = tmp_path_factory.mktemp("edited")
    folder = _write(tmp / "project", FILES)
    kept, fresh = _write(tmp / "kept", {}), _write(tmp / "fresh", {})
    (before,) = json.loads(_python(folder, "run.py", kept).splitlines()[-1])
    for name, replacements in EDITS.items():
        _edit(folder / name, *replacements)
    resumed, anew = json.loads(_python(folder, "run.py", kept, fresh, value=100.0).splitlines()[-1])
    return before, resumed, anew


# 1. The user's transformer and estimator, edited (``predict`` reached through ``score``) ----


@pytest.mark.slow
def test_an_edited_transform_constant_or_predict_is_recomputed_in_a_new_process(runs):
    _assert_resumed_as_fresh(runs, ["transform", "constant", "predict", "gated_predict"])


# 2. A value a closure, a default or a decorator captured, reached through a module global --


@pytest.mark.slow
def test_values_captured_by_a_closure_a_default_or_a_decorator_are_recomputed(runs):
    _assert_resumed_as_fresh(runs, ["closure", "default", "decorator"])


# 3. A module without a file (held in a closure, imported by a transformer), set at run time


@pytest.mark.slow
def test_an_attribute_set_at_run_time_on_a_module_without_a_file_is_recomputed(runs):
    _assert_resumed_as_fresh(runs, ["fileless_closure", "fileless_transformer"])


# 4. A file module's constant, set at run time by the driver while its file says 1.0 ------


@pytest.mark.slow
def test_an_attribute_set_at_run_time_on_a_file_module_is_recomputed(runs):
    _assert_resumed_as_fresh(runs, ["set_transformer", "set_closure"])


# 8. A namespace package's module constant, set at run time, read through the package --------


@pytest.mark.slow
def test_a_constant_of_a_namespace_package_module_set_at_run_time_is_recomputed(runs):
    _assert_resumed_as_fresh(runs, ["namespace_through", "namespace_from"])


def test_a_module_of_a_namespace_package_is_not_recomputed_for_its_siblings_values(runs):
    # The package has no code that reads its modules' values: a sibling's constant set at
    # run time is no input of a module that never names it (issue 50: in a process with
    # hundreds of test modules, every identification walked them all, seconds a call).
    before, resumed, fresh = (run["namespace_alone"] for run in runs)
    assert "reusing 6 of 6 units; 0 to compute" in resumed["log"], resumed["log"]
    assert resumed["scores"] == before["scores"] == fresh["scores"]


# 5. One process: a package edited on disk and reloaded ---------------------------------------

# Both packages hold the same transformer; ``plainpkg`` is on sys.path, ``editpkg`` is an
# editable install (a dist-info and a .pth file in a site folder that the driver adds).
RELOAD = """\
import site
import sys

site.addsitedir(sys.argv[1])  # before anything reads the installed distributions

import importlib  # noqa: E402
from pathlib import Path  # noqa: E402

import editpkg  # noqa: E402
import plainpkg  # noqa: E402
from parcv.plan.code import origin_of  # noqa: E402

PACKAGES = {"plain": plainpkg, "editable": editpkg}


def searches(folder):
    os.makedirs(folder, exist_ok=True)
    return {name: search(pipe(package.Tx()), SPACE, store=os.path.join(folder, name + ".sqlite"))
            for name, package in PACKAGES.items()}


before = searches(sys.argv[2])
for package in PACKAGES.values():
    source = Path(package.__file__)
    source.write_text(source.read_text().replace("np.log1p(", "np.sqrt("))
    importlib.reload(package)
resumed = searches(sys.argv[2])
fresh = searches(sys.argv[3])
print(json.dumps({"origins": {name: origin_of(p.__name__).kind for name, p in PACKAGES.items()},
                  "runs": [before, resumed, fresh]}))
"""


def _editable_install(site: Path, source: Path, name: str) -> None:
    """Lay out ``name`` 1.0 as ``pip install -e`` does: a dist-info and a .pth file."""
    info = site / f"{name}-1.0.dist-info"
    pth = f"__editable__.{name}-1.0.pth"
    url = {"url": source.as_uri(), "dir_info": {"editable": True}}
    files = {
        "METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        "INSTALLER": "pip\n",
        "top_level.txt": f"{name}\n",
        "direct_url.json": json.dumps(url),
    }
    record = [f"{info.name}/{file},," for file in [*files, "RECORD"]] + [f"{pth},,"]
    _write(info, {**files, "RECORD": "\n".join(record) + "\n"})
    (site / pth).write_text(f"{source}\n")


@pytest.mark.slow
def test_a_package_edited_and_reloaded_in_one_process_is_recomputed(tmp_path):
    folder = _write(tmp_path / "project", {"run.py": PRELUDE + RELOAD,
                                           "plainpkg/__init__.py": TRANSFORMER})  # fmt: skip
    source = _write(tmp_path / "src", {"editpkg/__init__.py": TRANSFORMER})
    site = _write(tmp_path / "site", {})
    _editable_install(site, source, "editpkg")
    said = json.loads(_python(folder, "run.py", site, tmp_path / "kept", tmp_path / "fresh"))
    assert said["origins"] == {"plain": "user", "editable": "editable"}
    _assert_resumed_as_fresh(said["runs"], ["plain", "editable"])


# 6. The opposite cost ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_docstring_a_comment_or_a_new_layout_recomputes_nothing(runs):
    before, resumed, fresh = (run["cosmetic"] for run in runs)
    assert "reusing 6 of 6 units; 0 to compute" in resumed["log"], resumed["log"]
    assert resumed["scores"] == before["scores"] == fresh["scores"]


# 7. A spec run through the command line ------------------------------------------------------

SPEC = """\
[data]
source = "sklearn:diabetes"
n_samples = 60

[estimator]
steps = [
  { name = "tx", class = "mod2.Tx" },
  { name = "ridge", class = "sklearn.linear_model.Ridge" },
]

[space]
ridge__alpha = [0.01, 1.0]

[cv]
cv = 3

[run]
seed = 0

[report]
plots = false
"""


def _scores(folder: Path) -> list[float]:
    loaded = parcv.load(folder / "out" / "store.sqlite")
    assert isinstance(loaded, parcv.SearchResult)
    return [float(s) for s in loaded.cv_results_["mean_test_score"]]


@pytest.mark.slow
def test_a_spec_run_resumed_after_an_edit_of_a_module_beside_the_spec_is_recomputed(tmp_path):
    folder = _write(tmp_path / "project", {"spec.toml": SPEC, "mod2.py": TRANSFORMER})
    run = ["run", "spec.toml", "--out", "out", "--backend", "serial", "--quiet"]
    _python(folder, "-m", "parcv.cli", *run)
    before = _scores(folder)
    _edit(folder / "mod2.py", ("np.log1p(", "np.sqrt("))
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(folder, elsewhere, ignore=shutil.ignore_patterns("out"))
    # The resume, then a fresh run in the other folder: two runs of the command's main in one
    # process, as a new process would start each (the module is first imported edited).
    both = (
        "import os\nfrom parcv.cli import main\n"
        f"assert main({[*run, '--resume']!r}) == 0\n"
        f"os.chdir({str(elsewhere)!r})\nassert main({run!r}) == 0\n"
    )
    _python(folder, "-c", both)
    resumed, fresh = _scores(folder), _scores(elsewhere)
    assert fresh != before, "the edit changed nothing"
    assert resumed == fresh, f"resumed {resumed} vs fresh {fresh}"
