"""Asking the ``run`` that holds an SQLite store to pause, resume or run a job: a small mailbox file.

A ``run`` holds its store file alone (the lock, docs/persistence.md): it is the file's one
writer, and it keeps the live schedule in memory. A second process that wrote the task rows
itself would change the file behind that schedule's back, and a ``run_now`` is no row at all.
So the command does not write the store: it writes a *request* into a mailbox beside it,
``<store>.requests`` (an SQLite file of one table, never the store itself), and waits for the
answer. The running service looks into the mailbox every ``POLL`` seconds from its main loop
and carries each request out with the ``Scheduler``'s own call (``pause``, ``resume``,
``run_now``), which commits the change in the store as any call does, then writes the answer.
So every rule of those calls holds (the overlap policy of a run now, the catch-up of a resume),
and the command can say what happened.

A request is answered or withdrawn, never left behind: the service answers in the same
transaction it reads the request in, and the command, when it stops waiting (``ANSWER_WITHIN``,
or the store's lock was let go), deletes its request unless it has been answered meanwhile,
in one statement. A request older than ``ANSWER_WITHIN`` (its command was killed) is dropped
unanswered by the service.

Threads: ``ask`` on the command's; a ``Mailbox`` on the runner's main thread.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, final

from actors.store.lockfile import lock_path_of, lock_state

__all__ = ["ANSWER_WITHIN", "POLL", "Answer", "Mailbox", "Op", "ask", "mailbox_path"]

Op = Literal["pause", "resume", "run-now"]

POLL: Final = 0.2
"""Seconds between two looks of the service into its mailbox (it answers within a second)."""
ANSWER_WITHIN: Final = 10.0
"""Seconds a command waits for its answer; a request older than this is dropped by the service."""
_ASK_EVERY: Final = 0.02  # seconds between two looks of the command for its answer
_BUSY: Final = 5.0  # seconds either side waits for the other's transaction (they are tiny)

_SCHEMA: Final = """CREATE TABLE IF NOT EXISTS request (
    id INTEGER PRIMARY KEY,
    op TEXT NOT NULL,
    task_id TEXT NOT NULL,
    asked REAL NOT NULL,
    answered REAL,
    outcome TEXT,
    message TEXT)"""


@final
@dataclass(frozen=True, slots=True)
class Answer:
    """What the service did with a request.

    Attributes:
        outcome: ``"done"`` (it did it), ``"already"`` (nothing to do: already so) or
            ``"refused"`` (it could not: the message says why).
        message: What happened, in words (``"paused"``, ``"it has ended (completed)"``...).
    """

    outcome: Literal["done", "already", "refused"]
    message: str


def mailbox_path(store: Path) -> Path:
    """The mailbox of the store file ``store``: ``<file>.requests``, beside the real file (as its lock)."""
    return Path(lock_path_of(str(store)).removesuffix(".lock") + ".requests")


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=_BUSY, isolation_level=None)
    db.execute(_SCHEMA)
    return db


def ask(store: Path, op: Op, task_id: str, *, within: float = ANSWER_WITHIN) -> Answer | None:
    """Ask the ``run`` holding ``store`` to apply ``op`` to ``task_id``; its answer, or ``None``.

    ``None``: no answer within ``within`` seconds, or the store's lock was let go meanwhile
    (the service stopped); the request is withdrawn then, so nothing is done later.

    Raises:
        sqlite3.Error: the mailbox cannot be written (a read-only folder, say).
    """
    lock = lock_path_of(str(store))
    db = _connect(mailbox_path(store))
    try:
        insert = "INSERT INTO request (op, task_id, asked) VALUES (?, ?, ?) RETURNING id"
        row = db.execute(insert, (op, task_id, time.time())).fetchone()
        request = int(row[0])
        deadline = time.monotonic() + within
        while True:
            answer = _answer(db, request)
            if answer is not None:
                return answer
            if time.monotonic() >= deadline or lock_state(lock).held is False:
                withdrawn = db.execute("DELETE FROM request WHERE id = ? AND answered IS NULL", (request,))
                if withdrawn.rowcount == 1:
                    return None
                return _answer(db, request)  # answered just before the withdrawal
            time.sleep(_ASK_EVERY)  # another process answers: nothing to wait on but the file
    finally:
        db.close()


def _answer(db: sqlite3.Connection, request: int) -> Answer | None:
    row = db.execute("SELECT outcome, message FROM request WHERE id = ? AND answered IS NOT NULL", (request,))
    found = row.fetchone()
    if found is None:
        return None
    db.execute("DELETE FROM request WHERE id = ?", (request,))
    return Answer(found[0], found[1])


class Mailbox:
    """The service's side: the requests written to its store's mailbox, carried out one by one."""

    def __init__(self, store: Path) -> None:
        """Open (create) the mailbox of ``store`` (the runner's main thread, which uses it from then on)."""
        self._path = mailbox_path(store)
        self._db = _connect(self._path)

    def serve(self, carry_out: Callable[[Op, str], Answer]) -> int:
        """Carry out each waiting request with ``carry_out`` and write its answer; return how many."""
        db = self._db
        waiting = db.execute("SELECT id, asked FROM request WHERE answered IS NULL ORDER BY id").fetchall()
        if not waiting:  # the common case, every POLL seconds: one read, no write
            return 0
        too_old = time.time() - ANSWER_WITHIN
        # Requests whose command gave up or was killed, and answers nobody collected.
        db.execute("DELETE FROM request WHERE asked < ?", (too_old,))
        served = 0
        for request, asked in waiting:
            if asked < too_old:
                continue
            # One transaction from the read to the answer: a command that gives up meanwhile
            # waits for it, then finds its request answered (and carried out) or not there.
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(
                    "SELECT op, task_id FROM request WHERE id = ? AND answered IS NULL", (request,)
                ).fetchone()
                if row is not None:
                    answer = carry_out(row[0], row[1])
                    db.execute(
                        "UPDATE request SET answered = ?, outcome = ?, message = ? WHERE id = ?",
                        (time.time(), answer.outcome, answer.message, request),
                    )
                    served += 1
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return served

    def close(self) -> None:
        """Close the mailbox (the file stays: a command may be about to write to it)."""
        self._db.close()
