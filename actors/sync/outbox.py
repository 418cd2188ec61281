"""A side queue that wakes its consumer actor once per batch instead of once per item."""

from __future__ import annotations

import threading
from typing import Final, Generic, TypeVar

T = TypeVar("T")

_ARMED: Final = b"\x01"


class Outbox(Generic[T]):
    """Items for an actor, delivered in bulk; the actor is woken by one ``Drain`` message per batch.

    A producer calls ``put``; when it returns ``True`` the producer must tell the actor
    ``Drain()``. The actor calls ``drain`` when it handles that message and gets every item put
    so far, in order. So an item is always followed in the actor's mailbox by a ``Drain`` that
    will deliver it, but not always ahead of a message its sender tells afterwards: when another
    producer took the right to tell ``Drain`` and has not told it yet, the later message may
    overtake it. (The scheduler's callers put and tell under the facade's lock, one at a time;
    the other producers are workers, whose run stays busy until its report is taken, so
    ``settle`` and ``shutdown`` wait for that ``Drain``.) Under load many items ride on one
    message, which is what makes this cheaper than one pykka message per item.

    ``put`` may be called from any thread; ``drain`` only from the actor's.

    No lock: the caller's thread and every worker put into one outbox, and a contended lock
    there cost more than everything else a put does. Each step is one C call, atomic under the
    GIL: producers only append to ``_items`` and the actor only deletes from its front; the
    right to tell ``Drain`` is the one byte of ``_armed``, which ``drain`` puts back *before* it
    takes the items and a ``put`` pops *after* its append. So a put either lands before the
    next drain takes the items, or finds the byte there (and tells), or finds that another
    producer took it (whose ``Drain`` is handled, re-arms and takes the items, after this
    append). A ``Drain`` may find nothing: harmless.
    """

    __slots__ = ("_armed", "_items", "_room")

    def __init__(self) -> None:
        """Create an empty outbox (armed: the first put tells the actor)."""
        self._items: list[T] = []
        self._armed = bytearray(_ARMED)
        self._room = threading.Event()  # cleared while a producer waits for a drain (wait_for_room)
        self._room.set()

    def put(self, item: T) -> bool:
        """Add ``item``; return whether the caller must now tell the actor ``Drain()``."""
        self._items.append(item)
        armed = self._armed
        if not armed:
            return False  # a Drain is on its way, or the actor is draining: it takes this item
        try:
            armed.pop()
        except IndexError:  # another producer took the byte between the test and the pop
            return False
        return True

    @property
    def backlog(self) -> int:
        """How many items wait for the actor (any thread; a moment's reading)."""
        return len(self._items)

    def wait_for_room(self, limit: int, timeout: float) -> bool:
        """Block until at most ``limit`` items wait, or ``timeout`` seconds; whether there is room.

        For a producer that would otherwise outrun the actor (never the actor's own thread:
        only its ``drain`` makes room). Items put meanwhile by others count too.
        """
        room = self._room
        while len(self._items) > limit:
            room.clear()
            if len(self._items) <= limit:  # a drain came between the test and the clear
                break
            if not room.wait(timeout):
                return False
        return True

    def drain(self) -> list[T]:
        """Take every item put so far, oldest first (the actor's thread only)."""
        self._armed[:] = _ARMED  # first: an item put after the copy below tells the actor again
        items = self._items.copy()
        del self._items[: len(items)]  # only appends happened since the copy, at the end
        if not self._room.is_set():
            self._room.set()  # a producer waits for room: there is
        return items
