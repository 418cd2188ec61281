"""The scheduler actor's ``Home``: its one code path calls it, whatever the store.

A home made here (a ``MemoryHome`` that records its calls, and may refuse a run's start) shows
what the actor asks of every home, memory, SQLite and a shared node alike, and on which thread.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pykka

from actors import FakeClock, SchedulerActor
from actors.core.task_record import TaskRecord
from actors.core.timetable import Timetable
from actors.runtime.home import MemoryHome, StoreHome, local_home
from actors.store import open_store
from actors.sync.threads import ThreadRegistry
from actors.sync.token import FREE
from messages import (
    Cancel,
    FindTask,
    Once,
    QueryTask,
    RunTask,
    Schedule,
    Shutdown,
    TaskEvent,
    TaskStatus,
    Tick,
)


class RecordingHome(MemoryHome):
    """A memory home that records what the actor asks of it, and refuses the runs of ``refuse``."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse
        self.calls: list[str] = []
        self.checks: list[tuple[str, object, str]] = []  # (task id, token state, thread name)

        self.start_check = self._check

    def _check(self, run: RunTask) -> bool:
        task = run.task
        assert isinstance(task, TaskRecord)
        self.checks.append((run.task_id, task.token_state, threading.current_thread().name))
        return run.task_id != self.refuse

    def start(self, scheduler: pykka.ActorRef[Any], threads: ThreadRegistry | None) -> None:
        self.calls.append("start")

    def cancel(
        self, task_id: str, task: TaskRecord | None, core: Timetable, now: float, *, interrupt: bool
    ) -> tuple[bool | Exception, Sequence[TaskEvent]]:
        self.calls.append(f"cancel {task_id}")
        return super().cancel(task_id, task, core, now, interrupt=interrupt)

    def shut_down(self) -> None:
        self.calls.append("shut_down")

    def after_message(self, core: Timetable) -> None:
        if self.calls[-1:] != ["after_message"]:  # one entry for a run of them
            self.calls.append("after_message")

    def close(self) -> None:
        self.calls.append("close")


def test_a_worker_asks_the_homes_start_check_before_the_token_moves_and_a_refusal_skips_the_run(
    clock: FakeClock,
) -> None:
    home = RecordingHome(refuse="no")
    ref = SchedulerActor.start(clock=clock, workers=1, timer=False, home=home)
    ran: list[str] = []
    try:
        ref.ask(Schedule(task_id="yes", fn=lambda: ran.append("yes"), trigger=Once(1001.0)), timeout=5)
        ref.ask(Schedule(task_id="no", fn=lambda: ran.append("no"), trigger=Once(1001.0)), timeout=5)
        records = [ref.ask(FindTask(task_id), timeout=5) for task_id in ("yes", "no")]
        clock.advance(1.0)
        ref.tell(Tick())
        for record in records:
            assert isinstance(record, TaskRecord)
            assert record.wait_ended(timeout=5)  # the run's end, or the refused run's cancel
        assert ref.ask(QueryTask("yes"), timeout=5).status is TaskStatus.COMPLETED
        assert ref.ask(QueryTask("no"), timeout=5).status is TaskStatus.CANCELLED
        assert ran == ["yes"]
        assert ref.ask(QueryTask("no"), timeout=5).run_count == 0
        assert sorted(task_id for task_id, _, _ in home.checks) == ["no", "yes"]
        assert all(state is FREE for _, state, _ in home.checks)  # asked before the token moved
        assert all(name.startswith("WorkerActor") for _, _, name in home.checks)  # on the worker
    finally:
        drained: Future[None] = Future()
        ref.tell(Shutdown(drained))
        drained.result(timeout=5)
        assert ref.actor_stopped.wait(5)


def test_the_actor_calls_its_home_through_its_life_and_cancels_through_it(clock: FakeClock) -> None:
    home = RecordingHome(refuse="")
    ref = SchedulerActor.start(clock=clock, workers=1, timer=False, home=home)
    ref.ask(Schedule(task_id="later", fn=print, trigger=Once(5000.0)), timeout=5)
    assert ref.ask(Cancel("later"), timeout=5) is True
    drained: Future[None] = Future()
    ref.tell(Shutdown(drained))
    drained.result(timeout=5)
    assert ref.actor_stopped.wait(5)
    assert home.calls[0] == "start"
    assert "cancel later" in home.calls
    assert home.calls[-1] == "close"
    assert home.calls.index("shut_down") < home.calls.index("close")


def test_the_local_homes_need_no_start_check_and_keep_durable_runs(tmp_path: Path) -> None:
    memory = local_home(None)
    assert isinstance(memory, MemoryHome)
    assert (memory.start_check, memory.durable_runs_once) == (None, False)
    store = open_store(tmp_path / "tasks.db")
    home = local_home(store)
    assert isinstance(home, StoreHome)
    assert (home.start_check, home.durable_runs_once) == (None, False)
    home.close()  # closes the store: another can open the file now
    open_store(tmp_path / "tasks.db").close()


def test_a_scheduler_of_its_own_store_is_not_shared(tmp_path: Path) -> None:
    from actors import Scheduler

    for store in (None, tmp_path / "tasks.db"):
        s = Scheduler(workers=1, store=store)
        try:
            assert s.is_shared is False
        finally:
            s.shutdown()
