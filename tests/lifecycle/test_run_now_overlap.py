"""``run_now`` with a run in progress obeys the overlap policy (FakeClock): skip, queue, replace."""

from __future__ import annotations

import threading
from collections.abc import Callable

from actors import FakeClock, Scheduler, current_run
from actors.core.policies import jitter_delay
from messages import EventKind, FixedRate, TaskStatus
from tests.conftest import EventRecorder


class FirstBlocks:
    """Records (clock time, manual, run number) of each run; the first run waits for ``release``.

    With ``stop_when_asked`` the first run also ends (raising ``RunCancelled``) once it is asked
    to stop, as a cooperative run does.
    """

    def __init__(self, clock: FakeClock, *, stop_when_asked: bool = False) -> None:
        self.clock = clock
        self.stop_when_asked = stop_when_asked
        self.runs: list[tuple[float, bool, int]] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> None:
        run = current_run()
        self.runs.append((self.clock.now(), run.manual, run.run))
        if len(self.runs) > 1:
            return
        self.started.set()
        while not self.release.wait(0.002):
            if self.stop_when_asked and run.cancel_requested:
                run.check()  # raises RunCancelled: the run makes way

    def wait_started(self) -> None:
        assert self.started.wait(5.0), "the first run never started"


def test_skip_returns_false_and_queues_nothing(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    body = FirstBlocks(clock)
    s.schedule_at_fixed_rate(body, 100.0, task_id="skip", overlap="skip")
    body.wait_started()
    assert s.run_now("skip") is False
    body.release.set()
    s.settle()
    assert body.runs == [(1000.0, False, 1)]
    assert s.info("skip").next_run_at == 1100.0


def test_queue_runs_one_manual_run_right_after_the_run_in_progress(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    body = FirstBlocks(clock)
    s.schedule_at_fixed_rate(body, 100.0, task_id="queue", overlap="queue")
    body.wait_started()
    clock.advance(5.0)
    assert s.run_now("queue") is True
    assert s.run_now("queue") is False  # at most one waits
    body.release.set()
    s.settle()
    assert body.runs == [(1000.0, False, 1), (1005.0, True, 2)]
    info = s.info("queue")
    assert (info.run_count, info.next_run_at, info.missed_count) == (2, 1100.0, 0)  # the grid kept
    s.advance(95.0)
    assert body.runs[-1] == (1100.0, False, 3)


def test_queue_with_a_slot_already_waiting_runs_only_that_slot(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED})
    body = FirstBlocks(clock)
    s.schedule_at_fixed_rate(body, 100.0, task_id="both", overlap="queue")
    body.wait_started()
    clock.advance(150.0)  # the slot at 1100 comes due during the run: it waits (overlap="queue")
    assert s.run_now("both") is True
    body.release.set()
    s.settle()
    assert body.runs == [(1000.0, False, 1), (1150.0, False, 2)]  # one run waited: the slot's
    assert recorder.events == []
    assert s.info("both").next_run_at == 1200.0


def test_replace_asks_the_run_in_progress_to_stop_then_runs(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.COMPLETED, EventKind.FAILED, EventKind.MISSED})
    body = FirstBlocks(clock, stop_when_asked=True)
    s.schedule_at_fixed_rate(body, 100.0, task_id="replace", overlap="replace")
    body.wait_started()
    assert s.run_now("replace") is True  # the first run sees cancel_requested and makes way
    s.settle()
    assert body.runs == [(1000.0, False, 1), (1000.0, True, 2)]
    assert [e.kind for e in recorder.events] == [EventKind.COMPLETED]  # the replaced run is no failure
    info = s.info("replace")
    assert (info.run_count, info.failure_count, info.next_run_at) == (2, 0, 1100.0)


def test_a_queued_run_of_a_fixed_delay_task_counts_the_delay_from_its_own_end(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    body = FirstBlocks(clock)
    s.schedule_with_fixed_delay(body, 10.0, task_id="delay", overlap="queue")
    body.wait_started()
    clock.advance(3.0)
    assert s.run_now("delay") is True
    body.release.set()
    s.settle()
    assert body.runs == [(1000.0, False, 1), (1003.0, True, 2)]
    assert s.info("delay").next_run_at == 1013.0


def test_a_queued_run_of_a_task_paused_meanwhile_runs_once_and_it_stays_paused(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    body = FirstBlocks(clock)
    s.schedule_at_fixed_rate(body, 10.0, task_id="paused", overlap="queue")
    body.wait_started()
    assert s.pause("paused") is True
    assert s.run_now("paused") is True
    body.release.set()
    s.settle()
    assert body.runs == [(1000.0, False, 1), (1000.0, True, 2)]
    assert s.info("paused").status is TaskStatus.PAUSED
    s.advance(25.0)
    assert len(body.runs) == 2
    assert s.resume("paused") is True
    s.settle()
    assert [manual for _, manual, _ in body.runs] == [False, True, False]


def test_cancel_drops_the_queued_run(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    body = FirstBlocks(clock)
    handle = s.schedule_at_fixed_rate(body, 10.0, task_id="gone", overlap="queue")
    body.wait_started()
    assert s.run_now("gone") is True
    assert handle.cancel() is True
    body.release.set()
    s.settle()
    assert body.runs == [(1000.0, False, 1)]
    assert handle.info().status is TaskStatus.CANCELLED
    assert s.run_now("gone") is False


def test_reschedule_keeps_the_policies(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    body = FirstBlocks(clock)
    s.schedule_at_fixed_rate(body, 10.0, task_id="respec", overlap="queue", jitter=1.0)
    assert s.reschedule("respec", FixedRate(20.0)) is True
    body.release.set()
    s.advance(25.0)
    # The new trigger's first run, jittered as before: the policies were kept.
    assert body.runs == [(1020.0 + jitter_delay("respec", 1020.0, 1.0), False, 1)]
