"""The Timetable driven by hand: no threads, no clock, just ``now`` values and Effects."""

from __future__ import annotations

import pytest

from actors.errors import DuplicateTaskError, SchedulerShutdownError, UnknownTaskError, WorkerLostError
from actors.timetable import COMPACT_MIN_STALE, Timetable
from messages import EventKind, FixedDelay, FixedRate, Once, TaskStatus
from tests.unit.helpers import Sink, dispatched, events, make, only, take, timetable

DUE, STARTED, COMPLETED, FAILED, CANCELLED = (
    EventKind.DUE,
    EventKind.STARTED,
    EventKind.COMPLETED,
    EventKind.FAILED,
    EventKind.CANCELLED,
)


def status(table: Timetable, task_id: str) -> TaskStatus:
    return table.info(task_id).status


# -- construction -------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, -1])
def test_needs_a_worker(workers: int) -> None:
    with pytest.raises(ValueError, match="workers"):
        Timetable(workers=workers)


def test_history_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="history"):
        Timetable(workers=1, history=-1)


def test_starts_empty() -> None:
    table = timetable(2)
    assert table.next_due() is None
    assert table.is_settled(0.0)
    assert table.infos() == []
    assert table.running_count == table.heap_size == table.live_count == 0
    assert not take(table)


# -- one-time tasks -----------------------------------------------------------------------------


def test_one_time_runs_once_at_its_due_time() -> None:
    table = timetable(1)
    sink = Sink()
    table.schedule(make("a", Once(10.0), sink=sink), now=0.0)
    assert not take(table)
    assert table.next_due() == 10.0
    assert table.info("a").next_run_at == 10.0
    assert not table.is_settled(10.0)
    assert table.is_settled(9.999)
    table.tick(now=9.999)
    assert not take(table)
    table.tick(now=10.0)
    effects = take(table)
    assert dispatched(effects) == [(0, "a", 1)]
    assert events(effects) == [(DUE, "a", 1), (STARTED, "a", 1)]
    assert [(e.at, e.due_at) for e in effects.events] == [(10.0, 10.0), (10.0, 10.0)]
    info = table.info("a")
    assert info.status is TaskStatus.RUNNING
    assert info.next_run_at is None
    assert table.running_count == 1
    table.completed(0, "a", 1, "value", finished_at=10.5, now=10.5)
    effects = take(table)
    assert events(effects) == [(COMPLETED, "a", 1)]
    assert effects.events[0].at == 10.5
    assert not effects.dispatches
    info = table.info("a")
    assert info.status is TaskStatus.COMPLETED
    assert info.done
    assert (info.run_count, info.failure_count, info.next_run_at) == (1, 0, None)
    assert sink.calls == [(info, "value")]
    assert table.live_count == 0
    table.tick(now=1e9)
    assert not take(table)
    assert table.is_settled(1e9)


def test_run_task_carries_fn_args_kwargs() -> None:
    def fn(*args: object, **kwargs: object) -> None:
        return None

    table = timetable(1)
    table.schedule(make("a", Once(0.0), fn=fn, args=(1, 2), kwargs={"x": 3}), now=0.0)
    _, msg = only(take(table))
    assert (msg.task_id, msg.run, msg.fn, msg.args, dict(msg.kwargs)) == ("a", 1, fn, (1, 2), {"x": 3})


def test_past_due_time_runs_asap_from_schedule_itself() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(-50.0)), now=0.0)
    effects = take(table)
    assert dispatched(effects) == [(0, "a", 1)]
    assert [e.at for e in effects.events] == [0.0, 0.0]
    assert effects.events[0].due_at == -50.0


def test_due_exactly_now_runs_from_schedule() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(5.0)), now=5.0)
    assert dispatched(take(table)) == [(0, "a", 1)]


def test_past_due_without_idle_worker_waits_ready() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    table.schedule(make("b", Once(0.0)), now=0.0)
    effects = take(table)
    assert dispatched(effects) == [(0, "a", 1)]
    assert events(effects) == [(DUE, "a", 1), (STARTED, "a", 1), (DUE, "b", 1)]
    assert status(table, "b") is TaskStatus.SCHEDULED
    assert table.info("b").next_run_at == 0.0
    table.completed(0, "a", 1, None, finished_at=1.0, now=1.0)
    effects = take(table)
    assert events(effects) == [(COMPLETED, "a", 1), (STARTED, "b", 1)]
    assert dispatched(effects) == [(0, "b", 1)]


def test_one_time_failure() -> None:
    table = timetable(1)
    sink = Sink()
    error = RuntimeError("boom")
    table.schedule(make("a", Once(0.0), sink=sink), now=0.0)
    take(table)
    table.failed(0, "a", 1, error, finished_at=2.0, now=2.0)
    effects = take(table)
    assert events(effects) == [(FAILED, "a", 1)]
    assert effects.events[0].error is error
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count, info.consecutive_failures) == (
        TaskStatus.FAILED,
        1,
        1,
        1,
    )
    assert info.last_error is error
    assert sink.calls == [(info, None)]


# -- ordering and concurrency -------------------------------------------------------------------


def test_equal_due_times_dispatch_in_scheduling_order() -> None:
    table = timetable(3)
    for name in "cab":
        table.schedule(make(name, Once(5.0)), now=0.0)
    table.tick(now=5.0)
    assert [task for _, task, _ in dispatched(take(table))] == ["c", "a", "b"]


def test_earlier_due_time_first_then_scheduling_order() -> None:
    table = timetable(5)
    plan = [("x", 3.0), ("y", 1.0), ("z", 3.0), ("w", 2.0), ("v", 1.0)]
    for name, at in plan:
        table.schedule(make(name, Once(at)), now=0.0)
    table.tick(now=10.0)
    assert [task for _, task, _ in dispatched(take(table))] == ["y", "v", "w", "x", "z"]


def test_fifo_across_ticks_with_one_worker_and_backlog() -> None:
    table = timetable(1)
    names = [f"t{i}" for i in range(8)]
    for name in names:
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.schedule(make("late", Once(1.0)), now=0.0)
    table.schedule(make("later", Once(2.0)), now=0.0)
    table.tick(now=1.0)
    order = []
    now = 1.0
    for _ in range(10):
        worker, msg = only(take(table))
        order.append(msg.task_id)
        now += 0.5
        table.tick(now=now)  # a tick while the worker is busy changes nothing about the order
        table.completed(worker, msg.task_id, 1, None, finished_at=now, now=now)
    assert order == [*names, "late", "later"]


def test_at_most_workers_running() -> None:
    table = timetable(3)
    for i in range(10):
        table.schedule(make(f"t{i}", Once(0.0)), now=0.0)
    effects = take(table)
    assert sorted(w for w, _, _ in dispatched(effects)) == [0, 1, 2]
    assert table.running_count == 3
    table.tick(now=1.0)
    assert not take(table).dispatches
    seen = {t for _, t, _ in dispatched(effects)}
    running = {w: t for w, t, _ in dispatched(effects)}
    now = 1.0
    while running:
        worker = min(running)
        table.completed(worker, running.pop(worker), 1, None, finished_at=now, now=now)
        for w, t, _ in dispatched(take(table)):
            assert w == worker  # only the worker that came free
            running[w] = t
            seen.add(t)
        assert table.running_count == len(running) <= 3
    assert seen == {f"t{i}" for i in range(10)}
    assert table.is_settled(now)


def test_ready_task_can_be_cancelled_and_never_runs() -> None:
    table = timetable(1)
    table.schedule(make("busy", Once(0.0)), now=0.0)
    table.schedule(make("waiting", Once(0.0)), now=0.0)
    take(table)
    assert table.cancel("waiting", now=1.0) is True
    assert events(take(table)) == [(CANCELLED, "waiting", None)]
    assert status(table, "waiting") is TaskStatus.CANCELLED
    table.completed(0, "busy", 1, None, finished_at=2.0, now=2.0)
    effects = take(table)
    assert events(effects) == [(COMPLETED, "busy", 1)]
    assert not effects.dispatches
    assert table.is_settled(2.0)


# -- cancel ---------------------------------------------------------------------------------------


def test_cancel_pending() -> None:
    table = timetable(1)
    sink = Sink()
    table.schedule(make("a", FixedRate(1.0, 5.0), sink=sink), now=0.0)
    assert table.cancel("a", now=1.0) is True
    effects = take(table)
    assert events(effects) == [(CANCELLED, "a", None)]
    assert effects.events[0].at == 1.0
    info = table.info("a")
    assert (info.status, info.next_run_at, info.run_count) == (TaskStatus.CANCELLED, None, 0)
    assert sink.calls == [(info, None)]
    assert table.next_due() is None
    table.tick(now=100.0)
    assert not take(table)
    assert table.cancel("a", now=101.0) is False  # already cancelled
    assert not take(table)


@pytest.mark.parametrize("trigger", [FixedRate(1.0, 0.0), FixedDelay(1.0, 0.0)])
@pytest.mark.parametrize("fails", [False, True])
def test_cancel_running_recurring(trigger: FixedRate | FixedDelay, fails: bool) -> None:
    table = timetable(1)
    sink = Sink()
    table.schedule(make("r", trigger, sink=sink), now=0.0)
    take(table)
    assert table.cancel("r", now=0.5) is True
    assert not take(table)  # the run goes on
    assert status(table, "r") is TaskStatus.RUNNING
    assert table.cancel("r", now=0.6) is False  # already cancelled
    if fails:
        table.failed(0, "r", 1, ValueError(), finished_at=0.7, now=0.7)
    else:
        table.completed(0, "r", 1, "v", finished_at=0.7, now=0.7)
    effects = take(table)
    assert events(effects) == [(FAILED if fails else COMPLETED, "r", 1), (CANCELLED, "r", None)]
    assert not effects.dispatches
    info = table.info("r")
    assert (info.status, info.run_count, info.next_run_at) == (TaskStatus.CANCELLED, 1, None)
    assert sink.calls == [(info, None)]
    assert table.next_due() is None
    table.tick(now=50.0)
    assert not take(table)


def test_cancel_running_one_time_returns_false_and_it_completes() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    take(table)
    assert table.cancel("a", now=0.5) is False
    assert not take(table)
    table.completed(0, "a", 1, None, finished_at=1.0, now=1.0)
    assert events(take(table)) == [(COMPLETED, "a", 1)]
    assert status(table, "a") is TaskStatus.COMPLETED


def test_cancel_unknown_or_finished() -> None:
    table = timetable(1)
    assert table.cancel("nope", now=0.0) is False
    table.schedule(make("a", Once(0.0)), now=0.0)
    table.completed(0, "a", 1, None, finished_at=0.0, now=0.0)
    take(table)
    assert table.cancel("a", now=1.0) is False
    assert not take(table)
    assert status(table, "a") is TaskStatus.COMPLETED


# -- recurring tasks and failures -------------------------------------------------------------------


def test_fixed_delay_runs_delay_after_finish() -> None:
    table = timetable(1)
    table.schedule(make("d", FixedDelay(2.0, 1.0)), now=0.0)
    assert table.next_due() == 1.0
    table.tick(now=1.0)
    only(take(table))
    table.completed(0, "d", 1, None, finished_at=1.5, now=1.5)
    assert table.info("d").next_run_at == 3.5
    assert table.info("d").status is TaskStatus.SCHEDULED
    assert table.next_due() == 3.5


def test_recurring_counters_and_reset_on_success() -> None:
    table = timetable(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    outcomes = [False, False, True, False, True]  # True = success
    now = 0.0
    for n, ok in enumerate(outcomes, start=1):
        worker, msg = only(take(table))
        assert msg.run == n
        if ok:
            table.completed(worker, "r", n, None, finished_at=now, now=now)
        else:
            table.failed(worker, "r", n, KeyError(n), finished_at=now, now=now)
        now += 1.0
        table.tick(now=now)
    info = table.info("r")
    assert (info.run_count, info.failure_count, info.consecutive_failures) == (5, 3, 0)
    assert isinstance(info.last_error, KeyError)
    assert info.last_error.args == (4,)


@pytest.mark.parametrize("limit", [1, 3])
def test_max_consecutive_failures_stops_with_failed(limit: int) -> None:
    table = timetable(1)
    sink = Sink()
    table.schedule(make("r", FixedDelay(1.0, 0.0), max_consecutive_failures=limit, sink=sink), now=0.0)
    now = 0.0
    # one success in between resets the streak
    plan = [False] * (limit - 1) + [True] + [False] * limit
    for n, ok in enumerate(plan, start=1):
        worker, msg = only(take(table))
        assert msg.run == n
        if ok:
            table.completed(worker, "r", n, None, finished_at=now, now=now)
        else:
            table.failed(worker, "r", n, OSError(n), finished_at=now, now=now)
        now += 1.0
        table.tick(now=now)
    effects = take(table)
    assert not effects.dispatches
    info = table.info("r")
    assert info.status is TaskStatus.FAILED
    assert (info.run_count, info.failure_count, info.consecutive_failures) == (2 * limit, 2 * limit - 1, limit)
    assert sink.calls == [(info, None)]
    assert table.live_count == 0


def test_max_failures_none_never_stops() -> None:
    table = timetable(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    for n in range(1, 51):
        worker, _ = only(take(table))
        table.failed(worker, "r", n, OSError(), finished_at=n - 1.0, now=n - 1.0)
        table.tick(now=float(n))
    assert table.info("r").consecutive_failures == 50
    assert table.info("r").status is TaskStatus.RUNNING


# -- events ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wanted",
    [frozenset(), frozenset({CANCELLED}), frozenset({STARTED, FAILED}), frozenset(EventKind)],
)
def test_only_wanted_events_are_built(wanted: frozenset[EventKind]) -> None:
    table = timetable(1, wanted=wanted)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    table.schedule(make("x", Once(0.5)), now=0.0)
    collected = events(take(table))
    table.cancel("r", now=0.1)
    table.failed(0, "r", 1, OSError(), finished_at=0.2, now=0.2)
    table.tick(now=0.5)
    table.completed(0, "x", 1, None, finished_at=0.6, now=0.6)
    collected += events(take(table))
    full = [
        (DUE, "r", 1),
        (STARTED, "r", 1),
        (FAILED, "r", 1),
        (CANCELLED, "r", None),
        (DUE, "x", 1),
        (STARTED, "x", 1),
        (COMPLETED, "x", 1),
    ]
    assert collected == [e for e in full if e[0] in wanted]


def test_event_order_per_task_over_runs() -> None:
    table = timetable(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    table.completed(0, "r", 1, None, finished_at=0.1, now=0.1)
    table.tick(now=1.0)
    table.failed(0, "r", 2, OSError(), finished_at=1.1, now=1.1)
    table.tick(now=2.0)
    table.cancel("r", now=2.05)
    table.completed(0, "r", 3, None, finished_at=2.1, now=2.1)
    got = take(table).events
    assert [(e.kind, e.run) for e in got] == [
        (DUE, 1),
        (STARTED, 1),
        (COMPLETED, 1),
        (DUE, 2),
        (STARTED, 2),
        (FAILED, 2),
        (DUE, 3),
        (STARTED, 3),
        (COMPLETED, 3),
        (CANCELLED, None),
    ]
    assert [e.due_at for e in got] == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, None]
    assert {e.name for e in got} == {"noop"}


def test_event_name_is_given_name() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(0.0), name="nice"), now=0.0)
    assert {e.name for e in take(table).events} == {"nice"}
    assert table.info("a").name == "nice"


# -- stale reports -------------------------------------------------------------------------------


def test_stale_reports_are_ignored() -> None:
    table = timetable(2)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    (worker, _, _), = dispatched(take(table))
    other = 1 - worker
    table.completed(worker, "r", 2, None, finished_at=0.1, now=0.1)  # wrong run
    table.completed(worker, "r", 0, None, finished_at=0.1, now=0.1)  # wrong run
    table.completed(other, "r", 1, None, finished_at=0.1, now=0.1)  # wrong worker
    table.failed(other, "r", 1, OSError(), finished_at=0.1, now=0.1)  # wrong worker
    table.completed(worker, "zzz", 1, None, finished_at=0.1, now=0.1)  # wrong task
    table.completed(7, "r", 1, None, finished_at=0.1, now=0.1)  # unknown worker
    assert not take(table)
    info = table.info("r")
    assert (info.status, info.run_count, info.failure_count) == (TaskStatus.RUNNING, 0, 0)
    table.completed(worker, "r", 1, None, finished_at=0.2, now=0.2)
    assert events(take(table)) == [(COMPLETED, "r", 1)]
    table.completed(worker, "r", 1, None, finished_at=0.3, now=0.3)  # duplicate
    assert not take(table)
    assert table.info("r").run_count == 1


# -- duplicates, reuse, shutdown ----------------------------------------------------------------------


def test_duplicate_live_id_changes_nothing() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(5.0)), now=0.0)
    before = (table.infos(), table.heap_size, table.next_due())
    take(table)
    with pytest.raises(DuplicateTaskError, match="'a'"):
        table.schedule(make("a", Once(0.0)), now=1.0)
    assert (table.infos(), table.heap_size, table.next_due()) == before
    assert not take(table)
    table.tick(now=5.0)  # still the original
    assert events(take(table)) == [(DUE, "a", 1), (STARTED, "a", 1)]
    with pytest.raises(DuplicateTaskError):  # a running task is live too
        table.schedule(make("a", Once(0.0)), now=6.0)


def test_id_reusable_after_finish() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    table.completed(0, "a", 1, None, finished_at=0.0, now=0.0)
    take(table)
    table.schedule(make("a", FixedDelay(1.0, 3.0)), now=1.0)
    info = table.info("a")
    assert (info.status, info.run_count, info.next_run_at) == (TaskStatus.SCHEDULED, 0, 3.0)
    assert table.cancel("a", now=1.0) is True
    table.schedule(make("a", Once(2.0)), now=1.0)
    table.tick(now=2.0)
    assert dispatched(take(table)) == [(0, "a", 1)]


def test_schedule_after_shut_down_raises() -> None:
    table = timetable(1)
    table.shut_down(now=0.0)
    assert table.closed
    with pytest.raises(SchedulerShutdownError):
        table.schedule(make("a", Once(0.0)), now=0.0)
    assert table.find("a") is None
    assert not take(table)


def test_shut_down_cancels_waiting_and_lets_running_finish() -> None:
    table = timetable(2)
    table.schedule(make("once", Once(0.0)), now=0.0)  # running
    table.schedule(make("rec", FixedRate(1.0, 0.0)), now=0.0)  # running
    table.schedule(make("ready", Once(0.0)), now=0.0)  # due, no worker
    table.schedule(make("pending", FixedDelay(1.0, 10.0)), now=0.0)
    take(table)
    table.shut_down(now=1.0)
    effects = take(table)
    assert sorted(events(effects)) == sorted([(CANCELLED, "ready", None), (CANCELLED, "pending", None)])
    assert not effects.dispatches
    assert status(table, "once") is status(table, "rec") is TaskStatus.RUNNING
    assert table.next_due() is None
    assert table.heap_size == 0
    assert table.cancel("rec", now=1.0) is False  # already ends after this run
    table.completed(0, "once", 1, 42, finished_at=2.0, now=2.0)
    table.completed(1, "rec", 1, None, finished_at=2.0, now=2.0)
    effects = take(table)
    assert events(effects) == [(COMPLETED, "once", 1), (COMPLETED, "rec", 1), (CANCELLED, "rec", None)]
    assert not effects.dispatches
    assert status(table, "once") is TaskStatus.COMPLETED
    assert status(table, "rec") is TaskStatus.CANCELLED
    assert table.live_count == 0
    assert table.is_settled(1e9)


# -- history and sinks ------------------------------------------------------------------------------


def test_history_limit_evicts_oldest() -> None:
    table = timetable(1, history=3)
    for i in range(5):
        table.schedule(make(f"t{i}", Once(10.0)), now=0.0)
    for i in [3, 0, 4, 1]:
        table.cancel(f"t{i}", now=1.0)
    assert table.find("t3") is None
    with pytest.raises(UnknownTaskError, match="t3"):
        table.info("t3")
    assert [table.info(t).status for t in ("t0", "t4", "t1")] == [TaskStatus.CANCELLED] * 3
    assert table.info("t2").status is TaskStatus.SCHEDULED  # live tasks are never evicted
    table.cancel("t2", now=1.0)
    assert table.find("t0") is None
    assert table.find("t2") is not None


def test_history_reused_id_is_refreshed() -> None:
    table = timetable(1, history=2)
    for name in ["a", "b", "a", "c"]:
        table.schedule(make(name, Once(5.0)), now=0.0)
        table.cancel(name, now=0.0)
    assert table.find("b") is None
    assert table.find("a") is not None
    assert table.find("c") is not None


def test_history_zero_keeps_nothing() -> None:
    table = timetable(1, history=0)
    sink = Sink()
    table.schedule(make("a", Once(0.0), sink=sink), now=0.0)
    assert table.find("a") is not None  # live
    table.completed(0, "a", 1, "v", finished_at=0.0, now=0.0)
    take(table)
    assert table.find("a") is None
    with pytest.raises(UnknownTaskError):
        table.info("a")
    assert len(sink.calls) == 1  # the sink is still told


def test_unknown_task_error_is_a_key_error_with_readable_message() -> None:
    table = timetable(1)
    with pytest.raises(KeyError) as caught:
        table.info("ghost")
    assert str(caught.value) == "no task with id 'ghost'"


def test_infos_in_scheduling_order_live_only() -> None:
    table = timetable(1)
    for name in "zyx":
        table.schedule(make(name, Once(5.0)), now=0.0)
    table.cancel("y", now=0.0)
    assert [i.task_id for i in table.infos()] == ["z", "x"]


def test_sinks_told_once_per_task() -> None:
    table = timetable(2)
    sinks = {name: Sink() for name in ("done", "cancelled", "shut")}
    table.schedule(make("done", Once(0.0), sink=sinks["done"]), now=0.0)
    table.schedule(make("cancelled", Once(9.0), sink=sinks["cancelled"]), now=0.0)
    table.schedule(make("shut", FixedRate(1.0, 5.0), sink=sinks["shut"]), now=0.0)
    assert not table.take_effects().finished
    table.completed(0, "done", 1, "result", finished_at=1.0, now=1.0)
    table.cancel("cancelled", now=1.0)
    table.cancel("cancelled", now=1.0)
    table.shut_down(now=2.0)
    table.shut_down(now=3.0)
    finished = table.take_effects().finished
    assert [(sink, info.task_id, info.status, value) for sink, info, value in finished] == [
        (sinks["done"], "done", TaskStatus.COMPLETED, "result"),
        (sinks["cancelled"], "cancelled", TaskStatus.CANCELLED, None),
        (sinks["shut"], "shut", TaskStatus.CANCELLED, None),
    ]
    for sink, info, _ in finished:
        assert sink.calls == []  # the timetable only returns them; the owner calls
        assert info == table.info(info.task_id)


# -- heap compaction -----------------------------------------------------------------------------------


def assert_heap_bounded(table: Timetable) -> None:
    stale = table.heap_size - table.live_count
    assert stale <= max(COMPACT_MIN_STALE, table.live_count), (table.heap_size, table.live_count)


def test_compaction_after_mass_cancel() -> None:
    table = timetable(1, wanted=frozenset())
    for i in range(10_000):
        table.schedule(make(f"t{i}", Once(1000.0 + i)), now=0.0)
    assert table.heap_size == 10_000
    for i in range(9_000):
        assert table.cancel(f"t{i}", now=0.0)
        assert_heap_bounded(table)
    assert table.live_count == 1_000
    assert table.heap_size <= 2 * 1_000
    assert table.next_due() == 1000.0 + 9_000
    table.tick(now=1e9)
    assert only(take(table))[1].task_id == "t9000"


def test_compaction_under_churn() -> None:
    table = timetable(1, wanted=frozenset())
    table.schedule(make("keep", Once(1e9)), now=0.0)
    peak = 0
    for i in range(100_000):
        table.schedule(make(f"c{i}", FixedRate(1.0, 10.0 + i % 7)), now=0.0)
        table.cancel(f"c{i}", now=0.0)
        peak = max(peak, table.heap_size)
    assert peak <= COMPACT_MIN_STALE + 2
    assert table.live_count == 1
    assert table.next_due() == 1e9


def test_stale_entries_dropped_when_they_surface() -> None:
    table = timetable(1, wanted=frozenset())
    for i in range(10):
        table.schedule(make(f"t{i}", Once(float(i))), now=-1.0)
    for i in range(0, 10, 2):
        table.cancel(f"t{i}", now=-1.0)
    assert table.heap_size == 10
    assert table.next_due() == 1.0
    table.tick(now=4.5)
    assert [t for _, t, _ in dispatched(take(table))] == ["t1"]
    assert table.heap_size == 5  # t0, t2, t4 dropped; t1, t3 released; t5..t9 stay


# -- workers ---------------------------------------------------------------------------------------


def test_worker_lost_fails_the_run_and_worker_is_not_reused() -> None:
    table = timetable(2)
    table.schedule(make("a", Once(0.0)), now=0.0)
    (worker, _, _), = dispatched(take(table))
    error = WorkerLostError("gone")
    table.worker_lost(worker, error, now=1.0)
    effects = take(table)
    assert events(effects) == [(FAILED, "a", 1)]
    assert effects.events[0].error is error
    info = table.info("a")
    assert (info.status, info.last_error) == (TaskStatus.FAILED, error)
    table.completed(worker, "a", 1, None, finished_at=1.5, now=1.5)  # a late report is stale
    assert not take(table)
    for i in range(3):
        table.schedule(make(f"b{i}", Once(2.0)), now=2.0)
    assert [w for w, _, _ in dispatched(take(table))] == [1 - worker]
    table.add_worker(worker, now=3.0)
    assert dispatched(take(table)) == [(worker, "b1", 1)]
    table.add_worker(worker, now=3.0)  # running: not idle twice
    table.completed(worker, "b1", 1, None, finished_at=4.0, now=4.0)
    assert dispatched(take(table)) == [(worker, "b2", 1)]
    assert table.running_count == 2


def test_idle_worker_lost_is_not_used() -> None:
    table = timetable(1)
    table.worker_lost(0, WorkerLostError("gone"), now=0.0)
    table.worker_lost(0, WorkerLostError("again"), now=0.0)  # unknown now: ignored
    table.schedule(make("a", Once(0.0)), now=0.0)
    effects = take(table)
    assert not effects.dispatches
    assert events(effects) == [(DUE, "a", 1)]
    table.add_worker(0, now=1.0)
    table.add_worker(0, now=1.0)  # idempotent
    assert dispatched(take(table)) == [(0, "a", 1)]
    table.schedule(make("b", Once(0.0)), now=1.0)
    assert not take(table).dispatches


def test_add_new_worker_grows_pool() -> None:
    table = timetable(1)
    for name in "abc":
        table.schedule(make(name, Once(0.0)), now=0.0)
    table.add_worker(5, now=0.0)
    assert dispatched(take(table)) == [(0, "a", 1), (5, "b", 1)]


def test_worker_lost_with_backlog_does_not_hand_work_to_the_lost_worker() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    table.schedule(make("b", Once(0.0)), now=0.0)  # waits for the only worker
    take(table)
    table.worker_lost(0, WorkerLostError("gone"), now=1.0)
    effects = take(table)
    assert not effects.dispatches
    assert events(effects) == [(FAILED, "a", 1)]
    assert status(table, "b") is TaskStatus.SCHEDULED
    table.add_worker(0, now=1.0)
    assert dispatched(take(table)) == [(0, "b", 1)]


def test_worker_lost_recurring_due_at_once_is_not_given_to_the_lost_worker() -> None:
    table = timetable(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    take(table)
    table.worker_lost(0, WorkerLostError("gone"), now=1.0)  # slot 1.0 is due at once
    effects = take(table)
    assert not effects.dispatches
    assert events(effects) == [(FAILED, "r", 1), (DUE, "r", 2)]
    table.add_worker(0, now=1.0)
    assert dispatched(take(table)) == [(0, "r", 2)]
