"""What an engine's worker runs for a scheduler's run: import the function by reference, call it.

Runs in the engine's worker process (a Celery worker, a Dask worker), which needs this package
and the function's module importable, and nothing of a scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.references import resolve_stored

__all__ = ["call_reference", "engine_key"]


def call_reference(reference: str, args: list[Any] | tuple[Any, ...], kwargs: Mapping[str, Any]) -> object:
    """Import the function ``reference`` names (``"package.module:function"``); call it (engine's worker)."""
    return resolve_stored(reference)(*args, **kwargs)


def engine_key(namespace: str, key: str) -> str:
    """The id a run has on an engine: its run key under the executor's namespace."""
    return f"{namespace}:{key}" if namespace else key
