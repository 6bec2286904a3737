"""The documentation site's sources.

A package only so that pytest imports docs/conftest.py as ``docs.conftest``: a second
module named ``conftest`` would shadow tests/conftest.py, which tests import from.
"""
