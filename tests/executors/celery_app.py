"""The Celery app of the executor tests, for the tests' scheduler side and their ``celery worker``s.

Broker: the machine's RabbitMQ; result backend: its Redis (database ``REDIS_DB``). Each test
uses a queue of its own (``celery worker -Q <queue>``), so parallel tests never share a worker.
"""

from __future__ import annotations

import os

from celery import Celery

from actors.executors import celery_task

BROKER = os.environ.get("ACTORS_TEST_BROKER", "amqp://guest:guest@127.0.0.1:5672//")
REDIS_DB = 5
BACKEND = os.environ.get("ACTORS_TEST_BACKEND", f"redis://127.0.0.1:6379/{REDIS_DB}")

app = Celery("actors-tests", broker=BROKER, backend=BACKEND)
app.conf.update(
    broker_connection_retry_on_startup=False,
    broker_connection_timeout=2.0,
    worker_prefetch_multiplier=1,  # a killed worker's child holds one run, not a prefetched few
    result_expires=600,
    worker_hijack_root_logger=False,
)
celery_task(app)
