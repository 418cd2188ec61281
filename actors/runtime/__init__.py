"""The actor shell: the actors and threads that carry out what the pure core decides.

The scheduler actor (``scheduler.py``), the timer thread, the workers (threads and
processes), the event bus, the library's actor base, a run's context, loading and saving
durable tasks (``durable.py``), minting task ids and the limits every caller is held to.

Rule: a module here may import ``actors.core``, ``actors.sync``, ``actors.process``,
``actors.store``, ``actors.errors``, ``actors.references`` and ``messages``; never the shared
node (``actors.shared``) or the facade (``actors.api``) above it, except the one arrow
``tests/unit/test_layers.py`` lists with the issue-23 step that removes it.
"""
