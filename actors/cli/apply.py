"""Carry out the reconcile's decisions on a running ``Scheduler``, logging each.

``schedule_job`` turns one ``JobSpec`` into the matching ``Scheduler.schedule_*`` call, with
the job id as the task id and the function passed by reference (so the store keeps it by
name). ``carry_out`` applies a list of ``Decision``s.

Threads: the runner's main thread.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, TypedDict

from actors.api.facade import Scheduler
from actors.api.handles import TaskHandle
from actors.cli.jobfile import JobSpec
from actors.cli.reconcile import Decision
from actors.core.retry import Retry
from actors.core.task_record import THREADS

__all__ = ["carry_out", "schedule_job"]

logger = logging.getLogger("actors.cli")

START_GUARD: Final = 2.0
"""Seconds a job that starts paused (``paused = true``) is kept from being due, so its pause lands first.

The scheduler starts a run due at once as it adds the task, before the pause that follows can
reach it. So the first run of such a job is put at least this far off: a fixed-rate job's by
whole intervals (its grid is the same: the slots skipped fall while it is paused anyway), a
fixed-delay job's to this (it counts its delay from the resume), a one-time job's time to
this if it is sooner (a cron's next time is its own)."""

_DONE = {"add": "added", "replace": "replaced", "keep": "kept", "ended": "left ended", "cancel": "cancelled"}


def schedule_job(
    scheduler: Scheduler, spec: JobSpec, if_exists: Literal["error", "replace"], *, paused: bool = False
) -> TaskHandle:
    """Schedule ``spec`` under its id (``if_exists="replace"``: give a live task this definition).

    ``paused``: the caller pauses the task right after; nothing of it is due before
    ``START_GUARD`` seconds.

    Raises:
        whatever the ``schedule_*`` call raises (``StoreError``, ``SchedulerShutdownError``, ...);
        ``ImportError``, ``TypeError``: ``retry`` names an exception class that does not import.
    """
    fn, args, kwargs, task_id = spec.fn, spec.args, dict(spec.kwargs), spec.job_id
    options = _options(spec)
    grace = spec.misfire_grace
    initial_delay = spec.initial_delay or 0.0
    if spec.every is not None:
        if paused and initial_delay < START_GUARD:  # the same grid, its first slots left out
            initial_delay += math.ceil((START_GUARD - initial_delay) / spec.every) * spec.every
        return scheduler.schedule_at_fixed_rate(
            fn, spec.every, initial_delay, args=args, kwargs=kwargs, task_id=task_id,
            max_consecutive_failures=spec.max_consecutive_failures, misfire_grace=grace, if_exists=if_exists,
            **options,
        )  # fmt: skip
    if spec.delay is not None:
        initial_delay = max(initial_delay, START_GUARD) if paused else initial_delay
        return scheduler.schedule_with_fixed_delay(
            fn, spec.delay, initial_delay, args=args, kwargs=kwargs, task_id=task_id,
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
    at = spec.at
    if paused:
        at = max(at, datetime.now(UTC) + timedelta(seconds=START_GUARD))
    return scheduler.schedule_once(
        fn, at=at, args=args, kwargs=kwargs, task_id=task_id, misfire_grace=grace, if_exists=if_exists,
        **options,
    )  # fmt: skip


class _Options(TypedDict):
    """The options every ``schedule_*`` call of a job takes alike."""

    executor: str
    durable: bool | None
    timeout: float | None
    retry: Retry | None
    overlap: str
    max_instances: int | None
    catch_up: str
    max_catch_up: int
    jitter: float
    keep_result: bool


def _options(spec: JobSpec) -> _Options:
    retry = None if spec.retry is None else spec.retry.to_retry()
    executor = spec.executor or THREADS
    return _Options(
        executor=executor,
        durable=spec.durable,
        timeout=spec.timeout,
        retry=retry,
        overlap=spec.overlap or "skip",
        max_instances=spec.max_instances,
        catch_up=spec.catch_up or "latest",
        max_catch_up=spec.max_catch_up or 100,
        jitter=spec.jitter or 0.0,
        keep_result=bool(spec.keep_result),
    )


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
            try:  # "replace" also adds: an id ended or unknown
                schedule_job(scheduler, spec, "replace", paused=spec.paused is True)
            except (TypeError, ValueError) as error:
                raise ValueError(f"job {decision.task_id!r}: {error}") from error
        logger.info("job %s: %s (%s)", decision.task_id, _DONE[decision.action], decision.reason)
        if spec is not None and decision.action != "ended":
            _follow_pause(scheduler, spec)


def _follow_pause(scheduler: Scheduler, spec: JobSpec) -> None:
    """Pause or resume the job as its ``paused`` key says; without the key, leave it as it is."""
    if spec.paused is True and scheduler.pause(spec.job_id):
        logger.info("job %s: paused (the job file says paused = true)", spec.job_id)
    elif spec.paused is False and scheduler.resume(spec.job_id):
        logger.info("job %s: resumed (the job file says paused = false)", spec.job_id)
