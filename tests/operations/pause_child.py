"""A child process for the kill -9 test: schedules a durable task, pauses it, says so, then waits.

``python -m tests.operations.pause_child sqlite PATH`` or ``... postgres SCHEMA``. It prints
``paused`` once ``pause`` returned (the pause committed), and then waits to be killed.
"""

from __future__ import annotations

import sys
from typing import Any

from actors import Scheduler
from actors.store import PostgresStore
from tests.store.pg import DSN


def main() -> None:
    kind, where = sys.argv[1], sys.argv[2]
    store: Any = (
        where if kind == "sqlite" else PostgresStore(DSN, schema=where, node="child", lease=2.0, poll=0.5)
    )
    s = Scheduler(workers=1, store=store)
    s.schedule_at_fixed_rate("tests.operations.tasks:note", 0.3, 0.3, task_id="op")
    assert s.pause("op") is True
    print("paused", flush=True)
    sys.stdin.read()  # until killed (or the parent closes stdin)


if __name__ == "__main__":
    main()
