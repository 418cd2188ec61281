"""Each job's fingerprint as it was last scheduled, kept in the store row of its task.

A store keeps what a task *is* (function, arguments, trigger), not which job-file text it
came from, so the runner writes each job's ``JobSpec.fingerprint()`` into the definition it
stores: the key ``"job_fingerprint"`` of the row's options JSON, which the scheduler ignores
(``actors/runtime/durable.py``). The runner's store (``HoldBackStore``, ``SharedJobStore``) adds it
to every definition it is given for a job's id (``Stamps``), so the fingerprint is committed
in the same statement as the definition, on SQLite and PostgreSQL alike: whatever a crash
interrupts, a row's fingerprint is the one of the definition it holds. (Until round 3 they
were in a file beside the store, ``<store>.jobs.json``, written after the store: a ``kill -9``
in between made the next start run an ended one-time job again.)

An older store's ``<store>.jobs.json`` is moved into the rows once, as the runner opens the
store (``HoldBackStore.open``): each row without a fingerprint takes the file's, then the file
is deleted.

Threads: ``Stamps.expect`` on the runner's main thread; ``Stamps.stamp`` on whichever thread
the scheduler adds a task from (its own, or the caller's).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

from actors.store import StoredTask, TaskDefinition

__all__ = [
    "FINGERPRINT_OPTION",
    "Stamps",
    "legacy_path",
    "read_legacy",
    "recorded_fingerprints",
    "stored_fingerprint",
    "with_fingerprint",
]

logger = logging.getLogger(__name__)

FINGERPRINT_OPTION: Final = "job_fingerprint"
"""The key of a stored task's options JSON that holds its job's fingerprint."""

_LEGACY_SUFFIX = ".jobs.json"


class Stamps:
    """The fingerprints the store writes into the definitions of the file's jobs as it adds them."""

    def __init__(self) -> None:
        # Replaced whole by the main thread before it schedules, read by the adding thread:
        # one reference swap, so a reader sees the old mapping or the new one, never a mix.
        self._by_id: Mapping[str, str] = MappingProxyType({})

    def expect(self, fingerprints: Mapping[str, str]) -> None:
        """From now on stamp the task of each job id with its fingerprint (the file's jobs)."""
        self._by_id = MappingProxyType(dict(fingerprints))

    def stamp(self, task: TaskDefinition) -> TaskDefinition:
        """Return ``task`` with its job's fingerprint in its options; as it is if it is no job's."""
        fingerprint = self._by_id.get(task.task_id)
        if fingerprint is None:
            return task
        return dataclasses.replace(task, options_json=with_fingerprint(task.options_json, fingerprint))


def with_fingerprint(options_json: str, fingerprint: str) -> str:
    """Return a task's options JSON with ``fingerprint`` as its job's."""
    options = json.loads(options_json)
    options[FINGERPRINT_OPTION] = fingerprint
    return json.dumps(options)


def stored_fingerprint(task: StoredTask) -> str | None:
    """Return the fingerprint a stored task was written with; ``None`` if none (or not readable)."""
    try:
        options = json.loads(task.options_json)
    except ValueError:
        return None
    fingerprint = options.get(FINGERPRINT_OPTION) if isinstance(options, dict) else None
    return fingerprint if isinstance(fingerprint, str) else None


def recorded_fingerprints(
    stored: Iterable[StoredTask], legacy: Mapping[str, str] = MappingProxyType({})
) -> dict[str, str]:
    """Return each stored task's fingerprint by id: its row's, else the legacy file's entry."""
    recorded = {}
    for task in stored:
        fingerprint = stored_fingerprint(task)
        if fingerprint is None:
            fingerprint = legacy.get(task.task_id)
        if fingerprint is not None:
            recorded[task.task_id] = fingerprint
    return recorded


def legacy_path(store: Path) -> Path:
    """Return where an older version recorded the fingerprints of the jobs kept in ``store``."""
    return store.with_name(store.name + _LEGACY_SUFFIX)


def read_legacy(path: Path) -> dict[str, str]:
    """Return the fingerprints an older version recorded, by job id; none if the file is missing.

    An unreadable file is logged and treated as empty: the jobs concerned are then replaced once.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        logger.warning("%s: cannot read the recorded job fingerprints (%s); ignored", path, error)
        return {}
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, dict):
        logger.warning("%s: not a fingerprints file; ignored", path)
        return {}
    return {str(job_id): str(digest) for job_id, digest in jobs.items()}
