"""The core's side of operations decided on a task's token: the reports, and a held run skipped.

A caller (here: the test, playing the facade) makes the token's move and gets the report it
would put in the outbox; the test hands it to the timetable when the scheduler would take it.
The workers are played by hand (``tests/unit/helpers.Pool``), so each gap can be acted in.
"""

from __future__ import annotations

from typing import Any

from actors.core.operations import PAUSE, RESUME, RUN_NOW, core_refuses, token_decides
from actors.core.policies import Policies
from actors.core.task_record import TaskRecord, TaskSpec
from actors.core.task_state import HANDED, PAUSED, READY
from actors.sync.token import DONE, REFUSED, STARTED_CLAIMED
from messages import EventKind, FixedRate, Paused, Resumed, RunNowClaimed, Skipped, TaskStatus
from tests.unit.helpers import Pool, events, make, timetable

PUT: list[object] = []


def put(report: object) -> bool:
    PUT.append(report)
    return False


def held(record: TaskRecord) -> bool:
    return record.held


def setup(task_id: str = "a", first: float = 0.0, **policies: Any) -> tuple[Any, Pool, TaskRecord]:
    """A timetable with one worker and a fixed-rate task every 10 s from ``first`` (with ``policies``)."""
    PUT.clear()
    table = timetable(1)
    pool = Pool(table)
    record = table.schedule(make(task_id, FixedRate(10.0, first)), now=0.0)
    if policies:  # (a Schedule message has no policies: set them as options do)
        spec = record.spec
        record.spec = TaskSpec(spec.trigger, spec.failure_limit, policies=Policies(**policies))
    return table, pool, record


def test_the_token_decides_a_memory_task_and_leaves_the_rest_to_the_core() -> None:
    _, _, plain = setup()
    assert all(token_decides(plain, op) for op in (PAUSE, RESUME, RUN_NOW))
    _, _, queued = setup("q", overlap="queue")
    assert token_decides(queued, PAUSE)
    assert not token_decides(queued, RUN_NOW)  # its run_now may wait for a run: the core's
    _, _, allowed = setup("l", overlap="allow", max_instances=2)
    assert not any(token_decides(allowed, op) for op in (PAUSE, RESUME, RUN_NOW))  # runs of their own
    durable = setup("d")[2]
    durable.store_seq = 1
    assert not any(token_decides(durable, op) for op in (PAUSE, RESUME, RUN_NOW))  # committed first


def test_a_run_the_worker_claimed_before_a_pause_is_held_back_not_cancelled() -> None:
    table, pool, a = setup()
    pool.take()
    assert pool.claim(0) is not None  # the worker has claimed the run (the core cannot take it back)
    assert a.hold(Paused(a), put) == (DONE, False)  # the caller's pause won
    table.paused(PUT.pop(), now=0.1)  # the scheduler takes it: the run is its worker's still
    assert a.state is HANDED
    assert events(pool.take()) == [(EventKind.PAUSED, "a", None)]
    assert pool.step(0, now=0.2) is None  # try_start: held: Skipped(paused=True)
    effects = pool.take()
    assert not effects.events  # not cancelled
    assert a.state is PAUSED
    assert table.info("a").status is TaskStatus.PAUSED
    assert a.release_hold(Resumed(a), put) == (DONE, False)
    table.resumed(PUT.pop(), now=5.0)  # "latest": its missed run runs at once
    assert pool.run_everything(5.0) == [(0, "a", 1)]


def test_a_held_run_reported_after_the_resume_runs_at_once() -> None:
    table, pool, a = setup()
    pool.take()
    run = pool.claim(0)
    assert run is not None
    assert a.hold(Paused(a), put)[0] == DONE
    assert a.try_start(False) < 0  # the worker's try_start, held back (its report still to come)
    assert a.release_hold(Resumed(a), put)[0] == DONE
    table.paused(PUT.pop(0), now=0.1)
    table.resumed(PUT.pop(0), now=0.2)
    pool.claimed.pop(0)
    table.skipped(Skipped(0, "a", 1, True, paused=True), now=0.3)  # the worker's report, last
    assert a.state is READY or a.state is HANDED  # taken back and due again: not paused, not ended
    kinds = [kind for kind, _, _ in events(pool.take())]
    assert kinds == [EventKind.PAUSED, EventKind.RESUMED]
    assert pool.run_everything(0.3) == [(0, "a", 1)]


def test_a_claim_made_as_a_run_came_due_makes_that_run_the_manual_one() -> None:
    table, pool, a = setup(first=5.0)
    assert not core_refuses(a, RUN_NOW)  # the caller reads PENDING...
    table.tick(now=5.0)
    pool.take()  # ... and the run comes due and is handed out before its claim
    assert pool.claim(0) is not None
    assert a.claim_manual(RunNowClaimed(a), put) == (DONE, False)
    table.run_now_claimed(PUT.pop(), now=5.0)
    assert a.claim_manual(RunNowClaimed(a), put)[0] == REFUSED  # one promised run at a time
    assert a.try_start(False) == STARTED_CLAIMED  # (the worker's) the run that came due takes the claim
    run = pool.claimed.pop(0)
    pool.current[0] = run
    pool.finish(0, at=6.0)
    assert [record.manual for record in table.runs("a", 10, wall_offset=0.0) or []] == [True]
    info = table.info("a")
    assert info.run_count == 1  # one run, not two: its slot (5.0) was the one the manual run left
    assert info.next_run_at == 15.0


def test_the_cores_own_operations_make_the_same_moves() -> None:
    table, pool, a = setup()
    pool.take()
    assert core_refuses(a, RUN_NOW)  # HANDED: a run is about to start ("skip")
    assert table.run_now("a", now=0.0) is False
    assert table.pause("a", now=0.0) is True  # (the scheduler's thread: a Pause asked of the actor)
    assert held(a)
    assert a.hold(Paused(a), put)[0] == REFUSED  # a caller finds it held already
    assert table.resume("a", now=0.0) is True
    assert not held(a)
    assert a.revoke() is not None
    assert a.hold(Paused(a), put)[0] == REFUSED  # cancelled: nothing to pause
    assert not PUT
