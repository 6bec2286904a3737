"""The store wing: the durable SQLite record store, one file per run.

It owns the ``Store`` that commits each record as it arrives, the readers of a
store (meta, records, folds) that never unpickle, and the checks of a store's
arguments with the messages of its refusals. Only the engine's session writes a
store; the API and the report read one. Its rooms, each importing only those
below it:

- ``opening``: open a store for a run (refuse, keep or wipe the file, describe the plan);
- ``writer``: the open ``Store`` a run adds its records to, and ``prune_store``;
- ``readers``: the read-only ``read_*`` functions;
- ``columnar``: a plan's records read as columns (a ``RecordTable``);
- ``rows``: a record as a row of the tables, and a row read back as a record;
- ``messages``: what a store says: plan mismatches, kept units, its errors;
- ``chunks``: a chunk of plain records as one row, and the stored records found by key;
- ``schema``: the tables, the schema versions and older schemas, connections;
- ``checks``: the checks of a store's path and journal mode;
- ``arrays`` (arrays as plain bytes) and ``lock`` (the one-writer lock).
"""
