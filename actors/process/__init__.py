"""Worker processes: a child interpreter per slot, and the frames parent and child exchange.

``slot.py`` owns one child for one owning thread, ``child.py`` is the child's side (started
by name, as ``actors.process.child``, in a fresh interpreter) and ``wire.py`` the frames.

Rule: a module here imports only the standard library, ``actors.errors``,
``actors.references`` and other modules of this folder: the child imports as little of the
library as it can. Held by ``tests/unit/test_layers.py``.
"""
