"""CPU spent per execution in a scale-out trial: the node processes and the server's backends.

``python -m benchmarks.scaleout`` reads, at the due instant and once the last run finished,
the CPU time (user + system, ``/proc/<pid>/stat``) of

- each worker process of the peer (our nodes, procrastinate's workers) and their threads;
- each PostgreSQL backend serving them: the sessions whose ``application_name`` carries the
  trial's tag (our store names its sessions ``pykka-taskscheduler <node>``, and the benchmark
  names its nodes after the trial's schema; procrastinate's workers get the tag in their
  conninfo), read from ``pg_stat_activity`` (the server runs on this machine);
- the server's shared processes (WAL writer, checkpointer, background writer, autovacuum):
  all PostgreSQL processes that are not client backends. Shared with every other session
  on the server, so on a busy machine an upper bound.

Divided by the trial's executions, that is the CPU-µs per execution: on 2 cores the whole
machine has 2,000,000 CPU-µs per second, so 5,000 executions/s leave 400 µs each, for every
process together. ``/proc`` is Linux only; elsewhere the figures are left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psycopg

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads); 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15 of stat)


def backends(dsn: str, tag: str) -> list[int]:
    """The pids of the server's sessions whose ``application_name`` contains ``tag``."""
    with psycopg.connect(dsn, autocommit=True) as db:
        rows = db.execute(
            "SELECT pid FROM pg_stat_activity WHERE position(%s IN application_name) > 0", (tag,)
        ).fetchall()
    return [pid for (pid,) in rows]


def server_shared() -> list[int]:
    """The PostgreSQL processes that serve no client (WAL writer, checkpointer, ...), by their title."""
    pids: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                title = cmdline.read()
        except OSError:
            continue
        if title.startswith(b"postgres: ") and any(
            name in title for name in (b"walwriter", b"checkpointer", b"background writer", b"autovacuum")
        ):
            pids.append(int(entry))
    return pids


@dataclass
class Snapshot:
    """CPU seconds so far of the peer's processes, its backends and the server's shared processes."""

    nodes: dict[int, float]
    backends: dict[int, float]
    shared: dict[int, float]


def snapshot(dsn: str, pids: list[int], tag: str) -> Snapshot:
    """Read the CPU of ``pids``, the sessions tagged ``tag`` and the server's shared processes now."""
    return Snapshot(
        {pid: cpu_seconds(pid) for pid in pids},
        {pid: cpu_seconds(pid) for pid in backends(dsn, tag)},
        {pid: cpu_seconds(pid) for pid in server_shared()},
    )


@dataclass
class CpuPerRun:
    """CPU-µs per execution between two snapshots (a backend that came later counts from 0)."""

    nodes_us: float
    backends_us: float
    shared_us: float
    backends_seen: int

    @property
    def total_us(self) -> float:
        return self.nodes_us + self.backends_us + self.shared_us


def per_run(before: Snapshot, after: Snapshot, runs: int) -> CpuPerRun:
    """The CPU the processes spent from ``before`` to ``after``, per execution, in µs."""

    def spent(first: dict[int, float], last: dict[int, float]) -> float:
        return sum(max(0.0, seconds - first.get(pid, 0.0)) for pid, seconds in last.items())

    scale = 1e6 / max(runs, 1)
    return CpuPerRun(
        spent(before.nodes, after.nodes) * scale,
        spent(before.backends, after.backends) * scale,
        spent(before.shared, after.shared) * scale,
        len(after.backends),
    )


def median(trials: list[CpuPerRun]) -> dict[str, float] | None:
    """Each figure's median over ``trials`` (``None`` if there are none), for the JSON report."""
    if not trials:
        return None
    ordered = sorted(trials, key=lambda cpu: cpu.total_us)
    middle = ordered[len(ordered) // 2]
    return {
        "nodes_us": round(middle.nodes_us),
        "backends_us": round(middle.backends_us),
        "shared_us": round(middle.shared_us),
        "total_us": round(middle.total_us),
    }
