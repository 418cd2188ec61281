"""A handed run's claim: whoever takes it first, the worker or the scheduler, owns the run.

When the scheduler hands a worker a batch of runs, each run carries a fresh ``Claim``. The
worker takes it to start the run; the scheduler takes it to take back a run the worker has
not started (to cancel it, to give it to a worker that fell idle, or to requeue it when the
worker is lost). A claim *is* a one-byte ``bytearray``, and ``take`` is a single
``bytearray.pop``: one C call, so atomic under the GIL and safe without a lock, and exactly
one side wins. (A ``bytearray``: one allocation per run, holding no references but its
waker's.)

A claim is per *run* and decides only between the worker and the scheduler; whether the
*task* may still run at all is the task's token (``actors/sync/token.py``).

The claim also carries the run's *stop request*: ``stop`` says whether, and why, the run was
asked to stop (``cancel(interrupt=True)``, or its timeout), which the run sees as
``current_run().cancel_requested``. It is a set of reasons (``INTERRUPTED | TIMED_OUT``: an
interrupt is not forgotten when the run's timeout comes later, and the task still ends
``CANCELLED``) that only ever grows, and only through the moves of ``actors/sync/token.py``, under
its lock (``request_stop``, ``Token.end_run``, ``Token.abandon_run``): a request and the
run's end race, and exactly one order happens. Once the run has ended (``run_ended``: its
worker's ``end_run``, before it reports) no request lands, and the scheduler reads the
reasons with ``Token.stop_reasons``: a late
interrupt cannot turn a run that returned into a cancelled one. A coroutine run registers a
``waker`` that cancels it when a stop is requested.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = ["ABANDONED", "INTERRUPTED", "NOT_STOPPED", "REPLACED", "TIMED_OUT", "UNTAKEN", "Claim"]


UNTAKEN: Final = b"\x01"
"""An untaken claim's one byte (not ``FREE``: that is a token's state)."""

NOT_STOPPED: Final = 0
"""No stop was requested."""
INTERRUPTED: Final = 1
"""A caller asked the run to stop: ``cancel(interrupt=True)`` (a bit of ``Claim.stop``)."""
TIMED_OUT: Final = 2
"""The run outlived its task's ``timeout`` (a bit of ``Claim.stop``)."""
ABANDONED: Final = 4
"""The run outlived ``timeout + hung_grace``: the scheduler counted it failed and left its worker."""
REPLACED: Final = 8
"""The task's next slot came due during the run, and its ``overlap="replace"`` asks the run to make way."""


class Claim(bytearray):
    """One run's claim. ``take`` may be called from any thread; exactly one call returns ``True``.

    Made with ``Claim.free()``. No ``__init__``: one claim is made for every run, and calling
    a class with a Python ``__init__`` (through ``super().__init__``) cost three times what
    ``free`` does.
    """

    __slots__ = ("run_ended", "stop", "waker")

    stop: int  # the reasons the run was asked to stop, or'ed together
    run_ended: bool  # the run has ended: no stop request lands any more
    waker: Callable[[], None] | None

    @classmethod
    def free(cls) -> Claim:
        """A free claim of a run nobody asked to stop."""
        claim = cls(UNTAKEN)
        claim.stop = NOT_STOPPED
        claim.run_ended = False
        claim.waker = None
        return claim

    def take(self) -> bool:
        """Take the claim; ``False`` if the other side already has it."""
        try:
            return bool(self.pop())
        except IndexError:
            return False
