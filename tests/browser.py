"""Headless Chromium for the tests that open a page as a user would (report.html, the docs)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0"]


@dataclass(frozen=True)
class Opened:
    """A page as one Chromium launch left it."""

    dom: str  # the DOM after the page's scripts ran
    stderr: str  # Chromium's log, with the page's console
    returncode: int
    probe: object = None  # the JSON value the probe returned, if one was given


def open_page(
    page: Path,
    *,
    shot: Path | None = None,
    width: int = 1300,
    height: int = 1800,
    probe: str | None = None,
) -> Opened:
    """Open ``page`` once: its DOM, a screenshot (``shot``) and a probe's value, together.

    ``probe`` is the body of a JavaScript function, run a second after the page loaded
    (its own scripts, e.g. the copy buttons, are done by then); it runs in a copy of the
    page beside it, and its JSON value is read back from the dumped DOM. One launch of
    Chromium costs seconds of CPU: each page a test looks at is opened once.
    """
    assert CHROMIUM is not None
    target = page
    if probe is not None:
        target = page.with_name(f"_probe_{page.name}")
        script = (
            "<script>window.addEventListener('load', () => setTimeout(() => {"
            "const out = document.createElement('pre'); out.id = 'probe-result';"
            f"out.hidden = true; out.textContent = JSON.stringify((() => {{ {probe} }})());"
            "document.body.appendChild(out); }, 1000));</script>"
        )
        target.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"))
    command = [CHROMIUM, *FLAGS, f"--window-size={width},{height}", "--virtual-time-budget=10000"]
    if shot is not None:
        command.append(f"--screenshot={shot}")
    try:
        done = subprocess.run(
            [*command, "--dump-dom", target.as_uri()],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        if target != page:
            target.unlink()
    value = None
    if probe is not None:
        found = re.search(r'<pre id="probe-result"[^>]*>(.*?)</pre>', done.stdout, re.S)
        assert found is not None, (page, done.stderr[-2000:])
        value = json.loads(html.unescape(found.group(1)))
    return Opened(done.stdout, done.stderr, done.returncode, value)


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
