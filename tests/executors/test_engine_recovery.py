"""A run out on an engine outlives the node that sent it: the next owner finds it there, and it runs once.

Real parts only: the PostgreSQL server (a schema of the test's own), RabbitMQ and Redis and a
real ``celery worker``, or a ``dask scheduler`` and ``dask worker`` in processes of their own
(so the cluster outlives the node), and scheduler nodes in processes of their own
(``engine_node.py``) killed with ``SIGKILL``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

from actors.executors import CeleryExecutor, Job
from actors.store import PostgresStore, TaskDefinition
from tests.executors.conftest import ROOT, CeleryWorkers, needs_celery, needs_dask, wait_for_file
from tests.executors.engine_node import LEASE
from tests.shared.fleet import install_commit_log
from tests.store.pg import DSN, admin, drop_schemas, new_schema, require_postgres

pytestmark = pytest.mark.timeout(90)

ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    name = new_schema()
    yield name
    drop_schemas([name])


class Node:
    """A scheduler node in a process of its own (``tests.executors.engine_node``)."""

    def __init__(self, schema: str, name: str, engine: str, target: str, namespace: str) -> None:
        command = [
            sys.executable,
            "-m",
            "tests.executors.engine_node",
            DSN,
            schema,
            name,
            engine,
            target,
            namespace,
        ]
        self.process = subprocess.Popen(
            command, env=ENV, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 30.0)
        line = self.process.stdout.readline() if ready else ""
        assert line.strip() == "ready", f"node {name} did not start: {line!r}"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()

    def stop(self) -> str:
        """Close its stdin (it shuts down); return what it printed last (``adopted <n>``)."""
        if self.process.poll() is not None:
            return ""
        out, _ = self.process.communicate(timeout=30)
        return out.strip()


def row(schema: str, task_id: str) -> dict[str, object]:
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        cursor = db.execute(
            "SELECT status, owner, fence, started_fence, lease_until, extract(epoch FROM now())::float8 "
            "FROM task WHERE task_id = %s",
            (task_id,),
        )
        status, owner, fence, started_fence, lease_until, now = cursor.fetchone() or (None,) * 6
        return {
            "status": status, "owner": owner, "fence": fence, "started_fence": started_fence,
            "lease_until": lease_until, "now": now,
        }  # fmt: skip


def wait_for_status(schema: str, task_id: str, status: str, timeout: float = 40.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = row(schema, task_id)
        if seen["status"] == status:
            return seen
        time.sleep(0.05)  # another process writes the row: there is nothing here to wait on
    raise TimeoutError(f"task {task_id!r} not {status} within {timeout} s: {row(schema, task_id)}")


def ledger(schema: str, task_id: str) -> list[tuple[object, ...]]:
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        return db.execute(
            "SELECT run, outcome, node, value_json FROM run WHERE task_id = %s ORDER BY id", (task_id,)
        ).fetchall()


def commits(schema: str, task_id: str) -> list[tuple[object, ...]]:
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        return db.execute(
            "SELECT run_count, owner, fence FROM commit_log WHERE task_id = %s", (task_id,)
        ).fetchall()


def slow_run(schema: str, effects: Path, engine: str) -> str:
    """Store a one-time task due now, run on ``engine``: append a line to ``effects``, wait for a release."""
    store = PostgresStore(DSN, schema=schema, node="test")
    store.open()
    try:
        store.add(
            TaskDefinition(
                task_id="slow",
                fn_ref="tests.executors.jobs:count_and_wait",
                args_json=json.dumps([str(effects), str(release(effects))]),
                kwargs_json="{}",
                trigger_json='{"once":true}',
                options_json=json.dumps({"executor": engine, "keep_result": True}),
                next_due=store.db_now(),
            )
        )
        install_commit_log(schema)  # once the store has made its tables
    finally:
        store.close()
    return "slow"


def release(effects: Path) -> Path:
    """The file whose making lets the run end (it waits for it on the engine's worker)."""
    return effects.with_name("release")


def wait_for_owner(schema: str, task_id: str, owner: str, timeout: float = 30.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = row(schema, task_id)
        if seen["owner"] == owner:
            return seen
        time.sleep(0.05)  # another process writes the row: there is nothing here to wait on
    raise TimeoutError(f"task {task_id!r} not owned by {owner!r} within {timeout} s: {row(schema, task_id)}")


def kill_the_node_mid_run(
    schema: str, engine: str, target: str, namespace: str, effects: Path
) -> tuple[int, str]:
    """Node a sends the run out, b starts, a is killed mid-run, b commits.

    Returns the body's executions and what b printed last.
    """
    task_id = slow_run(schema, effects, engine)
    first = Node(schema, "a", engine, target, namespace)
    second: Node | None = None
    try:
        wait_for_file(effects, timeout=30)  # the body started on the engine's worker
        out_since = row(schema, task_id)["now"]
        assert isinstance(out_since, float)
        second = Node(schema, "b", engine, target, namespace)  # up while the run is out: must not take it
        while True:  # more than two leases pass with the run out: a must renew its lease meanwhile
            held = row(schema, task_id)
            assert (held["owner"], held["started_fence"]) == ("a", held["fence"]), held
            assert isinstance(held["lease_until"], float)
            assert isinstance(held["now"], float)
            assert held["lease_until"] >= held["now"], "the lease was not renewed while the run was out"
            if held["now"] > out_since + 2 * LEASE:
                break
            time.sleep(0.05)  # waiting for time itself to pass, on the database's clock
        first.kill()
        taken = wait_for_owner(schema, task_id, "b")  # the run, still out, taken over by b
        assert taken["fence"] == held["fence"] + 1
        release(effects).touch()  # the engine's run may end now
        ended = wait_for_status(schema, task_id, "completed")
        assert ended["owner"] is None
        runs = ledger(schema, task_id)
        assert [(run, outcome, node) for run, outcome, node, _ in runs] == [(1, "completed", "b")]
        assert commits(schema, task_id) == [(1, "b", held["fence"] + 1)]  # once, under b's own fence
        executions = len(effects.read_text().splitlines())
        if executions == 1:
            assert runs[0][3] == "1"  # the value of the one execution, read from the engine
        last, second = second.stop(), None
        return executions, last
    finally:
        if second is not None:
            second.stop()
        if first.process.poll() is None:
            first.kill()


@needs_celery
@pytest.mark.parametrize(
    ("namespace", "executions"),
    [
        pytest.param("fixed", 1, id="a-fixed-namespace-finds-the-run-on-celery"),
        pytest.param("-", 2, id="control-a-random-namespace-runs-it-again"),
    ],
)
def test_a_node_killed_mid_run_leaves_the_run_on_celery_to_the_next_owner(
    schema: str, celery_workers: CeleryWorkers, tmp_path: Path, namespace: str, executions: int
) -> None:
    queue = celery_workers.start()
    namespace = f"recovery-{uuid.uuid4().hex[:8]}" if namespace == "fixed" else namespace
    ran, last = kill_the_node_mid_run(schema, "celery", queue, namespace, tmp_path / "effects")
    assert ran == executions  # the body's executions
    assert last == f"adopted {2 - executions}"


@pytest.fixture
def dask_processes(tmp_path: Path) -> Iterator[str]:
    """A ``dask scheduler`` and one ``dask worker`` (one thread), each a process of its own; their address."""
    from distributed import Client

    info = tmp_path / "scheduler.json"
    cli = [sys.executable, "-m"]
    scheduler = [*cli, "distributed.cli.dask_scheduler", "--port", "0", "--scheduler-file", str(info)]
    procs = [
        subprocess.Popen(
            [*scheduler, "--no-dashboard"],
            env=ENV,
            cwd=ROOT,
            start_new_session=True,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        address = json.loads(wait_for_file(info, timeout=30))["address"]
        worker = [*cli, "distributed.cli.dask_worker", address, "--nthreads", "1", "--nworkers", "1"]
        procs.append(
            subprocess.Popen(
                [*worker, "--no-dashboard"],
                env=ENV,
                cwd=ROOT,
                start_new_session=True,
                stderr=subprocess.DEVNULL,
            )
        )
        with Client(address, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=30)
        yield address
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@needs_dask
@pytest.mark.parametrize(
    ("namespace", "executions"),
    [
        pytest.param("fixed", 1, id="a-fixed-namespace-joins-the-run-the-cluster-holds"),
        pytest.param("-", 2, id="control-a-random-namespace-runs-it-again"),
    ],
)
def test_a_node_killed_mid_run_leaves_the_run_on_dask_to_the_next_owner(
    schema: str, dask_processes: str, tmp_path: Path, namespace: str, executions: int
) -> None:
    namespace = f"recovery-{uuid.uuid4().hex[:8]}" if namespace == "fixed" else namespace
    ran, _ = kill_the_node_mid_run(schema, "dask", dask_processes, namespace, tmp_path / "effects")
    assert ran == executions


@needs_celery
def test_a_stored_run_sent_before_is_waited_for_not_sent_again(
    celery_workers: CeleryWorkers, tmp_path: Path
) -> None:
    from tests.executors.celery_app import app

    queue = celery_workers.start()
    namespace = f"again-{uuid.uuid4().hex[:8]}"
    effects = tmp_path / "effects"
    job = Job(
        key="job@7:1",
        task_id="job",
        run=1,
        attempt=1,
        fn=print,
        reference="tests.executors.jobs:count_and_sleep",
        args=(str(effects), 1.0),
        kwargs={},
        timeout=None,
        seq=7,
    )
    outcomes: list[tuple[object, BaseException | None]] = []
    both = threading.Semaphore(0)

    def done(value: object, error: BaseException | None) -> None:
        outcomes.append((value, error))
        both.release()

    first, again = (CeleryExecutor(app, queue=queue, namespace=namespace) for _ in range(2))
    try:
        first.submit(job, done)
        wait_for_file(effects, timeout=20)
        again.submit(job, done)  # the same stored run, by another executor: a node after one that died
        assert both.acquire(timeout=20)
        assert both.acquire(timeout=20)
        assert outcomes == [(1, None), (1, None)]
        assert (first.adopted, again.adopted) == (0, 1)
        assert len(effects.read_text().splitlines()) == 1
    finally:
        for executor in (first, again):
            executor.close()
