"""History and ``keep_result`` across the nodes of a shared PostgreSQL store.

Two nodes each hold a handle of the task; whichever runs it has the value itself, and the
other knows only what the store's run ledger keeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from actors import ResultNotKeptError, RunRecord, Scheduler, SchedulerError, TaskHandle
from tests.lifecycle import history_tasks as jobs
from tests.shared.conftest import Node


def run_on_two_nodes(
    node: Node, fn: Callable[[], object], **options: object
) -> tuple[RunRecord, dict[str, TaskHandle], dict[str, Scheduler]]:
    """Schedule ``fn`` as task ``job`` on node a, take a handle on node b too, wait for its run."""
    nodes = {"a": node("a"), "b": node("b")}
    handles = {"a": nodes["a"].schedule_once(fn, 0.5, task_id="job", **options)}  # type: ignore[arg-type]
    handles["b"] = nodes["b"].handle("job")  # while it is live
    deadline = time.monotonic() + 15
    while not (records := nodes["b"].history("job")):
        assert time.monotonic() < deadline, "the run never ended"
        handles["a"].done()  # a short wait: one read of the row
        time.sleep(0.05)
    [record] = records
    return record, handles, nodes


def other(name: str | None) -> str:
    return "b" if name == "a" else "a"


def test_the_node_that_did_not_run_it_gets_the_kept_value_and_both_see_who_ran_it(node: Node) -> None:
    record, handles, nodes = run_on_two_nodes(node, jobs.numbered, keep_result=True)

    assert record.node in ("a", "b")
    assert (record.run, record.outcome) == (1, "completed")
    assert record.value == {"run": 1, "tags": ["a", "b"]}
    assert handles[other(record.node)].result(timeout=10) == {
        "run": 1,
        "tags": ["a", "b"],
    }  # as JSON gives it
    assert handles[record.node].result(timeout=10) == {"run": 1, "tags": ("a", "b")}  # the value itself
    assert nodes[other(record.node)].history("job")[0].node == record.node


@pytest.mark.parametrize(
    ("fn", "why"), [(jobs.big, "65538 bytes as JSON"), (jobs.not_json, "not JSON data")], ids=["big", "set"]
)
def test_a_value_not_kept_raises_on_the_other_node_saying_why(
    node: Node, fn: Callable[[], object], why: str
) -> None:
    record, handles, nodes = run_on_two_nodes(node, fn, keep_result=True)

    with pytest.raises(ResultNotKeptError, match=why) as caught:
        handles[other(record.node)].result(timeout=10)

    assert isinstance(caught.value, SchedulerError)
    assert isinstance(caught.value, LookupError)
    assert caught.value.task_id == "job"
    assert (record.outcome, record.value) == ("completed", None)
    assert handles[record.node].result(timeout=10) == fn()  # the node that ran it has the value
    assert nodes[other(record.node)].info("job").status.value == "completed"


def test_without_keep_result_the_other_node_gets_none(node: Node) -> None:
    record, handles, _ = run_on_two_nodes(node, jobs.numbered)

    assert handles[other(record.node)].result(timeout=10) is None
    assert record.value is None
