"""The SQLite store on its own: ``python -m benchmarks.store [--rows N] [--dir DIR]``.

Measures what the durable-schedule targets are about, on a real file in a temporary
directory (or ``--dir``, to measure another disk):

- ``add``: one durable schedule committed (median and p99 of the first 1,000 after 200
  warm-up adds, then of 20,000 with the slow tail: checkpoints show there);
- ``add, 8 threads``: the same, 8 caller threads at once (each its own connection);
- ``save``: one transaction of 64 task updates + 64 ledger rows (median of 200);
- ``load``: every live task of a ``--rows`` table (default 100,000), time and the memory the
  returned list holds, extrapolated linearly to 1,000,000 rows.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from actors.store import LedgerRow, SQLiteStore, StoredTask, TaskDefinition, TaskUpdate

NOW = time.time()


def definition(task_id: str) -> TaskDefinition:
    """A typical recurring task's definition (short JSON arguments)."""
    return TaskDefinition(
        task_id=task_id,
        fn_ref="jobs.reports:send_report",
        args_json=f'[{hash(task_id) % 1000}, "daily"]',
        kwargs_json='{"channel": "ops"}',
        trigger_json='{"kind": "rate", "interval": 60.0, "first": 1800000000.0}',
        options_json='{"name": "report", "max_consecutive_failures": 5}',
        next_due=NOW + 60,
    )


def quantiles(samples: list[float]) -> str:
    """Median and p99 in microseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"median {statistics.median(ordered) * 1e6:7.1f} µs   p99 {p99 * 1e6:8.1f} µs"


OPTIONS: dict[str, bool] = {}  # SQLiteStore options from the command line


def bench_add(directory: Path) -> None:
    """One caller thread: the latency of a committed add."""
    with SQLiteStore(directory / "add.db", **OPTIONS) as store:
        for i in range(200):
            store.add(definition(f"warm-{i}"))
        samples = []
        for i in range(20_000):
            task = definition(f"t-{i}")
            start = time.perf_counter()
            store.add(task)
            samples.append(time.perf_counter() - start)
    print(f"add (1 thread, first 1,000)    {quantiles(samples[:1000])}")
    print(f"add (1 thread, 20,000)         {quantiles(samples)}   {tail(samples)}")


def tail(samples: list[float]) -> str:
    """p99.9 and max in microseconds, and how many took over 1 ms."""
    ordered = sorted(samples)
    slow = sum(s > 1e-3 for s in ordered)
    p999 = ordered[int(0.999 * len(ordered))]
    return f"p99.9 {p999 * 1e6:6.0f} µs   max {ordered[-1] * 1e6:6.0f} µs   >1 ms: {slow}"


def bench_add_threads(directory: Path, threads: int = 8, per_thread: int = 250) -> None:
    """Several caller threads adding at once: latency per add and total throughput."""
    with SQLiteStore(directory / "add-threads.db", **OPTIONS) as store:
        barrier = threading.Barrier(threads + 1)
        samples: list[list[float]] = [[] for _ in range(threads)]

        def caller(n: int) -> None:
            store.get("warm-up")  # connect before the clock starts
            barrier.wait()
            for i in range(per_thread):
                task = definition(f"t{n}-{i}")
                start = time.perf_counter()
                store.add(task)
                samples[n].append(time.perf_counter() - start)

        workers = [threading.Thread(target=caller, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        barrier.wait()
        start = time.perf_counter()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - start
    flat = [s for per in samples for s in per]
    print(
        f"add ({threads} threads, {len(flat):,})        {quantiles(flat)}   {len(flat) / elapsed:,.0f} adds/s"
    )


def bench_save(directory: Path, batch: int = 64, repeats: int = 200) -> None:
    """The scheduler's batch commit: 64 updates and 64 ledger rows in one transaction."""
    with SQLiteStore(directory / "save.db", **OPTIONS) as store:
        tasks: list[StoredTask] = [store.add(definition(f"t-{i}"))[0] for i in range(batch)]
        samples = []
        for round_ in range(1, repeats + 1):
            updates = [
                TaskUpdate(
                    task_id=t.task_id,
                    seq=t.seq,
                    status="scheduled",
                    next_due=NOW + 60 * round_,
                    run_count=round_,
                    failure_count=0,
                    consecutive_failures=0,
                    last_error=None,
                    last_outcome="completed",
                )
                for t in tasks
            ]
            runs = [
                LedgerRow(
                    task_id=t.task_id,
                    task_seq=t.seq,
                    run=round_,
                    due=NOW + 60 * (round_ - 1),
                    started=NOW + 60 * (round_ - 1) + 0.001,
                    finished=NOW + 60 * (round_ - 1) + 0.01,
                    outcome="completed",
                    error=None,
                )
                for t in tasks
            ]
            start = time.perf_counter()
            store.save(updates, runs)
            samples.append(time.perf_counter() - start)
    print(f"save ({batch} updates + {batch} runs)  {quantiles(samples)}")


def bench_load(directory: Path, rows: int) -> None:
    """A restart: load every live task; time, and the memory the result holds."""
    path = directory / "load.db"
    with SQLiteStore(path) as store:
        # Fill through one transaction of the store's own SQL would need private API;
        # adds in a loop are what a real table is made of, and fast enough.
        for i in range(rows):
            store.add(definition(f"task-{i}"))
    with SQLiteStore(path) as store:
        store.load()  # warm the OS cache, as a restart right after a crash would find it
        gc.collect()
        tracemalloc.start()
        start = time.perf_counter()
        loaded = store.load()
        elapsed = time.perf_counter() - start
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del loaded
        start = time.perf_counter()
        untraced = store.load()
        plain = time.perf_counter() - start
        assert len(untraced) == rows
    scale = 1_000_000 / rows
    print(
        f"load ({rows:,} rows)            {plain:6.2f} s ({elapsed:.2f} s traced), "
        f"{held / rows:.0f} B/row held, peak {peak / 2**20:.0f} MiB; "
        f"-> 1,000,000 rows: ~{plain * scale:.1f} s, ~{held * scale / 2**20:.0f} MiB"
    )


def main() -> None:
    """Run every measurement and print one line each."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store", description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows for the load measurement")
    parser.add_argument("--dir", type=Path, help="directory for the files (default: a temporary one)")
    parser.add_argument(
        "--no-checkpoint-thread", action="store_true", help="let SQLite checkpoint inside commits"
    )
    args = parser.parse_args()
    OPTIONS["checkpoint_thread"] = not args.no_checkpoint_thread
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        directory = Path(name)
        bench_add(directory)
        bench_add_threads(directory)
        bench_save(directory)
        bench_load(directory, args.rows)


if __name__ == "__main__":
    main()
