"""Durable tasks through the facade, on a real SQLite file: what is stored, what comes back.

Every test uses a FakeClock whose wall reading starts at the same instant, so times are exact;
a "restart" is a new ``Scheduler`` on the same file after the first one shut down.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from concurrent.futures import CancelledError
from datetime import timedelta
from pathlib import Path

import pytest

from actors import (
    DuplicateTaskError,
    FakeClock,
    MissedRunError,
    Scheduler,
    SchedulerShutdownError,
    SQLiteStore,
    StoreError,
    StoreLockedError,
    UnknownTaskError,
)
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder
from tests.durable import tasks
from tests.durable.files import START, ledger, stored

RECORD = "tests.durable.tasks:record"


# -- what a durable task may be -----------------------------------------------------------------


def test_tasks_are_durable_by_default_with_a_store_and_committed_when_the_call_returns(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    handle = s.schedule_once(tasks.record, delay=60.0, args=(1, (2, 3)), kwargs={"k": "v"}, task_id="job")
    row = stored(path)["job"]  # another connection sees it: committed
    assert (row.fn_ref, row.status, json.loads(row.args_json)) == (RECORD, "scheduled", [1, [2, 3]])
    assert row.next_due == (START + timedelta(seconds=60)).timestamp()
    assert handle.info().next_run_wall == START + timedelta(seconds=60)
    minted = s.schedule_at_fixed_rate(RECORD, 10.0)  # a reference string works too
    assert stored(path)[minted.task_id].status == "scheduled"


def test_a_durable_task_gets_its_arguments_as_json_gives_them_back(start: Callable[..., Scheduler]) -> None:
    s = start()
    handle = s.schedule_once(tasks.echo, delay=0.0, args=(1, (2, 3)), kwargs={"t": (4,)})
    s.settle()
    assert handle.result(timeout=5) == ((1, [2, 3]), {"t": [4]})  # the same after a restart


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (lambda: None, "lambda"),
        (functools.partial(tasks.echo, 1), "no module-level name"),
        (EventRecorder().__call__, "bound method"),
    ],
    ids=["lambda", "partial", "bound-method"],
)
def test_what_cannot_be_stored_by_name_is_refused_at_the_call(
    start: Callable[..., Scheduler], path: Path, fn: Callable[[], object], why: str
) -> None:
    s = start()
    with pytest.raises(ValueError, match=why) as caught:
        s.schedule_once(fn, delay=1.0)
    assert "package.module:function" in str(caught.value)
    assert stored(path) == {}


def test_a_nested_function_is_refused_and_durable_false_takes_it(start: Callable[..., Scheduler]) -> None:
    s = start()

    def nested() -> str:
        return "in memory"

    with pytest.raises(ValueError, match="inside a function"):
        s.schedule_once(nested, delay=0.0)
    assert s.schedule_once(nested, delay=0.0, durable=False).result(timeout=5) == "in memory"


def test_arguments_that_do_not_round_trip_through_json_are_refused(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    with pytest.raises(TypeError, match=r"args\[0\] is a datetime"):
        s.schedule_once(tasks.echo, delay=1.0, args=(START,))
    with pytest.raises(TypeError, match="keys must be str"):
        s.schedule_once(tasks.echo, delay=1.0, kwargs={"m": {1: 2}})
    assert stored(path) == {}


def _cycle() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    return loop


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        pytest.param((_cycle(),), {}, r"args\[0\]\[0\] is args\[0\] again \(a cycle\)", id="list-in-itself"),
        pytest.param(
            (), {"k": {"x": [_cycle()]}}, r"kwargs\['k'\]\['x'\]\[0\]\[0\] is .* again", id="deep-cycle"
        ),
        pytest.param((10**5000,), {}, r"args\[0\] is an int of about 5000 digits", id="huge-int"),
        pytest.param((1, _nested(5000)), {}, r"args\[1\]\[0\].* is nested more than 100 deep", id="too-deep"),
    ],
)
def test_arguments_json_cannot_write_are_a_type_error_naming_where_they_are(
    start: Callable[..., Scheduler],
    path: Path,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    match: str,
) -> None:
    s = start()
    with pytest.raises(TypeError, match=match):
        s.schedule_once(tasks.echo, delay=1.0, args=args, kwargs=kwargs)
    shared = [1]
    s.schedule_once(
        tasks.echo, delay=1.0, task_id="shared", args=([shared, shared], _nested(100))
    )  # no cycle
    assert set(stored(path)) == {"shared"}


def test_durable_true_needs_a_store_and_references_work_without_one(clock: FakeClock) -> None:
    with Scheduler(workers=1, clock=clock) as s:
        with pytest.raises(ValueError, match="needs a store"):
            s.schedule_once(tasks.noop, delay=1.0, durable=True)
        assert s.schedule_once("tests.durable.tasks:echo", delay=0.0, args=(1,)).result(timeout=5) == (
            (1,),
            {},
        )
        with pytest.raises(ValueError, match="does not name an importable function"):
            s.schedule_once("tests.durable.tasks:missing", delay=0.0)


# -- cancels, ids, handles ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["handle", "id", "id-unsettled"])
def test_a_cancel_that_returns_true_is_committed_before_it_returns(
    start: Callable[..., Scheduler], path: Path, how: str
) -> None:
    s = start()
    handle = s.schedule_once(tasks.noop, delay=60.0, task_id="job")
    if how != "id-unsettled":
        s.settle()
    assert (handle.cancel() if how == "handle" else s.cancel("job")) is True
    assert stored(path)["job"].status == "cancelled"


def test_if_exists_keep_and_replace_for_a_program_declaring_its_tasks_at_start(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    first = s.schedule_at_fixed_rate(tasks.record, 10.0, task_id="beat")
    s.advance(25.0)
    assert first.info().run_count == 3
    with pytest.raises(DuplicateTaskError, match="beat"):
        s.schedule_at_fixed_rate(tasks.record, 10.0, task_id="beat")
    kept = s.schedule_at_fixed_rate(tasks.noop, 99.0, task_id="beat", if_exists="keep")
    assert kept == first
    assert stored(path)["beat"].fn_ref == RECORD  # untouched
    replaced = s.schedule_at_fixed_rate(tasks.echo, 5.0, 5.0, task_id="beat", if_exists="replace")
    assert replaced == first
    info = replaced.info()
    assert (info.run_count, info.trigger.interval) == (3, 5.0)  # counters kept, definition new
    row = stored(path)["beat"]
    assert (row.fn_ref, row.run_count) == ("tests.durable.tasks:echo", 3)


# Regression (issue 22, point 11): a program that re-declares its hourly task at every start with
# if_exists="replace" and a new interval got an extra run at once, right after the catch-up run
# the restart had just made.
def test_a_restart_that_replaces_the_interval_adds_no_run_after_the_catch_up_run(
    start: Callable[..., Scheduler],
) -> None:
    s = start()
    s.schedule_at_fixed_rate(tasks.record, 3600.0, task_id="report", if_exists="replace")
    s.settle()
    s.shutdown()
    again = start(wall=START + timedelta(minutes=90))  # down for 90 minutes: one catch-up run
    again.settle()
    assert len(tasks.CALLS) == 2
    report = again.schedule_at_fixed_rate(tasks.record, 60.0, task_id="report", if_exists="replace")
    again.settle()
    assert len(tasks.CALLS) == 2  # no run the new interval does not call for ...
    assert report.info().next_run_at == again.clock.now() + 60.0  # ... a minute after the last
    again.advance(60.0)
    assert len(tasks.CALLS) == 3


def test_handle_finds_loaded_and_live_tasks(start: Callable[..., Scheduler]) -> None:
    s = start()
    s.schedule_once(tasks.noop, delay=60.0, task_id="later")
    s.shutdown()
    again = start()
    handle = again.handle("later")
    assert handle.task_id == "later"
    assert handle.info().status is TaskStatus.SCHEDULED
    with pytest.raises(UnknownTaskError):
        again.handle("never")


# -- restart ---------------------------------------------------------------------------------------


def test_a_restart_loads_every_live_task_with_its_counters_and_next_due_time(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    s.schedule_at_fixed_rate(tasks.record, 10.0, task_id="rate", max_consecutive_failures=3)
    s.schedule_with_fixed_delay(tasks.fail, 7.0, task_id="delay")
    s.schedule_once(tasks.record, delay=100.0, task_id="once", name="the once")
    s.advance(20.0)
    before = {info.task_id: info for info in s.tasks()}
    s.shutdown()
    again = start(wall=START + timedelta(seconds=20))  # restarted where the first one stopped
    after = {info.task_id: info for info in again.tasks()}
    assert set(after) == {"rate", "delay", "once"}
    for task_id, info in after.items():
        old = before[task_id]
        assert (info.run_count, info.failure_count, info.consecutive_failures) == (
            old.run_count,
            old.failure_count,
            old.consecutive_failures,
        )
        assert info.next_run_wall == old.next_run_wall
    assert after["once"].name == "the once"
    again.advance(80.0)
    assert again.info("once").status is TaskStatus.COMPLETED


def test_the_last_failed_runs_error_stays_stored_after_later_successes_and_a_restart(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    s.schedule_at_fixed_rate(tasks.fail_on_second_run, 10.0, task_id="sync")
    s.advance(35.0)
    runs = s.info("sync").run_count
    assert runs >= 3  # the failed run 2, and a success after it
    assert s.info("sync").failure_count == 1
    s.shutdown()
    assert stored(path)["sync"].last_error == "RuntimeError: failed on run 2"
    again = start(wall=START + timedelta(seconds=35))  # the failure is known from the store only
    again.advance(20.0)
    assert again.info("sync").run_count > runs  # later runs succeeded in this process too
    again.shutdown()
    final = stored(path)["sync"]
    assert (final.last_outcome, final.last_error) == ("completed", "RuntimeError: failed on run 2")


def test_a_task_due_while_nothing_ran_is_due_at_once_after_a_restart(start: Callable[..., Scheduler]) -> None:
    s = start()
    s.schedule_once(tasks.record, delay=30.0, task_id="once")
    s.shutdown()
    again = start(wall=START + timedelta(hours=5))  # down for five hours
    again.settle()
    assert again.info("once").status is TaskStatus.COMPLETED
    assert [key for key, _, _ in tasks.CALLS] == ["once@2026-01-01T00:00:30.000Z"]  # the run's stable key


def test_listeners_given_at_start_see_the_runs_of_tasks_due_as_they_load(
    start: Callable[..., Scheduler], recorder: EventRecorder
) -> None:
    s = start()
    s.schedule_once(tasks.record, delay=30.0, task_id="once")
    s.shutdown()
    again = start(wall=START + timedelta(hours=5), listeners=[recorder])
    again.settle()
    assert recorder.kinds("once") == [EventKind.DUE, EventKind.STARTED, EventKind.COMPLETED]


def test_a_listener_given_at_start_is_checked_before_anything_starts(path: Path) -> None:
    with pytest.raises(TypeError, match="listener must be callable"):
        Scheduler(store=path, listeners=["not a listener"])  # type: ignore[list-item]
    Scheduler(store=path).shutdown()  # nothing was left holding the file


def test_minted_ids_never_collide_with_stored_ones(start: Callable[..., Scheduler]) -> None:
    s = start()
    first = {s.schedule_once(tasks.noop, delay=60.0).task_id for _ in range(5)}
    s.shutdown()
    again = start()
    second = {again.schedule_once(tasks.noop, delay=60.0).task_id for _ in range(5)}
    assert not first & second
    assert len(again.tasks()) == 10


def test_shutdown_keeps_durable_tasks_scheduled_in_the_store(
    start: Callable[..., Scheduler], path: Path, recorder: EventRecorder
) -> None:
    s = start()
    s.subscribe(recorder)
    durable = s.schedule_at_fixed_rate(tasks.noop, 10.0, task_id="durable")
    memory = s.schedule_once(lambda: None, delay=60.0, durable=False)
    s.advance(1.0)
    s.shutdown()
    assert (EventKind.CANCELLED, "durable") not in [(e.kind, e.task_id) for e in recorder.events]
    assert stored(path)["durable"].status == "scheduled"
    assert not durable.done()
    with pytest.raises(SchedulerShutdownError, match="stays in the store"):
        durable.result(timeout=30)  # at once, not after 30 s
    with pytest.raises(CancelledError):
        memory.result(timeout=0)  # memory-only tasks end as before


# -- misfire ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_store", [True, False])
def test_misfire_grace_skips_late_runs(
    start: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder, with_store: bool
) -> None:
    s = start() if with_store else Scheduler(workers=1, clock=clock)
    try:
        s.subscribe(recorder, [EventKind.MISSED, EventKind.COMPLETED, EventKind.FAILED])
        once = s.schedule_once(tasks.noop, delay=10.0, misfire_grace=5.0)
        rate = s.schedule_at_fixed_rate(tasks.noop, 10.0, 10.0, misfire_grace=1.0)
        s.clock.advance(35.0)  # asleep, as a suspended process: everything is late
        s.settle()
        assert once.info().status is TaskStatus.FAILED
        with pytest.raises(MissedRunError, match="late"):
            once.result(timeout=5)
        assert rate.info().status is TaskStatus.SCHEDULED
        assert rate.info().run_count == 0
        assert rate.info().next_run_at == 1040.0  # its next slot; 1010 to 1030 were missed
        kinds = [(e.kind, e.task_id, e.final) for e in recorder.events]
        assert (EventKind.MISSED, once.task_id, True) in kinds
        assert (EventKind.MISSED, rate.task_id, False) in kinds
    finally:
        if not with_store:
            s.shutdown()


def test_without_misfire_grace_a_late_run_still_runs_once(start: Callable[..., Scheduler]) -> None:
    s = start()
    rate = s.schedule_at_fixed_rate(tasks.noop, 10.0, 10.0)
    s.clock.advance(105.0)
    s.settle()
    assert rate.info().run_count == 1  # the missed slots coalesce into one run
    assert rate.info().next_run_at == 1110.0


# -- the run ledger, references that no longer import ----------------------------------------------


def test_the_run_ledger_records_each_run(start: Callable[..., Scheduler], path: Path) -> None:
    s = start()
    s.schedule_at_fixed_rate(tasks.fail, 10.0, task_id="f", max_consecutive_failures=2)
    s.schedule_once(tasks.noop, delay=5.0, task_id="ok")
    s.advance(30.0)
    rows = [(r.task_id, r.run, r.outcome) for r in ledger(path)]
    assert rows == [("f", 1, "failed"), ("ok", 1, "completed"), ("f", 2, "failed")]
    final = stored(path)
    assert final["f"].status == "failed"
    assert final["ok"].status == "completed"
    assert "RuntimeError: always fails" in (final["f"].last_error or "")


def test_a_reference_that_no_longer_imports_fails_each_run_and_does_not_stop_the_load(
    start: Callable[..., Scheduler], path: Path
) -> None:
    store = SQLiteStore(path)
    store.open()
    from actors.store import TaskDefinition

    store.add(
        TaskDefinition(
            task_id="renamed",
            fn_ref="tests.durable.no_such_module:job",
            args_json="[]",
            kwargs_json="{}",
            trigger_json=json.dumps({"rate": 10.0, "anchor": START.timestamp()}),
            options_json='{"max_consecutive_failures": 2}',
            next_due=START.timestamp(),
        )
    )
    store.close()
    s = start()
    s.schedule_once(tasks.noop, delay=1.0, task_id="other")
    s.advance(20.0)
    info = s.info("renamed")
    assert info.status is TaskStatus.FAILED  # two failed runs in a row: its limit
    assert isinstance(info.last_error, ImportError)
    assert s.info("other").status is TaskStatus.COMPLETED


# -- the file ----------------------------------------------------------------------------------------


def test_one_scheduler_per_file(start: Callable[..., Scheduler], path: Path) -> None:
    start()
    with pytest.raises(StoreLockedError):
        Scheduler(workers=1, store=path)


def test_a_file_that_is_not_a_store_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a database at all" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"notes\.txt"):
        Scheduler(workers=1, store=path)
    assert path.read_bytes() == before


class FailingCancels(SQLiteStore):
    """A real SQLite store whose ``cancel`` fails (injected), as a locked or full disk can make it."""

    def cancel(self, task_id: str) -> bool:
        raise StoreError(f"cannot cancel {task_id!r}: disk full (injected)")


@pytest.mark.parametrize("by_handle", [True, False])
def test_a_cancel_the_store_cannot_commit_raises_and_still_cancels_here(path: Path, by_handle: bool) -> None:
    clock = FakeClock(1000.0, wall_start=START)
    s = Scheduler(workers=1, clock=clock, store=FailingCancels(path))
    try:
        handle = s.schedule_once(RECORD, 10.0, task_id="doomed")
        s.settle()
        cancel = handle.cancel if by_handle else functools.partial(s.cancel, "doomed")
        with pytest.raises(StoreError, match="disk full"):
            cancel()
        s.settle()
        assert handle.info().status is TaskStatus.CANCELLED
        s.advance(20.0)
        assert tasks.CALLS == []
    finally:
        s.shutdown(timeout=10)
    assert stored(path)["doomed"].status == "cancelled"  # the scheduler's own save of its end landed
