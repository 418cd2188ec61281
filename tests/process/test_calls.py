"""What a call returns or raises: values, the task's exceptions, and what cannot cross the pipe."""

from __future__ import annotations

import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.errors import (
    RemoteTraceback,
    SchedulerError,
    UnpicklableExceptionError,
    UnpicklableResultError,
)
from actors.process.slot import ProcessSlot
from tests.process import tasks

TASKS = "tests.process.tasks"


def test_no_process_is_started_before_the_first_call(slot: ProcessSlot) -> None:
    assert slot.pid is None
    assert not slot.alive


def test_value_round_trip(slot: ProcessSlot) -> None:
    assert slot.call(f"{TASKS}:add", (2,), {"b": 3}) == 5
    assert slot.alive
    assert slot.call(f"{TASKS}:pid", (), {}) == slot.pid


def test_the_child_imports_from_the_parents_sys_path(slot: ProcessSlot) -> None:
    assert slot.call(f"{TASKS}:sys_path", (), {}) == sys.path


def test_large_values_cross_both_ways(slot: ProcessSlot) -> None:
    big = bytes(range(256)) * 20_000  # 5 MB: many pipe-fulls, partial reads and writes
    assert slot.call(f"{TASKS}:echo", (big,), {}) == big


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner) | st.tuples(inner, inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values)
def test_any_picklable_value_comes_back_equal(slot: ProcessSlot, value: object) -> None:
    assert slot.call(f"{TASKS}:echo", (value,), {}) == value


def test_an_exception_comes_back_with_its_type_args_and_remote_traceback(slot: ProcessSlot) -> None:
    with pytest.raises(ValueError, match="bad") as caught:
        slot.call(f"{TASKS}:raise_value_error", ("bad", 42), {})
    assert type(caught.value) is ValueError
    assert caught.value.args == ("bad", 42)
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "Traceback (most recent call last)" in cause.traceback
    assert "raise_value_error" in cause.traceback
    assert "tasks.py" in str(cause)


def test_a_custom_exception_comes_back_as_itself(slot: ProcessSlot) -> None:
    with pytest.raises(tasks.CustomError) as caught:
        slot.call(f"{TASKS}:raise_custom", ("oops",), {})
    assert caught.value.args == ("oops", 7)


def test_an_exception_that_does_not_pickle_comes_back_described(slot: ProcessSlot) -> None:
    with pytest.raises(UnpicklableExceptionError) as caught:
        slot.call(f"{TASKS}:raise_unpicklable", (), {})
    error = caught.value
    assert isinstance(error, SchedulerError)
    assert error.error_type == "tests.process.tasks.HoldsALock"
    assert "with a lock" in error.error_message
    assert "raise_unpicklable" in error.traceback
    assert "tests.process.tasks.HoldsALock" in str(error)
    assert isinstance(error.__cause__, RemoteTraceback)


def test_an_exception_that_pickles_but_does_not_unpickle_comes_back_described(slot: ProcessSlot) -> None:
    with pytest.raises(UnpicklableExceptionError) as caught:
        slot.call(f"{TASKS}:raise_unreconstructable", (), {})
    assert caught.value.error_type == "tests.process.tasks.Unreconstructable"
    assert caught.value.error_message == "code 3: gone wrong"
    assert "does not unpickle here" in caught.value.reason


def test_a_value_that_does_not_pickle_is_a_type_error(slot: ProcessSlot) -> None:
    with pytest.raises(UnpicklableResultError, match=r"returned a _thread\.lock") as caught:
        slot.call(f"{TASKS}:return_unpicklable", (), {})
    assert isinstance(caught.value, TypeError)
    pid = slot.pid
    assert slot.call(f"{TASKS}:add", (1, 1), {}) == 2
    assert slot.pid == pid  # the child serves on


def test_arguments_that_do_not_pickle_are_refused_before_anything_is_sent(slot: ProcessSlot) -> None:
    with pytest.raises(TypeError, match="cannot be sent to a worker process"):
        slot.call(f"{TASKS}:echo", (threading.Lock(),), {})
    assert slot.pid is None


@pytest.mark.parametrize(
    ("task", "raised"), [("exit_politely", SystemExit), ("keyboard_interrupt", KeyboardInterrupt)]
)
def test_a_base_exception_in_the_task_is_its_failure_and_the_child_serves_on(
    slot: ProcessSlot, task: str, raised: type[BaseException]
) -> None:
    pid = slot.call(f"{TASKS}:pid", (), {})
    with pytest.raises(raised) as caught:
        slot.call(f"{TASKS}:{task}", (5,) if raised is SystemExit else (), {})
    if isinstance(caught.value, SystemExit):
        assert caught.value.code == 5
    assert slot.call(f"{TASKS}:pid", (), {}) == pid


def test_a_reference_that_does_not_import_fails_the_call_with_import_error(slot: ProcessSlot) -> None:
    with pytest.raises(ImportError, match="has no attribute 'missing'"):
        slot.call(f"{TASKS}:missing", (), {})
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        slot.call("no_such_module_xyz:function", (), {})
    with pytest.raises(TypeError, match="not a function"):
        slot.call(f"{TASKS}:TASKS_CONSTANT", (), {})
