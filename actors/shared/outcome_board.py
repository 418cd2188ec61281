"""``OutcomeBoard``: where a node of a shared store keeps what its handles wait for.

A durable task on a shared store may end on any node, so a ``TaskHandle`` learns that it ended
from the store; but the store keeps outcomes, not values. The board keeps the values (and the
exceptions) of the runs this node committed last, for the handles on this node, and wakes
handles waiting for a task when anything may have changed: a hint from the store, or an
outcome this node just saved.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from actors.sync.waiting import Deadline

__all__ = ["OutcomeBoard"]

Key = tuple[str, int]  # (task_id, seq): one incarnation of a task


class OutcomeBoard:
    """Values of tasks ended on this node, and a change signal. Every method: any thread."""

    def __init__(self, keep: int) -> None:
        """Keep the outcomes of the last ``keep`` tasks that ended here (at least 1)."""
        # _changed guards _version, _closed and _ended; waiters wait on it for a new version.
        self._changed = threading.Condition(threading.Lock())
        self._version = 0
        self._closed = False
        self._ended: OrderedDict[Key, tuple[object, BaseException | None]] = OrderedDict()
        self._keep = max(1, keep)

    def changed(self) -> None:
        """Something may have changed in the store: wake every waiter (cheap: the listener calls it)."""
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    def close(self) -> None:
        """The node has stopped: wake every waiter for good."""
        with self._changed:
            self._closed = True
            self._version += 1
            self._changed.notify_all()

    @property
    def closed(self) -> bool:
        """Whether the node has stopped."""
        return self._closed

    def version(self) -> int:
        """A number that grows with each change: pass it to ``wait``."""
        with self._changed:
            return self._version

    def wait(self, seen: int, deadline: Deadline, longest: float) -> None:
        """Wait until a change after ``seen``, the deadline, or ``longest`` seconds."""
        remaining = deadline.remaining()
        timeout = longest if remaining is None else min(remaining, longest)
        with self._changed:
            self._changed.wait_for(lambda: self._version != seen, timeout)

    def ended(self, task_id: str, seq: int, value: object, error: BaseException | None) -> None:
        """Keep the outcome of a task whose last run this node committed."""
        with self._changed:
            self._ended[task_id, seq] = (value, error)
            self._ended.move_to_end((task_id, seq))
            while len(self._ended) > self._keep:
                self._ended.popitem(last=False)
            self._version += 1
            self._changed.notify_all()

    def forget(self, task_id: str, seq: int) -> None:
        """Drop what ``ended`` kept of that task (its outcome was refused)."""
        with self._changed:
            self._ended.pop((task_id, seq), None)

    def outcome(self, task_id: str, seq: int) -> tuple[object, BaseException | None] | None:
        """The value and error of that task's last run, if it ended on this node (and is still kept)."""
        with self._changed:
            return self._ended.get((task_id, seq))
