"""Validation of triggers and of the messages users may send; every message is frozen and slotted."""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import messages
from actors.sync.claim import Claim
from actors.sync.token import Token
from messages import (
    AddTask,
    BusExited,
    Cancel,
    Cancelled,
    CancelledInStore,
    Claimed,
    Completed,
    Cron,
    Drain,
    EventKind,
    Failed,
    FindTask,
    FixedDelay,
    FixedRate,
    Flush,
    Once,
    OutcomesSaved,
    Pause,
    Publish,
    QueryNextDue,
    QueryRecentRuns,
    QueryRunTotals,
    QueryStats,
    QueryTask,
    QueryTasks,
    QueryTaskTable,
    RecentRuns,
    Reschedule,
    Resume,
    RetrySaves,
    RunBatch,
    RunNow,
    RunTask,
    RunTotals,
    Schedule,
    SchedulerStats,
    Settle,
    Shutdown,
    Skipped,
    Started,
    StoreTotals,
    Subscribe,
    TaskEvent,
    TaskInfo,
    TaskStatus,
    TaskTable,
    Tick,
    TimerFired,
    Unsubscribe,
    WorkerExited,
    is_minted_id,
)
from messages.frozen import fast_init
from tests.unit.helpers import noop

NON_FINITE = [math.nan, math.inf, -math.inf]
NOT_NUMBERS = [True, False, "1", None, [1], 1j]


# -- triggers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("at", [0, -5, 1000.25, 10**6])
def test_once_accepts_finite_numbers_as_float(at: float) -> None:
    trigger = Once(at)
    assert trigger.at == at
    assert type(trigger.at) is float


@pytest.mark.parametrize("at", NON_FINITE)
def test_once_rejects_non_finite(at: float) -> None:
    with pytest.raises(ValueError, match="at must be finite"):
        Once(at)


@pytest.mark.parametrize("at", [v for v in NOT_NUMBERS if v is not None])
def test_once_rejects_non_numbers(at: object) -> None:
    with pytest.raises(TypeError, match="at"):
        Once(at)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="delay"):
        Once(delay=at)  # type: ignore[arg-type]


def test_once_needs_exactly_one_of_at_and_delay() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Once()
    with pytest.raises(ValueError, match="exactly one"):
        Once(None)
    with pytest.raises(ValueError, match="exactly one"):
        Once(1.0, delay=1.0)
    assert Once(delay=2).delay == 2.0
    assert Once(delay=2).resolved(10.0) == Once(12.0)


@pytest.mark.parametrize("cls", [FixedRate, FixedDelay])
@pytest.mark.parametrize("period", [0, 0.0, -0.0, -1, -1e-9, *NON_FINITE])
def test_recurring_rejects_non_positive_or_non_finite_period(cls: type, period: float) -> None:
    with pytest.raises(ValueError, match=r"interval|delay"):
        cls(period, 0.0)


@pytest.mark.parametrize("cls", [FixedRate, FixedDelay])
@pytest.mark.parametrize("first_at", NON_FINITE)
def test_recurring_rejects_non_finite_first_at(cls: type, first_at: float) -> None:
    with pytest.raises(ValueError, match="first_at"):
        cls(1.0, first_at)


@pytest.mark.parametrize("cls", [FixedRate, FixedDelay])
@pytest.mark.parametrize("bad", NOT_NUMBERS)
def test_recurring_rejects_non_numbers(cls: type, bad: object) -> None:
    with pytest.raises(TypeError):
        cls(bad, 0.0)
    if bad is not None:  # no first_at: it starts when the scheduler receives it
        with pytest.raises(TypeError):
            cls(1.0, bad)
        with pytest.raises(TypeError):
            cls(1.0, initial_delay=bad)


@pytest.mark.parametrize("cls", [FixedRate, FixedDelay])
def test_recurring_start_relative_to_receipt(cls: type) -> None:
    assert cls(5.0).resolved(100.0) == cls(5.0, 100.0)
    assert cls(5.0, initial_delay=2).resolved(100.0) == cls(5.0, 102.0)
    assert cls(5.0, 7.0).resolved(100.0) == cls(5.0, 7.0)
    with pytest.raises(ValueError, match="not both"):
        cls(5.0, 7.0, initial_delay=1.0)


@pytest.mark.parametrize("make_trigger", [Once, lambda v: FixedRate(v, 0.0), lambda v: FixedDelay(1.0, v)])
def test_huge_int_is_value_error(make_trigger: object) -> None:
    with pytest.raises(ValueError, match="finite"):
        make_trigger(10**400)  # type: ignore[operator]


@pytest.mark.parametrize("cls", [FixedRate, FixedDelay])
def test_recurring_converts_to_float(cls: type) -> None:
    trigger = cls(2, -3)
    assert [type(v) for v in dataclasses.astuple(trigger)] == [float, float, type(None)]
    assert dataclasses.astuple(trigger) == (2.0, -3.0, None)
    assert type(cls(2, initial_delay=3).initial_delay) is float


@given(st.floats(min_value=1e-300, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False))
def test_any_positive_finite_period_is_accepted(period: float, first_at: float) -> None:
    assert FixedRate(period, first_at).interval == period
    assert FixedDelay(period, first_at).first_at == first_at


def test_triggers_compare_by_value() -> None:
    assert Once(1) == Once(1.0)
    assert FixedRate(1, 2) != FixedDelay(1, 2)
    assert hash(FixedRate(1, 2)) == hash(FixedRate(1.0, 2.0))


# -- ids -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "task_id", ["task-0", "task-1", "task-007", "task-123456789012345678901234567890", "task-m1", "task-m007"]
)
def test_minted_ids(task_id: str) -> None:
    assert is_minted_id(task_id)


NOT_MINTED = ["", "task-", "task", "Task-1", "task-1a", "task-1 ", " task-1", "task-1\n", "task--1"]
NOT_MINTED += ["task-m", "task-mm1", "task-M1"]


@pytest.mark.parametrize("task_id", [*NOT_MINTED, "task-\u0661"])  # an Arabic-Indic digit is not [0-9]
def test_ids_not_of_the_minted_form(task_id: str) -> None:
    assert not is_minted_id(task_id)


# -- Schedule ------------------------------------------------------------------------------------


def schedule(**overrides: object) -> Schedule:
    fields: dict[str, object] = {"task_id": "t", "fn": noop, "trigger": Once(0.0)}
    fields.update(overrides)
    return Schedule(**fields)  # type: ignore[arg-type]


def test_schedule_defaults() -> None:
    cmd = Schedule(fn=noop, trigger=Once(0.0))
    assert (cmd.task_id, cmd.args, dict(cmd.kwargs), cmd.name, cmd.max_consecutive_failures) == (
        None,
        (),
        {},
        None,
        None,
    )
    assert isinstance(cmd.kwargs, MappingProxyType)
    assert not hasattr(cmd, "sink")


def test_schedule_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        Schedule("t", noop, Once(0.0))  # type: ignore[misc]


@pytest.mark.parametrize("task_id", ["task-1", "task-0042", "task-m3"])
def test_schedule_refuses_ids_of_the_minted_form(task_id: str) -> None:
    with pytest.raises(ValueError, match="reserved"):
        schedule(task_id=task_id)


@pytest.mark.parametrize("task_id", ["task", "task-x", "my-task-1", "TASK-1", ""])
def test_schedule_accepts_other_ids(task_id: str) -> None:
    assert schedule(task_id=task_id).task_id == task_id


@pytest.mark.parametrize("fn", [None, 1, "noop", object()])
def test_schedule_rejects_non_callable(fn: object) -> None:
    with pytest.raises(TypeError, match="callable"):
        schedule(fn=fn)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("task_id", 1),
        ("task_id", b"t"),
        ("trigger", None),
        ("trigger", 5.0),
        ("args", "1"),  # a str is one argument (any other sequence will do)
        ("args", {1}),
        ("kwargs", [("a", 1)]),
        ("kwargs", {1: "a"}),
        ("name", 3),
    ],
)
def test_schedule_rejects_wrong_types(field: str, value: object) -> None:
    with pytest.raises(TypeError, match=field):
        schedule(**{field: value})


def test_schedule_rejects_a_trigger_subclass() -> None:
    """Triggers are identified by exact type: a subclass could bring other behaviour along."""

    class Sneaky(Once):  # type: ignore[misc]
        pass

    with pytest.raises(TypeError, match="trigger"):
        schedule(trigger=Sneaky(0.0))


@pytest.mark.parametrize("limit", [0, -1, -100])
def test_max_consecutive_failures_must_be_at_least_one(limit: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        schedule(max_consecutive_failures=limit)


@pytest.mark.parametrize("limit", [True, False, 1.0, 2.5, "3"])
def test_max_consecutive_failures_must_be_an_int(limit: object) -> None:
    with pytest.raises(TypeError, match="max_consecutive_failures"):
        schedule(max_consecutive_failures=limit)


def test_schedule_accepts_valid_values() -> None:
    cmd = schedule(
        args=(1,), kwargs={"a": 1}, name="n", max_consecutive_failures=1, trigger=FixedRate(1.0, 0.0)
    )
    assert (cmd.args, cmd.kwargs["a"], cmd.name, cmd.max_consecutive_failures) == ((1,), 1, "n", 1)


# -- the other messages users may send validate their fields -------------------------------------


class NotAFuture:
    set_result = None  # present but not callable


BAD_USER_MESSAGES = {
    "cancel-int-id": lambda: Cancel(1),
    "cancel-no-id": lambda: Cancel(None),
    "pause-int-id": lambda: Pause(1),
    "resume-no-id": lambda: Resume(None),
    "run-now-int-id": lambda: RunNow(1),
    "reschedule-int-id": lambda: Reschedule(1, Once(0.0)),
    "reschedule-no-trigger": lambda: Reschedule("t", 5.0),
    "query-bytes-id": lambda: QueryTask(b"t"),
    "settle-no-future": lambda: Settle(object()),
    "settle-set_result-not-callable": lambda: Settle(NotAFuture()),
    "shutdown-none": lambda: Shutdown(None),
    "flush-no-future": lambda: Flush(object()),
    "subscribe-str-id": lambda: Subscribe("1", noop, frozenset({EventKind.DUE})),
    "subscribe-bool-id": lambda: Subscribe(True, noop, frozenset({EventKind.DUE})),
    "subscribe-listener-not-callable": lambda: Subscribe(1, "listener", frozenset({EventKind.DUE})),
    "subscribe-kinds-a-set": lambda: Subscribe(1, noop, {EventKind.DUE}),
    "subscribe-no-kinds": lambda: Subscribe(1, noop, frozenset()),
    "subscribe-kinds-not-event-kinds": lambda: Subscribe(1, noop, frozenset({"due"})),
    "unsubscribe-str-id": lambda: Unsubscribe("1"),
    "unsubscribe-bool-id": lambda: Unsubscribe(False),
}


@pytest.mark.parametrize("build", BAD_USER_MESSAGES.values(), ids=BAD_USER_MESSAGES.keys())
def test_user_messages_reject_wrong_types(build: Any) -> None:
    with pytest.raises(TypeError):
        build()


def test_user_messages_accept_valid_values() -> None:
    class Listener:
        def tell(self, message: object) -> None: ...

    future: Future[Any] = Future()
    assert Cancel("t").task_id == "t"
    assert QueryTask("t").task_id == "t"
    assert Settle(future).waiter is future
    assert Shutdown(future).drained is future
    assert (Flush(future).value, Flush(future, 5).value) == (None, 5)
    listener = Listener()  # an ActorRef has tell
    kinds = frozenset({EventKind.DUE, EventKind.CANCELLED})
    assert Subscribe(3, listener, kinds) == Subscribe(3, noop, kinds)  # listener not compared
    assert Unsubscribe(3).subscription_id == 3


# -- frozen and slotted ----------------------------------------------------------------------------

INFO = TaskInfo(
    task_id="t",
    name="n",
    trigger=Once(0.0),
    status=TaskStatus.SCHEDULED,
    run_count=0,
    failure_count=0,
    consecutive_failures=0,
    next_run_at=0.0,
    last_error=None,
)
EVENT = TaskEvent(kind=EventKind.DUE, task_id="t", name="n", at=0.0, run=1, due_at=0.0)
RUN = RunTask(Token(), "t", 1, 0.0, noop, (), {}, Claim.free(), True, False)
COMPLETED = Completed(0, "t", 1, None, 0.0)
FAILED = Failed(0, "t", 1, RuntimeError(), "Traceback...", 0.0)
INSTANCES = [
    Once(0.0),
    FixedRate(1.0, 0.0),
    FixedDelay(1.0, 0.0),
    Cron("0 9 * * MON-FRI", "Europe/Berlin"),
    schedule(),
    Cancel("t"),
    Pause("t"),
    Resume("t"),
    RunNow("t"),
    Reschedule("t", FixedRate(1.0)),
    Tick(),
    Drain(),
    AddTask(Token()),  # type: ignore[arg-type]
    FindTask("t"),
    QueryTask("t"),
    QueryTasks(),
    QueryNextDue(),
    QueryStats(),
    QueryRunTotals(),
    RunTotals(runs=(), lateness=(0,), lateness_sum=0.0, duration=(0,), duration_sum=0.0),
    QueryTaskTable(0, 100),
    TaskTable(infos=(INFO,), total=1, recent=(RecentRuns("t", "completed", (0.0,)),)),
    QueryRecentRuns(("t",)),
    RecentRuns("t", None, ()),
    StoreTotals(commits=(0,), commit_sum=0.0, claims=None),
    Settle(Future()),
    Shutdown(Future()),
    Subscribe(1, noop, frozenset({EventKind.DUE})),
    Unsubscribe(1),
    RUN,
    RunBatch((RUN,)),
    Publish((EVENT,)),
    Flush(Future()),
    Started(0, "t", 1, 0.0),
    COMPLETED,
    FAILED,
    Skipped(0, "t", 1),
    Cancelled(Token()),  # type: ignore[arg-type]
    messages.Paused(Token()),  # type: ignore[arg-type]
    messages.Resumed(Token()),  # type: ignore[arg-type]
    messages.RunNowClaimed(Token()),  # type: ignore[arg-type]
    WorkerExited(0, "died"),
    BusExited("died"),
    Claimed(()),
    CancelledInStore("t"),
    RetrySaves(),
    OutcomesSaved(()),
    EVENT,
    INFO,
    TimerFired("k", 1, "message"),
    messages.QueryHistory("t"),
    messages.RunRecord(
        run=1,
        due_at=0.0,
        due_wall=datetime(2026, 1, 1, tzinfo=UTC),
        started_at=None,
        ended_at=None,
        outcome="missed",
    ),
    SchedulerStats(live_tasks=0, running=0, heap_size=0, workers=1, ticks=0, timer_wakeups=0),
]


MESSAGE_CLASSES = sorted(
    (obj for name in messages.__all__ if dataclasses.is_dataclass(obj := getattr(messages, name))),
    key=lambda cls: cls.__name__,
)


def test_instances_cover_every_message_class() -> None:
    assert {type(i) for i in INSTANCES} == set(MESSAGE_CLASSES)


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda cls: cls.__name__)
def test_every_message_class_is_frozen_and_slotted(cls: type) -> None:
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "__slots__" in vars(cls)
    assert "__dict__" not in vars(cls)


@pytest.mark.parametrize("message", INSTANCES, ids=lambda m: type(m).__name__)
def test_messages_are_frozen_and_slotted(message: object) -> None:
    cls = type(message)
    assert "__slots__" in vars(cls)
    assert not hasattr(message, "__dict__")
    fields = dataclasses.fields(message)  # type: ignore[arg-type]
    if fields:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(message, fields[0].name, "changed")
    with pytest.raises((dataclasses.FrozenInstanceError, AttributeError, TypeError)):
        message.extra = 1  # type: ignore[attr-defined]


def test_task_info_done() -> None:
    assert not INFO.done
    for status in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED):
        assert dataclasses.replace(INFO, status=status).done
    assert not dataclasses.replace(INFO, status=TaskStatus.RUNNING).done


def test_new_fields_default_to_nothing() -> None:
    assert (EVENT.traceback, EVENT.value, EVENT.final, EVENT.error) == (None, None, False, None)
    assert (INFO.next_run_wall, INFO.last_traceback, INFO.end_reason) == (None, None, None)
    assert INSTANCES[-1].replaced_threads == 0  # type: ignore[union-attr]


def test_run_task_compares_without_its_task_claim_fn_or_kwargs() -> None:
    first = RunTask(Token(), "t", 1, 0.0, noop, (), {}, Claim.free(), True, False)
    second = RunTask(Token(), "t", 1, 0.0, print, (), {"k": 1}, Claim.free(), True, False)
    assert first == second
    assert first != dataclasses.replace(first, run=2)


def test_reports_compare_without_value_error_or_traceback() -> None:
    assert Completed(0, "t", 1, "a", 0.0) == Completed(0, "t", 1, "b", 0.0)
    assert Failed(0, "t", 1, OSError(), "x", 0.0) == Failed(0, "t", 1, ValueError(), "y", 0.0)
    assert "Traceback" not in repr(FAILED)  # long, and useless in a log line about the report


# -- fast_init: the per-run messages build through their slots' setters -----------------------------

FAST_INIT = [RunTask, Completed, Failed]


@pytest.mark.parametrize("sample", [RUN, COMPLETED, FAILED], ids=lambda m: type(m).__name__)
def test_fast_init_sets_every_field_by_name_and_position(sample: Any) -> None:
    cls = type(sample)
    values = {f.name: object() for f in dataclasses.fields(sample)}
    by_name = cls(**values)
    by_position = cls(*values.values())
    for name, value in values.items():
        assert getattr(by_name, name) is value, name
        assert getattr(by_position, name) is value, name
    assert dataclasses.replace(sample) == sample  # replace() goes through __init__ too
    with pytest.raises(dataclasses.FrozenInstanceError):
        by_name.run = 5
    with pytest.raises(TypeError):
        cls(*values.values(), object())  # one too many
    assert cls.__init__.__qualname__ == f"{cls.__name__}.__init__"


def test_fast_init_defaults() -> None:
    assert Completed(1, "t", 2, "v", 3.0).idle is True
    assert Failed(1, "t", 2, RuntimeError(), "", 3.0).idle is True
    assert Failed(1, "t", 2, RuntimeError(), "", 3.0, False).idle is False
    assert Completed(1, "t", 2, "v", finished_at=3.0, idle=False).idle is False
    with pytest.raises(TypeError):
        RunTask(Token(), "t", 1, 0.0, noop, (), {}, Claim.free(), True)  # type: ignore[call-arg]  # no defaults


@pytest.mark.parametrize("cls", FAST_INIT, ids=lambda cls: cls.__name__)
def test_fast_init_is_what_builds_the_per_run_messages(cls: type) -> None:
    assert "slots' setters" in (cls.__init__.__doc__ or "")


def test_fast_init_keeps_keyword_only_fields_defaults_and_post_init() -> None:
    checked: list[object] = []

    @fast_init
    @dataclass(frozen=True, slots=True)
    class Sample:
        a: int
        b: str = "b"
        c: float = field(default=1.5, kw_only=True)

        def __post_init__(self) -> None:
            checked.append(self.a)
            if self.a < 0:
                raise ValueError("a must not be negative")

    sample = Sample(1)
    assert (sample.a, sample.b, sample.c, checked) == (1, "b", 1.5, [1])
    assert Sample(2, "x", c=3.0) == Sample(a=2, b="x", c=3.0)
    with pytest.raises(TypeError):
        Sample(1, "x", 3.0)  # type: ignore[misc]  # c is keyword-only
    with pytest.raises(ValueError, match="negative"):
        Sample(-1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.a = 5  # type: ignore[misc]


def test_fast_init_refuses_a_default_factory() -> None:
    @dataclass(frozen=True, slots=True)
    class WithFactory:
        items: list[int] = field(default_factory=list)

    with pytest.raises(TypeError, match="default_factory"):
        fast_init(WithFactory)
