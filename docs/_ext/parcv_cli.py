"""Sphinx directives that render parcv's command line and spec schema from the code.

``.. parcv-cli::`` renders every subcommand of the ``parcv`` command with its usage and
options, read from the argument parser itself (:func:`parcv.cli.main._parser`).

``.. parcv-spec-schema::`` renders every table and key a spec may hold. The keys come from
:data:`parcv.cli.spec.SCHEMA` (the table :func:`parcv.cli.spec.parse_spec` checks keys
against); the allowed values from the constants the checks use (backends, journal modes,
CV schemes, criteria, ...); the ``[run]`` defaults from :class:`parcv.cli.spec.RunTable`;
and the keys of the ``racing``, ``iterations``, ``halving`` and ``hyperband`` tables, with
their types, defaults and meaning, from the Parameters of the classes they build. Only the
one-line meaning of each key is written here, in :data:`KEYS`; the build fails if a key of
the schema has no meaning written, or a meaning names a key the schema no longer has, so
the page cannot drift from the code.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util.nodes import nested_parse_with_titles

# The meaning of each key, in words, and how its values are written; ``{NAME}`` is filled
# from the code (see ``_constants``). Keys are "table.key" ("key" for the top level);
# "cv.scheme.KEY" are the keys of a CV scheme table such as ``outer = { kind = ... }``.
KEYS: dict[str, str] = {
    "name": "Name of the sweep, shown in the report (default: the spec file's name).",
    "description": "Text shown under the title of the report, as text: a link only to an "
    "``http(s)`` address, no image or file embedded.",
    "data": "Where the data come from: the ``[data]`` table below.",
    "estimator": "The model: the ``[estimator]`` table below.",
    "space": "The candidates: a table ``[space]`` of parameter = values (every combination), "
    "or several tables ``[[space]]`` (one grid each, e.g. one per model family). Values are "
    "a list, or one of {GRIDS} (``{{ logspace = [-3, 3, 7] }}``), or in a random search one "
    "of the distributions {DISTRIBUTIONS} (``{{ loguniform = [1e-3, 1e3] }}``). TOML has no "
    'null: write ``"None"`` for Python\'s None.',
    "search": "How candidates are drawn, raced, grown and selected: ``[search]`` below.",
    "cv": "The cross-validation scheme: ``[cv]`` below.",
    "scoring": "The metrics and what a failed fit scores: ``[scoring]`` below.",
    "run": "Where and how the units run: ``[run]`` below (command-line options override it).",
    "cluster": "Dask workers started as batch jobs: ``[cluster]`` below.",
    "tls": "TLS certificates to reach the Dask scheduler: ``[tls]`` below.",
    "report": "What the report plots and writes: ``[report]`` below.",
    "data.source": "Required. A file ({FILE_KINDS}), ``sklearn:NAME`` for one of {LOADERS} or "
    "a ``make_*`` generator (with ``params``), or ``python:module.function`` returning "
    "``(X, y)`` or ``(X, y, groups)``, kept as it returns them (a DataFrame stays one). "
    "Relative paths are relative to the spec file. A table (``.csv``, ``.parquet``) keeps its "
    "text and categorical columns: see :ref:`spec-own-table`.",
    "data.target": "CSV or Parquet: the name of the target column (required for a table).",
    "data.features": "CSV or Parquet: the feature columns, a list of names (default: every "
    "column but target and groups).",
    "data.groups": "CSV or Parquet: the column of group labels, for grouped CV schemes.",
    "data.x_key": "``.npz``: the array of X (default ``X``).",
    "data.y_key": "``.npz``: the array of y (default ``y``).",
    "data.params": "Arguments of the ``sklearn:`` generator or the ``python:`` function.",
    "data.n_samples": "Keep n samples drawn at random with the run's seed, in the order of "
    "the data (a quick trial of a big data set).",
    "data.delimiter": "CSV: the column delimiter (default ``,``).",
    "estimator.class": "Import path of a scikit-learn compatible estimator, e.g. "
    '``"sklearn.svm.SVC"``, or of your own in a module beside the spec (``"mod2.Tx"``): '
    "see :ref:`spec-own-modules`.",
    "estimator.params": "A table of its parameters: any name its ``get_params()`` lists "
    "(``**kwargs`` constructors such as xgboost's included). ``random_state`` is set "
    "from the run's seed unless given.",
    "estimator.steps": "Instead of class: a pipeline, a list of tables "
    "``{{ name = ..., class = ..., params = {{...}} }}``; space keys are then "
    "``name__param``.",
    "search.strategy": '``"grid"`` (every combination) or ``"random"`` (default: random '
    "when n_iter is set, else grid).",
    "search.n_iter": "Random search: the number of candidates drawn.",
    "search.random_state": "Random search: the seed of the draws (default: the run's seed).",
    "search.selection": '``"best"`` (default) or ``"one_se"``: the simplest candidate within '
    "one standard error of the best (the one-SE rule), with ``complexity``.",
    "search.complexity": "With one_se: the numeric parameter of the space that makes a model "
    "more complex as it grows.",
    "search.criteria": "Also compute analytic criteria for each candidate: a list of names "
    "from {CRITERIA}, or a table with the keys {CRITERIA_KEYS} (``n_params`` and "
    "``noise_variance`` when the model does not say them).",
    "search.racing": "Drop candidates that are clearly worse after a few folds. A table of "
    ":class:`parcv.Racing`'s options (see below).",
    "search.iterations": "Score an iterative model along its path (boosting rounds, epochs) "
    "in one fit, with early stopping. A table of :class:`parcv.Iterations`'s options.",
    "search.halving": "Successive halving: many candidates on few resources, the best on "
    "more. A table of :class:`parcv.Halving`'s options.",
    "search.hyperband": "Hyperband: several halving brackets. A table of "
    ":class:`parcv.Hyperband`'s options (not with halving).",
    "search.sampler": "Model-based search with an Optuna sampler: a table of ``kind`` "
    '("tpe", "nsga2", "cmaes", "gp", "qmc", "random"), ``n_trials``, ``batch`` and ``seed`` '
    "(other keys go to the sampler), with :class:`parcv.Sampler`; the space holds "
    'distributions. ``objectives = {{ r2 = "maximize", fit_time = "minimize" }}`` searches '
    "several objectives (a Pareto front).",
    "cv.mode": "One of {MODES} (default: nested when ``outer`` is set, search when the spec "
    "has a ``[space]``, else cross_validate).",
    "cv.cv": "The CV scheme of a search or of cross_validate: an int k (k folds, stratified "
    "for a classifier, grouped when the data has groups) or a scheme table (default 5).",
    "cv.inner": "Nested CV: the scheme that selects within each outer fold (same as "
    "``cv``; default 5).",
    "cv.outer": "Nested CV: the scheme whose test folds estimate the whole procedure; "
    '``{{ kind = "holdout" }}`` for a hold-out test set.',
    "cv.scheme.kind": "One of {SCHEMES} (default auto: stratified for a classifier, group "
    "when the data has groups, else kfold).",
    "cv.scheme.n_splits": "Number of folds or splits (default 5).",
    "cv.scheme.n_repeats": "Repeated schemes: number of repeats (default 2).",
    "cv.scheme.shuffle": "Shuffle before splitting into folds (default true, seeded).",
    "cv.scheme.test_size": "Shuffle-split schemes: fraction in each test set (default 0.2).",
    "cv.scheme.train": "holdout: fraction of the samples to train on (default 0.6).",
    "cv.scheme.valid": "holdout: fraction to select on (default 0.2).",
    "cv.scheme.test": "holdout: fraction of the hold-out test set (default 0.2).",
    "cv.scheme.random_state": "Seed of the shuffles (default: the run's seed).",
    "scoring.metrics": "A scikit-learn scorer name or a list of them (default: the "
    "estimator's score method).",
    "scoring.refit": "With several metrics: the one that selects.",
    "scoring.return_train_score": "Also score on the training folds (true/false; default false).",
    "scoring.error_score": '``"raise"`` (stop at the first failed fit) or a number, e.g. '
    '``"nan"``, recorded as the score of a failed fit.',
    "scoring.predictions": "Keep the test-fold predictions: true, or method names among "
    "{PREDICT_METHODS}.",
    "scoring.interval": 'Of a cross_validate spec: ``"ncv"``, a confidence interval of the '
    "model's error by nested CV (Bates, Hastie and Tibshirani). Of a nested spec: "
    '``"ncv"`` or ``"bbc"``, the interval of the whole selection (not with a search spec).',
    "scoring.confidence": "With interval: its level, a float in (0, 1) (e.g. 0.9).",
    "scoring.ncv_repetitions": "With interval: the repetitions of nested CV behind it.",
    "run.backend": "Where the units run: one of {BACKENDS} (default: local, or dask when "
    "a scheduler or cluster is given). ``--backend``",
    "run.n_jobs": "Local workers: an int >= 1, -1 for every core, -2 for all but one. ``--n-jobs``",
    "run.scheduler": "Address of a running Dask scheduler, e.g. ``tcp://host:8786``. "
    "``--scheduler``",
    "run.scheduler_file": "A Dask scheduler's JSON file (not with scheduler). ``--scheduler-file``",
    "run.seed": "Seed of the splits, the random search and every ``random_state``: an int "
    "from 0 to 2**32 - 1. ``--seed``",
    "run.out": "The run directory (default ``runs/<spec file name>``), inside the folder parcv "
    "runs from also through symbolic links. ``--out``",
    "run.save_models": "Keep the final refitted model in the run directory.",
    "run.journal": "The store's SQLite journal, one of {JOURNAL_MODES}: ``delete`` on a "
    "network file system (NFS, Lustre). ``--journal``",
    "run.timeout": "Seconds one unit may run; a longer one is stopped and recorded as "
    "failed (local and dask backends). ``--timeout``",
    "run.retry_failed": "On resume, run the units recorded as failed again. ``--retry-failed``",
    "cluster.kind": "The batch scheduler: one of {CLUSTER_KINDS}. ``--cluster``",
    "cluster.jobs": "Number of batch jobs, one Dask worker each. ``--jobs``",
    "cluster.cores": "Cores per job. ``--cores``",
    "cluster.memory": "Memory per job, e.g. ``8GB``. ``--memory``",
    "cluster.walltime": "Walltime per job, e.g. ``01:00:00``. ``--walltime``",
    "cluster.queue": "Queue or partition. ``--queue``",
    "cluster.account": "Account to charge. ``--account``",
    "tls.ca_file": "CA certificate (PEM). ``--tls-ca-file``",
    "tls.cert": "Client certificate (PEM). ``--tls-cert``",
    "tls.key": "Client private key (PEM). ``--tls-key``",
    "report.param": "The parameter on the x axis of the validation curve (default: the "
    "first of the space).",
    "report.metric": "The metric plotted (default: the one that selects).",
    "report.plots": "Draw the plots (default true).",
    "report.cv_results": "Also write ``cv_results.csv``, one row per candidate (default "
    "false). ``parcv report --cv-results``",
}

# Tables of the [search] table whose keys are the fields of a class of the API.
SUBTABLES = {
    "search.racing": "parcv.Racing",
    "search.iterations": "parcv.Iterations",
    "search.halving": "parcv.Halving",
    "search.hyperband": "parcv.Hyperband",
    "search.sampler": "parcv.Sampler",
}


def _quote(values: Iterable[Any]) -> str:
    return ", ".join(f"``{v}``" for v in values if v is not None)


def _constants() -> dict[str, str]:
    """The allowed values that the spec's checks read, by name."""
    from parcv.cli import build, data_sources, spec
    from parcv.criteria.tasks import CRITERIA
    from parcv.plan.records import PREDICT_METHODS
    from parcv.store.checks import JOURNAL_MODES

    return {
        "GRIDS": _quote(build.GRIDS),
        "DISTRIBUTIONS": _quote(build.DISTRIBUTIONS),
        "SCHEMES": _quote(build.SCHEMES),
        "FILE_KINDS": "``.csv``, ``.parquet``, ``.npz``, ``.npy``",
        "LOADERS": _quote(data_sources.SKLEARN_LOADERS),
        "CRITERIA": _quote(CRITERIA),
        "CRITERIA_KEYS": _quote(spec.CRITERIA_KEYS),
        "MODES": _quote(spec.MODES),
        "BACKENDS": _quote(spec.BACKENDS),
        "CLUSTER_KINDS": _quote(spec.CLUSTER_KINDS),
        "JOURNAL_MODES": _quote(JOURNAL_MODES),
        "PREDICT_METHODS": _quote(PREDICT_METHODS),
    }


def schema_keys() -> list[str]:
    """Every key a spec may hold, as "table.key", from the code's own schema."""
    from parcv.cli import build, spec

    keys = list(spec.SCHEMA[""])
    for table in spec.SCHEMA[""]:
        keys += [f"{table}.{key}" for key in spec.SCHEMA.get(table, ())]
    keys += [f"cv.scheme.{key}" for key in build.SCHEME_KEYS]
    return keys


def check_keys() -> None:
    """Raise if :data:`KEYS` and the code's schema disagree (a key added or removed)."""
    known = schema_keys()
    missing = [k for k in known if k not in KEYS]
    stale = [k for k in KEYS if k not in known]
    if missing or stale:
        raise ExtensionError(
            f"docs/_ext/parcv_cli.py: the spec schema changed. Keys without a meaning in "
            f"KEYS: {missing}; keys in KEYS the schema no longer has: {stale}. Edit KEYS."
        )


def _rst_table(header: list[str], rows: list[list[str]], widths: str) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" for cell in row[1:]]
    return [*lines, ""]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _run_defaults() -> dict[str, str]:
    from parcv.cli.spec import RunTable

    out = {}
    for f in dataclasses.fields(RunTable):
        default = "none" if f.default is None else repr(f.default).lower()
        out[f.name] = f"``{default}``" if f.default is not None else "none"
    return out


def _class_rows(path: str) -> list[list[str]]:
    """One row per parameter of an API class: key, type and default, meaning."""
    import importlib

    from numpydoc.docscrape import ClassDoc

    module, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    doc = {p.name: p for p in ClassDoc(cls, config={"show_class_members": False})["Parameters"]}
    rows = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        param = doc.get(f.name)
        kind = f"``{_one_line(param.type) if param else f.type}``"
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kind += " (required)"
        meaning = _one_line(" ".join(param.desc)) if param else ""
        rows.append([f"``{f.name}``", kind, meaning])
    return rows


def schema_rst() -> list[str]:
    """The rst of the spec schema: one section per table, one row per key."""
    from parcv.cli import spec

    check_keys()
    constants = _constants()
    run_defaults = _run_defaults()

    def meaning(key: str) -> str:
        return KEYS[key].format(**constants)

    lines = ["Top level", "~~~~~~~~~", ""]
    rows = [[f"``{k}``", meaning(k)] for k in spec.SCHEMA[""]]
    lines += _rst_table(["Key", "Meaning"], rows, "20 80")
    for table in spec.SCHEMA[""]:
        if table not in spec.SCHEMA:
            continue
        title = f"``[{table}]``"
        lines += [title, "~" * len(title), ""]
        rows = []
        for key in spec.SCHEMA[table]:
            text = meaning(f"{table}.{key}")
            if table == "run":
                text += f" Default: {run_defaults[key]}."
            rows.append([f"``{key}``", text])
        lines += _rst_table(["Key", "Meaning"], rows, "20 80")
        if table == "cv":
            lines += [
                "A CV scheme (``cv``, ``inner``, ``outer``) is an int k or a table of:",
                "",
                *_rst_table(
                    ["Key", "Meaning"],
                    [
                        [f"``{k.split('.')[-1]}``", meaning(k)]
                        for k in schema_keys()
                        if k.startswith("cv.scheme.")
                    ],
                    "20 80",
                ),
            ]
        if table == "search":
            for key, path in SUBTABLES.items():
                sub = key.split(".")[1]
                lines += [
                    f"``{sub} = {{ ... }}``: the parameters of :class:`{path}`:",
                    "",
                    *_rst_table(
                        ["Key", "Type and default", "Meaning"], _class_rows(path), "15 25 60"
                    ),
                ]
    return lines


class _RstDirective(Directive):
    has_content = False

    def lines(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        container = nodes.container(classes=["parcv-cli"])
        nested_parse_with_titles(self.state, StringList(self.lines(), "<parcv_cli>"), container)
        return container.children


class SpecSchemaDirective(_RstDirective):
    """``.. parcv-spec-schema::``: every table and key of a spec file."""

    def lines(self) -> list[str]:
        return schema_rst()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps no public list of its subparsers
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _option_cell(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"``{action.metavar or action.dest}``"
    takes = action.nargs != 0
    value = action.metavar or (action.dest.upper() if not action.choices else None)
    names = []
    for opt in action.option_strings:
        if takes and action.choices:
            names.append(f"``{opt} {{{','.join(map(str, action.choices))}}}``")
        elif takes:
            names.append(f"``{opt} {value}``")
        else:
            names.append(f"``{opt}``")
    return ", ".join(names)


def _help_cell(action: argparse.Action) -> str:
    text = (action.help or "").replace("%(default)s", str(action.default))
    text = text.replace("*", r"\*").replace("`", "``").replace("````", "``")
    # An address in a help text is an example, not a link.
    text = re.sub(r"\b(tcp|tls|inproc)://\S+?(?=[,;)]?(\s|$))", r"``\g<0>``", text)
    if action.choices and action.option_strings:
        text = text.rstrip()
        text += ("" if text.endswith((".", ":")) else ".") + f" One of {_quote(action.choices)}."
    return text


def command_rst(name: str, parser: argparse.ArgumentParser, summary: str) -> list[str]:
    """The rst of one subcommand: summary, usage, one table per group of options."""
    title = f"``parcv {name}``"
    usage = parser.format_usage().replace("usage: ", "").strip()
    lines = [f".. _cli-{name}:", "", title, "-" * len(title), "", summary.capitalize() + ".", ""]
    lines += [".. code-block:: text", "", *[f"   {ln}" for ln in usage.splitlines()], ""]
    if parser.description:
        lines += [parser.description, ""]
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if not isinstance(a, argparse._HelpAction)]
        if not actions:
            continue
        heading = {"positional arguments": "Arguments", "options": "Options"}.get(
            group.title or "", (group.title or "").capitalize()
        )
        lines += [f"**{heading}**", ""]
        rows = [[_option_cell(a), _help_cell(a)] for a in actions]
        lines += _rst_table(["Option", "Meaning"], rows, "35 65")
    if parser.epilog:
        lines += [parser.epilog[0].upper() + parser.epilog[1:] + ".", ""]
    return lines


def cli_rst() -> list[str]:
    """The rst of the whole command line, from :func:`parcv.cli.main._parser`."""
    from parcv.cli.main import _parser

    parser = _parser()
    helps = _helps(parser)
    lines = [".. code-block:: text", ""]
    lines += [f"   {ln}" for ln in parser.format_usage().replace("usage: ", "").splitlines()]
    lines += [""]
    lines += _rst_table(
        ["Command", "What it does"],
        [[f":ref:`parcv {n} <cli-{n}>`", helps.get(n, "")] for n in _subcommands(parser)],
        "25 75",
    )
    for name, sub in _subcommands(parser).items():
        lines += command_rst(name, sub, helps.get(name, ""))
    return lines


class CliDirective(_RstDirective):
    """``.. parcv-cli::``: every subcommand of ``parcv`` with its options."""

    def lines(self) -> list[str]:
        return cli_rst()


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("parcv-cli", CliDirective)
    app.add_directive("parcv-spec-schema", SpecSchemaDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
