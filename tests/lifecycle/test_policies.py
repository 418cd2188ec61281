"""Overlap, catch-up and jitter on the FakeClock: which due times run, which are MISSED and why.

A run that overruns moves the fake clock itself (``clock.advance`` inside the task body); a gap
while nothing runs is the clock moved by the test with no stop on the way (``clock.advance``,
then ``settle``). Every time here is exact.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from actors import FakeClock, Scheduler, current_run
from actors.core.policies import jitter_delay
from messages import EventKind, TaskEvent
from tests.conftest import EventRecorder


def missed(recorder: EventRecorder) -> list[tuple[float | None, str | None]]:
    return [(e.due_at, e.reason) for e in recorder.events if e.kind is EventKind.MISSED]


def ran(recorder: EventRecorder) -> list[float | None]:
    return [e.due_at for e in recorder.events if e.kind is EventKind.COMPLETED]


class Overrun:
    """A task body whose first run takes ``took`` seconds of the fake clock (later runs take none)."""

    def __init__(self, clock: FakeClock, took: float) -> None:
        self.clock = clock
        self.took = took
        self.started: list[float] = []

    def __call__(self) -> None:
        self.started.append(self.clock.now())
        if len(self.started) == 1:
            self.clock.advance(self.took)


def test_by_default_slots_a_run_overran_are_missed_for_overlap_and_counted(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED})
    body = Overrun(clock, 3.5)
    handle = s.schedule_at_fixed_rate(body, 1.0)
    s.settle()
    assert missed(recorder) == [(1001.0, "overlap"), (1002.0, "overlap"), (1003.0, "overlap")]
    info = handle.info()
    assert (info.missed_count, info.run_count, info.next_run_at) == (3, 1, 1004.0)


def test_missed_count_is_kept_with_no_one_listening(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    handle = s.schedule_at_fixed_rate(Overrun(clock, 2.5), 1.0)
    s.settle()
    assert handle.info().missed_count == 2


def test_overlap_queue_runs_the_latest_slot_a_run_overran_right_after_it(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED})
    body = Overrun(clock, 3.5)
    handle = s.schedule_at_fixed_rate(body, 1.0, overlap="queue")
    s.settle()
    assert body.started == [1000.0, 1003.5]  # the queued run starts as the overrun ends
    assert ran(recorder) == [1000.0, 1003.0]
    assert missed(recorder) == [(1001.0, "overlap"), (1002.0, "overlap")]
    info = handle.info()
    assert (info.missed_count, info.run_count, info.next_run_at) == (2, 2, 1004.0)


def test_a_gap_while_nothing_ran_is_one_late_run_by_default_and_the_rest_missed_for_catch_up(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED})
    handle = s.schedule_at_fixed_rate(lambda: None, 1.0)
    s.settle()
    clock.advance(3.5)  # no stop on the way: slots 1001..1003 all pass
    s.settle()
    assert ran(recorder) == [1000.0, 1001.0]  # the oldest slot runs, late (as ever)
    assert missed(recorder) == [(1002.0, "catch_up"), (1003.0, "catch_up")]
    assert handle.info().next_run_at == 1004.0


def test_catch_up_none_skips_every_time_past_and_runs_at_the_first_not_past(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED})
    handle = s.schedule_at_fixed_rate(lambda: None, 1.0, catch_up="none")
    s.settle()
    clock.advance(3.5)
    s.settle()
    assert ran(recorder) == [1000.0]
    assert missed(recorder) == [(1001.0, "catch_up"), (1002.0, "catch_up"), (1003.0, "catch_up")]
    info = handle.info()
    assert (info.missed_count, info.next_run_at) == (3, 1004.0)
    s.advance(0.5)
    assert ran(recorder) == [1000.0, 1004.0]


def test_catch_up_all_runs_each_missed_time_oldest_first_at_most_max_catch_up(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED})
    due: list[float] = []
    handle = s.schedule_at_fixed_rate(
        lambda: due.append(current_run().due_at), 1.0, catch_up="all", max_catch_up=3
    )
    s.settle()
    clock.advance(5.0)  # slots 1001..1005 pass
    s.settle()
    assert due == [1000.0, 1003.0, 1004.0, 1005.0]
    assert missed(recorder) == [(1001.0, "catch_up"), (1002.0, "catch_up")]
    info = handle.info()
    assert (info.run_count, info.missed_count, info.next_run_at) == (4, 2, 1006.0)


def test_catch_up_all_misses_the_times_older_than_misfire_grace(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED})
    s.schedule_at_fixed_rate(lambda: None, 1.0, catch_up="all", misfire_grace=1.5)
    s.settle()
    clock.advance(4.0)
    s.settle()
    assert ran(recorder) == [1000.0, 1003.0, 1004.0]
    assert missed(recorder) == [(1001.0, "misfire"), (1002.0, "misfire")]


def test_a_misfire_is_missed_with_its_reason(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED})
    handle = s.schedule_once(lambda: None, 1.0, misfire_grace=0.5)
    clock.advance(2.0)
    s.settle()
    assert [(e.reason, e.final) for e in recorder.events] == [("misfire", True)]
    assert handle.info().missed_count == 1


def test_jitter_delays_each_start_repeatably_and_the_grid_never_moves(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.STARTED})
    handle = s.schedule_at_fixed_rate(lambda: None, 10.0, task_id="spread", jitter=2.0)
    s.advance(35.0)
    started = [(e.due_at or 0.0, e.at) for e in recorder.events]
    slots = [1000.0, 1010.0, 1020.0, 1030.0]
    assert started == [(slot, slot + jitter_delay("spread", slot, 2.0)) for slot in slots]
    assert all(0.0 <= at - slot < 2.0 for slot, at in started)
    assert len({round(at - slot, 9) for slot, at in started}) == len(slots)  # drawn per due time
    assert handle.info().next_run_at == 1040.0


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"overlap": "sometimes"}, ValueError),
        ({"overlap": 1}, TypeError),
        ({"overlap": "allow", "max_instances": 0}, ValueError),
        ({"max_instances": 0}, ValueError),
        ({"max_instances": 2}, ValueError),
        ({"overlap": "queue", "max_instances": 3}, ValueError),
        ({"max_instances": 2.0}, TypeError),
        ({"catch_up": "most"}, ValueError),
        ({"catch_up": None}, TypeError),
        ({"max_catch_up": 0}, ValueError),
        ({"max_catch_up": 1.5}, TypeError),
        ({"jitter": -0.1}, ValueError),
        ({"jitter": float("nan")}, ValueError),
        ({"jitter": "1"}, TypeError),
    ],
)
def test_bad_policies_raise_at_the_call_and_schedule_nothing(
    make_scheduler: Callable[..., Scheduler], options: dict[str, Any], error: type[Exception]
) -> None:
    s = make_scheduler()
    with pytest.raises(error):
        s.schedule_at_fixed_rate(lambda: None, 1.0, **options)
    with pytest.raises(error):
        s.schedule_cron(lambda: None, "* * * * *", **options)
    assert s.tasks() == []


def test_allow_on_a_fixed_delay_task_is_a_value_error_that_says_why(
    make_scheduler: Callable[..., Scheduler],
) -> None:
    s = make_scheduler()
    with pytest.raises(ValueError, match="never overlap"):
        s.schedule_with_fixed_delay(lambda: None, 1.0, overlap="allow", max_instances=2)
    assert s.tasks() == []


def test_max_instances_one_is_the_default_of_every_policy(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    s.schedule_at_fixed_rate(lambda: None, 1.0, max_instances=1)
    s.schedule_once(lambda: None, 1.0, max_instances=1)
    assert len(s.tasks()) == 2


@pytest.mark.parametrize(
    "options", [{"overlap": "queue"}, {"catch_up": "none"}, {"jitter": 1.0}, {"overlap": "allow"}]
)
def test_policies_on_a_one_time_task_are_a_value_error(
    make_scheduler: Callable[..., Scheduler], options: dict[str, Any]
) -> None:
    s = make_scheduler()
    with pytest.raises(ValueError, match="recurring tasks only"):
        s.schedule_once(lambda: None, 1.0, **options)
    assert s.tasks() == []


def test_a_missed_event_is_built_only_for_a_listener_of_missed(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.COMPLETED})
    s.schedule_at_fixed_rate(Overrun(clock, 2.5), 1.0)
    s.settle()
    assert all(isinstance(e, TaskEvent) and e.kind is EventKind.COMPLETED for e in recorder.events)


def test_overlap_replace_asks_the_running_run_to_stop_as_its_next_slot_comes_and_runs_that_slot(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED, EventKind.FAILED})
    started = threading.Event()
    runs: list[tuple[float, float]] = []

    def stubborn() -> None:
        run = current_run()
        runs.append((run.due_at, clock.now()))
        if len(runs) == 1:
            started.set()
            while not run.cancel_requested:
                threading.Event().wait(0.002)
            run.check()  # raises RunCancelled: the run makes way

    handle = s.schedule_at_fixed_rate(stubborn, 10.0, overlap="replace")
    assert started.wait(5.0)
    clock.advance(10.0)  # the next slot comes while the first run goes on
    s.settle()
    assert runs == [(1000.0, 1000.0), (1010.0, 1010.0)]
    assert missed(recorder) == []
    assert [e.kind for e in recorder.events] == [EventKind.COMPLETED]  # the replaced run is no failure
    info = handle.info()
    assert (info.run_count, info.failure_count, info.next_run_at) == (2, 0, 1020.0)


def test_overlap_replace_does_not_combine_with_a_timeout(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    with pytest.raises(ValueError, match="replace"):
        s.schedule_at_fixed_rate(lambda: None, 1.0, overlap="replace", timeout=5.0)
    assert s.tasks() == []


def test_a_recurring_tell_takes_catch_up_and_jitter(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    from tests.actors.test_scheduled_messages import Receiver, received

    ref = Receiver.start()
    try:
        s = make_scheduler()
        s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.STARTED, EventKind.COMPLETED})
        handle = s.tell_at_fixed_rate(ref, "tick", 1.0, task_id="ticks", catch_up="none", jitter=0.5)
        s.advance(0.6)
        clock.advance(3.0)  # the slots 1..3 pass while nothing runs
        s.settle()
        assert [due for due, _ in missed(recorder)] == [1001.0, 1002.0, 1003.0]
        assert handle.info().next_run_at == 1004.0
        assert received(ref) == ["tick"]
    finally:
        ref.stop()
