"""The store wing: the durable SQLite record store, one file per run.

It owns the ``Store`` that commits each record as it arrives, the readers of a
store (meta, records, folds) that never unpickle, and the checks of a store's
arguments with the messages of its refusals (``sqlite``). Only the engine's
session writes a store; the API and the report read one.
"""
