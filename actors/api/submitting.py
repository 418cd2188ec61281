"""How a task reaches the scheduler: its definition checked, its record built, handed over.

``Submitting._schedule`` is what every ``schedule_*`` and ``tell_*`` method ends in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from actors.api.executor_checks import executor_target
from actors.api.handles import TaskHandle
from actors.api.plumbing import Plumbing
from actors.api.validation import TaskOptions, check_task, process_target, resolve_task_function
from actors.core.policies import ALLOW_ON_FIXED_DELAY
from actors.core.task_record import (
    INLINE,
    PROCESSES,
    THREADS,
    Recurrence,
    TaskRecord,
    TaskSpec,
    default_name,
    makes_coroutine,
)
from actors.references import check_json_arguments, reference_of
from actors.runtime.durable import json_arguments
from messages import FixedDelay, TaskId
from messages.commands import as_args


class Submitting(Plumbing):
    """Checks a task's definition, builds its record and hands it over (the caller's thread)."""

    def _schedule(
        self,
        fn: Callable[..., object] | str,
        args: Sequence[Any],
        kwargs: Mapping[str, Any] | None,
        due_at: float,
        trigger: Recurrence | None,
        task_id: TaskId | None,
        options: TaskOptions,
        due_wall: float | None = None,
        after: tuple[TaskRecord, ...] = (),
    ) -> TaskHandle:
        """Check a task's definition, build its record, hand it to the scheduler; return its handle.

        ``due_wall``: the first run's wall-clock instant, for a wall-clock task (which it makes one).
        ``after``: the tasks it waits for (``schedule_after``); ``due_at`` is then its delay.
        """
        if due_at >= self._far_at and not after:
            self._check_due_time(due_at)
        target = resolve_task_function(fn) if isinstance(fn, str) else fn
        args = as_args(args)  # a list is what people write (and what JSON gives back)
        checked = check_task(target, args, kwargs)
        message_task = options.executor == INLINE
        recurring = trigger is not None
        durable = options.check(
            self._processes,
            self._store is not None,
            message_task=message_task,
            recurring=recurring,
            runs_elsewhere=not self._directory.runs_stored_tasks,
            executors=self._executors,
        )
        coroutine = makes_coroutine(target)
        name = options.name or default_name(target)
        plain = not durable and not coroutine and trigger is None and due_wall is None and not after
        if plain and options.plain:
            return self._directory.submit(TaskRecord("", target, args, checked, due_at, name), task_id)
        runs: Callable[..., object] = target
        if options.executor == PROCESSES:
            runs = process_target(fn, args, checked)
        elif options.executor in self._executors:
            runs = executor_target(self._executors[options.executor], fn, target, args, checked)
        row: tuple[str, str, str] | None = None
        if durable:
            fn_ref = fn if isinstance(fn, str) else reference_of(fn)
            check_json_arguments(args, checked)
            args_json, kwargs_json, args, checked = json_arguments(args, checked)
            row = (fn_ref, args_json, kwargs_json)
        if coroutine and options.executor != THREADS:
            raise TypeError(
                f"{target!r} is async def: it runs on a worker thread's event loop, not {options.executor!r}"
            )
        on_wall = due_wall is not None
        spec = self._spec(options, coroutine, trigger, on_wall=on_wall, after=after, delay=due_at)
        task = TaskRecord("", runs, args, checked, due_at, name, spec)
        if due_wall is not None:
            task.due_wall = due_wall
        elif durable:
            task.due_wall = due_at + self._wall_offset()
        return self._directory.submit(task, task_id, row, options.if_exists)

    @staticmethod
    def _spec(
        options: TaskOptions,
        coroutine: bool,
        trigger: Recurrence | None = None,
        *,
        on_wall: bool = False,
        after: tuple[TaskRecord, ...] = (),
        delay: float = 0.0,
    ) -> TaskSpec:
        """The spec a task's checked ``options`` and its trigger make: ``PLAIN`` if it asks for nothing more.

        ``delay``: a ``schedule_after`` task's wait after its dependencies (ignored without ``after``).
        """
        spec = TaskSpec(
            trigger,
            options.failure_limit,
            options.executor,
            options.misfire_grace,
            on_wall=on_wall,
            timeout=options.timeout,
            retry=options.retry,
            keep_result=options.keep_result,
            coroutine=coroutine,
            after=after,
            delay=delay if after else 0.0,
            policies=options.policies(recurring=trigger is not None),
        )
        if spec.policies.allows and isinstance(trigger, FixedDelay):
            raise ValueError(ALLOW_ON_FIXED_DELAY)
        return spec.or_plain()
