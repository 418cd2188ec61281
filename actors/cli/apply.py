"""Carry out the reconcile's decisions on a running ``Scheduler``, logging each.

``schedule_job`` turns one ``JobSpec`` into the matching ``Scheduler.schedule_*`` call, with
the job id as the task id and the function passed by reference (so the store keeps it by
name). ``carry_out`` applies a list of ``Decision``s.

Threads: the runner's main thread.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal, TypedDict

from actors.api.facade import Scheduler
from actors.api.handles import TaskHandle
from actors.cli.jobfile import JobSpec
from actors.cli.reconcile import Decision
from actors.core.retry import Retry
from actors.core.task_record import THREADS

__all__ = ["carry_out", "schedule_job"]

logger = logging.getLogger("actors.cli")

_DONE = {"add": "added", "replace": "replaced", "keep": "kept", "ended": "left ended", "cancel": "cancelled"}


def schedule_job(scheduler: Scheduler, spec: JobSpec, if_exists: Literal["error", "replace"]) -> TaskHandle:
    """Schedule ``spec`` under its id (``if_exists="replace"``: give a live task this definition).

    Raises:
        whatever the ``schedule_*`` call raises (``StoreError``, ``SchedulerShutdownError``, ...);
        ``ImportError``, ``TypeError``: ``retry`` names an exception class that does not import.
    """
    fn, args, kwargs, task_id = spec.fn, spec.args, dict(spec.kwargs), spec.job_id
    options = _options(spec)
    grace = spec.misfire_grace
    if spec.every is not None:
        return scheduler.schedule_at_fixed_rate(
            fn, spec.every, spec.initial_delay or 0.0, args=args, kwargs=kwargs, task_id=task_id,
            max_consecutive_failures=spec.max_consecutive_failures, misfire_grace=grace, if_exists=if_exists,
            **options,
        )  # fmt: skip
    if spec.delay is not None:
        return scheduler.schedule_with_fixed_delay(
            fn, spec.delay, spec.initial_delay or 0.0, args=args, kwargs=kwargs, task_id=task_id,
            max_consecutive_failures=spec.max_consecutive_failures, misfire_grace=grace, if_exists=if_exists,
            **options,
        )  # fmt: skip
    if spec.cron is not None:
        return scheduler.schedule_cron(
            fn, spec.cron, spec.tz or "UTC", args=args, kwargs=kwargs, task_id=task_id,
            max_consecutive_failures=spec.max_consecutive_failures, misfire_grace=grace, if_exists=if_exists,
            **options,
        )  # fmt: skip
    assert spec.at is not None
    return scheduler.schedule_once(
        fn, at=spec.at, args=args, kwargs=kwargs, task_id=task_id, misfire_grace=grace, if_exists=if_exists,
        **options,
    )  # fmt: skip


class _Options(TypedDict):
    """The options every ``schedule_*`` call of a job takes alike."""

    executor: str
    durable: bool | None
    timeout: float | None
    retry: Retry | None


def _options(spec: JobSpec) -> _Options:
    retry = None if spec.retry is None else spec.retry.to_retry()
    executor = spec.executor or THREADS
    return _Options(executor=executor, durable=spec.durable, timeout=spec.timeout, retry=retry)


def carry_out(scheduler: Scheduler, decisions: Sequence[Decision]) -> None:
    """Apply each decision to ``scheduler`` in order and log it (``actors.cli``, INFO).

    Raises:
        ValueError: the scheduler refused a job's definition (the message names the job).
        StoreError, SchedulerShutdownError: as scheduling raises them.
        The decisions before the one that raised have been carried out.
    """
    for decision in decisions:
        spec = decision.spec
        if decision.action == "cancel":
            scheduler.cancel(decision.task_id)
        elif decision.action in ("add", "replace"):
            assert spec is not None
            if decision.afresh:
                scheduler.cancel(decision.task_id)  # its counters do not decode: a fresh row, at zero
            try:
                schedule_job(scheduler, spec, "replace")  # "replace" also adds: an id ended or unknown
            except (TypeError, ValueError) as error:
                raise ValueError(f"job {decision.task_id!r}: {error}") from error
        logger.info("job %s: %s (%s)", decision.task_id, _DONE[decision.action], decision.reason)
