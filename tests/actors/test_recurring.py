"""Fixed rate and fixed delay on a FakeClock, including the demo's timeline (architecture.md, 9)."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest

from actors import FakeClock
from messages import EventKind, TaskStatus, Tick

INTERVAL = 0.030
SLOW_RUN = 3  # the third run takes 50 ms
SLOW_RUN_TAKES = 0.050


def _run_start_times_ms(make_scheduler, clock: FakeClock, method: str) -> list[float]:
    s = make_scheduler()
    first_due = clock.now()
    starts: list[float] = []

    def task() -> None:
        starts.append(round((clock.now() - first_due) * 1000, 6))
        if len(starts) == SLOW_RUN:
            clock.advance(SLOW_RUN_TAKES)  # the run "takes" 50 ms of fake time

    getattr(s, method)(task, INTERVAL)
    s.advance(0.171)
    return starts


def test_fixed_rate_matches_the_seed_table(make_scheduler, clock: FakeClock) -> None:
    starts = _run_start_times_ms(make_scheduler, clock, "schedule_at_fixed_rate")
    assert starts[:5] == pytest.approx([0, 30, 60, 120, 150], abs=1e-6)


def test_fixed_delay_matches_the_seed_table(make_scheduler, clock: FakeClock) -> None:
    starts = _run_start_times_ms(make_scheduler, clock, "schedule_with_fixed_delay")
    assert starts[:5] == pytest.approx([0, 30, 60, 140, 170], abs=1e-6)


def test_fixed_rate_does_not_drift(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    starts: list[float] = []
    s.schedule_at_fixed_rate(lambda: starts.append(clock.now()), 0.1, initial_delay=1.0)
    s.advance(1.0 + 0.1 * 999 + 0.05)
    assert len(starts) == 1000
    assert starts[-1] == 1000.0 + 1.0 + 999 * 0.1


def test_clock_jump_skips_missed_fixed_rate_slots(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    starts: list[float] = []
    s.schedule_at_fixed_rate(lambda: starts.append(clock.now()), 10.0)
    s.settle()
    clock.advance(35.0)  # a stalled process: slots at 10, 20 and 30 were missed
    s.settle()
    s.advance(10.0)
    assert starts == [1000.0, 1035.0, 1040.0]


def test_recurring_task_never_overlaps_itself(make_scheduler, clock: FakeClock, recorder) -> None:
    s = make_scheduler(workers=4)
    s.subscribe(recorder)
    release = threading.Event()
    handle = s.schedule_at_fixed_rate(lambda: release.wait(10), 1.0)
    recorder.wait_for(lambda events: EventKind.STARTED in [e.kind for e in events])
    clock.advance(5.0)  # four slots pass while the first run is still going
    s.ref.ask(Tick(), timeout=5)
    assert s.stats().running == 1
    release.set()
    s.settle()
    info = handle.info()
    # The run finished at 1005: the slot at exactly 1005 still counts, so it ran again then.
    assert info.run_count == 2
    assert info.next_run_at == 1006.0


def test_failures_count_and_the_schedule_continues(make_scheduler, clock: FakeClock, recorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds=[EventKind.FAILED, EventKind.COMPLETED])
    outcomes = iter([ValueError("1"), None, KeyError("3"), KeyError("4"), None])

    def task() -> None:
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome

    handle = s.schedule_with_fixed_delay(task, 1.0)
    s.advance(4.0)
    info = handle.info()
    assert (info.run_count, info.failure_count, info.consecutive_failures) == (5, 3, 0)
    assert isinstance(info.last_error, KeyError)
    assert info.status is TaskStatus.SCHEDULED
    assert recorder.kinds() == [
        EventKind.FAILED,
        EventKind.COMPLETED,
        EventKind.FAILED,
        EventKind.FAILED,
        EventKind.COMPLETED,
    ]
    assert str(recorder.events[0].error) == "1"


def test_max_consecutive_failures_stops_the_task(make_scheduler, clock: FakeClock, recorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)

    def always_fails() -> None:
        raise RuntimeError("down")

    handle = s.schedule_at_fixed_rate(always_fails, 1.0, max_consecutive_failures=3)
    s.advance(10.0)
    info = handle.info()
    assert (info.status, info.run_count, info.failure_count) == (TaskStatus.FAILED, 3, 3)
    assert EventKind.CANCELLED not in recorder.kinds()
    with pytest.raises(RuntimeError, match="down"):
        handle.result(timeout=5)
    # The end is visible: the last FAILED event says so, and the snapshot says why.
    failures = [e for e in recorder.events if e.kind is EventKind.FAILED]
    assert [e.final for e in failures] == [False, False, True]
    assert info.end_reason == "stopped after 3 consecutive failures (max_consecutive_failures=3)"
    assert "RuntimeError: down" in (info.last_traceback or "")


def test_every_tasks_last_event_is_final(make_scheduler, recorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    s.schedule_once(lambda: "value", 0, task_id="done")
    s.schedule_once(lambda: 1 / 0, 0, task_id="failed")
    rate = s.schedule_at_fixed_rate(lambda: None, 1.0, task_id="rate")
    s.advance(2.0)
    rate.cancel()
    s.settle()
    last = {e.task_id: e for e in recorder.events}
    assert {task_id: (e.kind, e.final) for task_id, e in last.items()} == {
        "done": (EventKind.COMPLETED, True),
        "failed": (EventKind.FAILED, True),
        "rate": (EventKind.CANCELLED, True),
    }
    assert not any(e.final for e in recorder.events if e not in last.values())
    assert last["done"].value == "value"
    assert s.info("done").end_reason == "completed"
    assert s.info("failed").end_reason == "the run failed"


def test_recurring_result_waits_for_the_end(make_scheduler) -> None:
    s = make_scheduler()
    handle = s.schedule_at_fixed_rate(lambda: None, 1.0)
    s.advance(3.0)
    assert handle.info().run_count == 4
    assert handle.cancel() is True
    with pytest.raises(CancelledError):
        handle.result(timeout=5)


# Regression (issue 22, point 11): re-declaring a recurring task with if_exists="replace" and a
# new interval ran it at once, right after the run it had just made (the catch-up run of a
# restart, say). The new interval counts from the old trigger's last slot instead.
@pytest.mark.parametrize("method", ["schedule_at_fixed_rate", "schedule_with_fixed_delay"])
def test_replacing_an_interval_adds_no_run_the_new_interval_does_not_call_for(
    make_scheduler, clock: FakeClock, method: str
) -> None:
    s = make_scheduler()
    runs: list[float] = []
    start = clock.now()
    declare = getattr(s, method)
    first = declare(lambda: runs.append(clock.now() - start), 3600.0, task_id="report")
    s.settle()  # the run the first declaration calls for: at once
    clock.advance(5)  # a few seconds later, the program declares it again, every minute now
    again = declare(lambda: runs.append(clock.now() - start), 60.0, task_id="report", if_exists="replace")
    assert again == first
    s.settle()
    assert runs == [0.0]  # no extra run now ...
    assert again.info().next_run_at == start + 60.0  # ... but a minute after the last one
    s.advance(55 + 120)
    assert runs == [0.0, 60.0, 120.0, 180.0]
    # A task that has not run yet, or one whose new interval is already past, runs as declared.
    fresh = declare(lambda: None, 3600.0, 10.0, task_id="fresh")
    declare(lambda: None, 60.0, task_id="fresh", if_exists="replace")
    s.settle()
    assert fresh.info().run_count == 1  # at once, as the new declaration says
    assert fresh.info().next_run_at == clock.now() + 60.0
