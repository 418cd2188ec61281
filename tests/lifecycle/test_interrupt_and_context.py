"""The run context, and stopping a running task: ``cancel(interrupt=True)``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError

import pytest

from actors import FakeClock, RunCancelled, Scheduler, current_run
from messages import EventKind, Once, Schedule, TaskStatus
from tests.conftest import EventRecorder

WAIT = 5.0


class Gate:
    """A task body that says it started, then waits for a stop request (or a release)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.saw_stop = False

    def until_stopped(self) -> str:
        self.started.set()
        run = current_run()
        while not run.cancel_requested:
            if self.release.wait(0.005):
                return "released"
        self.saw_stop = True
        run.check()  # raises RunCancelled
        return "not reached"

    def ignoring_stop(self) -> str:
        self.started.set()
        while not current_run().cancel_requested:
            self.release.wait(0.005)
        self.saw_stop = True
        return "finished anyway"


def test_current_run_describes_the_run(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    handle = s.schedule_once(current_run, 0.0, task_id="ctx", timeout=30.0)
    context = handle.result(timeout=WAIT)
    assert (context.task_id, context.run, context.attempt) == ("ctx", 1, 1)
    assert context.due_at == clock.now()
    assert context.deadline == context.started_at + 30.0
    assert context.key.startswith("ctx@2026-01-01T00:")
    assert context.cancel_requested is False
    context.check()  # no stop requested: nothing happens
    with pytest.raises(RuntimeError, match="inside a running task"):
        current_run()


def test_interrupting_a_one_time_run_that_stops_ends_it_cancelled_not_failed(
    make_scheduler: Callable[..., Scheduler], recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    gate = Gate()
    handle = s.schedule_once(gate.until_stopped, 0.0)
    assert gate.started.wait(WAIT)
    assert handle.cancel() is False  # without interrupt a running one-time task just runs on
    assert handle.cancel(interrupt=True) is True
    with pytest.raises(CancelledError):
        handle.result(timeout=WAIT)
    assert gate.saw_stop
    s.settle()
    info = handle.info()
    assert info.status is TaskStatus.CANCELLED
    assert (info.failure_count, info.run_count) == (0, 0)
    assert recorder.kinds(handle.task_id)[-1] is EventKind.CANCELLED
    assert EventKind.FAILED not in recorder.kinds(handle.task_id)


def test_a_run_that_returns_anyway_counts_but_the_task_ends_cancelled(
    make_scheduler: Callable[..., Scheduler], recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.COMPLETED, EventKind.CANCELLED})
    gate = Gate()
    handle = s.schedule_once(gate.ignoring_stop, 0.0)
    assert gate.started.wait(WAIT)
    assert s.cancel(handle.task_id, interrupt=True) is True
    with pytest.raises(CancelledError):
        handle.result(timeout=WAIT)
    s.settle()
    info = handle.info()
    assert (info.status, info.run_count) == (TaskStatus.CANCELLED, 1)
    completed = [e for e in recorder.events if e.kind is EventKind.COMPLETED]
    assert [(e.value, e.final) for e in completed] == [("finished anyway", False)]
    assert recorder.kinds()[-1] is EventKind.CANCELLED


def test_interrupting_a_recurring_run_stops_it_and_every_later_run(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    gate = Gate()
    handle = s.schedule_at_fixed_rate(gate.until_stopped, 10.0)
    assert gate.started.wait(WAIT)
    assert handle.cancel(interrupt=True) is True
    with pytest.raises(CancelledError):
        handle.result(timeout=WAIT)
    s.advance(100.0)
    info = handle.info()
    assert (info.status, info.failure_count) == (TaskStatus.CANCELLED, 0)


def test_interrupt_of_a_task_that_is_not_running_is_a_plain_cancel(
    make_scheduler: Callable[..., Scheduler],
) -> None:
    s = make_scheduler()
    handle = s.schedule_once(print, 10.0)
    assert handle.cancel(interrupt=True) is True
    assert handle.cancel(interrupt=True) is False
    assert s.cancel("no-such-task", interrupt=True) is False


def test_an_async_task_is_awaited_on_its_workers_own_loop(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler(workers=1)

    async def which_loop() -> int:
        await asyncio.sleep(0)
        return id(asyncio.get_running_loop())

    async def boom() -> None:
        await asyncio.sleep(0)
        raise ValueError("async boom")

    first = s.schedule_once(which_loop, 0.0).result(timeout=WAIT)
    second = s.schedule_once(which_loop, 0.0).result(timeout=WAIT)
    assert first == second  # one long-lived loop per worker, not asyncio.run per run
    with pytest.raises(ValueError, match="async boom"):
        s.schedule_once(boom, 0.0).result(timeout=WAIT)


class AsyncCallable:
    """An object whose ``__call__`` is ``async def``: async, though it has no ``__code__`` itself."""

    async def __call__(self, word: str) -> str:
        await asyncio.sleep(0)
        asyncio.get_running_loop()  # a RuntimeError (the run fails) unless a loop awaits it
        return f"{word} awaited"


# Regression: an async callable object was awaited through schedule_once, but run as a plain
# function through a Schedule message (its "result" an unawaited coroutine): one test decides now.
def test_an_async_callable_object_is_awaited_the_same_through_every_way_of_scheduling(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    fn = AsyncCallable()
    by_call = s.schedule_once(fn, 0.0, args=("once",))
    s.ref.tell(Schedule(task_id="by-message", fn=fn, trigger=Once(clock.now()), args=("message",)))
    [in_bulk] = s.schedule_many(fn, [0.0], args=[("many",)])
    s.settle()
    results = [s.handle(task_id).result(timeout=WAIT) for task_id in (by_call.task_id, "by-message", in_bulk)]
    assert results == ["once awaited", "message awaited", "many awaited"]


def test_interrupting_an_async_task_cancels_its_coroutine(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    started = threading.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()  # never set: only a cancel ends this

    handle = s.schedule_once(forever, 0.0)
    assert started.wait(WAIT)
    assert handle.cancel(interrupt=True) is True
    with pytest.raises(CancelledError):
        handle.result(timeout=WAIT)
    s.settle()
    assert handle.info().failure_count == 0


def test_run_cancelled_raised_without_a_request_is_an_ordinary_failure(
    make_scheduler: Callable[..., Scheduler],
) -> None:
    s = make_scheduler()

    def confused() -> None:
        raise RunCancelled("nobody asked")

    with pytest.raises(RunCancelled):
        s.schedule_once(confused, 0.0).result(timeout=WAIT)


def test_an_interrupted_run_that_raises_something_else_counts_as_failed_and_the_task_is_cancelled(
    make_scheduler: Callable[..., Scheduler],
) -> None:
    s = make_scheduler()
    gate = Gate()

    def breaks_when_stopped() -> None:
        gate.ignoring_stop()
        raise OSError("connection closed while stopping")

    handle = s.schedule_once(breaks_when_stopped, 0.0)
    assert gate.started.wait(WAIT)
    assert handle.cancel(interrupt=True) is True
    with pytest.raises(CancelledError):
        handle.result(timeout=WAIT)
    s.settle()
    info = handle.info()
    assert (info.status, info.failure_count) == (TaskStatus.CANCELLED, 1)
    assert isinstance(info.last_error, OSError)
