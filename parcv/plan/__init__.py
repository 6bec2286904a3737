"""The plan wing: what a run will compute, as plain data; nothing runs here but the
tiny probe fits that find which step of a pipeline refuses the NaN of X (``missing``).

It owns the candidate space (``space``) and its random draws (``draws``: scikit-learn's
``ParameterSampler`` candidates, in one pass where that is exact), the CV schemes
materialised as index arrays (``splits``, ``partition``), scorers and the checks that they can score
the run (``scoring``), the checked data (``data``), the selection rule
(``selection``), units and their records (``records``), a plan's units as a
sequence that builds each unit only when read (``units``), the registry of unit
kinds that says each kind's graph key (``Key``), rows, record, order and failure text
(``kinds``: it reads units, plans and content keys by their shape, so it imports
none of the modules built on it), process-independent reprs (``reprs``), the one
tokenizer and the content keys it makes (``tokens``, ``keys``), what identifies the
code a unit runs (``code``: user code by its code, installed libraries by version),
the fast-CV decision (``fast_cv``), and ``build_plan`` with the plan fingerprint
(``build``), and successive halving's options, rungs, subsampled folds and promotion
rule (``halving``). The other wings take a ``Plan``, ``Unit``, ``Record``,
``Dataset``, ``Candidate``, ``Fold`` or ``Selection`` from here.
"""
