"""History costs: ``python -m benchmarks.history [--runs N] [--tasks T] [--repeats R]``.

- ``sqlite``: a SQLite store whose run ledger holds ``--runs`` rows (default 1,000,000) spread
  over ``--tasks`` task ids (default 10,000: 100 runs each), written straight into the file in
  big transactions (as a year of a busy schedule would leave them), then
  ``Scheduler.history(task_id)`` (limit 100) of random ids, median and p99 over ``--repeats``
  calls (target: at most 1 ms), and the caller's CPU time (what it costs on an idle machine).
  The read is one query on the ledger's ``run_by_task`` index
  ``(task_id, id)``, on the caller's thread.
- ``memory``: the same call for a memory task with 100 runs kept (one question to the
  scheduler thread).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from actors import FakeClock, Scheduler
from actors.store import SQLiteStore

_BATCH = 50_000


def _fill_ledger(path: Path, runs: int, tasks: int) -> None:
    with SQLiteStore(path):  # creates the file at the current schema
        pass
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = OFF")
        base = time.time() - runs
        for start in range(0, runs, _BATCH):
            db.execute("BEGIN")
            db.executemany(
                "INSERT INTO run (task_id, task_seq, run, due, started, finished, outcome, value_json)"
                " VALUES (?, ?, ?, ?, ?, ?, 'completed', '{\"ok\":true}')",
                (
                    (
                        f"job-{i % tasks}",
                        1_000_000 + i % tasks,
                        i // tasks + 1,
                        base + i,
                        base + i,
                        base + i + 0.5,
                    )
                    for i in range(start, min(start + _BATCH, runs))
                ),
            )
            db.execute("COMMIT")
    finally:
        db.close()


def _quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(0.99 * (len(ordered) - 1))] * 1e3


def bench_sqlite(runs: int, tasks: int, repeats: int) -> None:
    """``history`` of one task on a SQLite store with ``runs`` ledger rows."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.db"
        began = time.perf_counter()
        _fill_ledger(path, runs, tasks)
        print(f"sqlite: {runs:,} ledger rows written in {time.perf_counter() - began:.1f} s")
        store = SQLiteStore(path, run_history=runs * 2)  # keep them all (the default keeps 10,000)
        with Scheduler(workers=1, store=store) as scheduler:
            rng = random.Random(24)
            samples, cpu = [], []
            for _ in range(repeats):
                task_id = f"job-{rng.randrange(tasks)}"
                start, start_cpu = time.perf_counter(), time.thread_time()
                records = scheduler.history(task_id)
                cpu.append(time.thread_time() - start_cpu)
                samples.append(time.perf_counter() - start)
                assert len(records) == min(100, runs // tasks), (task_id, len(records))
        median, p99 = _quantiles(samples)
        print(f"sqlite: history of one task (limit 100)  median {median:.3f} ms   p99 {p99:.3f} ms")
        # The read runs on the caller's thread: its CPU time is what the call costs on an idle
        # machine (the wall time above also counts waiting for a CPU on a loaded one).
        print(f"sqlite: the same, caller's CPU time      median {_quantiles(cpu)[0]:.3f} ms")


def bench_memory(repeats: int) -> None:
    """``history`` of one memory task with 100 runs kept."""
    with Scheduler(workers=1, clock=FakeClock()) as scheduler:
        scheduler.schedule_at_fixed_rate(lambda: None, 1.0, task_id="beat")
        scheduler.advance(99.0)
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            scheduler.history("beat")
            samples.append(time.perf_counter() - start)
    median, p99 = _quantiles(samples)
    print(f"memory: history of one task (100 runs)   median {median:.3f} ms   p99 {p99:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2_000)
    options = parser.parse_args()
    bench_sqlite(options.runs, options.tasks, options.repeats)
    bench_memory(options.repeats)


if __name__ == "__main__":
    main()
