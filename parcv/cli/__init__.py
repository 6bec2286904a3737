"""The command-line wing: ``parcv run | inspect | report | init | demo``.

It owns the argument parser and dispatch (``main``), spec files and their
errors (``spec``), building objects from a spec (``build``), the spec's data
sources (``data_sources``), the run's backend from spec and flags
(``backend``), TLS options (``tls``), running a sweep into a run directory
(``sweep``), ``parcv inspect`` (``inspect``), the starter spec of ``parcv init``
(``starter``) and the demo (``demo``).
"""

from __future__ import annotations

from parcv.cli.main import main

__all__ = ["main"]
