"""What the pure core answers about its tasks: the ``Timetable``'s read side.

Part of the ``Timetable`` (a mixin: the state is the timetable's, ``actors/core/timetable.py``):
the live tasks and the history by id, snapshots (``TaskInfo``), the next due time, whether it has
settled, and the counts of workers, heap entries and live tasks. Nothing here changes a task,
except that asking for a parked task's record gives it one for good (``record``). The rules of
``actors/core/timetable.py``'s docstring hold here too.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import TYPE_CHECKING

from actors.core.run_log import as_record, entries, last_runs, recent_runs
from actors.core.task_record import TaskRecord
from actors.errors import UnknownTaskError
from messages import RecentRuns, RunRecord, TaskId, TaskInfo, TaskTable

if TYPE_CHECKING:
    from actors.core.dealer import Dealer
    from actors.core.due_heap import DueHeap
    from actors.core.instance_runs import Instances
    from actors.core.parked import ParkedTasks

__all__ = ["Queries"]


class Queries:
    """The read side of the ``Timetable`` (a mixin: the state is the timetable's)."""

    if TYPE_CHECKING:  # the timetable's state and methods this part uses
        _tasks: dict[TaskId, TaskRecord]
        _tasks_view: Mapping[TaskId, TaskRecord]
        _parked: ParkedTasks
        _heap: DueHeap
        _dealer: Dealer
        _history: OrderedDict[TaskId, TaskRecord]
        hold: float | None
        _paused: dict[TaskId, float]

        _instances: dict[TaskId, Instances]

        def _shown(self, info: TaskInfo) -> TaskInfo: ...
        def _with_active_runs(self, info: TaskInfo) -> TaskInfo: ...
        def _unpark(self, task_id: TaskId, *, waiting: bool) -> TaskRecord | None: ...
        def _due_by(self, now: float) -> float: ...

    @property
    def tasks(self) -> Mapping[TaskId, TaskRecord]:
        """The live tasks that have a record, by id (read-only; changed only by the core's thread).

        Parked tasks (``schedule_many``) are live too but not here until they need a record:
        ``has`` and ``record`` count them.
        """
        return self._tasks_view

    def has(self, task_id: TaskId) -> bool:
        """Whether ``task_id`` is a live task (parked or not)."""
        return task_id in self._tasks or task_id in self._parked

    def info(self, task_id: TaskId, *, wall_offset: float | None = None) -> TaskInfo:
        """Return a snapshot of a live task, or the final state of a task in the history.

        Raises:
            UnknownTaskError: no such task, or it left the history.
        """
        info = self.find(task_id, wall_offset=wall_offset)
        if info is None:
            raise UnknownTaskError(f"no task with id {task_id!r}")
        return info

    def record(self, task_id: TaskId, *, finished: bool = False) -> TaskRecord | None:
        """The live task ``task_id``'s record; with ``finished``, a finished one in the history will do.

        A parked task is unparked: it gets its record for good (a handle will share it).
        """
        task = self._tasks.get(task_id)
        if task is None:
            task = self._unpark(task_id, waiting=True)
        if task is None and finished:
            task = self._history.get(task_id)
        return task

    def find(self, task_id: TaskId, *, wall_offset: float | None = None) -> TaskInfo | None:
        """Return what ``info`` returns, or ``None`` instead of raising."""
        task = self._tasks.get(task_id)
        if task is not None:
            info = task.snapshot(running=self._dealer.is_current(task), wall_offset=wall_offset)
            if self._instances:
                info = self._with_active_runs(info)
            return self._shown(info) if self._paused else info
        task = self._parked.peek(task_id)
        if task is not None:
            return task.snapshot(wall_offset=wall_offset)
        task = self._history.get(task_id)
        return task.snapshot(wall_offset=wall_offset) if task is not None else None

    def runs(self, task_id: TaskId, limit: int, *, wall_offset: float) -> list[RunRecord] | None:
        """Return up to ``limit`` of a memory task's last runs, newest first (``actors/core/run_log.py``).

        ``None`` if the task is neither live nor in the history, or is durable (its store's
        run ledger has its runs). A parked task has never run: ``[]``, and it stays parked.
        """
        task = self._tasks.get(task_id) or self._history.get(task_id) or self._parked.peek(task_id)
        if task is None or task.store_seq is not None:
            return None
        due_wall = task.due_wall if task.due_wall is not None else task.due_at + wall_offset
        kept = entries(task.runs, task.due_at, due_wall)
        return [as_record(entry, wall_offset) for entry in last_runs(kept, limit)]

    def infos(
        self, *, wall_offset: float | None = None, offset: int = 0, limit: int | None = None
    ) -> list[TaskInfo]:
        """Return a snapshot of every live task, in scheduling order (parked tasks last, in theirs).

        ``offset`` and ``limit``: only those from the ``offset``-th, at most ``limit`` of them
        (a page of a long list: only its tasks are snapshot).
        """
        held: Iterable[TaskRecord] = self._tasks.values()
        parked: Iterable[TaskRecord] = ()
        if offset or limit is not None:
            stop = None if limit is None else offset + limit
            held = islice(held, offset, stop)
            skip = max(0, offset - len(self._tasks))
            take = None if stop is None else max(0, stop - max(offset, len(self._tasks)))
            if take != 0:
                parked = self._parked.peek_all(skip, None if take is None else skip + take)
        else:
            parked = self._parked.peek_all()
        current = self._dealer.current()  # a few (one per busy worker): test each task against them
        infos = [task.snapshot(running=task in current, wall_offset=wall_offset) for task in held]
        if self._instances:
            infos = [self._with_active_runs(info) for info in infos]
        if self._paused:
            infos = [self._shown(info) for info in infos]
        infos.extend(task.snapshot(wall_offset=wall_offset) for task in parked)
        return infos

    def table(
        self, *, wall_offset: float | None = None, offset: int = 0, limit: int | None = None
    ) -> TaskTable:
        """The status page's table: ``infos`` of that page, how many tasks are live, their recent runs."""
        infos = self.infos(wall_offset=wall_offset, offset=offset, limit=limit)
        recent = self.recent([info.task_id for info in infos])
        return TaskTable(infos=tuple(infos), total=self.live_count, recent=recent)

    def recent(self, task_ids: Iterable[TaskId]) -> tuple[RecentRuns, ...]:
        """How each of ``task_ids`` did in its last runs, from its record (``run_log.recent_runs``).

        Live tasks and those in the history; an unknown id, or a task that has not run, is left
        out. A parked task is only looked at, not unparked.
        """
        rows: list[RecentRuns] = []
        tasks, history = self._tasks, self._history
        for task_id in task_ids:
            task = tasks.get(task_id) or history.get(task_id) or self._parked.peek(task_id)
            if task is not None:
                row = recent_runs(task_id, task.runs, task.due_at, task.last_outcome)
                if row is not None:
                    rows.append(row)
        return tuple(rows)

    def next_due(self) -> float | None:
        """Return the earliest due time of a pending task, or ``None`` if none is pending."""
        return self._heap.next_due()

    def is_settled(self, now: float) -> bool:
        """Whether no worker holds a run and nothing is due at ``now`` (nor held back by ``hold``)."""
        if self.busy:
            return False
        due = self.next_due()
        return due is None or due > self._due_by(now)

    def next_release(self) -> float | None:
        """When the next pending task is released: its due time, or ``None`` (none, or held back)."""
        due = self._heap.next_due()
        hold = self.hold
        return None if due is None or (hold is not None and due > hold) else due

    @property
    def busy(self) -> bool:
        """Whether any worker holds a run (started or not) that it has not reported yet."""
        return self._dealer.busy

    @property
    def running_count(self) -> int:
        """Workers on a run (each is running the first run of its batch, or about to)."""
        return self._dealer.running_count

    def idle_count(self, executor: str) -> int:
        """Idle workers of ``executor``'s pool (``THREADS`` or ``PROCESSES``)."""
        return self._dealer.idle_count(executor)

    @property
    def heap_size(self) -> int:
        """Heap entries, stale ones included (for tests of compaction)."""
        return self._heap.size

    @property
    def waiting_in_heap(self) -> int:
        """Tasks waiting in the heap for their due time (its live entries)."""
        return len(self._heap)

    @property
    def live_count(self) -> int:
        """Tasks that are not yet terminal."""
        return len(self._tasks) + len(self._parked)
