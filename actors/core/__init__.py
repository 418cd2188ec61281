"""The pure core: every decision about when and whether a task runs, and nothing else.

The ``Timetable`` (``timetable.py``, with its parts ``run_endings.py``, ``stopping.py`` and
``queries.py``) with what it is made of: the due heap, the dealer, parked tasks, dependencies,
wall-clock tasks, a task's record and the table of its states, the effects it hands back, and
the arithmetic of recurrence, cron, time zones and retries. ``timetable.py``'s docstring gives
the rules in full.

Rule: nothing here does I/O, starts a thread, reads a clock (time comes in as ``now``) or
knows an actor. A module here imports only the standard library (never ``threading``,
``time``, ``asyncio``, ``concurrent``, ``pykka``, ``sqlite3`` or ``psycopg``), ``cronsim``,
``messages``, ``actors.errors``, ``actors.references``, other modules of this folder, and
from ``actors.sync`` only ``token`` and ``claim``: the shared state it makes moves on, never
reads. Held by ``tests/unit/test_layers.py``, transitively.
"""
