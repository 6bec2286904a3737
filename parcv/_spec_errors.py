"""Errors of spec files: the key, the bad value, what is allowed, and the line."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from parcv.errors import ParcvError

__all__ = [
    "MISSING",
    "SpecError",
    "UsageError",
    "check_choice",
    "check_int",
    "check_keys",
    "check_strings",
    "check_type",
    "close_match",
    "find_line",
]

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


class SpecError(ParcvError, ValueError):
    """A spec key holds a value that is not allowed.

    Parameters
    ----------
    key : str
        Dotted key, e.g. ``"cv.outer.n_splits"`` or ``"space[1].model__C"``.
    value : object
        The value found (``MISSING`` when a required key is absent).
    allowed : str
        What is allowed instead, in words.
    hint : str, default=""
        How to fix it.
    line : int, default=None
        1-based line of the key in the file, when it can be found.
    source : str, default="spec"
        File name shown in the message.

    Examples
    --------
    >>> print(SpecError("run.n_jobs", 0, "an int >= 1 or -1", line=3, source="a.toml"))
    a.toml:3: run.n_jobs = 0 is not valid; allowed: an int >= 1 or -1.
    """

    def __init__(
        self,
        key: str,
        value: Any,
        allowed: str,
        *,
        hint: str = "",
        line: int | None = None,
        source: str = "spec",
    ) -> None:
        self.key, self.value, self.allowed, self.hint = key, value, allowed, hint
        self.line, self.source = line, source
        where = f"{source}:{line}: " if line is not None else f"{source}: "
        if value is MISSING:
            what = f"{key} is missing; expected {allowed}."
        else:
            what = f"{key} = {value!r} is not valid; allowed: {allowed}."
        super().__init__(where + what + (f" {hint}" if hint else ""))

    def located(self, source: str, text: str | None) -> SpecError:
        """Return the same error with the file name and, if found, the line number."""
        line = self.line if self.line is not None or text is None else find_line(text, self.key)
        return SpecError(
            self.key, self.value, self.allowed, hint=self.hint, line=line, source=source
        )


class UsageError(ParcvError, ValueError):
    """The sweep cannot start as asked: bad option combination, data or missing module."""


def close_match(word: str, options: tuple[str, ...] | list[str]) -> str:
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"Did you mean {match[0]!r}?" if match else ""


def check_keys(table: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    """Raise a :class:`SpecError` for the first key of ``table`` not in ``allowed``."""
    for key, value in table.items():
        if key not in allowed:
            name = f"{where}.{key}" if where else key
            raise SpecError(
                name, value, f"the keys {list(allowed)}", hint=close_match(key, allowed)
            )


def check_type(value: Any, types: tuple[type, ...], key: str, allowed: str) -> Any:
    """Return ``value`` if it has one of ``types`` (bool is never an int); else raise."""
    if isinstance(value, bool) and bool not in types:
        raise SpecError(key, value, allowed)
    if not isinstance(value, types):
        raise SpecError(key, value, allowed)
    return value


_HEADER = re.compile(r"^\s*\[(\[)?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")


def _parts(key: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for part in key.split("."):
        m = re.fullmatch(r"(.*?)\[(\d+)\]", part)
        out.append((m.group(1), int(m.group(2))) if m else (part, None))
    return out


def find_line(text: str, key: str) -> int | None:
    """Return the 1-based line where a dotted key is set, or None if not found.

    Examples
    --------
    >>> find_line('[run]\\nseed = 1\\n[cv]\\nouter = { kind = "x" }\\n', "cv.outer.kind")
    4
    """
    lines = text.splitlines()
    parts = [p for p in _parts(key) if p[0]]
    headers = [(i, m.group(2)) for i, ln in enumerate(lines) if (m := _HEADER.match(ln))]
    start, end, used = 0, headers[0][0] if headers else len(lines), 0
    found: int | None = None
    for n in range(len(parts), 0, -1):
        name = ".".join(p[0] for p in parts[:n])
        hits = [i for i, h in headers if h == name]
        nth = parts[n - 1][1] or 0
        if len(hits) > nth:
            start = found = hits[nth]
            later = [i for i, _ in headers if i > start]
            end, used = (later[0] if later else len(lines)), n
            break
    skip = 0
    for name, index in parts[used:]:
        pattern = re.compile(rf"(^|[\s{{,]){re.escape(name)}\s*=|\"{re.escape(name)}\"\s*=")
        hits = [i for i in range(start, end) if pattern.search(lines[i])]
        if len(hits) <= skip:
            break
        start = found = hits[skip]
        skip = index or 0
    return None if found is None else found + 1


def check_choice(table: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...]) -> None:
    """``table[key]``, when present, must be one of ``choices``."""
    if key in table and table[key] not in choices:
        raise SpecError(
            f"{where}.{key}",
            table[key],
            f"one of {list(choices)}",
            hint=close_match(str(table[key]), choices),
        )


def check_int(
    table: Mapping[str, Any], key: str, where: str, low: int, high: int | None = None
) -> None:
    """``table[key]``, when present, must be an int from ``low`` to ``high``.

    ``n_jobs`` may also be -1 (every core) or -2 (all but one), as on the command line.
    """
    if key in table:
        allowed = f"an int >= {low}" if high is None else f"an int from {low} to {high}"
        extra = key == "n_jobs"
        allowed += ", -1 for every core or -2 for all but one" if extra else ""
        value = check_type(table[key], (int,), f"{where}.{key}", allowed)
        outside = value < low or (high is not None and value > high)
        if outside and not (extra and value in (-1, -2)):
            raise SpecError(f"{where}.{key}", value, allowed)


def check_strings(table: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    """Each of ``keys`` present in ``table`` must be a string."""
    for key in keys:
        if key in table:
            check_type(table[key], (str,), f"{where}.{key}", "a string")
