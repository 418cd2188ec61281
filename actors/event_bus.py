"""The event bus actor: fans task events out to listeners, off the scheduler's thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pykka

from actors.base import SimpleQueueActor
from messages import EventKind, Flush, Publish, Subscribe, TaskEvent, Unsubscribe

logger = logging.getLogger(__name__)


class EventBus(SimpleQueueActor):
    """Delivers each published event to every subscription that wants its kind, in order.

    Callable listeners are called on the bus thread; an ``ActorRef`` listener is told the
    event. Events reach each listener in the order the scheduler published them. A listener
    that raises (anything, ``BaseException`` included) is logged and skipped for that event;
    an actor listener that has stopped is unsubscribed. A listener that blocks delays only
    later events, never the scheduler.
    """

    def __init__(self, started_threads: list[threading.Thread] | None = None) -> None:
        """Create an empty bus (runs on the caller's thread)."""
        super().__init__()
        self._started_threads = started_threads
        # subscription id -> (listener, kinds); insertion order is delivery order.
        self._subscriptions: dict[int, tuple[object, frozenset[EventKind]]] = {}

    def on_start(self) -> None:
        """Record this actor's thread so shutdown can join it (bus thread)."""
        if self._started_threads is not None:
            self._started_threads.append(threading.current_thread())

    def on_receive(self, message: Any) -> object:
        """Handle ``Publish``, ``Subscribe``, ``Unsubscribe`` and ``Flush`` (bus thread)."""
        match message:
            case Publish(events):
                for event in events:
                    self._deliver(event)
            case Subscribe(subscription_id, listener, kinds):
                self._subscriptions[subscription_id] = (listener, kinds)
            case Unsubscribe(subscription_id):
                self._subscriptions.pop(subscription_id, None)
            case Flush():
                return True
            case _:
                logger.warning("event bus ignored an unexpected message: %r", message)
        return None

    def _deliver(self, event: TaskEvent) -> None:
        for subscription_id, (listener, kinds) in list(self._subscriptions.items()):
            if event.kind not in kinds:
                continue
            if isinstance(listener, pykka.ActorRef):
                try:
                    listener.tell(event)
                except pykka.ActorDeadError:
                    logger.warning("listener actor %s has stopped; unsubscribed", listener)
                    del self._subscriptions[subscription_id]
                continue
            call: Callable[[TaskEvent], object] = listener  # type: ignore[assignment]
            try:
                call(event)
            except BaseException:  # one bad listener must not stop the bus or the others
                logger.exception("listener %r raised on %s; skipped", listener, event)
