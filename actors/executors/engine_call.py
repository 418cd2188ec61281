"""What an engine's worker runs for a scheduler's run: import the function by reference, call it.

Runs in the engine's worker process (a Celery worker, a Dask worker), which needs this package
and the function's module importable, and nothing of a scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from actors.references import resolve_stored

if TYPE_CHECKING:  # the engine's worker imports this module and needs nothing of a scheduler
    from actors.runtime.executor_protocol import Job

__all__ = ["call_reference", "engine_key", "job_engine_key"]


def call_reference(reference: str, args: list[Any] | tuple[Any, ...], kwargs: Mapping[str, Any]) -> object:
    """Import the function ``reference`` names (``"package.module:function"``); call it (engine's worker)."""
    return resolve_stored(reference)(*args, **kwargs)


def engine_key(namespace: str, key: str) -> str:
    """The id a run has on an engine: its run key under the executor's namespace."""
    return f"{namespace}:{key}" if namespace else key


def job_engine_key(namespace: str, job: Job, incarnation: str | None) -> str:
    """The id ``job`` has on an engine (a slot's thread).

    A stored run's id is its run key under the namespace: the node that takes the run over
    computes the same one. A memory task's run can never be taken over, and its ids repeat in
    every process (``task-m1``, a job's name): under a fixed namespace it also carries the
    executor's ``incarnation``, so it never meets a result an earlier process left on the engine.
    """
    if job.seq is None and incarnation is not None:
        return engine_key(namespace, f"{job.key}~{incarnation}")
    return engine_key(namespace, job.key)
