"""The fast-CV wing: exact held-out predictions of linear smoothers in closed form.

It owns fast leave-one-out and k-fold for linear smoothers (``loo``, the
documented ``parcv.fastloo``), batched held-out predictions of many candidates
(``smoothers``) and vectorised scoring of those predictions (``scoring``). The
decision whether a plan uses it lives in :mod:`parcv.plan.fast_cv`. It imports
no engine, backend, store or command line.
"""
