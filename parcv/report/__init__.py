"""The report wing: what a person reads after a run.

It owns the text of reports and of the one-screen summary (``text``), the plots and
the Display objects that draw them (``plots``), the self-contained report.html
(``html``) and the files of a run directory (``run_dir``, and :func:`parcv.write_report`
from Python).

The displays draw one plot of the report into a matplotlib Axes, as scikit-learn's
displays do: ``ValidationCurveDisplay.from_result(result, ax=ax)``. They are imported
from here when first used, so ``import parcv`` does not import matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parcv.report.plots import (
        FoldScoresDisplay,
        HalvingRungsDisplay,
        PairedDifferencesDisplay,
        ParamImportanceDisplay,
        ParetoFrontDisplay,
        SamplerTrialsDisplay,
        SelectionFrequencyDisplay,
        ValidationCurveDisplay,
    )

__all__ = [
    "FoldScoresDisplay",
    "HalvingRungsDisplay",
    "PairedDifferencesDisplay",
    "ParamImportanceDisplay",
    "ParetoFrontDisplay",
    "SamplerTrialsDisplay",
    "SelectionFrequencyDisplay",
    "ValidationCurveDisplay",
]


def __getattr__(name: str) -> Any:
    """A display class, imported with matplotlib on first use (PEP 562)."""
    if name in __all__:
        from parcv.report import plots

        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
