"""The ``parcv`` command line: run, inspect, report and demo.

Exit codes: 0 ok, 1 the run failed, 2 usage or spec error, 130 interrupted
(the store keeps every finished unit, closed; the message says how many and the
command that resumes). A Ctrl-C once every unit is done and stored loses
nothing: the run exits 0, saying that ``parcv report DIR`` rebuilds a report it
cut short.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import math
import os
import re
import shlex
import signal
import sqlite3
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from parcv.plan.version import __version__

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141, as a shell reports a tool ended by SIGPIPE
# Loggers of the libraries that run a Dask cluster (scheduler, workers, batch jobs).
_CHATTY = ("distributed", "dask_jobqueue")
# Loggers whose INFO lines are shown without --verbose (the dashboard of a cluster parcv starts).
_SHOWN = ("parcv.engine.backends.dask",)
DESCRIPTION = """\
Parallel cross-validation: k-fold CV, select and refit, and nested CV of
scikit-learn estimators as one task graph, run serially, on a local process
pool or on a Dask cluster.

A sweep is a TOML spec file: `parcv init spec.toml` writes a commented
starter; the documentation's command-line page (docs/cli.rst) describes every
table and key, and examples/*.toml in the source tree holds ready specs. Run `parcv COMMAND -h`
for a command's options."""
EPILOG = (
    "exit codes: 0 ok, 1 run failed, 2 usage or spec error, 130 interrupted before every "
    "unit was done (finished units are kept: rerun with --resume)"
)


def _int_flag(text: str, allowed: str, ok: Callable[[int], bool]) -> int:
    """An int flag's value, or a usage error naming what is allowed (argparse adds the flag)."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise argparse.ArgumentTypeError(f"expected {allowed}; got {text!r}")
    return value


def _count(text: str) -> int:
    return _int_flag(text, "an int >= 1", lambda n: n >= 1)


def _n_jobs(text: str) -> int:
    allowed = "an int >= 1, -1 for every core or -2 for all but one"
    return _int_flag(text, allowed, lambda n: n != 0)


def _seed(text: str) -> int:
    return _int_flag(text, f"an int from 0 to {2**32 - 1}, e.g. 0", lambda n: 0 <= n < 2**32)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, e.g. 5; got {text!r}")
    return value


def _backend_options(parser: argparse.ArgumentParser, *, demo: bool = False) -> None:
    parser.add_argument(
        "--backend",
        choices=["serial", "local", "dask"],
        help="where fits run (default: the spec's, else local)",
    )
    parser.add_argument(
        "--n-jobs", type=_n_jobs, metavar="N", help="local workers (default: every core)"
    )
    if demo:
        return
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler, e.g. tcp://host:8786")
    where.add_argument("--scheduler-file", metavar="F", help="Dask scheduler JSON file")
    parser.add_argument("--seed", type=_seed, metavar="S", help="seed of splits, search, models")
    hpc = parser.add_argument_group("HPC cluster (Dask workers as batch jobs)")
    hpc.add_argument("--cluster", choices=["slurm", "pbs"], help="start workers as batch jobs")
    hpc.add_argument("--jobs", type=_count, metavar="N", help="batch jobs")
    hpc.add_argument("--cores", type=_count, metavar="C", help="cores per job")
    hpc.add_argument("--memory", metavar="M", help="memory per job, e.g. 8GB")
    hpc.add_argument("--walltime", metavar="T", help="walltime per job, e.g. 01:00:00")
    hpc.add_argument("--queue", metavar="Q", help="queue / partition")
    hpc.add_argument("--account", metavar="A", help="account to charge")
    tls = parser.add_argument_group("TLS to the Dask scheduler")
    tls.add_argument("--tls-ca-file", metavar="F", help="CA certificate (PEM)")
    tls.add_argument("--tls-cert", metavar="F", help="client certificate (PEM)")
    tls.add_argument("--tls-key", metavar="F", help="client private key (PEM)")


def _rerun_triggers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rerun-triggers",
        choices=["all", "values"],
        default="all",
        help="what makes --resume recompute a stored unit: 'all' (default) its values, or the "
        "code it runs (your own functions and classes, installed library versions); 'values' "
        "keeps records across code edits and upgrades, and the report says so",
    )


def _run_parser(sub: Any) -> argparse.ArgumentParser:
    run: argparse.ArgumentParser = sub.add_parser(
        "run", help="run a sweep spec into a run directory", epilog=EPILOG
    )
    run.add_argument("spec", metavar="SPEC.toml", help="sweep spec file (see examples/*.toml)")
    _backend_options(run)
    run.add_argument("--out", metavar="DIR", help="run directory (default: runs/<spec name>)")
    run.add_argument(
        "--connect-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="seconds to reach the Dask scheduler or start its cluster (default: 30)",
    )
    run.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="stop a unit running longer and record it as failed (local and dask backends)",
    )
    again = run.add_mutually_exclusive_group()  # together they would discard what --resume keeps
    again.add_argument(
        "--resume",
        action="store_true",
        help="compute only missing units; a saved model is unpickled only when its tag "
        "verifies with your model key (~/.config/parcv/model-key), else refitted",
    )
    again.add_argument("--overwrite", action="store_true", help="discard the stored results")
    run.add_argument(
        "--retry-failed",
        action="store_true",
        default=None,
        help="with --resume, run the units recorded as failed (errors, crashes, timeouts) again",
    )
    _rerun_triggers(run)
    run.add_argument(
        "--journal",
        choices=["wal", "delete"],
        help="SQLite journal of the store: 'delete' on NFS/Lustre (default: the spec's, else wal)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    run.add_argument("--dry-run", action="store_true", help="show the plan (as inspect)")
    return run


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose "invalid choice" and "unrecognized arguments" errors
    suggest the closest valid names, as every other "not a valid name" error of parcv."""

    def error(self, message: str) -> NoReturn:
        from parcv.errors import did_you_mean

        choice = re.search(r"invalid choice: '?(.*?)'? \(choose from (.*)\)$", message)
        if choice:
            names = [n.strip(" '\"") for n in choice.group(2).split(",")]
            hint = did_you_mean(choice.group(1), names)
        elif message.startswith("unrecognized arguments: "):
            first = message.split(": ", 1)[1].split()[0]
            hint = did_you_mean(first, _option_names(self)) if first.startswith("-") else ""
        else:
            hint = ""
        super().error(f"{message}. {hint}" if hint else message)


def _option_names(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of ``parser`` and of its subcommands."""
    names: list[str] = []
    for action in parser._actions:
        names += [s for s in action.option_strings if s.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                names += _option_names(sub)
    return names


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="parcv",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"parcv {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = _run_parser(sub)
    inspect = sub.add_parser("inspect", help="show the plan of a spec without running it")
    inspect.add_argument("spec", metavar="SPEC.toml", help="sweep spec file (see examples/*.toml)")
    _backend_options(inspect)
    inspect.add_argument("--out", metavar="DIR", help="run directory to check for a store")
    inspect.add_argument(
        "--probe", action="store_true", help="time one fit to estimate the total work"
    )
    inspect.add_argument(
        "--resume",
        action="store_true",
        help="also say what a --resume run would recompute because code or versions changed",
    )
    _rerun_triggers(inspect)
    report = sub.add_parser("report", help="rebuild the report of a run directory")
    report.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="run directory written by `parcv run` (holds store.sqlite)",
    )
    report.add_argument(
        "--cv-results",
        action="store_true",
        help="also write cv_results.csv, one row per candidate (default: the spec's "
        "[report] cv_results, else not: the store holds them)",
    )
    prune = sub.add_parser(
        "prune", help="drop the stored units the last run of a run directory did not use"
    )
    prune.add_argument("run_dir", metavar="RUN_DIR", help="run directory (holds store.sqlite)")
    init = sub.add_parser("init", help="write a commented starter spec to edit and run")
    init.add_argument(
        "path", nargs="?", default="spec.toml", metavar="PATH", help="where (default: spec.toml)"
    )
    init.add_argument("--force", action="store_true", help="replace an existing file")
    demo = sub.add_parser("demo", help="run the demo sweeps by nested CV on the local pool")
    demo.add_argument("--out", default="parcv-demo", help="run directory (default: parcv-demo)")
    _backend_options(demo, demo=True)
    demo.add_argument("--quick", action="store_true", help="smaller sweeps")
    demo.add_argument("--quiet", action="store_true", help="no progress bar")
    for command in (run, inspect, report, prune, demo, init):
        command.add_argument(
            "--verbose", action="store_true", help="also show INFO logs (parcv's and Dask's)"
        )
    return parser


def _absolute(path: str | None) -> str | None:
    return None if path is None else str(Path(path).expanduser().resolve())


def _apply_overrides(spec: Any, args: argparse.Namespace) -> Any:
    """Command-line options replace the spec's; a new target drops the spec's other targets."""
    from dataclasses import replace

    from parcv.cli.spec import override_run, override_table

    local = args.backend in ("serial", "local")
    remote = bool(args.scheduler or args.scheduler_file)
    if local or remote:
        spec = override_table(spec, "cluster", {}, replace_all=True)
    if local:
        spec = override_table(spec, "tls", {}, replace_all=True)
    if local or remote or args.cluster:
        # The spec's own serial/local choice would contradict a scheduler or cluster given here.
        backend = None if spec.run.backend in ("serial", "local") else spec.run.backend
        spec = replace(
            spec, run=replace(spec.run, scheduler=None, scheduler_file=None, backend=backend)
        )
    cluster = {
        k: getattr(args, k) for k in ("jobs", "cores", "memory", "walltime", "queue", "account")
    }
    spec = override_table(spec, "cluster", {"kind": args.cluster, **cluster})
    spec = override_table(
        spec,
        "tls",
        {
            "ca_file": _absolute(args.tls_ca_file),
            "cert": _absolute(args.tls_cert),
            "key": _absolute(args.tls_key),
        },
    )
    return override_run(
        spec,
        backend=args.backend,
        n_jobs=args.n_jobs,
        seed=args.seed,
        scheduler=args.scheduler,
        scheduler_file=args.scheduler_file,
        out=getattr(args, "out", None),
        journal=getattr(args, "journal", None),
        timeout=getattr(args, "timeout", None),
        retry_failed=getattr(args, "retry_failed", None),
    )


def _looks_like_yaml(path: Path) -> bool:
    """A first statement like ``key: value``, ``- item`` or ``---`` (never valid TOML)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    first = next((ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")), "")
    return first == "---" or first.startswith("- ") or bool(re.match(r"[\w.-]+:(\s|$)", first))


def _load(args: argparse.Namespace) -> Any:
    from parcv.cli.spec import SpecError, check_out, load_spec
    from parcv.cli.sweep import UsageError

    path = Path(args.spec)
    fix = "Write the spec in TOML ([table] headers, key = value): see examples/*.toml."
    if path.suffix.lower() in (".yaml", ".yml"):
        raise UsageError(f"{args.spec}: specs are TOML files, not YAML ({path.suffix}). {fix}")
    try:
        spec = load_spec(path)
    except SpecError as err:
        if err.key == "(toml syntax)" and _looks_like_yaml(path):
            raise UsageError(f"{err} It looks like YAML: specs are TOML files. {fix}") from None
        raise
    if getattr(args, "out", None) is None:  # --out may send the outputs anywhere; a spec not
        check_out(spec)
    return _apply_overrides(spec, args)


def _cmd_inspect(args: argparse.Namespace) -> int:
    from parcv.cli.inspect import plan_text
    from parcv.cli.sweep import default_out

    spec = _load(args)
    kept = getattr(args, "rerun_triggers", "all") == "values"
    text = plan_text(spec, Path(default_out(spec)), getattr(args, "probe", False),
                     resume=bool(getattr(args, "resume", False)), kept=kept)  # fmt: skip
    print(text)
    return EXIT_OK


def _resume_hint(argv: Sequence[str]) -> str:
    words = [w for w in argv if w != "--overwrite"]
    return shlex.join(["parcv", *words, *([] if "--resume" in words else ["--resume"])])


def _stored_resume_hint(args: argparse.Namespace, argv: Sequence[str], out: Path) -> str:
    """The resume command with absolute paths, which works from any directory."""
    where = str(out.expanduser().resolve())
    words, rest, spec_seen = [], iter(argv), False
    for word in rest:
        if word == "--out":
            next(rest, None)
            word = f"--out={where}"
        elif word.startswith("--out="):
            word = f"--out={where}"
        elif word == args.spec and not spec_seen:
            word, spec_seen = str(Path(word).resolve()), True
        words += word.split("=", 1) if word.startswith("--out=") else [word]
    if "--out" not in words:
        words += ["--out", where]
    return _resume_hint(words)


def _interrupted(out: Path, argv: Sequence[str]) -> int:
    """Say how far an interrupted run got and the command that finishes it."""
    from parcv.cli.sweep import stored_units
    from parcv.store.messages import kept_kinds
    from parcv.store.readers import read_stored_kinds

    store = out / "store.sqlite"
    if not store.is_file():
        print(
            "parcv: interrupted before any unit finished; nothing was stored. Run it again "
            f"with:\n  {shlex.join(['parcv', *argv])}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    # Every plan's units: a run in rounds keeps its parts' and refits' beside the first.
    kept = kept_kinds(read_stored_kinds(store) if stored_units(store) else {})
    print(
        f"parcv: interrupted. {kept} are kept in {store}. Resume with:\n  {_resume_hint(argv)}",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED


def _cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from parcv.cli.sweep import ReportInterrupted, default_out, run_spec, stored_units
    from parcv.errors import StoreFullError
    from parcv.report.run_dir import RunInfo, render_summary

    if args.dry_run:
        return _cmd_inspect(args)
    if args.rerun_triggers == "values" and not args.resume:
        from parcv.cli.sweep import UsageError

        raise UsageError(
            "--rerun-triggers values keeps stored records whose code changed: it needs "
            "--resume. Add --resume, or drop --rerun-triggers."
        )
    spec = _load(args)
    out = Path(default_out(spec))
    try:
        outcome = run_spec(
            spec,
            out=out,
            resume="values" if args.rerun_triggers == "values" else args.resume,
            overwrite=args.overwrite,
            progress=False if args.quiet else None,
            connect_timeout=args.connect_timeout,
            announce=lambda message: print(f"parcv: {message}", file=sys.stderr),
            resume_command=_stored_resume_hint(args, argv, out),
        )
    except ReportInterrupted:
        # Nothing is lost: the run is done, only its report may be missing or incomplete.
        print(
            f"parcv: interrupted while writing the report; every unit is done and stored "
            f"({stored_units(out / 'store.sqlite')} in {out / 'store.sqlite'}). The report may "
            f"be incomplete: rebuild it with\n  {shlex.join(['parcv', 'report', str(out)])}",
            file=sys.stderr,
        )
        return EXIT_OK
    except KeyboardInterrupt as err:  # RunInterrupted, or while preparing the run
        logging.getLogger(__name__).debug("interrupted: %s", err)
        return _interrupted(out, argv)
    except (sqlite3.OperationalError, OSError) as err:
        if not _disk_full(err):
            raise
        store = out / "store.sqlite"
        cause = err.__cause__ if isinstance(err, StoreFullError) and err.__cause__ else err
        print(
            f"parcv: run failed: the disk holding {out} is full ({cause}). The "
            f"{stored_units(store)} finished units are kept in {store}. Free some space "
            f"there, then resume with:\n  {_resume_hint(argv)}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    try:
        if not args.quiet:
            info = RunInfo.from_dict({"title": spec.name, "mode": spec.mode})
            print(render_summary(outcome.result, info))
            print(f"{outcome.units_text()}; {outcome.elapsed:.1f} s on {outcome.backend}")
        print(f"Report: {outcome.run_dir / 'report.md'}")
    except KeyboardInterrupt:
        pass  # the run and its report are complete: only this summary was cut short
    return EXIT_OK


def _disk_full(err: BaseException) -> bool:
    """SQLite's "database or disk is full", or ENOSPC / EDQUOT from a file write."""
    if isinstance(err, sqlite3.OperationalError):
        return "disk is full" in str(err) or "disk I/O error" in str(err)
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


def _cmd_report(args: argparse.Namespace) -> int:
    from parcv.errors import UnfinishedRunError
    from parcv.report.run_dir import rebuild_report, render_summary

    try:
        result, info, files = rebuild_report(args.run_dir, cv_results=args.cv_results or None)
    except UnfinishedRunError:
        return _partial_report(Path(args.run_dir))
    print(render_summary(result, info))
    print(f"Rebuilt {len(files)} files from the store (no fit ran).")
    print(f"Report: {files[-1]}")
    return EXIT_OK


def _partial_report(run_dir: Path) -> int:
    """Write what an unfinished run knows to its report.md, and say how to finish it."""
    from parcv.api import load
    from parcv.cli.sweep import UsageError
    from parcv.report.run_dir import write_private
    from parcv.results.partial import PartialResult

    partial = load(run_dir / "store.sqlite", partial=True)
    if not isinstance(partial, PartialResult):  # it finished meanwhile (run elsewhere)
        raise UsageError(f"the run in {run_dir} has just finished: run parcv report again.")
    hint = _stored_command(run_dir)
    path = write_private(run_dir / "report.md", partial.to_markdown(hint))
    print(f"parcv: {partial.status}")
    print(f"Report of the folds done so far: {path}\nFinish the run with: {hint}")
    return EXIT_OK


def _stored_command(run_dir: Path) -> str:
    """The command that resumes the run in ``run_dir``, as its run recorded it."""
    from parcv.report.run_dir import RESUME_COMMAND

    try:
        return (run_dir / RESUME_COMMAND).read_text(encoding="utf-8").strip()
    except OSError:  # a run of an older parcv: the spec's path was not recorded
        out = shlex.quote(str(run_dir))
        return f"parcv run <the spec file of this run> --out {out} --resume"


def _cmd_prune(args: argparse.Namespace) -> int:
    from parcv.store.writer import prune_store

    store = Path(args.run_dir) / "store.sqlite"
    if not store.is_file():
        raise FileNotFoundError(f"no parcv store at {str(store)!r}; pass a run directory.")
    dropped, kept = prune_store(store)
    print(f"Dropped {dropped:,} units the last run did not use; {kept:,} kept in {store}.")
    return EXIT_OK


def _cmd_init(args: argparse.Namespace) -> int:
    from parcv.cli.starter import write_starter
    from parcv.cli.sweep import UsageError

    path = Path(args.path)
    if path.exists() and not args.force:
        raise UsageError(f"{args.path} exists; pick another path or pass --force to replace it.")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_starter(path)
    print(f"Wrote {path}: edit it, then\n  parcv inspect {path}\n  parcv run {path}")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from parcv.cli.demo import run_demo

    start = time.perf_counter()
    outcome = run_demo(
        args.out,
        backend=args.backend or "local",
        n_jobs=args.n_jobs,
        quick=args.quick,
        progress=False if args.quiet else None,
    )
    for run in outcome.runs:
        print(f"\n== {run.run_dir.name} ==")
        print(run.summary)
    print(f"\nDemo finished in {time.perf_counter() - start:.1f} s.")
    print(f"Report: {outcome.out_dir / 'report.md'}")
    return EXIT_OK


def _configure_logging(*, verbose: bool) -> None:
    """Warnings only, unless ``--verbose``: Dask's INFO logs would flood the terminal."""
    level = logging.INFO if verbose else logging.WARNING
    handler = logging.StreamHandler()
    handler.setLevel(logging.INFO)  # loggers decide: _SHOWN ones say INFO lines always
    handler.setFormatter(logging.Formatter("parcv: %(levelname)s: %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    # distributed sets its loggers to INFO, with a handler of its own when it was imported
    # before logging was configured (then our handler does not filter it): set them here.
    for name in _CHATTY:
        logging.getLogger(name).setLevel(level)
    for name in _SHOWN:
        logging.getLogger(name).setLevel(logging.INFO)


def _show_warning(message: Any, category: type, *args: Any, shown: set[str], **kw: Any) -> None:
    """Print a warning as one line naming its category, once per command (checks may rerun),
    its advice in a spec's and the command line's words."""
    from parcv.errors import in_command_words

    line = f"parcv: {category.__name__}: {in_command_words(message)}"
    if line not in shown:
        shown.add(line)
        print(line, file=sys.stderr)


def _dispatch(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.command == "run":
        return _cmd_run(args, argv)
    if args.command == "inspect":
        return _cmd_inspect(args)
    if args.command == "report":
        return _cmd_report(args)
    if args.command == "prune":
        return _cmd_prune(args)
    if args.command == "init":
        return _cmd_init(args)
    return _cmd_demo(args)


def _usage_errors() -> tuple[type[Exception], ...]:
    """The errors main reports as usage or spec errors (exit 2), imported only on an error.

    ``parcv --version`` and ``--help`` exit while parsing: importing the spec and sweep
    modules (scikit-learn, SciPy, the engine) up front took them seconds.
    """
    from parcv.cli.spec import SpecError, UsageError
    from parcv.errors import PlanMismatchError, UnsafePathError

    return (PlanMismatchError, SpecError, UsageError, UnsafePathError, FileNotFoundError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code.

    Parameters
    ----------
    argv : sequence of str, default=None
        Arguments without the program name (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        0 on success, 1 when the run failed, 2 for a usage or spec error,
        130 when interrupted (Ctrl-C, SIGTERM) before every unit was done.

    Examples
    --------
    >>> main(["report", "/nonexistent/run"])
    2
    """
    words = list(sys.argv[1:] if argv is None else argv)
    previous = _interrupt_on_sigterm()
    levels = {name: logging.getLogger(name).level for name in (*_CHATTY, *_SHOWN)}
    try:
        with warnings.catch_warnings():
            warnings.showwarning = partial(_show_warning, shown=set())
            args = _parser().parse_args(words)
            _configure_logging(verbose=args.verbose)
            code = _dispatch(args, words)
            # The command has finished: a Ctrl-C now does not change its exit code.
            with contextlib.suppress(KeyboardInterrupt):
                sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            return code
    except BrokenPipeError:
        return _closed_pipe()
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    except _usage_errors() as err:  # evaluated only when an exception gets here
        print(f"parcv: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("parcv: interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        from parcv.errors import ParcvError, in_command_words

        # error_score="raise" raises a unit's own exception, of any type, with parcv's note.
        notes = [str(n) for n in getattr(err, "__notes__", ())]
        expected = (ParcvError, ValueError, TypeError, OSError, ImportError)
        if not isinstance(err, expected) and not any(n.startswith("parcv: ") for n in notes):
            raise
        print(f"parcv: run failed: {type(err).__name__}: {in_command_words(err)}", *notes,
              sep="\n", file=sys.stderr)  # fmt: skip
        return EXIT_FAILED
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _closed_pipe() -> int:
    """The reader of stdout went away (``parcv report DIR | head -1``): exit quietly.

    As the Python documentation advises (signal module, "Note on SIGPIPE"),
    stdout is pointed at devnull so the interpreter's final flush does not
    fail again; the exit code is a shell's for a process ended by SIGPIPE.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _interrupt_on_sigterm() -> Any:
    """Treat SIGTERM (a batch scheduler nearing walltime, scancel) like Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_interrupt)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
