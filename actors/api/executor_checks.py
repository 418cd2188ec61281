"""Checks of the executors a ``Scheduler`` is given and of the tasks sent to them (caller's thread)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from actors.api.validation import process_target
from actors.core.task_record import INLINE, PROCESSES, THREADS
from actors.runtime.executor_protocol import Executor
from actors.runtime.limits import MAX_WORKERS

__all__ = ["check_executors", "executor_target"]

_BUILT_IN = (THREADS, PROCESSES, INLINE)


def check_executors(executors: object) -> dict[str, Executor]:
    """Return the executors to register, by name, once each is checked.

    Raises:
        TypeError: not a mapping; a name not a str; a value not an ``Executor`` (it lacks
            ``submit``, ``close``, ``check_arguments``, ``max_in_flight`` or ``remote``).
        ValueError: an empty name or a built-in one (``"thread"``, ``"process"``, ``"inline"``);
            ``max_in_flight`` not an int from 1 to ``MAX_WORKERS``.
    """
    if executors is None:
        return {}
    if not isinstance(executors, Mapping):
        raise TypeError(f"executors must be a mapping of names to executors, got {executors!r}")
    checked: dict[str, Executor] = {}
    for name, executor in executors.items():
        if not isinstance(name, str):
            raise TypeError(f"executor names must be str, got {name!r}")
        if not name or name in _BUILT_IN:
            raise ValueError(f"executor name {name!r} is empty or built in (thread, process, inline)")
        if not isinstance(executor, Executor):
            raise TypeError(f"executors[{name!r}] must be an Executor (submit, close...), got {executor!r}")
        in_flight = executor.max_in_flight
        if type(in_flight) is not int or not 1 <= in_flight <= MAX_WORKERS:
            raise ValueError(
                f"executors[{name!r}].max_in_flight must be an int 1..{MAX_WORKERS}, got {in_flight!r}"
            )
        checked[name] = executor
    return checked


def executor_target(
    executor: Executor,
    fn: object,
    target: Callable[..., object],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> Callable[..., object]:
    """What a registered executor's slot calls for a task: ``target``, or for a remote executor its reference.

    Raises:
        ValueError: a remote executor and a function with no importable reference.
        TypeError: a remote executor that cannot serialise the arguments (its ``check_arguments``).
    """
    if not executor.remote:
        return target
    runs = process_target(fn, (), {})  # its reference, imported here once (the worker imports it too)
    executor.check_arguments(args, kwargs)
    return runs
