"""Values at the edge: far-future times, huge timeouts, pool sizes, threads the system refuses.

Every wait in the library accepts any finite timeout (threading refuses those above
``threading.TIMEOUT_MAX`` with an ``OverflowError``); a far-future task waits, and the timer
keeps serving the others; a pool too large or a system out of threads is an error at
construction, never a scheduler that says "running" and runs nothing.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime

import pytest

from actors import LATEST_DUE, MAX_WORKERS, FakeClock, Scheduler, SchedulerStartError
from messages import EventKind, TaskStatus

WAIT = 5.0
HUGE = 1e10  # seconds: above threading.TIMEOUT_MAX (about 9.2e9)


@pytest.mark.parametrize(
    "far",
    [
        {"at": datetime(9999, 1, 1, tzinfo=UTC)},
        {"delay": HUGE},
    ],
    ids=["datetime(9999)", "delay=1e10"],
)
@pytest.mark.realtime
def test_a_far_future_task_does_not_stop_the_timer(far: dict[str, object]) -> None:
    with Scheduler(workers=1) as s:
        far_task = s.schedule_once(lambda: None, **far)  # type: ignore[arg-type]
        soon = threading.Event()
        s.schedule_once(soon.set, delay=0.02)
        assert soon.wait(WAIT), "a task due in 20 ms never ran"
        assert far_task.info().status is TaskStatus.SCHEDULED


@pytest.mark.realtime
def test_a_huge_recurring_interval_does_not_stop_the_timer() -> None:
    with Scheduler(workers=1) as s:
        first = threading.Event()
        s.schedule_at_fixed_rate(first.set, HUGE)  # runs at once, then in 317 years
        assert first.wait(WAIT)
        soon = threading.Event()
        s.schedule_once(soon.set, delay=0.02)
        assert soon.wait(WAIT)
        assert s.stats().timer_wakeups >= 1


@pytest.mark.parametrize(
    ("method", "when"),
    [
        ("schedule_once", {"at": datetime.max.replace(tzinfo=UTC)}),
        ("schedule_once", {"delay": 1e15}),
        ("schedule_once", {"delay": 1e15, "name": "slow path"}),
        ("schedule_at_fixed_rate", {"interval": 1.0, "initial_delay": 1e15}),
        ("schedule_with_fixed_delay", {"delay": 1.0, "initial_delay": 1e15}),
    ],
    ids=["at=datetime.max", "delay=1e15", "delay=1e15-with-options", "fixed-rate", "fixed-delay"],
)
def test_a_due_time_past_what_a_datetime_shows_is_refused(
    make_scheduler, method: str, when: dict[str, object]
) -> None:
    s = make_scheduler()
    with pytest.raises(ValueError, match="after 9999-12-31T23:59:59"):
        getattr(s, method)(print, **when)
    assert s.tasks() == []
    latest = s.schedule_once(print, at=LATEST_DUE)  # the latest allowed: shown as it is
    shown = latest.info().next_run_wall
    assert shown is not None
    assert abs((shown - LATEST_DUE).total_seconds()) < 0.001


def test_huge_timeouts_are_accepted_everywhere(make_scheduler) -> None:
    s = make_scheduler()
    handle = s.schedule_once(lambda: "done", delay=0)
    s.settle(timeout=HUGE)
    assert handle.result(timeout=HUGE) == "done"
    s.shutdown(timeout=HUGE)


def test_advancing_past_the_wall_clocks_range_is_a_clear_error(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    before = (clock.now(), clock.wall())
    with pytest.raises(ValueError, match="past 9999"):
        clock.advance(3e11)
    with pytest.raises(ValueError, match="past 9999"):
        s.advance(1e12)
    assert (clock.now(), clock.wall()) == before  # nothing moved
    s.schedule_once(lambda: None, delay=1)
    s.advance(1)  # still works


@pytest.mark.parametrize("workers", [0, MAX_WORKERS + 1, 20_000])
def test_pool_size_has_documented_bounds(workers: int) -> None:
    with pytest.raises(ValueError, match="workers"):
        Scheduler(workers=workers)


def test_threads_the_system_refuses_fail_construction_with_a_clear_error() -> None:
    # A real limit in a real process: 1,000 threads' stacks do not fit in 700 MiB of address space.
    script = textwrap.dedent(
        """
        import resource, sys, threading
        resource.setrlimit(resource.RLIMIT_AS, (700 * 2**20, 700 * 2**20))
        from actors import Scheduler, SchedulerStartError
        before = threading.active_count()
        try:
            Scheduler(workers=1000)
        except SchedulerStartError as error:
            print("refused:", error)
        else:
            print("started")
            sys.exit(1)
        leftover = threading.active_count() - before
        print("threads left:", leftover)
        sys.exit(0 if leftover == 0 else 2)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "refused:" in done.stdout
    assert "can't start new thread" in done.stdout


def test_start_error_is_a_scheduler_error() -> None:
    assert issubclass(SchedulerStartError, RuntimeError)


# Regression (issue 21, point 6): each subscribe and unsubscribe recomputed the union of every
# subscription's kinds on the scheduler thread, O(N²) in all: after 10k subscriptions a task
# due at once ended about 11 s late. The kinds are counted now, O(kinds) per change.
def test_ten_thousand_subscriptions_do_not_make_a_due_task_late(make_scheduler) -> None:
    s = make_scheduler(workers=1)
    kinds = list(EventKind)
    subscriptions = [
        s.subscribe(lambda event: None, kinds=[kinds[index % len(kinds)]]) for index in range(10_000)
    ]
    for subscription in subscriptions[::2]:
        subscription.cancel()
    handle = s.schedule_once(lambda: "ran", delay=0)
    assert handle.result(timeout=3.0) == "ran"
