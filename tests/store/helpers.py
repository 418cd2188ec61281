"""Builders of store data with defaults, so each test states only what it is about."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from actors.store import LedgerRow, StoredTask, TaskDefinition, TaskUpdate

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_800_000_000.0  # an arbitrary UTC epoch second


def definition(task_id: str, **changes: Any) -> TaskDefinition:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "fn_ref": "jobs.reports:send",
        "args_json": '[1, "two", {"three": 3.5}]',
        "kwargs_json": '{"to": "ops@example.com"}',
        "trigger_json": '{"kind": "rate", "interval": 60.0}',
        "options_json": '{"name": "report"}',
        "next_due": T0 + 60,
    }
    fields.update(changes)
    return TaskDefinition(**fields)


def update(task: StoredTask, **changes: Any) -> TaskUpdate:
    fields: dict[str, Any] = {
        "task_id": task.task_id,
        "seq": task.seq,
        "status": task.status,
        "next_due": task.next_due,
        "run_count": task.run_count,
        "failure_count": task.failure_count,
        "consecutive_failures": task.consecutive_failures,
        "last_error": task.last_error,
        "last_outcome": task.last_outcome,
    }
    fields.update(changes)
    return TaskUpdate(**fields)


def record(task: StoredTask, run: int, **changes: Any) -> LedgerRow:
    fields: dict[str, Any] = {
        "task_id": task.task_id,
        "task_seq": task.seq,
        "run": run,
        "due": T0 + 60 * run,
        "started": T0 + 60 * run + 0.01,
        "finished": T0 + 60 * run + 0.5,
        "outcome": "completed",
        "error": None,
    }
    fields.update(changes)
    return LedgerRow(**fields)


def definition_part(task: StoredTask) -> TaskDefinition:
    return TaskDefinition(
        task_id=task.task_id,
        fn_ref=task.fn_ref,
        args_json=task.args_json,
        kwargs_json=task.kwargs_json,
        trigger_json=task.trigger_json,
        options_json=task.options_json,
        next_due=task.next_due,
    )


def counters(task: StoredTask) -> tuple[object, ...]:
    return (
        task.run_count,
        task.failure_count,
        task.consecutive_failures,
        task.last_error,
        task.last_outcome,
    )


def fingerprint(path: str | Path) -> tuple[bytes, int]:
    """The file's bytes and modification time: equal before and after means untouched."""
    return Path(path).read_bytes(), os.stat(path).st_mtime_ns


def spawn(*args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    """Start ``python -m tests.store.child ARGS`` on this worktree's code, stdout piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.child", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE if stdin is None else stdin,
        stdout=subprocess.PIPE,
        text=True,
    )
