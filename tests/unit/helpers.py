"""Helpers shared by the unit tests: build commands and drive a Timetable by hand, no threads.

``Pool`` plays the workers' side of the protocol the way ``WorkerActor`` does: it takes each
run's ``Claim`` before starting it (skipping runs the timetable took back), and claims the
next run of its batch *before* reporting the current one, so the report says whether it is
now idle.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from actors.timetable import Effects, Timetable
from messages import EventKind, RunTask, Schedule, TaskInfo, Trigger

ALL_KINDS = frozenset(EventKind)


def noop() -> None:
    return None


def make(task_id: str, trigger: Trigger, **kwargs: Any) -> Schedule:
    kwargs.setdefault("fn", noop)
    return Schedule(task_id=task_id, trigger=trigger, **kwargs)


def timetable(
    workers: int = 1, *, history: int = 10_000, wanted: frozenset[EventKind] = ALL_KINDS
) -> Timetable:
    table = Timetable(workers=workers, history=history)
    table.wanted = wanted
    return table


def events(effects: Effects) -> list[tuple[EventKind, str, int | None]]:
    return [(e.kind, e.task_id, e.run) for e in effects.events]


def dispatched(effects: Effects) -> list[tuple[int, str, int]]:
    """``(worker, task_id, run)`` for every run handed out."""
    return [(worker, msg.task_id, msg.run) for worker, msg in effects.dispatches]


class Token:
    """A task's token for the single-threaded tests: free, taken for good, or revoked."""

    def __init__(self) -> None:
        self.state = "free"

    def take_token(self) -> bool:
        if self.state != "free":
            return False
        self.state = "taken"
        return True

    def revoke_token(self) -> bool:
        if self.state != "free":
            return False
        self.state = "revoked"
        return True

    def token_revoked(self) -> bool:
        return self.state == "revoked"


class Sink(Token):
    """A TaskSink that records the final ``TaskInfo`` and value of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[TaskInfo, object]] = []

    def task_finished(self, final: Any, value: object) -> None:
        self.calls.append((final.snapshot(), value))


def take(table: Timetable) -> Effects:
    """``take_effects``, then hand each final state to its sink as the scheduler actor does."""
    effects = table.take_effects()
    for sink, final, value in effects.finished:
        sink.task_finished(final, value)
    return effects


class Pool:
    """The workers, played by hand: ``take`` collects effects, ``start``/``finish`` run runs."""

    def __init__(self, table: Timetable) -> None:
        self.table = table
        self.inbox: dict[int, deque[RunTask]] = {}
        self.current: dict[int, RunTask] = {}  # worker -> the run it has claimed and runs
        self.started: list[tuple[int, str, int]] = []  # (worker, task_id, run), in start order
        self.skipped: list[tuple[str, int, float]] = []  # (task_id, run, now) reported Skipped

    def take(self) -> Effects:
        """Take the timetable's effects (sinks told) and deliver its dispatches to the inboxes."""
        return self.receive(take(self.table))

    def receive(self, effects: Effects) -> Effects:
        for worker, msg in effects.dispatches:
            self.inbox.setdefault(worker, deque()).append(msg)
        return effects

    def held(self, worker: int) -> list[RunTask]:
        """Runs handed to ``worker`` that neither it nor the timetable has claimed yet."""
        return [msg for msg in self.inbox.get(worker, ()) if not msg.claim.taken]

    def busy(self, worker: int) -> bool:
        """Whether the timetable should count ``worker`` as holding a run."""
        return worker in self.current or bool(self.held(worker))

    def _claim_next(self, worker: int) -> RunTask | None:
        box = self.inbox.get(worker, deque())
        while box:
            msg = box.popleft()
            if msg.claim.take():
                return msg
        return None

    def _begin(self, worker: int, msg: RunTask | None, now: float) -> RunTask | None:
        """As the worker does with a claimed run: start it if its token allows, else skip it."""
        while msg is not None:
            token = msg.token
            if token is None or (token.take_token() if msg.once else not token.token_revoked()):
                self.current[worker] = msg
                self.started.append((worker, msg.task_id, msg.run))
                return msg
            following = self._claim_next(worker)
            self.table.skipped(worker, msg.task_id, msg.run, now=now, idle=following is None)
            self.skipped.append((msg.task_id, msg.run, now))
            msg = following
        return None

    def start(self, worker: int, now: float = 0.0) -> RunTask | None:
        """``worker`` receives its batch and starts the first run it can claim (skipping cancelled ones)."""
        assert worker not in self.current
        return self._begin(worker, self._claim_next(worker), now)

    def start_all(self, now: float = 0.0) -> list[RunTask]:
        return [msg for w in sorted(self.inbox) if w not in self.current and (msg := self.start(w, now))]

    def finish(
        self,
        worker: int,
        *,
        at: float,
        now: float | None = None,
        value: object = None,
        error: BaseException | None = None,
    ) -> RunTask:
        """``worker`` ends its run at ``at``, claims its next run, reports (at ``now``), starts the next."""
        msg = self.current.pop(worker)
        following = self._claim_next(worker)
        idle = following is None
        now = at if now is None else now
        if error is None:
            self.table.completed(worker, msg.task_id, msg.run, value, finished_at=at, now=now, idle=idle)
        else:
            self.table.failed(worker, msg.task_id, msg.run, error, finished_at=at, now=now, idle=idle)
        self._begin(worker, following, now)
        return msg

    def lose(self, worker: int) -> None:
        """Forget everything ``worker`` held (it died)."""
        self.inbox.pop(worker, None)
        self.current.pop(worker, None)

    def run_everything(self, now: float) -> list[tuple[int, str, int]]:
        """Start and finish (instantly, at ``now``) every run until no worker holds one."""
        first = len(self.started)
        self.take()
        while True:
            self.start_all(now)
            if not self.current:
                return self.started[first:]
            for worker in sorted(self.current):
                self.finish(worker, at=now)
                self.take()
