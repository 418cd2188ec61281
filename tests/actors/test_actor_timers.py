"""Keyed actor timers (``ActorTimers``, ``TimersMixin``) and ``settle(also=...)``, on the FakeClock."""

from __future__ import annotations

import gc
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pykka
import pytest

from actors import ActorTimers, FakeClock, Scheduler, TimersMixin
from messages import TaskStatus, TimerFired


@dataclass(frozen=True)
class Do:
    """Run ``fn(actor)`` on the actor's thread; the reply is what it returns."""

    fn: Callable[[Any], object]


@dataclass(frozen=True)
class Hold:
    """Keep the actor busy until ``gate`` is set, then run ``then(actor)``."""

    held: threading.Event
    gate: threading.Event
    then: Callable[[Any], object]


class Timed(TimersMixin, pykka.ThreadingActor):
    """Keeps every message its handler gets, with the clock time it got it."""

    def __init__(self, scheduler: Scheduler, work: float = 0.0) -> None:
        super().__init__()
        self.timers = ActorTimers(scheduler, self.actor_ref)
        self.clock = scheduler.clock
        self.work = work  # clock seconds each message takes to handle (a FakeClock is moved)
        self.received: list[tuple[object, float]] = []
        self.stopped = False

    def on_receive(self, message: Any) -> Any:
        match message:
            case Do(fn):
                return fn(self)
            case Hold(held, gate, then):
                held.set()
                assert gate.wait(10)
                return then(self)
            case _:
                self.received.append((message, self.clock.now()))
                if self.work:
                    assert isinstance(self.clock, FakeClock)
                    self.clock.advance(self.work)
                return None

    def on_stop(self) -> None:
        self.stopped = True


def do(ref: pykka.ActorRef[Any], fn: Callable[[Any], object]) -> Any:
    return ref.ask(Do(fn), timeout=5)


def messages_of(ref: pykka.ActorRef[Any]) -> list[object]:
    return [message for message, _ in do(ref, lambda a: list(a.received))]


def times_of(ref: pykka.ActorRef[Any]) -> list[float]:
    return [at for _, at in do(ref, lambda a: list(a.received))]


@pytest.fixture
def scheduler(make_scheduler: Callable[..., Scheduler]) -> Scheduler:
    return make_scheduler()


@pytest.fixture
def timed(scheduler: Scheduler) -> Iterator[pykka.ActorRef[Timed]]:
    ref = Timed.start(scheduler)
    yield ref
    if ref.is_alive():
        ref.stop()


def test_a_replaced_single_timer_delivers_only_the_new_message(
    scheduler: Scheduler, timed: pykka.ActorRef[Timed]
) -> None:
    do(timed, lambda a: a.timers.start_single("k", "old", 5.0))
    do(timed, lambda a: a.timers.start_single("k", "new", 8.0))
    scheduler.advance(20.0, also=[timed])
    assert messages_of(timed) == ["new"]
    assert times_of(timed) == [1008.0]
    assert do(timed, lambda a: a.timers.is_active("k")) is False  # a single timer ends when received
    assert scheduler.tasks() == []


@pytest.mark.parametrize("how", ["cancel", "restart"])
def test_a_message_already_in_the_mailbox_is_never_handled_after_cancel_or_restart(
    scheduler: Scheduler, timed: pykka.ActorRef[Timed], how: str
) -> None:
    do(timed, lambda a: a.timers.start_single("k", "old", 5.0))
    held, gate = threading.Event(), threading.Event()

    def cancel_or_restart(actor: Timed) -> None:
        if how == "cancel":
            assert actor.timers.cancel("k") is True
        else:
            actor.timers.start_single("k", "new", 5.0)

    timed.tell(Hold(held, gate, cancel_or_restart))
    assert held.wait(5)
    scheduler.advance(5.0)  # the scheduler tells the old message while the actor is busy
    assert timed.actor_inbox.qsize() == 1  # ... so it waits in the mailbox
    gate.set()
    scheduler.settle(also=[timed])
    assert messages_of(timed) == []
    assert do(timed, lambda a: a.timers.dropped) == 1
    scheduler.advance(10.0, also=[timed])
    assert messages_of(timed) == ([] if how == "cancel" else ["new"])
    assert do(timed, lambda a: a.timers.dropped) == 1


def test_a_fixed_rate_timer_delivers_n_messages_over_n_intervals(
    scheduler: Scheduler, timed: pykka.ActorRef[Timed]
) -> None:
    do(timed, lambda a: a.timers.start_at_fixed_rate("tick", "tick", 2.0, initial_delay=2.0))
    scheduler.advance(20.0, also=[timed])
    assert messages_of(timed) == ["tick"] * 10
    assert times_of(timed) == [1000.0 + 2 * k for k in range(1, 11)]
    assert do(timed, lambda a: a.timers.keys()) == frozenset({"tick"})
    [info] = scheduler.tasks()
    assert info.name == "str -> Timed (timer 'tick')"
    assert info.run_count == 10


def test_a_fixed_delay_timer_counts_from_when_the_actor_handled_the_previous_message(
    scheduler: Scheduler,
) -> None:
    ref = Timed.start(scheduler, work=3.0)  # each message takes 3 s to handle
    try:
        do(ref, lambda a: a.timers.start_with_fixed_delay("poll", "poll", 10.0))
        scheduler.advance(40.0, also=[ref])
        assert times_of(ref) == [1010.0, 1023.0, 1036.0]  # 10 s after each 3 s of handling
        assert len(scheduler.tasks()) == 1  # one task on its way at a time
        do(ref, lambda a: a.timers.start_with_fixed_delay("poll", "poll", 10.0, initial_delay=0.0))
        scheduler.settle(also=[ref])
        assert times_of(ref)[3:] == [1040.0]
    finally:
        ref.stop()


def test_a_fixed_delay_handler_may_cancel_or_replace_its_own_timer(scheduler: Scheduler) -> None:
    class Stopper(TimersMixin, pykka.ThreadingActor):
        def __init__(self) -> None:
            super().__init__()
            self.timers = ActorTimers(scheduler, self.actor_ref)
            self.got: list[str] = []

        def on_start(self) -> None:
            self.timers.start_with_fixed_delay("k", "a", 1.0)

        def on_receive(self, message: Any) -> Any:
            if message == "got?":
                return self.got
            self.got.append(message)
            if message == "a" and len(self.got) == 2:
                self.timers.start_with_fixed_delay("k", "b", 1.0)  # replaces the running timer
            elif message == "b":
                self.timers.cancel("k")
            return None

    ref = Stopper.start()
    try:
        scheduler.advance(10.0, also=[ref])
        assert ref.ask("got?", timeout=5) == ["a", "a", "b"]
        assert scheduler.tasks() == []
    finally:
        ref.stop()


def test_stopping_the_actor_cancels_its_timers(scheduler: Scheduler, timed: pykka.ActorRef[Timed]) -> None:
    def start_three(actor: Timed) -> None:
        actor.timers.start_single("once", "once", 5.0)
        actor.timers.start_at_fixed_rate("rate", "rate", 1.0)
        actor.timers.start_with_fixed_delay("delay", "delay", 1.0)

    do(timed, start_three)
    ids = [info.task_id for info in scheduler.tasks()]
    assert len(ids) == 3
    proxy_stopped = timed.proxy().stopped  # the actor's own on_stop ran too (it is wrapped, not replaced)
    timed.stop()
    assert proxy_stopped.get(timeout=5) is False  # read before the stop
    scheduler.settle()
    assert scheduler.tasks() == []
    assert {scheduler.info(task_id).status for task_id in ids} == {TaskStatus.CANCELLED}


def test_an_actor_that_fails_cancels_its_timers(scheduler: Scheduler) -> None:
    class Fragile(TimersMixin, pykka.ThreadingActor):
        def __init__(self) -> None:
            super().__init__()
            self.timers = ActorTimers(scheduler, self.actor_ref)

        def on_start(self) -> None:
            self.timers.start_at_fixed_rate("tick", "tick", 1.0, initial_delay=1.0)
            self.timers.start_single("boom", "boom", 3.0)

        def on_receive(self, message: Any) -> None:
            if message == "boom":
                raise RuntimeError("boom")  # a tell handler raising: pykka stops the actor

    ref = Fragile.start()
    scheduler.advance(3.0, also=[ref])
    assert not ref.is_alive()
    assert scheduler.tasks() == []


def test_the_actor_sees_its_own_messages_and_the_state_of_its_timers(
    scheduler: Scheduler, timed: pykka.ActorRef[Timed]
) -> None:
    assert do(timed, lambda a: a.timers.cancel("nothing")) is False
    do(timed, lambda a: a.timers.start_single(("job", 1), {"payload": 1}, 1.0))
    assert do(timed, lambda a: (a.timers.is_active(("job", 1)), a.timers.keys())) == (
        True,
        frozenset({("job", 1)}),
    )
    timed.tell("plain")  # not a timer's: passes through as it is
    scheduler.advance(1.0, also=[timed])
    assert messages_of(timed) == ["plain", {"payload": 1}]
    assert do(timed, lambda a: a.timers.keys()) == frozenset()
    do(timed, lambda a: a.timers.start_at_fixed_rate("a", "a", 1.0, initial_delay=1.0))
    do(timed, lambda a: a.timers.start_single("b", "b", 1.0))
    do(timed, lambda a: a.timers.cancel_all())
    scheduler.advance(5.0, also=[timed])
    assert messages_of(timed) == ["plain", {"payload": 1}]
    assert scheduler.tasks() == []


def test_bad_input_is_refused_where_it_is_given(scheduler: Scheduler, timed: pykka.ActorRef[Timed]) -> None:
    with pytest.raises(TypeError, match="hashable"):
        do(timed, lambda a: a.timers.start_single(["a list"], "x", 1.0))
    with pytest.raises(ValueError, match="delay must be greater than zero"):
        do(timed, lambda a: a.timers.start_with_fixed_delay("k", "x", 0.0))
    with pytest.raises(ValueError, match="interval"):
        do(timed, lambda a: a.timers.start_at_fixed_rate("k", "x", -1.0))
    with pytest.raises(TypeError, match="delay"):
        do(timed, lambda a: a.timers.start_single("k", "x", "soon"))
    with pytest.raises(TypeError, match=r"pykka\.ActorRef"):
        ActorTimers(scheduler, "not a ref")  # type: ignore[arg-type]
    assert do(timed, lambda a: a.timers.keys()) == frozenset()  # a refused start changes nothing
    assert scheduler.tasks() == []


def test_a_refused_restart_keeps_the_running_timer(
    scheduler: Scheduler, timed: pykka.ActorRef[Timed]
) -> None:
    do(timed, lambda a: a.timers.start_at_fixed_rate("k", "tick", 1.0, initial_delay=1.0))
    with pytest.raises(ValueError, match="interval"):
        do(timed, lambda a: a.timers.start_at_fixed_rate("k", "tick", 0.0))
    scheduler.advance(2.0, also=[timed])
    assert messages_of(timed) == ["tick", "tick"]


def test_deliver_is_the_receive_side_without_the_mixin(scheduler: Scheduler) -> None:
    class Plain(pykka.ThreadingActor):
        def __init__(self) -> None:
            super().__init__()
            self.timers = ActorTimers(scheduler, self.actor_ref)
            self.got: list[object] = []

        def on_start(self) -> None:
            self.timers.start_at_fixed_rate("k", "tick", 1.0, initial_delay=1.0)

        def on_receive(self, message: Any) -> Any:
            return self.timers.deliver(message, self.handle)

        def handle(self, message: Any) -> Any:
            if message == "got?":
                return list(self.got)
            if message == "cancel":
                self.timers.cancel("k")
            self.got.append(message)
            return None

        def on_stop(self) -> None:
            self.timers.cancel_all()

    ref = Plain.start()
    try:
        scheduler.advance(2.0, also=[ref])
        ref.tell("cancel")
        scheduler.advance(2.0, also=[ref])
        assert ref.ask("got?", timeout=5) == ["tick", "tick", "cancel"]
    finally:
        ref.stop()


def test_a_timer_message_without_an_actor_timers_is_a_clear_error(scheduler: Scheduler) -> None:
    class Forgetful(TimersMixin, pykka.ThreadingActor):
        def on_receive(self, message: Any) -> Any:
            return message

    ref = Forgetful.start()
    try:
        with pytest.raises(TypeError, match=r"self\.timers"):
            ref.ask(TimerFired("k", 1, "x"), timeout=5)
        assert ref.ask("echo", timeout=5) == "echo"
    finally:
        ref.stop()


def test_timers_after_the_scheduler_shut_down(make_scheduler: Callable[..., Scheduler]) -> None:
    scheduler = make_scheduler()
    ref = Timed.start(scheduler)
    try:
        do(ref, lambda a: a.timers.start_single("k", "x", 1.0))
        scheduler.shutdown()
        with pytest.raises(Exception, match="shut down"):
            do(ref, lambda a: a.timers.start_single("k", "y", 1.0))
        assert do(ref, lambda a: a.timers.cancel("k")) is True
    finally:
        ref.stop()


# -- settle(also=...) ------------------------------------------------------------------------


class Relay(pykka.ThreadingActor):
    """Passes a countdown on to ``peer`` (or schedules it, every other hop) until it reaches 0."""

    def __init__(self, scheduler: Scheduler) -> None:
        super().__init__()
        self.scheduler = scheduler
        self.peer: pykka.ActorRef[Any] | None = None
        self.seen: list[int] = []

    def on_receive(self, message: Any) -> Any:
        match message:
            case ("peer", peer):
                self.peer = peer
            case "seen?":
                return list(self.seen)
            case int(n):
                self.seen.append(n)
                if n > 0 and self.peer is not None:
                    if n % 2:
                        self.peer.tell(n - 1)
                    else:
                        self.scheduler.tell_once(self.peer, n - 1, 0.0)
        return None


def test_settle_also_follows_messages_between_actors_and_through_the_scheduler(scheduler: Scheduler) -> None:
    a, b = Relay.start(scheduler), Relay.start(scheduler)
    try:
        a.tell(("peer", b))
        b.tell(("peer", a))
        a.tell(41)
        scheduler.settle(also=[a, b])  # no sleep: 41 hops, half of them via the scheduler
        seen = a.ask("seen?", timeout=5) + b.ask("seen?", timeout=5)
        assert sorted(seen) == list(range(42))
    finally:
        a.stop()
        b.stop()


def test_settle_also_waits_for_a_busy_actor_and_names_one_that_never_answers(
    scheduler: Scheduler, timed: pykka.ActorRef[Timed]
) -> None:
    held, gate = threading.Event(), threading.Event()
    timed.tell(Hold(held, gate, lambda a: None))
    assert held.wait(5)
    with pytest.raises(TimeoutError, match=r"Timed .* did not handle the messages sent to it within 0\.2 s"):
        scheduler.settle(0.2, also=[timed])
    gate.set()
    scheduler.settle(also=[timed, timed])


def test_settle_also_accepts_dead_actors_and_refuses_what_is_not_a_ref(scheduler: Scheduler) -> None:
    ref = Timed.start(scheduler)
    ref.stop()
    scheduler.settle(also=[ref])
    scheduler.advance(1.0, also=(ref,))
    with pytest.raises(TypeError, match=r"pykka\.ActorRef"):
        scheduler.settle(also=["not a ref"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable"):
        scheduler.settle(also=3)  # type: ignore[arg-type]


# -- many actors -----------------------------------------------------------------------------


class Churner(TimersMixin, pykka.ThreadingActor):
    """Restarts (or cancels) its one timer whenever told, counting the timer messages it gets."""

    def __init__(self, scheduler: Scheduler) -> None:
        super().__init__()
        self.timers = ActorTimers(scheduler, self.actor_ref)
        self.fired = 0

    def on_receive(self, message: Any) -> Any:
        match message:
            case "restart":
                self.timers.start_single("k", "fired", 5.0)
            case "cancel":
                self.timers.cancel("k")
            case "fired":
                self.fired += 1
            case "count?":
                return (self.fired, self.timers.dropped)
        return None


def churn(actors: int, rounds: int, make_scheduler: Callable[..., Scheduler]) -> list[int]:
    """Run ``rounds`` of restart/cancel churn on ``actors`` actors; return the traced memory after each."""
    scheduler = make_scheduler(history=0)
    refs = [Churner.start(scheduler) for _ in range(actors)]
    sizes = []
    tracemalloc.start()
    try:
        for round_ in range(rounds):
            for ref in refs:
                ref.tell("restart")  # each actor restarts its timer twice (the first is replaced) ...
                ref.tell("restart")
            for ref in refs[round_ % 2 :: 2]:
                ref.tell("cancel")  # ... and half of them cancel it
            scheduler.settle(timeout=300, also=refs)  # tracemalloc slows 10k actors down a lot
            assert scheduler.stats().live_tasks == actors // 2  # one task per active timer, no more
            scheduler.advance(5.0, timeout=300, also=refs)  # the other half fire
            stats = scheduler.stats()
            assert stats.live_tasks == 0
            assert stats.heap_size + stats.stale_heap_entries <= actors  # cancelled entries are pruned
            gc.collect()
            sizes.append(tracemalloc.get_traced_memory()[0])
        counts = [ref.ask("count?", timeout=10) for ref in refs]
        assert sum(fired for fired, _ in counts) == rounds * actors // 2
    finally:
        tracemalloc.stop()
        for ref in refs:
            ref.stop(block=False)
        for ref in refs:
            ref.actor_stopped.wait(30)
    return sizes


def test_timer_churn_on_many_actors_keeps_memory_flat(make_scheduler: Callable[..., Scheduler]) -> None:
    # Each round starts and ends 600 timers (a task record alone is far over 300 bytes): a
    # leak of any of them would grow by hundreds of kB a round.
    sizes = churn(200, 8, make_scheduler)
    assert max(sizes[3:]) - sizes[2] < 200 * 300  # under 300 bytes per actor of drift after warm-up


@pytest.mark.stress
@pytest.mark.timeout(900)
def test_timer_churn_on_10k_actors_keeps_memory_flat(make_scheduler: Callable[..., Scheduler]) -> None:
    sizes = churn(10_000, 6, make_scheduler)
    assert max(sizes[3:]) - sizes[2] < 10_000 * 100
