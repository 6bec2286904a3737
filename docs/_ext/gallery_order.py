"""The order of the gallery's examples: from what CV estimates to how a sweep is run."""

from __future__ import annotations

ORDER = [
    "plot_nested_vs_non_nested.py",
    "plot_corrected_t_test.py",
    "plot_polynomial_criteria.py",
    "plot_bias_variance.py",
    "plot_interval_coverage.py",
    "plot_racing.py",
    "plot_successive_halving.py",
    "plot_iteration_paths.py",
    "plot_tpe_hyperband.py",
    "plot_pareto_front.py",
    "plot_shared_prefixes.py",
    "plot_resume_store.py",
    "plot_own_table.py",
]


class GalleryOrder:
    """Sort key of sphinx-gallery's ``within_subsection_order``: ``ORDER``, then by name."""

    def __init__(self, src_dir: str) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        rank = ORDER.index(filename) if filename in ORDER else len(ORDER)
        return rank, filename
