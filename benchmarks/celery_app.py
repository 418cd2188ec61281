"""The Celery app of the ``executors`` workload (its worker: ``celery -A benchmarks.celery_app worker``)."""

from __future__ import annotations

from celery import Celery

from actors.executors import celery_task

BROKER = "amqp://guest:guest@127.0.0.1:5672//"
BACKEND = "redis://127.0.0.1:6379/6"

app = Celery("bench", broker=BROKER, backend=BACKEND)
app.conf.update(worker_prefetch_multiplier=8, result_expires=600, worker_hijack_root_logger=False)
celery_task(app)
