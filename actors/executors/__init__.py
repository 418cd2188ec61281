"""Executors that run a scheduler's runs on another engine: Celery workers, a Dask cluster, your own.

The scheduler still decides when and whether each run happens and records its outcome; an
executor only carries the run out (``actors/runtime/executor_protocol.py``: the protocol,
``docs/executors.md``: how to use and run each). Register them by name::

    Scheduler(executors={"celery": CeleryExecutor(app), "dask": DaskExecutor("tcp://host:8786")})
    scheduler.schedule_once("mypkg.jobs:report", 5.0, executor="celery")

``CeleryExecutor`` needs the ``[celery]`` extra and, on each Celery worker, one line of setup:
``celery_task(app)``; ``DaskExecutor`` needs the ``[dask]`` extra. Neither engine is imported
until an executor of its kind is made.
"""

from __future__ import annotations

from actors.executors.celery_executor import TASK_NAME, CeleryExecutor, celery_task
from actors.executors.dask_executor import DaskExecutor
from actors.executors.engine_call import call_reference
from actors.runtime.executor_protocol import DEFAULT_MAX_IN_FLIGHT, Done, Executor, Job, Submission, run_key

__all__ = [
    "DEFAULT_MAX_IN_FLIGHT",
    "TASK_NAME",
    "CeleryExecutor",
    "DaskExecutor",
    "Done",
    "Executor",
    "Job",
    "Submission",
    "call_reference",
    "celery_task",
    "run_key",
]
