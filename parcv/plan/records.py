"""Task records: the one thing every backend returns and every store keeps."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.plan.kinds import KINDS, Key

__all__ = [
    "Unit",
    "ErrorInfo",
    "FoldScores",
    "Predictions",
    "Record",
    "PREDICT_METHODS",
    "SPARSE_PREFIX",
    "unit_of",
]

# Methods whose test-fold output a unit can keep (``return_predictions``).
PREDICT_METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function")

# A method whose output was a sparse matrix is kept dense, beside ``SPARSE_PREFIX + method``
# holding its format ("csr", ...), so cross_val_predict returns it sparse, as scikit-learn.
SPARSE_PREFIX = "sparse_format:"


@dataclass(frozen=True, slots=True)
class Unit:
    """One fit-and-score unit of work.

    Parameters
    ----------
    kind : str
        A kind of :data:`parcv.plan.kinds.KINDS`.
        ``fit``: candidate on an inner split; ``refit``: the selected
        candidate on an outer split; ``final``: the selected candidate on all data;
        ``criteria``: the candidate fitted once on the outer-train part (or all
        data) and scored by information criteria / the evidence; ``ncv``: one fit
        of the nested CV interval (``inner`` is its index in the interval's fits);
        ``perm``: fold ``inner`` of permutation ``outer`` of a permutation test
        (:mod:`parcv.plan.resampling`); ``boot``: bootstrap round ``inner`` of a
        bias-variance decomposition (of candidate ``candidate``).
    outer : int or None
        Outer fold; ``None`` means all data.
    inner : int or None
        Inner fold of a ``fit`` unit. ``None`` for a fast-CV ``fit`` unit,
        which covers every inner fold of its outer fold at once (held-out
        predictions of a linear smoother, see :mod:`parcv.fastcv.smoothers`).
    candidate : int
        Candidate index (for refits, the one that was selected; for a
        fast-CV unit, the first candidate of its batch).

    Examples
    --------
    >>> Unit("fit", None, None, 3).key, Unit("criteria", 0, None, 1).key
    (('fit', None, None, 3), ('criteria', 0, 1))
    """

    kind: str
    outer: int | None
    inner: int | None
    candidate: int

    def __reduce__(self) -> tuple[type[Unit], tuple[Any, ...]]:
        # Rebuild through __init__: several times faster to unpickle than a frozen
        # slots dataclass's default setstate, and units travel in every task.
        return (Unit, (self.kind, self.outer, self.inner, self.candidate))

    @property
    def key(self) -> Key:
        """Return the stable task key of the unit.

        Its shape is its kind's (:data:`parcv.plan.kinds.KINDS`): ``("fit", o, i, c)``,
        ``("refit", o)``, ``("final",)``, ``("criteria", o, c)``, ``("ncv", i)``, ...

        Examples
        --------
        >>> Unit("refit", 2, None, 0).key
        ('refit', 2)
        """
        return KINDS[self.kind].key(self)


def unit_of(key: Key) -> Unit:
    """Return the unit of a graph key (a refit's candidate, not in its key, is 0).

    Examples
    --------
    >>> unit_of(("perm", 4, 1)), unit_of(("fit", None, 0, 3)).key
    (Unit(kind='perm', outer=4, inner=1, candidate=0), ('fit', None, 0, 3))
    """
    return Unit(key[0], **KINDS[key[0]].unit_fields(key))


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What went wrong in a failed unit, or in one scorer of a unit.

    Parameters
    ----------
    type, message, traceback : str
        The exception's class name, its text and its formatted traceback.
    exception : bytes or None, default=None
        The exception itself, pickled in the worker when the run raises on a
        failure (``error_score="raise"``), so the driver raises the very same
        type and message; never stored.

    Examples
    --------
    >>> info = ErrorInfo.of(ValueError("bad"), "", keep=True)
    >>> info.type, repr(info.original())
    ('ValueError', "ValueError('bad')")
    """

    type: str
    message: str
    traceback: str
    exception: bytes | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, err: BaseException, traceback: str, *, keep: bool = False) -> ErrorInfo:
        """The info of ``err``; with ``keep``, the exception too, if it pickles both ways."""
        kept = None
        if keep:
            try:
                kept = pickle.dumps(err)
                pickle.loads(kept)
            except Exception:  # an exception that does not pickle: its text stands in
                kept = None
        return cls(type(err).__name__, str(err), traceback, kept)

    def original(self) -> BaseException | None:
        """The exception itself, when it was kept and unpickles here; else None."""
        if self.exception is None:
            return None
        try:
            err = pickle.loads(self.exception)
        except Exception:  # its class is not importable here: its text stands in
            return None
        return err if isinstance(err, BaseException) else None

    def to_dict(self) -> dict[str, str]:
        """Plain view (the exception itself is left out)."""
        return {"type": self.type, "message": self.message, "traceback": self.traceback}


@dataclass(frozen=True, slots=True, eq=False)
class FoldScores:
    """Named arrays a record keeps beside its scores: what its kind keeps.

    A fast-CV record keeps the test scores of one candidate on every inner
    fold of one outer fold, one array per metric instead of one record per
    fold (leave-one-out of 20 candidates on 1000 rows is 20 records, not
    20,000); an ``ncv`` or BBC-CV fit keeps its per-sample test losses
    (``"loss"``), a ``boot`` fit its predictions on the test rows
    (``"prediction"``). See ``keeps`` in :mod:`parcv.plan.kinds`.

    Parameters
    ----------
    test : dict of str to ndarray
        One array per name: per fold in fold order, or per test row in row order.

    Examples
    --------
    >>> a = FoldScores({"score": np.array([1.0, np.nan])})
    >>> a == FoldScores({"score": np.array([1.0, np.nan])}), a.n_folds
    (True, 2)
    """

    test: dict[str, NDArray[np.float64]]

    @property
    def n_folds(self) -> int:
        """Number of folds."""
        return len(next(iter(self.test.values()))) if self.test else 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FoldScores) or self.test.keys() != other.test.keys():
            return False
        return all(np.array_equal(v, other.test[k], equal_nan=True) for k, v in self.test.items())

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, list[float]]:
        """Plain lists per metric."""
        return {name: [float(v) for v in values] for name, values in self.test.items()}

    @classmethod
    def from_dict(cls, data: dict[str, list[float]]) -> FoldScores:
        """Rebuild from :meth:`to_dict` output."""
        return cls({name: np.asarray(values, dtype=np.float64) for name, values in data.items()})


@dataclass(frozen=True, slots=True, eq=False)
class Predictions:
    """A unit's outputs on its test rows, in the order of the fold's test indices.

    Parameters
    ----------
    arrays : dict of str to ndarray
        One array per method (``"predict"``, ``"predict_proba"``, ...),
        exactly as the fitted estimator returned it; ``"classes_"`` holds
        the estimator's classes when ``predict_proba``, ``predict_log_proba``
        or ``decision_function`` was kept (their columns follow it). A
        sparse output is kept dense, with its format under
        ``SPARSE_PREFIX + method``.

    Examples
    --------
    >>> a = Predictions({"predict": np.array([0, 1])})
    >>> a == Predictions({"predict": np.array([0, 1])}), a.n_rows
    (True, 2)
    """

    arrays: dict[str, NDArray[Any]]

    @property
    def n_rows(self) -> int:
        """Number of test rows."""
        return len(next(iter(self.arrays.values()))) if self.arrays else 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Predictions) or self.arrays.keys() != other.arrays.keys():
            return False
        return all(
            v.dtype == other.arrays[k].dtype
            and np.array_equal(v, other.arrays[k], equal_nan=v.dtype.kind in "fc")
            for k, v in self.arrays.items()
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class Record:
    """Outcome of one unit: scores, timings, status and provenance.

    Parameters
    ----------
    unit : Unit
        What was run.
    status : {"ok", "failed"}
        ``failed`` units carry ``error`` and the ``error_score`` as scores.
    test_scores, train_scores : dict of str to float
        One entry per metric (``train_scores`` empty unless asked for). A
        ``criteria`` record holds the criteria values here (``aic``, ``bic``,
        ``cp``, ``vc``, ``evidence``, ``n_params``, ...); a fast-CV record
        holds its per-fold scores in ``folds`` instead.
    fit_time, score_time : float
        Seconds, measured in the worker.
    n_train, n_test : int
        Rows fitted and scored (for a fast-CV record, the average per fold).
    error : ErrorInfo or None
    warnings : tuple of str
        Category names of warnings raised inside the fit, one per warning.
    worker : str
        ``host:pid`` that ran the unit.
    started, finished : float
        Unix timestamps.
    estimator : object or None
        The fitted estimator of a ``final`` unit; never serialised.
    folds : FoldScores or None
        Per-fold test scores of a fast-CV record; the per-sample losses
        (``"loss"``) of an ``ncv`` record (or an all-data fit of a BBC-CV run)
        on its test rows; the predictions (``"prediction"``) of a ``boot`` record.
    reused_steps : int, default=0
        Leading Pipeline steps this fit unit took already fitted from another
        unit on the same fold (:mod:`parcv.engine.shared_prefix`); its
        ``fit_time`` leaves their fitting out.
    predictions : Predictions or None, default=None
        The outputs on the test rows of a ``fit`` or ``refit`` unit, when the
        run asked for them (``return_predictions``); kept in the store as
        numeric arrays and left out of :meth:`to_dict`.
    first_warnings : dict of str to str, default={}
        The first message of each category of warning raised inside the unit,
        by ``"module:QualName"`` of the category, for the caller to see them
        (:func:`parcv.results.aggregate.report_fit_failures`); never stored.
    score_errors : dict of str to ErrorInfo, default={}
        Scorers that raised on a unit whose fit succeeded (status ``ok``), by
        ``"test:<metric>"`` or ``"train:<metric>"``: as in scikit-learn, only
        that score is ``error_score``; the other metrics keep their values.
    kept : tuple of str, default=()
        A stored record of other code that ``resume="values"`` kept for this
        unit: what differs (``"scikit-learn 1.9.1 → 1.9.2"``); empty when the
        record is of this run's code.
    """

    unit: Unit
    status: str
    test_scores: dict[str, float]
    train_scores: dict[str, float]
    fit_time: float
    score_time: float
    n_train: int
    n_test: int
    error: ErrorInfo | None = None
    warnings: tuple[str, ...] = ()
    worker: str = ""
    started: float = 0.0
    finished: float = 0.0
    estimator: Any = field(default=None, compare=False, repr=False)
    folds: FoldScores | None = field(default=None, repr=False)
    reused_steps: int = 0
    predictions: Predictions | None = field(default=None, repr=False)
    score_errors: dict[str, ErrorInfo] = field(default_factory=dict)
    first_warnings: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    kept: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __reduce__(self) -> tuple[type[Record], tuple[Any, ...]]:
        # Rebuild through __init__ (faster than the default setstate; see Unit).
        return (Record, tuple(getattr(self, f.name) for f in fields(Record)))

    @property
    def key(self) -> Key:
        """The unit's task key."""
        return self.unit.key

    @property
    def ok(self) -> bool:
        """Whether the unit succeeded."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready view (the fitted estimator is left out)."""
        out: dict[str, Any] = {
            "key": list(self.key),
            "kind": self.unit.kind,
            "outer": self.unit.outer,
            "inner": self.unit.inner,
            "candidate": self.unit.candidate,
            "status": self.status,
            "test_scores": dict(self.test_scores),
            "train_scores": dict(self.train_scores),
            "fit_time": self.fit_time,
            "score_time": self.score_time,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "error": None if self.error is None else self.error.to_dict(),
            "warnings": list(self.warnings),
            "worker": self.worker,
            "started": self.started,
            "finished": self.finished,
        }
        if self.folds is not None:
            out["fold_test_scores"] = self.folds.to_dict()
        if self.reused_steps:
            out["reused_steps"] = self.reused_steps
        if self.score_errors:
            out["score_errors"] = {k: e.to_dict() for k, e in self.score_errors.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """Rebuild a record from :meth:`to_dict` output."""
        err = data.get("error")
        return cls(
            unit=Unit(data["kind"], data["outer"], data["inner"], data["candidate"]),
            status=data["status"],
            test_scores={k: float(v) for k, v in data["test_scores"].items()},
            train_scores={k: float(v) for k, v in data["train_scores"].items()},
            fit_time=float(data["fit_time"]),
            score_time=float(data["score_time"]),
            n_train=int(data["n_train"]),
            n_test=int(data["n_test"]),
            error=None if err is None else ErrorInfo(err["type"], err["message"], err["traceback"]),
            warnings=tuple(data.get("warnings", ())),
            worker=data.get("worker", ""),
            started=float(data.get("started", 0.0)),
            finished=float(data.get("finished", 0.0)),
            folds=None
            if data.get("fold_test_scores") is None
            else FoldScores.from_dict(data["fold_test_scores"]),
            reused_steps=int(data.get("reused_steps", 0)),
            score_errors={
                k: ErrorInfo(e["type"], e["message"], e["traceback"])
                for k, e in data.get("score_errors", {}).items()
            },
        )
