"""What a local pool's worker process sees when it starts, written to a file as JSON.

The target of the processes that tests/engine/test_pool_workers.py starts from the pool's
context; a module of its own, since a worker never imports the driver's script.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np


def report(path: str) -> None:
    Path(path).write_text(
        json.dumps({
            "parent": os.getppid(),
            "environment": os.environ.get("PARCV_PROBE"),
            "draw": np.random.random(),  # noqa: NPY002 (the global one)
            "main_script": getattr(sys.modules["__main__"], "__file__", None),
        })
    )  # fmt: skip
