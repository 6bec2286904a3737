"""How a run runs: the options every entry point, drop-in estimator and the CLI share.

:class:`RunOptions` is the one frozen object that holds them, checked once;
:func:`check_run_options` builds it from an entry point's keyword arguments
(or takes the ``options=`` object the caller built), and
:func:`takes_run_options` documents the options on an entry point from the
one text here, so an option added to :class:`RunOptions` reaches every entry
point.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import numpy as np

from parcv.engine.backends import Backend, check_backend, with_timeout
from parcv.errors import closest_names
from parcv.store.checks import check_journal, check_store

__all__ = [
    "FinalRunKeywords",
    "RunKeywords",
    "RunOptions",
    "check_run_options",
    "takes_run_options",
]

F = TypeVar("F", bound=Callable[..., Any])

# One paragraph per option, in the order of RunOptions' fields: the entry points, the
# estimators and RunOptions itself show these (see takes_run_options).
_DOCS: dict[str, str] = {
    "backend": """\
backend : {"serial", "local", "dask"}, Backend or distributed.Client, default="local"
    Where the units run; every backend gives the same numbers. ``"dask"``
    runs on the default ``distributed.Client`` when one exists (the last
    ``Client(...)`` created in this process), else on a loopback
    ``LocalCluster`` that parcv starts for the call and closes after it.
    Its workers are new processes that import your script, so a script
    calls parcv under ``if __name__ == "__main__":``. To name a cluster,
    pass its ``Client`` or ``DaskBackend(address=... | scheduler_file=...
    | client=... | cluster=...)``.""",
    "n_jobs": """\
n_jobs : int, default=None
    Worker processes of the local pool or of the loopback Dask cluster
    parcv starts; ``None`` uses every core. Refused with a backend object,
    a ``Client`` or a default client, whose workers are their own.""",
    "store": """\
store : str or Path, default=None
    SQLite file that receives every record as it finishes (WAL mode, one
    transaction per finished chunk), each under the content key of its
    unit (a token of the exact values that determine it). ``None`` keeps
    nothing. A store that holds another sweep's records is refused unless
    ``resume=True`` reuses what this sweep shares with it.""",
    "resume": """\
resume : bool or "values", default=False
    Reuse every record of ``store`` (required) whose content key this
    run needs, whatever sweep stored it, and compute the rest: the
    result is identical to a fresh run. An edited or grown sweep (more
    candidates, families, repeats or draws; another refit metric or
    selection) computes only its new units and the refits whose chosen
    candidate changed; failed fits take the new ``error_score``. The key
    covers the code a unit runs: a unit whose code changed (an edited
    function, class or module constant of your own, an upgraded
    library) is recomputed, and the run logs one line per cause
    ("scikit-learn 1.9.1 → 1.9.2: 4,210 units recomputed").
    ``"values"`` keeps those records instead, when you know the change
    does not alter the numbers; the result's ``notes`` and the report
    say so.""",
    "overwrite": """\
overwrite : bool, default=False
    Discard what ``store`` holds; contradicts ``resume=True`` (refused).""",
    "retry_failed": """\
retry_failed : bool, default=False
    With ``resume=True``, run the units recorded as failed (exceptions,
    crashed or timed-out workers) again; by default they are kept.""",
    "progress": """\
progress : bool, default=None
    Progress bar (tqdm) with done/failed/total, rate, ETA and the best CV
    score so far, for every strategy; ``None`` shows it only when stderr is a
    terminal. Where the units are known only as a bound (early stopping,
    racing, a strategy of one's own), the bar ends at the units run and
    says the bound. A run that shows it also starts, on a resume, with the
    lines ``parcv run`` prints on stderr ("parcv: reusing 840 of 1,000
    units; 160 to compute", one per code change); ``progress=False``
    silences them too.""",
    "verbose": """\
verbose : int, default=0
    As scikit-learn's: ``1`` or more also shows the progress bar (unless
    ``progress=False``); ``2`` prints one line per finished fit (its
    parameters and time), ``3`` adds its split and scores, ``10`` its
    candidate's number, in scikit-learn's format (``[CV 2/5] END
    alpha=0.1;, score=0.813 total time=   0.0s``). Lines come as fits finish, so their order
    varies with the backend; the results do not.""",
    "journal": """\
journal : {"wal", "delete"}, default="wal"
    SQLite journal mode of ``store``. ``"wal"`` (write-ahead log) is the
    fastest; use ``"delete"`` (the rollback journal) when the store is on
    a network file system such as NFS or Lustre, where WAL is unsafe.
    Checked before anything runs, also without a ``store``.""",
    "timeout": """\
timeout : float, default=None
    Seconds one unit (one fit and its scoring) may run on the ``local``
    or ``dask`` backend: a unit running longer is stopped -- the process
    running it is killed -- and recorded as failed ("timed out after N
    s"), scored with ``error_score``; the run goes on. ``None``: no limit.
    A unit that kills its worker (segfault, ``abort()``, out of memory)
    is recorded the same way, with its cause, whatever ``timeout`` is.""",
    "save_models": """\
save_models : bool, default=False
    Also write the final fitted model beside the store with joblib
    (``<store>.models/final-<content key>.joblib``) and record its
    SHA-256 in the store: it is loaded (by a resumed run, or when
    ``load(store).best_estimator_`` is read) only after that check, so a
    file the store does not record is never unpickled. Needs ``store``;
    only :func:`parcv.search` and :func:`parcv.nested_cv` fit a final model.""",
}
_OPTIONS_DOC = """\
options : RunOptions, default=None
    All of the options above as one object, e.g. built once and passed to
    several calls; then none of them may be given as a keyword too."""
_MARKER = "%(run_options)s"
# Only search and nested_cv fit a final model, the one save_models keeps.
_FINAL_ONLY = frozenset({"save_models"})
# Each entry point's own keyword parameters, by name (takes_run_options records them): a
# mistyped keyword lands in **run_options, and its message names the closest of these too.
_ENTRY_PARAMETERS: dict[str, tuple[str, ...]] = {}


class RunKeywords(TypedDict, total=False):
    """The run options as keyword arguments of an entry point (see :class:`RunOptions`)."""

    backend: Any
    n_jobs: int | None
    store: str | Path | None
    resume: bool | str
    overwrite: bool
    retry_failed: bool
    progress: bool | None
    verbose: int
    journal: str
    timeout: float | None


class FinalRunKeywords(RunKeywords, total=False):
    """The run options of an entry point that fits a final model (search, nested_cv)."""

    save_models: bool


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run a plan: the backend, the store and what to do with its records.

    Every entry point (:func:`parcv.search` and kin), the drop-in
    estimators and the command line build one and pass it down; each option
    is checked once, here, before anything runs.

    Parameters
    ----------
    %(run_options)s

    Raises
    ------
    TypeError
        An option of the wrong type (a backend class, a store that is not a
        path, a flag that is not a bool, ...).
    ValueError
        An unknown backend or journal, a bad ``n_jobs``, ``verbose`` or ``timeout``,
        ``resume`` a string other than ``"values"``,
        ``resume`` with ``overwrite`` or without ``store``, or
        ``save_models`` without ``store``.

    See Also
    --------
    parcv.search : Takes these options as keywords, or as ``options=``.

    Examples
    --------
    >>> options = RunOptions(backend="serial", store=None, progress=False)
    >>> options.backend, options.resume
    ('serial', False)
    >>> RunOptions(resume=True)
    Traceback (most recent call last):
    ...
    ValueError: resume=True needs store=...: the file of the run to resume; got store=None. \
Pass the store path of the earlier run, e.g. store='run.sqlite'.
    """

    backend: Any = "local"
    n_jobs: int | None = None
    store: str | Path | None = None
    resume: bool | str = False
    overwrite: bool = False
    retry_failed: bool = False
    progress: bool | None = None
    verbose: int = 0
    journal: str = "wal"
    timeout: float | None = None
    save_models: bool = False
    _backend: Backend = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "resume", _check_resume(self.resume))
        for name in ("overwrite", "retry_failed", "save_models"):
            object.__setattr__(self, name, _check_flag(name, getattr(self, name)))
        if self.progress is not None:
            object.__setattr__(self, "progress", _check_flag("progress", self.progress, "None"))
        if isinstance(self.verbose, (bool, np.bool_)) or not isinstance(
            self.verbose, (int, np.integer)
        ):
            raise TypeError(
                f"verbose must be an int >= 0; got {self.verbose!r}. Pass e.g. verbose=3."
            )
        if self.verbose < 0:
            raise ValueError(
                f"verbose must be an int >= 0; got {self.verbose!r}. Pass e.g. verbose=3."
            )
        object.__setattr__(self, "verbose", int(self.verbose))
        check_journal(self.journal)
        check_store(self.store)
        _check_store_options(self.store, self.resume, self.overwrite)
        if self.save_models and self.store is None:
            raise ValueError(
                "save_models=True needs store=...: the model is written beside the store; got "
                "store=None. Pass e.g. store='run.sqlite', or drop save_models."
            )
        resolved = with_timeout(check_backend(self.backend, self.n_jobs), self.timeout)
        object.__setattr__(self, "_backend", resolved)

    @property
    def resolved_backend(self) -> Backend:
        """The backend that runs the units, sized by ``n_jobs`` and limited by ``timeout``."""
        return self._backend


def _check_flag(name: str, value: Any, alternative: str = "") -> bool:
    """A bool option (numpy's bool too), as a bool."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    either = f"True, False or {alternative}" if alternative else "True or False"
    raise TypeError(f"{name} must be {either}; got {value!r}. Pass e.g. {name}=True.")


def _check_resume(value: Any) -> bool | str:
    """``resume``: a bool (numpy's too), or ``"values"``."""
    if isinstance(value, str):
        if value == "values":
            return value
        raise ValueError(
            f"resume must be True, False or 'values'; got {value!r}. Pass resume=True to "
            "recompute the units whose code changed, or resume='values' to keep their records."
        )
    return _check_flag("resume", value, "'values'")


def _check_store_options(store: Any, resume: bool | str, overwrite: bool) -> None:
    """Refuse store options that contradict each other, before the store is opened."""
    if resume and overwrite:
        raise ValueError(
            f"resume={resume!r} and overwrite=True contradict each other: resume keeps the "
            f"records in store={store!r}, overwrite deletes them. Keep resume alone to "
            "compute only the missing units, or overwrite=True alone to discard them and start "
            "again."
        )
    if resume and store is None:
        raise ValueError(
            f"resume={resume!r} needs store=...: the file of the run to resume; got store=None. "
            "Pass the store path of the earlier run, e.g. store='run.sqlite'."
        )


_NAMES = tuple(f.name for f in fields(RunOptions) if f.init)


def check_run_options(
    options: Any,
    keywords: Mapping[str, Any],
    *,
    caller: str,
    final_model: bool = False,
) -> RunOptions:
    """Build the run options of one call: from its keyword arguments, or its ``options=``.

    Parameters
    ----------
    options : RunOptions or None
        The object the caller built; ``None`` builds one from ``keywords``.
    keywords : mapping of str to object
        The run options given as keyword arguments (only those given).
    caller : str
        The entry point, for messages.
    final_model : bool, default=False
        Whether the entry point fits a final model (``save_models`` applies).

    Returns
    -------
    RunOptions

    Raises
    ------
    TypeError
        An unknown keyword (with the closest option's name), or ``options``
        that is not a :class:`RunOptions`.
    ValueError
        A keyword given with ``options`` too, ``save_models`` where no final
        model is fitted, or an option :class:`RunOptions` refuses.

    Examples
    --------
    >>> check_run_options(None, {"backend": "serial"}, caller="search").backend
    'serial'
    >>> check_run_options(RunOptions(), {"n_jobs": 2}, caller="search")
    Traceback (most recent call last):
    ...
    ValueError: search() got options= and the keyword n_jobs=2; give each run option once. \
Put it in the object, options=dataclasses.replace(options, n_jobs=2), or drop options=.
    """
    allowed = _NAMES if final_model else tuple(n for n in _NAMES if n not in _FINAL_ONLY)
    for name in keywords:
        if name not in allowed:
            raise TypeError(_unknown_keyword(caller, name, allowed))
    if options is None:
        return RunOptions(**keywords)
    if not isinstance(options, RunOptions):
        raise TypeError(
            f"options must be a parcv.RunOptions or None; got {options!r}. Pass e.g. "
            "options=parcv.RunOptions(backend='serial'), or give the options as keywords."
        )
    if keywords:
        given = ", ".join(f"{k}={v!r}" for k, v in keywords.items())
        word = "keyword" if len(keywords) == 1 else "keywords"
        raise ValueError(
            f"{caller}() got options= and the {word} {given}; give each run option once. Put "
            f"it in the object, options=dataclasses.replace(options, {given}), or drop options=."
        )
    if options.save_models and not final_model:
        raise ValueError(
            f"{caller}() fits no final model, so it has nothing to save; got options with "
            "save_models=True. Use search() or nested_cv() to keep the final model, or pass "
            "options=dataclasses.replace(options, save_models=False)."
        )
    return options


def _unknown_keyword(caller: str, name: str, allowed: tuple[str, ...]) -> str:
    """The message of an unknown keyword: the closest parameters of ``caller``, then options.

    Examples
    --------
    >>> print(_unknown_keyword("f", "n_job", ("backend", "n_jobs")))
    f() got an unexpected keyword argument 'n_job'. Did you mean 'n_jobs'? Its run options are \
['backend', 'n_jobs']; see help(f).
    >>> print(_unknown_keyword("nested_cv", "n_outer", ("backend", "n_jobs")))
    nested_cv() got an unexpected keyword argument 'n_outer'. Did you mean 'outer'? See \
help(nested_cv) for all of its parameters and run options.
    """
    if name in _FINAL_ONLY:
        return (
            f"{caller}() got an unexpected keyword argument {name!r}: it fits no final model to "
            "save. Use search() or nested_cv() to keep the final model."
        )
    own = _ENTRY_PARAMETERS.get(caller, ())
    close = closest_names(name, [*own, *allowed])
    start = f"{caller}() got an unexpected keyword argument {name!r}."
    if close and own:
        others = f" (or {', '.join(repr(c) for c in close[1:])})" if close[1:] else ""
        return (
            f"{start} Did you mean {close[0]!r}{others}? See help({caller}) for all of its "
            "parameters and run options."
        )
    hint = f" Did you mean {close[0]!r}?" if close else ""
    if not own:
        return f"{start}{hint} Its run options are {list(allowed)}; see help({caller})."
    return (
        f"{start} Its parameters are {list(own)}, and its run options {list(allowed)}; see "
        f"help({caller})."
    )


def _substitute(doc: str | None, *, final_model: bool, with_options: bool = True) -> str:
    """A docstring with its marker replaced by the run options' ``Parameters`` entries."""
    if doc is None or _MARKER not in doc:
        raise ValueError(f"the docstring must hold {_MARKER!r} where the run options go")
    line = next(ln for ln in doc.splitlines() if _MARKER in ln)
    indent = line[: line.index(_MARKER)]
    names = [n for n in _NAMES if final_model or n not in _FINAL_ONLY]
    entries = [*(_DOCS[n] for n in names), *([_OPTIONS_DOC] if with_options else [])]
    return doc.replace(_MARKER, "\n".join(entries).replace("\n", "\n" + indent))


def takes_run_options(*, final_model: bool = False) -> Callable[[F], F]:
    """Show an entry point's ``**run_options`` as the run options, in its help and signature.

    The marker ``%(run_options)s`` in the docstring becomes the options'
    ``Parameters`` entries; ``inspect.signature`` (and so ``help``) lists
    each option as a keyword with its default, in place of ``**run_options``.
    ``final_model`` adds ``save_models`` (search and nested_cv). A keyword the
    entry point does not take lands in ``**run_options``; :func:`check_run_options`
    refuses it naming the closest of the entry point's own parameters and run
    options (recorded here, by the entry point's name).
    """

    def decorate(func: F) -> F:
        func.__doc__ = _substitute(func.__doc__, final_model=final_model)
        signature = inspect.signature(func)
        kept = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        _ENTRY_PARAMETERS[func.__name__] = tuple(
            p.name for p in kept if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        )
        at = next((i for i, p in enumerate(kept) if p.name == "options"), len(kept))
        declared = {f.name: f for f in fields(RunOptions) if f.default is not MISSING}
        run = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=declared[name].default,
                annotation=declared[name].type,
            )
            for name in _NAMES
            if final_model or name not in _FINAL_ONLY
        ]
        parameters = [*kept[:at], *run, *kept[at:]]
        func.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return func

    return decorate


# RunOptions is documented from the same entries as the entry points.
RunOptions.__doc__ = _substitute(RunOptions.__doc__, final_model=True, with_options=False)
