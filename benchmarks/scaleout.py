"""Scale-out on PostgreSQL: ``python -m benchmarks.scaleout [--dsn DSN] [--tasks N] [--peers P]``.

Real ``Scheduler`` processes (nodes) sharing one schema of their own on ``--dsn`` (default:
``SCHEDULER_TEST_DSN`` or the local ``test`` database), created and dropped per trial.
Measures, on the database's clock (the ledger's ``due``/``started``/``finished``):

- **throughput**: ``--tasks`` one-time no-op tasks all due at the same instant, run by 1, 2
  and 4 nodes of ``--workers`` workers each: executions per second from that instant until
  the last run finished (median of ``--trials``);
- **claim latency**: due -> started, for tasks due one at a time (``--rate`` per second
  spread over ``--seconds``) on 4 idle nodes: p50/p99/max;
- **recovery after kill -9**: a task's first owner is killed as soon as its run has started;
  due -> started again on another node, and kill -> started, against ``lease + poll``.

Side by side with procrastinate (``--peers ours,procrastinate``, the default; the peer is
``benchmarks/procrastinate_peer.py``, skipped with a line saying why when it is not installed):
the same throughput trials with as many procrastinate worker processes as nodes, each of
``--workers`` concurrency, in a schema of its own per trial; both peers' jobs/s and due ->
started (p50/p99) in one table; and the bulk enqueue of ``--tasks`` durable tasks, our
``schedule_many(..., durable=True)`` against procrastinate's ``batch_defer``. ``--quick``: a
few hundred tasks, one trial, to check that it all works.

Nodes run ``python -m benchmarks.scaleout node ...`` (a ``Scheduler`` with a ``PostgresStore``).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from actors.store import PostgresStore
from benchmarks import cpu_account, durable_bulk, procrastinate_peer
from benchmarks.procrastinate_peer import PeerThroughput, lateness_ms

DSN = os.environ.get("SCHEDULER_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


# -- the tasks the nodes run (by reference) ---------------------------------------------------------


def noop() -> None:
    """A task that does nothing: what is measured is the scheduling."""


def mark(path: str, seconds: float) -> None:
    """Append ``<pid> <wall time>`` to ``path``, then block ``seconds`` (a run a kill interrupts)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{os.getpid()} {time.time():.6f}\n".encode())
    finally:
        os.close(fd)
    time.sleep(seconds)


# -- nodes ---------------------------------------------------------------------------------------------


def node_main(dsn: str, schema: str, name: str, lease: float, poll: float, workers: int) -> None:
    """One node: a ``Scheduler`` on the shared store, until stdin closes or SIGTERM.

    With ``SCALEOUT_STATEMENTS=<dir>`` in its environment, the node counts the statements its
    store sends (``statement_counts``) and writes them to ``<dir>/<name>.json`` as it stops.
    """
    from actors import Scheduler

    counts = os.environ.get("SCALEOUT_STATEMENTS")
    if counts:
        statement_counts(Path(counts) / f"{name}.json")

    store = PostgresStore(dsn, schema=schema, node=name, lease=lease, poll=poll, run_history=10_000_000)
    scheduler = Scheduler(workers=workers, store=store)
    stopped = False

    def stop(*_: object) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    while not stopped and select.select([sys.stdin], [], [], 0.2)[0] == []:
        pass
    scheduler.shutdown(timeout=10)


def statement_counts(out: Path) -> None:
    """Count every statement this process sends through psycopg, by kind, and how long each took.

    Wraps ``psycopg.Connection.execute``: a statement's wall time from the call to its answer
    (in pipeline mode, only the sending: the answer comes at the sync). Written to ``out`` at exit.
    """
    import atexit
    import threading
    from collections import Counter

    lock = threading.Lock()  # guards calls and seconds: every thread of the node counts
    calls: Counter[str] = Counter()
    seconds: dict[str, float] = {}
    original = psycopg.Connection.execute

    from actors.store import postgres_after, postgres_sql

    names: dict[str, str] = {}  # statement text -> its constant's name in the store's modules
    for module in (postgres_sql, postgres_after):
        for constant, value in vars(module).items():
            texts = value.values() if isinstance(value, dict) else [value]
            for text in texts:
                if isinstance(text, str) and constant.isupper():
                    names.setdefault(text, constant)

    def kind(query: object) -> str:
        return names.get(query, " ".join(str(query).split())[:50]) if isinstance(query, str) else "sql"

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(self, query, *args, **kwargs)
        finally:
            key = kind(query)
            with lock:
                calls[key] += 1
                seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - began

    psycopg.Connection.execute = execute  # type: ignore[method-assign]

    def write() -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with lock:
            out.write_text(json.dumps({key: [calls[key], seconds[key]] for key in calls}, indent=1))

    atexit.register(write)


class Nodes:
    """Node processes on one schema."""

    def __init__(self, dsn: str, schema: str, *, lease: float, poll: float, workers: int) -> None:
        self.args = [dsn, schema, "", str(lease), str(poll), str(workers)]
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.tag = schema  # in every node's name, so in its sessions' application_name
        self.env: dict[str, str] = {}  # more environment for the node processes
        self.root = ROOT  # the tree whose code the nodes run (``--ref``: another one)

    def start(self, count: int) -> None:
        names = [f"{self.tag}-node-{len(self.procs) + i}" for i in range(count)]
        for name in names:
            args = [*self.args]
            args[2] = name
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.scaleout", "node", *args],
                cwd=self.root,
                env={**os.environ, "PYTHONPATH": str(self.root), **self.env},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        for name in names:
            stdout = self.procs[name].stdout
            assert stdout is not None
            assert stdout.readline().strip() == "ready", f"{name} did not start"

    def kill(self, name: str) -> None:
        process = self.procs.pop(name)
        process.kill()
        process.wait(10)
        _close(process)

    def stop(self) -> None:
        for process in self.procs.values():
            process.send_signal(signal.SIGTERM)
        for process in self.procs.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
            _close(process)
        self.procs.clear()


def _close(process: subprocess.Popen[str]) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


# -- a schema per trial ----------------------------------------------------------------------------


class Schema:
    """A fresh schema with the store's tables, dropped at the end."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.name = f"bench_{os.getpid()}_{time.monotonic_ns() % 10**9}"
        self.store = PostgresStore(dsn, schema=self.name, node="bench", run_history=10_000_000)

    def __enter__(self) -> Schema:
        self.store.open()
        return self

    def __exit__(self, *_: object) -> None:
        self.store.close()
        with psycopg.connect(self.dsn, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.name)))

    def fill(
        self, count: int, fn_ref: str, args_json: str, due: float | None = None, spread: float = 0.0
    ) -> None:
        """Insert ``count`` one-time tasks due at ``due`` (+ i * spread / count), in one statement."""
        with psycopg.connect(self.dsn, autocommit=True) as db:
            db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.name)))
            db.execute(
                """INSERT INTO task (task_id, fn_ref, args_json, kwargs_json, trigger_json, options_json,
                                     status, next_due, updated_at)
                   SELECT 'b-' || i, %s, %s, '{}', '{"once":true}', '{}', 'scheduled',
                          %s + (i - 1) * %s, extract(epoch FROM now())
                     FROM generate_series(1, %s) AS i""",
                (fn_ref, args_json, due, spread / max(count, 1), count),
            )

    def runs(self) -> list[tuple[float, float, float]]:
        """Every ledger row's ``(due, started, finished)``."""
        with psycopg.connect(self.dsn, autocommit=True) as db:
            db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.name)))
            rows = db.execute("SELECT due, started, finished FROM run WHERE outcome = 'completed'").fetchall()
        return [(float(d), float(s), float(f)) for d, s, f in rows]


def wait_for_runs(schema: Schema, count: int, timeout: float) -> list[tuple[float, float, float]]:
    deadline = time.monotonic() + timeout
    while True:
        runs = schema.runs()
        if len(runs) >= count or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the measurements --------------------------------------------------------------------------------


@dataclass
class Throughput:
    nodes: int
    workers: int
    tasks: int
    seconds: float
    per_second: float
    per_second_trials: list[float]
    p50_ms: float = 0.0  # due -> started, median over the trials (the side-by-side table's)
    p99_ms: float = 0.0
    cpu_us: dict[str, float] | None = None  # CPU-µs per execution, median over the trials


def throughput(
    dsn: str,
    nodes: int,
    workers: int,
    tasks: int,
    trials: int,
    profile: Path | None = None,
    root: Path = ROOT,
) -> Throughput:
    rates: list[float] = []
    seconds: list[float] = []
    p50: list[float] = []
    p99: list[float] = []
    cpu: list[cpu_account.CpuPerRun] = []
    peer = "ours" if root == ROOT else "ref"
    for trial in range(trials):
        with Schema(dsn) as schema:
            fleet = Nodes(dsn, schema.name, lease=30.0, poll=1.0, workers=workers)
            fleet.root = root
            if profile is not None:
                fleet.env["SCALEOUT_STATEMENTS"] = str(profile / f"statements-{peer}-{nodes}-{trial}")
            fleet.start(nodes)
            pids = [process.pid for process in fleet.procs.values()]
            try:
                due = schema.store.db_now() + 1.0  # all due at once, a moment from now
                schema.fill(tasks, "benchmarks.scaleout:noop", "[]", due)
                name = f"{peer}-{nodes}-{trial}"
                spies = _spy(pids, profile, name) if profile is not None else []
                waits = _WaitSampler(dsn, fleet.tag) if profile is not None else None
                tables = _table_stats(dsn, schema.name) if profile is not None else {}
                before = cpu_account.snapshot(dsn, pids, fleet.tag)
                runs = wait_for_runs(schema, tasks, timeout=600)
                after = cpu_account.snapshot(dsn, pids, fleet.tag)
                _unspy(spies)
                if profile is not None and waits is not None:
                    finished = _table_stats(dsn, schema.name)
                    per_run = {k: (finished[k] - tables.get(k, 0)) / len(runs) for k in finished}
                    (profile / f"{name}-server.json").write_text(
                        json.dumps({"waits": waits.stop(), "table_stats_per_run": per_run}, indent=1)
                    )
                cpu.append(cpu_account.per_run(before, after, len(runs)))
            finally:
                fleet.stop()
            assert len(runs) == tasks, f"only {len(runs)} of {tasks} runs completed"
            took = max(finished for _, _, finished in runs) - due
            seconds.append(took)
            rates.append(tasks / took)
            p50.append(lateness_ms(runs, 0.5))
            p99.append(lateness_ms(runs, 0.99))
    return Throughput(
        nodes,
        workers,
        tasks,
        statistics.median(seconds),
        statistics.median(rates),
        rates,
        statistics.median(p50),
        statistics.median(p99),
        cpu_account.median(cpu),
    )


def _spy(pids: list[int], profile: Path, name: str) -> list[subprocess.Popen[bytes]]:
    """Sample each process with ``py-spy`` (every thread, on CPU only) until ``_unspy``."""
    profile.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [
                "py-spy",
                "record",
                "--pid",
                str(pid),
                "--rate",
                "250",
                "--threads",
                "--nonblocking",
                "--format",
                "raw",
                "--output",
                str(profile / f"{name}-{i}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i, pid in enumerate(pids)
    ]


class _WaitSampler:
    """Samples the wait events of the tagged sessions every 5 ms, on a thread, until ``stop``."""

    def __init__(self, dsn: str, tag: str) -> None:
        import threading
        from collections import Counter

        self.counts: Counter[str] = Counter()
        self._stop = threading.Event()
        self._db = psycopg.connect(dsn, autocommit=True)
        self._tag = tag
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        query = """SELECT state, coalesce(wait_event_type || ':' || wait_event, 'on CPU')
                     FROM pg_stat_activity WHERE position(%s IN application_name) > 0"""
        while not self._stop.wait(0.005):
            for state, wait in self._db.execute(query, (self._tag,)).fetchall():
                self.counts[f"{state} / {wait}"] += 1

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        self._db.close()
        return dict(self.counts.most_common())


def _table_stats(dsn: str, schema: str) -> dict[str, int]:
    """The task and run tables' counters (scans, tuples read and written) in ``schema``."""
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("SELECT pg_stat_clear_snapshot()")
        rows = db.execute(
            """SELECT relname, coalesce(seq_scan, 0), coalesce(idx_scan, 0), coalesce(idx_tup_fetch, 0),
                      n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup
                 FROM pg_stat_user_tables WHERE schemaname = %s""",
            (schema,),
        ).fetchall()
    names = ("seq_scan", "idx_scan", "idx_tup_fetch", "ins", "upd", "hot_upd", "dead")
    return {f"{table}.{n}": value for table, *values in rows for n, value in zip(names, values, strict=True)}


def _unspy(spies: list[subprocess.Popen[bytes]]) -> None:
    for spy in spies:
        spy.send_signal(signal.SIGINT)
    for spy in spies:
        spy.wait(30)


@dataclass
class Latency:
    nodes: int
    runs: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def claim_latency(dsn: str, nodes: int, workers: int, rate: float, seconds: float) -> Latency:
    count = int(rate * seconds)
    with Schema(dsn) as schema:
        fleet = Nodes(dsn, schema.name, lease=30.0, poll=1.0, workers=workers)
        fleet.start(nodes)
        try:
            start = schema.store.db_now() + 1.0
            schema.fill(count, "benchmarks.scaleout:noop", "[]", start, spread=seconds)
            runs = wait_for_runs(schema, count, timeout=seconds + 60)
        finally:
            fleet.stop()
    lateness = [(started - due) * 1000 for due, started, _ in runs]
    return Latency(
        nodes,
        len(runs),
        quantile(lateness, 0.5),
        quantile(lateness, 0.99),
        max(lateness) if lateness else 0.0,
    )


@dataclass
class Recovery:
    lease: float
    poll: float
    trials: int
    due_to_restart: list[float]
    kill_to_restart: list[float]


def recovery(dsn: str, lease: float, poll: float, trials: int, tmp: Path) -> Recovery:
    due_to_restart: list[float] = []
    kill_to_restart: list[float] = []
    for trial in range(trials):
        log = tmp / f"recovery-{os.getpid()}-{trial}.log"
        log.unlink(missing_ok=True)
        with Schema(dsn) as schema:
            fleet = Nodes(dsn, schema.name, lease=lease, poll=poll, workers=2)
            fleet.start(4)
            try:
                due = schema.store.db_now() + 1.0
                schema.fill(1, "benchmarks.scaleout:mark", json.dumps([str(log), 3 * (lease + poll)]), due)
                owner = _first_owner(schema.store, timeout=10 + lease)
                killed_at = time.time()
                fleet.kill(owner)
                deadline = time.monotonic() + 3 * (lease + poll) + 10
                while time.monotonic() < deadline and len(log.read_text().splitlines()) < 2:
                    time.sleep(0.005)
                starts = [float(line.split()[1]) for line in log.read_text().splitlines()]
                assert len(starts) >= 2, "the run was never taken over"
                due_to_restart.append(starts[1] - due)
                kill_to_restart.append(starts[1] - killed_at)
            finally:
                fleet.stop()
        log.unlink(missing_ok=True)
    return Recovery(lease, poll, trials, due_to_restart, kill_to_restart)


def _first_owner(store: PostgresStore, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = [flight.owner for flight in store.runs_in_flight() if flight.started]
        if started:
            return started[0]
        time.sleep(0.002)
    raise AssertionError("no node started the run")


# -- side by side with procrastinate -----------------------------------------------------------------

PEERS = ("ours", "procrastinate")


def _peers(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PEERS]
    if unknown or not names:
        raise SystemExit(f"unknown peers: {', '.join(unknown) or text!r} (choose from {', '.join(PEERS)})")
    return names


def side_by_side_table(rows: list[dict[str, object]]) -> str:
    """The side-by-side rows as a Markdown table (printed, and pasted into docs/scale-out.md)."""
    lines = [
        "| peer | processes x concurrency | jobs/s | due -> started p50 | p99 |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['peer']} | {row['processes']} x {row['concurrency']} | {row['per_second']:,.0f} "
            f"| {row['p50_ms']:,.0f} ms | {row['p99_ms']:,.0f} ms |"
        )
    return "\n".join(lines)


def bulk_enqueue(dsn: str, peers: list[str], tasks: int, trials: int) -> dict[str, list[float]]:
    """Seconds to commit ``tasks`` durable tasks in one call, each peer on a fresh schema, interleaved."""
    seconds: dict[str, list[float]] = {peer: [] for peer in peers}
    for _ in range(trials):
        if "ours" in seconds:
            seconds["ours"].append(durable_bulk.time_bulk(durable_bulk.postgres_opener(dsn), tasks))
        if "procrastinate" in seconds:
            seconds["procrastinate"].append(procrastinate_peer.time_bulk(dsn, tasks))
    return seconds


# -- the report ----------------------------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "node":
        dsn, schema, name, lease, poll, workers = sys.argv[2:]
        node_main(dsn, schema, name, float(lease), float(poll), int(workers))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=DSN)
    parser.add_argument("--tasks", type=int, default=5000, help="one-time tasks per throughput trial")
    parser.add_argument("--workers", type=int, default=4, help="workers per node")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rate", type=float, default=20.0, help="tasks due per second (claim latency)")
    parser.add_argument("--seconds", type=float, default=15.0, help="how long the claim-latency run lasts")
    parser.add_argument("--lease", type=float, default=2.0, help="lease of the recovery trials")
    parser.add_argument("--poll", type=float, default=1.0, help="poll of the recovery trials")
    parser.add_argument("--recoveries", type=int, default=5)
    parser.add_argument(
        "--peers", default=",".join(PEERS), help=f"comma-separated, of {', '.join(PEERS)} (default both)"
    )
    parser.add_argument("--nodes", default="1,2,4", help="comma-separated node counts (default 1,2,4)")
    parser.add_argument("--latency", type=int, default=1, help="0: skip the claim-latency run")
    parser.add_argument("--bulk", type=int, default=1, help="0: skip the bulk-enqueue comparison")
    parser.add_argument("--profile", type=Path, help="write py-spy samples (raw) of our nodes here")
    parser.add_argument(
        "--ref",
        type=Path,
        help="another tree (e.g. `git archive <commit> | tar -x -C DIR`): its nodes run each "
        "throughput trial too, just before ours (peer 'ref'), for a paired comparison",
    )
    parser.add_argument("--quick", action="store_true", help="300 tasks, one trial: checks that it works")
    options = parser.parse_args()
    if options.quick:
        options.tasks, options.trials, options.seconds, options.recoveries = 300, 1, 3.0, 1
    peers = _peers(options.peers)
    if "procrastinate" in peers and (why := procrastinate_peer.unavailable()) is not None:
        print(f"peer procrastinate skipped: {why}")
        peers.remove("procrastinate")
    RESULTS.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {"cpus": os.cpu_count(), "load": os.getloadavg(), "peers": peers}
    if "procrastinate" in peers:
        report["procrastinate"] = {"version": procrastinate_peer.version(), "poll_s": procrastinate_peer.POLL}

    print(f"load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cpus)")
    print(f"throughput: {options.tasks} one-time no-op tasks due at once, {options.workers} workers per node")
    report["throughput"] = []
    rows: list[dict[str, object]] = []
    for nodes in [int(count) for count in options.nodes.split(",")]:
        if options.ref is not None:
            ref = throughput(
                options.dsn,
                nodes,
                options.workers,
                options.tasks,
                options.trials,
                options.profile,
                options.ref,
            )
            trials = ", ".join(f"{rate:.0f}" for rate in ref.per_second_trials)
            rate = f"{ref.per_second:7.0f} executions/s"
            print(f"  ref, {nodes} node(s): {rate}  (trials {trials}){_cpu(ref.cpu_us)}")
            rows.append(
                asdict(
                    PeerThroughput(
                        "ref",
                        nodes,
                        options.workers,
                        options.tasks,
                        ref.seconds,
                        ref.per_second,
                        ref.p50_ms,
                        ref.p99_ms,
                        ref.per_second_trials,
                        ref.cpu_us,
                    )
                )
            )
        if "ours" in peers:
            result = throughput(
                options.dsn, nodes, options.workers, options.tasks, options.trials, options.profile
            )
            report["throughput"].append(asdict(result))  # type: ignore[attr-defined]
            trials = ", ".join(f"{rate:.0f}" for rate in result.per_second_trials)
            took = f"{result.seconds:.2f} s; trials {trials}"
            print(f"  {nodes} node(s): {result.per_second:7.0f} executions/s  ({took}){_cpu(result.cpu_us)}")
            rows.append(
                asdict(
                    PeerThroughput(
                        "ours",
                        nodes,
                        options.workers,
                        options.tasks,
                        result.seconds,
                        result.per_second,
                        result.p50_ms,
                        result.p99_ms,
                        result.per_second_trials,
                        result.cpu_us,
                    )
                )
            )
        if "procrastinate" in peers:
            theirs = procrastinate_peer.throughput(
                options.dsn, nodes, options.workers, options.tasks, options.trials
            )
            trials = ", ".join(f"{rate:.0f}" for rate in theirs.per_second_trials)
            print(
                f"  procrastinate, {nodes} worker process(es): {theirs.per_second:7.0f} jobs/s  "
                f"({theirs.seconds:.2f} s; trials {trials}){_cpu(theirs.cpu_us)}"
            )
            rows.append(asdict(theirs))
    report["side_by_side"] = rows
    report["load_after_throughput"] = os.getloadavg()
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"side by side ({options.tasks} no-op jobs due at once, median of {options.trials}):")
    print(side_by_side_table(rows))

    bulk = bulk_enqueue(options.dsn, peers, options.tasks, options.trials) if options.bulk else {}
    report["bulk_enqueue"] = {"tasks": options.tasks, "seconds": bulk}
    calls = {"ours": "schedule_many(durable=True)", "procrastinate": "batch_defer"}
    for peer, times in bulk.items():
        median = statistics.median(times)
        print(
            f"bulk enqueue, {peer} {calls[peer]} of {options.tasks} tasks: {median:.3f} s "
            f"({options.tasks / median:,.0f} tasks/s; trials {', '.join(f'{t:.3f}' for t in times)})"
        )
    if "ours" not in peers or not options.latency:
        _write(report)
        return

    latency = claim_latency(options.dsn, 4, options.workers, options.rate, options.seconds)
    report["claim_latency"] = asdict(latency)
    print(
        f"claim latency (due -> started), 4 idle nodes, {options.rate:g} tasks/s: "
        f"p50 {latency.p50_ms:.1f} ms, p99 {latency.p99_ms:.1f} ms, max {latency.max_ms:.1f} ms "
        f"({latency.runs} runs)"
    )

    if options.recoveries < 1:  # --recoveries 0: throughput and latency only
        _write(report)
        return
    tmp = RESULTS / "tmp"
    tmp.mkdir(exist_ok=True)
    recovered = recovery(options.dsn, options.lease, options.poll, options.recoveries, tmp)
    report["recovery"] = asdict(recovered)
    bound = options.lease + options.poll
    print(
        f"recovery after kill -9 (lease {options.lease:g} s + poll {options.poll:g} s = {bound:g} s): "
        f"due -> started elsewhere median {statistics.median(recovered.due_to_restart):.2f} s, "
        f"max {max(recovered.due_to_restart):.2f} s; kill -> started median "
        f"{statistics.median(recovered.kill_to_restart):.2f} s, max {max(recovered.kill_to_restart):.2f} s"
    )
    _write(report)


def _cpu(cpu: dict[str, float] | None) -> str:
    """CPU-µs per execution, as printed beside a throughput row."""
    if cpu is None:
        return ""
    return (
        f"; CPU-µs/execution: nodes {cpu['nodes_us']:,.0f}, their backends {cpu['backends_us']:,.0f}, "
        f"server shared {cpu['shared_us']:,.0f}, total {cpu['total_us']:,.0f}"
    )


def _write(report: dict[str, object]) -> None:
    out = RESULTS / "scaleout.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
