"""Functions named by reference, and arguments that must survive a trip out of the process.

A task that outlives its process (a durable task in a store) or runs in another process
(``executor="process"``) cannot carry a Python object: it carries a *reference*, the string
``"package.module:qualified.name"``, and arguments that can be written down (JSON for a
store, pickle for a process). This module turns a function into its reference and back, and
checks arguments where the caller passes them, so that a mistake is an error at the call, never a
failure hours later.

Nothing here imports user code until ``resolve`` is called. No pickle is ever *loaded* here.
"""

from __future__ import annotations

import importlib
import math
import pickle
import re
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "MAX_JSON_DEPTH",
    "LazyReference",
    "check_json_arguments",
    "check_picklable_arguments",
    "parse_reference",
    "reference_of",
    "resolve",
    "resolve_stored",
]

_IDENTIFIER: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_REFERENCE: Final = re.compile(rf"({_IDENTIFIER}(?:\.{_IDENTIFIER})*):({_IDENTIFIER}(?:\.{_IDENTIFIER})*)")

_WHAT_TO_PASS: Final = 'pass a module-level function, or its reference as a string "package.module:function"'


def parse_reference(reference: str) -> tuple[str, str]:
    """Split ``"package.module:qualified.name"`` into its module and qualified name.

    Raises:
        TypeError: ``reference`` is not a str.
        ValueError: it does not have that form.
    """
    if not isinstance(reference, str):
        raise TypeError(f"a function reference must be a str, got {reference!r}")
    match = _REFERENCE.fullmatch(reference)
    if match is None:
        raise ValueError(f'function reference {reference!r} is not of the form "package.module:function"')
    return match.group(1), match.group(2)


def resolve(reference: str) -> Callable[..., object]:
    """Import the object ``reference`` names and return it.

    Raises:
        TypeError: ``reference`` is not a str.
        ValueError: ``reference`` is malformed.
        ImportError: its module does not import, or has no such attribute (the message says
            which); a ``ModuleNotFoundError`` for a missing module.
        TypeError: what it names is not callable.
        Exception: whatever else its module raises as it is imported (``resolve_stored``
            turns that into an ``ImportError``).
    """
    module_name, qualname = parse_reference(reference)
    module = importlib.import_module(module_name)
    target: object = module
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ImportError(
                f"cannot import {reference!r}: module {module_name!r} has no attribute {qualname!r}",
                name=module_name,
            ) from None
    if not callable(target):
        raise TypeError(f"{reference!r} names {type(target).__name__} object, not a function")
    return target


def resolve_stored(reference: str) -> Callable[..., object]:
    """``resolve`` for a stored (or given) reference: every failure of its import is an ``ImportError``.

    A module that raises anything as it is imported (a ``SyntaxError``, a ``RuntimeError`` at
    its top level, even ``sys.exit()``) is an ``ImportError`` naming the reference, with that
    error as its cause: every place that imports a stored reference (a store's load, a parked
    task, a claimed run, each run of a ``LazyReference``) copes with one kind of failure, and
    none lets a ``SystemExit`` stop a thread.

    Raises:
        TypeError, ValueError, ImportError: as ``resolve``.
    """
    module_name, _ = parse_reference(reference)
    try:
        return resolve(reference)
    except ImportError:
        raise
    except (Exception, SystemExit) as error:  # user code at import: anything, even sys.exit()
        if isinstance(error, TypeError) and module_name in sys.modules:
            raise  # resolve's own: it imported, and names something that is not callable
        raise ImportError(
            f"cannot import {reference!r}: importing module {module_name!r} raised "
            f"{type(error).__name__}: {error}",
            name=module_name,
        ) from error


def reference_of(fn: object) -> str:
    """Return the reference of a module-level callable: ``"module:qualname"``.

    A string is checked for form and returned as it is (it is resolved later). Anything that
    would not import back to the very same object by its name (a lambda, a nested function,
    a bound method, a ``functools.partial``, an instance, a function defined in ``__main__``
    of a script run by path) is refused, with the reason and what to pass instead.

    Raises:
        ValueError: ``fn`` has no importable name; the message says why and what to pass.
        TypeError: ``fn`` is neither a str nor callable.
    """
    if isinstance(fn, str):
        parse_reference(fn)
        return fn
    if isinstance(fn, types.MethodType):
        raise ValueError(f"{fn!r} is a bound method, which has no importable name; {_WHAT_TO_PASS}")
    if not callable(fn):
        raise TypeError(f"fn must be callable or a reference string, got {fn!r}")
    module_name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str):
        raise ValueError(f"{fn!r} has no module-level name (it is {type(fn).__name__}); {_WHAT_TO_PASS}")
    if "<lambda>" in qualname:
        raise ValueError(f"{fn!r} is a lambda, which has no importable name; {_WHAT_TO_PASS}")
    if "<locals>" in qualname:
        raise ValueError(f"{fn!r} is defined inside a function, so it cannot be imported; {_WHAT_TO_PASS}")
    if module_name == "__main__":
        raise ValueError(
            f"{fn!r} is defined in __main__, which another process or a restart imports "
            f"under a different name; move it to a module, and {_WHAT_TO_PASS}"
        )
    reference = f"{module_name}:{qualname}"
    try:
        found = resolve(reference)
    except (ImportError, TypeError, ValueError) as error:
        raise ValueError(
            f"{fn!r} does not import back by its name {reference!r} ({error}); {_WHAT_TO_PASS}"
        ) from None
    if found is not fn:
        raise ValueError(
            f"{reference!r} imports a different object than {fn!r} (was it redefined or "
            f"decorated without functools.wraps?); {_WHAT_TO_PASS}"
        )
    return reference


class LazyReference:
    """A callable that imports its target on the first call (on the thread that calls it).

    A stored task whose module no longer imports still loads; each of its runs then fails
    with the ``ImportError``, as an ordinary failed run.
    """

    __slots__ = ("_target", "reference")

    def __init__(self, reference: str) -> None:
        """Name the target; nothing is imported yet."""
        self.reference = reference
        self._target: Callable[..., object] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        """Import the target if needed and call it."""
        target = self._target
        if target is None:
            target = self._target = resolve_stored(self.reference)
        return target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"LazyReference({self.reference!r})"


MAX_JSON_DEPTH: Final = 100
"""How deep lists and dicts may nest in a durable task's arguments (JSON's parsers recurse)."""

_BIG_INT_BITS: Final = 4_000  # below sys.get_int_max_str_digits()'s default (4300 digits): always writable


def check_json_arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Check that ``args`` and ``kwargs`` survive a round trip through JSON.

    Allowed: ``None``, ``bool``, ``int`` (as many digits as ``str(int)`` allows: 4300 by
    default), finite ``float``, ``str``, lists and tuples of those (a tuple comes back as a
    list), and dicts with ``str`` keys, nested at most ``MAX_JSON_DEPTH`` (100) deep, without
    cycles (a list that contains itself).

    Raises:
        TypeError: something else; the message names where it is (``args[1]['when']``).
    """
    for index, value in enumerate(args):
        _check_json(value, f"args[{index}]", {})
    for key, value in kwargs.items():
        _check_json(value, f"kwargs[{key!r}]", {})


def _check_json(value: object, where: str, within: dict[int, str]) -> None:
    """Check one value; ``within`` maps the ids of the containers it is inside to where they are (cycles)."""
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int):
        if value.bit_length() > _BIG_INT_BITS:
            _check_digits(value, where)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{where} is {value!r}, which JSON cannot hold")
        return
    if not isinstance(value, list | tuple | dict):
        raise TypeError(
            f"{where} is a {type(value).__name__}, which does not round-trip through JSON "
            "(use None, bool, int, float, str, lists and dicts with str keys)"
        )
    _enter(value, where, within)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has the key {key!r}; JSON object keys must be str")
            _check_json(item, f"{where}[{key!r}]", within)
    else:
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", within)
    del within[id(value)]


def _enter(container: object, where: str, within: dict[int, str]) -> None:
    """Note that the check goes inside ``container``; ``TypeError`` if that makes a cycle or is too deep."""
    outer = within.get(id(container))
    if outer is not None:
        raise TypeError(f"{_shown(where)} is {_shown(outer)} again (a cycle), which JSON cannot hold")
    if len(within) >= MAX_JSON_DEPTH:
        raise TypeError(
            f"{_shown(where)} is nested more than {MAX_JSON_DEPTH} deep (MAX_JSON_DEPTH), "
            "deeper than a durable task's arguments may be"
        )
    within[id(container)] = where


def _check_digits(value: int, where: str) -> None:
    try:
        str(value)
    except ValueError:  # more digits than sys.get_int_max_str_digits() lets JSON write
        raise TypeError(
            f"{where} is an int of about {int(value.bit_length() * 0.30103)} digits, more than "
            "JSON may write (sys.get_int_max_str_digits()); pass it as a str"
        ) from None


def _shown(where: str) -> str:
    """``where``, shortened in the middle when it is long (deep nesting)."""
    return where if len(where) <= 80 else f"{where[:40]}...{where[-30:]}"


def check_picklable_arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Check that ``args`` and ``kwargs`` can be pickled (to be sent to another process).

    Raises:
        TypeError: one of them cannot; the message says which.
    """
    for where, value in (
        *((f"args[{i}]", v) for i, v in enumerate(args)),
        *((f"kwargs[{k!r}]", v) for k, v in kwargs.items()),
    ):
        try:
            pickle.dumps(value)
        except Exception as error:  # pickle raises many kinds (TypeError, PicklingError, AttributeError)
            raise TypeError(f"{where} cannot be sent to a worker process: {error}") from None
