"""Every thread a scheduler starts, with its role.

So shutdown can join them all, and a call can tell whether it comes from one of the
scheduler's own threads (where waiting could deadlock).
"""

from __future__ import annotations

import enum
import threading

__all__ = ["Role", "ThreadRegistry"]


class Role(enum.Enum):
    """What one of the scheduler's threads does."""

    SCHEDULER = "scheduler"
    WORKER = "worker"
    BUS = "event bus"
    TIMER = "timer"
    NODE = "shared-store node"  # a node's claim loop and lease keeper (actors/shared_node.py)


class ThreadRegistry:
    """The threads one scheduler started. Any thread may call any method."""

    def __init__(self) -> None:
        """Start empty."""
        # _lock guards _roles: threads register themselves as they start, callers read at any time.
        self._lock = threading.Lock()
        self._roles: dict[threading.Thread, Role] = {}

    def add(self, thread: threading.Thread, role: Role) -> None:
        """Record ``thread`` (called by the thread itself, as it starts, or by its starter)."""
        with self._lock:
            self._roles[thread] = role

    def role_of(self, thread: threading.Thread) -> Role | None:
        """The role of ``thread`` if it is one of this scheduler's threads, else ``None``."""
        with self._lock:
            return self._roles.get(thread)

    def threads(self) -> list[tuple[threading.Thread, Role]]:
        """Every thread recorded so far, with its role, in the order they registered."""
        with self._lock:
            return list(self._roles.items())
