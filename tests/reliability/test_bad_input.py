"""Bad input, tried systematically over the argument space of every public call and message.

For each call, hypothesis draws every argument from a mix of valid values and junk (wrong
types, NaN, infinities, huge ints, naive datetimes, reserved or live ids, unhashables...). An
oracle written from the docstrings lists the problems in the draw; the call must then raise
the documented type for one of them, with a message naming it, or succeed when there are
none. Throughout, a task scheduled beforehand must stay scheduled and still run afterwards.
Unknown messages told or asked to each actor must be logged and ignored, never fatal.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import re
import subprocess
import sys
import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pykka
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors import (
    DuplicateTaskError,
    EventBus,
    FakeClock,
    Scheduler,
    SchedulerActor,
    TaskHandle,
    UnknownTaskError,
    WorkerActor,
)
from messages import Cancel as CancelMessage
from messages import (
    EventKind,
    FixedDelay,
    FixedRate,
    Once,
    QueryTask,
    Schedule,
    Settle,
    Shutdown,
    Subscribe,
    TaskStatus,
    Unsubscribe,
)
from tests.reliability.helpers import Listener, new_threads

Problem = tuple[type[BaseException], str]  # the exception type, and a regex its message must match

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
)
FAR = 10**6  # the pre-scheduled task is due this far ahead
RESERVED = "task-7"


def noop(*_: object, **__: object) -> None:
    return None


class Unhashable:
    __hash__ = None  # type: ignore[assignment]


JUNK = st.sampled_from(
    [None, True, False, "1", "", b"x", [1], {}, (), object(), Decimal("1.5"), Unhashable(), print]
)
BAD_NUMBERS = st.one_of(
    st.sampled_from([10**400, -(10**400), math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not math.isfinite(x)),
    JUNK,
)
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), BAD_NUMBERS)
aware = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
) | st.just(datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=5))))
naive = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1))
seconds = st.one_of(st.floats(-1e6, 1e6), st.integers(-(10**6), 10**6))
periods = st.one_of(st.floats(1e-3, 1e6), st.integers(1, 10**6))

# Each argument: (valid values, junk). A draw corrupts a few arguments and keeps the rest valid.
FIELDS: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]] = {
    "fn": (st.just(noop), JUNK),
    "delay": (seconds, st.one_of(BAD_NUMBERS, naive)),
    "at": (st.one_of(seconds.map(lambda x: 1000.0 + x), aware), st.one_of(BAD_NUMBERS, naive)),
    "period": (periods, st.one_of(BAD_NUMBERS, st.floats(max_value=0.0), st.integers(max_value=0))),
    "initial": (seconds, BAD_NUMBERS),
    "args": (st.one_of(st.just(()), st.tuples(st.integers())), JUNK),
    "kwargs": (st.one_of(st.none(), st.just({"a": 1}), st.just(MappingProxyType({}))), JUNK),
    "task_id": (
        st.sampled_from([None, None, "fresh", ""]),
        st.one_of(st.sampled_from(["live", RESERVED]), JUNK),
    ),
    "name": (st.one_of(st.none(), st.text(max_size=3)), JUNK),
    "limit": (st.one_of(st.none(), st.integers(1, 3)), st.sampled_from([0, -1, 1.0, True, "1", [1]])),
}


def draw_args(data: st.DataObject, *fields: str) -> dict[str, Any]:
    """Draw ``fields``: a few (maybe none) from their junk, the others from their valid values."""
    bad = data.draw(st.sets(st.sampled_from(fields), max_size=3), label="corrupted")
    return {
        field: data.draw(FIELDS[field][1] if field in bad else FIELDS[field][0], label=field)
        for field in fields
    }


# -- the oracle ----------------------------------------------------------------------------


def number_problems(name: str, value: object, *, positive: bool = False) -> list[Problem]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [(TypeError, name)]
    if isinstance(value, int) and abs(value) > 1e308:
        return [(ValueError, name)]
    if not math.isfinite(value):
        return [(ValueError, name)]
    if positive and value <= 0:
        return [(ValueError, name)]
    return []


def common_problems(
    fn: object, args: object, kwargs: object, task_id: object, name: object, *, references: bool = True
) -> list[Problem]:
    problems: list[Problem] = []
    if isinstance(fn, str) and references:  # a reference "module:function", imported at the call
        problems.append((ValueError, r"\bfn\b"))
    elif not callable(fn):
        problems.append((TypeError, r"\bfn\b"))
    if isinstance(args, str | bytes | bytearray) or not isinstance(args, Sequence):
        problems.append((TypeError, "args"))  # any other sequence will do (a list, as JSON gives)
    if kwargs is not None and not isinstance(kwargs, Mapping):
        problems.append((TypeError, "kwargs"))
    if task_id is not None and not isinstance(task_id, str):
        problems.append((TypeError, "task_id"))
    if isinstance(task_id, str) and re.fullmatch(r"task-\d+", task_id):
        problems.append((ValueError, "task id"))
    if task_id == "live":
        problems.append((DuplicateTaskError, "'live'"))
    if name is not None and not isinstance(name, str):
        problems.append((TypeError, "name"))
    return problems


def limit_problems(limit: object) -> list[Problem]:
    if limit is None:
        return []
    if isinstance(limit, bool) or not isinstance(limit, int):
        return [(TypeError, "max_consecutive_failures")]
    return [(ValueError, "max_consecutive_failures")] if limit < 1 else []


def check(call: Callable[[], Any], problems: list[Problem]) -> Any:
    """Run ``call``: it must raise as one of ``problems`` says, or succeed if there are none."""
    if not problems:
        return call()
    with pytest.raises(Exception) as caught:  # noqa: PT011 - checked against the oracle below
        call()
    error = caught.value
    matches = [(kind, text) for kind, text in problems if isinstance(error, kind)]
    assert matches, f"{type(error).__name__}: {error} is none of {problems}"
    assert any(re.search(text, str(error)) for _, text in matches), (
        f"message {str(error)!r} names none of {[text for _, text in matches]}"
    )
    return None


# -- a scheduler that must keep serving ----------------------------------------------------


@contextmanager
def serving(workers: int = 1) -> Iterator[tuple[Scheduler, Callable[[], None]]]:
    """A scheduler holding a live task and a far task; ``still_fine()`` checks them after each example."""
    clock = FakeClock(1000.0)
    ran: list[float] = []
    with Scheduler(workers=workers, clock=clock) as s:
        s.schedule_once(lambda: ran.append(clock.now()), FAR, task_id="pre")
        s.schedule_at_fixed_rate(noop, 3600.0, 3600.0, task_id="live")

        def still_fine() -> None:
            assert s.info("pre").status is TaskStatus.SCHEDULED
            assert s.info("live").status is TaskStatus.SCHEDULED

        yield s, still_fine
        still_fine()
        s.advance(FAR)
        assert ran == [1000.0 + FAR]  # the pre-scheduled task ran, once, on time


def discard(s: Scheduler, handle: TaskHandle) -> None:
    """Cancel a task an example made (valid draws make real tasks), and let the scheduler settle."""
    handle.cancel()
    s.settle()


# -- the calls -----------------------------------------------------------------------------


def test_schedule_once_rejects_bad_input() -> None:
    with serving() as (s, still_fine):

        @SETTINGS
        @given(data=st.data(), when=st.sampled_from(["delay", "at", "both", "neither"]))
        def example(data: st.DataObject, when: str) -> None:
            a = draw_args(data, "fn", "delay", "at", "args", "kwargs", "task_id", "name")
            delay = a["delay"] if when in ("delay", "both") else None
            at = a["at"] if when in ("at", "both") else None
            problems = common_problems(a["fn"], a["args"], a["kwargs"], a["task_id"], a["name"])
            if (delay is None) == (at is None):
                problems.append((ValueError, "delay"))
            elif delay is not None:
                problems += number_problems("delay", delay)
            elif isinstance(at, datetime):
                if at.tzinfo is None:
                    problems.append((ValueError, r"\bat\b"))
            else:
                problems += number_problems("at", at)
            handle = check(
                lambda: s.schedule_once(
                    a["fn"],
                    delay,
                    at=at,
                    args=a["args"],
                    kwargs=a["kwargs"],
                    task_id=a["task_id"],
                    name=a["name"],
                ),
                problems,
            )
            if handle is not None:
                discard(s, handle)
            still_fine()

        example()


@pytest.mark.parametrize("method", ["schedule_at_fixed_rate", "schedule_with_fixed_delay"])
def test_recurring_schedules_reject_bad_input(method: str) -> None:
    period_name = "interval" if method == "schedule_at_fixed_rate" else "delay"
    with serving() as (s, still_fine):

        @SETTINGS
        @given(data=st.data())
        def example(data: st.DataObject) -> None:
            a = draw_args(data, "fn", "period", "initial", "args", "kwargs", "task_id", "name", "limit")
            problems = [
                *common_problems(a["fn"], a["args"], a["kwargs"], a["task_id"], a["name"]),
                *number_problems(period_name, a["period"], positive=True),
                *number_problems("initial_delay", a["initial"]),
                *limit_problems(a["limit"]),
            ]
            handle = check(
                lambda: getattr(s, method)(
                    a["fn"],
                    a["period"],
                    a["initial"],
                    args=a["args"],
                    kwargs=a["kwargs"],
                    task_id=a["task_id"],
                    name=a["name"],
                    max_consecutive_failures=a["limit"],
                ),
                problems,
            )
            if handle is not None:
                discard(s, handle)
            still_fine()

        example()


def test_cancel_and_info_take_anything() -> None:
    with serving() as (s, still_fine):

        @SETTINGS
        @given(
            task_id=st.one_of(st.text(max_size=4), st.integers(), JUNK, st.sampled_from(["fresh", RESERVED]))
        )
        def example(task_id: object) -> None:
            assert s.cancel(task_id) is False  # type: ignore[arg-type]
            with pytest.raises(UnknownTaskError) as caught:
                s.info(task_id)  # type: ignore[arg-type]
            assert repr(task_id) in str(caught.value)
            still_fine()

        example()


def test_subscribe_rejects_bad_input() -> None:
    with serving() as (s, still_fine):
        kinds_lists = st.lists(
            st.one_of(st.sampled_from(list(EventKind)), st.integers(), st.text(max_size=2))
        )

        @SETTINGS
        @given(
            listener=st.one_of(st.just(Listener()), JUNK),
            kinds=st.one_of(
                st.none(), st.lists(st.sampled_from(list(EventKind))), kinds_lists, st.text(max_size=3)
            ),
        )
        def example(listener: object, kinds: object) -> None:
            problems: list[Problem] = []
            if not callable(listener):
                problems.append((TypeError, "listener"))
            if isinstance(kinds, str):  # one name: not an iterable of its letters
                problems.append((TypeError, "kinds"))
            elif kinds is not None:
                members = list(kinds)  # type: ignore[call-overload]
                if not members:
                    problems.append((ValueError, "kinds"))
                if not all(isinstance(kind, EventKind | str) for kind in members):
                    problems.append((TypeError, "kinds"))
                names = {kind.name for kind in EventKind}
                named = [kind.upper().replace("-", "_") for kind in members if isinstance(kind, str)]
                if any(name not in names for name in named):
                    problems.append((ValueError, "event kind"))  # names are taken in any case
            subscription = check(lambda: s.subscribe(listener, kinds), problems)  # type: ignore[arg-type]
            if subscription is not None:
                subscription.cancel()
            still_fine()

        example()


def test_settle_and_advance_reject_bad_input() -> None:
    with serving() as (s, still_fine):

        @SETTINGS
        @given(seconds=st.one_of(st.floats(max_value=100.0), numbers), timeout=st.floats(0.5, 10.0))
        def example(seconds: object, timeout: float) -> None:
            if (
                isinstance(seconds, int | float)
                and not isinstance(seconds, bool)
                and 100 < seconds < math.inf
            ):
                seconds = 100  # keep the clock well before the pre-scheduled task
            problems = number_problems("seconds", seconds)
            if not problems and seconds < 0:  # type: ignore[operator]
                problems.append((ValueError, "backwards"))
            before = s.clock.now()
            check(lambda: s.advance(seconds, timeout=timeout), problems)  # type: ignore[arg-type]
            assert s.clock.now() == (before if problems else before + seconds)  # type: ignore[operator]
            s.settle(timeout)
            still_fine()

        example()


def test_scheduler_rejects_bad_arguments() -> None:
    sizes = st.one_of(st.integers(-2, 3), st.just(2.0), JUNK)

    @settings(SETTINGS, max_examples=40)
    @given(workers=sizes, history=sizes, fake=st.booleans())
    def example(workers: object, history: object, fake: bool) -> None:
        problems: list[Problem] = []
        for label, value, least in (("workers", workers, 1), ("history", history, 0)):
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append((TypeError, label))
            elif value < least:
                problems.append((ValueError, label))
        threads = threading.enumerate()
        clock = FakeClock() if fake else None
        s = check(lambda: Scheduler(workers, clock, history), problems)  # type: ignore[arg-type]
        if s is not None:
            assert s.schedule_once(lambda: "ok", 0).result(timeout=5) == "ok"
            s.shutdown(wait=True, timeout=5)
        assert not pykka.ActorRegistry.get_all()
        assert not new_threads(threads)

    example()


# -- the message constructors --------------------------------------------------------------


@SETTINGS
@given(at=numbers)
def test_once_rejects_bad_times(at: object) -> None:
    problems = [(ValueError, "exactly one")] if at is None else number_problems("at", at)  # None: no at
    trigger = check(lambda: Once(at), problems)  # type: ignore[arg-type]
    if trigger is not None:
        assert trigger.at == float(at)  # type: ignore[arg-type]


@SETTINGS
@given(kind=st.sampled_from([FixedRate, FixedDelay]), period=numbers, first_at=numbers)
def test_recurring_triggers_reject_bad_numbers(
    kind: type[FixedRate | FixedDelay], period: object, first_at: object
) -> None:
    period_name = "interval" if kind is FixedRate else "delay"
    start_problems = [] if first_at is None else number_problems("first_at", first_at)  # None: start at once
    problems = [*number_problems(period_name, period, positive=True), *start_problems]
    check(lambda: kind(period, first_at), problems)  # type: ignore[arg-type]


triggers = st.sampled_from([Once(1.0), FixedRate(1.0, 0.0), FixedDelay(2.0, 5.0)])


@SETTINGS
@given(data=st.data(), trigger=triggers)
def test_schedule_message_rejects_bad_fields(data: st.DataObject, trigger: object) -> None:
    a = draw_args(data, "fn", "args", "kwargs", "name", "limit")
    task_id = data.draw(st.one_of(st.text(max_size=3), JUNK), label="task_id")
    kwargs = a["kwargs"] if a["kwargs"] is not None else {}
    problems = [
        *common_problems(a["fn"], a["args"], kwargs, None, a["name"], references=False),
        *limit_problems(a["limit"]),
    ]
    if task_id is not None and not isinstance(task_id, str):  # None: the scheduler mints one
        problems.append((TypeError, "task_id"))
    check(
        lambda: Schedule(
            task_id=task_id,
            fn=a["fn"],
            trigger=trigger,
            args=a["args"],
            kwargs=kwargs,
            name=a["name"],
            max_consecutive_failures=a["limit"],
        ),
        problems,
    )


# -- unknown messages ----------------------------------------------------------------------

Cancel = namedtuple("Cancel", ["task_id"])  # same name and shape as the real one, another type


@dataclasses.dataclass(frozen=True)
class Stranger:
    payload: object


STRANGE_MESSAGES = [
    object(),
    "hello",
    42,
    None,
    (1, 2),
    {"a": 1},
    b"raw",
    RuntimeError("x"),
    Stranger(1),
    Cancel("pre"),
]
junk_messages = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=2), inner)
    ),
    max_leaves=6,
)


@pytest.mark.parametrize("target", [SchedulerActor, WorkerActor, EventBus])
def test_unknown_messages_are_logged_and_ignored(
    target: type[pykka.Actor], caplog: pytest.LogCaptureFixture
) -> None:
    events = Listener()
    with serving() as (s, still_fine), caplog.at_level(logging.WARNING, logger="actors"):
        s.subscribe(events)
        [ref] = pykka.ActorRegistry.get_by_class(target)

        @settings(SETTINGS, max_examples=50)
        @given(message=st.one_of(st.sampled_from(STRANGE_MESSAGES), junk_messages))
        def example(message: object) -> None:
            ref.tell(message)
            assert ref.ask(message, timeout=5) is None
            assert ref.is_alive()
            still_fine()

        example()
        # Every actor still works: a task runs on the worker, its events reach the listener.
        assert s.schedule_once(lambda: "served", 0, task_id="after").result(timeout=5) == "served"
        s.settle()
        assert [e.kind for e in events.events if e.task_id == "after"] == [
            EventKind.DUE,
            EventKind.STARTED,
            EventKind.COMPLETED,
        ]
        assert ref.is_alive()
    ignored = [r for r in caplog.records if "ignored an unexpected message" in r.getMessage()]
    assert len(ignored) >= 2 * len(STRANGE_MESSAGES)


# -- regressions ---------------------------------------------------------------------------


# Regression: Schedule used to accept any object as its trigger; the scheduler then failed on it
# (logged) and an ask got None instead of True/False.
def test_schedule_message_rejects_a_trigger_that_is_not_one() -> None:
    with pytest.raises(TypeError, match="trigger"):
        Schedule(task_id="x", fn=noop, trigger="soon")  # type: ignore[arg-type]


# Regression: kwargs with non-str keys used to be accepted; every run then failed with
# TypeError('keywords must be strings').
def test_kwargs_keys_must_be_strings() -> None:
    with pytest.raises(TypeError, match="kwargs"):
        Schedule(task_id="x", fn=noop, trigger=Once(1.0), kwargs={1: 2})


# Regression: subscribe(kinds=...) with a non-iterable or unhashable members used to raise
# frozenset()'s TypeError, which does not name 'kinds'.
@pytest.mark.parametrize("kinds", [5, [[EventKind.DUE]]], ids=["not-iterable", "unhashable"])
def test_subscribe_names_kinds_in_every_rejection(
    kinds: object, make_scheduler: Callable[..., Scheduler]
) -> None:
    s = make_scheduler(workers=1)
    with pytest.raises(TypeError, match="kinds"):
        s.subscribe(noop, kinds)  # type: ignore[arg-type]


# Regression: settle(timeout) was not validated: inf raised OverflowError, NaN a TimeoutError,
# a str a TypeError that did not name 'timeout'.
@pytest.mark.parametrize("timeout", [math.inf, math.nan, "1"], ids=["inf", "nan", "str"])
def test_settle_rejects_a_bad_timeout_by_name(
    timeout: object, make_scheduler: Callable[..., Scheduler]
) -> None:
    s = make_scheduler(workers=1)
    with pytest.raises((TypeError, ValueError), match="timeout"):
        s.settle(timeout)  # type: ignore[arg-type]


# Regression: Scheduler(clock=<not a clock>) used to raise AttributeError (not TypeError) and leak
# the EventBus actor and thread it had already started.
@pytest.mark.parametrize("clock", ["clock", 5, object()], ids=["str", "int", "object"])
def test_scheduler_rejects_a_bad_clock_without_leaking(clock: object) -> None:
    threads = threading.enumerate()
    try:
        with pytest.raises(TypeError, match="clock"):
            Scheduler(workers=1, clock=clock)  # type: ignore[arg-type]
    finally:
        leaked = pykka.ActorRegistry.get_all()
        for ref in leaked:
            ref.stop(timeout=5)
        for thread in new_threads(threads):
            thread.join(5)
    assert not leaked


@pytest.mark.parametrize(
    ("method", "start", "first_run_takes"),
    [
        # the run moves the clock: (finished - first) / 5e-324 overflowed in the scheduler
        pytest.param("schedule_at_fixed_rate", 0.0, 1.0, id="rate-overflow"),
        # 1000 + 5e-324 == 1000: the next slot was this one, or ulp(1000) / 5e-324 overflowed
        pytest.param("schedule_at_fixed_rate", 1000.0, 0.0, id="rate-same-instant"),
        # 1000 + 5e-324 == 1000: ran for ever at one instant
        pytest.param("schedule_with_fixed_delay", 1000.0, 0.0, id="delay-same-instant"),
    ],
)
# Regression: a period far below the float spacing (e.g. 5e-324) used to strand a fixed-rate task
# (OverflowError in the scheduler: it never ran again nor ended, and settle() hung) or make a task
# run for ever at one instant.
def test_a_tiny_period_never_strands_the_task(method: str, start: float, first_run_takes: float) -> None:
    clock = FakeClock(start)
    runs: list[float] = []

    def task() -> None:
        runs.append(clock.now())
        if len(runs) == 1 and first_run_takes:
            clock.advance(first_run_takes)

    with Scheduler(workers=1, clock=clock) as s:
        try:
            handle = getattr(s, method)(task, 5e-324)
        except ValueError as error:  # rejecting it is a fine fix
            rejection = str(error)
        else:
            rejection = None
        if rejection is not None:
            assert re.search(r"interval|delay", rejection)
            return
        try:
            s.settle(timeout=1)  # a couple of runs, then it waits for its next (later) slot
        finally:
            cancelled = s.cancel(handle.task_id)
        s.settle(timeout=2)
        assert cancelled
        assert handle.info().status is TaskStatus.CANCELLED
        assert len(runs) < 100


WEDGE = """
from actors import FakeClock, Scheduler
s = Scheduler(workers=1, clock=FakeClock(1000.0))
try:
    handle = s.schedule_at_fixed_rate(lambda: None, 1.0, initial_delay=-1e300)
    s.settle(timeout=1)
    print(handle.info().next_run_at)
    handle.cancel()
finally:
    s.shutdown(wait=True, timeout=1)
"""


# Regression: a first slot far in the past (initial_delay=-1e300, interval=1) used to send
# next_fixed_rate into a loop that never ended (slot += 1 no longer changed the float): the
# scheduler thread spun for ever and the whole scheduler was dead.
def test_a_far_past_first_slot_does_not_wedge_the_scheduler() -> None:
    # In a child process: the bug left a thread spinning for ever.
    try:
        done = subprocess.run(
            [sys.executable, "-c", WEDGE],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
            cwd=Path(__file__).resolve().parents[2],
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the child process hung")
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout) >= 1000.0


# Regression (hand-sent messages): a message built with a field of the wrong type used to be
# accepted and wedge the scheduler later (a Subscribe with kinds=None silenced every later
# subscription; a Cancel with a list id logged an ERROR and answered None).
@pytest.mark.parametrize(
    "build",
    [
        lambda: Subscribe(1000, print, None),  # type: ignore[arg-type]
        lambda: Subscribe(1000, print, frozenset()),
        lambda: Subscribe("1", print, frozenset({EventKind.DUE})),  # type: ignore[arg-type]
        lambda: Subscribe(1, "not a listener", frozenset({EventKind.DUE})),
        lambda: Unsubscribe("1"),  # type: ignore[arg-type]
        lambda: CancelMessage(["x"]),  # type: ignore[arg-type]
        lambda: QueryTask(7),  # type: ignore[arg-type]
        lambda: Settle(object()),  # type: ignore[arg-type]
        lambda: Shutdown(None),  # type: ignore[arg-type]
        lambda: Schedule(task_id="task-7", fn=noop, trigger=Once(1.0)),
    ],
    ids=[
        "subscribe-kinds-none",
        "subscribe-kinds-empty",
        "subscribe-id-str",
        "subscribe-listener",
        "unsubscribe-id",
        "cancel-list",
        "query-int",
        "settle-waiter",
        "shutdown-waiter",
        "schedule-reserved-id",
    ],
)
def test_messages_refuse_bad_fields_where_they_are_built(build: Callable[[], object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        build()


def test_internal_messages_with_garbage_cannot_stop_the_scheduler() -> None:
    from messages import AddTask, Cancelled, Flush, RunBatch

    with serving() as (s, still_fine):
        for message in (AddTask(object()), Cancelled(object()), Flush(Future(), 3)):
            s.ref.tell(message)
            still_fine()
        assert s.ref.ask(AddTask(object()), timeout=5) is None  # refused: nothing was added
        [worker] = pykka.ActorRegistry.get_by_class(WorkerActor)[:1]
        worker.tell(RunBatch(["not a run"]))  # type: ignore[list-item]
        assert s.schedule_once(lambda: "served", 0).result(timeout=5) == "served"


# Regression: an async def task used to "complete" with an unawaited coroutine as its result.
# (Refused at the call for a while; now run on the worker's event loop, as docs/lifecycle.md says.)
def test_async_def_tasks_are_awaited_never_left_as_coroutines() -> None:
    async def coroutine_function() -> str:
        return "awaited"

    class AsyncCallable:
        async def __call__(self) -> str:
            return "awaited"

    with serving() as (s, _):
        for fn in (coroutine_function, AsyncCallable(), functools.partial(coroutine_function)):
            assert s.schedule_once(fn, 0).result(timeout=5) == "awaited"
