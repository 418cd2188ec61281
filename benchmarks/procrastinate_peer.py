"""procrastinate, the peer of ``python -m benchmarks.scaleout``: the same jobs, on the same server.

procrastinate (https://procrastinate.readthedocs.io) is a maintained Python task queue on
PostgreSQL: ``SKIP LOCKED`` claims in a stored procedure, ``LISTEN/NOTIFY`` plus polling, the
database's ``now()``. It is an optional dependency (the ``bench`` extra); without it the peer
is skipped with a line saying why (``unavailable``).

What is measured, as for our nodes (``benchmarks/scaleout.py``):

- **throughput**: ``tasks`` no-op jobs all due at the same instant (``schedule_at``, a moment
  from now on the database's clock), run by 1, 2 or 4 worker processes of ``concurrency`` each
  (our ``workers`` per node): jobs per second from that instant until the last one finished,
  and due -> started (p50/p99), read from procrastinate's own ``procrastinate_events`` (their
  ``at`` is the database's ``now()``, as our ledger's times are);
- **bulk enqueue**: one ``batch_defer`` of ``tasks`` jobs with JSON arguments, due an hour ahead
  (so nothing runs), against our ``schedule_many(..., durable=True)``.

Each trial gets a fresh schema of its own (procrastinate's tables, types and functions made in
it by its ``schema_manager``), dropped afterwards. The job is an ``async def`` no-op: a worker's
``concurrency`` applies to async jobs (procrastinate hands a sync one to a thread, which would
only slow it down). Workers poll every ``POLL`` seconds besides their ``NOTIFY`` listener: a job
scheduled for later gets no notification when it falls due, so the poll is what starts the
first jobs (ours wake at the due time from the store's next wake-up).

Workers run as ``python -m benchmarks.procrastinate_peer worker CONNINFO CONCURRENCY``.
"""

from __future__ import annotations

import datetime
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parents[1]
POLL = 0.1  # seconds between a worker's polls for due jobs (procrastinate's default is 5)
FAR_S = 3600.0


def unavailable() -> str | None:
    """Why the peer cannot run here (``None``: it can)."""
    try:
        import procrastinate
    except ImportError as error:
        return f"procrastinate is not installed ({error}; pip install procrastinate, or the bench extra)"
    return None if hasattr(procrastinate, "App") else "procrastinate has no App (a version too old)"


def version() -> str:
    """The installed procrastinate's version."""
    from importlib.metadata import version as installed

    return installed("procrastinate")


async def noop(**_: Any) -> None:
    """The job: does nothing, so what is measured is the queue."""


def make_app(conninfo: str) -> Any:
    """A procrastinate ``App`` on ``conninfo`` with the ``noop`` job registered."""
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo))
    app.task(name="noop")(noop)
    return app


def worker_main(conninfo: str, concurrency: int) -> None:
    """One worker process, until SIGTERM (procrastinate's own handler stops it gracefully)."""
    make_app(conninfo).run_worker(
        concurrency=concurrency, fetch_job_polling_interval=POLL, wait=True, delete_jobs="never"
    )


# -- a schema per trial ----------------------------------------------------------------------------


@contextmanager
def fresh_schema(dsn: str) -> Iterator[str]:
    """A new schema holding procrastinate's layout; yields the conninfo that works in it; dropped after."""
    name = f"bench_procrastinate_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conninfo = make_conninfo(dsn, options=f"-c search_path={name}")
    try:
        app = make_app(conninfo)
        with app.open():
            app.schema_manager.apply_schema()
        yield conninfo
    finally:
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def _scalar(conninfo: str, query: str) -> Any:
    with psycopg.connect(conninfo, autocommit=True) as db:
        row = db.execute(query).fetchone()
    assert row is not None
    return row[0]


class Workers:
    """procrastinate worker processes on one schema."""

    def __init__(self, conninfo: str, concurrency: int) -> None:
        self.conninfo = conninfo
        self.concurrency = concurrency
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, count: int, timeout: float = 60.0) -> None:
        """Start ``count`` workers; return once each has registered in the database."""
        command = [sys.executable, "-m", "benchmarks.procrastinate_peer", "worker"]
        for _ in range(count):
            self.procs.append(
                subprocess.Popen(
                    [*command, self.conninfo, str(self.concurrency)],
                    cwd=ROOT,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                    stdin=subprocess.DEVNULL,
                )
            )
        deadline = time.monotonic() + timeout
        while _scalar(self.conninfo, "SELECT count(*) FROM procrastinate_workers") < count:
            dead = [p.returncode for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"procrastinate workers did not start (exit codes {dead})")
            time.sleep(0.05)  # polling the database: the workers' rows are what says they run

    def stop(self) -> None:
        for process in self.procs:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.procs:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        self.procs.clear()


# -- the measurements --------------------------------------------------------------------------------

_RUNS = """
    SELECT extract(epoch FROM j.scheduled_at)::float8, extract(epoch FROM s.at)::float8,
           extract(epoch FROM f.at)::float8
      FROM procrastinate_jobs j
      JOIN procrastinate_events s ON s.job_id = j.id AND s.type = 'started'
      JOIN procrastinate_events f ON f.job_id = j.id AND f.type = 'succeeded'"""


def _runs(conninfo: str) -> list[tuple[float, float, float]]:
    with psycopg.connect(conninfo, autocommit=True) as db:
        return [(float(d), float(s), float(f)) for d, s, f in db.execute(_RUNS).fetchall()]


def _wait_done(conninfo: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    query = "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
    while _scalar(conninfo, query) < count and time.monotonic() < deadline:
        time.sleep(0.2)  # polling the database, as the scaleout benchmark does for our ledger


@dataclass
class PeerThroughput:
    """One row of the side-by-side table: a peer's jobs/s and due -> started on ``processes``."""

    peer: str
    processes: int
    concurrency: int
    tasks: int
    seconds: float
    per_second: float
    p50_ms: float
    p99_ms: float
    per_second_trials: list[float]
    cpu_us: dict[str, float] | None = None  # CPU-µs per execution (benchmarks/cpu_account.py)


def lateness_ms(runs: list[tuple[float, float, float]], q: float) -> float:
    """The ``q`` quantile of due -> started over ``runs`` (``(due, started, finished)``), in ms."""
    ordered = sorted((started - due) * 1000 for due, started, _ in runs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def throughput(dsn: str, processes: int, concurrency: int, tasks: int, trials: int) -> PeerThroughput:
    """``tasks`` no-op jobs due at once on ``processes`` workers: the median of ``trials``."""
    from benchmarks import cpu_account

    rates: list[float] = []
    seconds: list[float] = []
    p50: list[float] = []
    p99: list[float] = []
    cpu: list[cpu_account.CpuPerRun] = []
    for trial in range(trials):
        with fresh_schema(dsn) as conninfo:
            tag = f"procrastinate-bench-{os.getpid()}-{trial}-{time.monotonic_ns() % 10**9}"
            workers = Workers(make_conninfo(conninfo, application_name=tag), concurrency)
            workers.start(processes)
            try:
                app = make_app(conninfo)
                with app.open():
                    due = float(_scalar(conninfo, "SELECT extract(epoch FROM now())::float8")) + 1.0
                    at = datetime.datetime.fromtimestamp(due, datetime.UTC)
                    app.configure_task("noop", schedule_at=at).batch_defer(*({} for _ in range(tasks)))
                pids = [process.pid for process in workers.procs]
                before = cpu_account.snapshot(dsn, pids, tag)
                _wait_done(conninfo, tasks, timeout=600)
                after = cpu_account.snapshot(dsn, pids, tag)
                cpu.append(cpu_account.per_run(before, after, tasks))
            finally:
                workers.stop()
            runs = _runs(conninfo)
        if len(runs) != tasks:
            raise RuntimeError(f"only {len(runs)} of {tasks} procrastinate jobs succeeded")
        took = max(finished for _, _, finished in runs) - due
        seconds.append(took)
        rates.append(tasks / took)
        p50.append(lateness_ms(runs, 0.5))
        p99.append(lateness_ms(runs, 0.99))
    return PeerThroughput(
        "procrastinate",
        processes,
        concurrency,
        tasks,
        statistics.median(seconds),
        statistics.median(rates),
        statistics.median(p50),
        statistics.median(p99),
        rates,
        cpu_account.median(cpu),
    )


def time_bulk(dsn: str, tasks: int) -> float:
    """Seconds of one ``batch_defer`` of ``tasks`` jobs (JSON arguments, due in an hour), fresh schema."""
    arguments = [{"n": i, "label": f"item-{i}"} for i in range(tasks)]  # as durable_bulk's tasks
    with fresh_schema(dsn) as conninfo:
        app = make_app(conninfo)
        with app.open():
            at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=FAR_S)
            deferrer = app.configure_task("noop", schedule_at=at)
            start = time.perf_counter()
            ids = deferrer.batch_defer(*arguments)
            elapsed = time.perf_counter() - start
        stored = _scalar(conninfo, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'")
    if len(ids) != tasks or stored != tasks:
        raise RuntimeError(f"{stored:,} of {tasks:,} jobs are stored after batch_defer")
    return elapsed


if __name__ == "__main__":
    if sys.argv[1:2] != ["worker"]:
        raise SystemExit("usage: python -m benchmarks.procrastinate_peer worker CONNINFO CONCURRENCY")
    # Through the module's own name: an App made in ``__main__`` makes procrastinate warn.
    from benchmarks.procrastinate_peer import worker_main as run_worker

    run_worker(sys.argv[2], int(sys.argv[3]))
