"""A side queue that wakes its consumer actor once per batch instead of once per item."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class Outbox(Generic[T]):
    """Items for an actor, delivered in bulk; the actor is woken by one ``Drain`` message per batch.

    A producer calls ``put``; when it returns ``True`` (the first item since the last drain)
    the producer must tell the actor ``Drain()``. The actor calls ``drain`` when it handles
    that message and gets every item put so far, in order. So an item is always followed in
    the actor's mailbox by a ``Drain`` that will deliver it: everything a thread sends
    after ``put`` (through the mailbox) is handled after the item. Under load many items ride
    on one message, which is what makes this cheaper than one pykka message per item.

    ``put`` may be called from any thread; ``drain`` only from the actor's.
    """

    def __init__(self) -> None:
        """Create an empty outbox."""
        # _lock guards _items, so that "was it empty?" and the append are one step.
        self._lock = threading.Lock()
        self._items: list[T] = []

    def put(self, item: T) -> bool:
        """Add ``item``; return whether the caller must now tell the actor ``Drain()``."""
        with self._lock:
            self._items.append(item)
            return len(self._items) == 1

    def drain(self) -> list[T]:
        """Take every item put so far, oldest first."""
        with self._lock:
            items, self._items = self._items, []
        return items
