"""DaskExecutor against a real ``LocalCluster`` of worker processes: outcomes, a killed worker, cancels."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from actors import ExecutorUnavailableError, ExecutorWorkerLostError, FakeClock, Scheduler
from actors.core.retry import Retry
from messages import EventKind, TaskStatus
from tests.executors.conftest import needs_dask, wait_for_file

pytestmark = [needs_dask, pytest.mark.timeout(20)]

JOBS = "tests.executors.jobs"


@pytest.fixture
def executor(dask_cluster: Any) -> Any:
    from actors.executors import DaskExecutor

    return DaskExecutor(dask_cluster, max_in_flight=2)


@pytest.fixture
def scheduler(executor: Any) -> Iterator[Scheduler]:
    scheduler = Scheduler(workers=1, executors={"dask": executor})
    yield scheduler
    scheduler.shutdown()


def test_a_run_on_dask_returns_its_value_under_its_run_key(scheduler: Scheduler, executor: Any) -> None:
    handle = scheduler.schedule_once(f"{JOBS}:add", 0.0, args=(2, 3), executor="dask", task_id="sum")
    assert handle.result(timeout=15) == 5
    assert executor.namespace  # the key it had: f"{namespace}:sum:1"


def test_a_failed_run_on_dask_fails_with_its_error(scheduler: Scheduler) -> None:
    handle = scheduler.schedule_once(f"{JOBS}:fail", 0.0, args=("boom",), executor="dask")
    with pytest.raises(ValueError, match="boom"):
        handle.result(timeout=15)
    assert handle.info().status is TaskStatus.FAILED


def test_arguments_dask_cannot_pickle_are_refused_at_the_call(scheduler: Scheduler) -> None:
    with pytest.raises(TypeError, match=r"args\[0\]"):
        scheduler.schedule_once(f"{JOBS}:add", 0.0, args=(lambda: 1, 2), executor="dask")
    assert scheduler.tasks() == []


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
        executor="dask",
        retry=Retry(attempts=2, delay=0.0),
    )
    os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)  # the worker process running it
    assert handle.result(timeout=18) == "second"
    scheduler.settle()
    assert len(failed) == 1, failed
    assert isinstance(failed[0], ExecutorWorkerLostError)
    assert "Dask worker" in str(failed[0])


def test_cancel_with_interrupt_cancels_the_dask_future(scheduler: Scheduler, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    handle = scheduler.schedule_once(f"{JOBS}:hang", 0.0, args=(str(pid_file), 3.0), executor="dask")
    wait_for_file(pid_file)
    assert handle.cancel(interrupt=True)
    with pytest.raises(CancelledError):
        handle.result(timeout=10)
    assert handle.info().status is TaskStatus.CANCELLED


def test_settle_under_a_fake_clock_waits_for_the_dask_run(executor: Any) -> None:
    scheduler = Scheduler(workers=1, clock=FakeClock(start=0.0), executors={"dask": executor})
    try:
        handle = scheduler.schedule_once(f"{JOBS}:add", 10.0, args=(40, 2), executor="dask")
        scheduler.advance(10.0)
        assert handle.info().status is TaskStatus.COMPLETED
        assert handle.result(timeout=0) == 42
    finally:
        scheduler.shutdown()


def test_a_cluster_that_is_gone_fails_the_run_naming_dask(dask_cluster: Any) -> None:
    from distributed import Client

    from actors.executors import DaskExecutor

    client = Client(dask_cluster, set_as_default=False)
    client.close()  # the executor's client is closed: as if the cluster were unreachable
    scheduler = Scheduler(workers=1, executors={"dask": DaskExecutor(client)})
    try:
        handle = scheduler.schedule_once(f"{JOBS}:add", 0.0, args=(1, 2), executor="dask")
        with pytest.raises(ExecutorUnavailableError, match=r"executor 'dask'.*closed"):
            handle.result(timeout=10)
        assert scheduler.schedule_once(f"{JOBS}:add", 0.0, args=(1, 2)).result(timeout=5) == 3
    finally:
        scheduler.shutdown()


def test_a_stored_run_the_cluster_still_holds_is_the_same_dask_task_for_the_next_node(
    dask_cluster: Any, tmp_path: Path
) -> None:
    """Two nodes' executors under one namespace: the second submit of a key Dask holds runs nothing more."""
    import threading

    from actors.executors import DaskExecutor, Job

    effects = tmp_path / "effects"
    job = Job(
        key="job@3:1",
        task_id="job",
        run=1,
        attempt=1,
        fn=print,
        reference=f"{JOBS}:count_and_sleep",
        args=(str(effects), 1.0),
        kwargs={},
        timeout=None,
        seq=3,
    )
    outcomes: list[tuple[object, BaseException | None]] = []
    ended = threading.Semaphore(0)

    def done(value: object, error: BaseException | None) -> None:
        outcomes.append((value, error))
        ended.release()

    namespace = f"held-{os.getpid()}"
    first, second = (DaskExecutor(dask_cluster, namespace=namespace) for _ in range(2))
    try:
        first.submit(job, done)
        wait_for_file(effects)
        second.submit(job, done)  # the old node's client still holds the key: Dask joins the two
        assert ended.acquire(timeout=15)
        assert ended.acquire(timeout=15)
        assert outcomes == [(1, None), (1, None)]
        assert len(effects.read_text().splitlines()) == 1
    finally:
        first.close()
        second.close()
