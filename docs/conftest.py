"""pytest runs the ``>>>`` examples of the pages (``*.rst``) as doctests.

The gallery's scripts run when the site is built (sphinx-gallery), not here; the Sphinx
configuration, its extensions and the generated pages are not tests either.
"""

from __future__ import annotations

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
