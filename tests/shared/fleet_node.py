"""One scheduler of a fleet test: ``python -m tests.shared.fleet_node DSN SCHEMA NAME LEASE POLL N MODE``.

Opens a ``Scheduler`` on the shared store, prints ``ready``, and runs until its stdin closes
or it gets ``SIGTERM`` (then it shuts down cleanly: what it has not started goes back to the
store). ``MODE`` is ``fenced`` (the real thing) or ``naive``: outcomes saved without their
fence, the negative control a checker must catch.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from actors import Scheduler
from actors.store import LedgerRow, PostgresStore, TaskUpdate


class NaiveStore(PostgresStore):
    """A store whose outcomes ignore their fence: a node that lost its lease still commits."""

    def save_outcomes(
        self, updates: Sequence[TaskUpdate] = (), runs: Sequence[LedgerRow] = ()
    ) -> frozenset[int]:
        return super().save_outcomes([dataclasses.replace(u, fence=None) for u in updates], runs)


def main() -> None:
    dsn, schema, name, lease, poll, workers, mode = sys.argv[1:]  # N: how many workers
    logging.basicConfig(level=logging.WARNING, format=f"{name} %(levelname)s %(name)s: %(message)s")
    kind = NaiveStore if mode == "naive" else PostgresStore
    # The faults strike nodes at random, not because of a task: a run lost with its node three
    # times in a row by chance must still run once, as the checker expects (the poison-pill limit
    # has tests of its own, tests/shared/test_poison_pill.py).
    store = kind(
        dsn,
        schema=schema,
        node=name,
        lease=float(lease),
        poll=float(poll),
        run_history=1_000_000,
        max_lost_runs=1_000_000,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    scheduler = Scheduler(workers=int(workers), store=store)
    print("ready", flush=True)

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    stop.wait()
    scheduler.shutdown(timeout=10)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
