"""``Scheduler.schedule_many``: one-time tasks in bulk, parked as plain data until needed."""

from __future__ import annotations

import asyncio
import gc
import math
import threading
from concurrent.futures import CancelledError

import pytest

from actors import FakeClock, Retry, SchedulerShutdownError, UnknownTaskError
from actors.api.scheduling import PARCEL_SIZE
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder


def test_each_task_runs_once_at_its_time_with_its_arguments(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    ran: list[tuple[float, int, str]] = []
    ids = s.schedule_many(
        lambda n, tag: ran.append((clock.now(), n, tag)),
        [3.0, 1.0, 2.0],
        args=[(1,), (2,), (3,)],
        kwargs={"tag": "x"},
    )
    assert len(ids) == 3
    assert len(set(ids)) == 3
    assert all(task_id.startswith("task-") for task_id in ids)
    s.advance(1.5)
    assert ran == [(1001.0, 2, "x")]
    s.advance(10.0)
    assert ran == [(1001.0, 2, "x"), (1002.0, 3, "x"), (1003.0, 1, "x")]
    for task_id in ids:
        info = s.info(task_id)
        assert (info.status, info.run_count) == (TaskStatus.COMPLETED, 1)


def test_ids_follow_the_order_of_the_delays(make_scheduler) -> None:
    s = make_scheduler()
    ids = s.schedule_many(lambda: None, [5.0] * 4)
    numbers = [int(task_id.removeprefix("task-")) for task_id in ids]
    assert numbers == sorted(numbers)
    assert [info.task_id for info in s.tasks()] == ids


def test_without_args_each_task_takes_none(make_scheduler) -> None:
    s = make_scheduler()
    calls: list[tuple[object, ...]] = []
    s.schedule_many(lambda *a: calls.append(a), [0.0, 0.0])
    s.settle()
    assert calls == [(), ()]


def test_an_empty_call_schedules_nothing(make_scheduler) -> None:
    s = make_scheduler()
    assert s.schedule_many(lambda: None, []) == []
    assert s.tasks() == []


def test_parts_keep_order_across_parcel_boundaries(make_scheduler) -> None:
    s = make_scheduler(workers=1)
    n = PARCEL_SIZE * 2 + 7
    ran: list[int] = []
    ids = s.schedule_many(ran.append, [1.0] * n, args=[(i,) for i in range(n)])
    assert len(ids) == n
    assert s.stats().live_tasks == n
    s.advance(1.0)
    assert ran == list(range(n))  # equal due times run in scheduling order


def test_queries_show_parked_tasks_as_scheduled(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    ids = s.schedule_many(lambda: None, [7.0, 8.0], name="bulk")
    info = s.info(ids[1])
    assert (info.status, info.name, info.next_run_at, info.run_count) == (
        TaskStatus.SCHEDULED,
        "bulk",
        1008.0,
        0,
    )
    assert [(i.task_id, i.status) for i in s.tasks()] == [(task_id, TaskStatus.SCHEDULED) for task_id in ids]
    assert s.stats().live_tasks == 2


def test_a_page_of_tasks_spans_held_and_parked_ones_in_order(make_scheduler) -> None:
    s = make_scheduler()
    held = [s.schedule_once(lambda: None, delay=60, task_id=f"held{n}").task_id for n in range(3)]
    parked = s.schedule_many(lambda: None, [60.0] * 4)
    every = [info.task_id for info in s.tasks()]
    assert every == held + parked
    for offset in range(len(every) + 2):
        for limit in (None, 0, 1, 2, 3, 5, 100):
            page = [info.task_id for info in s.tasks(offset=offset, limit=limit)]
            assert page == every[offset : None if limit is None else offset + limit], (offset, limit)
    assert s.info(parked[0]).status is TaskStatus.SCHEDULED  # paging unparks nothing
    for bad, error in ((-1, ValueError), ("1", TypeError), (True, TypeError)):
        with pytest.raises(error):
            s.tasks(offset=bad)
        with pytest.raises(error):
            s.tasks(limit=bad)


def test_events_name_each_task(make_scheduler, recorder: EventRecorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    ids = s.schedule_many(lambda: None, [0.0, 0.0], name="reminder")
    s.settle()
    recorder.wait_for(lambda events: sum(e.kind is EventKind.COMPLETED for e in events) == 2)
    for task_id in ids:
        assert recorder.kinds(task_id) == [EventKind.DUE, EventKind.STARTED, EventKind.COMPLETED]
    assert {e.name for e in recorder.events} == {"reminder"}


def test_cancel_by_id_prevents_the_run(make_scheduler, recorder: EventRecorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    ran: list[int] = []
    ids = s.schedule_many(ran.append, [1.0, 1.0], args=[(0,), (1,)])
    assert s.cancel(ids[0]) is True
    assert s.cancel(ids[0]) is False
    s.advance(2.0)
    assert ran == [1]
    assert s.info(ids[0]).status is TaskStatus.CANCELLED
    recorder.wait_for(lambda events: EventKind.CANCELLED in [e.kind for e in events])
    assert recorder.kinds(ids[0]) == [EventKind.CANCELLED]


def test_a_handle_by_id_works_as_any_handle(make_scheduler) -> None:
    s = make_scheduler()
    ids = s.schedule_many(lambda x: x * 2, [1.0, 1.0], args=[(21,), (5,)])
    first, second = s.handle(ids[0]), s.handle(ids[1])
    assert first == s.handle(ids[0])  # every handle of a task shares its record
    assert not first.done()
    assert second.cancel() is True
    s.advance(1.0)
    assert first.result(timeout=5) == 42
    with pytest.raises(CancelledError):
        second.result(timeout=5)


def test_options_apply_to_every_task(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    attempts: list[int] = []

    def flaky(n: int) -> int:
        attempts.append(n)
        if attempts.count(n) < 2:
            raise RuntimeError("first try fails")
        return n

    ids = s.schedule_many(
        flaky, [0.0, 0.0], args=[(1,), (2,)], retry=Retry(attempts=2, delay=1.0, jitter=0.0)
    )
    handles = [s.handle(task_id) for task_id in ids]
    s.settle()
    s.advance(5.0)
    assert [handle.result(timeout=5) for handle in handles] == [1, 2]
    assert sorted(attempts) == [1, 1, 2, 2]


def test_a_late_run_past_misfire_grace_is_missed(
    make_scheduler, clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    ran: list[int] = []
    (task_id,) = s.schedule_many(lambda: ran.append(1), [1.0], misfire_grace=0.5)
    clock.advance(5.0)  # a stall: the scheduler sees the time only now, 4 s after the due time
    s.settle()
    assert ran == []
    assert s.info(task_id).status is TaskStatus.FAILED
    recorder.wait_for(lambda events: EventKind.MISSED in [e.kind for e in events])


def test_async_def_functions_run_on_the_workers_loop(make_scheduler) -> None:
    s = make_scheduler()

    async def double(x: int) -> int:
        await asyncio.sleep(0)
        return x * 2

    ids = s.schedule_many(double, [0.0], args=[(4,)])
    assert s.handle(ids[0]).result(timeout=5) == 8


def test_a_reference_string_names_the_function(make_scheduler) -> None:
    s = make_scheduler()
    ids = s.schedule_many("math:sqrt", [0.0], args=[(16.0,)])
    assert s.handle(ids[0]).result(timeout=5) == 4.0


@pytest.mark.parametrize(
    ("delays", "args", "error", "words"),
    [
        ([1.0, "2"], None, TypeError, "delays[1]"),
        ([1.0, math.nan], None, ValueError, "delays[1]"),
        ([math.inf], None, ValueError, "delays[0]"),
        ([True], None, TypeError, "delays[0]"),
        ("12", None, TypeError, "delays must be"),
        (3.0, None, TypeError, "delays must be"),
        ([1.0, 2.0], [()], ValueError, "1 items for 2 delays"),
        ([1.0, 2.0], [(), "1"], TypeError, "args[1]"),  # a list will do, a str is one argument
        ([1.0, 2.0], [(), {1}], TypeError, "args[1]"),
        ([1.0], 5, TypeError, "args must be"),
    ],
)
def test_bad_input_raises_at_the_call_and_schedules_nothing(
    make_scheduler, delays, args, error, words
) -> None:
    s = make_scheduler()
    kept = s.schedule_once(lambda: None, delay=5.0)
    with pytest.raises(error) as raised:
        s.schedule_many(lambda *a: None, delays, args=args)
    assert words in str(raised.value)
    assert [info.task_id for info in s.tasks()] == [kept.task_id]


def test_huge_delays_are_accepted_as_schedule_once_accepts_them(make_scheduler) -> None:
    s = make_scheduler()
    ids = s.schedule_many(lambda: None, [1.7e308, 1.7e308])  # their sum overflows; each is finite
    assert [s.info(task_id).next_run_at for task_id in ids] == [1000.0 + 1.7e308] * 2


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"fn": 42}, TypeError),
        ({"fn": "no_such_module_x:f"}, ValueError),
        ({"kwargs": {1: 2}}, TypeError),
        ({"name": 3}, TypeError),
        ({"misfire_grace": -1.0}, ValueError),
        ({"timeout": 0.0}, ValueError),
        ({"retry": 3}, TypeError),
    ],
)
def test_bad_options_raise_and_schedule_nothing(make_scheduler, kwargs, error) -> None:
    s = make_scheduler()
    call = {"fn": lambda: None, "delays": [1.0]} | kwargs
    with pytest.raises(error):
        s.schedule_many(**call)
    assert s.tasks() == []


def test_after_shutdown_it_raises(make_scheduler) -> None:
    s = make_scheduler()
    s.shutdown()
    with pytest.raises(SchedulerShutdownError):
        s.schedule_many(lambda: None, [1.0])


def test_shutdown_cancels_parked_tasks(make_scheduler, recorder: EventRecorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    ids = s.schedule_many(lambda: None, [10.0] * 3)
    s.shutdown()
    recorder.wait_for(lambda events: sum(e.kind is EventKind.CANCELLED for e in events) == 3)
    assert sorted(e.task_id for e in recorder.events) == sorted(ids)


def test_shutdown_without_listeners_keeps_the_history(make_scheduler) -> None:
    s = make_scheduler(history=2)
    ids = s.schedule_many(lambda: None, [10.0] * 5)
    handle = s.handle(ids[0])  # a handle takes the task out of the parked ones
    s.shutdown()
    assert handle.done()
    with pytest.raises(CancelledError):
        handle.result(timeout=5)


def test_cancel_of_an_unknown_id_is_false_and_info_raises(make_scheduler) -> None:
    s = make_scheduler()
    s.schedule_many(lambda: None, [1.0])
    assert s.cancel("task-999999") is False
    with pytest.raises(UnknownTaskError):
        s.info("task-999999")


def test_tasks_scheduled_from_inside_a_task(make_scheduler) -> None:
    s = make_scheduler()
    done = threading.Event()
    ran: list[int] = []

    def fan_out() -> None:
        s.schedule_many(ran.append, [0.0] * 3, args=[(i,) for i in range(3)])
        done.set()

    s.schedule_once(fan_out, delay=0.0)
    assert done.wait(5)
    s.settle()
    assert sorted(ran) == [0, 1, 2]


def test_parked_tasks_are_not_tracked_by_the_garbage_collector(make_scheduler) -> None:
    s = make_scheduler()
    n = 20_000
    gc.collect()
    before = len(gc.get_objects())
    ids = s.schedule_many(
        lambda user, kind: None, [60.0 + i for i in range(n)], args=[(i, "mail") for i in range(n)]
    )
    s.settle()
    gc.collect()
    added = len(gc.get_objects()) - before
    assert len(ids) == n
    assert added < n * 0.01, f"{added} objects tracked for {n} parked tasks"


def test_memory_only_even_with_a_store(make_scheduler, tmp_path) -> None:
    s = make_scheduler(store=str(tmp_path / "tasks.db"))
    ids = s.schedule_many(lambda: None, [60.0])
    durable = s.schedule_once("math:sqrt", delay=60.0, args=(4.0,))
    assert s.info(ids[0]).status is TaskStatus.SCHEDULED
    s.shutdown()
    again = make_scheduler(store=str(tmp_path / "tasks.db"))
    assert [info.task_id for info in again.tasks()] == [durable.task_id]
