"""``Scheduler.history`` and ``keep_result``: one matrix over memory, SQLite and PostgreSQL.

Memory and SQLite run on a ``FakeClock`` (``advance``); PostgreSQL on the real server and its
clock (a shared store's database decides what is due), waiting for runs with a timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from actors import FakeClock, Retry, RunCancelled, RunRecord, Scheduler, TaskTimeoutError, current_run
from actors.store import PostgresStore
from messages import QueryHistory, TaskEvent
from tests.lifecycle import history_tasks as jobs
from tests.store.pg import DSN, drop_schemas, new_schema, require_postgres

START = datetime(2026, 1, 1, tzinfo=UTC)
BACKENDS = ("memory", "sqlite", "postgres")


@dataclass
class Backend:
    """One store of the matrix: how to start a scheduler on it and how to let its runs happen."""

    kind: str
    start: Callable[[], Scheduler]
    ended: threading.Event = field(default_factory=threading.Event)  # a run ended (real clock)

    @property
    def fake(self) -> bool:
        return self.kind != "postgres"

    @property
    def node(self) -> str | None:
        return "a" if self.kind == "postgres" else None

    def wait_runs(self, scheduler: Scheduler, task_id: str, count: int, step: float) -> list[RunRecord]:
        """Let ``task_id`` run until its history has ``count`` runs (advance a FakeClock by ``step``)."""
        deadline = time.monotonic() + 20
        while len(runs := scheduler.history(task_id)) < count:
            assert time.monotonic() < deadline, f"{task_id} has {len(runs)} runs, not {count}"
            if self.fake:
                scheduler.advance(step)
            else:
                self.ended.wait(0.5)  # woken by each run's end; the history is read again anyway
                self.ended.clear()
        return runs


def seen(record: RunRecord) -> tuple[object, ...]:
    """A record but for ``due_at``, which a store's row gives on the clock as it stands at the read.

    (On a real clock, the offset between it and the wall clock moves by microseconds between reads.)
    """
    return (record.run, record.due_wall, record.started_at, record.ended_at, record.outcome, record.value)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    made: list[Scheduler] = []
    schemas: list[str] = []
    holder: list[Backend] = []

    def on_event(event: TaskEvent) -> None:
        holder[0].ended.set()

    def start() -> Scheduler:
        if request.param == "memory":
            scheduler = Scheduler(workers=2, clock=FakeClock(1000.0, wall_start=START))
        elif request.param == "sqlite":
            clock = FakeClock(1000.0, wall_start=START)
            scheduler = Scheduler(workers=2, clock=clock, store=tmp_path / "history.db")
        else:
            if not schemas:
                require_postgres()
                schemas.append(new_schema())
            store = PostgresStore(DSN, schema=schemas[0], node="a", lease=2.0, poll=0.5)
            scheduler = Scheduler(workers=2, store=store)
        scheduler.subscribe(on_event, kinds=["completed", "failed", "missed"])
        made.append(scheduler)
        return scheduler

    holder.append(Backend(request.param, start))
    yield holder[0]
    for scheduler in made:
        scheduler.shutdown(timeout=10)
    drop_schemas(schemas)


def test_history_lists_a_recurring_tasks_runs_newest_first_with_their_kept_values(backend: Backend) -> None:
    scheduler = backend.start()
    scheduler.schedule_at_fixed_rate(jobs.numbered, 0.3, task_id="beat", keep_result=True)

    runs = backend.wait_runs(scheduler, "beat", 3, 0.3)[:3]

    newest = runs[0].run
    assert [r.run for r in runs] == [newest, newest - 1, newest - 2]
    for record in runs:
        assert record.outcome == "completed"
        assert record.value == {"run": record.run, "tags": ["a", "b"]}  # as JSON gives it back
        assert (record.reason, record.error, record.attempt, record.manual) == (None, None, 1, False)
        assert record.node == backend.node
        assert record.due_wall.tzinfo is not None
        assert record.started_at is not None
        assert record.ended_at is not None
        # On a shared store ``started_at`` is the database's clock read at the start, ``ended_at``
        # the node's estimate of that clock (DatabaseClock): they may disagree by a little.
        slack = timedelta(0) if backend.fake else timedelta(milliseconds=50)
        assert record.due_wall <= record.started_at + slack
        assert record.started_at <= record.ended_at + slack
    assert runs[0].due_at > runs[1].due_at > runs[2].due_at
    assert runs[0].due_at - runs[1].due_at == pytest.approx(0.3, abs=1e-3)  # the grid, in clock seconds
    assert [seen(r) for r in scheduler.history("beat", limit=2)] == [seen(r) for r in runs[:2]]


def test_a_failed_run_and_an_ended_task_keep_their_history(backend: Backend) -> None:
    scheduler = backend.start()
    handle = scheduler.schedule_once(jobs.boom, 0.1, task_id="broken")

    [record] = backend.wait_runs(scheduler, "broken", 1, 0.1)

    with pytest.raises(RuntimeError, match="boom"):
        handle.result(timeout=10)
    assert (record.run, record.outcome, record.value) == (1, "failed", None)
    assert record.error == "RuntimeError: boom"
    assert [seen(r) for r in scheduler.history("broken")] == [seen(record)]  # it ended: its runs stay


def test_a_task_without_keep_result_keeps_no_value(backend: Backend) -> None:
    scheduler = backend.start()
    scheduler.schedule_once(jobs.numbered, 0.1, task_id="plain")

    [record] = backend.wait_runs(scheduler, "plain", 1, 0.1)

    assert (record.outcome, record.value) == ("completed", None)


@pytest.mark.parametrize("fn", [jobs.big, jobs.not_json], ids=["too-large", "not-json"])
def test_a_value_that_does_not_fit_leaves_the_run_completed_without_it(
    backend: Backend, fn: Callable[[], object]
) -> None:
    scheduler = backend.start()
    handle = scheduler.schedule_once(fn, 0.1, task_id="unkept", keep_result=True)

    [record] = backend.wait_runs(scheduler, "unkept", 1, 0.1)

    assert (record.outcome, record.value) == ("completed", None)
    assert handle.result(timeout=10) == fn()  # the node that ran it still has the value


def test_an_id_never_seen_has_no_history_and_a_bad_limit_is_refused(backend: Backend) -> None:
    scheduler = backend.start()

    assert scheduler.history("never-seen") == []
    with pytest.raises(ValueError, match="limit"):
        scheduler.history("never-seen", limit=0)
    with pytest.raises(TypeError, match="limit"):
        scheduler.history("never-seen", limit=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="limit"):
        scheduler.history("never-seen", limit=True)
    with pytest.raises(TypeError, match="task_id"):
        scheduler.history(7)  # type: ignore[arg-type]


def test_keep_result_must_be_a_bool(backend: Backend) -> None:
    scheduler = backend.start()
    with pytest.raises(TypeError, match="keep_result"):
        scheduler.schedule_once(jobs.numbered, 1.0, task_id="x", keep_result="yes")  # type: ignore[arg-type]
    assert scheduler.history("x") == []
    with pytest.raises(LookupError):
        scheduler.info("x")  # nothing was scheduled


# -- memory only ----------------------------------------------------------------------------------


def test_a_missed_run_is_in_the_history_with_its_reason(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    scheduler = make_scheduler()
    scheduler.schedule_at_fixed_rate(jobs.numbered, 1.0, task_id="late", misfire_grace=0.0)
    scheduler.advance(0.0)
    clock.advance(1.5)  # the run due at +1 is 0.5 s late when the scheduler sees it
    scheduler.settle()

    records = scheduler.history("late")

    assert records[0].outcome == "missed"
    assert records[0].reason == "misfire"
    assert records[0].started_at is None
    assert records[1].outcome == "completed"


def test_memory_keeps_the_last_hundred_runs_of_a_task(make_scheduler: Callable[..., Scheduler]) -> None:
    scheduler = make_scheduler()
    scheduler.schedule_at_fixed_rate(jobs.numbered, 1.0, task_id="busy")
    scheduler.advance(250.0)

    records = scheduler.history("busy", limit=1000)

    assert len(records) == 100
    assert records[0].run == 251
    assert records[-1].run == 152


def test_a_finished_task_keeps_its_runs_while_the_history_keeps_it(clock: FakeClock) -> None:
    with Scheduler(workers=1, clock=clock, history=1) as scheduler:
        scheduler.schedule_once(jobs.numbered, 0.0, task_id="first")
        scheduler.advance(0.0)
        assert [r.run for r in scheduler.history("first")] == [1]
        scheduler.schedule_once(jobs.numbered, 0.0, task_id="second")
        scheduler.advance(0.0)

        assert scheduler.history("first") == []  # it left the history of finished tasks
        assert [r.run for r in scheduler.history("second")] == [1]


def test_a_retried_run_counts_its_attempt(make_scheduler: Callable[..., Scheduler]) -> None:
    scheduler = make_scheduler()
    scheduler.schedule_once(jobs.boom, 0.0, task_id="again", retry=Retry(attempts=2, delay=1.0, jitter=0.0))
    scheduler.advance(5.0)

    [record] = scheduler.history("again")
    assert (record.outcome, record.attempt) == ("failed", 2)


def test_a_timed_out_run_and_an_interrupted_one_say_so(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    scheduler = make_scheduler()
    started = {"slow": threading.Event(), "stopped": threading.Event()}

    def polite(name: str) -> None:  # runs until asked to stop
        started[name].set()
        while not current_run().cancel_requested:
            started[name].wait(0.01)
        raise RunCancelled

    slow = scheduler.schedule_once(polite, 0.0, args=("slow",), task_id="slow", timeout=1.0)
    stopped = scheduler.schedule_once(polite, 0.0, args=("stopped",), task_id="stopped")
    assert started["slow"].wait(10)
    assert started["stopped"].wait(10)
    clock.advance(1.0)  # the slow one's timeout: asked to stop, it raises RunCancelled
    assert stopped.cancel(interrupt=True)
    with pytest.raises(TaskTimeoutError):
        slow.result(timeout=10)
    with pytest.raises(CancelledError):
        stopped.result(timeout=10)

    [timed_out] = scheduler.history("slow")
    [cancelled] = scheduler.history("stopped")
    assert (timed_out.outcome, cancelled.outcome) == ("timed_out", "cancelled")
    assert timed_out.error is not None
    assert timed_out.error.startswith("TaskTimeoutError")
    assert cancelled.error is None


def test_the_actor_answers_query_history(make_scheduler: Callable[..., Scheduler]) -> None:
    scheduler = make_scheduler()
    scheduler.schedule_once(jobs.numbered, 0.0, task_id="asked", keep_result=True)
    scheduler.advance(0.0)

    records = scheduler.ref.ask(QueryHistory("asked", 10), timeout=5)

    assert [(r.run, r.value) for r in records] == [(1, {"run": 1, "tags": ["a", "b"]})]
    assert scheduler.ref.ask(QueryHistory("unknown"), timeout=5) is None  # no record: the store's to say
    with pytest.raises(ValueError, match="limit"):
        QueryHistory("asked", 0)
