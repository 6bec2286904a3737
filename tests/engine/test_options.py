"""RunOptions: the one object of run options, checked once, documented once."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import parcv
from parcv import LocalBackend, RunOptions, SerialBackend
from parcv.engine.options import (
    FinalRunKeywords,
    RunKeywords,
    check_run_options,
    takes_run_options,
)


def test_defaults_are_the_entry_points_defaults():
    options = RunOptions()
    assert (options.backend, options.n_jobs, options.store, options.journal) == (
        "local",
        None,
        None,
        "wal",
    )
    assert not (options.resume or options.overwrite or options.retry_failed)
    assert options.progress is None and options.timeout is None and not options.save_models
    assert options.resolved_backend == LocalBackend()


def test_the_backend_is_resolved_once_sized_and_limited():
    options = RunOptions(backend="local", n_jobs=2, timeout=30)
    assert options.resolved_backend == LocalBackend(n_jobs=2, timeout=30)
    assert RunOptions(backend="serial").resolved_backend == SerialBackend()
    given = SerialBackend()
    assert RunOptions(backend=given).resolved_backend is given


def test_options_are_frozen_and_replace_checks_again(tmp_path):
    options = RunOptions(backend="serial", store=tmp_path / "a.sqlite")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.resume = True  # type: ignore[misc]
    assert dataclasses.replace(options, resume=True).resume is True
    with pytest.raises(ValueError, match="resume=True and overwrite=True contradict"):
        dataclasses.replace(options, resume=True, overwrite=True)


def test_numpy_bools_are_taken_as_bools(tmp_path):
    options = RunOptions(store=tmp_path / "s.sqlite", resume=np.bool_(True), progress=np.bool_(0))
    assert options.resume is True and options.progress is False


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"backend": "ray"}, ValueError, r"backend must be one of .*; got 'ray'\..* Pass "),
        ({"backend": SerialBackend}, TypeError, r"not the class 'SerialBackend'; pass Serial"),
        ({"backend": object()}, TypeError, r"backend must be a name .*; got <object.*Pass "),
        ({"n_jobs": 0}, ValueError, r"n_jobs must be a positive int, .*; got 0\. Pass "),
        ({"backend": SerialBackend(), "n_jobs": 2}, ValueError, r"n_jobs sizes a backend given"),
        ({"store": 123}, TypeError, r"store must be a file path .*; got 123 .*Pass e\.g\."),
        ({"resume": True}, ValueError, r"resume=True needs store=.*got store=None\. Pass "),
        ({"resume": "yes"}, ValueError, r"resume must be True, False or 'values'; got 'yes'\."),
        ({"resume": 1}, TypeError, r"resume must be True, False or 'values'; got 1\. Pass e\.g"),
        ({"overwrite": 1}, TypeError, r"overwrite must be True or False; got 1\."),
        ({"retry_failed": None}, TypeError, r"retry_failed must be True or False; got None\."),
        ({"save_models": "no"}, TypeError, r"save_models must be True or False; got 'no'\."),
        ({"progress": "on"}, TypeError, r"progress must be True, False or None; got 'on'\."),
        ({"journal": "WAL"}, ValueError, r"journal must be one of \['wal', 'delete'\]; got 'WAL'"),
        ({"journal": None}, TypeError, r"journal must be a str, .*; got None\. Pass e\.g\."),
        ({"timeout": 5, "backend": "serial"}, ValueError, r"timeout=5 needs the local or the Dask"),
        ({"timeout": -1}, ValueError, r"timeout must be a number of seconds > 0"),
        ({"save_models": True}, ValueError, r"save_models=True needs store=.*got store=None\."),
    ],
)  # fmt: skip
def test_bad_options_are_refused_in_the_house_style(options, error, match):
    with pytest.raises(error, match=match):
        RunOptions(**options)


def test_contradicting_store_options_name_the_store(tmp_path):
    store = tmp_path / "run.sqlite"
    with pytest.raises(ValueError, match=r"contradict each other: .*store=PosixPath.*Keep resume"):
        RunOptions(store=store, resume=True, overwrite=True)
    assert not store.exists()


def test_a_store_that_cannot_be_written_is_refused_when_built(tmp_path):
    with pytest.raises(ValueError, match=r"is a directory; store is the SQLite file itself"):
        RunOptions(store=tmp_path)


def test_keywords_build_the_options_and_an_object_is_taken_as_is():
    built = check_run_options(None, {"backend": "serial", "n_jobs": 2}, caller="search")
    assert built == RunOptions(backend="serial", n_jobs=2)
    given = RunOptions(backend="serial")
    assert check_run_options(given, {}, caller="search") is given


def test_an_option_given_twice_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"search\(\) got options= and the keyword backend='serial'"
                       r"; give each run option once\. .*dataclasses\.replace"):  # fmt: skip
        check_run_options(RunOptions(), {"backend": "serial"}, caller="search")
    with pytest.raises(TypeError, match=r"options must be a parcv\.RunOptions or None; got \{"):
        check_run_options({"backend": "serial"}, {}, caller="search")


def test_an_unknown_keyword_names_the_closest_option():
    with pytest.raises(TypeError, match=r"search\(\) got an unexpected keyword argument 'n_job'\. "
                       r"Did you mean 'n_jobs'\?"):  # fmt: skip
        check_run_options(None, {"n_job": 2}, caller="search")


def test_save_models_applies_only_where_a_final_model_is_fitted(tmp_path):
    with pytest.raises(TypeError, match=r"cross_validate\(\) got an unexpected keyword argument "
                       r"'save_models': it fits no final model"):  # fmt: skip
        check_run_options(None, {"save_models": True}, caller="cross_validate")
    saving = RunOptions(store=tmp_path / "s.sqlite", save_models=True)
    with pytest.raises(ValueError, match=r"learning_curve\(\) fits no final model"):
        check_run_options(saving, {}, caller="learning_curve")
    assert check_run_options(saving, {}, caller="search", final_model=True) is saving


def test_the_keyword_types_list_exactly_the_options():
    names = [f.name for f in dataclasses.fields(RunOptions) if f.init]
    assert list(FinalRunKeywords.__annotations__) == names
    assert list(RunKeywords.__annotations__) == [n for n in names if n != "save_models"]


def test_the_decorator_documents_and_shows_the_options():
    @takes_run_options()
    def run(x, *, options=None, **run_options):
        """Run something.

        Parameters
        ----------
        x : int
        %(run_options)s
        """

    parameters = inspect.signature(run).parameters
    assert list(parameters)[1:] == [*RunKeywords.__annotations__, "options"]
    assert parameters["journal"].default == "wal" and parameters["backend"].default == "local"
    assert "\n        retry_failed : bool, default=False\n            With " in run.__doc__
    assert "save_models" not in run.__doc__
    assert "%(run_options)s" not in run.__doc__

    with pytest.raises(ValueError, match=r"must hold '%\(run_options\)s'"):
        takes_run_options()(lambda: None)


def test_run_options_document_themselves_from_the_same_text():
    doc = RunOptions.__doc__
    assert "    save_models : bool, default=False\n" in doc
    assert "options : RunOptions" not in doc  # that entry is for the entry points
    assert parcv.RunOptions is RunOptions


@pytest.mark.parametrize("verbose", [2, 3, 10])
@pytest.mark.parametrize("return_train_score", [False, True])
def test_verbose_prints_sklearn_s_lines(verbose, return_train_score, backend, capsys):
    """The same lines as GridSearchCV's, times aside, on every backend (in any order)."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import GridSearchCV as SkGridSearchCV
    from sklearn.svm import LinearSVC

    import parcv

    X, y = make_classification(n_samples=60, random_state=0)
    space = {"C": [0.1, 1.0], "tol": [1e-3]}
    kwargs = dict(scoring="accuracy", cv=3, verbose=verbose, return_train_score=return_train_score)
    SkGridSearchCV(LinearSVC(random_state=0), space, **kwargs).fit(X, y)
    want = capsys.readouterr().out
    parcv.GridSearchCV(LinearSVC(random_state=0), space, backend=backend, **kwargs).fit(X, y)
    got = capsys.readouterr().out

    def lines(out):
        return sorted(
            line.rsplit(" total time=", 1)[0] for line in out.splitlines() if "END" in line
        )

    assert lines(got) == lines(want) and len(lines(got)) == 6


def test_verbose_is_checked():
    with pytest.raises(TypeError, match="verbose must be an int >= 0; got True"):
        RunOptions(verbose=True)
    with pytest.raises(ValueError, match="verbose must be an int >= 0; got -1"):
        RunOptions(verbose=-1)


def test_an_unknown_keyword_names_the_closest_parameters_of_that_entry_point(reg_data):
    # Before: the message named only the run options ("Its run options are [...]"), so a
    # mistyped parameter of the function itself (outer, confidence) got no hint.
    from sklearn.linear_model import Ridge

    X, y = reg_data
    with pytest.raises(TypeError, match=r"nested_cv\(\) got an unexpected keyword argument "
                       r"'n_outer'\. Did you mean 'outer'\? See help\(nested_cv\)"):  # fmt: skip
        parcv.nested_cv(Ridge(), {"alpha": [1.0]}, X, y, backend="serial", n_outer=5)
    with pytest.raises(TypeError, match=r"'confidense'\. Did you mean 'confidence'\?"):
        parcv.cross_validate(Ridge(), X, y, backend="serial", confidense=0.9)
    with pytest.raises(TypeError, match=r"'ncv_repetition'\. Did you mean 'ncv_repetitions'"):
        parcv.nested_cv(Ridge(), {"alpha": [1.0]}, X, y, backend="serial", ncv_repetition=3)
    # Nothing close: every parameter of the function, then its run options.
    with pytest.raises(TypeError, match=r"'zzz'\. Its parameters are \[.*'interval'.*\], and "
                       r"its run options \[.*'backend'"):  # fmt: skip
        parcv.cross_validate(Ridge(), X, y, backend="serial", zzz=1)
