"""The base of the library's actors: a cheaper inbox, daemon threads, each thread recorded."""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from typing import TYPE_CHECKING, Any, ClassVar

import pykka

from actors.sync.threads import Role, ThreadRegistry

if TYPE_CHECKING:
    from pykka._actor import ActorInbox

_THREAD_NUMBERS = itertools.count()  # names like pykka's own: "<Class>-<n>"


class LibraryActor(pykka.ThreadingActor):
    """A ``ThreadingActor`` whose inbox is a ``queue.SimpleQueue`` and whose thread registers itself.

    pykka needs only ``put``, ``get`` and ``empty`` from an inbox, and lets actor types pick
    theirs through ``_create_actor_inbox`` (as its own threading and gevent actors do).
    ``SimpleQueue`` is the C implementation: unbounded like pykka's default ``queue.Queue``,
    with the same FIFO order, but a ``tell`` costs about a third as much. Daemon threads, so a
    forgotten ``shutdown`` never keeps the interpreter alive. Each subclass names its ``role``;
    its thread is recorded in the scheduler's ``ThreadRegistry`` before it starts.
    """

    use_daemon_thread = True
    role: ClassVar[Role]

    def __init__(self, threads: ThreadRegistry | None = None) -> None:
        """Create the actor (on the caller's thread); ``threads`` records its thread once it runs."""
        super().__init__()
        self._threads = threads

    @staticmethod
    def _create_actor_inbox() -> ActorInbox:
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        return inbox

    def _start_actor_loop(self) -> None:
        """Start the actor's thread, recorded before it starts (pykka's hook for actor types).

        If the system refuses the thread, the actor is taken out of pykka's registry again
        and the error propagates to whoever called ``start()``.
        """
        thread = threading.Thread(
            target=self._actor_loop,
            name=f"{type(self).__name__}-{next(_THREAD_NUMBERS)}",
            daemon=self.use_daemon_thread,
        )
        if self._threads is not None:
            self._threads.add(thread, self.role, self.actor_urn)
        try:
            thread.start()
        except BaseException:
            pykka.ActorRegistry.unregister(self.actor_ref)
            self.actor_stopped.set()
            raise


def stop_quietly(ref: pykka.ActorRef[Any]) -> None:
    """Ask an actor to stop after the messages already in its inbox; do nothing if it is gone."""
    with contextlib.suppress(pykka.ActorDeadError):
        ref.stop(block=False)


def tell_quietly(ref: pykka.ActorRef[Any], message: object) -> bool:
    """Tell ``ref`` ``message``; return ``False`` (and drop it) if the actor is gone."""
    try:
        ref.tell(message)
    except pykka.ActorDeadError:
        return False
    return True
