"""``LeaseLoop``: the thread that leases due runs for a node of a shared store.

It sleeps until something may be claimable, then leases due runs (``SharedStore.claim_due``),
only of functions the node can import and, per executor (the thread pool, the process pool),
only as many as that pool has idle workers (and, while the pool's runs are short, a batch ahead
of them: ``plan.lease_limit``), so a node without worker processes never claims an
``executor="process"`` run; and hands the leases to the scheduler actor. What wakes it:

- a hint from another node (or this one) that the schedule changed (``LISTEN/NOTIFY``,
  through ``wake``): prompt, but a hint can be lost;
- the store's next wake-up time (the earliest due time, or the end of a lease held by another
  node, on the database's clock), so a killed node's runs are taken as soon as its leases end;
- a poll every ``poll`` seconds, jittered within ``[poll / 2, poll]``: the guarantee, since
  hints can be lost; each poll also re-reads the database's clock (``DatabaseClock``);
- room: a worker fell idle while more runs were due (``wake_for_room``).

Each claim says which rows the node holds (``LeaseBook.seqs``): a row it holds is never
claimed again here, even if its lease lapsed (its run is here: that would run it twice),
and a row it owns but does not hold (an orphan of a claim whose answer a dropped connection
lost, or of a release that failed) is claimed again at once. So a poll and the first look
after a failure claim without asking the store when the next row is due first.

Hints are many on a busy fleet (every saved outcome sends one), and most say nothing is due:
so the loop acts on hints at most every ``HINT_GAP`` seconds (folding those in between);
unless its last claim filled its room, it first asks the store when the next row is due (an
index probe) and claims only if that time has come; and it reads the references it must
import at most every ``REFRESH_GAP`` seconds on hints (always at a poll).

It never holds up the scheduler actor: the claim runs on this thread, and the actor only
gets the leases (``deliver``). Every decision in numbers is in ``actors/shared/plan.py``.
"""

from __future__ import annotations

import logging
import math
import random
import threading
from collections.abc import Callable, Sequence
from typing import Final

from actors.errors import StoreError
from actors.references import resolve_stored
from actors.shared.clock import DatabaseClock
from actors.shared.lease_book import LeaseBook
from actors.shared.plan import poll_delay, sleep_for, store_retry_pause
from actors.store.protocol import Lease, SharedStore
from actors.sync.threads import Role, ThreadRegistry

__all__ = ["Importable", "LeaseLoop"]

logger = logging.getLogger(__name__)

HINT_GAP: Final = 0.005
"""Seconds between two looks the loop takes because of hints (room and polls are not held back)."""

REFRESH_GAP: Final = 0.1
"""Seconds between two readings of the references to import, when hints ask for them."""

SPIN_PAUSE: Final = 0.005
"""Seconds to wait when the store says a row is due but the claim found none free (another
node's transaction holds it for a moment): so the loop never spins on the store."""


class Importable:
    """The function references a node can import, learnt from the store's lean change feed.

    Used by the lease loop's thread only.
    """

    def __init__(self, can_import: Callable[[str], bool] | None = None) -> None:
        """Start knowing no reference; ``can_import`` judges one (default: it resolves)."""
        self._can_import = can_import or _resolves
        self._known: dict[str, bool] = {}
        self._cursor = 0
        self.names: list[str] = []  # the importable ones, sorted: what claims are limited to

    def refresh(self, store: SharedStore) -> None:
        """Read the references written since the last refresh, and judge the new ones.

        Raises:
            StoreError: The store failed; nothing changed.
        """
        refs, cursor = store.references(self._cursor)
        new = refs - self._known.keys()
        for ref in sorted(new):
            ok = self._known[ref] = self._can_import(ref)
            if not ok:
                logger.warning("this node cannot import %r: it leaves its runs to other nodes", ref)
        if any(self._known[ref] for ref in new):
            self.names = sorted(ref for ref, ok in self._known.items() if ok)
        self._cursor = cursor


def _resolves(ref: str) -> bool:
    try:
        resolve_stored(ref)  # any failure of its import is an ImportError (a SystemExit too)
    except Exception:  # an import that raises anything at all: not runnable here
        return False
    return True


class LeaseLoop:
    """Claims due runs into a ``LeaseBook`` and delivers them, on its own daemon thread.

    ``start``, ``stop``, ``wake`` and ``wake_for_room`` may be called from any thread.
    """

    def __init__(
        self,
        store: SharedStore,
        book: LeaseBook,
        clock: DatabaseClock,
        deliver: Callable[[list[Lease]], bool],
        *,
        threads: ThreadRegistry | None = None,
        importable: Importable | None = None,
        rng: random.Random | None = None,
        on_poll: Callable[[], None] | None = None,
    ) -> None:
        """Prepare the loop.

        Args:
            store: The shared store.
            book: Where claimed leases are held; says how much room there is.
            clock: The node's clock (its wall reading is the database's).
            deliver: Hands claimed leases to the scheduler (on this thread); ``False`` if it
                is gone (the leases are then given back).
            threads: Where the thread is recorded.
            importable: The references this node can import (default: learnt from the store).
            rng: Where the poll's jitter comes from.
            on_poll: Called at each poll (on this thread), before the claim.
        """
        self._store = store
        self._book = book
        self._clock = clock
        self._deliver = deliver
        self._threads = threads
        self._importable = importable or Importable()
        self._rng = rng or random.Random()
        self._poll = store.poll
        self._on_poll = on_poll
        # _event wakes the thread; _hinted says a hint came (the schedule changed: read the
        # references again); _more_due says the last claim filled the room (so more runs may
        # be due: room that frees up is worth a claim). Flags written by any thread, read by
        # the loop: a lost race only costs one extra (or one later) claim.
        self._event = threading.Event()
        self._hinted = True
        self._more_due = True
        self._refreshed = -math.inf  # when the references were last read (this clock)
        self._room = False  # a worker fell idle (a wake-up not to hold back)
        self._stepped = -math.inf  # when the loop last looked (this clock)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-loop", daemon=True)
        self.acquisitions = 0  # claim_due statements sent (for tests and stats)

    def start(self) -> None:
        """Start the thread."""
        if self._threads is not None:
            self._threads.add(self._thread, Role.NODE)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop claiming, and wait for the thread (up to ``timeout`` seconds). Idempotent."""
        self._stopped.set()
        self._event.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def wake(self, *, refresh: bool = True) -> None:
        """The schedule changed (a hint): look again at once. Cheap; any thread (the listener's).

        ``refresh=False``: the change adds no reference to import (a saved outcome): the look
        does not read them again for it.
        """
        if refresh:
            self._hinted = True
        self._event.set()

    def wake_for_room(self) -> None:
        """A worker fell idle: claim again if more runs may be due. Cheap; any thread."""
        if self._more_due:
            self._room = True
            self._event.set()

    def _run(self) -> None:
        failures = 0
        next_poll = self._clock.now()  # poll at once
        while not self._stopped.is_set():
            try:
                now = self._clock.now()
                polled = now >= next_poll
                if polled:
                    next_poll = now + poll_delay(self._poll, self._rng.random())
                    self._hinted = True
                    self._more_due = True  # claim without asking first: orphans are not "due"
                    if self._on_poll is not None:
                        self._on_poll()
                    self._clock.sample()
                timeout = self._step(next_poll, refresh=polled or now >= self._refreshed + REFRESH_GAP)
                failures = 0
            except StoreError as error:
                failures += 1
                log = logger.warning if failures == 1 else logger.info
                log("lease loop: the store failed (%d in a row): %s", failures, error)
                self._hinted = True  # read the references again once it answers
                self._more_due = True  # and claim at once: a claim whose answer was lost left orphans
                timeout = store_retry_pause(failures, self._poll)
            except Exception:  # a bug must not end the claiming
                logger.exception("lease loop failed; it carries on")
                timeout = self._poll
            if self._event.wait(timeout):
                self._event.clear()
                held_back = self._stepped + HINT_GAP - self._clock.now()
                if not self._room and held_back > 0:
                    self._stopped.wait(held_back)  # fold a burst of hints into one look
                self._room = False

    def _step(self, next_poll: float, *, refresh: bool) -> float:
        """Claim what there is room for; return how long to sleep."""
        self._stepped = self._clock.now()
        if self._hinted and refresh:
            self._hinted = False
            self._importable.refresh(self._store)
            self._refreshed = self._clock.now()
        names = self._importable.names
        rooms = self._book.rooms()  # per executor with an idle worker: only those are claimed
        executors = sorted(rooms)
        until_poll = max(0.0, next_poll - self._clock.now())
        if self._hinted:  # references left unread for now: look again when they may be read
            until_poll = min(until_poll, max(0.0, self._refreshed + REFRESH_GAP - self._clock.now()))
        if rooms and names and not self._more_due:
            wakeup = self._store.next_wakeup(names, executors)
            if wakeup is None or wakeup > self._clock.database_now():  # nothing due: no claim
                return max(sleep_for(wakeup, self._clock.database_now(), until_poll), SPIN_PAUSE)
        if rooms and names:
            self._more_due = False
            for executor in executors:  # one claim per pool, each no larger than its room
                room = rooms[executor]
                leases = self._store.claim_due(room, names, [executor], held=self._book.seqs())
                self.acquisitions += 1
                if leases:
                    self._book.acquired(leases, executor)
                    if not self._deliver(leases):
                        self._give_back(leases)
                        return self._poll
                if len(leases) == room:
                    self._more_due = True  # there may be more: claim again as room frees up
            if self._more_due:
                return until_poll
        elif names:
            self._more_due = True  # no room: whatever is due waits for room
            return until_poll
        wakeup = self._store.next_wakeup(names, executors) if names else None
        timeout = sleep_for(wakeup, self._clock.database_now(), until_poll)
        return timeout if timeout > 0 else SPIN_PAUSE

    def _give_back(self, leases: Sequence[Lease]) -> None:
        self._book.forget((lease.seq, lease.fence) for lease in leases)
        try:
            self._store.release(leases)
        except StoreError as error:  # they end with their lease
            logger.warning("could not give back %d leased run(s): %s", len(leases), error)
