"""A few end-to-end checks on the real clock, with generous tolerances."""

from __future__ import annotations

import threading
import time

import pytest

from actors import Scheduler
from actors.demo import EXPECTED_MS, measure_timeline

pytestmark = pytest.mark.realtime
TOLERANCE_MS = 25.0


def test_seed_timeline_on_the_real_clock() -> None:
    # Five times the demo's timeline (150 ms slots): the slow run then ends 50 ms before the
    # slot fixed rate must not skip, a margin a loaded CI machine's late wake-ups stay within.
    measured = measure_timeline(scale=5.0)
    for kind, expected in EXPECTED_MS.items():
        assert measured[kind] == pytest.approx(expected, abs=TOLERANCE_MS), kind


def test_one_time_task_runs_near_its_due_time() -> None:
    with Scheduler(workers=2) as s:
        due = time.monotonic() + 0.1
        started = []
        handle = s.schedule_once(lambda: started.append(time.monotonic()), at=due)
        handle.result(timeout=5)
        assert 0.0 <= started[0] - due < 0.25  # never early; late only by what a loaded machine adds


def test_no_thread_wakes_while_nothing_is_due() -> None:
    with Scheduler(workers=2) as s:
        s.schedule_once(lambda: None, delay=3600)
        s.settle()
        before = s.stats()
        threading.Event().wait(0.3)  # idle on purpose: this test is about idling
        after = s.stats()
        # At most the wake-up that arming the timer caused, if the thread ran late; no tick.
        assert after.timer_wakeups - before.timer_wakeups <= 1
        assert after.ticks == before.ticks


def test_a_new_earlier_task_wakes_a_long_sleep() -> None:
    with Scheduler(workers=1) as s:
        s.schedule_once(lambda: None, delay=3600)
        s.settle()
        begun = time.monotonic()
        s.schedule_once(lambda: None, delay=0.05).result(timeout=5)
        assert time.monotonic() - begun < 1.0
