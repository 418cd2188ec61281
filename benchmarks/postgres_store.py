"""The PostgreSQL store on its own: ``python -m benchmarks.postgres_store [--dsn DSN] [--rows N]``.

Works in a schema of its own (created, then dropped) on ``--dsn`` (default:
``SCHEDULER_TEST_DSN`` or the local ``test`` database). Measures:

- ``add``: one durable schedule committed (median and p99 of 2,000 after 200 warm-up adds);
- ``save``: one transaction of 64 task updates + 64 ledger rows (median of 200);
- ``claim_due(64)``: the latency of one claim statement taking 64 of ``--rows`` due rows
  (default 20,000), one process, until none is left;
- claims/s: 1, 2 and 4 processes claiming 64 at a time from ``--rows`` due rows until none
  is left (rows claimed per second of wall time, and claim statements per second); then the
  same with each claim followed by its fenced ``save`` (64 updates + 64 ledger rows), the
  cycle a node runs.

Rows are filled with one ``INSERT ... SELECT generate_series`` (not the store's API, which
would take minutes for 20,000 rows) and their ownership reset between trials.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
from multiprocessing.synchronize import Barrier

import psycopg
from psycopg import sql

from actors.store import Lease, LedgerRow, PostgresStore, TaskDefinition, TaskUpdate

DSN = os.environ.get("SCHEDULER_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")
BATCH = 64


def definition(task_id: str, next_due: float) -> TaskDefinition:
    """A typical recurring task's definition (short JSON arguments)."""
    return TaskDefinition(
        task_id=task_id,
        fn_ref="jobs.reports:send_report",
        args_json=f'[{hash(task_id) % 1000}, "daily"]',
        kwargs_json='{"channel": "ops"}',
        trigger_json='{"kind": "rate", "interval": 60.0, "first": 1800000000.0}',
        options_json='{"name": "report", "max_consecutive_failures": 5}',
        next_due=next_due,
    )


def quantiles(samples: list[float]) -> str:
    """Median and p99 in microseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"median {statistics.median(ordered) * 1e6:7.0f} µs   p99 {p99 * 1e6:7.0f} µs"


def outcome(held: Lease) -> tuple[TaskUpdate, LedgerRow]:
    """The fenced update and ledger row a node commits after running ``held``."""
    task, run = held.task, held.task.run_count + 1
    assert task.next_due is not None
    update = TaskUpdate(
        task_id=task.task_id,
        seq=task.seq,
        status="scheduled",
        next_due=task.next_due + 86_400 * 365,  # next year: not due again during the run
        run_count=run,
        failure_count=0,
        consecutive_failures=0,
        last_error=None,
        last_outcome="completed",
        fence=held.fence,
    )
    ledger = LedgerRow(
        task_id=task.task_id,
        task_seq=task.seq,
        run=run,
        due=task.next_due,
        started=task.next_due + 0.001,
        finished=task.next_due + 0.01,
        outcome="completed",
        error=None,
    )
    return update, ledger


def node(dsn: str, schema: str, name: str) -> PostgresStore:
    """A node on the benchmark's schema (not open yet), with a ledger that never prunes."""
    return PostgresStore(dsn, schema=schema, node=name, run_history=10_000_000, task_history=10_000_000)


def bench_add(dsn: str, schema: str) -> None:
    """One caller thread: the latency of a committed add."""
    with node(dsn, schema, "add") as store:
        now = store.db_now()
        for i in range(200):
            store.add(definition(f"warm-{i}", now + 3600))
        samples = []
        for i in range(2000):
            task = definition(f"add-{i}", now + 3600)
            start = time.perf_counter()
            store.add(task)
            samples.append(time.perf_counter() - start)
    print(f"add (1 thread, 2,000)               {quantiles(samples)}")


def bench_save(dsn: str, schema: str, repeats: int = 200) -> None:
    """The scheduler's batch commit: 64 fenced updates and 64 ledger rows in one transaction."""
    with node(dsn, schema, "save") as store, psycopg.connect(dsn, autocommit=True) as db:
        now = store.db_now()
        for i in range(BATCH):
            store.add(definition(f"save-{i}", now + 3600))
        due_again = sql.SQL("UPDATE {}.task SET next_due = %s WHERE task_id LIKE 'save-%%'").format(
            sql.Identifier(schema)
        )
        samples = []
        for _ in range(repeats):
            db.execute(due_again, (now - 1,))  # the saved rows are due again: claim them
            pairs = [outcome(held) for held in store.claim_due(BATCH)]
            start = time.perf_counter()
            new = store.save([u for u, _ in pairs], [r for _, r in pairs])
            samples.append(time.perf_counter() - start)
            assert new == len(pairs) == BATCH, (new, len(pairs))
    print(f"save (64 fenced updates + 64 runs)  {quantiles(samples)}")


def fill(dsn: str, schema: str, rows: int) -> None:
    """Make ``rows`` due, unowned rows (the only rows of the table), vacuumed."""
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        db.execute("TRUNCATE task, run")
        db.execute(
            """INSERT INTO task (task_id, fn_ref, args_json, kwargs_json, trigger_json, options_json,
                                 status, next_due, updated_at)
               SELECT 'claim-' || n, 'jobs.reports:send_report', '[1, "daily"]', '{"channel": "ops"}',
                      '{"kind": "rate", "interval": 60.0}', '{"name": "report"}', 'scheduled',
                      extract(epoch FROM now()) - 3600 + n * 0.001, extract(epoch FROM now())
                 FROM generate_series(1, %s) AS n""",
            (rows,),
        )
        db.execute("VACUUM ANALYZE task")


def bench_claim_latency(dsn: str, schema: str, rows: int) -> None:
    """One process: the latency of claim_due(64) while it drains ``rows`` due rows."""
    fill(dsn, schema, rows)
    with node(dsn, schema, "claim") as store:
        samples = []
        while True:
            start = time.perf_counter()
            leases = store.claim_due(BATCH)
            samples.append(time.perf_counter() - start)
            if not leases:
                break
    print(f"claim_due(64) from {rows:,} due rows   {quantiles(samples[:-1])}   ({len(samples) - 1} claims)")


def claimer(
    dsn: str, schema: str, name: str, complete: bool, start: Barrier, results: multiprocessing.Queue[int]
) -> None:
    """A node in its own process: claim 64 at a time (and commit them) until nothing is due."""
    store = node(dsn, schema, name)
    store.open()
    store.db_now()  # connected before the clock starts
    start.wait()
    claimed = 0
    while leases := store.claim_due(BATCH):
        claimed += len(leases)
        if complete:
            pairs = [outcome(held) for held in leases]
            store.save([u for u, _ in pairs], [r for _, r in pairs])
    store.close()
    results.put(claimed)


def bench_claim_throughput(dsn: str, schema: str, rows: int, processes: int, *, complete: bool) -> None:
    """``processes`` nodes drain ``rows`` due rows; rows claimed per second of wall time."""
    fill(dsn, schema, rows)
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(processes + 1)
    results: multiprocessing.Queue[int] = context.Queue()
    workers = [
        context.Process(target=claimer, args=(dsn, schema, f"node-{n}", complete, start, results))
        for n in range(processes)
    ]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    counts = [results.get(timeout=300) for _ in workers]
    elapsed = time.perf_counter() - began
    for worker in workers:
        worker.join()
    assert sum(counts) == rows, (counts, rows)
    what = "claim + fenced save" if complete else "claim only         "
    print(
        f"{what} {processes} process{'es' if processes > 1 else '  '}  {rows / elapsed:8,.0f} rows/s"
        f"   {rows / BATCH / elapsed:6,.0f} claims/s   ({elapsed:.2f} s)"
    )


def main() -> None:
    """Run every measurement and print one line each."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.postgres_store", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--dsn", default=DSN, help="the server (default: SCHEDULER_TEST_DSN or the local test db)"
    )
    parser.add_argument("--rows", type=int, default=20_000, help="due rows for the claim measurements")
    args = parser.parse_args()
    dsn: str = args.dsn
    schema = f"bench_{os.getpid()}"
    try:
        bench_add(dsn, schema)
        bench_save(dsn, schema)
        bench_claim_latency(dsn, schema, args.rows)
        for complete in (False, True):
            for processes in (1, 2, 4):
                bench_claim_throughput(dsn, schema, args.rows, processes, complete=complete)
    finally:
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


if __name__ == "__main__":
    main()
