"""Tasks run in worker processes (``Scheduler(processes=N)``, ``executor="process"``).

Real child processes: results and exceptions come back as for thread tasks, a task that kills
its process fails with ``ProcessDiedError`` and the next one gets a fresh process, refusals
happen at the call, and shutdown ends every process.
"""

from __future__ import annotations

import os
import pathlib

import pytest

from actors import ProcessDiedError, Scheduler
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder

WAIT = 20.0  # a child process's first run includes starting an interpreter


def child_processes() -> set[int]:
    """Pids of this process's children still alive (zombies count: they were not reaped).

    Linux lists children per thread that started them, so every thread's list is read.
    """
    pids: set[int] = set()
    for children in pathlib.Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            pids.update(int(pid) for pid in children.read_text().split())
        except OSError:  # the thread ended meanwhile
            continue
    return pids


@pytest.fixture
def scheduler(make_scheduler) -> Scheduler:
    return make_scheduler(workers=2, processes=2)


def test_a_process_task_returns_its_value_from_another_process(scheduler: Scheduler) -> None:
    pid = scheduler.schedule_once(os.getpid, 0.0, executor="process").result(timeout=WAIT)
    assert isinstance(pid, int)
    assert pid != os.getpid()
    assert (
        scheduler.schedule_once("math:factorial", 0.0, args=(10,), executor="process").result(timeout=WAIT)
        == 3628800
    )


def test_an_exception_comes_back_with_its_type_and_the_childs_traceback(scheduler: Scheduler) -> None:
    handle = scheduler.schedule_once("json:loads", 0.0, args=("{not json",), executor="process")
    with pytest.raises(ValueError, match="Expecting property name") as caught:
        handle.result(timeout=WAIT)
    assert "Traceback" in str(caught.value.__cause__)
    info = handle.info()
    assert info.status is TaskStatus.FAILED
    assert info.last_traceback is not None


def test_a_task_that_kills_its_process_fails_and_the_next_gets_a_new_one(
    scheduler: Scheduler, recorder: EventRecorder
) -> None:
    scheduler.subscribe(recorder, [EventKind.FAILED])
    first = scheduler.schedule_once(os.getpid, 0.0, executor="process").result(timeout=WAIT)
    dead = scheduler.schedule_once("os:_exit", 0.0, args=(3,), executor="process")
    with pytest.raises(ProcessDiedError, match="exited with code 3"):
        dead.result(timeout=WAIT)
    recorder.wait_for(lambda events: len(events) == 1)
    assert isinstance(recorder.events[0].error, ProcessDiedError)
    later = [scheduler.schedule_once(os.getpid, 0.0, executor="process") for _ in range(4)]
    pids = {handle.result(timeout=WAIT) for handle in later}
    assert pids  # the pool still serves
    assert scheduler.stats().processes == 2
    assert first in pids or len(pids) >= 1


def test_recurring_process_tasks_run_and_count_like_thread_tasks(scheduler: Scheduler) -> None:
    handle = scheduler.schedule_at_fixed_rate("os:getpid", 1.0, executor="process")
    scheduler.advance(2.0, timeout=WAIT)
    assert handle.info().run_count == 3
    assert handle.cancel() is True


@pytest.mark.parametrize(
    ("fn", "args", "error", "match"),
    [
        (lambda: None, (), ValueError, "lambda"),
        ("no_such_module_xyz:fn", (), ValueError, "does not"),
        (os.getpid, (lambda: None,), TypeError, "cannot be sent"),
    ],
    ids=["lambda", "unimportable", "unpicklable-arg"],
)
def test_refusals_happen_at_the_call(
    scheduler: Scheduler, fn: object, args: tuple[object, ...], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        scheduler.schedule_once(fn, 0.0, args=args, executor="process")  # type: ignore[arg-type]
    assert scheduler.tasks() == []


def test_process_executor_needs_processes(make_scheduler) -> None:
    s = make_scheduler(workers=1)
    with pytest.raises(ValueError, match="processes"):
        s.schedule_once(os.getpid, 0.0, executor="process")
    with pytest.raises(ValueError, match="executor"):
        s.schedule_once(os.getpid, 0.0, executor="fiber")


def test_processes_start_lazily_and_shutdown_ends_every_one(clock) -> None:
    before = child_processes()
    s = Scheduler(workers=1, processes=2, clock=clock)
    try:
        assert child_processes() == before  # none until a task needs one
        assert s.schedule_once(os.getpid, 0.0, executor="process").result(timeout=WAIT) != os.getpid()
        assert len(child_processes() - before) == 1
    finally:
        s.shutdown(timeout=WAIT)
    assert child_processes() == before
