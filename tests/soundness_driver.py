"""The driver of :mod:`tests.soundness_programs`: runs a batch of generated programs in a
fresh process (``python -m tests.soundness_driver MODE SPEC``) and prints their outcomes.

It imports the generated modules by computed names and reloads them, which makes the
identity analysis count every loaded module of the user's own. It is a module of its own,
never imported by the tests' process, so that a run there whose code reaches the ``tests``
package does not meet it.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

from tests.soundness_programs import MODULE_ORDER, _write

ALPHAS = [0.1, 3.0]


def _data() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(47)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.5, -2.0, 0.5]) + 0.3 * rng.normal(size=60)
    return X, y


def _exec_virtual(spec: dict[str, Any], *, again: bool = False) -> None:
    """Make the module without a file from its ``.src`` text (``again``: rerun, as a cell)."""
    name = f"{spec['tag']}_virt"
    if name in sys.modules and not again:
        return
    module = sys.modules.get(name) or types.ModuleType(name)
    source = (Path(spec["dir"]) / f"{name}.src").read_text()
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module


def _load(spec: dict[str, Any]) -> tuple[Any, dict[str, list[float]], Any]:
    """Import the package (as loaded so far), assign the run-time value; the estimator."""
    from sklearn.pipeline import Pipeline

    tag = spec["tag"]
    if spec["virt"]:
        _exec_virtual(spec)
    base: Any = importlib.import_module(f"{tag}_base")
    base.RUNTIME = spec["runtime"]
    model = importlib.import_module(f"{tag}_model")
    if not spec["pipeline"]:
        return model.Model(), {"alpha": ALPHAS}, model.scorer
    feats = importlib.import_module(f"{tag}_feats")
    pipe = Pipeline([("features", feats.Features()), ("model", model.Model())])
    return pipe, {"model__alpha": ALPHAS}, model.scorer


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _run(spec: dict[str, Any], store: str, *, resume: bool) -> dict[str, Any]:
    """One run of the case's entry point: its numbers, and how many units it computed."""
    import numpy as np

    import parcv

    estimator, space, scorer = _load(spec)
    X, y = _data()
    common = dict(scoring=scorer, refit=False, backend="serial", progress=False, store=store,
                  resume=resume, error_score="raise")  # fmt: skip
    logger, messages = logging.getLogger("parcv"), _Messages()
    logger.addHandler(messages)
    logger.setLevel(logging.INFO)
    start = time.time()
    result: Any
    try:
        if spec["entry"] == "search":
            result = parcv.search(estimator, space, X, y, cv=3, **common)
            names = ["mean_test_score", *(f"split{i}_test_score" for i in range(3))]
            numbers = {k: np.asarray(result.cv_results_[k]).tolist() for k in names}
        else:
            result = parcv.nested_cv(estimator, space, X, y, outer=3, inner=3, **common)
            numbers = {k: np.asarray(v).tolist() for k, v in result.outer_scores.items()}
    finally:
        logger.removeHandler(messages)
    # A reused record keeps the time its unit started in the run that computed it.
    n_computed = sum(r.started >= start for r in result.records)
    return {"numbers": numbers, "n_units": len(result.records), "n_computed": n_computed,
            "log": messages.messages}  # fmt: skip


def _edit_in_place(spec: dict[str, Any]) -> dict[str, Any]:
    """Write the edited files and reload the package, as a notebook user would."""
    after = spec["after"]
    _write(Path(spec["dir"]), after["files"])
    importlib.invalidate_caches()
    if spec["virt"]:
        _exec_virtual(spec, again=True)
    for module in MODULE_ORDER:
        loaded = sys.modules.get(f"{spec['tag']}_{module}")
        if loaded is not None:
            importlib.reload(loaded)
    return {**spec, "runtime": after["runtime"]}


def _before(spec: dict[str, Any]) -> dict[str, Any]:
    return {"before": _run(spec, spec["store"], resume=False)}


def _after(spec: dict[str, Any]) -> dict[str, Any]:
    return {"resumed": _run(spec, spec["store"], resume=True),
            "fresh": _run(spec, spec["fresh_store"], resume=False)}  # fmt: skip


def _notebook(spec: dict[str, Any]) -> dict[str, Any]:
    before = _before(spec)
    return {**before, **_after(_edit_in_place(spec))}


MODES = {"before": _before, "after": _after, "notebook": _notebook}


def drive(mode: str, spec_path: str) -> None:
    """Run each case of a batch as ``mode`` says and print the outcomes as one JSON line.

    Each outcome names the parcv source tree that ran it.
    """
    outcomes = []
    for spec in json.loads(Path(spec_path).read_text()):
        try:
            outcomes.append(MODES[mode](spec))
        except Exception:
            outcomes.append({"error": traceback.format_exc()})
    import parcv

    source = str(Path(parcv.__file__).parent)
    print(json.dumps([{**outcome, "parcv": source} for outcome in outcomes]))


if __name__ == "__main__":
    drive(sys.argv[1], sys.argv[2])
