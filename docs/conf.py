"""Sphinx configuration of parcv's documentation site.

Build it with ``sphinx-build -W docs docs/_build/html`` (``pip install '.[docs]'`` first).
The gallery's examples run during the build; ``-D plot_gallery=0`` skips them for a quick
look at the other pages.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

# sphinx-gallery looks up every name an example uses; scikit-learn's halving searches
# raise ImportError on that lookup until they are enabled, as an example enables them.
from sklearn.experimental import enable_halving_search_cv  # noqa: E402, F401

import parcv  # noqa: E402

project = "parcv"
author = "the parcv developers"
copyright = "2026, the parcv developers"
release = parcv.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    # MathJax served from the site itself, so its formulas render without internet too.
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "parcv_cli",
    "parcv_autodoc",
]

exclude_patterns = ["_build", "examples/README.rst", "_templates", "sg_execution_times.rst"]
templates_path = ["_templates"]
default_role = "literal"
pygments_style = "sphinx"

# -- HTML: the pydata theme, as scikit-learn, Dask and pandas use -----------------------
html_theme = "pydata_sphinx_theme"
html_title = f"parcv {release}"
html_short_title = "parcv"
html_static_path = ["_static"]
html_css_files = ["parcv.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_start": ["navbar-logo"],
    "navbar_center": ["navbar-nav"],
    "navbar_end": ["theme-switcher"],
    "header_links_before_dropdown": 8,
    "logo": {"text": f"parcv {release}"},
    "secondary_sidebar_items": ["page-toc"],
    "show_prev_next": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    # No external fonts, icons or analytics: the site works offline.
    "icon_links": [],
}
# An empty default makes the theme log "Got invalid theme mode" (console.error) on every page.
html_context = {"default_mode": "auto"}
html_sidebars = {"index": [], "getting_started": [], "glossary": [], "cli": []}

# -- Copy buttons: every code block, copied without its prompts and output ---------------
# As scikit-learn's docs: a ">>> " or "... " block copies only its code lines, prompts
# removed, so a paste runs; a "$ " console block copies its commands. A block without a
# prompt (bash, toml, a plain script) is copied whole.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True
copybutton_remove_prompts = True
copybutton_copy_empty_lines = False

# -- API reference: autosummary pages from the docstrings, read by numpydoc ------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc's Parameters section says the types
autodoc_member_order = "groupwise"
add_module_names = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = True
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray",
    "DataFrame": "pandas.DataFrame",
    "Path": "pathlib.Path",
    "estimator": "sklearn.base.BaseEstimator",
    "Client": "distributed.Client",
}
numpydoc_xref_ignore = {
    "of", "or", "shape", "default", "optional", "array-like", "sparse", "matrix", "int",
    "float", "str", "bool", "dict", "list", "tuple", "callable", "object", "None", "n_samples",
    "n_features", "n_outer_splits", "n_splits", "n_candidates", "n_classes", "n_outputs",
    "n_folds", "n_models", "n_points", "n_scores", "n_train", "n_test",
    "iterable", "sequence", "mapping", "type", "function", "any", "instance", "keyword",
}  # fmt: skip

# -- Links to the projects parcv builds on ----------------------------------------------
# No internet on the build machines: the inventories are generated offline from the
# installed packages by _intersphinx/make_inventories.py and kept in the repository.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", "_intersphinx/python.inv"),
    "numpy": ("https://numpy.org/doc/stable/", "_intersphinx/numpy.inv"),
    "sklearn": ("https://scikit-learn.org/stable/", "_intersphinx/sklearn.inv"),
    "dask": ("https://docs.dask.org/en/stable/", "_intersphinx/dask.inv"),
    "distributed": ("https://distributed.dask.org/en/stable/", "_intersphinx/distributed.inv"),
}

# -- The gallery: examples run at build time, their output and plots kept ---------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "doc_module": ("parcv",),
    "backreferences_dir": "api/generated/backreferences",
    "remove_config_comments": True,
    "within_subsection_order": "gallery_order.GalleryOrder",
    "show_memory": False,
    "min_reported_time": 5,
    # Its page of run times needs jQuery, which Sphinx no longer ships: it would throw
    # "$ is not defined" in the browser. The times are in the build's log.
    "write_computation_times": False,
}

# numpydoc's checks of the docstrings, on top of the build's own warnings (-W makes any
# failure fail the build). PR01 ("parameter not documented") is left out: result and
# record classes, which parcv builds and users only read, document their Attributes
# instead, as scikit-learn's do. Module-level constants carry their text in a ``#:``
# comment, which the check cannot see.
numpydoc_validation_checks = {"GL02", "GL03", "GL08", "PR02", "PR10", "RT03", "SS01"}
numpydoc_validation_exclude = {r"\.TESTS$", r"\.CORRECTIONS$", r"\.__version__$"}
