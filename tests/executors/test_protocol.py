"""The executor protocol with an executor of our own (threads of this process): checks, outcomes, faults."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from actors import (
    Executor,
    ExecutorUnavailableError,
    FakeClock,
    RunCancelled,
    Scheduler,
    TaskTimeoutError,
)
from actors.core.retry import Retry
from actors.executors import Done, Job, run_key
from actors.references import check_json_arguments
from messages import TaskStatus

pytestmark = pytest.mark.timeout(20)


class PoolRun:
    """A run on the pool: interrupting it releases its ``gate``."""

    def __init__(self, future: Future[object], gate: threading.Event) -> None:
        self.future = future
        self.gate = gate

    def interrupt(self) -> None:
        self.gate.set()


class PoolExecutor:
    """A small real executor: runs each job on a thread pool; ``down`` makes it refuse jobs."""

    remote = True

    def __init__(self, max_in_flight: int = 2) -> None:
        self.max_in_flight = max_in_flight
        self.pool = ThreadPoolExecutor(max_in_flight)
        self.down = False
        self.jobs: list[Job] = []
        self.gates: dict[str, threading.Event] = {}
        self.closed = False
        self.submitted = threading.Condition()  # notified at each submit (tests wait on it)

    def check_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        check_json_arguments(args, kwargs)

    def submit(self, job: Job, done: Done) -> PoolRun:
        with self.submitted:
            self.jobs.append(job)
            self.submitted.notify_all()
        if self.down:
            raise ConnectionError("connection refused (the pool is down)")
        gate = self.gates.setdefault(job.key, threading.Event())

        def call() -> object:
            if job.reference == f"{__name__}:wait_for_gate":
                if not gate.wait(15):
                    raise TimeoutError("never released")
                raise RunCancelled("interrupted")
            return job.fn(*job.args, **job.kwargs)

        future = self.pool.submit(call)
        future.add_done_callback(
            lambda f: done(None, f.exception()) if f.exception() else done(f.result(), None)
        )
        return PoolRun(future, gate)

    def close(self) -> None:
        self.closed = True
        for gate in self.gates.values():
            gate.set()
        self.pool.shutdown()


def wait_for_gate() -> None:
    """Stands for a run that goes on until it is interrupted (the pool above treats it so)."""


def add(a: int, b: int) -> int:
    return a + b


@pytest.fixture
def pool() -> PoolExecutor:
    return PoolExecutor()


@pytest.fixture
def scheduler(pool: PoolExecutor) -> Iterator[Scheduler]:
    scheduler = Scheduler(workers=1, executors={"pool": pool})
    yield scheduler
    scheduler.shutdown()


def test_a_pool_executor_is_an_executor(pool: PoolExecutor) -> None:
    assert isinstance(pool, Executor)


def test_runs_go_to_the_named_executor_with_their_run_key(scheduler: Scheduler, pool: PoolExecutor) -> None:
    handle = scheduler.schedule_once(add, 0.0, args=(2, 3), executor="pool", task_id="sum")
    assert handle.result(timeout=10) == 5
    (job,) = pool.jobs
    assert job.key == run_key("sum", 1) == "sum:1"
    assert job.reference == f"{__name__}:add"
    assert (job.args, dict(job.kwargs), job.attempt) == ((2, 3), {}, 1)


def test_an_unregistered_executor_is_refused_at_the_call(scheduler: Scheduler) -> None:
    with pytest.raises(ValueError, match=r"executor must be .*'pool'.*got 'celery'"):
        scheduler.schedule_once(add, 0.0, args=(1, 2), executor="celery")
    assert scheduler.tasks() == []


def test_a_remote_executor_refuses_a_function_without_reference(scheduler: Scheduler) -> None:
    with pytest.raises(ValueError, match="lambda"):
        scheduler.schedule_once(lambda: 1, 0.0, executor="pool")
    assert scheduler.tasks() == []


def test_a_remote_executor_refuses_arguments_it_cannot_serialise(scheduler: Scheduler) -> None:
    with pytest.raises(TypeError, match=r"args\[0\]"):
        scheduler.schedule_once(add, 0.0, args=(object(), 1), executor="pool")
    assert scheduler.tasks() == []


def test_bad_executors_are_refused_by_the_constructor(pool: PoolExecutor) -> None:
    with pytest.raises(ValueError, match="built in"):
        Scheduler(executors={"thread": pool})
    with pytest.raises(TypeError, match="must be an Executor"):
        Scheduler(executors={"x": object()})
    pool.max_in_flight = 0
    with pytest.raises(ValueError, match="max_in_flight"):
        Scheduler(executors={"x": pool})


def test_an_engine_down_fails_the_run_naming_it_and_retry_applies(
    scheduler: Scheduler, pool: PoolExecutor
) -> None:
    pool.down = True
    handle = scheduler.schedule_once(
        add, 0.0, args=(1, 1), executor="pool", retry=Retry(attempts=2, delay=0.0), task_id="flaky"
    )
    with pytest.raises(
        ExecutorUnavailableError, match=r"executor 'pool' could not take run 1 .*connection refused"
    ):
        handle.result(timeout=10)
    assert handle.info().status is TaskStatus.FAILED
    assert [(job.key, job.attempt) for job in pool.jobs] == [("flaky:1", 1), ("flaky:1:2", 2)]  # its Retry
    # the scheduler keeps going
    assert scheduler.schedule_once(add, 0.0, args=(1, 1)).result(timeout=10) == 2
    pool.down = False
    assert scheduler.schedule_once(add, 0.0, args=(2, 2), executor="pool").result(timeout=10) == 4


def test_cancel_with_interrupt_interrupts_the_run_on_the_engine(
    scheduler: Scheduler, pool: PoolExecutor
) -> None:
    started = threading.Event()
    scheduler.subscribe(lambda event: started.set(), kinds={"started"})
    handle = scheduler.schedule_once(wait_for_gate, 0.0, executor="pool", task_id="long")
    assert started.wait(10)
    assert handle.cancel(interrupt=True)
    with pytest.raises(CancelledError):
        handle.result(timeout=10)
    assert handle.info().status is TaskStatus.CANCELLED
    assert pool.gates["long:1"].is_set()


def test_a_timeout_interrupts_the_run_on_the_engine(scheduler: Scheduler, pool: PoolExecutor) -> None:
    handle = scheduler.schedule_once(wait_for_gate, 0.0, executor="pool", timeout=0.2, task_id="slow")
    with pytest.raises(TaskTimeoutError):
        handle.result(timeout=10)
    assert pool.gates["slow:1"].is_set()
    assert pool.jobs[0].timeout == 0.2


def test_runs_in_flight_are_bounded_by_max_in_flight(scheduler: Scheduler, pool: PoolExecutor) -> None:
    handles = [
        scheduler.schedule_once(wait_for_gate, 0.0, executor="pool", task_id=f"w{i}") for i in range(4)
    ]
    with pool.submitted:  # the slots' threads submit on their own time: wait for two
        assert pool.submitted.wait_for(lambda: len(pool.jobs) >= 2, timeout=10)
    scheduler.schedule_once(add, 0.0, args=(0, 0)).result(timeout=10)  # the others had their time
    assert sorted(job.key for job in pool.jobs) == ["w0:1", "w1:1"]  # two slots: two out, two waiting
    for handle in handles:
        handle.cancel(interrupt=True)
    scheduler.settle()


def test_settle_under_a_fake_clock_waits_for_runs_out_on_the_engine(pool: PoolExecutor) -> None:
    clock = FakeClock(start=1000.0)
    scheduler = Scheduler(workers=1, clock=clock, executors={"pool": pool})
    try:
        handle = scheduler.schedule_once(add, 5.0, args=(20, 22), executor="pool")
        scheduler.advance(5.0)
        assert handle.info().status is TaskStatus.COMPLETED  # advance settled: the engine's run ended
        assert handle.result(timeout=0) == 42
    finally:
        scheduler.shutdown()


def test_the_scheduler_closes_its_executors(pool: PoolExecutor) -> None:
    Scheduler(executors={"pool": pool}).shutdown()
    assert pool.closed


def test_a_durable_task_keeps_its_executor_across_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "tasks.db"
    clock = FakeClock(start=1000.0)
    first = Scheduler(workers=1, clock=clock, store=store, executors={"pool": PoolExecutor()})
    first.schedule_once(f"{__name__}:add", 5.0, args=(1, 2), executor="pool", task_id="kept")
    first.shutdown()
    pool = PoolExecutor()
    again = Scheduler(workers=1, clock=clock, store=store, executors={"pool": pool})
    try:
        again.advance(5.0)
        assert again.info("kept").status is TaskStatus.COMPLETED
        assert [job.key for job in pool.jobs] == ["kept@1:1"]  # the key a run sent before a crash had
        assert [job.reference for job in pool.jobs] == [f"{__name__}:add"]  # loaded, yet by reference
    finally:
        again.shutdown()


def test_a_stored_task_of_an_executor_not_registered_fails_its_run_naming_it(tmp_path: Path) -> None:
    store = tmp_path / "tasks.db"
    clock = FakeClock(start=1000.0)
    first = Scheduler(workers=1, clock=clock, store=store, executors={"pool": PoolExecutor()})
    first.schedule_once(f"{__name__}:add", 5.0, args=(1, 2), executor="pool", task_id="orphan")
    first.shutdown()
    again = Scheduler(workers=1, clock=clock, store=store)
    try:
        again.advance(5.0)
        info = again.info("orphan")
        assert info.status is TaskStatus.FAILED
        assert "no such executor" in str(info.last_error)
        assert "'pool'" in str(info.last_error)
    finally:
        again.shutdown()


def test_under_a_fixed_namespace_memory_runs_never_share_an_engine_id_across_processes() -> None:
    """A memory task's ids repeat in every process; a stored run's key is the one the next owner computes."""
    from actors.executors.engine_call import job_engine_key

    def job(seq: int | None) -> Job:
        return Job(run_key("report", 1, seq=seq), "report", 1, 1, print, "builtins:print", (), {}, None, seq)

    memory, stored = job(None), job(7)
    first, second = "a1b2c3d4", "e5f6a7b8"  # two processes' executors, one namespace
    assert job_engine_key("prod", memory, first) != job_engine_key("prod", memory, second)
    assert job_engine_key("prod", stored, first) == "prod:report@7:1"
    assert job_engine_key("prod", stored, second) == "prod:report@7:1"
    assert job_engine_key("rnd", memory, None) == "rnd:report:1"  # a random namespace is unique already
