"""``LeaseBook``: the leases one node of a shared store holds, and its room for more.

Four threads meet here, each briefly, under one lock: the lease loop (claims runs, up to the
room there is), the scheduler actor (hands leased runs to its workers, saves their outcomes,
says how many workers are idle), the workers (record that a run starts) and the lease keeper
(renews every lease still held, notes those lost). Nothing here talks to the store or calls
out while holding the lock.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from actors.core.task_record import THREADS
from actors.shared.plan import claim_ahead, lease_limit, typical_run
from actors.store.protocol import Lease

__all__ = ["Held", "LeaseBook", "Stoppable"]


class Stoppable(Protocol):
    """A task whose run in progress can be asked to stop (``TaskRecord.interrupt``), from any thread."""

    def interrupt(self) -> bool:
        """Ask the run in progress, if any, to stop; whether this asked it."""

    def make_way(self) -> bool:
        """Ask the run in progress, if any, to make way for the next (``overlap="replace"``)."""


@dataclass(slots=True)
class Held:
    """One lease the node holds, and what became of its run.

    Attributes:
        lease: The lease as last renewed.
        started: When the run started (database clock; ``SharedStore.start``), if it did.
        lost: The lease was found lost at a renewal: the run's outcome will be refused.
        task: The task the run belongs to, once the scheduler has it (to ask its run to stop).
        stop_asked: Its run was asked to stop (a cancel with ``interrupt`` from some node).
        make_way_asked: Its run was asked to make way (a ``run_now`` of an ``overlap="replace"``
            task, from some node).
        saving: Its outcome is being saved, which ends the lease. Still renewed meanwhile (a
            save may wait for a lock or a connection longer than a lease: were the lease let
            go, this node or another would claim the run again and run it twice); but a
            renewal that finds it gone does not call it lost, since the save may have ended it.
        declined: The scheduler would not take the run (its id is a memory task's here, or
            its row cannot be loaded): not renewed, and kept so that this node does not claim
            it again; it ends with its lease, and other nodes may run it then.
        start_failed: Its worker could not ask the store whether the run may start (the store
            failed): the run never started, so there is no outcome to save; it is given back.
        run_starts: For an ``overlap="allow"`` task, whose runs go on beside one another under
            this one lease: when each run started (database clock), by run number.
        refused_due: For such a task: the earliest due time (UTC epoch seconds) of a run whose
            start the store refused (a pause from some node, or the lease lost): the row is
            given back due then, so that slot is the paused task's to catch up on its resume.
    """

    lease: Lease
    started: float | None = None
    lost: bool = False
    task: Stoppable | None = None
    stop_asked: bool = False
    make_way_asked: bool = False
    saving: bool = False
    declined: bool = False
    start_failed: bool = False
    run_starts: dict[int, float] | None = None
    refused_due: float | None = None
    executor: str = THREADS
    arrived: bool = False
    began: float | None = None  # when the run started (monotonic clock): how long runs take

    def waiting(self) -> bool:
        """Handed to the scheduler and not started, nor ended: a run waiting for (or at) a worker."""
        return (
            self.arrived
            and self.started is None
            and not (self.saving or self.declined or self.start_failed or self.lost)
        )


class LeaseBook:
    """The node's leases by row (``seq``), and its idle workers per pool. Every method: any thread.

    Room is counted per executor (the thread pool, the process pool): a node claims a run only
    into a pool that has an idle worker for it.
    """

    def __init__(self, workers: Mapping[str, int] | None = None) -> None:
        """Start with nothing held and no room (the scheduler says how many workers are idle).

        ``workers``: per executor, the pool's size, if runs may be claimed ahead of the idle
        workers while the runs are short (``plan.claim_ahead``); none by default.
        """
        # _lock guards every field: each method holds it for a few dict operations.
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}
        self._workers = dict(workers or {})
        self._ahead: dict[str, int] = {}  # per executor, from the pool's size and _typical
        self._typical: dict[str, float] = {}  # per executor, a run's typical seconds (plan.typical_run)
        self._idle: dict[str, int] = {}  # per executor
        self._in_transit: dict[int, str] = {}  # seq -> executor: claimed, not yet taken by the scheduler
        self._claimed = 0  # leases acquired since the node started (taskscheduler_claims_total)

    # -- room --------------------------------------------------------------------------------

    def set_idle(self, idle: Mapping[str, int]) -> bool:
        """The scheduler's idle workers now, per executor (scheduler's thread); whether any pool has more."""
        with self._lock:
            more = any(count > self._idle.get(executor, 0) for executor, count in idle.items())
            self._idle.update(idle)
            return more

    def rooms(self) -> dict[str, int]:
        """How many runs each executor with room may claim now: idle workers less leases on their way.

        With runs ahead (``ahead``): and as many as may wait for a worker, less those waiting.
        """
        with self._lock:
            rooms = self._rooms()
        return {executor: room for executor, room in rooms.items() if room > 0}

    def _rooms(self) -> dict[str, int]:
        in_transit = Counter(self._in_transit.values())
        waiting = Counter(held.executor for held in self._held.values() if held.waiting())
        return {
            executor: lease_limit(
                idle, in_transit[executor], self._ahead.get(executor, 0), waiting.get(executor, 0)
            )
            for executor, idle in self._idle.items()
        }

    # -- holding -----------------------------------------------------------------------------

    def acquired(self, leases: Sequence[Lease], executor: str = THREADS) -> None:
        """Hold new leases claimed for ``executor``'s pool (lease loop); on their way until ``arrived``."""
        with self._lock:
            self._claimed += len(leases)
            for lease in leases:
                self._held[lease.seq] = Held(lease, executor=executor)
                self._in_transit[lease.seq] = executor

    @property
    def claimed(self) -> int:
        """Leases acquired (``acquired``) since the book was made: the runs this node claimed."""
        with self._lock:
            return self._claimed

    def arrived(self, leases: Sequence[Lease]) -> None:
        """The scheduler has taken these leases (its idle counts will say so from now on)."""
        with self._lock:
            for lease in leases:
                executor = self._in_transit.pop(lease.seq, None)
                if executor is not None:
                    self._idle[executor] = max(0, self._idle.get(executor, 0) - 1)
                held = self._held.get(lease.seq)
                if held is not None and held.lease.fence == lease.fence:
                    held.arrived = True

    def get(self, seq: int) -> Held | None:
        """The lease held on row ``seq``, if any."""
        with self._lock:
            return self._held.get(seq)

    def attach(self, seq: int, task: Stoppable) -> None:
        """The scheduler took the leased run of row ``seq`` as ``task``."""
        with self._lock:
            held = self._held.get(seq)
            if held is not None:
                held.task = task

    def start(self, seq: int, at: float, run: int | None = None) -> bool:
        """Record that the run of row ``seq`` started at ``at`` (database clock).

        ``run``: the run's number, for one of several runs beside one another under the lease
        (``overlap="allow"``): ``started`` is then the first run's start. Returns whether that
        made room for a claim of runs ahead (``ahead``): the lease loop is then worth waking.
        """
        with self._lock:
            held = self._held.get(seq)
            if held is None:
                return False
            if held.started is None:
                held.started = at
                held.began = time.monotonic()
            if run is not None:
                if held.run_starts is None:
                    held.run_starts = {}
                held.run_starts[run] = at
            return self._ahead.get(held.executor, 0) > 0 and self._rooms().get(held.executor, 0) > 0

    def run_started(self, seq: int, run: int) -> float | None:
        """When run ``run`` under the lease of row ``seq`` started (``start`` with ``run``), if known."""
        with self._lock:
            held = self._held.get(seq)
            if held is None or held.run_starts is None:
                return None
            return held.run_starts.get(run)

    def refused_beside(self, seq: int, due: float | None) -> None:
        """A run beside others under the lease of row ``seq`` was refused its start (its worker's thread).

        The lease goes on for the runs going; ``due`` (UTC epoch seconds) is the refused run's slot.
        """
        with self._lock:
            held = self._held.get(seq)
            if held is not None and due is not None and (held.refused_due is None or due < held.refused_due):
                held.refused_due = due

    def start_failed(self, seq: int) -> None:
        """The run of row ``seq`` did not start: the store failed, or refused it (its worker's thread).

        Its outcome is not saved: the lease is given back (or ends).
        """
        with self._lock:
            held = self._held.get(seq)
            if held is not None:
                held.start_failed = True

    def saving(self, keys: Iterable[tuple[int, int]], saving: bool = True) -> None:
        """The outcomes of these leases, by ``(seq, fence)``, are being saved (``saving=False``: not).

        By fence, as ``forget``: a row may be leased here again, under a new fence, meanwhile.
        """
        with self._lock:
            for seq, fence in keys:
                held = self._held.get(seq)
                if held is not None and held.lease.fence == fence:
                    held.saving = saving
                    if saving and held.began is not None:  # its run ended: how long it took
                        self._ran(held.executor, time.monotonic() - held.began)
                        held.began = None

    def _ran(self, executor: str, seconds: float) -> None:
        typical = self._typical[executor] = typical_run(self._typical.get(executor), seconds)
        workers = self._workers.get(executor, 0)
        self._ahead[executor] = claim_ahead(workers, typical) if workers else 0

    def decline(self, seq: int) -> None:
        """The scheduler would not take the run of row ``seq``: let its lease end, and never claim it here."""
        with self._lock:
            held = self._held.get(seq)
            if held is not None:
                held.declined = True

    def seqs(self) -> list[int]:
        """The rows held (lease loop): a claim must not take one of them again (``SharedStore.claim_due``)."""
        with self._lock:
            return list(self._held)

    def forget(self, keys: Iterable[tuple[int, int]]) -> list[Lease]:
        """Stop holding these leases, by ``(seq, fence)`` (saved, or given up); return them.

        By fence, not by row alone: once an outcome is committed its row is free, and the lease
        loop may claim it again here (its next slot) before the saver's thread forgets the old
        lease. Forgetting by row would drop the new lease with it: its run would start, and the
        next claim would take the row, still showing that slot, as an orphan of this node
        (``SharedStore.claim_due``) and run the same slot again.
        """
        with self._lock:
            forgotten: list[Lease] = []
            for seq, fence in keys:
                held = self._held.get(seq)
                if held is not None and held.lease.fence == fence:
                    del self._held[seq]
                    forgotten.append(held.lease)
            return forgotten

    def unstarted(self) -> list[Lease]:
        """The leases whose run has not started: what a stopping node gives back."""
        with self._lock:
            return [held.lease for held in self._held.values() if held.started is None]

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    # -- renewing (lease keeper) -------------------------------------------------------------

    def renewable(self) -> list[Lease]:
        """The leases to renew: every one held, not known lost and not declined (saving ones too)."""
        with self._lock:
            return [held.lease for held in self._held.values() if not held.lost and not held.declined]

    def renewed(
        self, asked: Sequence[Lease], renewed: Sequence[Lease]
    ) -> tuple[list[Lease], list[Stoppable]]:
        """Take a renewal's answer: keep the new expiries.

        Returns:
            The leases asked for but lost, and the tasks whose run was newly asked to stop.
            The tasks whose run was newly asked to make way are ``make_way`` (the next call).
        """
        lost, stop, _ = self.renewed_all(asked, renewed)
        return lost, stop

    def renewed_all(
        self, asked: Sequence[Lease], renewed: Sequence[Lease]
    ) -> tuple[list[Lease], list[Stoppable], list[Stoppable]]:
        """Take a renewal's answer (as ``renewed``); also the tasks whose run was newly asked to make way."""
        fresh = {(lease.seq, lease.fence): lease for lease in renewed}
        lost: list[Lease] = []
        stop: list[Stoppable] = []
        make_way: list[Stoppable] = []
        with self._lock:
            for lease in asked:
                held = self._held.get(lease.seq)
                if held is None or held.lease.fence != lease.fence:
                    continue  # forgotten meanwhile (saved or given up)
                new = fresh.get((lease.seq, lease.fence))
                if new is None:
                    if held.saving:
                        continue  # its save may have ended it: the save's answer says
                    held.lost = True
                    lost.append(lease)
                    continue
                held.lease = dataclasses.replace(
                    held.lease,
                    expires=new.expires,
                    db_now=new.db_now,
                    stop_requested=new.stop_requested,
                    make_way_requested=new.make_way_requested,
                )
                if new.stop_requested and not held.stop_asked and held.task is not None:
                    held.stop_asked = True
                    stop.append(held.task)
                if new.make_way_requested and not held.make_way_asked and held.task is not None:
                    held.make_way_asked = True
                    make_way.append(held.task)
        return lost, stop, make_way
