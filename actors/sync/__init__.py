"""Where threads meet: the few objects several threads touch at once, each behind its own lock.

A task's token (``token.py``: a caller's cancel and a worker's start race for it), a handed
run's claim (``claim.py``: the worker's start against the core's take-back), the outbox the
facade and the workers send through (``outbox.py``), every wait the library makes
(``waiting.py``), the registry of the library's threads (``threads.py``) and the clocks
(``clock.py``).

Rule: a module here imports only the standard library, ``actors.errors``, ``actors.references``,
``messages`` and other modules of this folder; never the core, the actors or a store. The pure
core (``actors.core``) may import ``token`` and ``claim`` from here and nothing else: those two
are the state it makes moves on. Held by ``tests/unit/test_layers.py``.
"""
