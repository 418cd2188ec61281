"""``kill -9`` at a random moment: every acknowledged write survives, and the file is sound.

A child process adds, cancels and saves in a loop and prints each call's intent before it and
its acknowledgement after it returns; the test kills it with SIGKILL after a random number of
lines, then reopens the file and checks it against what was acknowledged.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from actors.store import SQLiteStore
from tests.store.helpers import spawn


def run_trial(path: Path, seed: int, most_lines: int) -> None:
    rng = random.Random(seed)
    child = spawn("churn", str(path), str(seed), stdin=subprocess.DEVNULL)
    assert child.stdout is not None
    assert child.stdout.readline() == "open\n"
    lines: list[str] = []
    target = rng.randint(1, most_lines)
    for line in child.stdout:
        lines.append(line)
        if len(lines) >= target:
            break
    child.kill()
    # Read on through the same buffered file (communicate() would read the pipe beneath it
    # and miss what the iteration above buffered); a killed child's pipe ends at once.
    lines.extend(child.stdout.readlines())
    child.stdout.close()
    assert child.wait(timeout=30) == -signal.SIGKILL
    said = [line.split() for line in lines if line.endswith("\n")]  # a cut-off last line is no ack

    added = {words[1] for words in said if words[0] == "A"}
    meant_to_add = {words[1] for words in said if words[0] == "a"}
    cancelled = {words[1] for words in said if words[0] == "C"}
    assert all(words[2] == "1" for words in said if words[0] == "C")
    cancelling = {words[1] for words in said if words[0] == "c"} - cancelled
    assert len(cancelling) <= 1
    saved = {(words[1], int(words[2]), int(words[3])) for words in said if words[0] == "S"}

    with SQLiteStore(path) as store:  # opens at once: the lock died with the child
        tasks = {t.task_id: t for t in store.tasks() if t.task_id.startswith(f"{seed}-")}
        ledger = {(r.task_id, r.task_seq, r.run) for r in store.runs(limit=1_000_000)}

    assert added <= tasks.keys()  # every acknowledged add is there ...
    assert tasks.keys() <= meant_to_add  # ... and nothing that was never asked for
    for task_id in added - cancelled - cancelling:
        assert tasks[task_id].status == "scheduled", task_id
    for task_id in cancelled:  # no acknowledged cancel comes back
        assert tasks[task_id].status == "cancelled", task_id
    assert saved <= ledger
    for task_id, _, run in saved:
        assert tasks[task_id].run_count >= run
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        db.close()


@pytest.mark.parametrize("seed", range(5))
def test_acknowledged_writes_survive_kill_9(tmp_path: Path, seed: int) -> None:
    run_trial(tmp_path / "crash.db", seed, most_lines=600)


@pytest.mark.stress
@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", range(100, 130))
def test_acknowledged_writes_survive_kill_9_stress(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "crash.db"
    for round_ in range(3):  # the same file, killed again and again
        run_trial(path, seed * 10 + round_, most_lines=20_000)
