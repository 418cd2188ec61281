"""How a task reaches the scheduler: its definition checked, its record built, handed over.

``Submitting._schedule`` is what every ``schedule_*`` and ``tell_*`` method ends in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from actors.api.handles import TaskHandle
from actors.api.plumbing import OUTBOX_BACKLOG, Plumbing
from actors.api.validation import (
    TaskOptions,
    check_task,
    check_task_id,
    process_target,
    resolve_task_function,
)
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
from actors.errors import (
    DuplicateTaskError,
    SchedulerShutdownError,
)
from actors.references import check_json_arguments, reference_of
from actors.runtime.durable import definition, json_arguments
from messages import (
    AddTask,
    TaskId,
)
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
        durable = options.check(self._processes, self._store is not None, message_task=message_task)
        coroutine = makes_coroutine(target)
        name = options.name or default_name(target)
        plain = not durable and not coroutine and trigger is None and due_wall is None and not after
        if plain and options.plain:
            return self._submit(TaskRecord("", target, args, checked, due_at, name), task_id)
        runs: Callable[..., object] = target
        if options.executor == PROCESSES:
            runs = process_target(fn, args, checked)
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
        return self._submit(task, task_id, row, options.if_exists)

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
            coroutine=coroutine,
            after=after,
            delay=delay if after else 0.0,
        )
        return spec.or_plain()

    def _submit(
        self,
        task: TaskRecord,
        task_id: TaskId | None,
        row: tuple[str, str, str] | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Hand a new task to the scheduler (a durable one committed to the store first)."""
        if row is not None and self._shared_tasks is not None:  # a shared store: it goes there only
            return self._shared_tasks.submit(self, task, task_id, row, if_exists)
        if task_id is None:  # a minted id cannot clash: no need to wait for a reply
            with self._lock:  # held across the commit, so that nothing is committed after shutdown
                if self._closed:
                    raise SchedulerShutdownError("scheduler is shut down")
                task.task_id = self._mint() if row is not None else self._mint.memory()  # memory: no store
                if row is not None:
                    assert self._store is not None
                    stored, _ = self._store.add(definition(task, *row, wall_offset=self._wall_offset()))
                    task.store_seq = stored.seq
                self._put(task)
            if self._outbox.backlog > OUTBOX_BACKLOG:  # tested here: the common case costs no call
                self._make_room(OUTBOX_BACKLOG)
            return TaskHandle(task, self)
        task.task_id = check_task_id(task_id)
        plan = None if row is None else definition(task, *row, wall_offset=self._wall_offset())
        with self._lock:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            reply = self._ask(AddTask(task, if_exists, plan))
        live = self._get(reply)
        if isinstance(live, BaseException):
            raise live
        if live is None:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            raise DuplicateTaskError(f"a live task already has id {task_id!r}")
        return TaskHandle(live, self)
