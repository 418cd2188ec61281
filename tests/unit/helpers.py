"""Small helpers shared by the unit tests: build commands and drive a Timetable by hand."""

from __future__ import annotations

from typing import Any

from actors.timetable import Effects, Timetable
from messages import EventKind, RunTask, Schedule, TaskInfo, Trigger

ALL_KINDS = frozenset(EventKind)


def noop() -> None:
    return None


def make(task_id: str, trigger: Trigger, **kwargs: Any) -> Schedule:
    kwargs.setdefault("fn", noop)
    return Schedule(task_id=task_id, trigger=trigger, **kwargs)


def timetable(workers: int = 1, *, history: int = 10_000, wanted: frozenset[EventKind] = ALL_KINDS) -> Timetable:
    table = Timetable(workers=workers, history=history)
    table.wanted = wanted
    return table


def dispatched(effects: Effects) -> list[tuple[int, str, int]]:
    """``(worker, task_id, run)`` for every dispatch."""
    return [(worker, msg.task_id, msg.run) for worker, msg in effects.dispatches]


def events(effects: Effects) -> list[tuple[EventKind, str, int | None]]:
    return [(e.kind, e.task_id, e.run) for e in effects.events]


class Sink:
    """A FinalStateSink that records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[TaskInfo, object]] = []

    def task_finished(self, info: TaskInfo, value: object) -> None:
        self.calls.append((info, value))


def only(effects: Effects) -> tuple[int, RunTask]:
    """The single dispatch of ``effects``."""
    assert len(effects.dispatches) == 1, effects.dispatches
    return effects.dispatches[0]


def take(table: Timetable) -> Effects:
    """``take_effects``, then hand each final state to its sink as the scheduler actor would."""
    effects = table.take_effects()
    for sink, info, value in effects.finished:
        sink.task_finished(info, value)
    return effects
