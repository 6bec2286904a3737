"""Generated user packages, random edits to them, and a fresh run as the oracle of resume.

Issue 47's differential property: after any edit to the user's code, ``resume=True`` gives
exactly the numbers of a fresh run, and an edit that changes no code (a comment, a
docstring, formatting) recomputes nothing. The oracle is the fresh run's numbers, never
the key.

:func:`programs` draws a small user package (2 to 4 modules written to a folder, and
optionally a module without a file that the driver makes from a ``.src`` text, and a
module attribute the driver assigns at run time): an estimator with ``fit``,
``predict``, ``predict_proba``, ``decision_function`` and ``score`` (through a mixin in
another module), optionally behind a transformer with ``fit``, ``transform`` (called by a
mixin's ``fit_transform``) and ``get_feature_names_out``; a base class in another module;
module constants, helpers, a closure made by a factory, a lambda with a default, a
decorator with or without ``functools.wraps``, a ``functools.partial`` and a dataclass
configuration. Every one of them feeds the scores, which are continuous, so a stale
record shows up as different numbers. :func:`edits` draws one edit of a program: semantic
(one literal, constant, argument, default or choice of helper) or neutral (a comment, a
docstring, blank lines, a line break inside a call, parentheses).

:func:`check_cases` runs a batch of cases, each in two flows, and judges them:

- *process*: a first run into a SQLite store in one fresh process; the edit written to
  the files; then ``resume=True`` on that store and a fresh run into a new store, in
  another fresh process;
- *notebook*: all three runs in one process, the edited modules reloaded with
  ``importlib.reload`` (the module without a file executed again, as a cell) between the
  first run and the resume.

Each run reports its numbers (a search's mean and per-split test scores, a nested CV's
outer scores) and how many of its units it computed: a reused record keeps the time its
unit started in the run that computed it. A case fails when the resume's numbers differ
from the fresh run's in either flow, or when a neutral edit recomputed a unit.
:func:`catalogue` is one case per kind of edit; :func:`random_cases` draws uniformly for
long runs (``scripts/resume_soundness.py``).

A batch runs its cases in the same processes (each case has its own module names) to
spare interpreter start-ups. The processes run :func:`tests.soundness_driver.drive`
(``python -m tests.soundness_driver MODE SPEC``) with the packages' folder, then the
inherited ``PYTHONPATH`` (which may name another parcv source tree), then this checkout on
their path.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]

# What each generated value is, where it lives and what it may be: (module, description,
# choices). "driver" is the value the driver script assigns to base.RUNTIME at run time.
VALUES: dict[str, tuple[str, str, tuple[Any, ...]]] = {
    "scale": ("base", "module constant SCALE", (0.5, 0.8, 1.25, 2.0)),
    "lit_a": ("base", "literal in helper_a", (0.1, 0.25, 0.5)),
    "lit_b": ("base", "literal in helper_b", (0.75, 1.5, 3.0)),
    "factory_arg": ("base", "closure factory argument: POWER = make_power(k)", (0.5, 1.5, 2.0)),
    "base_lit": ("base", "method BaseRidge._penalty of the base class", (0.5, 1.0, 4.0)),
    "helper": ("model", "which helper Model._features calls", ("helper_a", "helper_b")),
    "deco_arg": ("model", "decorator argument on Model._features", (0.5, 2.0, 3.0)),
    "features_lit": ("model", "literal in Model._features", (0.1, 0.3, 0.6)),
    "fit_lit": ("model", "literal in Model.fit", (0.9, 1.0, 1.1)),
    "pred_lit": (
        "model", "literal in Model.predict (called by ScoreMixin.score)", (0.0, 0.25, -0.5),
    ),
    "proba_lit": ("model", "literal in Model.predict_proba", (0.5, 1.0, 2.0)),
    "decision_lit": ("model", "literal in Model.decision_function", (0.5, 1.0, 1.5)),
    "runtime": ("driver", "run-time value: the driver assigns base.RUNTIME = v", (0.5, 1.0, 2.0)),
    "feat_eps": ("feats", "literal in Features.fit", (0.01, 0.1, 0.5)),
    "feat_lit": (
        "feats", "literal in Features.transform (called by TransformMixin.fit_transform)",
        (0.2, 0.5, 1.0),
    ),
    "name_prefix": ("feats", "literal in Features.get_feature_names_out", ("f", "feat", "sq_")),
    "dc_shrink": (
        "cfg", "dataclass field default Config.shrink (CONFIG = Config())", (0.5, 0.8, 0.95),
    ),
    "dc_offset": (
        "cfg", "dataclass field default Config.offset (Config() in fit)", (0.0, 0.5, -1.0),
    ),
    "clip": ("cfg", "functools.partial argument: CLIP = partial(clip, bound=v)", (0.5, 1.0, 2.0)),
    "lam_default": ("cfg", "lambda default: POST = lambda z, k=v: z * k", (0.5, 1.0, 2.0)),
    "v_const": ("virt", "module constant VSCALE", (0.5, 1.0, 1.5)),
    "v_lit": ("virt", "literal in vfun", (0.0, 0.2, -0.3)),
}  # fmt: skip

# The knobs neutral edits turn: (module, what it is). ``doc``: a docstring (None: none);
# ``c``: a comment line; ``eol``: a comment at the end of a line; ``blank``: blank lines;
# ``alt``: one of two layouts of the same expression (line breaks, parentheses).
KNOBS: dict[str, tuple[str, str]] = {
    "doc:base": ("base", "module docstring"),
    "c:base.imports": ("base", "comment between the imports"),
    "eol:base.scale": ("base", "comment after SCALE"),
    "blank:base.1": ("base", "blank lines after RUNTIME"),
    "blank:base.2": ("base", "blank lines after POWER"),
    "doc:helper_a": ("base", "docstring of helper_a"),
    "doc:helper_b": ("base", "docstring of helper_b"),
    "c:helper_b.body": ("base", "comment in helper_b"),
    "doc:ScoreMixin": ("base", "docstring of class ScoreMixin"),
    "doc:ScoreMixin.score": ("base", "docstring of ScoreMixin.score"),
    "doc:BaseRidge._penalty": ("base", "docstring of BaseRidge._penalty"),
    "doc:model": ("model", "module docstring"),
    "blank:model.1": ("model", "blank lines after the imports"),
    "doc:Model": ("model", "docstring of class Model"),
    "doc:Model._features": ("model", "docstring of Model._features"),
    "doc:Model.fit": ("model", "docstring of Model.fit"),
    "c:Model.fit": ("model", "comment in Model.fit"),
    "doc:Model.predict": ("model", "docstring of Model.predict"),
    "eol:Model.predict": ("model", "comment after Model.predict's return"),
    "doc:scorer": ("model", "docstring of scorer"),
    "alt:gram": ("model", "parentheses around Z.T @ Z in Model.fit"),
    "alt:solve": ("model", "line breaks inside np.linalg.solve(...) in Model.fit"),
    "alt:predict": ("model", "line breaks and parentheses in Model.predict"),
    "doc:feats": ("feats", "module docstring"),
    "blank:feats.1": ("feats", "blank lines after the imports"),
    "doc:Features": ("feats", "docstring of class Features"),
    "doc:Features.transform": ("feats", "docstring of Features.transform"),
    "eol:Features.transform": ("feats", "comment in Features.transform"),
    "alt:hstack": ("feats", "line breaks inside np.hstack(...) in Features.transform"),
    "doc:cfg": ("cfg", "module docstring"),
    "blank:cfg.1": ("cfg", "blank lines after the imports"),
    "doc:Config": ("cfg", "docstring of the dataclass Config"),
    "eol:Config.offset": ("cfg", "comment after the field Config.offset"),
    "doc:vfun": ("virt", "docstring of vfun"),
}

DOC_TEXTS = ("Compute it.", "Return what the estimator needs.",
             "A longer docstring.\n\nIt has a second paragraph.")  # fmt: skip
COMMENT_TEXTS = ("a note", "why this is so", "TODO: revisit")

ALTERNATIVES: dict[str, tuple[str, str]] = {
    "alt:gram": ("Z.T @ Z", "(Z.T @ Z)"),
    "alt:solve": (
        "np.linalg.solve(A, rhs)",
        "np.linalg.solve(\n            A,\n            rhs,\n        )",
    ),
    "alt:predict": (
        "self._features(X) @ self.coef_ + self.mean_ * base.RUNTIME",
        "(\n            self._features(X) @ self.coef_\n            + (self.mean_ * base.RUNTIME)\n"
        "        )",
    ),
    "alt:hstack": (
        "np.hstack([Z, POWER(Z) * self.power * «v:feat_lit»])",
        "np.hstack(\n            [\n                Z,\n"
        "                POWER(Z) * self.power * «v:feat_lit»,\n            ]\n        )",
    ),
}

# Module templates. A line ``[flag]...`` is kept only when the program has the flag;
# ``«v:name»`` is a value's repr, ``«s:name»`` its text; «doc:», «c:» and «blank:» lines and
# «eol:» and «alt:» marks are the knobs above; «tag» is the case's module prefix.
BASE = """\
«doc:base»
import functools
«c:base.imports»
import numpy as np
from sklearn.base import BaseEstimator

SCALE = «v:scale»«eol:base.scale»
RUNTIME = 1.0  # the driver assigns the value its runs use
«blank:base.1»

def helper_a(Z):
    «doc:helper_a»
    return np.tanh(Z * SCALE) + «v:lit_a» * Z


def helper_b(Z):
    «doc:helper_b»
    «c:helper_b.body»
    return Z / (1.0 + np.abs(Z)) * «v:lit_b» + SCALE


def make_power(k):
    def power(Z):
        return np.sign(Z) * np.abs(Z) ** k

    return power


POWER = make_power(«v:factory_arg»)
«blank:base.2»

def scaled(factor):
    def decorate(function):
        def wrapper(self, X):
            return function(self, X) * factor

        return wrapper

    return decorate


def scaled_wraps(factor):
    def decorate(function):
        @functools.wraps(function)
        def wrapper(self, X):
            return function(self, X) * factor

        return wrapper

    return decorate


class ScoreMixin:
    «doc:ScoreMixin»

    def score(self, X, y):
        «doc:ScoreMixin.score»
        predicted = self.predict(X)
        return -float(np.sqrt(np.mean((predicted - np.asarray(y, dtype=float)) ** 2)))


class TransformMixin:
    def fit_transform(self, X, y=None):
        return self.fit(X, y).transform(X)


class BaseRidge(BaseEstimator):
    def _penalty(self, n_features):
        «doc:BaseRidge._penalty»
        return self.alpha * «v:base_lit» * np.eye(n_features)
"""

MODEL = """\
«doc:model»
import numpy as np

import «tag»_base as base
from «tag»_base import BaseRidge, ScoreMixin, helper_a, helper_b
[cfg]from «tag»_cfg import CLIP, CONFIG, POST, Config
[virt]import «tag»_virt as virt
«blank:model.1»

class Model(ScoreMixin, BaseRidge):
    «doc:Model»

    def __init__(self, alpha=1.0):
        self.alpha = alpha

[plain]    @base.scaled(«v:deco_arg»)
[wraps]    @base.scaled_wraps(«v:deco_arg»)
    def _features(self, X):
        «doc:Model._features»
        Z = np.asarray(X, dtype=float)
        Z = «s:helper»(Z) + base.POWER(Z) * «v:features_lit»
[virt]        Z = virt.vfun(Z)
[cfg]        Z = 0.5 * Z + CLIP(Z)
        return Z

    def fit(self, X, y):
        «doc:Model.fit»
        Z = self._features(X)
        y = np.asarray(y, dtype=float)
        self.mean_ = float(y.mean())
[cfg]        self.mean_ += Config().offset
        A = «alt:gram» + self._penalty(Z.shape[1])
[cfg]        A = A * CONFIG.shrink + (1.0 - CONFIG.shrink) * np.eye(Z.shape[1])
        «c:Model.fit»
        rhs = Z.T @ (y - self.mean_)
        self.coef_ = «alt:solve» * «v:fit_lit»
        self.threshold_ = float(np.median(y))
        return self

    def predict(self, X):
        «doc:Model.predict»
        out = «alt:predict» + «v:pred_lit»
[cfg]        out = POST(out)
        return out«eol:Model.predict»

    def predict_proba(self, X):
        z = (self.predict(X) - self.threshold_) * «v:proba_lit»
        positive = 1.0 / (1.0 + np.exp(-z))
        return np.column_stack([1.0 - positive, positive])

    def decision_function(self, X):
        return self.predict(X) - self.threshold_ * «v:decision_lit»


def scorer(estimator, X, y):
    «doc:scorer»
    value = estimator.score(X, y)
    value += 0.1 * float(np.mean(estimator.predict_proba(X)[:, 1]))
    value += 0.01 * float(np.mean(estimator.decision_function(X)))
[feats]    value += 0.001 * len("".join(estimator[0].get_feature_names_out()))
    return value
"""

FEATS = """\
«doc:feats»
import numpy as np
from sklearn.base import BaseEstimator

from «tag»_base import POWER, TransformMixin
«blank:feats.1»

class Features(TransformMixin, BaseEstimator):
    «doc:Features»

    def __init__(self, power=1.0):
        self.power = power

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=float)
        self.mean_ = X.mean(axis=0)
        self.scale_ = X.std(axis=0) + «v:feat_eps»
        return self

    def transform(self, X):
        «doc:Features.transform»
        Z = (np.asarray(X, dtype=float) - self.mean_) / self.scale_«eol:Features.transform»
        return «alt:hstack»

    def get_feature_names_out(self, input_features=None):
        n_features = self.mean_.shape[0]
        names = [f"x{i}" for i in range(n_features)]
        names += [f"«s:name_prefix»{i}" for i in range(n_features)]
        return np.asarray(names, dtype=object)
"""

CFG = """\
«doc:cfg»
import functools
from dataclasses import dataclass

import numpy as np
«blank:cfg.1»

@dataclass(frozen=True)
class Config:
    «doc:Config»

    shrink: float = «v:dc_shrink»
    offset: float = «v:dc_offset»«eol:Config.offset»


CONFIG = Config()


def clip(Z, bound):
    return np.clip(Z, -bound, bound)


CLIP = functools.partial(clip, bound=«v:clip»)
POST = lambda z, k=«v:lam_default»: z * k  # noqa: E731
"""

VIRT = """\
import numpy as np

VSCALE = «v:v_const»


def vfun(Z):
    «doc:vfun»
    return Z * VSCALE + «v:v_lit»
"""

TEMPLATES = {"base": BASE, "model": MODEL, "feats": FEATS, "cfg": CFG, "virt": VIRT}
MODULE_ORDER = ("base", "cfg", "feats", "model")  # imported ones first: the order of reloads


# Programs and edits ---------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """One generated user package: which parts it has, its values and its layout.

    Parameters
    ----------
    entry : {"search", "nested"}
        Whether the driver runs ``parcv.search`` or ``parcv.nested_cv``.
    has_feats, has_cfg, has_virt : bool
        Whether the package has the transformer module (then the estimator is a
        ``Pipeline``), the configuration module and the module without a file.
    editable : bool
        Whether an (editable) installed distribution claims the transformer module.
    decorator : {"none", "plain", "wraps"}
        The decorator on ``Model._features``: none, one without ``functools.wraps``, one with.
    values : dict of str to object
        One value per name of :data:`VALUES`.
    style : dict of str to int or None
        One setting per knob of :data:`KNOBS`.
    """

    entry: str
    has_feats: bool
    has_cfg: bool
    has_virt: bool
    editable: bool
    decorator: str
    values: dict[str, Any] = field(hash=False)
    style: dict[str, int | None] = field(hash=False)

    def has(self, module: str) -> bool:
        """Whether the program has ``module`` ("driver" always: the run-time value)."""
        flags = {"feats": self.has_feats, "cfg": self.has_cfg, "virt": self.has_virt}
        return flags.get(module, True)

    def summary(self) -> str:
        """The program in one line: entry, modules, decorator, helper."""
        modules = ["base", "model"]
        modules += ["feats (editable install)" if self.editable else "feats"] * self.has_feats
        modules += ["cfg"] * self.has_cfg + ["virt (no file)"] * self.has_virt
        return (f"{self.entry}; modules {', '.join(modules)}; decorator={self.decorator}; "
                f"helper={self.values['helper']}")  # fmt: skip


@dataclass(frozen=True)
class Edit:
    """One edit of a program: a value (``semantic``) or a layout knob (``neutral``)."""

    kind: str
    target: str
    old: Any
    new: Any

    def apply(self, program: Program) -> Program:
        """The program after the edit."""
        if self.kind == "semantic":
            return replace(program, values={**program.values, self.target: self.new})
        return replace(program, style={**program.style, self.target: self.new})

    def summary(self) -> str:
        """The edit in one line: kind, what, where, old and new."""
        module, what = (VALUES[self.target][:2] if self.kind == "semantic"
                        else KNOBS[self.target])  # fmt: skip
        where = {"driver": "the driver script", "virt": "the module without a file (virt)"}.get(
            module, f"{module}.py"
        )
        return f"{self.kind} edit of {what} in {where}: {self.old!r} -> {self.new!r}"


@dataclass(frozen=True)
class Case:
    """A program and one edit of it."""

    program: Program
    edit: Edit

    @property
    def after(self) -> Program:
        """The program after the edit."""
        return self.edit.apply(self.program)

    def summary(self) -> str:
        """The case in one line."""
        return f"{self.program.summary()} | {self.edit.summary()}"

    def key(self) -> str:
        """What the runs see of the case: equal for cases that differ only in unused draws."""
        files = [render_files(p, "t") for p in (self.program, self.after)]
        seen = [self.program.entry, self.program.editable, files,
                self.program.values["runtime"], self.after.values["runtime"]]  # fmt: skip
        return json.dumps(seen, sort_keys=True)


def _knob_choices(knob: str) -> tuple[int | None, ...]:
    kind = knob.partition(":")[0]
    if kind == "blank":
        return (0, 1, 2)
    if kind == "alt":
        return (0, 1)
    return (None, 0, 1, 2)


Choose = Callable[[Sequence[Any]], Any]


def build_program(choose: Choose) -> Program:
    """A generated user package, each choice made by ``choose`` (see the module's docstring)."""
    has_feats = choose((False, True))
    return Program(
        entry=choose(("search", "nested")),
        has_feats=has_feats,
        has_cfg=choose((False, True)),
        has_virt=choose((False, True)),
        editable=has_feats and choose((False, True)),
        decorator=choose(("none", "plain", "wraps")),
        values={name: choose(choices) for name, (_, _, choices) in VALUES.items()},
        style={knob: choose(_knob_choices(knob)) for knob in KNOBS},
    )


def semantic_targets(program: Program) -> list[str]:
    """The values of ``program`` whose edit reaches its numbers."""
    unused = {"helper_a": "lit_b", "helper_b": "lit_a"}[program.values["helper"]]
    return [
        name for name, (module, _, _) in VALUES.items()
        if program.has(module) and name != unused
        and (name != "deco_arg" or program.decorator != "none")
    ]  # fmt: skip


def neutral_targets(program: Program) -> list[str]:
    """The layout knobs of the modules ``program`` has."""
    return [knob for knob, (module, _) in KNOBS.items() if program.has(module)]


def build_edit(program: Program, choose: Choose) -> Edit:
    """One edit of ``program``: semantic or neutral, to another value or layout."""
    if choose(("semantic", "neutral")) == "semantic":
        name = choose(semantic_targets(program))
        old = program.values[name]
        return Edit("semantic", name, old, choose([v for v in VALUES[name][2] if v != old]))
    knob = choose(neutral_targets(program))
    old = program.style[knob]
    return Edit("neutral", knob, old, choose([v for v in _knob_choices(knob) if v != old]))


@st.composite
def programs(draw: st.DrawFn) -> Program:
    """Draw a generated user package (see the module's docstring)."""
    return build_program(lambda options: draw(st.sampled_from(options)))


@st.composite
def edits(draw: st.DrawFn, program: Program) -> Edit:
    """Draw one edit of ``program`` (see :func:`build_edit`)."""
    return build_edit(program, lambda options: draw(st.sampled_from(options)))


def cases() -> st.SearchStrategy[Case]:
    """Draw a program and one edit of it."""
    return programs().flatmap(lambda p: edits(p).map(lambda e: Case(p, e)))


def random_cases(n_cases: int, *, random_seed: int = 0) -> list[Case]:
    """``n_cases`` distinct cases, each choice uniform, reproducibly per seed.

    Uniform draws spread a long run over every part and edit (Hypothesis's generation
    dwells near the examples it has met). Cases that differ only in values their program
    does not use count once (see :meth:`Case.key`).
    """
    rng = random.Random(random_seed)
    drawn: dict[str, Case] = {}
    for _ in range(100 * n_cases):
        if len(drawn) == n_cases:
            break
        program = build_program(rng.choice)
        case = Case(program, build_edit(program, rng.choice))
        drawn.setdefault(case.key(), case)
    return list(drawn.values())


def catalogue() -> list[Case]:
    """One case per edit target and per knob of :data:`CATALOGUE_KNOBS`, for CI.

    On a program with every part, undecorated, so that each edit is judged on its own;
    then the decorated method's body, the decorator's argument and a constant the
    method reaches, behind each decorator; and an edit of each kind in an editable install.
    """
    full = Program(
        entry="search", has_feats=True, has_cfg=True, has_virt=True, editable=False,
        decorator="none", values={name: choices[0] for name, (_, _, choices) in VALUES.items()},
        style={knob: _knob_choices(knob)[0] for knob in KNOBS},
    )  # fmt: skip

    def semantic(program: Program, name: str) -> Case:
        return Case(program, Edit("semantic", name, full.values[name], VALUES[name][2][1]))

    out = [semantic(replace(full, entry=("search", "nested")[i % 2]), name)
           for i, name in enumerate(semantic_targets(full))]  # fmt: skip
    for decorator in ("plain", "wraps"):
        out += [semantic(replace(full, decorator=decorator), name)
                for name in ("features_lit", "deco_arg", "scale")]  # fmt: skip
    editable = replace(full, editable=True)
    out += [semantic(editable, "feat_lit"),
            Case(editable, Edit("neutral", "doc:Features.transform", None, 0))]  # fmt: skip
    for i, knob in enumerate(CATALOGUE_KNOBS):
        program = replace(full, entry=("search", "nested")[i % 2])
        out.append(Case(program, Edit("neutral", knob, full.style[knob], _knob_choices(knob)[1])))
    return out


# Each kind of neutral edit in each kind of place, once (the hypothesis test and the
# script turn every knob).
CATALOGUE_KNOBS = (
    "doc:base", "doc:ScoreMixin", "doc:ScoreMixin.score", "doc:Model.fit", "doc:scorer",
    "c:Model.fit", "eol:base.scale", "blank:base.1", "alt:gram", "alt:solve", "alt:predict",
    "alt:hstack", "doc:Config", "eol:Config.offset", "doc:vfun", "doc:Features.transform",
)  # fmt: skip


# Rendering ------------------------------------------------------------------------------

_FLAG = re.compile(r"^\[(\w+)\]")
_LINE_KNOB = re.compile(r"^( *)«((?:doc|c|blank):[\w.]+)»$")
_INLINE = re.compile(r"«(v|s|eol):([\w.]+)»")


def _has_flag(program: Program, flag: str) -> bool:
    if flag in ("plain", "wraps"):
        return program.decorator == flag
    return program.has(flag)


def _line_knob(program: Program, indent: str, knob: str) -> list[str]:
    setting = program.style[knob]
    kind = knob.partition(":")[0]
    if kind == "blank":
        return [""] * int(setting or 0)
    if setting is None:
        return []
    if kind == "c":
        return [f"{indent}# {COMMENT_TEXTS[setting]}"]
    first, *rest = DOC_TEXTS[setting].split("\n")
    if not rest:
        return [f'{indent}"""{first}"""']
    return [f'{indent}"""{first}', *(f"{indent}{r}" if r else "" for r in rest), f'{indent}"""']


def _inline(program: Program, match: re.Match[str]) -> str:
    kind, name = match.groups()
    if kind == "v":
        return repr(program.values[name])
    if kind == "s":
        return str(program.values[name])
    setting = program.style[f"eol:{name}"]
    return "" if setting is None else f"  # {COMMENT_TEXTS[setting]}"


def render_module(program: Program, module: str, tag: str) -> str:
    """The source text of one module of ``program`` (``tag``: the prefix of its names)."""
    lines = []
    for line in TEMPLATES[module].splitlines():
        flag = _FLAG.match(line)
        if flag:
            if not _has_flag(program, flag.group(1)):
                continue
            line = line[flag.end() :]
        slot = _LINE_KNOB.match(line)
        lines += _line_knob(program, *slot.groups()) if slot else [line]
    text = "\n".join(lines) + "\n"
    for knob, layouts in ALTERNATIVES.items():
        text = text.replace(f"«{knob}»", layouts[program.style[knob] or 0])
    text = _INLINE.sub(lambda m: _inline(program, m), text.replace("«tag»", tag))
    return text


def render_files(program: Program, tag: str) -> dict[str, str]:
    """The package's files, by name relative to its folder (``.src``: the module without a file)."""
    files = {}
    for module in ("base", "model", "feats", "cfg", "virt"):
        if program.has(module):
            suffix = ".src" if module == "virt" else ".py"
            files[f"{tag}_{module}{suffix}"] = render_module(program, module, tag)
    return files


def site_files(program: Program, tag: str) -> dict[str, str]:
    """A distribution's metadata that claims the transformer module: an editable install."""
    if not program.editable:
        return {}
    info = f"{tag}_feats-1.0.dist-info"
    return {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {tag}-feats\nVersion: 1.0\n",
            f"{info}/top_level.txt": f"{tag}_feats\n"}  # fmt: skip


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# Running a batch and judging it ---------------------------------------------------------


@dataclass
class Outcome:
    """What the runs of one case gave, and what is wrong with them.

    ``violations``: the property fails (a resume's numbers differ from a fresh run's, or
    a neutral edit recomputed units); ``problems``: the check itself failed (a driver
    error, a neutral edit that changed the numbers, flows that disagree).
    ``effective``: whether the edit changed the fresh numbers.
    """

    case: Case
    runs: dict[str, dict[str, Any]]
    violations: list[str]
    problems: list[str]
    effective: bool | None


def _spec(case: Case, tag: str, folder: Path, *, notebook: bool) -> dict[str, Any]:
    program = case.program
    spec: dict[str, Any] = {
        "tag": tag, "entry": program.entry, "pipeline": program.has_feats,
        "virt": program.has_virt, "runtime": program.values["runtime"],
        "dir": str(folder / "pkg"), "store": str(folder / "stores" / f"{tag}.sqlite"),
        "fresh_store": str(folder / "stores" / f"{tag}-fresh.sqlite"),
    }  # fmt: skip
    if notebook:
        spec["after"] = {"files": render_files(case.after, tag),
                         "runtime": case.after.values["runtime"]}  # fmt: skip
    return spec


def _start(folder: Path, mode: str, specs: list[dict[str, Any]]) -> subprocess.Popen[str]:
    """Start one mode of a batch in a fresh process (see :func:`_finish`)."""
    path = folder / f"{mode}.json"
    path.write_text(json.dumps(specs))
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(folder / "pkg"), str(folder / "site-packages"),
                                          *inherited, str(ROOT)])}  # fmt: skip
    return subprocess.Popen([sys.executable, "-m", "tests.soundness_driver", mode, str(path)],
                            cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def _finish(process: subprocess.Popen[str], n_cases: int) -> list[dict[str, Any]]:
    """Wait for a driver; its outcomes, one per case."""
    try:
        stdout, stderr = process.communicate(timeout=120 + 20 * n_cases)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    if process.returncode != 0 or not stdout.strip():
        raise RuntimeError(f"a driver failed ({process.returncode}): {process.args!r}\n"
                           f"{stderr[-4000:]}")  # fmt: skip
    outcomes: list[dict[str, Any]] = json.loads(stdout.strip().splitlines()[-1])
    return outcomes


def check_cases(cases: Sequence[Case], folder: Path) -> list[Outcome]:
    """Run a batch of cases in both flows (in ``folder``, empty) and judge each.

    The notebook flow's one process runs beside the process flow's two, one after the other.
    """
    tags = [f"sp{i}" for i in range(len(cases))]
    flows = {"process": folder / "process", "notebook": folder / "notebook"}
    for path in flows.values():
        (path / "stores").mkdir(parents=True)
        for case, tag in zip(cases, tags, strict=True):
            _write(path / "pkg", render_files(case.program, tag))
            _write(path / "site-packages", site_files(case.program, tag))
    specs = [
        _spec(c, t, flows["notebook"], notebook=True) for c, t in zip(cases, tags, strict=True)
    ]
    notebook = _start(flows["notebook"], "notebook", specs)
    try:
        specs = [
            _spec(c, t, flows["process"], notebook=False) for c, t in zip(cases, tags, strict=True)
        ]
        before = _finish(_start(flows["process"], "before", specs), len(cases))
        for case, tag, spec in zip(cases, tags, specs, strict=True):
            _write(flows["process"] / "pkg", render_files(case.after, tag))
            spec["runtime"] = case.after.values["runtime"]
        after = _finish(_start(flows["process"], "after", specs), len(cases))
    finally:
        in_notebook = _finish(notebook, len(cases))
    return [judge(case, {"process": {**b, **a}, "notebook": n})
            for case, b, a, n in zip(cases, before, after, in_notebook, strict=True)]  # fmt: skip


def _same(a: Any, b: Any) -> bool:
    """Exactly the same numbers (NaN equal to NaN)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _flow_violations(case: Case, runs: dict[str, Any]) -> list[str]:
    resumed, fresh = runs["resumed"], runs["fresh"]
    reuse = "; ".join(m for m in resumed["log"] if m.startswith("reusing")) or "nothing reused"
    out = []
    if not _same(resumed["numbers"], fresh["numbers"]):
        first = next(k for k in fresh["numbers"] if resumed["numbers"][k] != fresh["numbers"][k])
        out.append(
            f"stale: resumed {first} {resumed['numbers'][first]} != fresh "
            f"{fresh['numbers'][first]} ({resumed['n_computed']} of {resumed['n_units']} units "
            f"recomputed; {reuse})"
        )
    if case.edit.kind == "neutral" and resumed["n_computed"]:
        causes = [m for m in resumed["log"] if "changed" in m or "reached" in m]
        out.append(
            f"neutral edit recomputed {resumed['n_computed']} of {resumed['n_units']} units "
            f"({'; '.join(causes) or 'no cause logged'})"
        )
    return out


def judge(case: Case, runs: dict[str, dict[str, Any]]) -> Outcome:
    """Judge one case's runs: ``runs[flow]`` holds ``before``, ``resumed`` and ``fresh``."""
    violations, problems = [], []
    for flow, found in runs.items():
        if "error" in found:
            problems.append(f"[{flow}] driver error: {found['error'].strip().splitlines()[-1]}")
            continue
        violations += [f"[{flow}] {v}" for v in _flow_violations(case, found)]
        if case.edit.kind == "neutral" and not _same(found["before"]["numbers"],
                                                     found["fresh"]["numbers"]):  # fmt: skip
            problems.append(f"[{flow}] the neutral edit changed a fresh run's numbers")
    ok = [found for found in runs.values() if "error" not in found]
    for name in ("before", "fresh") if len(ok) == 2 else ():
        if not _same(ok[0][name]["numbers"], ok[1][name]["numbers"]):
            problems.append(
                f"the two flows' {name} runs differ: a reload that did not take, or a run "
                "that took something of an earlier run from memory"
            )
    effective = (not _same(ok[0]["before"]["numbers"], ok[0]["fresh"]["numbers"])) if ok else None
    return Outcome(case, runs, violations, problems, effective)


def report(outcomes: Sequence[Outcome]) -> str:
    """Counts, then each violation and problem with its case's program and edit."""
    bad = [o for o in outcomes if o.violations or o.problems]
    semantic = [o for o in outcomes if o.case.edit.kind == "semantic"]
    inert = sorted({o.case.edit.target for o in semantic if o.effective is False})
    sources = sorted({run.get("parcv", "?") for o in outcomes for run in o.runs.values()})
    n_violations = sum(len(o.violations) for o in outcomes)
    lines = [
        f"parcv from {', '.join(sources)}",
        f"{len(outcomes)} cases ({len(semantic)} semantic edits, of which "
        f"{len(semantic) - len([o for o in semantic if o.effective])} left the numbers as they "
        f"were{f' ({chr(44).join(inert)})' if inert else ''}; {len(outcomes) - len(semantic)} "
        "neutral), each in 2 flows (process, notebook)",
        f"{n_violations} violations in {sum(bool(o.violations) for o in outcomes)} cases; "
        f"{sum(len(o.problems) for o in outcomes)} problems of the check itself",
    ]
    for i, outcome in enumerate(bad, 1):
        lines.append(f"{i}. {outcome.case.summary()}")
        lines += [f"   {line}" for line in outcome.violations + outcome.problems]
    return "\n".join(lines)


def write_case(case: Case, folder: Path) -> None:
    """Write a case's package before and after its edit, and its summary, into ``folder``."""
    for name, program in (("before", case.program), ("after", case.after)):
        _write(folder / name, render_files(program, "sp0"))
        _write(folder / name / "site-packages", site_files(program, "sp0"))
    runtime = [case.program.values["runtime"], case.after.values["runtime"]]
    (folder / "case.txt").write_text(f"{case.summary()}\nbase.RUNTIME: {runtime}\n")
