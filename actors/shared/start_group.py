"""``StartGroup``: the starts of leased runs that workers ask for at once, in one statement.

A claim hands a node several runs together, so its workers ask the store whether they may
start them (``SharedStore.start``) at nearly the same moment: one commit each, which on a
busy fleet is most of the database's work per run. Here the first worker to ask leads: it
sends every start waiting (its own and those asked while it waits) in one statement
(``SharedStore.start_many``) and hands each its answer; a worker that asks while a start is in
flight waits for the next group, which the first of them leads. No thread of its own and no
delay: a start asked alone goes out at once, as before. Each start is decided on its own, in
the store, before its run's token moves, as ``start`` decides it: a cancel committed before
it still wins. A start ``beside`` others under one lease (``SharedStore.start``) goes in the
same group, flagged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from actors.store.protocol import Lease

__all__ = ["StartGroup", "StartMany"]


class StartMany(Protocol):
    """``SharedStore.start_many``: called with ``beside`` only when some start of the group is."""

    def __call__(
        self, starts: Sequence[tuple[Lease, bool]], beside: Sequence[bool] | None = None
    ) -> list[float | None]:
        """Start these leased runs; answers in order (``SharedStore.start_many``)."""


@dataclass(slots=True)
class _Ask:
    """One worker's start, and its answer once the group it went in has one."""

    lease: Lease
    seal: bool
    beside: bool
    done: threading.Event = field(default_factory=threading.Event)
    started: float | None = None
    error: Exception | None = None
    lead: bool = False  # this worker is to send the next group


class StartGroup:
    """Groups concurrent starts into one store call (``start``: any thread, a worker's)."""

    def __init__(
        self,
        start_many: StartMany,
        start: Callable[[Lease, bool, bool], float | None] | None = None,
    ) -> None:
        """Send groups with ``start_many`` (answers in order; raises for the whole group).

        ``start``, if given, sends a group of one (``SharedStore.start``: lease, seal, beside).
        """
        self._start_many = start_many
        self._start = start
        # _lock guards _waiting and _sending: who waits for the next group, and whether one is out.
        self._lock = threading.Lock()
        self._waiting: list[_Ask] = []
        self._sending = False
        self.groups = 0  # store calls made (for tests and stats)

    def start(self, lease: Lease, *, seal: bool, beside: bool = False) -> float | None:
        """Start the run of ``lease`` (``SharedStore.start``), grouped with those asked meanwhile.

        Raises:
            Exception: Whatever ``start_many`` raised for the group (``StoreError``).
        """
        ask = _Ask(lease, seal, beside)
        with self._lock:
            if self._sending:
                self._waiting.append(ask)
            else:
                self._sending = True
                ask.lead = True
        if not ask.lead:
            ask.done.wait()
        if ask.lead:
            self._send(ask)
        if ask.error is not None:
            raise ask.error
        return ask.started

    def _send(self, first: _Ask) -> None:
        """Send ``first`` and everything waiting, answer them; pass the lead on to whoever waits then."""
        with self._lock:
            group, self._waiting = [first, *self._waiting], []
        try:
            self.groups += 1
            if self._start is not None and len(group) == 1:
                answers = [self._start(first.lease, first.seal, first.beside)]
            else:
                starts = [(ask.lease, ask.seal) for ask in group]
                flags = [ask.beside for ask in group]
                answers = self._start_many(starts, flags) if any(flags) else self._start_many(starts)
            for ask, started in zip(group, answers, strict=True):
                ask.started = started
        except Exception as error:  # every start of the group failed: each worker raises it
            for ask in group:
                ask.error = error
        with self._lock:
            following = self._waiting[0] if self._waiting else None
            if following is None:
                self._sending = False
            else:
                following.lead = True  # it sends the next group (with all that wait by then)
                self._waiting.pop(0)
        for ask in group:
            ask.lead = False
            ask.done.set()
        if following is not None:
            following.done.set()
