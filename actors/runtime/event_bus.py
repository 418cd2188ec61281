"""The event bus actor: fans task events out to listeners, off the scheduler's thread."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pykka

from actors.runtime.base import LibraryActor, tell_quietly
from actors.sync.threads import Role, ThreadRegistry
from messages import BusExited, EventKind, Flush, Publish, Subscribe, TaskEvent, Unsubscribe

logger = logging.getLogger(__name__)


class EventBus(LibraryActor):
    """Delivers each published event to every subscription that wants its kind, in order.

    Callable listeners are called on the bus thread; an ``ActorRef`` listener is told the
    event. Events reach each listener in the order the scheduler published them. A listener
    that raises (anything, ``BaseException`` included) is logged and skipped for that event;
    an actor listener that has stopped is unsubscribed. A listener that blocks delays only
    later events, never the scheduler. If the bus itself dies, it tells the scheduler
    (``BusExited``), which starts a new one with the same subscriptions.
    """

    role = Role.BUS

    def __init__(
        self, threads: ThreadRegistry | None = None, scheduler: pykka.ActorRef[Any] | None = None
    ) -> None:
        """Create an empty bus (runs on the caller's thread); ``scheduler`` hears if it dies."""
        super().__init__(threads)
        self._scheduler = scheduler
        # subscription id -> (listener, kinds); insertion order is delivery order.
        self._subscriptions: dict[int, tuple[object, frozenset[EventKind]]] = {}

    def on_receive(self, message: Any) -> None:
        """Handle ``Publish``, ``Subscribe``, ``Unsubscribe`` and ``Flush`` (bus thread)."""
        try:
            match message:
                case Publish(events):
                    for event in events:
                        self._deliver(event)
                case Subscribe(subscription_id, listener, kinds):
                    self._subscriptions[subscription_id] = (listener, kinds)
                case Unsubscribe(subscription_id):
                    self._subscriptions.pop(subscription_id, None)
                case Flush(waiter, value):
                    waiter.set_result(value)
                case _:
                    logger.warning("event bus ignored an unexpected message: %r", message)
        except Exception:
            logger.exception("event bus failed to handle %r; message dropped", message)

    def on_failure(self, *_: object) -> None:
        """Tell the scheduler the bus died, so it starts another (bus thread)."""
        logger.error("event bus failed; the scheduler will replace it")
        if self._scheduler is not None:
            tell_quietly(self._scheduler, BusExited("failed"))

    def _deliver(self, event: TaskEvent) -> None:
        for subscription_id, (listener, kinds) in list(self._subscriptions.items()):
            if event.kind not in kinds:
                continue
            if isinstance(listener, pykka.ActorRef):
                if not tell_quietly(listener, event):
                    logger.warning("listener actor %s has stopped; unsubscribed", listener)
                    del self._subscriptions[subscription_id]
                continue
            call: Callable[[TaskEvent], object] = listener  # type: ignore[assignment]
            try:
                call(event)
            except BaseException:  # one bad listener must not stop the bus or the others
                logger.exception("listener %r raised on %s; skipped", listener, event)
