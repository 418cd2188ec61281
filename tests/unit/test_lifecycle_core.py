"""The lifecycle races in the pure core: interrupt, timeout, retry and dependencies, by hand."""

from __future__ import annotations

from actors.core.retry import Retry
from actors.core.task_record import TaskRecord, TaskSpec
from actors.core.timetable import Timetable
from actors.errors import DependencyFailedError, RunCancelled, TaskTimeoutError
from actors.runtime.worker import run_batch
from actors.sync.claim import ABANDONED, INTERRUPTED, NOT_STOPPED, TIMED_OUT
from actors.sync.clock import FakeClock
from actors.sync.token import TokenState
from messages import Completed, EventKind, FixedRate, RunTask, Started, TaskStatus
from tests.unit.helpers import Pool, noop, take, timetable


def record(task_id: str, due_at: float = 0.0, **spec: object) -> TaskRecord:
    trigger = spec.pop("trigger", None)
    return TaskRecord(task_id, noop, (), {}, due_at, None, TaskSpec(trigger, **spec))  # type: ignore[arg-type]


def setup(workers: int = 1, hung_grace: float = 3.0) -> tuple[Timetable, Pool]:
    table = timetable(workers)
    table._hung_grace = hung_grace
    return table, Pool(table, announce=True)


def kinds(effects_events: list[tuple[EventKind, str, int | None]], task_id: str) -> list[EventKind]:
    return [kind for kind, tid, _ in effects_events if tid == task_id]


# -- interrupt vs completion ----------------------------------------------------------------------


def test_interrupt_then_the_run_returns_it_counts_and_the_task_is_cancelled() -> None:
    table, pool = setup()
    task = record("a")
    table.add(task, now=0.0)
    pool.take()
    run = pool.start(0)
    assert run is not None
    assert table.cancel("a", now=1.0, interrupt=True) is True
    assert run.claim.stop == INTERRUPTED
    pool.finish(0, at=2.0, value="anyway")
    effects = take(table)
    completed = [e for e in effects.events if e.kind is EventKind.COMPLETED]
    assert [(e.value, e.final) for e in completed] == [("anyway", False)]
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count) == (TaskStatus.CANCELLED, 1, 0)


def test_the_run_returns_first_then_an_interrupt_finds_nothing() -> None:
    table, pool = setup()
    table.add(record("a"), now=0.0)
    pool.take()
    pool.start(0)
    pool.finish(0, at=1.0)
    assert table.cancel("a", now=2.0, interrupt=True) is False
    assert table.info("a").status is TaskStatus.COMPLETED


# -- timeout vs completion ------------------------------------------------------------------------


def test_a_run_that_ends_before_its_deadline_leaves_no_deadline_behind() -> None:
    table, pool = setup()
    table.add(record("a", timeout=5.0), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    assert table.next_due() == 5.0  # the deadline
    pool.finish(0, at=4.9)
    assert table.next_due() is None
    table.tick(now=100.0)
    assert not [e for e in take(table).events if e.kind is EventKind.TIMED_OUT]


def test_a_run_past_its_deadline_is_asked_to_stop_and_may_still_complete() -> None:
    table, pool = setup()
    table.add(record("a", timeout=5.0), now=0.0)
    pool.take()
    run = pool.start(0, now=0.0)
    assert run is not None
    table.tick(now=5.0)
    assert [e.kind for e in take(table).events] == [EventKind.STARTED, EventKind.TIMED_OUT]
    assert run.claim.stop == TIMED_OUT
    assert table.next_due() == 8.0  # the grace
    pool.finish(0, at=6.0, value=1)
    assert table.info("a").status is TaskStatus.COMPLETED
    assert table.next_due() is None


def test_a_hung_run_is_abandoned_and_its_late_report_and_end_run_change_nothing() -> None:
    table, pool = setup(workers=1)
    table.add(record("r", trigger=FixedRate(10.0, 0.0), timeout=2.0), now=0.0)
    pool.take()
    hung = pool.start(0, now=0.0)
    assert hung is not None
    table.tick(now=2.0)
    take(table)
    table.tick(now=5.0)  # 2 + 3 s of grace
    effects = pool.take()
    assert effects.abandoned == [0]
    assert hung.claim.stop == TIMED_OUT | ABANDONED
    failed = [e for e in effects.events if e.kind is EventKind.FAILED]
    assert isinstance(failed[0].error, TaskTimeoutError)
    table.add_worker(0, now=5.0)  # the replacement, as the actor does
    task = table.tasks["r"]
    assert task.token_state is TokenState.FREE
    # The next slot starts on the new worker; then the abandoned run ends at last.
    table.tick(now=10.0)
    pool.take()
    pool.inbox[1] = pool.inbox.pop(0)  # the replacement worker holds the new run (same number)
    fresh = pool.start(1, now=10.0)
    assert fresh is not None
    assert task.token_state is TokenState.RUNNING
    assert not hung.task.end_run(hung.claim)  # the abandoned worker's finally: moves nothing, reports nothing
    assert task.token_state is TokenState.RUNNING
    info = table.info("r")
    assert (info.run_count, info.failure_count) == (1, 1)


# -- retry vs cancel ------------------------------------------------------------------------------


def test_a_failed_attempt_waits_for_its_retry_and_a_cancel_then_wins() -> None:
    table, pool = setup()
    table.add(record("a", retry=Retry(attempts=3, delay=2.0, jitter=0.0)), now=0.0)
    pool.take()
    pool.start(0)
    pool.finish(0, at=1.0, error=ConnectionError("down"))
    effects = take(table)
    assert [(e.kind, e.retrying) for e in effects.events if e.kind is EventKind.FAILED] == [
        (EventKind.FAILED, True)
    ]
    assert table.next_due() == 3.0
    assert table.cancel("a", now=1.5) is True
    assert table.info("a").status is TaskStatus.CANCELLED


def test_an_attempt_failing_after_a_cancel_mid_run_is_not_retried() -> None:
    table, pool = setup()
    table.add(record("a", retry=Retry(attempts=3, delay=2.0, jitter=0.0)), now=0.0)
    pool.take()
    pool.start(0)
    assert table.cancel("a", now=0.5) is True  # the attempt runs on: the task is CANCELLING
    pool.finish(0, at=1.0, error=ConnectionError("down"))
    assert table.info("a").status is TaskStatus.CANCELLED
    assert table.next_due() is None


def test_the_stop_state_of_a_plain_run_is_not_stopped() -> None:
    table, pool = setup()
    table.add(record("a"), now=0.0)
    pool.take()
    run = pool.start(0)
    assert run is not None
    assert run.claim.stop == NOT_STOPPED


# -- dependencies ---------------------------------------------------------------------------------


def test_a_dependency_that_failed_before_its_dependent_arrives_ends_it_at_once() -> None:
    table, pool = setup()
    upstream = record("up")
    table.add(upstream, now=0.0)
    pool.take()
    pool.start(0)
    pool.finish(0, at=1.0, error=RuntimeError("no"))
    take(table)
    table.add(record("down", after=(upstream,)), now=2.0)
    effects = take(table)
    assert [(t.task_id, t.token_state) for t, _ in effects.finished] == [("down", TokenState.FINISHED)]
    error = table.tasks.get("down") or table.info("down").last_error
    assert isinstance(error, DependencyFailedError)
    assert error.dependency == "up"


def test_a_dependency_failing_while_its_dependent_waits() -> None:
    table, pool = setup()
    upstream = record("up")
    table.add(upstream, now=0.0)
    pool.take()
    pool.start(0)  # running while the dependent arrives
    table.add(record("down", after=(upstream,), delay=1.0), now=0.5)
    assert table.info("down").status is TaskStatus.WAITING
    assert table.info("down").waiting_for == ("up",)
    pool.finish(0, at=1.0, error=RuntimeError("no"))
    assert table.info("down").status is TaskStatus.CANCELLED


def test_a_dependent_is_due_its_delay_after_the_last_dependency_completed() -> None:
    table, pool = setup(workers=2)
    first, second = record("1"), record("2", due_at=5.0)
    table.add(first, now=0.0)
    table.add(second, now=0.0)
    table.add(record("after", after=(first, second), delay=2.0), now=0.0)
    pool.run_everything(0.0)
    assert table.info("after").waiting_for == ("2",)
    table.tick(now=5.0)
    pool.run_everything(5.0)
    assert table.next_due() == 7.0


# -- found by the model check of the lifecycle (tests/reliability/test_model.py) -----------------


def test_a_lost_workers_timed_run_takes_its_deadline_out_of_the_heap() -> None:
    table, pool = setup()
    table.add(record("a", timeout=5.0, retry=Retry(attempts=2, delay=1.0, jitter=0.0)), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    assert table.next_due() == 5.0  # the run's deadline
    pool.lose(0)
    table.worker_lost(0, RuntimeError("worker died"), now=1.0)
    table.add_worker(0, now=1.0)
    assert table.next_due() == 2.0  # the retry's due time, and no deadline left over
    table.tick(now=2.0)
    pool.take()
    assert pool.start(0, now=2.0) is not None  # the second attempt
    table.tick(now=5.0)  # the first attempt's deadline would have come: nothing happens
    assert not [e for e in take(table).events if e.kind is EventKind.TIMED_OUT]
    pool.finish(0, at=5.5, value="ok")
    assert table.info("a").status is TaskStatus.COMPLETED
    assert table.next_due() is None


def test_a_dependent_added_after_its_dependency_completed_is_handed_out_at_once() -> None:
    table, pool = setup()
    up = record("up")
    table.add(up, now=0.0)
    pool.run_everything(0.0)
    assert table.info("up").status is TaskStatus.COMPLETED
    table.add(record("down", after=(up,)), now=1.0)
    assert [(run.task_id, run.run) for _, run in pool.take().dispatches] == [("down", 1)]


def test_an_interrupt_survives_a_later_timeout_and_the_task_ends_cancelled() -> None:
    table, pool = setup()
    table.add(record("a", timeout=5.0), now=0.0)
    pool.take()
    run = pool.start(0, now=0.0)
    assert run is not None
    assert table.cancel("a", now=1.0, interrupt=True) is True
    table.tick(now=5.0)  # its deadline comes before the run gives up
    assert run.claim.stop == INTERRUPTED | TIMED_OUT
    pool.finish(0, at=5.5, error=RunCancelled("asked to stop"))
    info = table.info("a")
    assert (info.status, info.failure_count) == (TaskStatus.CANCELLED, 0)


def test_an_interrupt_after_the_timeout_still_cancels_the_task() -> None:
    table, pool = setup()
    table.add(record("a", timeout=5.0), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    table.tick(now=5.0)
    assert table.cancel("a", now=6.0, interrupt=True) is True  # a new reason to stop: it is told
    pool.finish(0, at=6.5, error=RunCancelled("asked to stop"))
    assert table.info("a").status is TaskStatus.CANCELLED


def test_an_interrupt_after_the_run_returned_changes_nothing() -> None:
    table, pool = setup()
    table.add(record("a"), now=0.0)
    pool.take()
    run = pool.start(0, now=0.0)
    assert run is not None
    assert run.task.end_run(run.claim)  # the worker: the run returned, its report follows
    assert table.cancel("a", now=1.0, interrupt=True) is False  # too late: it asked nothing
    assert run.claim.stop == NOT_STOPPED
    table.completed(Completed(0, "a", 1, "value", 1.0, True), now=1.0)
    info = table.info("a")
    assert (info.status, info.run_count) == (TaskStatus.COMPLETED, 1)


def test_a_deadline_that_comes_as_the_run_ends_abandons_nothing() -> None:
    table, pool = setup()
    table.add(record("a", timeout=5.0), now=0.0)
    pool.take()
    run = pool.start(0, now=0.0)
    assert run is not None
    table.tick(now=5.0)  # asked to stop
    assert run.task.end_run(run.claim)  # the run ends; its report is on its way
    table.tick(now=8.0)  # the second deadline finds it ended: the worker is not stuck
    assert take(table).abandoned == []
    table.completed(Completed(0, "a", 1, None, 8.0, True), now=8.0)
    assert table.info("a").status is TaskStatus.COMPLETED


def test_an_abandoned_worker_reports_nothing_when_its_run_ends_at_last() -> None:
    """Its late report would be taken for its replacement's, which runs the retry (same run number)."""
    table = timetable(1)
    table._hung_grace = 3.0
    table.add(record("a", timeout=2.0, retry=Retry(attempts=2, delay=0.0, jitter=0.0)), now=0.0)
    ((worker, batch),) = take(table).batches
    reports: list[object] = []

    def report(message: object) -> None:
        if isinstance(message, Started):
            table.started(message)  # its deadline
        else:
            reports.append(message)

    def hang(run: RunTask) -> object:  # the run outlives its timeout and its grace
        table.tick(now=2.0)
        table.tick(now=5.0)
        assert take(table).abandoned == [worker]
        return "late"

    run_batch(batch, worker, FakeClock(), hang, report)
    assert reports == []  # neither Completed nor idle: the worker's place is its replacement's
    info = table.info("a")
    assert (info.status, info.failure_count) == (TaskStatus.SCHEDULED, 0)  # the retry waits for a worker


# -- found by the model check of the lifecycle in the core (tests/unit/test_lifecycle_model.py) ---


def test_an_interrupted_run_whose_worker_is_lost_ends_its_task_cancelled() -> None:
    table, pool = setup()
    table.add(record("a"), now=0.0)
    pool.take()
    assert pool.start(0, now=0.0) is not None
    assert table.cancel("a", now=1.0, interrupt=True) is True  # the run is asked to stop
    take(table)
    pool.lose(0)
    table.worker_lost(0, RuntimeError("worker died"), now=2.0)
    effects = take(table)
    assert [(e.kind, e.final) for e in effects.events] == [
        (EventKind.FAILED, False),
        (EventKind.CANCELLED, True),
    ]
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count) == (TaskStatus.CANCELLED, 1, 1)


def test_an_interrupted_run_abandoned_past_its_grace_is_not_retried_and_ends_cancelled() -> None:
    table, pool = setup(hung_grace=3.0)
    table.add(record("a", timeout=2.0, retry=Retry(attempts=3, delay=0.0, jitter=0.0)), now=0.0)
    pool.take()
    assert pool.start(0, now=0.0) is not None
    task = table.tasks["a"]
    assert task.interrupt()  # a handle's cancel(interrupt=True): the revoke's report is on its way
    task.revoke()
    table.tick(now=2.0)  # asked to stop for its timeout too
    table.tick(now=5.0)  # still going: abandoned
    effects = take(table)
    assert effects.abandoned == [0]
    failed = [e for e in effects.events if e.kind is EventKind.FAILED]
    assert [(e.retrying, e.final) for e in failed] == [(False, False)]
    assert isinstance(failed[0].error, TaskTimeoutError)
    assert table.info("a").status is TaskStatus.CANCELLED
    assert table.next_due() is None  # no retry waits


def test_a_cancelled_one_time_run_its_lost_worker_never_started_ends_cancelled() -> None:
    """The caller's cancel won (``True``): the task must not end ``FAILED`` with the worker's loss."""
    table, pool = setup()
    task = record("a")
    table.add(task, now=0.0)
    pool.take()
    assert pool.claim(0) is not None  # claimed, not yet started
    assert task.revoke() is TokenState.FREE  # a handle's cancel won: its Cancelled report is on its way
    pool.lose(0)
    table.worker_lost(0, RuntimeError("worker died"), now=1.0)
    info = table.info("a")
    assert (info.status, info.failure_count) == (TaskStatus.CANCELLED, 1)
    assert [(e.kind, e.final) for e in take(table).events] == [
        (EventKind.FAILED, False),
        (EventKind.CANCELLED, True),
    ]
