"""pytest runs the ``>>>`` examples of the pages (``*.rst``) as doctests.

The gallery's scripts run when the site is built (sphinx-gallery), not here; the Sphinx
configuration, its extensions and the generated pages are not tests either.
"""

from __future__ import annotations

import os

import pytest

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


@pytest.fixture(autouse=True, scope="session")
def _own_model_key(tmp_path_factory):
    """The pages' model key in a folder of its own, never the user's (parcv.store.trust).

    Set before any test runs; every process a test starts (a CLI run) inherits it.
    """
    previous = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield
    if previous is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = previous
