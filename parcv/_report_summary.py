"""The one-screen text summary printed after a run (the report is :mod:`parcv._report_text`)."""

from __future__ import annotations

from parcv._report_text import RunInfo, num, search_of, small
from parcv.criteria_table import method_title
from parcv.results import CVResult, NestedResult, SearchResult

__all__ = ["render_summary"]


def render_summary(result: CVResult | SearchResult | NestedResult, info: RunInfo) -> str:
    """One screen of text: the estimate, the selection, stability and failures."""
    lines = [f"{info.title}: {info.mode or 'run'}, {result.failures.text}"]
    if isinstance(result, NestedResult):
        est = result.estimate[result.refit_metric]
        over = f"mean ± se over {est.n} outer folds" if est.n > 1 else "one test split"
        lines.append(
            f"estimate ({result.refit_metric}): {num(est.mean)} ± {small(est.se)} ({over})"
        )
        lines += [
            f"  selected in {r.count}/{est.n} outer folds: {r.label}" for r in result.stability[:5]
        ]
    elif isinstance(result, CVResult):
        lines += [
            f"{m}: {num(s.mean)} ± {small(s.se)} (mean ± se over {s.n} folds)"
            for m, s in result.summaries.items()
        ]
    search = search_of(result)
    if search is not None:
        s = search.summaries[search.refit_metric][search.best_index_]
        lines.append(
            f"model to ship: {search.candidates[search.best_index_].label} "
            f"(CV {search.refit_metric} {num(s.mean)} ± {small(s.se)})"
        )
        if search.criteria_table is not None:
            selected = search.criteria_table.selected
            lines.append("selected by " + "; ".join(
                f"{method_title(m)}: {search.criteria_table.label_of(m)}" for m in selected
            ))  # fmt: skip
        table = search.comparison_table()
        if table["rows"]:
            rows = table["rows"]["comparisons"]
            tested = [r for r in rows if r["p_value"] is not None] or rows
            first = min(tested, key=lambda r: abs(r["mean_difference"]))
            holm = first["p_holm"]
            lines.append(
                f"best vs closest ({first['name_b']}): diff "
                f"{num(first['mean_difference'])}, p (Holm) "
                f"{'-' if holm is None else f'{holm:.3g}'}"
            )
    return "\n".join(lines)
