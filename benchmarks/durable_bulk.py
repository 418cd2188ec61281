"""Durable tasks in bulk: ``python -m benchmarks.durable_bulk [--quick] [--tasks N] [--dsn DSN]``.

N one-time durable tasks (default 30,000, due an hour ahead so nothing runs meanwhile), each
with its own JSON arguments, scheduled on a fresh store two ways in the same run:

- ``schedule_many(..., durable=True)``: one call, the tasks committed in one transaction
  (``Store.add_many``) before it returns;
- ``schedule_once(..., durable=True)`` N times: one commit per call.

On SQLite (a fresh file in a temporary directory) and on PostgreSQL (a schema of its own on
``--dsn``, default ``SCHEDULER_TEST_DSN`` or the local ``test`` database, created and dropped
each trial; skipped with a note when no server answers). Reports the seconds each way takes
(median of ``--trials``), tasks/s and the ratio, and checks that the store holds all N live
rows afterwards. ``--quick`` (what CI runs): 1,000 tasks, one trial, to check it works.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from actors import Scheduler
from actors.store import PostgresStore, SQLiteStore, Store

DSN = os.environ.get("SCHEDULER_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")
FAR_S = 3600.0


def noop(n: int, label: str) -> None:
    """The task (stored by reference ``benchmarks.durable_bulk:noop``): only the scheduling counts."""


def _task() -> Callable[..., None]:
    """``noop`` by its importable name (run as ``-m``, this module is ``__main__``, which a store refuses)."""
    module = importlib.import_module("benchmarks.durable_bulk")
    task: Callable[..., None] = module.noop
    return task


Opener = Callable[[], Iterator[Store]]


@contextmanager
def sqlite_store() -> Iterator[Store]:
    """A fresh SQLite file, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="durable-bulk-") as directory:
        yield SQLiteStore(Path(directory) / "bulk.db")


def postgres_opener(dsn: str) -> Opener:
    """Fresh PostgreSQL schemas on ``dsn``, each dropped afterwards."""

    @contextmanager
    def open_schema() -> Iterator[Store]:
        import psycopg
        from psycopg import sql

        schema = f"bench_bulk_{os.getpid()}_{time.monotonic_ns()}"
        try:
            yield PostgresStore(dsn, schema=schema, node="bench")
        finally:
            with psycopg.connect(dsn, autocommit=True) as db:
                db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

    return open_schema


def postgres_reachable(dsn: str) -> str | None:
    """Why ``dsn`` cannot be used (``None``: it can)."""
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3):
            return None
    except Exception as error:  # a missing driver, a refused connection, bad credentials...
        return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _arguments(n: int) -> list[tuple[int, str]]:
    return [(i, f"item-{i}") for i in range(n)]


def _live(store: Store) -> int:
    return len(store.load())


def time_bulk(open_store: Opener, n: int) -> float:
    """Seconds of one ``schedule_many(..., durable=True)`` call of ``n`` tasks, on a fresh store."""
    args = _arguments(n)
    with open_store() as store:
        scheduler = Scheduler(workers=2, store=store)
        try:
            start = time.perf_counter()
            ids = scheduler.schedule_many(_task(), [FAR_S] * n, args=args, durable=True)
            elapsed = time.perf_counter() - start
            live = _live(store)
        finally:
            scheduler.shutdown()
    if len(ids) != n or live != n:
        raise RuntimeError(f"{live:,} of {n:,} tasks are live in the store after schedule_many")
    return elapsed


def time_once(open_store: Opener, n: int) -> float:
    """Seconds of ``n`` ``schedule_once(..., durable=True)`` calls, on a fresh store."""
    args = _arguments(n)
    with open_store() as store:
        scheduler = Scheduler(workers=2, store=store)
        try:
            task = _task()
            start = time.perf_counter()
            for each in args:
                scheduler.schedule_once(task, FAR_S, args=each, durable=True)
            elapsed = time.perf_counter() - start
            live = _live(store)
        finally:
            scheduler.shutdown()
    if live != n:
        raise RuntimeError(f"{live:,} of {n:,} tasks are live in the store after schedule_once")
    return elapsed


def run(name: str, open_store: Opener, n: int, once_n: int, trials: int) -> None:
    """Time both ways ``trials`` times (interleaved), print the medians."""
    bulk: list[float] = []
    once: list[float] = []
    for _ in range(trials):
        bulk.append(time_bulk(open_store, n))
        once.append(time_once(open_store, once_n))
    bulk_s, once_s = statistics.median(bulk), statistics.median(once)
    once_rate = once_n / once_s
    print(
        f"{name:10} schedule_many(durable=True) {n:>7,} tasks: {bulk_s:7.3f} s  ({n / bulk_s:>9,.0f} tasks/s)"
        f"   [trials: {', '.join(f'{t:.3f}' for t in bulk)}]"
    )
    print(
        f"{name:10} schedule_once(durable=True) {once_n:>7,} calls: {once_s:7.3f} s"
        f"  ({once_rate:>9,.0f} tasks/s)   bulk is {n / bulk_s / once_rate:,.0f}x faster per task"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.durable_bulk", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="1,000 tasks, one trial (CI check mode)")
    parser.add_argument("--tasks", type=int, help="tasks per way (default 30,000)")
    parser.add_argument("--once-tasks", type=int, help="schedule_once calls (default: --tasks)")
    parser.add_argument("--trials", type=int, help="trials; the median is reported (default 3)")
    parser.add_argument("--dsn", default=DSN, help="PostgreSQL server (default SCHEDULER_TEST_DSN)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args(argv)
    n = args.tasks or (1_000 if args.quick else 30_000)
    once_n = args.once_tasks or n
    trials = args.trials or (1 if args.quick else 3)
    run("sqlite", sqlite_store, n, once_n, trials)
    if args.no_postgres:
        return 0
    why = postgres_reachable(args.dsn)
    if why is not None:
        print(f"postgresql skipped: {why}")
        return 0
    run("postgresql", postgres_opener(args.dsn), n, once_n, trials)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
