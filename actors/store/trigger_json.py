"""The ``trigger_json`` column of a stored task, decoded: the one reader of its format.

A store keeps a task's trigger as JSON text, written by ``actors/runtime/durable.py``:
``{"once": true}`` (``"wall": true`` for a wall-clock one-time task), ``{"rate": interval,
"anchor": wall-clock epoch seconds}``, ``{"delay": seconds}`` or ``{"cron": expr, "tz": zone}``.
Loading a task, a node's view of a row, a node putting a fixed-rate slot back on its grid and
the command line's ``status`` all read it here. Pure: text in, plain data out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from messages.triggers import require_finite

__all__ = ["TRIGGER_KINDS", "StoredTrigger", "decode_trigger"]

TRIGGER_KINDS: Final = ("once", "rate", "delay", "cron")
"""The kinds of stored trigger; a stored trigger names exactly one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredTrigger:
    """A stored trigger: its ``kind`` (one of ``TRIGGER_KINDS``) and the fields of that kind.

    ``rate`` and ``anchor`` (wall-clock epoch seconds of a slot on its grid) for ``"rate"``;
    ``delay`` for ``"delay"``; ``cron`` and ``tz`` for ``"cron"``; ``wall`` for a wall-clock
    one-time task.
    """

    kind: str
    wall: bool = False
    rate: float = 0.0
    anchor: float = 0.0
    delay: float = 0.0
    cron: str = ""
    tz: str = ""


def decode_trigger(text: str) -> StoredTrigger:
    """Decode a ``trigger_json`` column.

    Raises:
        ValueError: not JSON, or not a trigger of ours (no kind or several, ``once`` not true,
            an anchor that is not finite).
        TypeError: a field of the wrong type; the JSON is not an object.
        KeyError: a field its kind needs is missing.
    """
    trigger: Any = json.loads(text)
    if not isinstance(trigger, dict):
        raise TypeError(f"is JSON {type(trigger).__name__}, not an object")
    kinds = [kind for kind in TRIGGER_KINDS if kind in trigger]
    if len(kinds) != 1:
        raise ValueError(f"names {len(kinds)} of the kinds {', '.join(TRIGGER_KINDS)}, not one")
    wall = trigger.get("wall", False)
    if not isinstance(wall, bool):
        raise TypeError(f"has a 'wall' that is not true or false: {wall!r}")
    [kind] = kinds
    if kind == "rate":
        return StoredTrigger(
            kind=kind,
            wall=wall,
            rate=_seconds("rate", trigger),
            anchor=require_finite("anchor", trigger["anchor"]),
        )
    if kind == "delay":
        return StoredTrigger(kind=kind, wall=wall, delay=_seconds("delay", trigger))
    if kind == "cron":
        return StoredTrigger(kind=kind, wall=wall, cron=_text("cron", trigger), tz=_text("tz", trigger))
    if trigger["once"] is not True:
        raise ValueError(f"has 'once' {trigger['once']!r}, not true")
    return StoredTrigger(kind=kind, wall=wall)


def _seconds(key: str, trigger: dict[str, Any]) -> float:
    value = trigger[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"has a {key!r} that is not a number: {value!r}")
    return value


def _text(key: str, trigger: dict[str, Any]) -> str:
    value = trigger[key]
    if not isinstance(value, str):
        raise TypeError(f"has a {key!r} that is not a str: {value!r}")
    return value
