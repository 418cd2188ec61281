"""Validation of triggers and Schedule, and that every message is frozen and slotted."""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import Future
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

import messages
from messages import (
    Cancel,
    Claim,
    Completed,
    Drain,
    EventKind,
    Failed,
    FixedDelay,
    FixedRate,
    Flush,
    Once,
    Publish,
    QueryNextDue,
    QueryStats,
    QueryTask,
    QueryTasks,
    RunBatch,
    RunTask,
    Schedule,
    SchedulerStats,
    Settle,
    Shutdown,
    Subscribe,
    TaskEvent,
    TaskInfo,
    TaskStatus,
    Tick,
    Unsubscribe,
    WorkerExited,
)
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


@pytest.mark.parametrize("at", NOT_NUMBERS)
def test_once_rejects_non_numbers(at: object) -> None:
    with pytest.raises(TypeError, match="at"):
        Once(at)  # type: ignore[arg-type]


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
    with pytest.raises(TypeError):
        cls(1.0, bad)


@pytest.mark.parametrize("make_trigger", [Once, lambda v: FixedRate(v, 0.0), lambda v: FixedDelay(1.0, v)])
def test_huge_int_is_value_error(make_trigger: object) -> None:
    with pytest.raises(ValueError, match="finite"):
        make_trigger(10**400)  # type: ignore[operator]


@pytest.mark.parametrize("cls", [FixedRate, FixedDelay])
def test_recurring_converts_to_float(cls: type) -> None:
    trigger = cls(2, -3)
    assert [type(v) for v in dataclasses.astuple(trigger)] == [float, float]
    assert dataclasses.astuple(trigger) == (2.0, -3.0)


@given(st.floats(min_value=1e-300, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False))
def test_any_positive_finite_period_is_accepted(period: float, first_at: float) -> None:
    assert FixedRate(period, first_at).interval == period
    assert FixedDelay(period, first_at).first_at == first_at


def test_triggers_compare_by_value() -> None:
    assert Once(1) == Once(1.0)
    assert FixedRate(1, 2) != FixedDelay(1, 2)
    assert hash(FixedRate(1, 2)) == hash(FixedRate(1.0, 2.0))


# -- Schedule ------------------------------------------------------------------------------------


def schedule(**overrides: object) -> Schedule:
    fields: dict[str, object] = {"task_id": "t", "fn": noop, "trigger": Once(0.0)}
    fields.update(overrides)
    return Schedule(**fields)  # type: ignore[arg-type]


def test_schedule_defaults() -> None:
    cmd = schedule()
    assert (cmd.args, dict(cmd.kwargs), cmd.name, cmd.max_consecutive_failures, cmd.sink) == (
        (),
        {},
        None,
        None,
        None,
    )
    assert isinstance(cmd.kwargs, MappingProxyType)


@pytest.mark.parametrize("fn", [None, 1, "noop", object()])
def test_schedule_rejects_non_callable(fn: object) -> None:
    with pytest.raises(TypeError, match="callable"):
        schedule(fn=fn)


@pytest.mark.parametrize(
    ("field", "value"),
    [("task_id", 1), ("task_id", None), ("args", [1]), ("kwargs", [("a", 1)]), ("name", 3)],
)
def test_schedule_rejects_wrong_types(field: str, value: object) -> None:
    with pytest.raises(TypeError, match=field):
        schedule(**{field: value})


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
RUN = RunTask("t", 1, noop, (), {}, Claim(), 0.0)
INSTANCES = [
    Once(0.0),
    FixedRate(1.0, 0.0),
    FixedDelay(1.0, 0.0),
    schedule(),
    Cancel("t"),
    Tick(),
    Drain(),
    QueryTask("t"),
    QueryTasks(),
    QueryNextDue(),
    QueryStats(),
    Settle(Future()),
    Shutdown(Future()),
    Subscribe(1, noop, frozenset({EventKind.DUE})),
    Unsubscribe(1),
    RUN,
    RunBatch((RUN,)),
    Publish((EVENT,)),
    Flush(),
    Completed(0, "t", 1, None, 0.0),
    Failed(0, "t", 1, RuntimeError(), 0.0),
    WorkerExited(0, "died"),
    EVENT,
    INFO,
    SchedulerStats(live_tasks=0, running=0, heap_size=0, workers=1, ticks=0, timer_wakeups=0),
]


MESSAGE_CLASSES = sorted(
    (obj for name in messages.__all__ if dataclasses.is_dataclass(obj := getattr(messages, name))),
    key=lambda cls: cls.__name__,
)


def test_instances_cover_most_message_classes() -> None:
    assert len({type(i) for i in INSTANCES} & set(MESSAGE_CLASSES)) >= 20


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


def test_claim_has_exactly_one_taker() -> None:
    claim = Claim()
    assert not claim.taken
    assert claim.take() is True
    assert claim.taken
    assert claim.take() is False
    assert claim.take() is False
    assert claim.taken


def test_claim_is_slotted() -> None:
    assert not hasattr(Claim(), "__dict__")
    with pytest.raises(AttributeError):
        Claim().extra = 1  # type: ignore[attr-defined]


def test_claims_are_independent_and_not_compared() -> None:
    first, second = Claim(), Claim()
    first.take()
    assert not second.taken
    assert RunTask("t", 1, noop, (), {}, first, 0.0) == RunTask("t", 1, noop, (), {}, second, 0.0)


# The per-task messages write their __init__ by hand with slot setters (messages.frozen): each
# must still set every field, positionally and by keyword, defaults included, and stay frozen.
HAND_WRITTEN_INIT = [Schedule, RunTask, Completed, Failed]


@pytest.mark.parametrize("cls", HAND_WRITTEN_INIT, ids=lambda cls: cls.__name__)
def test_hand_written_init_sets_every_field_by_name(cls: type) -> None:
    sample = next(m for m in INSTANCES if type(m) is cls)
    values = {f.name: getattr(sample, f.name) for f in dataclasses.fields(sample)}  # type: ignore[arg-type]
    rebuilt = cls(**values)
    for name, value in values.items():
        assert getattr(rebuilt, name) is value, name
    assert dataclasses.replace(sample) == sample  # replace() goes through __init__ too


def test_hand_written_init_defaults() -> None:
    claim = Claim()
    run = RunTask("t", 2, noop, (1,), {}, claim)
    assert (run.task_id, run.run, run.args, run.claim, run.announce, run.token, run.once) == (
        "t",
        2,
        (1,),
        claim,
        False,
        None,
        True,
    )
    assert Completed(1, "t", 2, "v", 3.0).idle is True
    assert Failed(1, "t", 2, RuntimeError(), 3.0, False).idle is False
    with pytest.raises(TypeError):
        Schedule("t", noop, Once(0.0))  # type: ignore[misc]  # keyword-only, as before
