"""History on SQLite: a durable task's runs come from the store's run ledger, also after a restart."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from actors import Scheduler
from actors.store import SQLiteStore
from tests.lifecycle import history_tasks as jobs


def test_the_history_and_the_kept_values_survive_a_restart(start: Callable[..., Scheduler]) -> None:
    first = start()
    first.schedule_at_fixed_rate(jobs.numbered, 10.0, task_id="beat", keep_result=True)
    first.advance(20.0)
    before = first.history("beat")
    first.shutdown()

    second = start()
    after = second.history("beat")

    assert [(r.run, r.outcome, r.value) for r in after] == [
        (3, "completed", {"run": 3, "tags": ["a", "b"]}),
        (2, "completed", {"run": 2, "tags": ["a", "b"]}),
        (1, "completed", {"run": 1, "tags": ["a", "b"]}),
    ]
    assert [r.due_wall for r in after] == [r.due_wall for r in before]
    assert second.info("beat").trigger is not None  # still scheduled, keep_result with it
    second.advance(30.0)  # its clock starts at the same wall instant: the next slot is 30 s on
    assert second.history("beat", limit=1)[0].value == {"run": 4, "tags": ["a", "b"]}


def test_an_ended_durable_tasks_runs_are_read_from_the_ledger(start: Callable[..., Scheduler]) -> None:
    scheduler = start(history=0)  # memory keeps no finished task: the ledger has its runs
    scheduler.schedule_once(jobs.boom, 0.0, task_id="broken")
    scheduler.advance(0.0)

    [record] = scheduler.history("broken")

    assert (record.run, record.outcome, record.error, record.node) == (
        1,
        "failed",
        "RuntimeError: boom",
        None,
    )


def test_a_memory_task_on_a_scheduler_with_a_store_has_its_history_in_memory(
    start: Callable[..., Scheduler], path: Path
) -> None:
    scheduler = start()
    scheduler.schedule_once(jobs.numbered, 0.0, task_id="local", durable=False, keep_result=True)
    scheduler.advance(0.0)

    [record] = scheduler.history("local")

    assert record.value == {"run": 1, "tags": ["a", "b"]}
    with SQLiteStore.inspect(path) as reader:
        assert reader.runs("local") == []  # never in the store
