"""Who waits for whom (``schedule_after``): the dependency graph, part of the pure core.

The timetable tells it of each waiting task as it arrives (``wait``) and of every task's end
(``ended``); it answers with decisions, which the timetable carries out: which waiting tasks
are now free to run, and which must end ``CANCELLED`` because a task they waited for did not
complete (with the task to blame). A failure passes down the graph: the failed waiter's own
waiters are answered in the same call, with a worklist rather than recursion, since a chain
may be as long as the user likes.

It holds, per waiting task, how many of its dependencies have not completed yet and, per task
waited for, the tasks waiting for it (by record, since an id may be reused once its task has
ended). Each edge costs a list slot.
"""

from __future__ import annotations

from typing import NamedTuple

from actors.core.task_record import TaskRecord
from actors.core.task_state import COMPLETED, FINAL_STATES, WAITING, State

__all__ = ["Blocked", "Dependencies"]


class Blocked(NamedTuple):
    """A waiting task that can never run: ``dependency`` ended ``state``, not ``COMPLETED``."""

    task: TaskRecord
    dependency: TaskRecord
    state: State


class Dependencies:
    """The waiting tasks, and the tasks they wait for. Not thread-safe: the core's thread only."""

    __slots__ = ("_unmet", "waiters")

    def __init__(self) -> None:
        self._unmet: dict[TaskRecord, int] = {}  # a waiting task -> its dependencies not yet completed
        # A task -> those waiting for it. Read-only for others: empty, ``ended`` has nothing to
        # say (the core asks before every task's end, so it is a dict, not a method, to ask).
        self.waiters: dict[TaskRecord, list[TaskRecord]] = {}

    def wait(self, task: TaskRecord) -> Blocked | bool:
        """Take a new waiting task; say whether it may run now.

        ``True``: all it waits for has completed; ``False``: it must wait; ``Blocked``: one of
        them has ended otherwise.
        """
        unmet = 0
        for dependency in task.spec.after:
            state = dependency.state
            if state is COMPLETED:
                continue
            if state in FINAL_STATES:
                self._forget(task)
                return Blocked(task, dependency, state)
            unmet += 1
            self.waiters.setdefault(dependency, []).append(task)
        if not unmet:
            return True
        self._unmet[task] = unmet
        return False

    def ended(self, task: TaskRecord, state: State) -> tuple[list[TaskRecord], list[Blocked]]:
        """``task`` ended in ``state``: the waiting tasks now free to run, and those that never will.

        The blocked ones include, in turn, the tasks that waited for them.
        """
        released: list[TaskRecord] = []
        blocked: list[Blocked] = []
        if task in self._unmet:
            del self._unmet[task]
        worklist = [(task, state)]
        while worklist:
            ended, how = worklist.pop()
            for waiter in self.waiters.pop(ended, ()):
                if waiter.state is not WAITING or waiter not in self._unmet:
                    continue  # it ended meanwhile (cancelled, or blocked by another)
                if how is COMPLETED:
                    self._unmet[waiter] -= 1
                    if not self._unmet[waiter]:
                        del self._unmet[waiter]
                        released.append(waiter)
                else:
                    del self._unmet[waiter]
                    blocked.append(Blocked(waiter, ended, how))
                    worklist.append((waiter, State.CANCELLED))
        return released, blocked

    def _forget(self, task: TaskRecord) -> None:
        """Take ``task`` off the lists it was put on (it will not wait after all)."""
        for dependency in task.spec.after:
            waiters = self.waiters.get(dependency)
            if waiters is not None and task in waiters:
                waiters.remove(task)
                if not waiters:
                    del self.waiters[dependency]
