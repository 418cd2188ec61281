"""The base of the library's actors: pykka's threading actor with a cheaper inbox."""

from __future__ import annotations

import contextlib
import queue
from typing import TYPE_CHECKING, Any

import pykka

if TYPE_CHECKING:
    from pykka._actor import ActorInbox


class SimpleQueueActor(pykka.ThreadingActor):
    """A ``ThreadingActor`` whose inbox is a ``queue.SimpleQueue``.

    pykka needs only ``put``, ``get`` and ``empty`` from an inbox, and lets actor types pick
    theirs through ``_create_actor_inbox`` (as its own threading and gevent actors do).
    ``SimpleQueue`` is the C implementation: unbounded like pykka's default ``queue.Queue``,
    with the same FIFO order, but a ``tell`` costs about a third as much (measured 0.7 µs
    against 2.2 µs here), which matters on the scheduler's hot path. Daemon threads, so a
    forgotten ``shutdown`` never keeps the interpreter alive.
    """

    use_daemon_thread = True

    @staticmethod
    def _create_actor_inbox() -> ActorInbox:
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        return inbox


def stop_quietly(ref: pykka.ActorRef[Any]) -> None:
    """Ask an actor to stop after the messages already in its inbox; do nothing if it is gone."""
    with contextlib.suppress(pykka.ActorDeadError):
        ref.stop(block=False)
