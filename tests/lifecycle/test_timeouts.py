"""Timeouts on the FakeClock: a run past its timeout is asked to stop; past the grace, abandoned.

The runs here wait on real events while the fake clock is moved, so the tests wait for events
(``EventRecorder``), never for ``settle`` while a run is stuck (settle waits for runs).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest

from actors import FakeClock, Scheduler, SchedulerShutdownError, TaskTimeoutError, current_run
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder

WAIT = 5.0


class Stuck:
    """A task body that ignores stop requests until released (and says when it started)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> str:
        self.started.set()
        self.release.wait(30.0)
        return "late"


@pytest.fixture
def stuck() -> Iterator[Stuck]:
    body = Stuck()
    yield body
    body.release.set()  # let an abandoned thread end, so the test leaks nothing


def kinds_of(recorder: EventRecorder, task_id: str) -> list[EventKind]:
    return recorder.kinds(task_id)


def test_a_cooperative_run_stops_at_its_timeout_and_fails_with_task_timeout_error(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    started = threading.Event()

    def polite() -> None:
        started.set()
        run = current_run()
        while True:
            run.check()
            threading.Event().wait(0.002)

    handle = s.schedule_once(polite, 0.0, timeout=10.0)
    assert started.wait(WAIT)
    recorder.wait_for(lambda events: any(e.kind is EventKind.STARTED for e in events))
    clock.advance(10.0)
    with pytest.raises(TaskTimeoutError, match=r"timeout of 10\.0 s"):
        handle.result(timeout=WAIT)
    s.settle()
    assert kinds_of(recorder, handle.task_id) == [
        EventKind.DUE,
        EventKind.STARTED,
        EventKind.TIMED_OUT,
        EventKind.FAILED,
    ]
    assert s.stats().abandoned_workers == 0


def test_a_hung_run_is_abandoned_after_the_grace_and_its_worker_replaced(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder, stuck: Stuck
) -> None:
    s = make_scheduler(workers=1, hung_grace=3.0)
    s.subscribe(recorder, kinds={EventKind.TIMED_OUT, EventKind.FAILED, EventKind.STARTED})
    hung = s.schedule_once(stuck, 0.0, timeout=5.0)
    assert stuck.started.wait(WAIT)
    recorder.wait_for(lambda events: any(e.kind is EventKind.STARTED for e in events))
    waiting = s.schedule_once(lambda: "ran", 1.0)  # behind the hung run, on the only worker
    clock.advance(5.0)
    recorder.wait_for(lambda events: any(e.kind is EventKind.TIMED_OUT for e in events))
    assert not hung.done()
    clock.advance(3.0)
    with pytest.raises(TaskTimeoutError, match="abandoned"):
        hung.result(timeout=WAIT)
    assert waiting.result(timeout=WAIT) == "ran"  # the new worker took its place
    stats = s.stats()
    assert (stats.abandoned_workers, stats.workers) == (1, 1)
    stuck.release.set()  # the abandoned run ends late: what it reports is ignored
    s.settle()
    assert hung.info().status is TaskStatus.FAILED


def test_a_recurring_task_goes_on_from_its_next_slot_after_an_abandoned_run(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder, stuck: Stuck
) -> None:
    s = make_scheduler(workers=2, hung_grace=1.0)
    s.subscribe(recorder, kinds={EventKind.STARTED, EventKind.TIMED_OUT, EventKind.FAILED})
    calls: list[float] = []

    def sometimes_stuck() -> None:
        calls.append(clock.now())
        if len(calls) == 1:
            stuck()

    handle = s.schedule_at_fixed_rate(sometimes_stuck, 10.0, timeout=2.0)
    assert stuck.started.wait(WAIT)
    recorder.wait_for(lambda events: any(e.kind is EventKind.STARTED for e in events))
    clock.advance(2.0)
    recorder.wait_for(lambda events: any(e.kind is EventKind.TIMED_OUT for e in events))
    clock.advance(1.0)
    recorder.wait_for(lambda events: any(e.kind is EventKind.FAILED for e in events))
    s.settle()
    assert handle.info().next_run_at == 1010.0
    s.advance(7.0)  # to 1010: the next slot runs on a fresh worker
    assert calls == [1000.0, 1010.0]
    info = handle.info()
    assert (info.run_count, info.failure_count, info.status) == (2, 1, TaskStatus.SCHEDULED)
    handle.cancel()


def test_a_timeout_cancels_an_async_tasks_coroutine(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.STARTED})
    started = threading.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    handle = s.schedule_once(forever, 0.0, timeout=1.0)
    assert started.wait(WAIT)
    recorder.wait_for(bool)
    clock.advance(1.0)
    with pytest.raises(TaskTimeoutError):
        handle.result(timeout=WAIT)


def test_a_run_within_its_timeout_is_untouched(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    handle = s.schedule_at_fixed_rate(lambda: current_run().deadline, 5.0, timeout=4.0)
    s.advance(20.0)
    info = handle.info()
    assert (info.run_count, info.failure_count) == (5, 0)
    assert s.stats().heap_size == 1  # only the next slot: no deadline left behind


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_bad_timeout_is_refused_at_the_call(make_scheduler: Callable[..., Scheduler], bad: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        make_scheduler().schedule_once(print, 1.0, timeout=bad)


def test_a_bad_hung_grace_is_refused(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="hung_grace"):
        Scheduler(clock=clock, hung_grace=-1.0)


def test_a_hung_task_ends_failed_when_shutdown_runs_out_of_time(clock: FakeClock, stuck: Stuck) -> None:
    s = Scheduler(workers=1, clock=clock)
    hung = s.schedule_once(stuck, 0.0)
    pending = s.schedule_once(print, 60.0)
    assert stuck.started.wait(WAIT)
    s.shutdown(timeout=0.5)
    with pytest.raises(SchedulerShutdownError, match="stopped before this run finished"):
        hung.result(timeout=WAIT)
    assert hung.info().status is TaskStatus.FAILED
    assert pending.info().status is TaskStatus.CANCELLED
