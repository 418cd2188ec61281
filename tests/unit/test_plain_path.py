"""The plain path: a plain task's run dealt as a ``PlainRun`` tuple, reported as a ``PlainDone``.

A plain one-time task (no options) whose runs nothing watches gets no ``RunTask`` and no
``Completed`` (``actors/core/effects.py``); anything that watches or changes it (a listener,
an interrupt, a stale report) takes the general path, which decides as it always did. Driven
on one thread: the timetable, and the worker's own loop (``run_batch``).
"""

from __future__ import annotations

from typing import Any

from actors.core.effects import as_run_task
from actors.core.task_record import TaskRecord
from actors.core.task_state import CANCELLED, COMPLETED
from actors.core.timetable import Timetable
from actors.runtime.run_context import current_run
from actors.runtime.worker import Report, run_batch
from actors.sync.claim import INTERRUPTED
from actors.sync.clock import FakeClock
from actors.sync.token import FINISHED, REVOKED, request_stop
from messages import Completed, EventKind, RunTask
from messages.commands import EMPTY_KWARGS


def _plain(task_id: str, fn: Any, due_at: float = 0.0) -> TaskRecord:
    return TaskRecord(task_id, fn, (), EMPTY_KWARGS, due_at, task_id)


def _settle(table: Timetable, reports: list[Report], now: float) -> None:
    """Take ``reports`` as the scheduler does (by type), then publish the ends."""
    with table.batch(now=now):
        for report in reports:
            if type(report) is tuple:
                table.completed_plain(report, now)
            else:
                table.completed(report, now)  # type: ignore[arg-type]
    _publish(table.take_effects().finished)


def _publish(finished: list[tuple[TaskRecord, object]]) -> None:
    for record, outcome in finished:  # as the scheduler actor does (Token.finish_all)
        record.finish(outcome)


def _deal(table: Timetable) -> list[tuple[int, list[Any]]]:
    effects = table.take_effects()
    _publish(effects.finished)
    return effects.batches


def test_a_plain_run_is_a_tuple_and_ends_completed_with_its_history_line() -> None:
    clock = FakeClock()
    table = Timetable(workers=1)
    task = _plain("p", lambda: 42)
    table.add(task, 0.0)
    ((worker, runs),) = _deal(table)
    assert type(runs[0]) is tuple  # a PlainRun
    run = as_run_task(runs[0])  # what it stands for
    assert isinstance(run, RunTask)
    assert (run.task_id, run.run, run.one_time, run.announce) == ("p", 1, True, False)
    reports: list[Report] = []
    run_batch(runs, worker, clock, lambda run: None, reports.append)
    assert [type(report) for report in reports] == [tuple]  # a PlainDone
    _settle(table, reports, 0.0)
    assert task.state is COMPLETED
    assert (task.token_state, task.outcome) == (FINISHED, 42)
    (record,) = table.runs("p", 10, wall_offset=0.0) or []
    assert (record.run, record.outcome) == (1, "completed")
    assert table.is_settled(0.0)


def test_current_run_inside_a_plain_run_names_the_task_and_its_run() -> None:
    clock = FakeClock()
    table = Timetable(workers=1)
    seen: list[tuple[str, int, float, int]] = []

    def look() -> None:
        context = current_run()
        seen.append((context.task_id, context.run, context.due_at, context.attempt))

    table.add(_plain("look", look, due_at=0.0), 0.0)
    ((worker, runs),) = _deal(table)
    reports: list[Report] = []
    run_batch(runs, worker, clock, lambda run: None, reports.append)
    assert seen == [("look", 1, 0.0, 1)]


def test_a_plain_run_interrupted_as_it_returns_ends_cancelled() -> None:
    clock = FakeClock()
    table = Timetable(workers=1)
    task = _plain("i", lambda: None)

    def interrupted() -> None:  # cancel(interrupt=True) while it runs: the run returns anyway
        assert task.claim is not None
        request_stop(task.claim, INTERRUPTED)
        task.revoke()

    task.fn = interrupted
    table.add(task, 0.0)
    ((worker, runs),) = _deal(table)
    reports: list[Report] = []
    run_batch(runs, worker, clock, lambda run: None, reports.append)
    _settle(table, reports, 0.0)
    assert task.state is CANCELLED


def test_a_completed_listener_gets_its_event_from_a_plain_run() -> None:
    clock = FakeClock()
    table = Timetable(workers=1)
    table.wanted = frozenset({EventKind.COMPLETED})
    table.add(_plain("e", lambda: "v"), 0.0)
    ((worker, runs),) = _deal(table)
    assert type(runs[0]) is tuple  # nobody listens for STARTED: still a PlainRun
    reports: list[Report] = []
    run_batch(runs, worker, clock, lambda run: None, reports.append)
    with table.batch(now=0.0):
        table.completed_plain(reports[0], 0.0)  # type: ignore[arg-type]
    effects = table.take_effects()
    assert [(event.kind, event.task_id, event.value) for event in effects.events] == [
        (EventKind.COMPLETED, "e", "v")
    ]


def test_a_started_listener_gets_run_tasks() -> None:
    table = Timetable(workers=1)
    table.wanted = frozenset({EventKind.STARTED})
    table.add(_plain("s", lambda: None), 0.0)
    ((_, runs),) = _deal(table)
    assert isinstance(runs[0], RunTask)
    assert runs[0].announce


def test_a_stale_plain_report_changes_nothing() -> None:
    clock = FakeClock()
    table = Timetable(workers=1)
    task = _plain("x", lambda: None)
    table.add(task, 0.0)
    ((worker, runs),) = _deal(table)
    reports: list[Report] = []
    run_batch(runs, worker, clock, lambda run: None, reports.append)
    _settle(table, reports, 0.0)
    activity = table.activity
    _settle(table, reports, 0.0)  # the same report again: its run was accounted for
    assert table.activity == activity
    assert task.state is COMPLETED


def test_a_plain_run_cancelled_before_it_starts_is_skipped() -> None:
    clock = FakeClock()
    table = Timetable(workers=1)
    task = _plain("c", lambda: None)
    table.add(task, 0.0)
    ((worker, runs),) = _deal(table)
    assert task.revoke() is not REVOKED  # the caller's cancel wins the token before the worker starts
    reports: list[Report] = []
    run_batch(runs, worker, clock, lambda run: None, reports.append)
    assert [type(report).__name__ for report in reports] == ["Skipped"]
    assert not isinstance(reports[0], Completed | tuple)
