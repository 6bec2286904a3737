"""Nothing in a store a user did not write is trusted (issue 52).

Every read of a store is checked against the seal its last run wrote (``parcv.store.seal``):
a damaged or tampered store gives one parcv error naming it, what differs and the way on,
never a raw exception or another result. Stores of older schemas load as their runs
returned, or are refused where the store does not hold the run; a newer schema is refused
and left as it is. A saved model is unpickled only when its tag verifies with the user's
key (``parcv.store.trust``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
from collections import Counter
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge

import parcv
from parcv.errors import ModelNotAvailableError, ParcvError, StoreDamagedError
from parcv.store.seal import write_seal
from parcv.store.trust import key_path
from tests.store.damage_cases import (
    FILE_DAMAGES,
    ROW_DAMAGES,
    TABLES,
    Damage,
    _cli,
    check_damage,
    make_template,
    signature,
)
from tests.store.fixtures.make_round_fixtures import round_data, run
from tests.store.stored_scores import stored_scores
from tests.sweep_script import sweep_data

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ALPHAS = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0]}


def _halving(store, **options):
    X, y = round_data()
    return parcv.search(Ridge(), ALPHAS, X, y, cv=3, halving=parcv.Halving(factor=2,
                        random_state=0), backend="serial", store=store, progress=False,
                        **options)  # fmt: skip


def _sql(store, *statements):
    with closing(sqlite3.connect(store)) as conn, conn:
        for statement in statements:
            conn.execute(statement)


def _numbers(result):
    return result.best_params_, result.cv_results_["mean_test_score"].tolist()


@pytest.fixture(scope="module")
def halved(tmp_path_factory):
    store = tmp_path_factory.mktemp("halved") / "run.sqlite"
    _halving(store)
    return store.read_bytes(), _numbers(_halving(None))


# Each loaded as another result (or a raw KeyError) before the seal: 10 of the probe's 20.
TAMPERED_ROUNDS = {
    "last round deleted": "DELETE FROM rounds WHERE pid = (SELECT max(pid) FROM rounds "
    "WHERE round >= 0)",
    "a decision changed": "UPDATE rounds SET decision = '{\"kept\": [0]}' WHERE pid = 2",
    "a round duplicated": "INSERT INTO rounds SELECT pid + 100, search, round, part, plan, "
    "decision FROM rounds WHERE pid = 1",
    "a round's plan edited": "UPDATE rounds SET plan = replace(plan, '0.01', '0.02')",
    "folds emptied": "DELETE FROM folds",
}


@pytest.mark.parametrize("tamper", list(TAMPERED_ROUNDS))
def test_a_tampered_rounds_table_is_refused_and_a_resume_rebuilds_it(tmp_path, halved, tamper):
    store = tmp_path / "run.sqlite"
    store.write_bytes(halved[0])
    _sql(store, TAMPERED_ROUNDS[tamper])
    before = store.read_bytes()
    table = "folds" if "folds" in tamper else "rounds"
    with pytest.raises(StoreDamagedError, match=rf"{str(store)!r} is damaged: its table "
                       rf"{table} \(changed\) differs from the seal.*resume=True"):  # fmt: skip
        parcv.load(store)
    assert store.read_bytes() == before  # refused, not repaired behind the user's back
    assert _numbers(_halving(store, resume=True)) == halved[1]  # the way on the message names
    assert _numbers(parcv.load(store)) == halved[1]


def test_an_edited_record_is_refused_by_load_and_by_a_resume(tmp_path, halved):
    store = tmp_path / "run.sqlite"
    store.write_bytes(halved[0])
    # One score of one chunk: the result would differ, and a resume would reuse it.
    _sql(store, "UPDATE chunks SET test_scores = zeroblob(length(test_scores)) WHERE id = 1")
    way = r"reuses no record it cannot verify.*overwrite=True"
    with pytest.raises(StoreDamagedError, match=rf"table chunks \(changed\).*{way}"):
        parcv.load(store)
    with pytest.raises(StoreDamagedError, match=way):
        _halving(store, resume=True)
    assert _numbers(_halving(store, overwrite=True)) == halved[1]


_SEAL_VALUES = st.one_of(
    st.text(max_size=12),
    st.text("'\"\\\n\x00\x7f\u00e9\u200b\U0001f600ab", max_size=12),  # quotes, escapes
    st.integers(),
    st.floats(),
    st.none(),
    st.binary(max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(_SEAL_VALUES, min_size=1, max_size=3).map(tuple), max_size=4))
def test_the_seal_digests_a_long_text_in_pieces_as_its_whole_repr(rows):
    # The meta table's plan description is hashed a piece at a time: the bytes digested
    # are those of the rows' repr, for every text (quotes, escapes, non-ASCII), so the
    # seals written before still verify. Pieces of 3 characters here split every text.
    from parcv.store import seal

    whole, pieces = hashlib.blake2b(digest_size=16), hashlib.blake2b(digest_size=16)
    whole.update(repr(rows).encode())
    previous, seal._PIECE = seal._PIECE, 3
    try:
        seal._update_with_repr(pieces, rows)
    finally:
        seal._PIECE = previous
    assert pieces.hexdigest() == whole.hexdigest()


@pytest.mark.parametrize("how", ["truncated", "page zeroed"])
def test_a_physically_damaged_store_is_one_parcv_error(tmp_path, halved, how):
    store = tmp_path / "run.sqlite"
    data = bytearray(halved[0])
    if how == "truncated":
        data = data[: len(data) // 2]
    else:
        data[4096 * 3 : 4096 * 4] = bytes(4096)
    store.write_bytes(bytes(data))
    for call in (parcv.load, lambda s: _halving(s, resume=True)):
        with pytest.raises(ParcvError, match=rf"{str(store)!r}.*(damaged|not a parcv store)"):
            call(store)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return make_template(tmp_path_factory.mktemp("template"))


# The CI slice of scripts/store_damage.py: a few damages, each through load, report, resume.
@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    how=st.sampled_from([*ROW_DAMAGES, "empty", *FILE_DAMAGES]),
    table=st.sampled_from(TABLES),
    seed=st.integers(0, 2**31 - 1),
)
def test_a_damaged_store_gives_its_result_or_one_parcv_error(
    template, tmp_path_factory, how, table, seed
):
    damage = Damage(how, None if how in FILE_DAMAGES else table, seed)
    outcome = check_damage(template, damage, tmp_path_factory.mktemp("case"))
    assert not outcome.violations, (str(damage), outcome.verdicts)


# --- stores of other schemas ----------------------------------------------------------------


def _copy(name, tmp_path):
    store = tmp_path / "run.sqlite"
    shutil.copyfile(FIXTURES / f"schema_{name}.sqlite", store)
    return store


def _same_rounds(result, fresh):
    assert type(result) is type(fresh)
    assert signature(result) == signature(fresh)


def _reads_as_written(result, fresh, stored):
    """``result`` holds the numbers its store's writer stored, and the fresh run's rest.

    Every record's test scores are a stored row's of its kind, read by SQL (a search in
    rounds keeps its final refit as its fitted estimator, not as a record): the writer's
    CPU's numbers, which a run here need not give in the last bit. Everything else the
    result says (its rounds, candidates, parameters, choices and counts) is the fresh run's;
    the numbers that follow from the scores (means, deviations, intervals) are left out of
    that comparison.
    """
    assert type(result) is type(fresh)
    # A row's unit key is its part's (a rung's candidates from 0), a record's the search's.
    rows = Counter((key[0], tuple(sorted(scores.items()))) for key, scores in stored
                   if key[0] != "final")  # fmt: skip
    assert Counter((r.key[0], tuple(sorted(r.test_scores.items()))) for r in result.records) == rows
    assert _without_scores(json.loads(signature(result))) == _without_scores(
        json.loads(signature(fresh))
    )


def _without_scores(value, path=()):
    """A parsed signature with every float but a parameter's value left out."""
    if isinstance(value, dict):
        return {k: _without_scores(v, (*path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_scores(v, (*path, "")) for v in value]
    if isinstance(value, float) and not any("param" in str(p) for p in path):
        return "a number"
    return value


@pytest.mark.parametrize("name", ["5_halving", "5_nested_halving", "5_sampler"])
def test_a_run_in_rounds_of_schema_5_loads_and_resumes_to_its_result(name, tmp_path):
    if "sampler" in name:
        pytest.importorskip("optuna")
    kind = name.split("_", 1)[1]
    fresh = run(kind, None)
    store = _copy(name, tmp_path)
    before = store.read_bytes()
    stored = stored_scores(store)
    _reads_as_written(parcv.load(store), fresh, stored)
    assert store.read_bytes() == before
    from tests.store.fixtures import make_round_fixtures

    resumed = _resume_round(make_round_fixtures, kind, store)
    _reads_as_written(resumed, fresh, stored)
    _reads_as_written(parcv.load(store), fresh, stored)
    # The resume reused every stored unit: what it says is what the store said before.
    (tmp_path / "untouched").mkdir()
    untouched = parcv.load(_copy(name, tmp_path / "untouched"))
    assert signature(resumed) == signature(parcv.load(store)) == signature(untouched)


def _resume_round(module, kind, store):
    """The fixture's call again, on its store, with resume=True."""
    X, y = module.round_data()
    common = dict(backend="serial", store=store, progress=False, resume=True)
    if kind == "halving":
        return parcv.search(Ridge(), module.ALPHAS, X, y, cv=3, halving=module.halving(),
                            **common)  # fmt: skip
    if kind == "nested_halving":
        return parcv.nested_cv(Ridge(), module.ALPHAS, X, y, outer=3, inner=3,
                               halving=module.halving(), **common)  # fmt: skip
    strategy, space = module.sampler()
    return parcv.search(Ridge(), space, X, y, cv=3, strategy=strategy, random_state=0, **common)


@pytest.mark.parametrize("kind", ["halving", "nested_halving"])
def test_a_halving_store_of_schema_4_is_refused_and_a_resume_rebuilds_it(kind, tmp_path):
    from tests.store.fixtures import make_round_fixtures

    store = _copy(f"4_{kind}", tmp_path)
    before = store.read_bytes()
    # Before: a plain SearchResult of the last rung's two candidates.
    with pytest.raises(parcv.PlanMismatchError, match=r"store schema 4.*records that plan "
                       r"does not name.*halving.*resume=True"):  # fmt: skip
        parcv.load(store)
    assert store.read_bytes() == before
    fresh = run(kind, None)
    _same_rounds(_resume_round(make_round_fixtures, kind, store), fresh)
    _same_rounds(parcv.load(store), fresh)


@pytest.mark.parametrize("schema", ["7", "99"])
def test_a_store_of_a_newer_schema_is_refused_and_never_written(schema, tmp_path, template):
    folder = tmp_path / "run"
    shutil.copytree(template.folder, folder)
    store = folder / "store.sqlite"
    _sql(store, f"UPDATE meta SET value = '{schema}' WHERE name = 'schema'")
    before = store.read_bytes()
    versions = rf"newer parcv \(store schema {schema}\).*schemas 1 to 6"
    with pytest.raises(parcv.PlanMismatchError, match=versions):
        parcv.load(store)
    assert store.read_bytes() == before
    code, err = _cli(["report", str(folder)])
    assert code != 0 and f"store schema {schema}" in err and "1 to 6" in err, err
    assert store.read_bytes() == before
    argv = ["run", str(template.spec), "--out", str(folder), "--resume", "--backend", "serial"]
    code, err = _cli(argv)
    assert code != 0 and f"store schema {schema}" in err and "1 to 6" in err, err
    assert store.read_bytes() == before


# --- saved models: data, not code ------------------------------------------------------------

MARKER = "PARCV_TEST_UNPICKLED"


class _Payload:
    """A pickle that runs code when loaded: it writes the file its environment names."""

    def __reduce__(self):
        return (exec, (f"open(__import__('os').environ[{MARKER!r}], 'w').write('ran')",))


def _saved(store):
    X, y = sweep_data()
    return parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial",
                        store=store, save_models=True, progress=False)  # fmt: skip


def _plant(store, digest_of):
    """Replace the saved model by a payload, its digest too, and seal the store again."""
    import joblib

    [model] = Path(f"{store}.models").glob("final-*.joblib")
    joblib.dump(_Payload(), model)
    digest = digest_of(model)
    _sql(store, f"UPDATE models SET sha256 = '{digest}'")
    with closing(sqlite3.connect(store, isolation_level=None)) as conn:
        write_seal(conn)  # whoever can write the store can seal it too
    return model


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "digest_of", [_sha256, lambda p: "hmac-sha256:" + _sha256(p)], ids=["sha256", "forged-tag"]
)
def test_a_planted_model_with_its_digest_rewritten_is_never_unpickled(
    tmp_path, monkeypatch, digest_of
):
    marker = tmp_path / "ran"
    monkeypatch.setenv(MARKER, str(marker))
    store = tmp_path / "run.sqlite"
    first = _saved(store)
    _plant(store, digest_of)
    loaded = parcv.load(store)  # the store verifies: the attacker sealed it
    assert loaded.best_params_ == first.best_params_
    with pytest.raises(ModelNotAvailableError, match=r"not loaded") as refused:
        loaded.best_estimator_  # noqa: B018
    assert "runs its code" in str(refused.value) and "resume=True" in str(refused.value)
    with pytest.raises(ValueError, match="load_models=True, but"):
        parcv.load(store, load_models=True)
    X, y = sweep_data()
    resumed = parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial",
                           store=store, save_models=True, resume=True, progress=False)  # fmt: skip
    np.testing.assert_array_equal(resumed.best_estimator_.coef_, first.best_estimator_.coef_)
    # The resume refitted the final model and saved it under the user's key.
    np.testing.assert_array_equal(parcv.load(store).best_estimator_.coef_,
                                  first.best_estimator_.coef_)  # fmt: skip
    assert not marker.exists()


def test_a_model_an_earlier_parcv_saved_loads_only_once_vouched_for(tmp_path, monkeypatch):
    monkeypatch.setenv(MARKER, str(tmp_path / "ran"))
    store = tmp_path / "run.sqlite"
    first = _saved(store)
    [model] = Path(f"{store}.models").glob("final-*.joblib")
    _sql(store, f"UPDATE models SET sha256 = '{_sha256(model)}'", "DELETE FROM meta WHERE "
         "name = 'seal'")  # as schema 5 left it: a bare SHA-256, no seal  # fmt: skip
    with pytest.raises(ModelNotAvailableError, match=r"earlier parcv.*SHA-256.*trust_saved_model"):
        parcv.load(store).best_estimator_  # noqa: B018
    assert parcv.trust_saved_model(store) == 1
    np.testing.assert_array_equal(parcv.load(store).best_estimator_.coef_,
                                  first.best_estimator_.coef_)  # fmt: skip
    assert parcv.trust_saved_model(store) == 0  # tagged already
    # A file that does not match its SHA-256 is never vouched for.
    planted = _plant(store, lambda p: "0" * 64)
    assert parcv.trust_saved_model(store) == 0
    with pytest.raises(ModelNotAvailableError, match="earlier parcv"):
        parcv.load(store).best_estimator_  # noqa: B018
    assert planted.is_file() and not (tmp_path / "ran").exists()


def test_the_model_key_is_the_users_only_and_outside_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    store = tmp_path / "run.sqlite"
    _saved(store)
    key = key_path()
    assert key == tmp_path / "config" / "parcv" / "model-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert key.read_bytes() not in store.read_bytes()
    parcv.load(store).best_estimator_  # noqa: B018
    os.chmod(key, 0o644)
    with pytest.raises(ParcvError, match="chmod 600"):
        parcv.load(store).best_estimator_  # noqa: B018
    os.chmod(key, 0o600)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another"))  # another user's key
    with pytest.raises(ModelNotAvailableError, match="there is none"):
        parcv.load(store).best_estimator_  # noqa: B018
