"""pytest runs the ``>>>`` examples of the pages (``*.rst``) as doctests.

The gallery's scripts run when the site is built (sphinx-gallery), not here; the Sphinx
configuration, its extensions and the generated pages are not tests either.
"""

from __future__ import annotations

# The pages' model key in a folder of its own, never the user's, as the tests'.
from tests.conftest import _own_model_key  # noqa: F401

collect_ignore = ["conf.py"]
collect_ignore_glob = [
    "_build/*",
    "_ext/*",
    "_intersphinx/*",
    "api/*",
    "auto_examples/*",
    "examples/*",
    "sg_execution_times.rst",
]
