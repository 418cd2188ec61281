"""The three small pieces under the scheduler, tested directly: TimerThread, Outbox, FakeClock.watch."""

from __future__ import annotations

import queue
import sys
import threading
from typing import Any

import pykka
import pytest

from actors import FakeClock
from actors.runtime.timer import TimerThread
from actors.sync.outbox import Outbox
from messages import Tick

WAIT = 5.0


class TickCounter(pykka.ThreadingActor):
    """Counts the ticks it is told; ``ask("count")`` answers how many."""

    use_daemon_thread = True

    def __init__(self) -> None:
        super().__init__()
        self.ticks = 0
        self.ticked = threading.Event()

    def on_receive(self, message: Any) -> Any:
        if message == "count":
            return self.ticks
        if isinstance(message, Tick):
            self.ticks += 1
            self.ticked.set()
        return None


@pytest.fixture
def counter() -> Any:
    ref = TickCounter.start()
    yield ref
    ref.stop()


def ticks(ref: Any) -> int:
    return ref.ask("count", timeout=WAIT)  # type: ignore[no-any-return]


# -- TimerThread ------------------------------------------------------------------------------


def test_timer_tells_one_tick_when_the_armed_deadline_comes(counter: Any, clock: FakeClock) -> None:
    timer = TimerThread(clock, counter)
    timer.start()
    try:
        timer.arm(clock.now() + 10)
        clock.advance(9.999)
        assert ticks(counter) == 0
        clock.advance(0.001)
        actor = counter._actor_weakref()
        assert actor.ticked.wait(WAIT)
        clock.advance(100)  # disarmed after it fired: nothing more until armed again
        assert ticks(counter) == 1
    finally:
        timer.stop(timeout=WAIT)
    assert not timer.thread.is_alive()


def test_timer_rearmed_earlier_or_disarmed(counter: Any, clock: FakeClock) -> None:
    timer = TimerThread(clock, counter)
    timer.start()
    try:
        timer.arm(clock.now() + 3600)
        timer.arm(clock.now() + 1)  # an earlier head: the timer must not sleep an hour
        timer.arm(None)  # and then nothing
        clock.advance(7200)
        assert ticks(counter) == 0
        timer.arm(clock.now())  # due already
        assert counter._actor_weakref().ticked.wait(WAIT)
    finally:
        timer.stop(timeout=WAIT)


def test_timer_sleeps_without_waking_while_nothing_is_due(counter: Any, clock: FakeClock) -> None:
    timer = TimerThread(clock, counter)
    timer.start()
    try:
        timer.arm(clock.now() + 1e10)  # far beyond threading.TIMEOUT_MAX: must simply wait
        for _ in range(100):
            clock.advance(60)
        assert timer.wakeups <= 1  # at most the wake-up of the arming itself
        assert timer.thread.is_alive()
    finally:
        timer.stop(timeout=WAIT)


def test_timer_exits_when_its_target_is_gone(clock: FakeClock) -> None:
    ref = TickCounter.start()
    timer = TimerThread(clock, ref)
    timer.start()
    ref.stop()
    timer.arm(clock.now())  # the tick finds the actor dead: the timer ends quietly
    timer.thread.join(WAIT)
    assert not timer.thread.is_alive()
    timer.stop()  # idempotent, and fine after the thread ended


# -- Outbox -----------------------------------------------------------------------------------


def test_outbox_wakes_once_per_batch_and_keeps_order() -> None:
    box: Outbox[int] = Outbox()
    assert box.put(1) is True  # the first since the last drain: tell the actor Drain()
    assert box.put(2) is False
    assert box.drain() == [1, 2]
    assert box.drain() == []
    assert box.put(3) is True


def test_outbox_from_many_threads_delivers_everything_once() -> None:
    box: Outbox[tuple[int, int]] = Outbox()
    start = threading.Barrier(8)
    wakes = []

    def producer(p: int) -> None:
        start.wait(WAIT)
        for i in range(2000):
            if box.put((p, i)):
                wakes.append(1)

    threads = [threading.Thread(target=producer, args=(p,)) for p in range(8)]
    seen: list[tuple[int, int]] = []
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        seen += box.drain()
    for thread in threads:
        thread.join(WAIT)
    seen += box.drain()
    assert sorted(seen) == [(p, i) for p in range(8) for i in range(2000)]
    for p in range(8):  # each producer's items in its own order
        assert [i for q, i in seen if q == p] == list(range(2000))
    assert 1 <= len(wakes) <= len(seen)


def test_outbox_wait_for_room_returns_once_the_actor_drains() -> None:
    box: Outbox[int] = Outbox()
    for i in range(10):
        box.put(i)
    assert box.wait_for_room(10, timeout=WAIT)  # room enough: at once
    waited = threading.Event()

    def producer() -> None:
        assert box.wait_for_room(4, timeout=WAIT)
        waited.set()

    thread = threading.Thread(target=producer)
    thread.start()
    assert not waited.wait(0.05)  # no drain, no room (a bounded check that it does wait)
    assert box.drain() == list(range(10))
    assert waited.wait(WAIT)
    thread.join(WAIT)
    assert box.backlog == 0


def test_outbox_wait_for_room_gives_up_after_its_timeout() -> None:
    box: Outbox[int] = Outbox()
    box.put(1)
    box.put(2)
    assert box.wait_for_room(1, timeout=0.01) is False
    assert box.drain() == [1, 2]  # nothing lost


def test_outbox_no_item_is_left_without_a_drain_to_deliver_it() -> None:
    """The actor drains only when told (a mailbox); once the producers stop and the told drains
    are handled, nothing is left behind: an item either rode on a drain or its put told one.
    Many short trials, since a stranded item shows only at the end of one."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between almost any two bytecodes
    try:
        for _ in range(150):
            _outbox_trial(producers=3, items=30)
    finally:
        sys.setswitchinterval(interval)


def _outbox_trial(producers: int, items: int) -> None:
    box: Outbox[tuple[int, int]] = Outbox()
    mailbox: queue.Queue[str] = queue.Queue()
    start = threading.Barrier(producers + 1)
    done = threading.Event()
    seen: list[tuple[int, int]] = []

    def actor() -> None:
        start.wait(WAIT)
        while not (done.is_set() and mailbox.empty()):
            try:
                mailbox.get(timeout=0.001)
            except queue.Empty:
                continue
            seen.extend(box.drain())

    def producer(p: int) -> None:
        start.wait(WAIT)
        for i in range(items):
            if box.put((p, i)):
                mailbox.put("Drain")

    consumer = threading.Thread(target=actor)
    threads = [threading.Thread(target=producer, args=(p,)) for p in range(producers)]
    for thread in [consumer, *threads]:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    done.set()
    consumer.join(WAIT)
    assert not consumer.is_alive()
    assert sorted(seen) == [(p, i) for p in range(producers) for i in range(items)], "an item was stranded"


# -- FakeClock.watch --------------------------------------------------------------------------


def test_fake_clock_calls_watchers_when_it_moves_until_unwatched() -> None:
    clock = FakeClock(start=5.0)
    calls: list[float] = []
    unwatch = clock.watch(lambda: calls.append(clock.now()))
    clock.advance(1.5)
    clock.advance_to(10.0)
    unwatch()
    clock.advance(1.0)
    assert calls == [6.5, 10.0]
    unwatch()  # idempotent


def test_fake_clock_refuses_to_go_backwards_and_changes_nothing() -> None:
    clock = FakeClock(start=5.0)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance_to(4.0)
    assert clock.now() == 5.0
