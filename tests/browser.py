"""Headless Chromium for the tests that open a page as a user would (report.html, the docs)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0"]


def dump_dom(url: str) -> subprocess.CompletedProcess[str]:
    """The DOM after the page's scripts ran (stdout); Chromium's log and console (stderr)."""
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=120
    )


def screenshot(url: str, shot: Path, size: str) -> subprocess.CompletedProcess[str]:
    """Write a PNG of the page at a window of ``size`` ("width,height") to ``shot``."""
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--screenshot={shot}", f"--window-size={size}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )


def console_problems(stderr: str) -> list[str]:
    """Console lines of a page that are not the docs theme's own informational logs.

    Chromium logs every console message, whatever its level, as ``INFO:CONSOLE``; the
    pydata theme logs a few ``[PST]: ...`` notes (e.g. "Changed to auto mode"), which are
    not errors. Anything else, and any ``Uncaught`` exception, is a problem.
    """
    problems = []
    for line in stderr.splitlines():
        if "Uncaught" in line:
            problems.append(line)
        elif "CONSOLE" in line:
            message = re.search(r'CONSOLE[^\]]*\] "(.*)", source:', line)
            text = message.group(1) if message else line
            if not text.startswith("[PST]") or re.search(r"error|fail", text, re.IGNORECASE):
                problems.append(line)
    return problems
