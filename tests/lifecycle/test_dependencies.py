"""``schedule_after``: tasks that wait for others to complete, and what a failure does downstream."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from concurrent.futures import CancelledError

import pytest

from actors import DependencyFailedError, FakeClock, Scheduler, UnknownTaskError
from messages import TaskStatus


def fail() -> None:
    raise RuntimeError("upstream broke")


def test_a_task_runs_delay_after_all_it_waits_for_completed(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    ran: list[tuple[str, float]] = []
    a = s.schedule_once(lambda: ran.append(("a", clock.now())), 10.0)
    b = s.schedule_once(lambda: ran.append(("b", clock.now())), 20.0, task_id="b")
    joined = s.schedule_after(lambda: ran.append(("joined", clock.now())), [a, "b"], delay=5.0)
    s.settle()
    info = joined.info()
    assert info.status is TaskStatus.WAITING
    assert info.waiting_for == (a.task_id, "b")
    assert info.next_run_at is None
    s.advance(10.0)
    assert joined.info().waiting_for == ("b",)
    s.advance(20.0)
    assert ran == [("a", 1010.0), ("b", 1020.0), ("joined", 1025.0)]
    assert b.done()
    assert joined.info().status is TaskStatus.COMPLETED


def test_waiting_for_a_completed_task_is_fine_and_an_unknown_id_is_not(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    done = s.schedule_once(lambda: 1, 0.0, task_id="done")
    done.result(timeout=5)
    s.settle()
    after = s.schedule_after(lambda: 2, "done", delay=3.0)
    s.advance(3.0)
    assert after.result(timeout=5) == 2
    with pytest.raises(UnknownTaskError):
        s.schedule_after(print, "never-was")
    with pytest.raises(ValueError, match="recurring"):
        s.schedule_after(print, s.schedule_at_fixed_rate(print, 10.0))
    with pytest.raises(ValueError, match="at least one"):
        s.schedule_after(print, [])


def test_a_failure_cancels_the_dependents_down_the_graph(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    root = s.schedule_once(fail, 10.0, task_id="root")
    other = s.schedule_once(lambda: None, 5.0)
    middle = s.schedule_after(print, [root, other], task_id="middle")
    leaf = s.schedule_after(print, middle, task_id="leaf")
    s.advance(10.0)
    for handle, blamed in ((middle, "root"), (leaf, "middle")):
        with pytest.raises(DependencyFailedError) as caught:
            handle.result(timeout=5)
        assert caught.value.dependency == blamed
        assert isinstance(caught.value, CancelledError)
        info = handle.info()
        assert info.status is TaskStatus.CANCELLED
        assert blamed in (info.end_reason or "")
    assert other.info().status is TaskStatus.COMPLETED


def test_cancelling_a_dependency_or_the_waiting_task(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    first = s.schedule_once(print, 10.0)
    waiting = s.schedule_after(print, first)
    bystander = s.schedule_after(print, first)
    assert bystander.cancel() is True  # a waiting task can be cancelled like any other
    assert first.cancel() is True
    with pytest.raises(DependencyFailedError):
        waiting.result(timeout=5)
    with pytest.raises(CancelledError):
        bystander.result(timeout=5)


def test_a_dependency_that_fails_while_its_dependent_is_scheduled(
    make_scheduler: Callable[..., Scheduler],
) -> None:
    s = make_scheduler()
    failing = s.schedule_once(fail, 0.0)
    with pytest.raises(RuntimeError):
        failing.result(timeout=5)
    late = s.schedule_after(print, failing)  # it has failed already: ends at once
    with pytest.raises(DependencyFailedError):
        late.result(timeout=5)


def test_a_long_chain_and_a_wide_fan_in(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    order: list[int] = []
    head = previous = s.schedule_once(lambda: order.append(0), 1.0)
    for i in range(1, 3000):
        previous = s.schedule_after(lambda i=i: order.append(i), previous)  # type: ignore[misc]
    fan = [s.schedule_once(lambda: None, 1.0) for _ in range(500)]
    joined = s.schedule_after(lambda: "all in", fan)
    s.advance(1.0)
    assert order == list(range(3000))
    assert joined.result(timeout=5) == "all in"
    # and a failure at the head of a long chain reaches its end without recursion
    broken = s.schedule_once(fail, 1.0)
    tail = broken
    for _ in range(3000):
        tail = s.schedule_after(print, tail)
    s.advance(1.0)
    with pytest.raises(DependencyFailedError):
        tail.result(timeout=5)
    assert head.done()


def test_memory_per_edge_is_small(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    roots = [s.schedule_once(print, 3600.0) for _ in range(100)]
    s.settle()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    waiting = [s.schedule_after(print, roots) for _ in range(50)]  # 5,000 edges
    s.settle()
    per_edge = (tracemalloc.get_traced_memory()[0] - before - 50 * 700) / 5000  # less the 50 tasks
    tracemalloc.stop()
    assert per_edge < 100, per_edge
    del waiting
