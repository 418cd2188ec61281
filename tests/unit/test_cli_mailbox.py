"""The mailbox of ``pause``, ``resume`` and ``run-now`` beside an SQLite store: answered or withdrawn."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from actors.cli.control import ANSWER_WITHIN, Answer, Mailbox, Op, ask, mailbox_path
from actors.store.lockfile import LockFile, lock_path_of


def requests_in(store: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(mailbox_path(store)) as db:
        return db.execute("SELECT op, task_id, answered FROM request").fetchall()


def test_a_request_to_a_held_store_is_carried_out_answered_and_collected(tmp_path: Path) -> None:
    store = tmp_path / "jobs.db"
    lock = LockFile(lock_path_of(str(store)))
    lock.acquire("the test's run")
    mailbox = Mailbox(store)
    answers: list[Answer | None] = []
    asking = threading.Thread(target=lambda: answers.append(ask(store, "pause", "tick")))
    asking.start()
    seen: list[tuple[Op, str]] = []

    def carry_out(op: Op, task_id: str) -> Answer:
        seen.append((op, task_id))
        return Answer("done", "paused")

    deadline = time.monotonic() + 10
    while not mailbox.serve(carry_out):  # as the run's main loop does, every POLL seconds
        assert time.monotonic() < deadline, "the request never came"
        threading.Event().wait(0.005)
    asking.join(10)
    mailbox.close()
    lock.release()
    assert seen == [("pause", "tick")]
    assert answers == [Answer("done", "paused")]
    assert requests_in(store) == []  # the command took its answer away


def test_a_request_nobody_answers_is_withdrawn_and_never_carried_out_later(tmp_path: Path) -> None:
    store = tmp_path / "jobs.db"
    assert ask(store, "run-now", "tick") is None  # nobody holds the store: it gives up at once
    assert requests_in(store) == []
    lock = LockFile(lock_path_of(str(store)))
    lock.acquire("the test's run")
    try:
        assert ask(store, "pause", "tick", within=0.05) is None  # held, but no answer in time
    finally:
        lock.release()
    assert requests_in(store) == []
    mailbox = Mailbox(store)
    assert mailbox.serve(lambda op, task_id: Answer("done", "should not happen")) == 0
    mailbox.close()


def test_a_request_older_than_the_wait_is_dropped_unanswered(tmp_path: Path) -> None:
    store = tmp_path / "jobs.db"
    mailbox = Mailbox(store)
    with sqlite3.connect(mailbox_path(store)) as db:  # a command killed while it waited
        db.execute(
            "INSERT INTO request (op, task_id, asked) VALUES ('pause', 'old', ?), ('resume', 'new', ?)",
            (time.time() - ANSWER_WITHIN - 1, time.time()),
        )
    carried: list[str] = []
    assert mailbox.serve(lambda op, task_id: carried.append(task_id) or Answer("done", "resumed")) == 1
    mailbox.close()
    assert carried == ["new"]
    assert [row[:2] for row in requests_in(store)] == [("resume", "new")]
