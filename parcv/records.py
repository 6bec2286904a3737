"""Task records: the one thing every backend returns and every store keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Unit", "ErrorInfo", "Record", "Key"]

Key = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Unit:
    """One fit-and-score unit of work.

    Parameters
    ----------
    kind : {"fit", "refit", "final"}
        ``fit``: candidate on an inner split; ``refit``: the selected
        candidate on an outer split; ``final``: the selected candidate on all data.
    outer : int or None
        Outer fold; ``None`` means all data.
    inner : int or None
        Inner fold of a ``fit`` unit.
    candidate : int
        Candidate index (for refits, the one that was selected).
    """

    kind: str
    outer: int | None
    inner: int | None
    candidate: int

    @property
    def key(self) -> Key:
        """Stable task key: ``("fit", o, i, c)``, ``("refit", o)`` or ``("final",)``."""
        if self.kind == "fit":
            return ("fit", self.outer, self.inner, self.candidate)
        if self.kind == "refit":
            return ("refit", self.outer)
        return ("final",)


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What went wrong in a failed unit."""

    type: str
    message: str
    traceback: str


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
        One entry per metric (``train_scores`` empty unless asked for).
    fit_time, score_time : float
        Seconds, measured in the worker.
    n_train, n_test : int
        Rows fitted and scored.
    error : ErrorInfo or None
    warnings : tuple of str
        Category names of warnings raised inside the fit, one per warning.
    worker : str
        ``host:pid`` that ran the unit.
    started, finished : float
        Unix timestamps.
    estimator : object or None
        The fitted estimator of a ``final`` unit; never serialised.
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
        return {
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
            "error": None
            if self.error is None
            else {
                "type": self.error.type,
                "message": self.error.message,
                "traceback": self.error.traceback,
            },
            "warnings": list(self.warnings),
            "worker": self.worker,
            "started": self.started,
            "finished": self.finished,
        }

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
        )
