"""Faster construction for the frozen, slotted dataclasses built once per run.

A frozen dataclass's generated ``__init__`` sets each field with
``object.__setattr__(self, name, value)``, which looks the name up every time. ``fast_init``
replaces it with one that calls each slot's own setter: the same signature, the same
defaults, the same ``__post_init__``, about 40% cheaper. The instances stay frozen: only
``__init__`` holds the setters. It is used only where a message is built for every run (the
run handed to a worker and its report); everywhere else the generated ``__init__`` is fine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["fast_init", "slot_setters"]


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """Return the setter of each field's slot of the dataclass ``cls``, in field order.

    For code that builds many instances from trusted rows (a store loading a million tasks)
    and for ``fast_init``; the instances stay frozen for everyone else.
    """
    return tuple(getattr(cls, field.name).__set__ for field in fields(cls))


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` built from its slots' setters.

    Apply it above ``@dataclass(frozen=True, slots=True)``. Fields with a
    ``default_factory`` are not supported (no per-run message needs one).
    """
    namespace: dict[str, Any] = {}
    parameters: list[str] = []
    keyword_only: list[str] = []
    body: list[str] = []
    for field, slot_setter in zip(fields(cls), slot_setters(cls), strict=True):  # type: ignore[arg-type]
        if field.default_factory is not MISSING:
            raise TypeError(f"fast_init does not support default_factory ({cls.__name__}.{field.name})")
        setter = f"_set_{field.name}"
        namespace[setter] = slot_setter
        parameter = field.name
        if field.default is not MISSING:
            namespace[f"_default_{field.name}"] = field.default
            parameter += f"=_default_{field.name}"
        (keyword_only if field.kw_only else parameters).append(parameter)
        body.append(f"    {setter}(self, {field.name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *parameters, *(["*", *keyword_only] if keyword_only else [])])
    exec(f"def __init__({signature}):\n" + "\n".join(body or ["    pass"]), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = f"Build a {cls.__name__} (fields set through their slots' setters, see messages.frozen)."
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
