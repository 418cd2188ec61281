"""The actor shell: the actors and threads that carry out what the pure core decides.

The scheduler actor (``scheduler.py``), the timer thread, the workers (threads and
processes), the event bus, the library's actor base, a run's context, loading and saving
durable tasks (``durable.py``), where durable tasks live as the actor sees it (``home.py``:
the one protocol memory, a plain store and a shared node implement), minting task ids and the
limits every caller is held to.

Rule: a module here may import ``actors.core``, ``actors.sync``, ``actors.process``,
``actors.store``, ``actors.errors``, ``actors.references`` and ``messages``; never the shared
node (``actors.shared``) or the facade (``actors.api``) above it: the shared node reaches the
actor as its ``Home``, by structure. Held by ``tests/unit/test_layers.py``.
"""
