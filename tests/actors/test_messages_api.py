"""Driving the actors with messages, as pykka users embed them."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pykka
import pytest

from actors import EventBus, FakeClock, SchedulerActor
from messages import (
    Cancel,
    EventKind,
    FixedRate,
    Once,
    QueryNextDue,
    QueryTask,
    Schedule,
    Shutdown,
    TaskEvent,
    TaskStatus,
    Tick,
)


class Collector(pykka.ThreadingActor):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[TaskEvent] = []

    def on_receive(self, message: Any) -> Any:
        if message == "get":
            return list(self.events)
        self.events.append(message)
        return None


def test_schedule_cancel_and_tick_by_message(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    ran: list[float] = []
    s.ref.tell(Schedule(task_id="a", fn=lambda: ran.append(clock.now()), trigger=Once(1005.0)))
    s.ref.tell(Schedule(task_id="b", fn=lambda: ran.append(-1), trigger=Once(1005.0)))
    assert s.ref.ask(Cancel("b"), timeout=5) is True
    assert s.ref.ask(Cancel("b"), timeout=5) is False
    assert s.ref.ask(QueryNextDue(), timeout=5) == 1005.0
    clock.advance(5.0)
    s.ref.tell(Tick())
    s.settle()
    assert ran == [1005.0]
    assert s.ref.ask(QueryTask("a"), timeout=5).status is TaskStatus.COMPLETED
    assert s.ref.ask(QueryTask("zzz"), timeout=5) is None


def test_duplicate_schedule_by_message_is_refused_not_fatal(make_scheduler) -> None:
    s = make_scheduler()
    command = Schedule(task_id="a", fn=print, trigger=Once(2000.0))
    assert s.ref.ask(command, timeout=5) is True
    assert s.ref.ask(command, timeout=5) is False
    s.ref.tell(command)  # refused and logged; the actor lives on
    assert s.ref.ask(Cancel("a"), timeout=5) is True


def test_unknown_messages_are_ignored(make_scheduler) -> None:
    s = make_scheduler()
    s.ref.tell("what is this")
    assert s.ref.ask(object(), timeout=5) is None
    handle = s.schedule_once(lambda: "alive", delay=0)
    assert handle.result(timeout=5) == "alive"


def test_an_actor_listener_is_told_each_event(make_scheduler) -> None:
    s = make_scheduler()
    collector = Collector.start()
    try:
        s.subscribe(collector, kinds=[EventKind.COMPLETED])
        s.schedule_once(lambda: None, delay=0)
        s.settle()
        events = collector.ask("get", timeout=5)
        assert [e.kind for e in events] == [EventKind.COMPLETED]
    finally:
        collector.stop()


def test_scheduler_actor_without_timer_runs_only_on_tick(clock: FakeClock) -> None:
    bus = EventBus.start()
    ref = SchedulerActor.start(clock=clock, bus=bus, workers=1, timer=False)
    ran = threading.Event()
    try:
        ref.tell(Schedule(task_id="r", fn=ran.set, trigger=FixedRate(10.0, 1001.0)))
        clock.advance(1.0)
        assert ref.ask(QueryTask("r"), timeout=5).run_count == 0
        ref.tell(Tick())
        assert ran.wait(5)
    finally:
        drained: Future[None] = Future()
        ref.tell(Shutdown(drained))  # the scheduler then stops its workers, the bus and itself
        drained.result(timeout=5)
        assert ref.actor_stopped.wait(5)
        assert bus.actor_stopped.wait(5)


def test_worker_rejects_nothing_it_does_not_know(make_scheduler) -> None:
    from actors import WorkerActor

    s = make_scheduler(workers=1)
    s.stats()  # the pool starts on the scheduler's thread; this waits for it
    (worker,) = pykka.ActorRegistry.get_by_class(WorkerActor)
    worker.tell("junk")
    assert s.schedule_once(lambda: 1, delay=0).result(timeout=5) == 1


@pytest.mark.parametrize("kind", list(EventKind))
def test_every_event_kind_is_named(kind: EventKind) -> None:
    assert kind.value == kind.name.lower()


def test_minted_ids_never_clash_whatever_arrives_through_the_ref(make_scheduler) -> None:
    s = make_scheduler()
    with pytest.raises(ValueError, match="reserved"):  # the form is the mint's alone
        Schedule(task_id="task-1", fn=print, trigger=Once(5000.0))
    minted_by_message = s.ref.ask(Schedule(fn=print, trigger=Once(5000.0)), timeout=5)
    assert isinstance(minted_by_message, str)
    assert minted_by_message.startswith("task-")
    handle = s.schedule_once(lambda: "ran", delay=0)
    assert handle.task_id != minted_by_message  # one mint for the facade and the ref
    assert handle.result(timeout=5) == "ran"
    assert s.cancel(minted_by_message) is True


def test_schedule_with_an_id_by_ask_replies_true(make_scheduler) -> None:
    s = make_scheduler()
    assert s.ref.ask(Schedule(task_id="mine", fn=print, trigger=Once(5000.0)), timeout=5) is True
    assert s.ref.ask(Schedule(task_id="mine", fn=print, trigger=Once(5000.0)), timeout=5) is False
