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
    ABANDONED = "abandoned worker"
    """A worker left to a hung run (``timeout`` + ``hung_grace``): a daemon nobody waits for."""
    NODE = "shared-store node"  # a node's lease loop and lease keeper (actors/shared/node.py)


class ThreadRegistry:
    """The threads one scheduler started. Any thread may call any method."""

    def __init__(self) -> None:
        """Start empty."""
        # _lock guards _roles: threads register themselves as they start, callers read at any time.
        self._lock = threading.Lock()
        self._roles: dict[threading.Thread, Role] = {}
        self._by_actor: dict[str, threading.Thread] = {}  # an actor's urn -> its thread

    def add(self, thread: threading.Thread, role: Role, actor_urn: str | None = None) -> None:
        """Record ``thread`` (called by the thread itself, as it starts, or by its starter)."""
        with self._lock:
            self._roles[thread] = role
            if actor_urn is not None:
                self._by_actor[actor_urn] = thread

    def abandon(self, actor_urn: str) -> None:
        """Mark the thread of the actor ``actor_urn`` as abandoned: shutdown does not wait for it."""
        with self._lock:
            thread = self._by_actor.get(actor_urn)
            if thread is not None:
                self._roles[thread] = Role.ABANDONED

    def role_of(self, thread: threading.Thread) -> Role | None:
        """The role of ``thread`` if it is one of this scheduler's threads, else ``None``."""
        with self._lock:
            return self._roles.get(thread)

    def threads(self) -> list[tuple[threading.Thread, Role]]:
        """Every thread recorded so far, with its role, in the order they registered."""
        with self._lock:
            return list(self._roles.items())
