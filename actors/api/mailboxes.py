"""Waiting for other actors' mailboxes: the part of ``Scheduler.settle(also=...)`` about user actors.

Runs on the caller's thread; it only asks the actors and reads their inboxes' counters.

Any pykka actor answers pykka's own ``ProxyCall`` message without calling ``on_receive``, so a
probe (``ProxyCall`` of the inbox's ``qsize``) works for an actor whatever messages it
understands. Its reply says that everything ahead of it in the mailbox has been handled, and
how many messages arrived behind it meanwhile.

That alone cannot tell whether a message arrived and was handled between two probes: the
reply of a probe sent later would look the same. A ``pykka.ThreadingActor``'s inbox is a
``queue.Queue``, whose ``unfinished_tasks`` counts every ``put`` (pykka never calls
``task_done``): so an actor whose counter moved by exactly one (the probe) between two
readings received nothing else meanwhile. For an inbox without that counter (say a
``queue.SimpleQueue``) only the queue length behind the probe is seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import pykka
from pykka.messages import ProxyCall

from actors.sync.waiting import Deadline

__all__ = ["ActorMailbox", "check_refs", "probe_all"]

PROBE_STEP: Final = 0.1
"""Seconds between checks that an actor that has not answered its probe is still alive."""

_PROBE: Final = ProxyCall(attr_path=("actor_inbox", "qsize"), args=(), kwargs={})


class ActorMailbox:
    """The mailbox of one actor a settle waits for, and what the last probe found there."""

    __slots__ = ("_ref", "behind", "dead", "sent")

    def __init__(self, ref: pykka.ActorRef[Any]) -> None:
        self._ref = ref
        self.sent = self._sent_count()  # puts counted when last read (None: not countable)
        self.dead = False  # the actor has stopped: it handles nothing more
        self.behind = 0  # messages queued behind the last probe when the actor handled it

    def _sent_count(self) -> int | None:
        count = getattr(self._ref.actor_inbox, "unfinished_tasks", None)
        return count if isinstance(count, int) else None

    def send_probe(self) -> pykka.Future[Any] | None:
        """Put a probe in the mailbox; ``None`` if the actor is dead."""
        try:
            return self._ref.ask(_PROBE, block=False)
        except pykka.ActorDeadError:  # pykka raises it, or sets it on the reply
            self.dead = True
            return None

    def await_probe(self, reply: pykka.Future[Any] | None, deadline: Deadline, timeout: float) -> None:
        """Wait until the actor has handled the probe (or died).

        Raises:
            TimeoutError: not by ``deadline`` (the message names the actor and ``timeout``).
        """
        self.behind = 0
        while reply is not None:
            remaining = deadline.remaining()
            step = PROBE_STEP if remaining is None else min(PROBE_STEP, remaining)
            try:
                self.behind = int(reply.get(timeout=step))
            except pykka.ActorDeadError:
                self.dead = True
                return
            except pykka.Timeout:
                if not self._ref.is_alive():  # died, maybe with the probe stranded in its inbox
                    self.dead = True
                    return
                if deadline.passed():
                    raise TimeoutError(
                        f"{self._ref} did not handle the messages sent to it within {timeout} s"
                    ) from None
            else:
                return

    def quiet_since_last(self) -> bool:
        """Whether, since the previous reading, the actor received nothing but the probe (and read again).

        A dead actor is quiet: it handles nothing more, and what it sent or scheduled before
        it died shows in the other mailboxes and in the scheduler's count.
        """
        before, self.sent = self.sent, self._sent_count()
        if self.dead:
            return True
        if before is None or self.sent is None:
            return self.behind == 0
        return self.sent - before == 1


def check_refs(also: Iterable[pykka.ActorRef[Any]]) -> list[ActorMailbox]:
    """The mailboxes of the actors ``also`` names, each once.

    Raises:
        TypeError: ``also`` is not an iterable of ``pykka.ActorRef``.
    """
    try:
        refs = list(also)
    except TypeError:
        raise TypeError(f"also must be an iterable of pykka.ActorRef, got {also!r}") from None
    seen: set[str] = set()
    mailboxes = []
    for ref in refs:
        if not isinstance(ref, pykka.ActorRef):
            raise TypeError(f"also must hold pykka.ActorRef objects, got {ref!r}")
        if ref.actor_urn not in seen:
            seen.add(ref.actor_urn)
            mailboxes.append(ActorMailbox(ref))
    return mailboxes


def probe_all(mailboxes: Sequence[ActorMailbox], deadline: Deadline, timeout: float) -> bool:
    """Probe every mailbox at once and wait for all; return whether none received anything new.

    "New" means: since the previous ``probe_all`` (or ``check_refs``), anything besides the
    probe went into the mailbox (or, for an inbox that does not count, something was queued
    behind the probe).

    Raises:
        TimeoutError: an actor did not handle its probe by ``deadline``.
    """
    replies = [mailbox.send_probe() for mailbox in mailboxes]
    for mailbox, reply in zip(mailboxes, replies, strict=True):
        mailbox.await_probe(reply, deadline, timeout)
    quiet = True
    for mailbox in mailboxes:
        quiet = mailbox.quiet_since_last() and quiet  # every counter is read again, quiet or not
    return quiet
