"""A fleet of scheduler processes on one PostgreSQL schema, faults to inject, and the exactly-once checker.

``Fleet`` starts nodes (``tests.shared.fleet_node``), kills them (``kill -9``), pauses them
(``SIGSTOP`` ... ``SIGCONT``) and stops them; it keeps a fault log. ``make_plan`` writes a
schedule straight into the store: one-time tasks due across a window and fixed-rate tasks.
``check`` then judges what the fleet did, from the database and the side-effect log:

- the ledger has exactly one committed row per expected run ``(task, due)``: none missing,
  none extra (fixed-rate runs: on the task's grid, each next slot the first one not yet past
  when the run before it finished, as ``next_fixed_rate`` says);
- no run started before it was due (both on the database's clock);
- no run's outcome was committed twice (a trigger logs every outcome the store applied);
- a run's side effect started twice only where one of its executions was on a node that was
  killed or paused (or during a database restart): the fault log must explain each duplicate.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from psycopg import sql

from actors.store import PostgresStore, TaskDefinition
from tests.store.helpers import ROOT
from tests.store.pg import admin

EFFECT = "tests.shared.fleet_tasks:effect"
TOLERANCE = 0.005  # seconds: due times pass through float conversions between clocks

# Every outcome the store applies (a save: it moves updated_at, and does not cancel).
COMMIT_LOG = """
    CREATE TABLE commit_log (seq bigint, task_id text, run_count bigint, owner text, fence bigint);
    CREATE FUNCTION log_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.updated_at IS DISTINCT FROM OLD.updated_at AND NEW.status <> 'cancelled'
           AND NEW.fn_ref = OLD.fn_ref THEN
            INSERT INTO commit_log VALUES (NEW.seq, NEW.task_id, NEW.run_count, OLD.owner, OLD.fence);
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER commits AFTER UPDATE ON task FOR EACH ROW EXECUTE FUNCTION log_commit();
"""


def install_commit_log(schema: str) -> None:
    """Log every applied outcome of the store in ``schema`` (after it was created)."""
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        db.execute(COMMIT_LOG)  # constant DDL


@dataclass(frozen=True)
class Fault:
    """One fault: ``kind`` (``kill``, ``pause``, ``restart``) of process ``pid``, between two wall times."""

    kind: str
    pid: int | None
    start: float
    end: float


@dataclass
class Fleet:
    """Scheduler processes on one schema; every fault injected is in ``faults``."""

    dsn: str
    schema: str
    lease: float
    poll: float
    workers: int = 4
    mode: str = "fenced"
    nodes: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    pids: set[int] = field(default_factory=set)
    _names: Any = field(default_factory=itertools.count)

    def start(self, count: int) -> list[str]:
        """Start ``count`` nodes at once; return their names once each says it is ready."""
        names = [self._spawn() for _ in range(count)]
        for name in names:
            self._wait_ready(name)
        return names

    def _spawn(self) -> str:
        name = f"node-{next(self._names)}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        args = [self.dsn, self.schema, name, str(self.lease), str(self.poll), str(self.workers), self.mode]
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.shared.fleet_node", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.nodes[name] = process
        self.pids.add(process.pid)
        return name

    def _wait_ready(self, name: str, timeout: float = 30.0) -> None:
        process = self.nodes[name]
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        line = process.stdout.readline() if ready else ""
        assert line.strip() == "ready", f"{name} did not start: {line!r}"

    def restart(self) -> str:
        """Start one more node (a killed one's replacement)."""
        name = self._spawn()
        self._wait_ready(name)
        return name

    def kill(self, name: str) -> None:
        """``kill -9`` the node: its claims and runs in flight are left to their leases."""
        process = self.nodes.pop(name)
        at = time.time()
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        self.faults.append(Fault("kill", process.pid, at, time.time()))
        _close(process)

    def pause(self, name: str, seconds: float) -> None:
        """``SIGSTOP`` the node for ``seconds``, then ``SIGCONT``: its late outcomes must be refused."""
        process = self.nodes[name]
        at = time.time()
        process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(seconds)  # the fault's own length
        finally:
            process.send_signal(signal.SIGCONT)
        self.faults.append(Fault("pause", process.pid, at, time.time()))

    def restarted_database(self, start: float, end: float) -> None:
        """Log a restart of the database server between two wall times."""
        self.faults.append(Fault("restart", None, start, end))

    def random_node(self, rng: random.Random, among: set[str] | None = None) -> str:
        """A random live node (one of ``among``, if any of them is live)."""
        names = sorted(self.nodes.keys() & among) if among else []
        return rng.choice(names or sorted(self.nodes))

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every node cleanly (``SIGTERM``); kill what does not stop in time."""
        for process in self.nodes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, process in self.nodes.items():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
                raise AssertionError(f"{name} did not stop within {timeout} s") from None
            finally:
                _close(process)
        self.nodes.clear()

    def kill_all(self) -> None:
        """Kill whatever still runs (cleanup after a failed test)."""
        for process in self.nodes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
            process.wait(10)
            _close(process)
        self.nodes.clear()


def _close(process: subprocess.Popen[str]) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


@dataclass(frozen=True)
class Plan:
    """The schedule a test wrote: one-time tasks by due time, fixed-rate ones by grid."""

    log: Path
    once: dict[str, float]
    rates: dict[str, tuple[float, float]]  # task_id -> (anchor, interval)
    end: float  # the window's end, on the database's clock


def make_plan(
    store: PostgresStore,
    log: Path,
    *,
    start: float,
    window: float,
    once: int,
    rates: int,
    interval: float,
    pause: float,
    seed: int = 0,
) -> Plan:
    """Write the schedule: ``once`` one-time tasks due across the window, ``rates`` fixed-rate ones."""
    rng = random.Random(seed)
    args = json.dumps([str(log), pause])
    dues: dict[str, float] = {}
    grids: dict[str, tuple[float, float]] = {}
    for i in range(once):
        due = start + rng.random() * window
        dues[f"once-{i}"] = due
        store.add(_definition(f"once-{i}", args, '{"once":true}', due))
    for i in range(rates):
        anchor = start + rng.random() * interval
        grids[f"rate-{i}"] = (anchor, interval)
        store.add(_definition(f"rate-{i}", args, json.dumps({"rate": interval, "anchor": anchor}), anchor))
    return Plan(log, dues, grids, start + window)


def _definition(task_id: str, args: str, trigger: str, due: float) -> TaskDefinition:
    return TaskDefinition(
        task_id=task_id,
        fn_ref=EFFECT,
        args_json=args,
        kwargs_json="{}",
        trigger_json=trigger,
        options_json="{}",
        next_due=due,
    )


def end_rates(store: PostgresStore, plan: Plan) -> float:
    """Cancel the fixed-rate tasks at the window's end; return the database's clock then."""
    for task_id in plan.rates:
        store.cancel(task_id)
    return store.db_now()


def wait_done(store: PostgresStore, plan: Plan, timeout: float) -> None:
    """Wait until every one-time run has a ledger row, or ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = {run.task_id for run in store.runs(limit=1_000_000) if run.task_id in plan.once}
        if len(done) == len(plan.once) and not store.runs_in_flight():
            return
        time.sleep(0.1)  # polling the database: what the test waits for is there


@dataclass
class Verdict:
    """What the checker found; ``ok`` when nothing is wrong."""

    expected: int = 0
    committed: int = 0
    missing: list[tuple[str, float]] = field(default_factory=list)
    extra: list[tuple[str, float]] = field(default_factory=list)
    early: list[tuple[str, float, float]] = field(default_factory=list)
    double_commits: list[tuple[str, int, int]] = field(default_factory=list)
    executions: int = 0
    duplicates: int = 0  # side effects started more than once (each explained, or listed below)
    unexplained: list[tuple[str, list[int]]] = field(default_factory=list)
    context: dict[str, list[str]] = field(default_factory=dict)  # the ledger's tail of a task in question

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.early or self.double_commits or self.unexplained)

    def summary(self) -> str:
        return (
            f"{self.expected} runs expected, {self.committed} committed; missing {len(self.missing)}, "
            f"extra {len(self.extra)}, early {len(self.early)}, double commits {len(self.double_commits)}; "
            f"{self.executions} side effects, {self.duplicates} started twice "
            f"({len(self.unexplained)} not explained by a fault)"
            + "".join(
                f"\n  {name}: {items[:10]}"
                for name, items in (
                    ("missing", self.missing),
                    ("extra", self.extra),
                    ("early", self.early),
                    ("double commits", self.double_commits),
                    ("unexplained", self.unexplained),
                )
                if items
            )
            + "".join(f"\n  {task_id}: {rows}" for task_id, rows in self.context.items())
        )


def check(
    store: PostgresStore, schema: str, plan: Plan, faults: list[Fault], *, ended: float, settle: float
) -> Verdict:
    """Judge the fleet's work (see the module's docstring).

    ``ended`` is when the fixed-rate tasks were cancelled; a slot due ``settle`` seconds before
    that (plus how late the fleet was running things then) must have run.
    """
    verdict = Verdict()
    rows = [run for run in store.runs(limit=10_000_000) if run.outcome == "completed"]
    verdict.committed = len(rows)
    by_task: dict[str, list[Any]] = defaultdict(list)
    for run in sorted(rows, key=lambda r: (r.task_id, r.run)):
        by_task[run.task_id].append(run)
        if run.started is None or run.started < run.due - 1e-6:
            verdict.early.append((run.task_id, run.due, run.started or math.nan))
    # How late the fleet ran things as the window closed: a slot due within that much of the
    # cancel may have lost to it (it was not run yet: a cancel wins against a run not started).
    recent = [run.started - run.due for run in rows if run.started is not None and run.due >= ended - 10]
    backlog = max(recent, default=0.0)
    expected: set[tuple[str, float]] = set()
    for task_id, due in plan.once.items():
        expected.add((task_id, due))
        got = [run.due for run in by_task.get(task_id, [])]
        if not any(abs(d - due) <= TOLERANCE for d in got):
            verdict.missing.append((task_id, due))
        verdict.extra += [(task_id, d) for d in got if abs(d - due) > TOLERANCE]
        verdict.extra += [(task_id, due)] * max(0, len(got) - 1)
    for task_id, (anchor, interval) in plan.rates.items():
        runs = by_task.get(task_id, [])
        slot = later = anchor
        for run in runs:
            if abs(run.due - later) <= TOLERANCE:
                slot = later  # a run that finished within the tolerance of a slot: either is right
            while run.due > slot + TOLERANCE:  # a slot that should have run before this one
                verdict.missing.append((task_id, slot))
                expected.add((task_id, slot))
                slot += interval
            if run.due < slot - TOLERANCE:  # a run where none was due
                verdict.extra.append((task_id, run.due))
                continue
            expected.add((task_id, slot))
            slot = _next_slot(anchor, interval, run.due, run.finished - TOLERANCE)
            later = _next_slot(anchor, interval, run.due, run.finished + TOLERANCE)
        if later <= ended - settle - backlog:  # it was due well before the cancel: it should have run
            verdict.missing.append((task_id, later))
    verdict.expected = len(expected)
    for task_id, at in verdict.missing + verdict.extra:  # the ledger around each: what a reader needs
        verdict.context[f"{task_id} near {at:.3f}"] = [
            f"run {r.run} due {r.due:.3f} started {r.started:.3f} finished {r.finished:.3f}"
            for r in by_task.get(task_id, [])
            if abs(r.due - at) <= 3.0
        ] + [f"cancelled at {ended:.3f}, settle {settle}, backlog {backlog:.3f}"]
    unknown = set(by_task) - set(plan.once) - set(plan.rates)
    verdict.extra += [(task_id, run.due) for task_id in sorted(unknown) for run in by_task[task_id]]
    verdict.double_commits = _double_commits(schema)
    _judge_side_effects(plan.log, faults, verdict)
    return verdict


def _next_slot(anchor: float, interval: float, due: float, finished: float) -> float:
    """The fixed-rate rule: the first slot after ``due`` not already past when the run finished.

    The ledger's times went through a conversion between clocks, so a run that finished within
    ``TOLERANCE`` of a slot may have been planned either side of it: the caller asks for both.
    """
    slot = round((due - anchor) / interval) + 1
    while anchor + slot * interval < finished:
        slot += 1
    return anchor + slot * interval


def _double_commits(schema: str) -> list[tuple[str, int, int]]:
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        rows = db.execute(
            "SELECT task_id, run_count, count(*) FROM commit_log"
            " GROUP BY task_id, run_count HAVING count(*) > 1"
        ).fetchall()
    return [(str(task_id), int(run), int(n)) for task_id, run, n in rows]  # type: ignore[call-overload]


def _judge_side_effects(log: Path, faults: list[Fault], verdict: Verdict) -> None:
    executions: dict[str, list[tuple[int, float]]] = defaultdict(list)
    if log.exists():
        for line in log.read_text().splitlines():
            key, pid, at = line.split()
            executions[key].append((int(pid), float(at)))
    verdict.executions = sum(len(e) for e in executions.values())
    faulted = {fault.pid for fault in faults if fault.pid is not None}
    restarts = [(f.start, f.end) for f in faults if f.kind == "restart"]
    for key, runs in executions.items():
        if len(runs) < 2:
            continue
        verdict.duplicates += 1
        healthy = [
            pid
            for pid, at in runs
            if pid not in faulted and not any(s - 5 <= at <= e + 5 for s, e in restarts)
        ]
        if len(healthy) > 1:
            verdict.unexplained.append((key, [pid for pid, _ in runs]))


def run_keys_counter(log: Path) -> Counter[str]:
    """How many times each run's side effect started."""
    if not log.exists():
        return Counter()
    return Counter(line.split()[0] for line in log.read_text().splitlines())


def iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds")
