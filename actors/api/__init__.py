"""The public face: the ``Scheduler`` facade and what it hands out or checks.

The facade (``facade.py``, with the parts it inherits its methods from: ``scheduling.py``,
``messaging.py``, ``queries.py``, ``observing.py``, over ``submitting.py`` and ``plumbing.py``),
the directory its task calls go through (``directory.py``: ``LocalTasks`` in ``local_tasks.py``,
``SharedTasks`` in ``shared_tasks.py`` for a shared store), task handles, stepping a scheduler on
a fake clock, mailboxes, the checks of what callers pass (``validation.py``), keyed actor timers
and the handles of tasks in a shared store. Users import all of it from ``actors``, never from here.

Rule: a module here may import every layer below it (``actors.shared``, ``actors.runtime``,
``actors.process``, ``actors.store``, ``actors.core``, ``actors.sync``, ``actors.errors``,
``actors.references``, ``messages``); nothing below imports it. Held by
``tests/unit/test_layers.py``.
"""
