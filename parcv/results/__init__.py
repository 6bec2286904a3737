"""The results wing: pure computation over a plan and its records.

It owns score matrices and ``cv_results_`` (``aggregate``), summaries and the
choice of a candidate (``summary``), criteria next to CV (``criteria_table``),
the result objects (``objects``; a search's rounds joined in ``halving``)
assembled from records (``assemble``), significance tests applied to results
(``compare``), candidate labels as people read them (``labels``), a pruned
sampler's trials by how they ended (``trials``) and JSON export (``export``). It
imports no engine, backend, store or command line.
"""
