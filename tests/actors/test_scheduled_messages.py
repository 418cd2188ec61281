"""Scheduled messages (``tell_*``) and triggers relative to the scheduler's clock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pykka
import pytest

from actors import FakeClock, Scheduler
from messages import Cron, EventKind, FixedDelay, FixedRate, Once, Schedule, TaskStatus
from tests.conftest import EventRecorder


class Ping:
    pass


class Receiver(pykka.ThreadingActor):
    """Keeps what it receives; ``ask``-ing it anything returns the list."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list[Any] = []

    def on_receive(self, message: Any) -> Any:
        if message == "received?":
            return list(self.received)
        self.received.append(message)
        return None


@pytest.fixture
def receiver() -> Iterator[pykka.ActorRef[Receiver]]:
    ref = Receiver.start()
    yield ref
    ref.stop()


def received(ref: pykka.ActorRef[Receiver]) -> list[Any]:
    return ref.ask("received?", timeout=5)  # type: ignore[no-any-return]


def test_tell_once_sends_on_the_scheduler_thread_while_every_worker_is_busy(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler(workers=1)
    got = threading.Event()
    ref = Signal.start(got)
    release = threading.Event()
    try:
        blocker = s.schedule_once(release.wait, 0.0, args=(10.0,))
        handle = s.tell_once(ref, Ping(), 5.0)
        clock.advance(5.0)
        assert got.wait(5.0)  # the only worker is still blocked
        assert handle.result(timeout=5) is None
        assert handle.info().status is TaskStatus.COMPLETED
        assert handle.info().name == "Ping -> Signal"
        release.set()
        blocker.result(timeout=5)
    finally:
        release.set()
        ref.stop()


class Signal(pykka.ThreadingActor):
    """Sets an event when it receives anything."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__()
        self.event = event

    def on_receive(self, message: Any) -> None:
        self.event.set()


def test_tell_at_fixed_rate_and_tell_cron_deliver_on_their_slots(
    make_scheduler: Callable[..., Scheduler], receiver: pykka.ActorRef[Receiver], clock: FakeClock
) -> None:
    s = make_scheduler()
    rate = s.tell_at_fixed_rate(receiver, "tick", 10.0, initial_delay=10.0, name="ticker")
    cron = s.tell_cron(receiver, "hourly", "0 * * * *")
    s.advance(3600.0)
    assert received(receiver).count("tick") == 360
    assert received(receiver).count("hourly") == 1
    assert rate.info().name == "ticker"
    assert cron.info().trigger == Cron("0 * * * *", "UTC")
    assert {info.name for info in s.tasks()} == {"ticker", "str -> Receiver"}


def test_a_dead_actor_ends_the_task_failed(
    make_scheduler: Callable[..., Scheduler], receiver: pykka.ActorRef[Receiver], recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.COMPLETED, EventKind.FAILED})
    once = s.tell_once(receiver, "late", 10.0)
    rate = s.tell_at_fixed_rate(receiver, "tick", 1.0, initial_delay=1.0)
    s.advance(1.0)
    receiver.stop()
    s.advance(10.0)
    with pytest.raises(pykka.ActorDeadError):
        once.result(timeout=5)
    with pytest.raises(pykka.ActorDeadError):
        rate.result(timeout=5)
    info = rate.info()
    assert info.status is TaskStatus.FAILED
    assert info.run_count == 2  # one delivered, then the failed one ended it
    assert info.end_reason == "its message could not be delivered: the actor was dead"
    assert [(e.kind, e.final) for e in recorder.events if e.task_id == rate.task_id] == [
        (EventKind.COMPLETED, False),
        (EventKind.FAILED, True),
    ]


def test_message_tasks_stay_in_memory_with_a_store(
    tmp_path: Any, make_scheduler: Callable[..., Scheduler], receiver: pykka.ActorRef[Receiver]
) -> None:
    s = make_scheduler(store=tmp_path / "s.db")
    handle = s.tell_once(receiver, "hello", 1.0)
    s.advance(1.0)
    assert handle.result(timeout=5) is None
    assert received(receiver) == ["hello"]


def test_tell_refuses_what_is_not_an_actor_ref(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    with pytest.raises(TypeError, match="ActorRef"):
        s.tell_once(print, "x", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="interval"):
        s.tell_at_fixed_rate(pykka.ActorRef.__new__(pykka.ActorRef), "x", 0.0)  # type: ignore[call-overload]


def test_relative_triggers_count_from_when_the_scheduler_receives_the_schedule(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    runs: list[tuple[str, float]] = []

    def record(label: str) -> None:
        runs.append((label, clock.now()))

    minted = s.ref.ask(Schedule(fn=record, args=("once",), trigger=Once(delay=5.0)), timeout=5)
    assert isinstance(minted, str)
    assert minted.startswith("task-")
    s.ref.ask(
        Schedule(fn=record, args=("rate",), trigger=FixedRate(10.0, initial_delay=2.0), task_id="r"),
        timeout=5,
    )
    s.ref.ask(Schedule(fn=record, args=("delay",), trigger=FixedDelay(10.0), task_id="d"), timeout=5)
    s.advance(13.0)
    assert runs == [
        ("delay", 1000.0),
        ("rate", 1002.0),
        ("once", 1005.0),
        ("delay", 1010.0),
        ("rate", 1012.0),
    ]
    assert s.info("r").trigger == FixedRate(10.0, 1002.0)  # shown resolved, on the clock


@pytest.mark.parametrize(
    "make",
    [
        Once,
        lambda: Once(1.0, delay=2.0),
        lambda: FixedRate(1.0, 5.0, initial_delay=2.0),
        lambda: FixedDelay(1.0, 5.0, initial_delay=2.0),
        lambda: Once(delay=float("nan")),
        lambda: FixedRate(1.0, initial_delay=float("inf")),
    ],
)
def test_relative_triggers_are_checked(make: Callable[[], object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each message differs; that it raises is the point
        make()


def test_at_datetime_works_for_tell_once(
    make_scheduler: Callable[..., Scheduler], receiver: pykka.ActorRef[Receiver], clock: FakeClock
) -> None:
    s = make_scheduler()
    s.tell_once(receiver, "new year", at=clock.wall() + timedelta(minutes=1))
    s.advance(59.0)
    assert received(receiver) == []
    s.advance(1.0)
    assert received(receiver) == ["new year"]
