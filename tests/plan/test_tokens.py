"""The one tokenizer: exact, order-free where order means nothing, equal across processes."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.metrics import get_scorer, make_scorer, mean_absolute_error
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from token_values import build, power

from parcv.plan.keys import candidate_digest
from parcv.plan.tokens import (
    TokenError,
    estimator_token,
    register_token,
    token,
    token_hex,
    values_hex,
)

HERE = Path(__file__).parent

# Descriptions (see token_values.py): equal repr <=> equal values.
_leaf = st.one_of(
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False, width=32),
    st.sampled_from(["a", "b", ""]),
    st.booleans(),
    st.none(),
)
_array = st.tuples(
    st.just("array"),
    st.sampled_from(["<f8", "<f4", "<i8"]),
    st.just((-1,)),
    st.lists(st.integers(-2, 2), min_size=0, max_size=1500),
)
_frame = st.tuples(
    st.just("frame"),
    st.sampled_from([("x",), ("x", "y"), ("y", "x")]),
    st.lists(st.integers(-2, 2), min_size=2, max_size=2),
)
_values = st.recursive(
    st.one_of(
        _leaf,
        _array,
        _frame,
        st.tuples(st.just("closure"), st.sampled_from([1.0, 2.0, 3.0])),
        st.tuples(st.just("partial"), st.sampled_from([1.0, 2.0])),
        st.tuples(st.just("ridge"), st.sampled_from([1.0, 2.0])),
    ),
    lambda inner: st.one_of(
        st.tuples(st.just("list"), st.lists(inner, max_size=3).map(tuple)),
        st.tuples(st.just("tuple"), st.lists(inner, max_size=3).map(tuple)),
        st.tuples(
            st.just("dict"),
            st.dictionaries(st.sampled_from("pqr"), inner, max_size=3).map(
                lambda d: tuple(sorted(d.items()))
            ),
        ),
        st.tuples(st.just("ridge"), inner),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=_values, b=_values)
def test_values_that_differ_get_different_tokens_and_equal_values_equal_ones(a, b):
    try:
        left, right = build(a), build(b)
    except ValueError:  # a frame whose values do not fill its columns
        return
    equal = repr(a) == repr(b)
    assert (token(left) == token(right)) == equal
    assert token(left) == token(build(a))  # a second build of the same description
    # As a candidate's value: the content key of its units.
    keys = [candidate_digest(Ridge(), {"alpha": v}) for v in (left, right)]
    assert (keys[0] == keys[1]) == equal


_SAMPLES = [
    ("array", "<f8", (-1,), list(range(1200))),
    ("array", "<f4", (-1,), list(range(1200))),
    ("array", "<i8", (-1,), [1, 2, 3]),
    ("closure", 1.0),
    ("closure", 3.0),
    ("partial", 2.0),
    ("frame", ("x", "y"), [1, 2, 3, 4]),
    ("frame", ("y", "x"), [1, 2, 3, 4]),
    ("ridge", ("array", "<f8", (-1,), [1, 2])),
    ("dict", (("p", ("list", (1, 2.0, "a", None, True))), ("q", ("tuple", ())))),
]


def test_equal_values_get_equal_tokens_in_another_process():
    here = [[token_hex(build(d)), candidate_digest(Ridge(), {"alpha": build(d)}).hex()]
            for d in _SAMPLES]  # fmt: skip
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]);"
        "from token_values import build; from parcv.plan.tokens import token_hex;"
        "from parcv.plan.keys import candidate_digest; from sklearn.linear_model import Ridge;"
        "print(json.dumps([(token_hex(build(d)), candidate_digest(Ridge(), {'alpha': build(d)})"
        ".hex()) for d in eval(sys.argv[3])]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    root = str(HERE.parent.parent)
    command = [sys.executable, "-c", script, str(HERE), root, repr(_SAMPLES)]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True, timeout=120)
    assert json.loads(out.stdout) == here
    assert len({t for pair in here for t in pair}) == 2 * len(here)


def test_long_arrays_that_differ_in_one_entry_differ():
    a = np.ones(1200)
    b = a.copy()
    b[600] = 1e6
    assert token(a) != token(b)
    assert token(Ridge(alpha=a)) != token(Ridge(alpha=b))
    assert candidate_digest(Ridge(), {"alpha": a}) != candidate_digest(Ridge(), {"alpha": b})
    assert token(a) == token(a.copy()) == token(np.asfortranarray(a))
    assert token(a) != token(a.astype("<f4")) != token(a.reshape(600, 2))
    masked = [np.ma.masked_array(a, mask=a > k) for k in (0.5, 2.0)]
    assert token(masked[0]) != token(masked[1]) and token(masked[0]) != token(a)


def test_closures_of_one_factory_differ_by_their_captured_values():
    pipes = [make_pipeline(FunctionTransformer(power(k)), LinearRegression()) for k in (1.0, 3.0)]
    assert token(pipes[0]) != token(pipes[1])
    assert token(power(2.0)) == token(power(2.0))
    template = make_pipeline(FunctionTransformer(), LinearRegression())
    digests = [candidate_digest(template, {"functiontransformer__func": power(k)})
               for k in (1.0, 3.0, 3.0)]  # fmt: skip
    assert digests[0] != digests[1] == digests[2]


def test_functions_differ_by_code_defaults_and_partial_arguments():
    def f(z, k=1):
        return z + k

    def g(z, k=1):
        return z - k

    def h(z, k=2):
        return z + k

    assert len({token(f), token(g), token(h)}) == 3
    assert token(functools.partial(f, k=1)) != token(functools.partial(f, k=2))
    assert token(functools.partial(f, k=1)) == token(functools.partial(f, k=1))


def test_estimators_differ_by_nested_parameters_and_other_attributes():
    a = make_pipeline(StandardScaler(with_mean=False), Ridge())
    b = make_pipeline(StandardScaler(), Ridge())
    assert token(a) != token(b)
    assert token(clone(a)) == token(a)
    plain, pandas_out = StandardScaler(), StandardScaler().set_output(transform="pandas")
    assert token(plain) != token(pandas_out)
    params = Ridge().get_params(deep=False)
    assert estimator_token(Ridge, {**params, "alpha": 3.0}, {}) == token(Ridge(alpha=3.0))


def test_frames_series_and_sparse_matrices_count_index_columns_and_dtypes():
    df = pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]})
    assert token(df) == token(df.copy())
    assert token(df) != token(df.rename(columns={"a": "c"}))
    assert token(df) != token(df.set_index(pd.Index([5, 6])))
    assert token(df) != token(df.astype({"a": "int32"}))
    assert token(df["a"]) != token(df["a"].rename("z"))
    assert token(pd.Categorical(["a", "b"])) != token(pd.Categorical(["a", "c"]))
    m = sp.random(30, 30, density=0.1, random_state=0, format="csr")
    assert token(m) == token(m.copy())
    assert token(m) != token(m * 2) != token(m.tocsc())


def test_scorers_splitters_and_random_states_are_exact():
    assert token(get_scorer("r2")) == token(get_scorer("r2"))
    assert token(get_scorer("r2")) != token(get_scorer("neg_mean_squared_error"))
    assert token(make_scorer(mean_absolute_error)) != token(
        make_scorer(mean_absolute_error, greater_is_better=False)
    )
    assert token(KFold(3, shuffle=True, random_state=0)) != token(
        KFold(3, shuffle=True, random_state=1)
    )
    assert token(np.random.RandomState(0)) != token(np.random.RandomState(1))
    assert token(np.random.RandomState(0)) == token(np.random.RandomState(0))


def test_dict_order_does_not_count_but_types_do():
    assert token({"a": 1, "b": 2}) == token({"b": 2, "a": 1})
    assert token({1: "a", "1": "a"}) == token({"1": "a", 1: "a"})
    assert len({token(1), token(1.0), token(True), token("1"), token(np.int64(1))}) == 5
    assert token([1, 2]) != token((1, 2)) != token({1, 2})


def test_a_cycle_is_tokened_not_looped():
    a: list = [1]
    a.append(a)
    b: list = [1]
    b.append(b)
    assert token(a) == token(b)


def test_a_value_that_cannot_be_identified_is_refused_by_where_it_sits():
    with pytest.raises(
        TokenError,
        match=r"cannot identify the part \['step'\] of the value exactly.*__parcv_token__",
    ):
        token({"step": threading.Lock()})


def test_own_types_can_say_what_identifies_them():
    class Holder:
        def __init__(self, lock, size):
            self.lock, self.size = lock, size

        def __parcv_token__(self):
            return self.size

    assert token(Holder(threading.Lock(), 1)) == token(Holder(threading.Lock(), 1))
    assert token(Holder(threading.Lock(), 1)) != token(Holder(threading.Lock(), 2))

    class Other:
        def __init__(self, lock, size):
            self.lock, self.size = lock, size

    @register_token(Other)
    def _other(value):
        return value.size

    assert token(Other(threading.Lock(), 1)) == token(Other(threading.Lock(), 1))


_NUMBER_TYPES = [np.float64, np.float32, np.float16, np.complex128, np.complex64, np.bool_,
                 np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                 np.uint64, np.longdouble, np.timedelta64, np.datetime64, np.str_]  # fmt: skip


class _NeverKept(dict):  # type: ignore[type-arg]
    def __setitem__(self, key, value):
        pass


def _numpy_scalar(t, raw, unit):
    if t is np.timedelta64:
        return np.timedelta64(raw % 1000, unit)  # one type, a dtype per unit
    if t is np.datetime64:
        return np.datetime64(raw % 10**6, unit)
    if t is np.str_:
        return np.str_(str(raw))
    if t is np.bool_:
        return np.bool_(raw % 2)
    info = np.iinfo(t) if issubclass(t, np.integer) else None
    if info is not None:
        return t(raw % (info.max - info.min + 1) + info.min)
    return t(raw % 60000 / 7.0)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    kinds=st.lists(st.sampled_from(_NUMBER_TYPES), min_size=1, max_size=4),
    raw=st.integers(-(2**70), 2**70),
    special=st.sampled_from([None, 0.0, -0.0, float("nan"), float("inf")]),
    units=st.lists(st.sampled_from(["s", "ms", "D"]), min_size=4, max_size=4),
)
def test_numpy_numbers_token_as_their_normal_form_whether_met_first_or_again(
    monkeypatch, kinds, raw, special, units
):
    """The walk writes a numpy number's atoms at once once its type is met: the same bytes."""
    from parcv.plan import tokens

    values = [_numpy_scalar(t, raw, unit) for t, unit in zip(kinds, units, strict=False)]
    if special is not None:
        values.append(np.float64(special))
    value = {"a": values, "b": tuple(values), "c": values[0]}
    again = token(value), token(value)  # the second meets every type again
    with monkeypatch.context() as patched:
        patched.setattr(tokens, "_SCALAR_PREFIX", _NeverKept())
        generic = token(value)  # every number through _numpy_scalar's normal form
    assert again == (generic, generic)


class _Tunable(Ridge):
    """A parameter holding code of the user's own, and an attribute besides the parameters."""

    def __init__(self, alpha=1.0, func=None, name="x", flag=False):
        super().__init__(alpha=alpha)
        self.func = func
        self.name = name
        self.flag = flag


_PLAIN_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.binary(max_size=4),
    st.floats(-1e6, 1e6).map(np.float64),
    st.integers(-100, 100).map(np.int64),
    st.floats(-1e3, 1e3, width=32).map(np.float32),
    st.booleans().map(np.bool_),
    st.lists(st.integers(0, 3), max_size=2),  # not plain: the whole walk
    st.just(np.array([1.0, 2.0])),
)
_TEMPLATES = [
    Ridge(),
    _Tunable(func=lambda x: x + 1),
    _Tunable(func=functools.partial(np.add, 1.0), name="y"),
    StandardScaler().set_output(transform="pandas"),  # an attribute besides the parameters
    LinearRegression(),
]


@settings(max_examples=60, deadline=None)
@given(
    which=st.integers(0, len(_TEMPLATES) - 1),
    values=st.lists(_PLAIN_VALUES, min_size=1, max_size=4),
    pick=st.randoms(use_true_random=False),
)
def test_an_estimator_template_identifies_candidates_as_the_whole_walk(which, values, pick):
    """A candidate's identity through a template is the one of walking it whole, bit for bit."""
    from parcv.plan.tokens import Tokenizer

    estimator = _TEMPLATES[which]
    base = estimator.get_params(deep=False)
    extra = {k: v for k, v in vars(clone(estimator)).items() if k not in base}
    names = pick.sample(sorted(base), min(len(values), len(base)))
    params = dict(zip(names, values, strict=False))
    tokenizer = Tokenizer()
    whole = tokenizer.identify_estimator(type(estimator), {**base, **params}, extra)
    template = tokenizer.estimator_template(type(estimator), base, extra, frozenset(params))
    found = template.identify(params)
    if found is None:  # a value that is not plain: the caller walks the candidate whole
        assert any(isinstance(v, (list, np.ndarray)) for v in params.values())
        return
    assert found.values == whole.values
    assert found.environment == whole.environment
    assert found.token == token(clone(estimator).set_params(**params))
    # A candidate's id tokens its parameters alone, through a template of their names.
    assert values_hex(params) == Tokenizer().values_token(params).hex()
    assert Tokenizer().values_template(frozenset(params)).identify(params).values == (
        Tokenizer().values_token(params)
    )
