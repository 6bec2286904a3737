"""Run a sweep spec: build the job, pick the backend, run it into a run directory."""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sklearn.base import is_classifier

from parcv.api import cross_validate, load, nested_cv, run_built_plan, search
from parcv.cli.backend import make_backend, runs_on_local_pool
from parcv.cli.build import (
    build_estimator,
    build_halving,
    build_hyperband,
    build_iterations,
    build_racing,
    build_sampler,
    build_scheme,
    build_scoring,
    build_space,
    check_interval_strategy,
    check_null_spelling,
    check_space_keys,
    use_spec_folder,
)
from parcv.cli.data_sources import LoadedData, MissingValues, load_data
from parcv.cli.spec import Spec, SpecError, UsageError, check_out
from parcv.criteria.tasks import CriteriaRequest, CriteriaUndefinedError, check_criteria
from parcv.engine.backends.local import prepare_workers
from parcv.engine.options import RunOptions
from parcv.engine.progress import start_lines_to
from parcv.engine.rounds import plan_rounds, stored_rounds_message, takes_distributions
from parcv.engine.session import (
    final_refitted,
    pending_refits,
    reuse_message,
    survey_store,
    units_message,
)
from parcv.errors import BackendError, RunInterrupted, did_you_mean
from parcv.plan.build import Plan, build_plan
from parcv.plan.data import Dataset, accepts_text, check_dataset
from parcv.plan.missing import MissingVerdict, diagnose_missing
from parcv.plan.space import check_space
from parcv.plan.splits import ThreeWayHoldOut
from parcv.report.run_dir import (
    RESUME_COMMAND,
    RunInfo,
    check_run_files,
    write_outputs,
    write_private,
)
from parcv.results.halving import NestedHalvingResult
from parcv.results.objects import CVResult, NestedResult, SearchResult
from parcv.store.readers import ReusedCounts, collector_paused, count_reused, read_counts
from parcv.store.schema import never_created
from parcv.strategies.check import check_strategy
from parcv.strategies.strategy import Schedule, SearchContext, Strategy

__all__ = [
    "Job",
    "RunOutcome",
    "UsageError",
    "build_job",
    "default_out",
    "make_backend",
    "run_spec",
]

logger = logging.getLogger(__name__)

Result = CVResult | SearchResult | NestedResult | NestedHalvingResult
STORE = "store.sqlite"
# The command that resumes a run, kept in its directory for the report of an unfinished run.


class ReportInterrupted(KeyboardInterrupt):
    """Ctrl-C after every unit of a run was done and stored: only its report is missing.

    Nothing is lost: ``parcv report RUN_DIR`` writes the report from the store.
    """

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


# The API call, by spec mode: the kind a store records.
_API_KIND = {"cross_validate": "cross_validate", "search": "search", "nested": "nested_cv"}

# The interval options of a cross_validate or nested spec ([scoring] table).
_INTERVAL = ("interval", "confidence", "ncv_repetitions")


@dataclass(frozen=True)
class Rounds:
    """A search in rounds before it runs, as ``inspect`` shows it.

    Its strategy, its base plan (the folds of every search), and each search's
    context and schedule, by outer fold (None: the search on all data).
    """

    strategy: Strategy
    base: Plan
    contexts: dict[int | None, SearchContext]
    schedules: dict[int | None, Schedule]


@dataclass(frozen=True)
class Job:
    """Everything one API call of a spec needs: estimator, space, data and options."""

    spec: Spec
    estimator: Any
    space: Any
    data: LoadedData
    options: dict[str, Any] = field(repr=False)

    def plan(self) -> Plan:
        """Build (and so validate) the plan without running anything."""
        return self.checked()[0]

    def checked(self) -> tuple[Plan, Dataset]:
        """The plan and the checked data it runs on, built (so validated) before any fit."""
        o = self.options
        data = check_dataset(self.data.X, self.data.y, self.data.groups)
        common: dict[str, Any] = {
            k: o[k] for k in ("scoring", "error_score", "return_train_score") if k in o
        }
        if "return_predictions" in o:
            common["predictions"] = o["return_predictions"]
        if self.spec.mode == "cross_validate":
            intervals = {k: o[k] for k in _INTERVAL if k in o}
            return build_plan(
                self.estimator, None, data, inner=o["cv"], refit=False, **common, **intervals
            ), data
        return build_plan(
            self.estimator,
            self.space if self.points() else None,  # a sampler's distributions have no points
            data,
            inner=o["cv"],
            outer=o.get("outer"),
            refit=o.get("refit", True),
            selection=o["selection"],
            criteria=o.get("criteria"),
            racing=o.get("racing"),
            iterations=o.get("iterations"),
            **common,
            **{k: o[k] for k in _INTERVAL if k in o},  # a nested spec's (a search has none)
        ), data

    def strategy(self) -> Strategy | None:
        """The strategy of a search in rounds (halving, Hyperband, early stopping), or None."""
        o = self.options
        if self.spec.mode == "cross_validate":
            return None
        return check_strategy(o.get("strategy"), halving=o.get("halving"),
                              iterations=o.get("iterations"))  # fmt: skip

    def points(self) -> bool:
        """Whether the space is a grid or random draws of points (False: a sampler's space).

        A sampler proposes from the space's distributions: nothing may
        enumerate them as a grid's points.
        """
        strategy = self.strategy()
        return strategy is None or not takes_distributions(strategy)

    def rounds(self) -> Rounds | None:
        """Each search's rounds before anything runs (None: one round, see :meth:`plan`).

        Exact for a fixed strategy (halving, Hyperband), a bound for an adaptive one.
        """
        strategy = self.strategy()
        if strategy is None:
            return None
        o, data = self.options, check_dataset(self.data.X, self.data.y, self.data.groups)
        kind = _API_KIND[self.spec.mode]
        options = {"refit": o.get("refit", True), "scoring": o.get("scoring"),
                   "error_score": o.get("error_score", math.nan),
                   "return_train_score": o.get("return_train_score", False),
                   "racing": o.get("racing"), "cv": o["cv"], "outer": o.get("outer"),
                   **{k: o[k] for k in _INTERVAL if k in o}}  # fmt: skip
        job, contexts = plan_rounds(kind, self.estimator, self.space, data, strategy, options)
        schedules = {k: strategy.schedule(c) for k, c in contexts.items()}
        return Rounds(strategy, job.base, contexts, schedules)

    def execute(self, plan: Plan, data: Dataset, options: RunOptions) -> None:
        """Run the spec's units into ``options.store``, on the plan :meth:`checked` built.

        The plan is built once, not again by the API call :meth:`run` makes (at
        millions of units a plan takes seconds). A search in rounds plans each
        round as it goes: it runs as :meth:`run` does. The result is read from
        the store afterwards, as ``parcv report`` reads it.
        """
        if self.strategy() is not None:
            self.run(options)
        else:
            run_built_plan(plan, data, _API_KIND[self.spec.mode], options)

    def run(self, options: RunOptions) -> Result:
        """Run the API call of the spec's mode as ``options`` say (backend, store, ...)."""
        o, d = dict(self.options), self.data
        kwargs: dict[str, Any] = {
            **{
                k: o[k]
                for k in ("scoring", "error_score", "return_train_score", "return_predictions")
                if k in o
            },
            "groups": d.groups,
            "options": options,
        }
        if self.spec.mode == "cross_validate":
            kwargs.update({k: o[k] for k in _INTERVAL if k in o})
            return cross_validate(self.estimator, d.X, d.y, cv=o["cv"], **kwargs)
        kwargs.update(
            refit=o.get("refit", True), selection=o["selection"], criteria=o.get("criteria"),
            racing=o.get("racing"), iterations=o.get("iterations"),
        )  # fmt: skip
        kwargs.update(halving=o.get("halving"), strategy=o.get("strategy"))
        if self.strategy() is not None:  # the run's seed: of every strategy without its own
            kwargs["random_state"] = self.spec.run.seed
        if self.spec.mode == "search":
            return search(self.estimator, self.space, d.X, d.y, cv=o["cv"], **kwargs)
        kwargs.update({k: o[k] for k in _INTERVAL if k in o})
        return nested_cv(self.estimator, self.space, d.X, d.y, outer=o["outer"], inner=o["cv"],
                         **kwargs)  # fmt: skip


def build_job(spec: Spec, *, run_code: bool = True) -> Job:
    """Load the data and build the estimator, space, CV schemes and scoring of a spec.

    With ``run_code=False`` a ``python:`` data source is not called: the job's
    data is then None (see :func:`~parcv.cli.data_sources.load_data`).

    Raises
    ------
    SpecError
        A value that cannot be built (unknown class, scheme or scorer...),
        located in the spec's file.

    Notes
    -----
    The spec's folder is put first on this process's import path (the CLI's own
    process), so that the modules beside the spec import as a script's do; a run's
    workers import them from the folders its plan records.
    """
    use_spec_folder(spec.base_dir)
    try:
        return _build_job(spec, run_code)
    except SpecError as err:
        raise err.located(spec.source, spec.text) from None


def _build_job(spec: Spec, run_code: bool = True) -> Job:
    seed = spec.run.seed
    estimator = build_estimator(spec.table("estimator"), "estimator", seed)
    data = load_data(spec, estimator=estimator, run_code=run_code)
    cv = spec.table("cv")
    where = {
        "classifier": is_classifier(estimator),
        "grouped": data.groups is not None,
        "seed": seed,
    }
    options = build_scoring(spec.table("scoring"), spec.mode)
    key = "cv.inner" if "inner" in cv else "cv.cv"
    space = None
    if spec.mode == "nested":
        options["outer"] = build_scheme(cv.get("outer", 5), "cv.outer", holdout=True, **where)
        default = None if isinstance(options["outer"], ThreeWayHoldOut) else 3
        value = cv.get("inner", cv.get("cv", default))
        options["cv"] = None if value is None else build_scheme(value, key, **where)
    else:
        value = cv.get("inner", cv.get("cv", 5))
        options["cv"] = build_scheme(value, key, holdout=spec.mode == "search", **where)
    if spec.mode != "cross_validate":
        space, options["selection"] = build_space(spec.tables["space"], spec.table("search"), seed)
        check_space_keys(estimator, spec.tables["space"])
        check_null_spelling(estimator, space)
        options["criteria"] = _criteria(spec.table("search"), estimator)
        options["racing"] = build_racing(spec.table("search"))
        options["iterations"] = build_iterations(spec.table("search"))
        options["halving"] = build_halving(spec.table("search"), seed) or build_hyperband(
            spec.table("search")
        )
        options["strategy"] = build_sampler(spec.table("search"))
        check_interval_strategy(options, spec.table("search"))
        _check_report(spec, spec.tables["space"], options.get("scoring"))
    elif spec.table("search"):
        raise SpecError("search", spec.table("search"), "no [search] table without a [space]")
    job = Job(spec, estimator, space, data, options)
    _check_text(job)  # first: the missing values are followed through steps that read numbers
    _check_missing(job)
    return job


def _check_missing(job: Job) -> None:
    """Refuse missing values, named by file, line and column, that the estimator refuses.

    :func:`parcv.plan.missing.diagnose_missing` follows them through the
    pipeline to the step that refuses them (or takes them), for each point of
    the space; the sweep is refused when every candidate refuses them (with
    ``[scoring] error_score = "raise"``: any, as the run would stop at its first fit).
    A sampler's space has no points: the estimator as written decides.
    """
    missing, verdict = job.data.missing, _missing_verdict(job)
    if missing is not None and verdict is not None and verdict.refused:
        raise UsageError(missing.refusal(verdict))


def _missing_verdict(job: Job) -> MissingVerdict | None:
    """What the estimator, or each point of the space, does with the data's missing values."""
    if job.data.missing is None:
        return None
    points = job.space is not None and job.points()
    params = [c.params for c in check_space(job.space)] if points else []
    error_score = job.options.get("error_score")
    each = isinstance(error_score, str) and error_score == "raise"
    return diagnose_missing(job.estimator, job.data.X, job.data.y, params, each=each)


def _missing_note(missing: MissingValues, verdict: MissingVerdict | None) -> str:
    """The start line about missing values: how many, where, and which step takes them."""
    taker = None if verdict is None else verdict.taker()
    if taker is None:
        takes = "the fits tell whether the estimator takes them"
    else:
        takes = f"{taker.describe()} takes them as missing (NaN)"
    found = None if verdict is None else verdict.refusal()
    if verdict is not None and found is not None:
        takes += (
            f"; {verdict.n_refusing} of {len(verdict.outcomes)} candidates do not take them "
            f"({found[0].describe()}), and their fits will fail"
        )
    return f"{missing.summary()} (the first at {missing.first}); {takes}"


def _check_text(job: Job) -> None:
    """Refuse text columns, named by file, line and column, for an estimator of numbers.

    scikit-learn's ``string`` and ``categorical`` input tags say which
    estimators take text (an encoder does); when the tags do not say (a
    ColumnTransformer, a space that swaps a pipeline's first step), the fits
    decide. Categorical columns are left to the estimator: several take them.
    """
    text = job.data.text
    if text is None or not text.text:
        return
    points = job.space is not None and job.points()
    params = [c.params for c in check_space(job.space)] if points else []
    if accepts_text(job.estimator, params) is False:
        raise UsageError(text.refusal(job.estimator))


def _criteria(search: dict[str, Any], estimator: Any) -> CriteriaRequest | None:
    """The checked ``search.criteria`` (a list, or a table with names) as a request."""
    value = search.get("criteria")
    if value is None:
        return None
    table = value if isinstance(value, dict) else {"names": value}
    variance = table.get("noise_variance")
    request = CriteriaRequest(
        tuple(table["names"]),
        n_params=table.get("n_params"),
        noise_variance=None if variance is None else float(variance),
    )
    try:
        return check_criteria(request, estimator)
    except CriteriaUndefinedError as err:
        raise SpecError(
            "search.criteria",
            value,
            f"criteria defined for {type(estimator).__name__}",
            hint=str(err),
        ) from None


def _check_report(spec: Spec, space: Any, metrics: list[str] | None) -> None:
    report = spec.table("report")
    names = sorted({n for grid in ([space] if isinstance(space, dict) else space) for n in grid})
    if "param" in report and report["param"] not in names:
        raise SpecError(
            "report.param",
            report["param"],
            f"a parameter of the space: {names}",
            hint=did_you_mean(report["param"], names),
        )
    allowed = metrics or ["score"]
    if "metric" in report and report["metric"] not in allowed:
        raise SpecError(
            "report.metric",
            report["metric"],
            f"one of scoring.metrics {allowed}",
            hint=did_you_mean(report["metric"], allowed),
        )


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: the result (as rebuilt from the store) and where everything is."""

    result: Result
    run_dir: Path
    files: list[Path]
    n_units: int
    n_resumed: int
    elapsed: float
    backend: str
    counts: ReusedCounts | None = None

    def units_text(self) -> str:
        """How the units got their records: reused from the store, computed, shared."""
        computed = self.n_units - self.n_resumed
        counts = self.counts or ReusedCounts({"fit": self.n_resumed}, computed, computed)
        return units_message(self.n_units, counts)


def prepare_run_dir(path: str | Path) -> Path:
    """Create the run directory with mode 0700 (an existing one is left as it is)."""
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} is a file; pass a directory for the run.")
    if not out.exists():
        try:
            out.mkdir(mode=0o700, parents=True)
            out.chmod(0o700)
        except OSError as err:
            raise UsageError(
                f"cannot create the run directory {str(out)!r}: {err.strerror or err}. Pass "
                "--out a directory you can write to (or one that can be created there)."
            ) from err
    return out


# Files only parcv writes into a run directory: one of them marks a directory as its own.
MARKERS = (STORE, "run.json")


def check_run_dir(path: Path, *, overwrite: bool = False) -> None:
    """Refuse a non-empty directory that parcv did not create, unless ``overwrite``.

    A run writes report.md, spec.toml and more into its directory: in a
    directory of the user's own they would replace the user's files.
    """
    if not path.is_dir() or overwrite or any((path / m).exists() for m in MARKERS):
        return
    # The batch scripts (scripts/slurm, scripts/pbs) start Dask there first: its logs and
    # scheduler file are theirs, not the user's.
    found = sorted(p.name for p in path.iterdir() if not p.name.startswith("dask-"))
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise UsageError(
            f"the run directory {str(path)!r} holds files parcv did not write ({shown}); a run "
            "would replace report.md, spec.toml and others there. Pass --out a new or empty "
            "directory, or --overwrite to write there anyway."
        )


def _missing_from(path: Path) -> Path | None:
    """The outermost of ``path`` and its parents that does not exist yet (None: it exists)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    return missing[-1] if missing else None


def _drop_unused_run(run_dir: Path, created: Path | None) -> None:
    """Remove the new empty store and the directories made for it (no unit ran)."""
    store = run_dir / STORE
    if stored_units(store):
        return  # finished units are kept for --resume
    for suffix in ("", "-wal", "-shm", "-journal", ".lock"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    (run_dir / RESUME_COMMAND).unlink(missing_ok=True)
    if created is None:
        return
    for folder in (run_dir, *run_dir.parents):
        try:
            folder.rmdir()  # only while empty
        except OSError as err:
            logger.debug("run directory %s kept: %s", folder, err)
            return
        if folder == created:
            return


@contextmanager
def private_files() -> Iterator[None]:
    """Create files readable by the user only while the block runs (umask 077)."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def stored_units(store: Path) -> int:
    """Number of records in a store file (0 if there is none, or its creation was cut short)."""
    if not store.is_file() or never_created(store):
        return 0
    return read_counts(store)[0]


def run_complete(store: Path) -> bool:
    """Whether a store holds every unit of the plan it last ran (False: none, or unfinished)."""
    from parcv.results.partial import PartialResult

    try:
        if not stored_units(store):
            return False
        with collector_paused():
            return not isinstance(load(store, partial=True), PartialResult)
    except Exception as err:  # a store that cannot be read is not a finished run
        logger.debug("store %s not read as a finished run: %s", store, err)
        return False


def _announce_reuse(
    job: Job, plan: Plan, store: Path, resume: bool | str, announce: Callable[[str], None]
) -> None:
    """Say what a resume finds in ``store``: the units it reuses, the code that changed."""
    rounds = job.rounds()
    if rounds is not None:
        # Its rounds are proposed as it runs: which stored units it takes is known round by
        # round, not from the full search's plan (a sampler's has no candidates).
        bound = sum(schedule.n_units for schedule in rounds.schedules.values())
        announce(stored_rounds_message(store, bound))
        return
    data = check_dataset(job.data.X, job.data.y, job.data.groups)
    survey = survey_store(plan, data, store)
    models = job.spec.run.save_models and job.spec.mode != "cross_validate"
    pending = pending_refits(plan, with_model=models)
    final = final_refitted(plan, with_model=models)
    announce(reuse_message(survey.n_found, plan.n_units, pending, final_refit=final))
    for line in survey.changes.lines(kept=resume == "values"):
        announce(line)


def default_out(spec: Spec) -> Path:
    """Run directory of a spec: ``run.out`` (or --out), else ``runs/<spec file stem>``."""
    return Path(spec.run.out) if spec.run.out else Path("runs") / Path(spec.source).stem


def probe_fit(job: Job, plan: Plan) -> float:
    """Seconds the first unit the run sends takes here: one fit and its scores.

    An iteration path's unit is one fit scored at every checkpoint: its records
    share that fit's time.
    """
    from parcv.engine.work import run_units

    data = check_dataset(job.data.X, job.data.y, job.data.groups)
    records = run_units(plan, data, (plan.units[0],))
    return sum(record.fit_time + record.score_time for record in records)


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages that make a run's numbers."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from parcv.plan.version import __version__

    versions = {"parcv": __version__, "python": platform.python_version()}
    for name in ("scikit-learn", "numpy", "scipy", "joblib", "dask", "distributed"):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _utc(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, tz=timezone.utc).isoformat(timespec="seconds")


def run_info(
    spec: Spec, job: Job, backend: str, times: tuple[float, float] | None = None
) -> RunInfo:
    """Describe a run for its report (kept in run.json so ``parcv report`` can rebuild it).

    ``times`` are the run's start and end (Unix seconds), recorded with the
    package versions.
    """
    report = spec.table("report")
    holdout = isinstance(job.options.get("outer"), ThreeWayHoldOut)
    timing: dict[str, Any] = {}
    if times is not None:
        timing = {
            "started": _utc(times[0]),
            "finished": _utc(times[1]),
            "seconds": round(times[1] - times[0], 3),
            "versions": package_versions(),
        }
    return RunInfo(
        title=spec.name,
        description=str(spec.tables.get("description", "")),
        mode="holdout" if holdout else spec.mode,
        data=job.data.description,
        estimator=" ".join(repr(job.estimator).split()),
        backend=backend,
        seed=spec.run.seed,
        param=report.get("param"),
        metric=report.get("metric"),
        plots=bool(report.get("plots", True)),
        cv_results=bool(report.get("cv_results", False)),
        spec_folder=str(spec.base_dir.resolve()),
        **timing,
    )


def _check_run(
    job: Job, connect_timeout: float | None
) -> tuple[Plan, Dataset, tuple[Any, Any, str]]:
    """The plan, its data and the backend of a job: bad data or options are usage errors."""
    spec = job.spec
    try:
        plan, data = job.checked()
    except SpecError:
        raise
    except (ValueError, TypeError) as err:
        raise UsageError(f"{spec.source}: the sweep cannot run on this data: {err}") from err
    try:
        made = make_backend(spec, connect_timeout=connect_timeout)
    except (SpecError, UsageError):
        raise
    except (ValueError, TypeError) as err:
        raise UsageError(f"{spec.source}: invalid backend options: {err}") from err
    _check_timeout(spec, made)
    return plan, data, made


def _check_timeout(spec: Spec, made: tuple[Any, Any, str]) -> None:
    """A time limit needs a backend that can kill the process running a unit."""
    if spec.run.timeout is None:
        return
    try:
        RunOptions(backend=made[0], n_jobs=made[1])
    except (ValueError, TypeError):
        return  # not about the time limit: the run says what is wrong
    try:
        RunOptions(backend=made[0], n_jobs=made[1], timeout=spec.run.timeout)
    except ValueError:
        raise UsageError(
            f"{spec.source}: --timeout / [run] timeout {spec.run.timeout:g} s needs a backend "
            f"that can stop a unit by killing its process; this run would use {made[2]}. Pass "
            "--backend local or --backend dask, or drop the time limit."
        ) from None


def _run_options(
    spec: Spec,
    backend: Any,
    n_jobs: int | None,
    store: Path,
    *,
    resume: bool | str,
    overwrite: bool,
    progress: bool | None,
) -> RunOptions:
    """The run options of a spec's run: the ``[run]`` table and the command line's flags."""
    return RunOptions(
        backend=backend,
        n_jobs=n_jobs,
        store=store,
        resume=resume,
        overwrite=overwrite,
        progress=progress,
        # A cross_validate sweep fits no final model: there is nothing to save.
        save_models=spec.run.save_models and spec.mode != "cross_validate",
        journal=spec.run.journal,
        timeout=spec.run.timeout,
        retry_failed=spec.run.retry_failed,
    )


def run_spec(
    spec: Spec,
    *,
    out: str | Path | None = None,
    resume: bool | str = False,
    overwrite: bool = False,
    progress: bool | None = None,
    connect_timeout: float | None = None,
    announce: Callable[[str], None] | None = None,
    resume_command: str | None = None,
) -> RunOutcome:
    """Run a spec into its run directory and write the report.

    Parameters
    ----------
    spec : Spec
    out : str or Path, default=None
        Run directory; defaults to the spec's ``run.out`` (which must stay inside
        the current folder: a spec cannot send its outputs elsewhere), then
        ``runs/<spec stem>``.
    resume, overwrite, progress
        As in :func:`parcv.nested_cv`.
    connect_timeout : float, default=None
        Seconds to reach a Dask scheduler (None: the backend's default).
    announce : callable, default=None
        Called before the run with "reusing n of m units; k to compute" when
        ``resume`` finds a store with records, then once per code change that
        makes stored units stale ("scikit-learn 1.9.1 → 1.9.2: 4,210 units
        recomputed"), and with the count, columns and first place of missing
        values, the step that takes them as NaN and how many candidates do not.
    resume_command : str, default=None
        The command that resumes this run, kept in the run directory
        (``resume-command.txt``) for the report of an unfinished run.

    Returns
    -------
    RunOutcome
        The result is rebuilt from the store, so ``parcv report`` reproduces it.

    Raises
    ------
    SpecError, UsageError
        Before anything runs.
    UnsafePathError
        Before anything runs: a file the run writes in its directory is a symbolic
        link that leads out of it.
    BackendError
        The backend cannot start; a run directory this call created is
        removed again while its store holds no unit.
    KeyboardInterrupt
        On Ctrl-C (:class:`~parcv.errors.RunInterrupted` while units run);
        finished units stay in the store, closed; a store this call created
        that holds no unit is removed again, with the directories made for it.
    ReportInterrupted
        On Ctrl-C after every unit was done and stored: only the report may be
        missing or incomplete (``parcv report RUN_DIR`` writes it).
    """
    if out is None:
        check_out(spec)  # the spec's run.out: inside the folder this runs from
    job = build_job(spec)
    if runs_on_local_pool(spec):
        prepare_workers()  # their imports run while the plan is built
    plan, data, (backend, n_jobs, where) = _check_run(job, connect_timeout)
    if job.data.text is not None and job.data.text.summary() and announce is not None:
        announce(f"the features hold {job.data.text.summary()} (the estimator's steps take them)")
    if job.data.missing is not None and announce is not None:
        announce(_missing_note(job.data.missing, _missing_verdict(job)))
    run_dir = Path(out or default_out(spec)).expanduser()
    check_run_dir(run_dir, overwrite=overwrite)
    check_run_files(run_dir)
    created = _missing_from(run_dir)
    prepare_run_dir(run_dir)
    store = run_dir / STORE
    new_store = not store.exists()
    if resume and not overwrite and announce is not None and stored_units(store):
        _announce_reuse(job, plan, store, resume, announce)
    started = time.time()
    start = time.perf_counter()
    with private_files():
        if resume_command is not None:
            write_private(run_dir / RESUME_COMMAND, resume_command + "\n")
        try:
            options = _run_options(
                spec, backend, n_jobs, store, resume=resume, overwrite=overwrite, progress=progress
            )
            # The run's own start lines would repeat what `announce` said before it.
            with start_lines_to(logging.NullHandler()):
                job.execute(plan, data, options)
        except BackendError:
            if new_store:  # a backend that did not start leaves no empty run behind
                _drop_unused_run(run_dir, created)
            raise
        except KeyboardInterrupt as err:
            # Interrupted while its results were put together: every unit is stored.
            if not isinstance(err, RunInterrupted) and run_complete(store):
                raise ReportInterrupted(run_dir) from err
            if new_store:  # nothing ran: no empty run is left behind
                _drop_unused_run(run_dir, created)
            raise
        elapsed = time.perf_counter() - start
        try:  # every unit is done and stored: what remains is the report
            write_private(run_dir / "spec.toml", spec.text)
            result = load(store)
            counts = count_reused(store, started)
            # A search in rounds runs the units its strategy proposed (and its refits), not
            # the full search's plan: count them in the store.
            rounds = job.strategy() is not None
            n_units = sum(counts.reused.values()) + counts.computed if rounds else plan.n_units
            n_resumed = sum(counts.reused.values())
            info = run_info(spec, job, where, times=(started, started + elapsed))
            files = write_outputs(run_dir, result, info)
        except KeyboardInterrupt as err:
            raise ReportInterrupted(run_dir) from err
    logger.info("run %s: %d units (%d resumed) in %.1f s", run_dir, n_units, n_resumed, elapsed)
    return RunOutcome(result, run_dir, files, n_units, min(n_resumed, n_units), elapsed, where,
                      counts)  # fmt: skip
