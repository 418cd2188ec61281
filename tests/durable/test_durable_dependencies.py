"""Durable ``schedule_after`` on a real SQLite file: the graph survives a restart and a kill -9."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import CancelledError
from datetime import UTC, datetime
from pathlib import Path

import pytest

from actors import DependencyFailedError, FakeClock, Scheduler, SQLiteStore
from actors.store import TaskUpdate
from messages import TaskStatus
from tests.durable import tasks
from tests.durable.files import stored

RECORD = "tests.durable.tasks:record"
NOOP = "tests.durable.tasks:noop"
ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0


def _end(path: Path, task_id: str, status: str) -> None:
    """End a stored row as a scheduler killed right after committing that outcome would leave it."""
    row = stored(path)[task_id]
    store = SQLiteStore(path)
    store.open()
    try:
        update = TaskUpdate(
            task_id=task_id,
            seq=row.seq,
            status=status,  # type: ignore[arg-type]
            next_due=None,
            run_count=1,
            failure_count=int(status == "failed"),
            consecutive_failures=int(status == "failed"),
            last_error="RuntimeError: broke" if status == "failed" else None,
            last_outcome=status,
        )
        store.save([update])
    finally:
        store.close()


def test_a_dependent_is_durable_by_default_when_all_it_waits_for_is(
    start: Callable[..., Scheduler],
) -> None:
    s = start()
    a = s.schedule_once(RECORD, 100.0, task_id="a")
    b = s.schedule_after(RECORD, a, delay=5.0, task_id="b")
    memory = s.schedule_once(lambda: None, 10.0, durable=False)
    c = s.schedule_after(RECORD, [a, memory], task_id="c")  # waits for a memory-only task: memory
    rows = stored(s_path(s))
    assert rows["b"].status == "scheduled"
    assert rows["b"].next_due is None  # never due while it waits
    assert "c" not in rows
    with pytest.raises(ValueError, match=repr(memory.task_id)):
        s.schedule_after(RECORD, [a, memory], durable=True)
    assert b.info().status is TaskStatus.WAITING
    assert c.info().waiting_for == ("a", memory.task_id)


def test_durable_true_without_a_store_is_refused(clock: FakeClock) -> None:
    with Scheduler(workers=1, clock=clock) as s:
        a = s.schedule_once(print, 10.0)
        with pytest.raises(ValueError, match="store"):
            s.schedule_after(print, a, durable=True)


def s_path(s: Scheduler) -> Path:
    assert s._store is not None
    return Path(s._store.location)


def test_a_restart_keeps_the_dependent_waiting_and_it_runs_delay_after_the_last(
    start: Callable[..., Scheduler],
) -> None:
    s = start()
    s.schedule_once(RECORD, 10.0, task_id="a")
    s.schedule_once(RECORD, 100.0, task_id="slow")
    s.schedule_after(RECORD, ["a", "slow"], delay=5.0, task_id="b", args=("b",))
    s.schedule_after(RECORD, "b", task_id="c", args=("c",))
    s.advance(10.0)  # a completes; b still waits for slow
    assert s.info("b").waiting_for == ("slow",)
    s.shutdown()

    again = start()
    assert again.info("b").status is TaskStatus.WAITING
    assert again.info("b").waiting_for == ("slow",)
    assert again.info("c").waiting_for == ("b",)
    again.advance(100.0)  # slow is due (the restart starts at the same wall instant: FakeClock)
    assert again.info("slow").status is TaskStatus.COMPLETED
    assert again.info("b").status is TaskStatus.SCHEDULED
    again.advance(5.0)
    assert again.handle("c").result(timeout=WAIT) is not None
    assert [call[1] for call in tasks.CALLS][-2:] == [("b",), ("c",)]
    rows = stored(s_path(again))
    assert {rows[t].status for t in ("a", "slow", "b", "c")} == {"completed"}


def test_a_dependent_released_but_not_run_before_a_restart_runs_after_it(
    start: Callable[..., Scheduler],
) -> None:
    s = start()
    s.schedule_once(RECORD, 0.0, task_id="a")
    s.schedule_after(RECORD, "a", delay=50.0, task_id="b")
    s.settle()
    assert s.info("b").status is TaskStatus.SCHEDULED
    assert stored(s_path(s))["b"].next_due is not None  # the release is committed
    s.shutdown()
    again = start()
    assert again.info("b").status is TaskStatus.SCHEDULED
    again.advance(50.0)
    assert again.handle("b").result(timeout=WAIT) is not None


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_a_dependency_that_did_not_complete_cancels_the_stored_graph_below_it_in_its_transaction(
    start: Callable[..., Scheduler], path: Path, status: str
) -> None:
    s = start()
    s.schedule_once(RECORD, 100.0, task_id="a")
    s.schedule_after(RECORD, "a", task_id="b")
    s.schedule_after(RECORD, "b", task_id="c")
    s.shutdown()
    _end(path, "a", status)  # as a scheduler killed right after committing a's outcome leaves it
    rows = stored(path)
    assert rows["b"].status == rows["c"].status == "cancelled"
    assert rows["b"].last_error == (
        f"DependencyFailedError: task 'b' was cancelled: task 'a', which it waited for, "
        f"ended {status.upper()} instead of COMPLETED"
    )
    assert not {"b", "c"} & {info.task_id for info in start().tasks()}


def test_a_dependency_gone_from_the_file_cancels_the_graph_below_it_at_the_restart(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    s.schedule_once(RECORD, 100.0, task_id="a")
    s.schedule_after(RECORD, "a", task_id="b")
    s.schedule_after(RECORD, "b", task_id="c")
    s.shutdown()
    with sqlite3.connect(path) as db:  # pruned, or deleted by hand
        db.execute("DELETE FROM task WHERE task_id = 'a'")

    again = start()
    b, c = again.handle("b"), again.handle("c")
    with pytest.raises(DependencyFailedError) as caught:
        b.result(timeout=WAIT)
    assert caught.value.dependency == "a"
    with pytest.raises(DependencyFailedError) as caught:
        c.result(timeout=WAIT)
    assert caught.value.dependency == "b"
    again.settle()
    rows = stored(path)
    assert rows["b"].status == rows["c"].status == "cancelled"
    assert "DependencyFailedError" in (rows["c"].last_error or "")


def test_a_failure_in_one_run_cancels_the_stored_dependents_at_once(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    s.schedule_once("tests.durable.tasks:fail", 1.0, task_id="a")
    s.schedule_after(RECORD, "a", task_id="b")
    s.advance(1.0)
    with pytest.raises(CancelledError):
        s.handle("b").result(timeout=WAIT)
    s.settle()
    assert stored(path)["b"].status == "cancelled"
    s.shutdown()
    assert "b" not in {info.task_id for info in start().tasks()}


_CHILD = """
import sys, time
from actors import Scheduler
with Scheduler(workers=2, store=sys.argv[1]) as s:
    s.schedule_once("tests.durable.tasks:noop", 3600.0, task_id="later")
    s.schedule_once("tests.durable.tasks:noop", 0.0, task_id="now").result(timeout=30)
    s.schedule_after("tests.durable.tasks:noop", ["now", "later"], delay=1.0, task_id="joined")
    s.schedule_after("tests.durable.tasks:noop", "now", delay=3600.0, task_id="released")
    s.settle()
    print("ready", flush=True)
    time.sleep(3600)
"""


def test_kill_9_keeps_the_graph_and_what_completed_counts_as_done(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGKILL)
        child.wait(WAIT)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    clock = FakeClock(1000.0, wall_start=datetime.now(UTC))
    with Scheduler(workers=2, clock=clock, store=path) as s:
        assert s.info("joined").status is TaskStatus.WAITING
        assert s.info("joined").waiting_for == ("later",)
        assert s.info("released").status is TaskStatus.SCHEDULED
        s.advance(3600.0)  # later is due (it was 3600 s from the child's start)
        s.handle("later").result(timeout=WAIT)
        s.advance(1.0)  # joined's delay after it
        s.handle("joined").result(timeout=WAIT)
        s.handle("released").result(timeout=WAIT)
        assert s.info("joined").status is TaskStatus.COMPLETED
