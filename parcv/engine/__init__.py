"""The engine wing: running a plan's units and handing records to the store.

It owns running one unit (``work``), the driver that feeds units to a backend
in dependency order (``runner``), speculative refits (``speculate``), one run
of a plan with its store, resume and interrupt (``session``), the progress bar
(``progress``), the backends (``backends``: serial, local, Dask, batch
schedulers) and the run options every entry point shares (``options``:
``RunOptions``). It offers ``execute_plan`` and ``load_run`` to the API, and
``Backend``/``check_backend`` and ``RunOptions`` to the command line.
"""

from parcv.engine import paths as _paths  # noqa: F401 - registers the "path" runner
