"""A handed run's claim: whoever takes it first, the worker or the scheduler, owns the run.

When the scheduler hands a worker a batch of runs, each run carries a fresh ``Claim``. The
worker takes it to start the run; the scheduler takes it to take back a run the worker has
not started (to cancel it, to give it to a worker that fell idle, or to requeue it when the
worker is lost). A claim *is* a one-byte ``bytearray``, and ``take`` is a single
``bytearray.pop``: one C call, so atomic under the GIL and safe without a lock, and exactly
one side wins. (A ``bytearray``: one allocation per run, holding no references.)

A claim is per *run* and decides only between the worker and the scheduler; whether the
*task* may still run at all is the task's token (``actors/token.py``).
"""

from __future__ import annotations

from typing import Final

__all__ = ["FREE", "Claim"]


FREE: Final = b"\x01"
"""A free claim's one byte."""


class Claim(bytearray):
    """One run's claim. ``take`` may be called from any thread; exactly one call returns ``True``."""

    __slots__ = ()

    def __init__(self, free: bytes = FREE) -> None:
        """Make a free claim."""
        super().__init__(free)

    def take(self) -> bool:
        """Take the claim; ``False`` if the other side already has it."""
        try:
            return bool(self.pop())
        except IndexError:
            return False
