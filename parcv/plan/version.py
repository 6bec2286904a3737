"""The version of parcv: part of every plan fingerprint, since a run's numbers depend on it."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
