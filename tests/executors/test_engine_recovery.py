"""A run out on Celery outlives the node that sent it: the next owner finds it there, and it runs once.

Real parts only: the PostgreSQL server (a schema of the test's own), RabbitMQ and Redis, a real
``celery worker``, and scheduler nodes in processes of their own (``engine_node.py``) killed
with ``SIGKILL``.
"""

from __future__ import annotations

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
from tests.executors.conftest import ROOT, CeleryWorkers, needs_celery, wait_for_file
from tests.executors.engine_node import LEASE
from tests.shared.fleet import install_commit_log
from tests.store.pg import DSN, admin, drop_schemas, new_schema, require_postgres

pytestmark = [needs_celery, pytest.mark.timeout(90)]

RUN_SECONDS = 6.0  # the run on Celery: several leases long, so the lease must be renewed meanwhile


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    name = new_schema()
    yield name
    drop_schemas([name])


class Node:
    """A scheduler node in a process of its own (``tests.executors.engine_node``)."""

    def __init__(self, schema: str, name: str, queue: str, namespace: str) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        command = [sys.executable, "-m", "tests.executors.engine_node", DSN, schema, name, queue, namespace]
        self.process = subprocess.Popen(
            command, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
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


def slow_run(schema: str, effects: Path) -> str:
    """Store a one-time task due now, run on Celery: append a line to ``effects``, sleep, return."""
    store = PostgresStore(DSN, schema=schema, node="test")
    store.open()
    try:
        store.add(
            TaskDefinition(
                task_id="slow",
                fn_ref="tests.executors.jobs:count_and_sleep",
                args_json=json.dumps([str(effects), RUN_SECONDS]),
                kwargs_json="{}",
                trigger_json='{"once":true}',
                options_json='{"executor":"celery","keep_result":true}',
                next_due=store.db_now(),
            )
        )
        install_commit_log(schema)  # once the store has made its tables
    finally:
        store.close()
    return "slow"


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
    effects = tmp_path / "effects"
    task_id = slow_run(schema, effects)
    first = Node(schema, "a", queue, namespace)
    second: Node | None = None
    try:
        wait_for_file(effects, timeout=30)  # the body started on the Celery worker
        out_since = row(schema, task_id)["now"]
        assert isinstance(out_since, float)
        second = Node(schema, "b", queue, namespace)  # up while the run is out: it must not take it
        held = row(schema, task_id)
        assert (held["owner"], held["started_fence"]) == ("a", held["fence"]), held
        assert isinstance(held["lease_until"], float)
        assert held["lease_until"] > out_since + LEASE / 2, "the lease was not renewed while the run was out"
        first.kill()
        ended = wait_for_status(schema, task_id, "completed")
        assert ended["owner"] is None
        assert len(effects.read_text().splitlines()) == executions  # the body's executions
        runs = ledger(schema, task_id)
        assert [(run, outcome, node) for run, outcome, node, _ in runs] == [(1, "completed", "b")]
        assert commits(schema, task_id) == [(1, "b", held["fence"] + 1)]  # once, under b's own fence
        if executions == 1:
            assert runs[0][3] == "1"  # the value of the one execution, read from Celery
        assert second.stop() == f"adopted {2 - executions}"
        second = None
    finally:
        if second is not None:
            second.stop()
        if first.process.poll() is None:
            first.kill()


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
