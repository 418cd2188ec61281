"""Start on a store without running, even once, a task the job file changed or dropped.

A ``Scheduler`` loads every live task of its store when it starts and runs the overdue ones
at once, before the runner has compared the store with the job file. For a job whose
definition changed, or a task no longer in the file, that would be one run of what the file
no longer says. So the runner decides first (the same ``reconcile``, on a read-only look at
the store) and hands the scheduler a ``HoldBackStore``: the tasks about to be replaced or
cancelled load with their next run far away, and the runner replaces or cancels them right
after the start. Nothing of this is written to the store: it changes only what ``load``
returns, and a replace gives the task a new due time anyway.

It also writes each job's fingerprint into the definitions it adds (``Stamps``), in the same
statement, and as it opens moves an older version's fingerprints file into the rows: see
``actors/cli/fingerprints.py``.

Threads: ``load_parts`` is called once by the ``Scheduler`` constructor, on the runner's main
thread; ``add`` on whichever thread the scheduler adds from.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Final

from actors.cli.fingerprints import Stamps, legacy_path, read_legacy, stored_fingerprint, with_fingerprint
from actors.cli.stores import shown_store
from actors.store import IfExists, SQLiteStore, StoredTask, TaskDefinition

__all__ = ["FAR_AWAY", "HoldBackStore"]

logger = logging.getLogger("actors.cli")

FAR_AWAY: Final = 4_102_444_800.0
"""2100-01-01T00:00:00Z: where held-back tasks are due until the runner replaces or cancels them."""


class HoldBackStore(SQLiteStore):
    """An ``SQLiteStore`` whose ``load`` gives the tasks in ``hold`` a next run far away.

    Every task it adds carries its job's fingerprint from ``stamps`` (none given: none).
    """

    def __init__(
        self, path: str | os.PathLike[str], hold: Collection[str], stamps: Stamps | None = None
    ) -> None:
        super().__init__(path)
        self._hold = frozenset(hold)
        self._legacy = legacy_path(Path(path))
        self.stamps = stamps if stamps is not None else Stamps()

    def open(self) -> None:
        """Open the store (``SQLiteStore.open``), then move an older version's fingerprints file into it.

        Each row without a fingerprint takes the file's, in one transaction, then the file is
        deleted (after a crash in between it is read again, and rows that have one keep theirs).
        """
        super().open()
        if not self._legacy.exists():
            return
        legacy = read_legacy(self._legacy)
        stamps = [
            (with_fingerprint(task.options_json, legacy[task.task_id]), task.seq)
            for task in self.tasks()
            if task.task_id in legacy and stored_fingerprint(task) is None
        ]
        if stamps:
            # The one write the runner makes itself: the options column, and only its own key.
            self._write(
                "keep the job fingerprints in the store",
                lambda db: db.executemany("UPDATE task SET options_json = ? WHERE seq = ?", stamps),
                rows=len(stamps),
            )
        try:
            self._legacy.unlink()
        except OSError as error:
            logger.warning("cannot delete %s, which is no longer read: %s", self._legacy, error)
            return
        logger.info("the job fingerprints are kept in the store now; deleted %s", shown_store(self._legacy))

    def add(self, task: TaskDefinition, if_exists: IfExists = "error") -> tuple[StoredTask, bool]:
        """Store ``task`` with its job's fingerprint in its options, in one statement; see ``Store.add``."""
        return super().add(self.stamps.stamp(task), if_exists)

    def add_many(self, tasks: Sequence[TaskDefinition]) -> list[int]:
        """Store ``tasks``, each with its job's fingerprint, in one transaction; see ``Store.add_many``."""
        return super().add_many([self.stamps.stamp(task) for task in tasks])

    def reconciling(self) -> AbstractContextManager[object]:
        """Nothing to hold: the store's lock file already makes this run the only one on it."""
        return nullcontext()

    def reconciled(self) -> None:
        """Nothing to release: the held-back tasks are replaced or cancelled by the reconcile itself."""

    def load_parts(self, take: Callable[[list[StoredTask]], object]) -> None:
        """Hand every live task to ``take``, those held back due at ``FAR_AWAY`` (on the caller's thread).

        ``load`` reads through this too.
        """
        hold = self._hold

        def take_held_back(tasks: list[StoredTask]) -> None:
            take(
                [
                    dataclasses.replace(task, next_due=FAR_AWAY) if task.task_id in hold else task
                    for task in tasks
                ]
            )

        super().load_parts(take_held_back)
