"""A node of a shared store whose runs go to Celery.

``python -m tests.executors.engine_node DSN SCHEMA NAME QUEUE NAMESPACE``:

Opens a ``Scheduler`` on the PostgreSQL schema with a ``CeleryExecutor`` named ``"celery"``
sending to ``QUEUE`` under ``NAMESPACE`` (``-``: the default, a random one), prints ``ready``,
and runs until its stdin closes; then it shuts down and prints how many runs it found on Celery
(``adopted <n>``). A test kills it with ``SIGKILL`` mid-run to play a node that dies.
"""

from __future__ import annotations

import logging
import sys

from actors import Scheduler
from actors.executors import CeleryExecutor
from actors.store import PostgresStore
from tests.executors.celery_app import app

LEASE = 1.0  # seconds: short, so that the node after a killed one takes its run over soon
POLL = 0.2


def main() -> None:
    dsn, schema, name, queue, namespace = sys.argv[1:]
    logging.basicConfig(level=logging.WARNING, format=f"{name} %(levelname)s %(name)s: %(message)s")
    logging.getLogger("actors.executors").setLevel(logging.INFO)
    executor = CeleryExecutor(app, queue=queue, namespace=None if namespace == "-" else namespace)
    store = PostgresStore(dsn, schema=schema, node=name, lease=LEASE, poll=POLL)
    scheduler = Scheduler(workers=1, store=store, executors={"celery": executor})
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes it
    scheduler.shutdown(timeout=10)
    print(f"adopted {executor.adopted}", flush=True)


if __name__ == "__main__":
    main()
