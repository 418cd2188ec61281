"""The PostgreSQL store's argument checks, and the names it derives (channel, node).

Plain functions, no I/O: ``PostgresStore`` calls them on the caller's thread.
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
import socket
from collections.abc import Collection, Sequence
from typing import Final

from actors.store.protocol import Lease

_CHANNEL_PREFIX: Final = "pykka_taskscheduler."
NAME_BYTES: Final = 63  # PostgreSQL truncates longer identifiers (and refuses such channels)


def slack(bound: int) -> int:
    """How far past ``bound`` a table may grow before a prune: a tenth, at least one row."""
    return max(1, bound // 10)


def check_count(name: str, value: object) -> int:
    """Return ``value`` if it is an int >= 0, else raise ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return value


def check_at_least_one(name: str, value: object) -> int:
    """Return ``value`` if it is an int >= 1, else raise ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


def check_seconds(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, float | int) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


def check_name(name: str, value: object) -> str:
    """Return ``value`` if it can name a schema or a node (1 to 63 bytes), else raise ``ValueError``."""
    if not isinstance(value, str) or not value or len(value.encode()) > NAME_BYTES:
        raise ValueError(f"{name} must be a non-empty str of at most {NAME_BYTES} bytes, got {value!r}")
    return value


def channel_of(schema: str) -> str:
    """The ``NOTIFY`` channel of the store in ``schema`` (an identifier of at most 63 bytes)."""
    channel = _CHANNEL_PREFIX + schema
    if len(channel.encode()) > NAME_BYTES:
        channel = _CHANNEL_PREFIX + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return channel


def default_node() -> str:
    """A node name unique per store object: ``"<hostname>:<pid>:<random>"``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def importable_names(importable: Collection[str] | None) -> list[str] | None:
    """Return the distinct references of ``importable``, sorted (``None`` stays ``None``).

    Raises:
        TypeError: ``importable`` is a str (a collection of letters), or holds a non-str.
    """
    return _distinct_strs(importable, "importable", "references")


EXECUTORS: Final = frozenset({"thread", "process"})  # the built-in executors a stored task can have


def executor_names(executors: Collection[str] | None) -> list[str] | None:
    """Return the distinct executors of ``executors``, sorted (``None`` stays ``None``: any).

    Raises:
        TypeError: ``executors`` is a str, or holds a non-str.
        ValueError: it holds a name that is no executor's: empty, or ``"inline"`` (the message
            tasks', never stored). Any other is one a scheduler may register (``executors=``).
    """
    names = _distinct_strs(executors, "executors", "executor names")
    for name in names or ():
        if not name or name == "inline":
            raise ValueError(
                f"executors must hold 'thread', 'process' or a registered executor's name, got {name!r}"
            )
    return names


def _distinct_strs(values: Collection[str] | None, argument: str, items: str) -> list[str] | None:
    """The distinct strs of ``values``, sorted; ``argument`` and ``items`` name them in the errors."""
    if values is None:
        return None
    if isinstance(values, str):
        raise TypeError(f"{argument} must be a collection of {items}, got the str {values!r}")
    names = set(values)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{argument} must hold str {items}, got {name!r}")
    return sorted(names)


def check_seqs(held: Collection[int] | None) -> list[int] | None:
    """Return the row numbers of ``held`` as a sorted list (``None`` stays ``None``).

    Raises:
        TypeError: ``held`` holds something that is not an int.
    """
    if held is None:
        return None
    seqs = set(held)
    for seq in seqs:
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise TypeError(f"held must hold int row numbers (seq), got {seq!r}")
    return sorted(seqs)


def check_leases(leases: Sequence[Lease]) -> None:
    """Raise ``TypeError`` unless ``leases`` holds ``Lease`` objects only."""
    for lease in leases:
        if not isinstance(lease, Lease):
            raise TypeError(f"leases must hold Lease objects, got {lease!r}")
