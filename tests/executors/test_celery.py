"""CeleryExecutor against real ``celery worker`` processes, RabbitMQ and Redis: outcomes, kills, revokes."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from actors import ExecutorUnavailableError, ExecutorWorkerLostError, Scheduler, TaskTimeoutError
from actors.core.retry import Retry
from messages import EventKind, TaskStatus
from tests.executors.conftest import CeleryWorkers, needs_celery, wait_for_file

pytestmark = [needs_celery, pytest.mark.timeout(20)]

JOBS = "tests.executors.jobs"


@pytest.fixture
def app() -> Any:
    from tests.executors.celery_app import app

    return app


@pytest.fixture
def executor(app: Any, celery_workers: CeleryWorkers) -> Any:
    from actors.executors import CeleryExecutor

    return CeleryExecutor(app, queue=celery_workers.start(concurrency=2), revoke_grace=3.0)


@pytest.fixture
def scheduler(executor: Any) -> Iterator[Scheduler]:
    scheduler = Scheduler(workers=1, executors={"celery": executor})
    yield scheduler
    scheduler.shutdown()


def test_a_run_on_celery_returns_its_value_and_has_the_run_key_as_celery_id(
    scheduler: Scheduler, app: Any, executor: Any
) -> None:
    handle = scheduler.schedule_once(f"{JOBS}:add", 0.0, args=(2, 3), executor="celery", task_id="sum")
    assert handle.result(timeout=15) == 5
    assert app.AsyncResult(f"{executor.namespace}:sum:1").get(timeout=5) == 5


def test_a_failed_run_on_celery_fails_with_its_error(scheduler: Scheduler) -> None:
    handle = scheduler.schedule_once(f"{JOBS}:fail", 0.0, args=("boom",), executor="celery")
    with pytest.raises(ValueError, match="boom"):
        handle.result(timeout=15)
    assert handle.info().status is TaskStatus.FAILED


def test_a_worker_killed_mid_run_fails_the_run_and_its_retry_runs_it_again(
    scheduler: Scheduler, tmp_path: Path
) -> None:
    failed: list[object] = []
    scheduler.subscribe(lambda event: failed.append(event.error), kinds={EventKind.FAILED})
    pid_file, marker = tmp_path / "pid", tmp_path / "marker"
    handle = scheduler.schedule_once(
        f"{JOBS}:once_hang",
        0.0,
        args=(str(marker), str(pid_file)),
        executor="celery",
        retry=Retry(attempts=2, delay=0.0),
    )
    os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)  # the pool process running it
    assert handle.result(timeout=15) == "second"
    scheduler.settle()
    assert len(failed) == 1, failed
    assert isinstance(failed[0], ExecutorWorkerLostError)
    assert "Celery worker" in str(failed[0])
    assert handle.info().status is TaskStatus.COMPLETED


def test_cancel_with_interrupt_revokes_the_celery_task(
    scheduler: Scheduler, app: Any, executor: Any, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    handle = scheduler.schedule_once(
        f"{JOBS}:hang", 0.0, args=(str(pid_file),), executor="celery", task_id="long"
    )
    wait_for_file(pid_file)
    assert handle.cancel(interrupt=True)
    with pytest.raises(CancelledError):
        handle.result(timeout=15)
    assert handle.info().status is TaskStatus.CANCELLED
    assert app.AsyncResult(f"{executor.namespace}:long:1").state == "REVOKED"


def test_a_timeout_stops_the_celery_task(scheduler: Scheduler, tmp_path: Path) -> None:
    handle = scheduler.schedule_once(
        f"{JOBS}:hang", 0.0, args=(str(tmp_path / "pid"),), executor="celery", timeout=1.0
    )
    with pytest.raises(TaskTimeoutError):
        handle.result(timeout=15)
    assert handle.info().status is TaskStatus.FAILED


def test_a_broker_that_is_down_fails_the_run_naming_celery_and_the_scheduler_goes_on() -> None:
    from celery import Celery

    from actors.executors import CeleryExecutor, celery_task

    down = Celery("down", broker="amqp://guest:guest@127.0.0.1:1//", backend="redis://127.0.0.1:6379/5")
    down.conf.broker_connection_timeout = 1.0
    celery_task(down)
    scheduler = Scheduler(workers=1, executors={"celery": CeleryExecutor(down)})
    try:
        handle = scheduler.schedule_once(
            f"{JOBS}:add", 0.0, args=(1, 2), executor="celery", retry=Retry(attempts=2, delay=0.0)
        )
        with pytest.raises(ExecutorUnavailableError, match="executor 'celery'"):
            handle.result(timeout=15)
        assert scheduler.schedule_once(f"{JOBS}:add", 0.0, args=(1, 2)).result(timeout=5) == 3
    finally:
        scheduler.shutdown()


def test_runs_of_many_tasks_all_come_back(scheduler: Scheduler) -> None:
    handles = [scheduler.schedule_once(f"{JOBS}:add", 0.0, args=(i, 1), executor="celery") for i in range(50)]
    assert [handle.result(timeout=15) for handle in handles] == [i + 1 for i in range(50)]


def test_celery_task_registers_the_task_that_calls_a_reference(app: Any) -> None:
    from actors.executors import TASK_NAME

    task = app.tasks[TASK_NAME]
    assert task.acks_late
    assert not task.reject_on_worker_lost
    assert task(f"{JOBS}:add", [4, 5], {}) == 9  # called in place, as a worker would
