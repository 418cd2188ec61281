"""The ``executors`` workload (issue 27): short runs through each executor, side by side.

N runs of a tiny function (by reference, so every executor can run it) are all due at one
instant; each run returns the wall-clock time it started at, on whichever machine or process
ran it. Figures: runs/s from the due instant to the last outcome back in the scheduler, and
due -> start lateness (p50, p99), for the thread pool, the process pool, Celery (a real
``celery worker`` with 4 pool processes, RabbitMQ, Redis) and Dask (a ``LocalCluster`` of 4
worker processes). Only ours has executors: the other peers are skipped.

Celery and Dask cases need their extras and (Celery) the broker and backend on this machine;
without them they are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.adapters import Adapter
from benchmarks.cases import Case, Config, Measurement
from benchmarks.results import Skip, percentile

__all__ = ["engine", "executors_cases", "started_at"]

ROOT = Path(__file__).resolve().parents[1]
ENGINE_PROCESSES = 4
EXECUTORS = ("thread", "process", "celery", "dask")


def started_at() -> float:
    """The run: the wall-clock time it started (any process on this machine)."""
    return time.time()


def _reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def engine(name: str, in_flight: int, processes: int = ENGINE_PROCESSES) -> Iterator[dict[str, Any]]:
    """The ``executors=`` of a scheduler running ``name`` (``thread``/``process``: none), engine started."""
    if name in ("thread", "process"):
        yield {}
        return
    if name == "celery":
        try:
            import celery  # noqa: F401
        except ImportError as error:
            raise Skip(f"no [celery] extra: {error}") from None
        if not (_reachable(5672) and _reachable(6379)):
            raise Skip("needs RabbitMQ on 127.0.0.1:5672 and Redis on 127.0.0.1:6379")
        from actors.executors import CeleryExecutor

        queue = f"bench-{uuid.uuid4().hex[:8]}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
        command = [
            sys.executable, "-m", "celery", "-A", "benchmarks.celery_app", "worker", "-Q", queue,
            "-c", str(processes), "-P", "prefork", "-n", f"{queue}@%h", "--without-heartbeat",
            "--without-mingle", "--without-gossip", "-l", "ERROR",
        ]  # fmt: skip
        worker = subprocess.Popen(command, env=env, cwd=ROOT, start_new_session=True)
        from benchmarks.celery_app import app

        try:
            app.send_task(
                "actors.run_reference", args=("benchmarks.executors:started_at", [], {}), queue=queue
            ).get(timeout=30)  # the worker is up
            yield {"celery": CeleryExecutor(app, queue=queue, max_in_flight=in_flight, poll_interval=0.005)}
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)
            with app.connection_for_write() as connection:
                connection.default_channel.queue_delete(queue)
        return
    try:
        from distributed import LocalCluster
    except ImportError as error:
        raise Skip(f"no [dask] extra: {error}") from None
    from actors.executors import DaskExecutor

    with LocalCluster(
        n_workers=processes,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        silence_logs=40,
    ) as cluster:
        yield {"dask": DaskExecutor(cluster, max_in_flight=in_flight)}


def measure_executor(adapter: Adapter, executor: str, n: int, lead_s: float, timeout: float) -> Measurement:
    """N runs due at one instant on ``executor``: runs/s and due -> start lateness."""
    scheduler = adapter._s  # type: ignore[attr-defined]
    reference = "benchmarks.executors:started_at"
    due_wall = time.time() + lead_s
    base = time.monotonic()
    handles = [
        scheduler.schedule_once(reference, delay=lead_s - (time.monotonic() - base), executor=executor)
        for _ in range(n)
    ]
    starts = [handle.result(timeout=timeout) for handle in handles]
    ended = time.time()
    late_ms = sorted((start - due_wall) * 1000.0 for start in starts)
    return Measurement(
        {
            "runs_per_s": n / max(ended - due_wall, 1e-9),
            "p50_ms": percentile(late_ms, 50),
            "p99_ms": percentile(late_ms, 99),
        },
        extra={"late_ms": late_ms},
    )


def spin(turns: int) -> int:
    """The CPU-bound run: a fixed amount of pure Python work (it holds the GIL), not a fixed time."""
    count = 0
    for _ in range(turns):
        count += 1
    return count


def turns_for(seconds: float) -> int:
    """How many ``spin`` turns take about ``seconds`` of CPU here, alone."""
    started = time.perf_counter()
    spin(1_000_000)
    return max(1, int(1_000_000 * seconds / (time.perf_counter() - started)))


def measure_cpu(adapter: Adapter, executor: str, n: int, burn_s: float, timeout: float) -> Measurement:
    """N CPU-bound runs (``burn_s`` of pure Python work each, timed alone) all due now: runs/s."""
    scheduler = adapter._s  # type: ignore[attr-defined]
    turns = turns_for(burn_s)
    started = time.perf_counter()
    handles = [
        scheduler.schedule_once("benchmarks.executors:spin", 0.0, args=(turns,), executor=executor)
        for _ in range(n)
    ]
    for handle in handles:
        handle.result(timeout=timeout)
    return Measurement({"runs_per_s": n / (time.perf_counter() - started)})


def _cpu_cases(cfg: Config) -> list[Case]:
    """CPU-bound runs on the thread pool, then on Dask with 1, 2 and 4 worker processes."""
    n, burn_s = (4, 0.02) if cfg.quick else (40, 0.1)
    cases = []
    for executor, processes in (("thread", 4), ("dask", 1), ("dask", 2), ("dask", 4)):
        kwargs: dict[str, Any] = {"workers": 4, "executor": executor, "engine_processes": processes}
        label = "on 4 threads" if executor == "thread" else f"on dask, {processes} worker processes"
        cases.append(
            Case(
                "executors",
                f"cpu runs ({burn_s * 1000:.0f} ms) {label}",
                {"n": n, "burn_s": burn_s, **kwargs},
                pending=n,
                repeats=1,
                units={"runs_per_s": "runs/s"},
                measure=functools.partial(measure_cpu, executor=executor, n=n, burn_s=burn_s, timeout=120.0),
                adapter_kwargs=kwargs,
            )
        )
    return cases


def executors_cases(cfg: Config) -> list[Case]:
    """One case per executor (only ours takes ``executor=``), then the CPU-bound cases."""
    n = 200 if cfg.quick else 10_000
    units = {"runs_per_s": "runs/s", "p50_ms": "ms", "p99_ms": "ms"}
    cases = []
    for executor in EXECUTORS:
        kwargs: dict[str, Any] = {"workers": 8, "executor": executor}
        if executor == "process":
            kwargs["processes"] = ENGINE_PROCESSES
        cases.append(
            Case(
                "executors",
                f"short runs on {executor}",
                {"n": n, "engine_processes": ENGINE_PROCESSES, **kwargs},
                pending=n,
                repeats=1 if cfg.quick else min(cfg.repeats, 2),
                units=units,
                measure=functools.partial(
                    measure_executor, executor=executor, n=n, lead_s=0.5 if cfg.quick else 2.0, timeout=120.0
                ),
                adapter_kwargs=kwargs,
            )
        )
    return cases + _cpu_cases(cfg)
