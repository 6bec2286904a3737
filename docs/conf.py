"""Sphinx configuration of parcv's documentation site.

Build it with ``sphinx-build -W docs docs/_build/html`` (``pip install '.[docs]'`` first).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

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
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

exclude_patterns = ["_build", "examples/README.rst"]
html_theme = "pydata_sphinx_theme"
html_title = "parcv"
html_static_path = ["_static"]

autosummary_generate = True
numpydoc_show_class_members = False

# No internet on the build machines: the inventories of the projects we link to are
# kept in the repository (see _intersphinx/).
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
}
