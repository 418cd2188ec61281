"""Reading one stored column of a task's row: the decoders, and the damage they report.

A row written by another version, edited by hand or damaged on disk may hold a column that
does not decode. Each decoder here raises ``ColumnDamage`` naming the column, quoting what it
holds (shortened) and saying why, and ``actors/runtime/durable.py`` turns that into a stand-in
whose runs fail with a ``StoreError`` saying so. Pure functions: any thread.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

from messages.commands import EMPTY_KWARGS

__all__ = [
    "NO_ARGS",
    "NO_KWARGS",
    "ColumnDamage",
    "args_column",
    "count_column",
    "error_text",
    "json_object",
    "kwargs_column",
    "next_due_column",
    "read_column",
]

NO_ARGS: Final = "[]"
NO_KWARGS: Final = "{}"
_SHOWN_TEXT: Final = 80  # characters of a damaged column's text an error quotes


class ColumnDamage(Exception):
    """A stored column that does not decode: which one, and why."""

    def __init__(self, column: str, text: object, reason: str) -> None:
        super().__init__(column, text, reason)
        self.column = column
        self.text = text
        self.reason = reason

    def describe(self, location: str, task_id: object) -> str:
        """The message of the ``StoreError`` the task's runs fail with."""
        return (
            f"{location}: stored task {task_id!r} is damaged: {self.what()}; each of its runs fails "
            "with this error, and its columns are left as they are (fix the row, or schedule the task again)"
        )

    def what(self) -> str:
        """The column, what it holds (shortened) and why it does not decode."""
        shown = repr(self.text)
        if len(shown) > _SHOWN_TEXT:
            shown = shown[: _SHOWN_TEXT - 3] + "..."
        return f"its column {self.column} ({shown}) {self.reason}"


def read_column(column: str, value: Any, decode: Callable[[Any], Any], text: object = None) -> Any:
    """``decode(value)``; a ``ColumnDamage`` naming ``column`` (quoting ``text``, or ``value``) if it fails.

    Only the errors decoding bad data raises are caught: anything else is a bug, not damage.
    """
    try:
        return decode(value)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
        raise ColumnDamage(column, value if text is None else text, _why(error)) from None


def _why(error: BaseException) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"is not JSON ({error})"
    if isinstance(error, KeyError):
        return f"lacks the key {error}"
    return f"does not decode: {error}"


def json_object(text: str) -> dict[str, Any]:
    """The JSON object ``text`` holds (``TypeError`` for other JSON, ``ValueError`` for none)."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError(f"is JSON {type(value).__name__}, not an object")
    return value


def next_due_column(next_due: object, wall_offset: float) -> float:
    """A row's next due time (wall clock); ``None`` (unknown) means due now."""
    if next_due is None:
        return wall_offset  # unknown: due now, at once
    if type(next_due) is not float and type(next_due) is not int:
        raise ColumnDamage("next_due", next_due, "is not a number of seconds")
    if not math.isfinite(next_due):
        raise ColumnDamage("next_due", next_due, "is not finite")
    return float(next_due)


def count_column(column: str, value: object) -> int:
    """A counter column: an int >= 0, else ``ColumnDamage``."""
    if type(value) is not int or value < 0:
        raise ColumnDamage(column, value, "is not a count (an int >= 0)")
    return value


def args_column(text: str) -> tuple[Any, ...]:
    """A task's positional arguments from their JSON array."""
    if text == NO_ARGS:
        return ()
    value = json.loads(text)
    if not isinstance(value, list):
        raise TypeError(f"is JSON {type(value).__name__}, not an array")
    return tuple(value)


def kwargs_column(text: str) -> Any:
    """A task's keyword arguments from their JSON object (the shared empty mapping for none)."""
    return EMPTY_KWARGS if text == NO_KWARGS else json_object(text)


def error_text(error: BaseException) -> str:
    """How a run's error is stored: ``"Type: message"``."""
    return f"{type(error).__name__}: {error}"
