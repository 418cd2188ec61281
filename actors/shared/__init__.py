"""A scheduler's part in a store several schedulers share: the database node.

The node (``node.py``) the scheduler actor drives, its lease loop and lease keeper threads,
the book of leases it holds, the board of outcomes from other nodes, the database's clock and
the pure plan (``plan.py``) and view (``view.py``) of what is leased and what a row says.

Rule: a module here may import ``actors.runtime``, ``actors.core``, ``actors.sync``,
``actors.store``, ``actors.errors``, ``actors.references`` and ``messages``; never the facade
(``actors.api``). Held by ``tests/unit/test_layers.py``.
"""
