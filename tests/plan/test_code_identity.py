"""Code is part of identity: user code by its code and what it reaches, libraries by version.

User modules are written to a temporary directory and executed under one module name per
test; an edit executes the new source under the same name, as a new process importing the
edited file would.
"""

from __future__ import annotations

import itertools
import sys
import textwrap
import threading
import types
from pathlib import Path

import numpy as np
import pytest
import scipy.special
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge
from sklearn.preprocessing import FunctionTransformer

from parcv.plan import code
from parcv.plan.code import CodeEntry, Environment, describe_changes, origin_of
from parcv.plan.keys import candidate_digest
from parcv.plan.tokens import TokenError, identify, token

_COUNTER = itertools.count()


@pytest.fixture
def user_modules(tmp_path):
    """``load(name, source)`` executes ``source`` as the user module ``name`` (again on edits)."""
    loaded = []

    def load(name, source):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        module = types.ModuleType(name)
        module.__file__ = str(path)
        sys.modules[name] = module
        loaded.append(name)
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)


def _name(stem):
    return f"parcv_user_{stem}_{next(_COUNTER)}"


HELPERS = """
SCALE = {scale}

def scale(x):
    return x * SCALE{tail}
"""

MODELS = """
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
import {helpers} as helpers
from {helpers} import scale

OFFSET = {offset}


class Base(RegressorMixin, BaseEstimator):
    def shift(self):
        return OFFSET


class MyModel(Base):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        self.coef_ = np.linalg.lstsq(scale(X), y, rcond=None)[0]
        return self

    def predict(self, X):
        return scale(X) @ self.coef_ + self.shift(){extra}


def score(estimator, X, y):
    return -float(np.mean((estimator.predict(X) - y) ** 2)) / scale(1.0)


reads_attribute = lambda x: helpers.SCALE * x
"""


def _models(load, *, scale=2.0, tail="", offset=0.0, extra=""):
    helpers = load(_models.helpers, HELPERS.format(scale=scale, tail=tail))
    models = load(_models.models, MODELS.format(helpers=_models.helpers, offset=offset,
                                               extra=extra))  # fmt: skip
    return helpers, models


@pytest.fixture
def models(user_modules):
    _models.helpers, _models.models = _name("helpers"), _name("models")
    return lambda **edit: _models(user_modules, **edit)


@pytest.mark.parametrize(
    ("edit", "changed"),
    [
        ({"tail": " + 0.0"}, "function scale in"),
        ({"scale": 3.0}, "constant SCALE in"),
        ({"offset": 1.0}, "constant OFFSET in"),
        ({"extra": " * 1.0"}, "method MyModel.predict in"),
    ],
)
def test_an_edit_anywhere_the_estimator_reaches_changes_its_key_and_says_where(
    models, edit, changed
):
    _, before = models()
    old, old_candidate = (
        identify(before.MyModel(alpha=2.0)),
        candidate_digest(Ridge(), {"alpha": before.MyModel()}),
    )
    _, after = models(**edit)
    new = identify(after.MyModel(alpha=2.0))
    assert new.values == old.values  # the values are the same: only code changed
    assert new.token != old.token
    assert candidate_digest(Ridge(), {"alpha": after.MyModel()}) != old_candidate
    (cause,) = describe_changes(old.environment, new.environment)
    assert cause.startswith(changed) and cause.endswith("changed")
    # Unchanged code keeps its key: the same source executed again.
    _, again = models(**edit)
    assert identify(again.MyModel(alpha=2.0)).token == new.token


def test_a_base_class_method_counts_and_installed_bases_count_by_version(models):
    _, module = models()
    names = identify(module.MyModel()).names()
    assert {f"{module.__name__}.Base", f"{module.__name__}.Base.shift"} <= set(names)
    assert {"scikit-learn", "numpy", "scipy"} <= set(names)


def test_a_lambda_reading_a_module_attribute_changes_with_it(models):
    _, before = models()
    old = identify(FunctionTransformer(before.reads_attribute))
    _, after = models(scale=5.0)
    new = identify(FunctionTransformer(after.reads_attribute))
    assert old.values == new.values and old.token != new.token
    assert describe_changes(old.environment, new.environment) == (
        f"constant SCALE in {_models.helpers}.py changed",
    )


def test_a_scoring_function_counts_its_whole_module_and_the_modules_it_imports(models):
    edits = ({}, {"tail": " + 1.0"}, {"scale": 3.0}, {"offset": 1.0})
    digests = [token(models(**edit)[1].score) for edit in edits]
    # The helper it calls, the constant that reads, and a constant of its own module it does
    # not read: the module is one piece of code (sound, never stale), not one per definition.
    assert len(set(digests)) == 4
    assert token(models(tail=" + 1.0")[1].score) == digests[1]


def test_code_that_calls_itself_is_identified_without_looping(user_modules):
    source = """
    def even(n):
        return n == 0 or odd(n - 1)

    def odd(n):
        return n != 0 and even(n - 1)

    class Node:
        def walk(self):
            return super().__repr__() + str(Node)
    """
    name = _name("cycles")
    first = user_modules(name, source)
    digests = (token(first.even), token(first.odd), token(first.Node()))
    again = user_modules(name, source)
    assert (token(again.even), token(again.odd), token(again.Node())) == digests
    edited = user_modules(name, source.replace("n - 1)\n\n    def odd", "n - 2)\n\n    def odd"))
    assert token(edited.odd) != digests[1]  # odd reaches even, whose body changed


def test_anonymous_code_is_exact_where_it_sits():
    f, g = (lambda x: x + 1), (lambda x: x + 2)
    assert token([f, g]) != token([g, f])
    assert token({"a": f, "b": g}) != token({"a": g, "b": f})
    assert token(FunctionTransformer(f)) != token(FunctionTransformer(g))


def test_closures_keep_their_captured_values_in_the_values_part():
    def power(k):
        return lambda z: z**k

    one, three = identify(power(1.0)), identify(power(3.0))
    assert one.values != three.values
    assert one.environment.digest == three.environment.digest


def test_installed_code_is_identified_by_its_distribution_versions(monkeypatch):
    before = identify(Ridge(alpha=1.0))
    assert origin_of("sklearn.linear_model").distributions == ("scikit-learn",)
    assert origin_of("json").kind == "stdlib"
    real = code.distribution_version

    def upgraded(name):
        return "99.0" if name == "scikit-learn" else real(name)

    monkeypatch.setattr(code, "distribution_version", upgraded)
    after = identify(Ridge(alpha=1.0))
    assert after.values == before.values and after.token != before.token
    (cause,) = describe_changes(before.environment, after.environment)
    assert cause == f"scikit-learn {real('scikit-learn')} → 99.0"
    assert token(1.5) == identify(1.5).values  # plain values reach no code


def test_numpy_upgrade_reaches_a_scikit_learn_estimator(monkeypatch):
    before = token(Ridge())
    real = code.distribution_version
    monkeypatch.setattr(code, "distribution_version",
                        lambda name: "0.0" if name == "numpy" else real(name))  # fmt: skip
    assert token(Ridge()) != before


def test_every_distribution_the_standard_library_maps_a_module_to_is_mapped():
    import importlib.metadata

    code._top_level_distributions.cache_clear()
    ours = code._top_level_distributions()
    for top, dists in importlib.metadata.packages_distributions().items():
        assert set(dists) <= set(ours.get(top, ())), top


@pytest.fixture
def compiled_wheel(tmp_path, monkeypatch):
    """A wheel's install ``fakec`` 1.0 whose one module is compiled, without ``top_level.txt``.

    The module is a copy of numpy's ``_multiarray_tests`` extension at the top level: the
    standard library's map of Python 3.10 and 3.11 names no distribution for it.
    """
    import numpy._core._multiarray_tests as source

    site = tmp_path / "site-packages"
    info = site / "fakec-1.0.dist-info"
    info.mkdir(parents=True)
    so = Path(source.__file__)
    (site / so.name).write_bytes(so.read_bytes())
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakec\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"{so.name},,\nfakec-1.0.dist-info/METADATA,,\n"
                                 "fakec-1.0.dist-info/RECORD,,\n")  # fmt: skip
    monkeypatch.syspath_prepend(str(site))
    code._top_level_distributions.cache_clear()
    monkeypatch.setattr(code, "_ORIGINS", {})
    monkeypatch.delitem(sys.modules, "_multiarray_tests", raising=False)
    import _multiarray_tests

    yield _multiarray_tests
    sys.modules.pop("_multiarray_tests", None)
    code._top_level_distributions.cache_clear()


def test_an_upgrade_of_a_distribution_whose_top_level_module_is_compiled_changes_the_key(
    compiled_wheel, monkeypatch
):
    assert origin_of("_multiarray_tests").distributions == ("fakec",)
    before = identify(FunctionTransformer(compiled_wheel.IsPythonScalar))
    assert "fakec" in before.names()
    real = code.distribution_version
    monkeypatch.setattr(code, "distribution_version",
                        lambda name: "2.0" if name == "fakec" else real(name))  # fmt: skip
    after = identify(FunctionTransformer(compiled_wheel.IsPythonScalar))
    assert after.values == before.values and after.token != before.token


def test_ufuncs_are_identified_by_their_importable_name_and_version():
    found = identify(FunctionTransformer(scipy.special.expit))
    assert {"scipy", "numpy", "scikit-learn"} <= set(found.names())
    assert token(scipy.special.expit) != token(scipy.special.logit)
    assert token(np.log1p) != token(np.expm1)
    assert token(FunctionTransformer(scipy.special.expit)) == token(
        FunctionTransformer(scipy.special.expit)
    )


def test_the_module_holding_a_ufunc_is_found_without_running_any_modules_getattr(monkeypatch):
    asked: list[str] = []
    lazy = types.ModuleType("parcv_test_lazy")  # a module whose __getattr__ makes anything
    lazy.__getattr__ = lambda name: asked.append(name) or scipy.special.expit  # type: ignore
    monkeypatch.setitem(sys.modules, "parcv_test_lazy", lazy)
    # A ufunc has no __module__: it is found in the modules that hold it, not made by one.
    assert code.module_of(scipy.special.expit) == "scipy.special"
    assert asked == []


def test_compiled_code_outside_any_distribution_is_refused_by_name(user_modules):
    loose = np.frompyfunc(lambda v: v, 1, 1)  # a ufunc no module holds
    with pytest.raises(TokenError, match=r"names no module it comes from"):
        token(FunctionTransformer(loose))
    module = user_modules(_name("compiled"), "")
    module.fast = loose  # a user module holding compiled code: no source, no version
    with pytest.raises(TokenError, match=r"is compiled code .* pip install"):
        token(FunctionTransformer(loose))


def test_a_global_that_is_no_value_counts_by_the_source_that_makes_it(user_modules):
    source = """
    import threading
    LOCK = threading.Lock()

    def guarded(x):
        with LOCK:
            return x{tail}
    """
    name = _name("locked")
    digests = []
    for tail in ("", "", " + 0"):
        module = user_modules(name, source.format(tail=tail))
        digests.append(token(FunctionTransformer(module.guarded)))
    assert digests[0] == digests[1] != digests[2]
    # Without a source file (a notebook's cell), it is refused by name.
    module.__file__ = None
    with pytest.raises(TokenError, match=r"LOCK .* \(reached from function .*guarded\)"):
        token(FunctionTransformer(module.guarded))


def test_environments_describe_each_change_once():
    old = Environment([CodeEntry("numpy", "distribution", "2.1"),
                       CodeEntry("m.f", "function", "1", "m.py", "f")])  # fmt: skip
    new = Environment([CodeEntry("numpy", "distribution", "2.2"),
                       CodeEntry("m.f", "function", "2", "m.py", "f"),
                       CodeEntry("m.g", "function", "3", "m.py", "g")])  # fmt: skip
    assert describe_changes(old, new) == (
        "function f in m.py changed",
        "function g in m.py is reached now",
        "numpy 2.1 → 2.2",
    )
    assert describe_changes(new, new) == ()


# A property over generated user modules -----------------------------------------------------

_N_FUNCTIONS, _N_CONSTANTS, _N_AUX = 4, 3, 2


@st.composite
def _programs(draw):
    indices = st.lists(st.integers(0, _N_FUNCTIONS - 1), max_size=2, unique=True)
    consts = st.lists(st.integers(0, _N_CONSTANTS - 1), max_size=2, unique=True)
    aux = st.lists(st.integers(0, _N_AUX - 1), max_size=1, unique=True)
    return {
        "constants": draw(
            st.lists(st.integers(0, 2), min_size=_N_CONSTANTS, max_size=_N_CONSTANTS)
        ),
        "aux": draw(st.lists(st.integers(0, 2), min_size=_N_AUX, max_size=_N_AUX)),
        "functions": [
            {
                "literal": draw(st.integers(0, 2)),
                "calls": draw(indices),
                "reads": draw(consts),
                "aux_reads": draw(aux),
            }
            for _ in range(_N_FUNCTIONS)
        ],
    }


def _edit(draw_program, edit):
    kind, where, value = edit
    program = {
        "constants": list(draw_program["constants"]),
        "aux": list(draw_program["aux"]),
        "functions": [dict(f) for f in draw_program["functions"]],
    }
    if kind in ("constants", "aux"):
        program[kind][where % len(program[kind])] = value
    elif kind == "literal":
        program["functions"][where]["literal"] = value
    else:  # rewire: another function called
        program["functions"][where]["calls"] = sorted({value % _N_FUNCTIONS})
    return program


def _source(program, aux_name):
    lines = [f"import {aux_name} as aux", ""]
    lines += [f"C{i} = {v}" for i, v in enumerate(program["constants"])]
    for j, f in enumerate(program["functions"]):
        terms = ["x", str(f["literal"])]
        terms += [f"C{i}" for i in f["reads"]] + [f"aux.D{k}" for k in f["aux_reads"]]
        terms += [f"f{m}(x)" for m in f["calls"]]
        lines += ["", f"def f{j}(x):", f"    return {' + '.join(terms)}"]
    return "\n".join(lines) + "\n"


def _reachable(program):
    """What the unit f0 reaches: its module and the one it imports, whole."""
    return program["constants"], program["aux"], program["functions"]


_EDITS = st.tuples(
    st.sampled_from(["constants", "aux", "literal", "calls"]),
    st.integers(0, _N_FUNCTIONS - 1),
    st.integers(0, 3),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])  # fmt: skip  # noqa: E501
@given(program=_programs(), edit=_EDITS)
def test_the_key_changes_exactly_when_a_module_the_unit_imports_changes(user_modules, program,
                                                                       edit):  # fmt: skip
    edited = _edit(program, edit)
    main, aux, other = _name("gen"), _name("aux"), _name("other")
    tokens = []
    for i, version in enumerate((program, edited)):
        user_modules(aux, "".join(f"D{k} = {v}\n" for k, v in enumerate(version["aux"])))
        # A module of the user's that the code does not import: never part of the key.
        user_modules(other, f"UNRELATED = {i}\n")
        module = user_modules(main, _source(version, aux))
        tokens.append(identify(FunctionTransformer(module.f0)))
    assert tokens[0].values == tokens[1].values  # f0 is named: its values never change
    assert (tokens[0].token == tokens[1].token) == (_reachable(program) == _reachable(edited))


# Soundness: whatever a unit can read counts; documentation and layout never do -------------

TRANSFORMER = '''\
"""{module_doc}"""
import functools

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

FACTOR = {factor}


def scaled(k):
    def apply(Z):
        return Z * k
    return apply


def times(k):
    def decorate(f):
        def wrapper(Z):  # no functools.wraps
            return f(Z) * k
        return wrapper
    return decorate


@times({decorated})
def doubled(Z):
    return Z * 2.0


helper = scaled({captured})
with_default = lambda Z, k={default}: Z * k  # noqa: E731
partial = functools.partial(np.multiply, {partial})


class Tx(TransformerMixin, BaseEstimator):
    """{class_doc}"""

    def fit(self, X, y=None):
        {fit_doc}return self

    def transform(self, X):
        return {body}
'''

_TX = {"module_doc": "", "factor": 1.0, "decorated": 1.0, "captured": 1.0, "default": 1.0,
       "partial": 1.0, "class_doc": "", "fit_doc": "", "body": "X * FACTOR"}  # fmt: skip

_SEMANTIC = [
    {"body": "np.sqrt(np.abs(X)) * FACTOR"},  # transform: called by TransformerMixin only
    {"factor": 100.0},
    {"body": "helper(X)", "captured": 100.0},  # a closure from a factory, through a global
    {"body": "with_default(X)", "default": 100.0},  # a lambda's default
    {"body": "doubled(X)", "decorated": 100.0},  # a decorator without functools.wraps
    {"body": "partial(X)", "partial": 100.0},
]
_NEUTRAL = [
    {"module_doc": "Models."},
    {"class_doc": "A transformer."},
    {"fit_doc": '"""Nothing to learn."""\n        '},
    {"body": "X * FACTOR  # scaled"},
    {"body": "(\n            X\n            * FACTOR\n        )"},
]


def _tx_token(user_modules, name, **edit):
    module = user_modules(name, TRANSFORMER.format(**{**_TX, **edit}))
    return token(module.Tx())


@pytest.mark.parametrize("edit", _SEMANTIC, ids=lambda e: ",".join(e))
def test_any_edit_a_transformer_can_read_changes_its_key(user_modules, edit):
    name = _name("tx")
    base = {k: v for k, v in edit.items() if k == "body" and len(edit) > 1}
    assert _tx_token(user_modules, name, **base) != _tx_token(user_modules, name, **edit)


@pytest.mark.parametrize("edit", _NEUTRAL, ids=lambda e: ",".join(e))
def test_comments_docstrings_and_layout_keep_the_key(user_modules, edit):
    name = _name("tx")
    assert _tx_token(user_modules, name) == _tx_token(user_modules, name, **edit)


def test_a_module_attribute_assigned_at_run_time_counts(user_modules):
    module = user_modules(_name("tx"), TRANSFORMER.format(**_TX))
    before = token(module.Tx())
    module.FACTOR = 100.0  # what the driver script does after the import
    after = identify(module.Tx())
    assert after.token != before
    module.FACTOR = 1.0
    assert token(module.Tx()) == before


def test_a_module_without_a_file_held_in_a_closure_counts_by_its_attributes():
    cfg = types.ModuleType("cfg_without_file")
    cfg.SCALE = 1.0

    def make():
        return lambda Z: Z * cfg.SCALE

    before = token(FunctionTransformer(make()))
    cfg.SCALE = 100.0
    assert token(FunctionTransformer(make())) != before


def test_a_module_imported_by_the_estimators_module_counts_whole(user_modules):
    base, models = _name("base"), _name("models")
    source = "import {base}\n\nclass M({base}.Base):\n    pass\n"
    user_modules(base, "class Base:\n    def predict(self, X):\n        return X * 1.0\n")
    before = identify(user_modules(models, source.format(base=base)).M())
    user_modules(base, "class Base:\n    def predict(self, X):\n        return X * 2.0\n")
    after = identify(user_modules(models, source.format(base=base)).M())
    assert after.token != before.token
    assert describe_changes(before.environment, after.environment) == (
        f"method Base.predict in {base}.py changed",
    )


def test_a_module_without_a_file_read_by_a_computed_name_counts_by_every_attribute(user_modules):
    cfg = types.ModuleType(_name("cfg"))
    sys.modules[cfg.__name__] = cfg
    try:
        cfg.SCALE, cfg.LOCK = 1.0, threading.Lock()
        source = f"import {cfg.__name__} as cfg\n\ndef read(X, name='SCALE'):\n"
        source += "    return X * getattr(cfg, name)\n"
        module = user_modules(_name("reader"), source)
        first, again = identify(module.read), identify(module.read)
        # The lock cannot be identified: units reaching it are new on every run, and said so.
        assert first.token != again.token
        assert describe_changes(first.environment, again.environment) == (
            f"LOCK in {cfg.__name__} cannot be identified exactly: its units are never reused",
        )
        del cfg.LOCK
        before = token(module.read)
        assert token(module.read) == before
        cfg.SCALE = 100.0  # read by a name no code spells: every attribute counts
        assert token(module.read) != before
    finally:
        sys.modules.pop(cfg.__name__, None)


def test_a_method_patched_in_or_a_default_changed_at_run_time_counts(user_modules):
    module = user_modules(_name("tx"), TRANSFORMER.format(**_TX))
    before = identify(module.Tx())
    module.Tx.transform = lambda self, X: X * 3.0  # a notebook's patch: no file shows it
    patched = identify(module.Tx())
    assert patched.token != before.token
    # The lambda's own module (this file, and what it imports) is reached now too.
    changes = describe_changes(before.environment, patched.environment)
    assert f"what Tx holds at run time in {module.__name__}.py changed" in changes
    module = user_modules(module.__name__, TRANSFORMER.format(**_TX))
    before = token(module.Tx())
    module.Tx.fit.__defaults__ = (0.0,)  # harmless here, but what a method holds counts
    assert token(module.Tx()) != before
