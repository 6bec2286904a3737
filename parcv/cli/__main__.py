"""``python -m parcv.cli``: the ``parcv`` command."""

from __future__ import annotations

import sys

from parcv.cli.main import main

sys.exit(main())
