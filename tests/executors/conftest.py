"""Fixtures of the executor tests: real Celery workers (RabbitMQ broker, Redis backend), a real Dask cluster.

Each test skips cleanly when a service it needs is not running on this machine (CI runs both).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pykka
import pytest

ROOT = Path(__file__).resolve().parents[2]
POLLER = "celery-executor-poller"


def reachable(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def have(*modules: str) -> bool:
    try:
        for module in modules:
            __import__(module)
    except ImportError:
        return False
    return True


needs_celery = pytest.mark.skipif(
    not (have("celery", "redis") and reachable(5672) and reachable(6379)),
    reason="needs the [celery] extra, RabbitMQ on 127.0.0.1:5672 and Redis on 127.0.0.1:6379",
)
needs_dask = pytest.mark.skipif(not have("distributed"), reason="needs the [dask] extra (distributed)")


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves an actor, or an executor's poller, running after it ends.

    The engines' clients keep threads of their own (Dask's event loop and callback pool,
    kombu's): those are the engines' to manage, so only ours are checked here.
    """
    yield
    deadline = time.monotonic() + 5.0
    pollers = [t for t in threading.enumerate() if t.name == POLLER]
    for thread in pollers:
        thread.join(max(0.0, deadline - time.monotonic()))
    actors = pykka.ActorRegistry.get_all()
    if actors:
        pykka.ActorRegistry.stop_all(timeout=5)
    assert not actors, f"actors left running: {actors}"
    assert not [t for t in pollers if t.is_alive()], "a CeleryExecutor's poller was left running"


def wait_for_file(path: Path, timeout: float = 15.0) -> str:
    """Wait until a run has written ``path`` (its worker's pid); return its text."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.02)  # polling a file another process writes: there is nothing to wait on
    raise TimeoutError(f"{path} was not written within {timeout} s")


class CeleryWorkers:
    """Starts ``celery worker`` subprocesses, each on a queue of its own; stops them all by force."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        self.queues: list[str] = []

    def start(self, concurrency: int = 1, queue: str | None = None) -> str:
        """Start a worker (prefork pool, ``concurrency`` children); return its queue."""
        queue = queue or f"actors-test-{uuid.uuid4().hex[:10]}"
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        command = [
            sys.executable, "-m", "celery", "-A", "tests.executors.celery_app", "worker",
            "-Q", queue, "-c", str(concurrency), "-P", "prefork", "-n", f"{queue}@%h",
            "--without-heartbeat", "--without-mingle", "--without-gossip", "-l", "ERROR",
        ]  # fmt: skip
        self._procs.append(subprocess.Popen(command, env=env, cwd=ROOT, start_new_session=True))
        self.queues.append(queue)
        return queue

    def stop(self) -> None:
        for proc in self._procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the worker and its pool children
            proc.wait(10)


@pytest.fixture
def celery_workers() -> Iterator[CeleryWorkers]:
    workers = CeleryWorkers()
    yield workers
    workers.stop()
    from tests.executors.celery_app import app

    with app.connection_for_write() as connection:  # the tests' queues go with them
        channel = connection.default_channel
        for queue in workers.queues:
            channel.queue_delete(queue)


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[Any]:
    """A small real cluster: two worker processes, one thread each; a lost worker fails its run at once."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
        )
    yield cluster
    cluster.close()
