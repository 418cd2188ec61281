"""The envelope a keyed actor timer's message travels in (``actors.ActorTimers``)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import final


@final
@dataclass(frozen=True, slots=True)
class TimerFired:
    """Scheduler -> actor: the timer ``key`` of generation ``generation`` fired; ``message`` is its payload.

    Built by ``ActorTimers`` when a timer starts and told to the actor when it fires. The
    actor's ``ActorTimers`` (through ``TimersMixin`` or ``ActorTimers.deliver``) hands
    ``message`` to the actor's handler only if ``key`` is still active with this
    ``generation``: a timer cancelled or restarted since then is *stale*, and its envelope is
    dropped, even one that was already in the mailbox. Every timer start takes a new
    generation, unique in the process.
    """

    key: Hashable
    generation: int
    message: object
