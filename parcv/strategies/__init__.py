"""The strategies wing: strategies that decide which units a search runs, round after round.

It owns the strategies. A strategy (``strategy``) is the one seam every search
goes through: grid and random search are one round; successive halving, Hyperband, early stopping on
iteration paths and Optuna's samplers propose their rounds from the finished
rounds before them. Strategies are pure: they read scores and a seed and
return data (the next :class:`~parcv.strategies.strategy.Round`, a decision that
is stored with the run); the engine's driver runs their units. Nothing here
imports the engine, a backend, the store or the results.
"""
