"""``run_now`` on the FakeClock: one extra run, the grid kept, overlap "skip", paused tasks, manual."""

from __future__ import annotations

from collections.abc import Callable

from actors import FakeClock, Scheduler, current_run
from messages import EventKind, RunNow, TaskStatus
from tests.conftest import EventRecorder, Gate


class Runs:
    """Records (clock time, manual, run number) of each run."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.runs: list[tuple[float, bool, int]] = []

    def __call__(self) -> None:
        run = current_run()
        self.runs.append((self.clock.now(), run.manual, run.run))


def test_run_now_adds_one_run_and_keeps_the_fixed_rate_grid(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    runs = Runs(clock)
    s.schedule_at_fixed_rate(runs, 10.0, 10.0, task_id="rate")
    s.advance(3.0)
    assert s.run_now("rate") is True
    s.settle()
    assert runs.runs == [(1003.0, True, 1)]
    assert s.info("rate").next_run_at == 1010.0  # the grid did not move
    s.advance(17.0)
    assert runs.runs == [(1003.0, True, 1), (1010.0, False, 2), (1020.0, False, 3)]
    assert s.info("rate").run_count == 3


def test_run_now_of_a_fixed_delay_task_counts_the_delay_from_its_end(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    runs = Runs(clock)
    s.schedule_with_fixed_delay(runs, 10.0, 10.0, task_id="delay")
    s.advance(4.0)
    assert s.run_now("delay") is True
    s.settle()
    assert s.info("delay").next_run_at == 1014.0
    s.advance(10.0)
    assert [at for at, _, _ in runs.runs] == [1004.0, 1014.0]


def test_run_now_of_a_cron_task_keeps_its_slot(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    runs = Runs(clock)
    s.schedule_cron(runs, "* * * * *", task_id="cron")
    before = s.info("cron").next_run_at
    assert s.run_now("cron") is True
    s.settle()
    assert runs.runs == [(1000.0, True, 1)]
    assert s.info("cron").next_run_at == before


def test_with_a_run_in_progress_run_now_is_false_and_queues_nothing(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    gate = Gate()
    s.schedule_at_fixed_rate(gate, 100.0, task_id="busy")
    gate.wait_started()
    assert s.run_now("busy") is False
    gate.open()
    s.settle()
    assert s.info("busy").run_count == 1


def test_run_now_on_a_paused_task_runs_once_and_it_stays_paused(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.COMPLETED})
    runs = Runs(clock)
    s.schedule_at_fixed_rate(runs, 10.0, 10.0, task_id="paused")
    s.pause("paused")
    assert s.run_now("paused") is True
    s.settle()
    assert runs.runs == [(1000.0, True, 1)]
    assert s.info("paused").status is TaskStatus.PAUSED
    s.advance(35.0)  # off the grid (at a slot, the late run and that slot's would both run)
    assert len(runs.runs) == 1
    assert s.resume("paused")
    s.settle()
    assert [manual for _, manual, _ in runs.runs] == [True, False]
    assert len([e for e in recorder.events if e.kind is EventKind.COMPLETED]) == 2


def test_run_now_brings_a_one_time_run_forward(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    runs = Runs(clock)
    handle = s.schedule_once(runs, 50.0)
    assert s.run_now(handle.task_id) is True
    handle.result(timeout=5)
    assert runs.runs == [(1000.0, True, 1)]
    assert handle.info().status is TaskStatus.COMPLETED
    assert s.run_now(handle.task_id) is False  # ended


def test_scheduled_runs_are_not_manual(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    runs = Runs(clock)
    s.schedule_at_fixed_rate(runs, 10.0, task_id="plain")
    s.advance(20.0)
    assert [manual for _, manual, _ in runs.runs] == [False, False, False]


def test_unknown_ids_and_the_message(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    assert s.run_now("nope") is False
    assert s.run_now(7) is False  # type: ignore[arg-type]
    runs = Runs(clock)
    s.schedule_at_fixed_rate(runs, 10.0, 10.0, task_id="msg")
    assert s.ref.ask(RunNow("msg"), timeout=5) is True
    s.settle()
    assert runs.runs == [(1000.0, True, 1)]
