"""``LeaseKeeper``: the thread that keeps a node's leases alive while their runs go on.

A run's lease ends ``lease`` seconds after it was taken unless renewed; then another
node may claim the run again. So while a node holds leases, this thread renews all of them
every ``lease / 3`` seconds, in one statement on a connection of its own (``SharedStore.renew``
never waits for the store's pool): a busy scheduler, a long save or a full pool can never let
a lease lapse. Only a stalled process (paused, swapping, cut off) or an unreachable database
can, and then the fence refuses the late outcome.

A lease found lost (another node claimed the row after it ended, or a release) is marked in
the book and logged: the run goes on, and its outcome will be refused (``LeaseBook``). A
renewal also says whether a cancel with ``interrupt`` (from any node) asked a run to stop: the
keeper asks it (``TaskRecord.interrupt``); and whether a ``run_now`` of an ``overlap="replace"``
task asked it to make way (``TaskRecord.make_way``). A hint from the store (``wake``) brings the next
renewal forward, so such a request reaches the run within moments, not a third of a lease.
A renewal extends only the leases ending within ``renew_within`` (half a period short of a
whole lease, ``plan.py``): the renewals hints bring forward (one per saved outcome on a busy
fleet) then find every lease fresh and write nothing, so they cost the database no commit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from actors.errors import StoreError
from actors.shared.lease_book import LeaseBook
from actors.shared.plan import HINTED_RENEWAL_GAP, renew_period, renew_within, store_retry_pause
from actors.store.protocol import Lease, SharedStore
from actors.sync.threads import Role, ThreadRegistry

__all__ = ["LeaseKeeper"]

logger = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews the leases of a ``LeaseBook`` on its own daemon thread. ``start``/``stop``: any thread."""

    def __init__(
        self,
        store: SharedStore,
        book: LeaseBook,
        *,
        threads: ThreadRegistry | None = None,
        on_lost: Callable[[list[Lease]], None] | None = None,
    ) -> None:
        """Prepare the keeper; ``on_lost`` is called (on its thread) with leases found lost."""
        self._store = store
        self._book = book
        self._threads = threads
        self._on_lost = on_lost
        self._period = renew_period(store.lease)
        self._within = renew_within(store.lease)
        self._stopped = threading.Event()
        self._woken = threading.Event()  # a hint: renew soon (a stop may have been asked)
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
        self.renewals = 0  # renewal statements sent (read by tests and stats)

    def start(self) -> None:
        """Start the thread."""
        if self._threads is not None:
            self._threads.add(self._thread, Role.NODE)
        self._thread.start()

    def wake(self) -> None:
        """Renew soon (at most every ``HINTED_RENEWAL_GAP`` seconds): a cheap call, any thread."""
        self._woken.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread and wait for it (up to ``timeout`` seconds). Idempotent."""
        self._stopped.set()
        self._woken.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        failures = 0
        pause = self._period
        while True:
            if self._woken.wait(pause):
                self._woken.clear()
                self._stopped.wait(HINTED_RENEWAL_GAP)  # hints come in bursts: one renewal each
            if self._stopped.is_set():
                return
            try:
                self.renew_now()
            except StoreError as error:
                failures += 1
                logger.warning("could not renew leases (attempt %d): %s", failures, error)
                pause = min(self._period, store_retry_pause(failures, self._period))
                continue
            except Exception:  # a bug must not end the renewals
                logger.exception("lease keeper failed; it carries on")
            failures = 0
            pause = self._period

    def renew_now(self) -> None:
        """Renew every lease held now (the keeper's thread, or a test's).

        Raises:
            StoreError: The renewal failed; the leases stand until they end.
        """
        asked = self._book.renewable()
        if not asked:
            return
        renewed = self._store.renew(asked, due_within=self._within)  # fresh ones: a read, no commit
        self.renewals += 1
        lost, stop, make_way = self._book.renewed_all(asked, renewed)
        for task in stop:
            task.interrupt()  # a cancel with interrupt, from some node: the run is asked to stop
        for task in make_way:
            task.make_way()  # a run_now of an overlap="replace" task, from some node
        if lost:
            logger.warning(
                "lost the lease of %d run(s) (%s): another node may run them; their outcome will be refused",
                len(lost),
                ", ".join(repr(lease.task.task_id) for lease in lost[:5]),
            )
            if self._on_lost is not None:
                self._on_lost(lost)
