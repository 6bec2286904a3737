"""The report wing: what a person reads after a run.

It owns the text of reports and of the one-screen summary (``text``), the PNG
plots (``plots``), the self-contained report.html (``html``) and the files of a run
directory (``run_dir``).
"""
