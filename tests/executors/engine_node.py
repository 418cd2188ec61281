"""A node of a shared store whose runs go to Celery or Dask.

``python -m tests.executors.engine_node DSN SCHEMA NAME ENGINE TARGET NAMESPACE``:

Opens a ``Scheduler`` on the PostgreSQL schema with an executor named ``ENGINE``: ``celery``
(a ``CeleryExecutor`` sending to the queue ``TARGET``) or ``dask`` (a ``DaskExecutor`` on the
scheduler at the address ``TARGET``), under ``NAMESPACE`` (``-``: the default, a random one);
prints ``ready``, and runs until its stdin closes; then it shuts down and prints how many runs
it found on Celery (``adopted <n>``). A test kills it with ``SIGKILL`` mid-run to play a node
that dies.
"""

from __future__ import annotations

import logging
import sys

from actors import Executor, Scheduler
from actors.executors import CeleryExecutor, DaskExecutor
from actors.store import PostgresStore
from tests.executors.celery_app import app

LEASE = 2.0  # seconds: short, so that the node after a killed one takes its run over soon
POLL = 0.2


def main() -> None:
    dsn, schema, name, engine, target, namespace = sys.argv[1:]
    logging.basicConfig(level=logging.WARNING, format=f"{name} %(levelname)s %(name)s: %(message)s")
    logging.getLogger("actors.executors").setLevel(logging.INFO)
    fixed = None if namespace == "-" else namespace
    executor: Executor = (
        CeleryExecutor(app, queue=target, namespace=fixed)
        if engine == "celery"
        else DaskExecutor(target, namespace=fixed)
    )
    store = PostgresStore(dsn, schema=schema, node=name, lease=LEASE, poll=POLL)
    scheduler = Scheduler(workers=1, store=store, executors={engine: executor})
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes it
    scheduler.shutdown(timeout=10)
    print(f"adopted {getattr(executor, 'adopted', '-')}", flush=True)


if __name__ == "__main__":
    main()
