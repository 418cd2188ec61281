"""Kill -9 a process that schedules and cancels durable tasks; check what the file promised.

A child process schedules (one-time and recurring) and cancels durable tasks in a loop and
prints each acknowledged call; it is killed with SIGKILL at a random moment. Then a new
scheduler opens the file, and:

- every acknowledged schedule is there, unless its cancel was acknowledged;
- no acknowledged cancel comes back;
- every one-time task that was due has run, or runs now;
- no run's outcome is committed twice (one ledger row per task and run);
- ``PRAGMA integrity_check`` says ok.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from actors import Scheduler, SQLiteStore, UnknownTaskError
from messages import TaskStatus

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0


def run_trial(tmp_path: Path, seed: int) -> dict[str, int]:
    store = tmp_path / f"crash-{seed}.db"
    runs_log = tmp_path / f"runs-{seed}.log"
    kill_after = random.Random(seed).randrange(5, 400)  # acknowledged calls before the SIGKILL
    lines: list[str] = []
    enough = threading.Event()
    with subprocess.Popen(
        [sys.executable, "-m", "tests.durable.crash_child", str(store), str(runs_log), str(seed)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as child:

        def read() -> None:
            for line in child.stdout or ():
                lines.append(line)
                if len(lines) >= kill_after:
                    enough.set()
            enough.set()  # the child ended on its own (it should not)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert enough.wait(WAIT), "the child never got far enough"
        child.send_signal(signal.SIGKILL)
        child.wait(WAIT)
        reader.join(WAIT)
    acked = [json.loads(line) for line in lines if line.endswith("\n")]
    scheduled = {a["id"]: a["kind"] for a in acked if a["op"] == "schedule"}
    cancelled = {a["id"] for a in acked if a["op"] == "cancel" and a["result"]}

    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    reader_store = SQLiteStore.inspect(store)
    rows = {row.task_id: row for row in reader_store.tasks()}
    reader_store.close()
    for task_id in scheduled:
        assert task_id in rows, f"acknowledged schedule {task_id} is missing"
    for task_id in cancelled:
        assert rows[task_id].status == "cancelled", f"acknowledged cancel {task_id} came back"

    # Restart: every one-time task still scheduled is due by now, and must run. (A cancel the
    # kill cut off after its commit, before its acknowledgement, may have taken effect too.)
    pending = [
        t
        for t, kind in scheduled.items()
        if kind == "once" and t not in cancelled and rows[t].status != "cancelled"
    ]
    with Scheduler(workers=2, store=store) as s:
        for task_id in pending:  # each was due within 0.3 s of being scheduled: it runs now
            if rows[task_id].status != "scheduled":
                continue  # it ran (and its outcome was saved) before the kill
            with contextlib.suppress(UnknownTaskError):  # unless it has just ended
                s.handle(task_id).result(timeout=WAIT)
            assert s.info(task_id).status is TaskStatus.COMPLETED
        assert not {info.task_id for info in s.tasks()} & cancelled, "a cancelled task is scheduled again"
    ran = Counter(line.split("@")[0] for line in runs_log.read_text().splitlines() if "@" in line)
    for task_id in pending:
        assert ran[task_id] >= 1, f"one-time task {task_id} was due and never ran"
    reader_store = SQLiteStore.inspect(store)
    ledger = Counter((r.task_id, r.run) for r in reader_store.runs(limit=100_000))
    reader_store.close()
    assert all(count == 1 for count in ledger.values()), "a run's outcome was committed twice"
    return {
        "acked": len(acked),
        "scheduled": len(scheduled),
        "cancelled": len(cancelled),
        "runs": sum(ran.values()),
    }


@pytest.mark.parametrize("seed", range(5))
def test_kill_9_loses_nothing_acknowledged(tmp_path: Path, seed: int) -> None:
    figures = run_trial(tmp_path, seed)
    assert figures["scheduled"] > 0


@pytest.mark.stress
@pytest.mark.timeout(900)
def test_kill_9_loses_nothing_acknowledged_many_times(tmp_path: Path) -> None:
    totals: Counter[str] = Counter()
    for seed in range(100, 125):  # 25 trials
        totals.update(run_trial(tmp_path, seed))
    print(f"\ncrash test: 25 trials, {dict(totals)}")
