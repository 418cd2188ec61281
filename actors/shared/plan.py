"""The decisions of a shared store's node, as arithmetic: pure, so they are tested without threads.

A node of a shared store (``actors/shared/node.py``) leases due runs, keeps their leases and
sleeps between claims. What it decides, it decides here, from numbers it is given (seconds;
``now`` comes in, no clock is read): how many runs to claim, how long to sleep, when to renew,
and how its own clocks relate to the database's.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = [
    "AHEAD_PER_WORKER",
    "HINTED_RENEWAL_GAP",
    "RENEWALS_PER_LEASE",
    "SHORT_RUN",
    "ClockSample",
    "claim_ahead",
    "down_before",
    "lease_limit",
    "local_due",
    "on_grid",
    "poll_delay",
    "renew_period",
    "renew_within",
    "sleep_for",
    "store_retry_pause",
    "typical_run",
]

RENEWALS_PER_LEASE: Final = 3
"""A lease is renewed this many times per lease period: two renewals may fail before it ends."""

HINTED_RENEWAL_GAP: Final = 0.05
"""Seconds between renewals brought forward by hints (a burst of hints: one renewal)."""

_FIRST_PAUSE: Final = 0.05  # seconds after a first failed call to the store; doubles, up to poll


def lease_limit(idle: int, in_transit: int, ahead: int = 0, waiting: int = 0) -> int:
    """How many due runs to claim: one per idle worker, less the leases not yet handed over.

    With ``ahead``, also as many more as may wait for a worker on the node (``waiting`` wait
    already: leased, handed over, not started): so a worker that ends a run finds the next one
    leased, and a claim carries a batch. Only a batch of at least half ``ahead`` is worth a
    claim of its own (a commit on the server); an idle worker is always worth one.
    """
    for_idle = max(0, idle - in_transit)
    if ahead <= 0:
        return for_idle
    queue_room = max(0, ahead - waiting - max(0, in_transit - idle))
    if for_idle == 0 and queue_room < max(1, ahead // 2):
        return 0
    return for_idle + queue_room


SHORT_RUN: Final = 0.05
"""Seconds: a node whose runs typically end within this claims runs ahead of its idle workers."""

AHEAD_PER_WORKER: Final = 4
"""How many leased runs per worker may wait for a worker on a node whose runs are short."""


def claim_ahead(workers: int, typical_run: float | None) -> int:
    """How many leased runs may wait for a worker, on a node of ``workers`` whose runs take ``typical_run`` s.

    Only while its runs are short (``SHORT_RUN``; ``None``: none ended yet): then a run
    waits a few milliseconds at most for a worker, and claims carry batches. A node whose runs
    are long claims no more than its idle workers, so no run waits on a busy node while another
    node has a worker free for it.
    """
    if typical_run is None or typical_run > SHORT_RUN:
        return 0
    return max(0, AHEAD_PER_WORKER * workers)


def typical_run(previous: float | None, seconds: float) -> float:
    """The typical run's seconds, ``previous`` updated with a run that took ``seconds``: a moving average."""
    return seconds if previous is None else 0.8 * previous + 0.2 * max(0.0, seconds)


def poll_delay(poll: float, jitter: float) -> float:
    """Seconds until the next poll: within ``[poll / 2, poll]``, placed by ``jitter`` in ``[0, 1)``.

    Never longer than ``poll``, so a killed node's runs are taken within ``lease + poll``;
    spread, so the nodes of a fleet started together do not poll in step.
    """
    return poll * (0.5 + 0.5 * min(max(jitter, 0.0), 1.0))


def sleep_for(wakeup: float | None, db_now: float, until_poll: float) -> float:
    """Seconds to sleep: until the store's next wake-up (database clock), or the next poll if sooner."""
    if wakeup is None:
        return max(0.0, until_poll)
    return max(0.0, min(wakeup - db_now, until_poll))


def renew_period(lease: float) -> float:
    """Seconds between two renewals of the leases a node holds."""
    return lease / RENEWALS_PER_LEASE


def renew_within(lease: float) -> float:
    """Seconds within which a lease must end for a renewal to extend it (``SharedStore.renew``).

    Half a period short of the whole lease: a renewal a hint brings forward soon after the
    last one writes nothing, while every renewal at least half a period after the last
    extension extends (so a lease is never less than half a lease from its end at a renewal).
    """
    return lease - renew_period(lease) / 2.0


def store_retry_pause(failures: int, poll: float) -> float:
    """Seconds to wait after ``failures`` calls to the store failed in a row (doubling, up to ``poll``)."""
    if failures <= 0:
        return 0.0
    return min(poll, _FIRST_PAUSE * 2.0 ** min(failures - 1, 30))


def local_due(due_wall: float | None, wall_offset: float, now: float) -> float:
    """The clock time a leased run is due at: its database due time on this clock, never later than now.

    The claim says it is due on the database's clock; what this node believes of that clock
    may be off by a little, and a leased run must not wait for the difference.
    """
    if due_wall is None:
        return now
    return min(due_wall - wall_offset, now)


def down_before(started: float, lease: float, poll: float) -> float:
    """The instant (database clock) before which a due run passed while the whole fleet was down.

    A node that starts at ``started`` and claims a run due earlier than this treats it as a
    restart does its load (the task's ``catch_up`` decides): a live node would have claimed it
    within ``poll`` (within ``lease + poll`` had its claimer died), so nothing ran it. A run due
    later is late as any run is (busy workers, a slow poll): it runs, as in memory.
    """
    return started - (lease + poll)


def on_grid(due: float, anchor: float, interval: float, ran: float | None = None) -> float:
    """A fixed-rate task's next due time (database clock), put back on its grid ``anchor + k * interval``.

    The core plans a fixed-rate slot on the node's clock and converts it with the offset between
    the clocks as it is then; if that offset moved during the run (a better reading of the
    database's clock), the slot would be off its grid by as much. The slot number is right:
    this takes the grid point nearest to ``due``; but never the slot ``ran`` (the claimed
    slot that just ran) or one before it. A leased run starts at once, on the database's
    word that it is due: where this node's reading of that clock is behind by more than half
    an interval, the core sees the run start a slot early, and would plan the slot it just
    ran as the next one (a fast task would run that slot twice).
    """
    if not interval > 0:
        return due
    slot = round((due - anchor) / interval)
    if ran is not None:
        slot = max(slot, round((ran - anchor) / interval) + 1)
    return anchor + slot * interval


class ClockSample(NamedTuple):
    """One reading of the database's clock, taken between two readings of this node's clock.

    Attributes:
        offset: Database clock (UTC epoch seconds) minus this node's clock, at the midpoint.
        spread: How long the reading took (the offset is right within half of it).
    """

    offset: float
    spread: float

    @classmethod
    def between(cls, before: float, db_now: float, after: float) -> ClockSample:
        """The sample of a database reading ``db_now`` taken between local readings ``before``, ``after``."""
        return cls(db_now - (before + after) / 2.0, max(0.0, after - before))
