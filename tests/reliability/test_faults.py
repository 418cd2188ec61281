"""Faults: tasks that raise or hang, listeners that raise, block or die, workers that die.

Each test checks the fault is contained: the faulty run ends as documented, every other task
and listener carries on, and the scheduler still serves new work afterwards.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pykka
import pytest
from pykka.messages import ProxyCall

from actors import (
    FakeClock,
    Scheduler,
    SchedulerInternalError,
    SchedulerShutdownError,
    WorkerActor,
    WorkerLostError,
)
from messages import EventKind, TaskEvent, TaskStatus
from tests.conftest import EventRecorder
from tests.reliability.helpers import Listener, new_threads

TOLERANCE = 0.3  # seconds a forced shutdown may take beyond its timeout
WAIT = 5.0  # seconds any wait in this file may take before the test fails


class Gate:
    """A task body that says it started, then blocks until opened (with a timeout)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.opened = threading.Event()

    def __call__(self) -> str:
        self.started.set()
        if not self.opened.wait(WAIT * 4):
            raise TimeoutError("gate never opened")
        return "gate"


class SabotageClock(FakeClock):
    """A ``FakeClock`` whose ``now()`` raises once, on a thread chosen by ``sabotage_this_thread``.

    A task calls ``sabotage_this_thread()`` and returns; the worker's next ``clock.now()`` (to
    stamp the report) then raises inside the worker's ``on_receive``: a fault in the worker
    itself, which pykka turns into the actor's death (``on_failure``).
    """

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self._victim: int | None = None

    def sabotage_this_thread(self) -> None:
        self._victim = threading.get_ident()

    def now(self) -> float:
        if self._victim is not None and self._victim == threading.get_ident():
            self._victim = None
            raise RuntimeError("clock exploded inside the worker")
        return super().now()


def live_workers() -> list[pykka.ActorRef[Any]]:
    return pykka.ActorRegistry.get_by_class(WorkerActor)


def kill(ref: pykka.ActorRef[Any], how: str) -> None:
    """Stop a worker from outside: politely (``stop``) or by making pykka fail it (``crash``)."""
    if how == "stop":
        ref.stop(block=False)
    else:  # a told ProxyCall that raises: pykka logs it, fails the actor and calls on_failure
        ref.tell(ProxyCall(attr_path=("no_such_method",), args=(), kwargs={}))


# -- tasks that raise ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [RuntimeError("boom"), SystemExit(3), KeyboardInterrupt("interrupted")],
    ids=["Exception", "SystemExit", "KeyboardInterrupt"],
)
def test_a_raising_task_is_a_failed_run_and_nothing_else(
    make_scheduler: Callable[..., Scheduler], recorder: EventRecorder, error: BaseException
) -> None:
    s = make_scheduler(workers=2)
    s.subscribe(recorder)
    before = s.schedule_once(lambda: "before", 0)

    def bad() -> None:
        raise error

    failing = s.schedule_once(bad, 0)
    recurring = s.schedule_at_fixed_rate(bad, 1.0)
    after = s.schedule_once(lambda: "after", 0)
    s.advance(2)

    failed = [e for e in recorder.events if e.task_id == failing.task_id and e.kind is EventKind.FAILED]
    assert len(failed) == 1
    assert failed[0].error is error
    assert failing.info().status is TaskStatus.FAILED
    assert failing.info().last_error is error
    with pytest.raises(type(error)):
        failing.result(timeout=WAIT)
    # A recurring task keeps its schedule through failures (no limit given): runs at 0, 1, 2.
    assert s.info(recurring.task_id).failure_count == 3
    assert s.info(recurring.task_id).status is TaskStatus.SCHEDULED
    assert before.result(timeout=WAIT) == "before"
    assert after.result(timeout=WAIT) == "after"
    assert s.schedule_once(lambda: "later", 0).result(timeout=WAIT) == "later"
    assert len(live_workers()) == 2


# -- a task that never returns -------------------------------------------------------------


def test_a_hung_task_holds_one_worker_and_shutdown_still_returns(clock: FakeClock) -> None:
    threads_before = threading.enumerate()
    s = Scheduler(workers=2, clock=clock)  # not make_scheduler: this test shuts it down itself
    hung = Gate()
    try:
        stuck = s.schedule_once(hung, 0)
        assert hung.started.wait(WAIT)
        others = [s.schedule_once(lambda i=i: i, 0) for i in range(20)]
        assert [h.result(timeout=WAIT) for h in others] == list(range(20))
        pending = s.schedule_once(lambda: None, 60)

        started = time.monotonic()
        s.shutdown(wait=True, timeout=0.5)
        took = time.monotonic() - started
        # It gives up waiting for the hung run and stops by force within the 0.5 s.
        assert took < 0.5 + TOLERANCE, f"shutdown(timeout=0.5) took {took:.2f} s"
        assert pending.info().status is TaskStatus.CANCELLED
        # The hung run's outcome will never be known: its handle says so, nobody waits for ever.
        assert stuck.done()
        assert stuck.info().status is TaskStatus.FAILED
        with pytest.raises(SchedulerShutdownError):
            stuck.result(timeout=0)
        deadline = time.monotonic() + WAIT  # the idle worker ends on its own, shortly
        while len(new_threads(threads_before)) > 1 and time.monotonic() < deadline:
            for thread in new_threads(threads_before):
                thread.join(0.05)
        survivors = new_threads(threads_before)
        assert len(survivors) == 1, survivors  # only the worker running the hung task
        with pytest.raises(SchedulerShutdownError):
            s.schedule_once(lambda: None, 0)
        started = time.monotonic()
        s.shutdown()  # as a `with` block's exit does: it must not wait for the hung worker
        assert time.monotonic() - started < TOLERANCE
    finally:
        hung.opened.set()
    for thread in new_threads(threads_before):
        thread.join(WAIT)
    assert not new_threads(threads_before)
    assert not live_workers()
    assert stuck.info().status is TaskStatus.FAILED  # its late report changes nothing


# Regression: after a shutdown that timed out, every later shutdown(wait=True) used to wait its
# whole timeout for a 'drained' signal that never came; without a timeout (e.g. leaving a `with
# Scheduler()` block) it hung for ever.
def test_shutdown_after_a_timed_out_shutdown_returns_promptly(clock: FakeClock) -> None:
    threads_before = threading.enumerate()
    s = Scheduler(workers=1, clock=clock)
    hung = Gate()
    try:
        s.schedule_once(hung, 0)
        assert hung.started.wait(WAIT)
        s.shutdown(wait=True, timeout=0.1)
    finally:
        hung.opened.set()
    for thread in new_threads(threads_before):
        thread.join(WAIT)
    started = time.monotonic()
    s.shutdown(wait=True, timeout=0.6)  # nothing is left to wait for
    assert time.monotonic() - started < 0.5


# -- listeners -----------------------------------------------------------------------------


@pytest.mark.parametrize("error", [RuntimeError, SystemExit, KeyboardInterrupt])
def test_a_raising_listener_does_not_disturb_the_others(
    make_scheduler: Callable[..., Scheduler], error: type[BaseException]
) -> None:
    s = make_scheduler(workers=2)
    first, last = Listener(), Listener()
    calls = []

    def bad(event: TaskEvent) -> None:
        calls.append(event)
        raise error("listener failed")

    s.subscribe(first)
    s.subscribe(bad)
    s.subscribe(last)
    handles = [s.schedule_once(lambda: None, 0) for _ in range(10)]
    s.settle()
    assert all(h.done() for h in handles)
    assert len(first.events) == 30  # DUE, STARTED, COMPLETED each
    assert first.events == last.events == calls
    assert s.schedule_once(lambda: "still", 0).result(timeout=WAIT) == "still"


def test_a_blocking_listener_delays_events_but_not_tasks(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler(workers=2)
    release = threading.Event()
    blocked = threading.Event()
    slow: list[TaskEvent] = []
    fast = Listener()

    def blocking(event: TaskEvent) -> None:
        blocked.set()
        release.wait(WAIT * 4)
        slow.append(event)

    s.subscribe(blocking)
    s.subscribe(fast)
    try:
        handles = [s.schedule_once(lambda i=i: i, 0) for i in range(50)]
        assert blocked.wait(WAIT)
        # Every task runs and ends while the listener blocks the bus.
        assert [h.result(timeout=WAIT) for h in handles] == list(range(50))
        assert s.stats().live_tasks == 0
    finally:
        release.set()
    s.settle()
    assert len(slow) == 150
    assert slow == fast.events


class Collector(pykka.ThreadingActor):
    """A listener actor: keeps the events it is told; ``ask("events")`` returns them."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[TaskEvent] = []

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, TaskEvent):
            self.events.append(message)
            return None
        return list(self.events)


def test_a_stopped_listener_actor_is_dropped_and_the_rest_carry_on(
    make_scheduler: Callable[..., Scheduler], caplog: pytest.LogCaptureFixture
) -> None:
    s = make_scheduler(workers=2)
    collector = Collector.start()
    everything = Listener()
    try:
        s.subscribe(collector)
        s.subscribe(everything)
        s.schedule_once(lambda: None, 0, task_id="one")
        s.settle()
        assert [e.kind for e in collector.ask("events", timeout=WAIT)] == [
            EventKind.DUE,
            EventKind.STARTED,
            EventKind.COMPLETED,
        ]
    finally:
        collector.stop()
    with caplog.at_level(logging.WARNING, logger="actors"):
        s.schedule_once(lambda: None, 0, task_id="two")
        s.settle()
        s.schedule_once(lambda: None, 0, task_id="three")
        s.settle()
    assert [e.task_id for e in everything.events] == ["one"] * 3 + ["two"] * 3 + ["three"] * 3
    dropped = [r for r in caplog.records if "has stopped" in r.getMessage()]
    assert len(dropped) == 1  # told once, then unsubscribed


# -- workers that die ----------------------------------------------------------------------


def test_a_worker_dying_mid_run_fails_that_run_with_worker_lost(recorder: EventRecorder) -> None:
    clock = SabotageClock(1000.0)
    with Scheduler(workers=1, clock=clock) as s:
        s.subscribe(recorder)
        original = live_workers()
        ran: list[str] = []

        def doomed() -> None:
            ran.append("doomed")
            clock.sabotage_this_thread()

        victim = s.schedule_once(doomed, 1, task_id="victim")
        # Due with it, so in the same batch: handed to the dying worker but never started.
        batched = s.schedule_once(lambda: ran.append("batched"), 1, task_id="batched")
        s.advance(1)

        info = victim.info()
        assert info.status is TaskStatus.FAILED
        assert isinstance(info.last_error, WorkerLostError)
        assert "worker 0" in str(info.last_error)
        failed = [e for e in recorder.events if e.kind is EventKind.FAILED]
        assert [(e.task_id, type(e.error)) for e in failed] == [("victim", WorkerLostError)]
        with pytest.raises(WorkerLostError):
            victim.result(timeout=0)
        # The run it held but had not started is not lost: it runs once, on the replacement.
        assert batched.result(timeout=WAIT) is None
        assert ran == ["doomed", "batched"]
        replacement = live_workers()
        assert len(replacement) == 1
        assert replacement != original
        assert s.schedule_once(lambda: "served", 0).result(timeout=WAIT) == "served"


def test_a_recurring_task_survives_the_loss_of_its_worker(recorder: EventRecorder) -> None:
    clock = SabotageClock(1000.0)
    with Scheduler(workers=2, clock=clock) as s:
        s.subscribe(recorder)
        runs: list[float] = []

        def tick() -> None:
            runs.append(clock.now())
            if len(runs) == 2:
                clock.sabotage_this_thread()

        handle = s.schedule_at_fixed_rate(tick, 1.0, task_id="tick")
        s.advance(3)
        assert runs == [1000.0, 1001.0, 1002.0, 1003.0]
        ends = [(e.kind, e.run) for e in recorder.events if e.kind in (EventKind.COMPLETED, EventKind.FAILED)]
        assert ends == [
            (EventKind.COMPLETED, 1),
            (EventKind.FAILED, 2),
            (EventKind.COMPLETED, 3),
            (EventKind.COMPLETED, 4),
        ]
        info = handle.info()
        assert (info.status, info.run_count, info.failure_count) == (TaskStatus.SCHEDULED, 4, 1)
        assert isinstance(info.last_error, WorkerLostError)
        assert len(live_workers()) == 2


@pytest.mark.parametrize("how", ["stop", "crash"])
def test_a_worker_killed_while_running_finishes_the_run_and_loses_no_backlog(
    make_scheduler: Callable[..., Scheduler], how: str
) -> None:
    s = make_scheduler(workers=1)
    gate = Gate()
    ran: list[str] = []
    first = s.schedule_once(gate, 0)
    assert gate.started.wait(WAIT)
    backlog = [s.schedule_once(lambda name=name: ran.append(name), 0) for name in "bcdefg"]
    [worker] = live_workers()
    kill(worker, how)  # queued behind the running batch
    gate.opened.set()
    assert first.result(timeout=WAIT) == "gate"
    assert worker.actor_stopped.wait(WAIT)
    s.settle()
    assert ran == list("bcdefg")  # each exactly once, in order
    assert all(h.info().status is TaskStatus.COMPLETED for h in backlog)
    assert len(live_workers()) == 1
    assert s.schedule_once(lambda: "served", 0).result(timeout=WAIT) == "served"


@pytest.mark.parametrize("how", ["stop", "crash"])
def test_a_worker_killed_while_idle_is_replaced(make_scheduler: Callable[..., Scheduler], how: str) -> None:
    s = make_scheduler(workers=2)
    for worker in live_workers():
        kill(worker, how)
        assert worker.actor_stopped.wait(WAIT)
    handles = [s.schedule_once(lambda i=i: i, 0) for i in range(20)]
    s.settle()
    assert [h.result(timeout=WAIT) for h in handles] == list(range(20))
    assert len(live_workers()) == 2


# -- regressions ---------------------------------------------------------------------------


class StallingClock(FakeClock):
    """A FakeClock that, once armed, stalls the scheduler thread's next reading until ``until`` is set."""

    def __init__(self) -> None:
        super().__init__(start=1000.0)
        self.stall_until: threading.Event | None = None

    def now(self) -> float:
        until = self.stall_until
        if until is not None and threading.current_thread().name.startswith("SchedulerActor"):
            self.stall_until = None
            until.wait(1.0)
        return super().now()


# Regression: the worker used to publish STARTED straight to the bus, so it could overtake the
# previous run's COMPLETED (published by the scheduler): events of one worker arrived out of order.
def test_events_of_one_worker_arrive_in_the_order_they_happened(
    make_scheduler: Callable[..., Scheduler],
) -> None:
    clock = StallingClock()
    s = make_scheduler(workers=1, clock=clock)
    events = Listener()
    s.subscribe(events)
    second_started = threading.Event()

    def watch(event: TaskEvent) -> None:
        if event.task_id == "second":
            second_started.set()

    s.subscribe(watch, [EventKind.STARTED])

    def first() -> None:
        clock.stall_until = second_started  # the scheduler stalls just before it reads this run's report

    s.schedule_once(first, 1, task_id="first")
    s.schedule_once(lambda: None, 1, task_id="second")  # same batch, right after "first"
    s.advance(1)
    order = [(e.kind, e.task_id) for e in events.events if e.task_id in ("first", "second")]
    assert order.index((EventKind.COMPLETED, "first")) < order.index((EventKind.STARTED, "second")), order


# Regression: Scheduler.advance used to raise ValueError ('time can't go backwards') when a run
# took the fake clock past the end of the window.
def test_advance_survives_a_run_that_overruns_the_window(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler(workers=1)
    slow = s.schedule_once(lambda: clock.advance(10), 1)
    later = s.schedule_once(lambda: None, 8)
    s.advance(5)
    assert slow.done()
    assert later.done()  # due at 1008, inside the time the slow run took
    assert clock.now() == 1011.0


# Regression (issue 21, point 7): an hourly fixed-rate task whose run takes an hour (it moves the
# fake clock 3600 s) made each next slot due at once, and advance(7200) never stopped (98,014
# runs). It stops at the end of its window: the slot the last run's overrun brought due runs
# once, and what comes due after that waits for the next advance.
def test_advance_stops_at_the_end_of_its_window_when_each_run_takes_the_whole_interval(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler(workers=1)
    runs: list[float] = []

    def takes_an_hour() -> None:
        runs.append(clock.now())
        clock.advance(3600)

    hourly = s.schedule_at_fixed_rate(takes_an_hour, 3600)
    s.advance(7200, timeout=WAIT)
    assert runs == [1000.0, 4600.0, 8200.0, 11800.0]
    assert clock.now() == 15400.0
    assert hourly.info().next_run_at == 15400.0  # due, but held back until time is moved again
    assert s.stats().running == 0  # the timer does not go on running it behind the test's back
    assert len(runs) == 4
    s.advance(3600, timeout=WAIT)  # the next window takes the held slot, and stops again
    assert runs[4:] == [15400.0, 19000.0, 22600.0]
    assert clock.now() == 26200.0


# Regression: once the SchedulerActor was dead, facade calls used to leak pykka.ActorDeadError
# instead of SchedulerShutdownError (settle returns, as after shutdown).
def test_a_dead_scheduler_actor_is_reported_as_shut_down(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler(workers=1)
    kill(s.ref, "crash")
    assert s.ref.actor_stopped.wait(WAIT)
    problems = []
    calls: list[tuple[str, Callable[[], object]]] = [
        ("schedule_once", lambda: s.schedule_once(lambda: None, 0)),
        ("subscribe", lambda: s.subscribe(lambda e: None)),
        ("advance", lambda: s.advance(1)),
    ]
    for name, call in calls:
        try:
            call()
        except SchedulerShutdownError:
            pass
        except Exception as error:
            problems.append((name, type(error).__name__))
    try:
        s.settle()
    except Exception as error:
        problems.append(("settle", type(error).__name__))
    assert not problems


# -- stops from outside, and what they leave behind ------------------------------------------


def test_after_actor_registry_stop_all_every_handle_has_a_final_state(clock: FakeClock) -> None:
    s = Scheduler(workers=1, clock=clock)
    hung = Gate()
    running = s.schedule_once(hung, delay=0)
    assert hung.started.wait(WAIT)
    pending = s.schedule_once(lambda: None, delay=60)
    recurring = s.schedule_at_fixed_rate(lambda: None, 10.0, 5.0)
    try:
        pykka.ActorRegistry.stop_all(block=False)  # the usual pykka way to exit
        assert s.ref.actor_stopped.wait(WAIT)
        for handle in (pending, recurring):
            assert handle.done()
            with pytest.raises(CancelledError):
                handle.result(timeout=0)
        assert running.done()
        assert "failed" in repr(running)
        with pytest.raises(SchedulerShutdownError):
            running.result(timeout=0)
    finally:
        hung.opened.set()
    s.shutdown(timeout=WAIT)  # returns: everything has stopped


def test_a_shutdown_message_told_by_hand_leaves_the_facade_able_to_shut_down(clock: FakeClock) -> None:
    from concurrent.futures import Future

    from messages import Shutdown

    s = Scheduler(workers=1, clock=clock)
    handle = s.schedule_once(lambda: None, delay=60)
    s.ref.tell(Shutdown(Future()))
    assert s.ref.actor_stopped.wait(WAIT)
    assert handle.done()
    started = time.monotonic()
    s.shutdown()
    assert time.monotonic() - started < WAIT


def test_failed_tasks_in_the_history_do_not_keep_their_arguments_alive(make_scheduler) -> None:
    import gc
    import weakref

    class Big:
        pass

    s = make_scheduler()
    refs = []
    handles = []
    for _ in range(5):
        big = Big()
        refs.append(weakref.ref(big))

        def fail(arg: Big) -> None:
            local_copy = arg  # a frame local, as real code has
            raise RuntimeError(f"failed with {type(local_copy).__name__}")

        handles.append(s.schedule_once(fail, delay=0, args=(big,)))
        del big
    s.settle()
    gc.collect()
    assert [ref() for ref in refs] == [None] * 5, "a failed run's traceback still pins its arguments"
    info = handles[0].info()
    assert info.status is TaskStatus.FAILED
    assert isinstance(info.last_error, RuntimeError)
    assert info.last_error.__traceback__ is None
    assert info.last_traceback is not None
    assert "local_copy = arg" in info.last_traceback or "in fail" in info.last_traceback


def test_a_scheduler_dropped_without_shutdown_stops_its_threads_and_warns() -> None:
    import gc

    threads_before = threading.enumerate()

    def make_and_drop() -> None:
        s = Scheduler(workers=2)
        s.schedule_once(lambda: None, delay=3600)

    def drop_five() -> None:
        for _ in range(5):
            make_and_drop()
        gc.collect()

    with pytest.warns(ResourceWarning, match="never shut down"):
        drop_five()
    deadline = time.monotonic() + WAIT
    while new_threads(threads_before) and time.monotonic() < deadline:
        for thread in new_threads(threads_before):
            thread.join(0.1)
    assert not new_threads(threads_before)
    assert not pykka.ActorRegistry.get_all()


def test_a_scheduler_with_a_store_dropped_without_shutdown_has_unlocked_it_when_collected(
    tmp_path: Path,
) -> None:
    """Issue 21, point 15: 13 of 20 immediate re-opens found the file still locked."""
    import gc

    path = tmp_path / "dropped.db"

    def make_and_drop(task_id: str) -> None:
        s = Scheduler(workers=1, store=path)
        s.schedule_once("tests.durable.tasks:noop", delay=3600, task_id=task_id)
        del s
        gc.collect()

    for attempt in range(20):
        with pytest.warns(ResourceWarning, match="never shut down"):
            make_and_drop(f"t{attempt}")
        reopened = Scheduler(workers=1, store=path)  # no StoreLockedError: the lock is free already
        assert {info.task_id for info in reopened.tasks()} == {f"t{i}" for i in range(attempt + 1)}
        reopened.shutdown()


def test_a_query_whose_handler_fails_raises_instead_of_answering_none(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 21, point 11: a failing handler's ``None`` reached the caller (``tasks()`` returned None)."""
    from actors.core.timetable import Timetable

    def broken(self: Timetable, *_: object, **__: object) -> object:
        raise RuntimeError("a bug in the handler")

    with Scheduler(workers=1) as s:
        handle = s.schedule_once(lambda: None, delay=3600, task_id="kept")
        for method, query in (("infos", s.tasks), ("find", lambda: s.info("kept"))):
            with monkeypatch.context() as patch, caplog.at_level(logging.ERROR):
                patch.setattr(Timetable, method, broken)
                with pytest.raises(SchedulerInternalError, match="a bug in the handler"):
                    query()
        assert [info.task_id for info in s.tasks()] == ["kept"]  # the scheduler carries on
        assert handle.info().status is TaskStatus.SCHEDULED


def test_a_timer_that_fails_logs_it_and_keeps_serving(caplog: pytest.LogCaptureFixture) -> None:
    class FlakyClock(FakeClock):
        """Fails once when the timer asks how long to sleep."""

        failed = False

        def sleep_time(self, deadline: float) -> float:
            if not self.failed and threading.current_thread().name == "scheduler-timer":
                self.failed = True
                raise RuntimeError("clock glitch")
            return super().sleep_time(deadline)

    clock = FlakyClock(1000.0)
    with (
        caplog.at_level(logging.ERROR, logger="actors.runtime.timer"),
        Scheduler(workers=1, clock=clock) as s,
    ):
        handle = s.schedule_once(lambda: "ran", delay=5)
        s.settle()  # the scheduler holds the task and has armed the timer (which fails once)
        clock.advance(5)  # the timer (not settle) must notice and tick
        assert handle.result(timeout=WAIT) == "ran"
    assert any("timer thread failed" in record.getMessage() for record in caplog.records)


def test_an_event_bus_that_dies_is_replaced_with_its_subscriptions(make_scheduler) -> None:
    from actors import EventBus

    s = make_scheduler()
    events = Listener()
    s.subscribe(events, [EventKind.COMPLETED])
    (bus,) = pykka.ActorRegistry.get_by_class(EventBus)
    kill(bus, "crash")
    assert bus.actor_stopped.wait(WAIT)
    s.schedule_once(lambda: None, delay=0, task_id="after")
    s.settle()
    assert [e.task_id for e in events.events] == ["after"]
    assert s.stats().replaced_threads == 1
