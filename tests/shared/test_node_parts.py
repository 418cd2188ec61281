"""The parts of a shared store's node on their own, without a server: its arithmetic, its lease
book, its lease loop against a stand-in store, its outcome saver and start group, and how a
stored row reads as a ``TaskInfo``."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any

import pytest

from actors import DatabaseClock, FakeClock, MonotonicClock, RemoteRunError
from actors.errors import StoreError
from actors.shared.lease_book import LeaseBook
from actors.shared.lease_loop import Importable, LeaseLoop
from actors.shared.outcome_saver import OutcomeSaver
from actors.shared.plan import (
    AHEAD_PER_WORKER,
    SHORT_RUN,
    ClockSample,
    claim_ahead,
    down_before,
    lease_limit,
    local_due,
    on_grid,
    poll_delay,
    renew_period,
    renew_within,
    sleep_for,
)
from actors.shared.start_group import StartGroup
from actors.shared.view import info_of
from actors.store import Lease, RunInFlight, StoredTask
from messages import Cron, FixedDelay, FixedRate, Once, TaskStatus

T0 = 1_800_000_000.0


def row(task_id: str = "t", seq: int = 1, **changes: Any) -> StoredTask:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "seq": seq,
        "fn_ref": "jobs.reports:send",
        "args_json": "[]",
        "kwargs_json": "{}",
        "trigger_json": '{"once":true}',
        "options_json": "{}",
        "status": "scheduled",
        "next_due": T0,
        "run_count": 0,
        "failure_count": 0,
        "consecutive_failures": 0,
        "last_error": None,
        "last_outcome": None,
        "updated_at": T0 - 10,
    }
    fields.update(changes)
    return StoredTask(**fields)


def lease(seq: int = 1, fence: int = 1, **changes: Any) -> Lease:
    fields: dict[str, Any] = {
        "task": row(f"t{seq}", seq),
        "fence": fence,
        "owner": "a",
        "expires": T0 + 30,
        "db_now": T0,
    }
    fields.update(changes)
    return Lease(**fields)


# -- arithmetic ------------------------------------------------------------------------------------


def test_claims_never_exceed_the_idle_workers_less_those_on_their_way() -> None:
    assert lease_limit(4, 0) == 4
    assert lease_limit(4, 3) == 1
    assert lease_limit(2, 5) == 0


def test_runs_ahead_of_the_idle_workers_come_in_batches_of_at_least_half_the_queue() -> None:
    # 8 may wait for a worker: an idle worker is always worth a claim, a queue room only of >= 4.
    assert lease_limit(0, 0, ahead=8, waiting=0) == 8
    assert lease_limit(0, 0, ahead=8, waiting=5) == 0  # room for 3: not worth a commit yet
    assert lease_limit(0, 0, ahead=8, waiting=4) == 4
    assert lease_limit(1, 0, ahead=8, waiting=7) == 2  # the idle worker's run, and one more
    assert lease_limit(2, 3, ahead=8, waiting=0) == 7  # one on its way fills the queue
    assert lease_limit(4, 0, ahead=0, waiting=9) == 4  # nothing ahead: as before
    # Only while runs are short: a run ahead then waits a few milliseconds for its worker.
    assert claim_ahead(4, None) == 0
    assert claim_ahead(4, SHORT_RUN / 2) == AHEAD_PER_WORKER * 4
    assert claim_ahead(4, SHORT_RUN * 2) == 0


@pytest.mark.parametrize("jitter", [0.0, 0.3, 0.999, -1.0, 2.0])
def test_a_poll_comes_within_half_a_poll_and_a_poll(jitter: float) -> None:
    assert 2.5 <= poll_delay(5.0, jitter) <= 5.0


def test_a_node_sleeps_until_the_next_due_time_or_the_poll_whichever_is_first() -> None:
    assert sleep_for(None, T0, 3.0) == 3.0
    assert sleep_for(T0 + 1.0, T0, 3.0) == 1.0
    assert sleep_for(T0 + 9.0, T0, 3.0) == 3.0
    assert sleep_for(T0 - 1.0, T0, 3.0) == 0.0
    assert renew_period(30.0) == 10.0


def test_a_claimed_run_is_never_due_later_than_now_on_this_clock() -> None:
    assert local_due(T0, T0 - 1000.0, now=1000.0) == 1000.0
    assert local_due(T0, T0 - 1000.0, now=1005.0) == 1000.0  # due earlier: as late as it is
    assert local_due(T0 + 0.004, T0 - 1000.0, now=1000.0) == 1000.0  # "due" a hair ahead: now
    assert local_due(None, 0.0, now=7.0) == 7.0


def test_a_fixed_rate_slot_goes_back_on_its_grid() -> None:
    assert on_grid(T0 + 60.011, T0, 1.0) == T0 + 60.0  # planned with an offset 11 ms off
    assert on_grid(T0 + 59.993, T0, 1.0) == T0 + 60.0
    assert on_grid(T0 + 7.5, T0 + 0.25, 2.5) == T0 + 7.75
    assert on_grid(T0, T0, 0.0) == T0  # no grid to speak of


def test_the_next_fixed_rate_slot_is_never_the_claimed_slot_that_just_ran() -> None:
    # The node's reading of the database's clock was 7 ms behind: the core saw the leased run
    # start 7 ms before its slot, so a quick run planned that very slot (T0 + 60.0) again.
    assert on_grid(T0 + 60.0 - 0.001, T0, 0.01, ran=T0 + 60.0) == pytest.approx(T0 + 60.01)
    assert on_grid(T0 + 59.0, T0, 1.0, ran=T0 + 60.0) == T0 + 61.0  # or one before it
    assert on_grid(T0 + 63.2, T0, 1.0, ran=T0 + 60.0) == T0 + 63.0  # missed slots stay skipped


def test_a_reading_of_the_database_clock_is_placed_at_its_midpoint() -> None:
    tight = ClockSample.between(10.0, T0 + 10.0, 10.002)
    assert tight.offset == pytest.approx(T0 - 0.001)
    assert tight.spread == pytest.approx(0.002)


class Readings:
    """A database clock read through a fake local clock: each reading takes ``spread`` seconds."""

    def __init__(self, local: FakeClock, offset: float) -> None:
        self.local, self.offset, self.spread = local, offset, 0.001

    def __call__(self) -> float:
        self.local.advance(self.spread / 2)
        now = self.local.now() + self.offset
        self.local.advance(self.spread / 2)
        return now


def test_the_offset_stays_steady_and_follows_only_a_real_drift() -> None:
    local = FakeClock(1000.0)
    readings = Readings(local, T0)
    clock = DatabaseClock(local, readings)
    readings.spread = 0.3  # a slow first reading, then a tight one: the tight one wins
    clock.sample()
    readings.spread = 0.002
    readings.offset = T0 + 0.01
    clock.sample()
    assert clock.offset == pytest.approx(T0 + 0.01)
    readings.offset = T0 + 0.02  # scatter below OFFSET_STEP: ignored, so slots stay on their grid
    clock.sample()
    assert clock.offset == pytest.approx(T0 + 0.01)
    readings.spread = 0.5
    readings.offset = T0 + 5.0  # a loose reading never moves it
    clock.sample()
    assert clock.offset == pytest.approx(T0 + 0.01)
    readings.spread = 0.002  # a tight one that says the clocks drifted apart: followed
    clock.sample()
    assert clock.offset == pytest.approx(T0 + 5.0)


def test_the_database_clock_is_the_wall_clock_and_refuses_a_fake_clock() -> None:
    readings = iter([T0, T0 + 100.0])
    clock = DatabaseClock(MonotonicClock(), lambda: next(readings))
    with pytest.raises(RuntimeError, match="sample"):
        clock.wall()
    assert clock.sample() == T0
    assert abs(clock.database_now() - T0) < 1.0
    assert clock.wall().timestamp() == pytest.approx(T0, abs=1.0)
    with pytest.raises(ValueError, match="FakeClock"):
        DatabaseClock.over(FakeClock(), object())  # type: ignore[arg-type]


# -- the lease book ----------------------------------------------------------------------------------


def test_the_book_counts_room_claims_on_their_way_and_what_was_started() -> None:
    book = LeaseBook()
    assert book.set_idle({"thread": 4, "process": 0}) is True
    assert book.set_idle({"thread": 3, "process": 0}) is False
    book.acquired([lease(1), lease(2)], "thread")
    assert book.rooms() == {"thread": 1}  # no room in the process pool: it has no worker
    book.arrived([lease(1), lease(2)])  # the scheduler has them: its idle count will say so
    assert book.rooms() == {"thread": 1}
    assert book.set_idle({"thread": 1, "process": 2}) is True
    book.acquired([lease(3)], "process")
    assert book.rooms() == {"thread": 1, "process": 1}  # each pool's room is its own
    book.start(1, T0 + 1)
    assert [held.seq for held in book.unstarted()] == [2, 3]
    assert book.forget([(1, 1), (9, 1)]) == [lease(1)]
    assert len(book) == 2


def test_the_book_claims_ahead_only_once_its_runs_are_seen_to_be_short() -> None:
    book = LeaseBook({"thread": 2})
    book.set_idle({"thread": 2})
    assert book.rooms() == {"thread": 2}  # no run ended yet: no more than the idle workers
    book.acquired([lease(1), lease(2)], "thread")
    book.arrived([lease(1), lease(2)])
    book.set_idle({"thread": 0})
    assert book.rooms() == {}
    book.start(1, T0)
    book.saving([(1, 1)])  # its run ended at once: runs are short here
    ahead = 2 * AHEAD_PER_WORKER
    assert book.rooms() == {"thread": ahead - 1}  # the run of lease 2 waits for its worker
    more = [lease(seq) for seq in range(3, 2 + ahead)]
    book.acquired(more, "thread")
    book.arrived(more)
    assert book.rooms() == {}  # the queue is full
    for seq in range(3, 2 + ahead // 2):
        assert book.start(seq, T0) is False  # less than half the queue free: not worth a claim
    assert book.start(2 + ahead // 2, T0) is True  # half of it free: wake the lease loop
    assert book.rooms() == {"thread": ahead // 2}
    assert [held.seq for held in book.unstarted()] == [2, *range(3 + ahead // 2, 2 + ahead)]


def test_renewals_mark_lost_leases_and_ask_stopped_runs_once() -> None:
    book = LeaseBook()
    book.acquired([lease(1), lease(2), lease(3)])
    stopped: list[int] = []

    class Run:
        def __init__(self, seq: int) -> None:
            self.seq = seq

        def interrupt(self) -> bool:
            stopped.append(self.seq)
            return True

    for seq in (1, 2, 3):
        book.attach(seq, Run(seq))
    asked = book.renewable()
    renewed = [lease(1, expires=T0 + 60), lease(2, expires=T0 + 60, stop_requested=True)]
    lost, stop = book.renewed(asked, renewed)
    assert lost == [lease(3)]
    for task in stop:
        task.interrupt()
    assert stopped == [2]
    assert [held.seq for held in book.renewable()] == [1, 2]  # the lost one is not renewed again
    assert book.get(1).lease.expires == T0 + 60  # type: ignore[union-attr]
    assert book.renewed(book.renewable(), renewed)[1] == []  # asked once only


def test_renewals_ask_runs_to_make_way_once_and_apart_from_stops() -> None:
    book = LeaseBook()
    book.acquired([lease(1), lease(2)])
    asked_to: list[tuple[str, int]] = []

    class Run:
        def __init__(self, seq: int) -> None:
            self.seq = seq

        def interrupt(self) -> bool:
            asked_to.append(("stop", self.seq))
            return True

        def make_way(self) -> bool:
            asked_to.append(("make way", self.seq))
            return True

    for seq in (1, 2):
        book.attach(seq, Run(seq))
    renewed = [
        lease(1, expires=T0 + 60, make_way_requested=True),
        lease(2, expires=T0 + 60, stop_requested=True),
    ]
    lost, stop, make_way = book.renewed_all(book.renewable(), renewed)
    assert lost == []
    for task in stop:
        task.interrupt()
    for task in make_way:
        task.make_way()
    assert asked_to == [("stop", 2), ("make way", 1)]
    assert book.renewed_all(book.renewable(), renewed)[2] == []  # asked once only


def test_a_run_due_before_a_node_came_up_less_lease_and_poll_was_missed_while_the_fleet_was_down() -> None:
    assert down_before(1000.0, lease=2.0, poll=0.5) == 997.5  # a live fleet claims within lease + poll


def test_a_lease_whose_outcome_is_being_saved_is_still_renewed_and_never_called_lost() -> None:
    book = LeaseBook()
    book.acquired([lease(1), lease(2)])
    book.saving([(1, 1), (2, 1)])
    asked = book.renewable()
    assert [held.seq for held in asked] == [1, 2]  # a save may wait longer than a lease
    lost, _ = book.renewed(asked, [lease(1, expires=T0 + 60)])
    assert lost == []  # 2's save may have ended it: not lost, the save's answer says
    assert book.get(1).lease.expires == T0 + 60  # type: ignore[union-attr]
    assert book.get(2).lost is False  # type: ignore[union-attr]
    book.decline(2)  # a run the scheduler would not take: let it end, never claim it again here
    assert [held.seq for held in book.renewable()] == [1]
    assert sorted(book.seqs()) == [1, 2]


# -- the lease loop, against a stand-in store ----------------------------------------------------------


class StandInStore:
    """Just what the lease loop calls; every due row is claimable at once."""

    lease = 30.0
    poll = 0.05

    def __init__(self, due: int, refs: set[str]) -> None:
        self.due = due
        self.refs = refs
        self.claims: list[tuple[int, list[str] | None, list[str] | None]] = []
        self.lock = threading.Lock()

    def references(self, since: int) -> tuple[set[str], int]:
        return set(self.refs), since + 1

    def claim_due(
        self,
        limit: int,
        importable: Collection[str] | None = None,
        executors: Collection[str] | None = None,
        *,
        held: Collection[int] | None = None,
    ) -> list[Lease]:
        with self.lock:
            kinds = None if executors is None else sorted(executors)
            self.claims.append((limit, None if importable is None else sorted(importable), kinds))
            taken = min(limit, self.due)
            self.due -= taken
            return [lease(seq=1000 + self.due + i) for i in range(taken)]

    def next_wakeup(
        self, importable: Collection[str] | None = None, executors: Collection[str] | None = None
    ) -> float | None:
        return T0 if self.due else None

    def db_now(self) -> float:
        return T0

    def release(self, leases: Sequence[Lease]) -> None:
        raise AssertionError("nothing is given back here")


def start_loop(store: StandInStore, book: LeaseBook, deliver: Callable[[list[Lease]], bool]) -> LeaseLoop:
    clock = DatabaseClock(MonotonicClock(), store.db_now)
    clock.sample()
    loop = LeaseLoop(
        store,  # type: ignore[arg-type]
        book,
        clock,
        deliver,
        importable=Importable(lambda ref: ref.startswith("jobs.")),
        rng=random.Random(1),
    )
    loop.start()
    return loop


def test_the_loop_claims_only_as_many_as_there_is_room_for_and_only_what_it_can_import() -> None:
    store = StandInStore(due=10, refs={"jobs.reports:send", "elsewhere:fn"})
    book = LeaseBook()
    book.set_idle({"thread": 3, "process": 0})
    delivered: list[Lease] = []
    got = threading.Condition()

    def deliver(leases: list[Lease]) -> bool:
        with got:
            delivered.extend(leases)
            got.notify_all()
        return True

    loop = start_loop(store, book, deliver)
    try:
        with got:
            assert got.wait_for(lambda: len(delivered) == 3, 5)
        assert store.claims[0] == (3, ["jobs.reports:send"], ["thread"])  # no worker process: no process run
        book.arrived(delivered)  # the scheduler took them; all three workers are busy now
        assert book.rooms() == {}
        book.set_idle({"thread": 2, "process": 0})  # two runs ended
        loop.wake_for_room()
        with got:
            assert got.wait_for(lambda: len(delivered) == 5, 5)
        assert all(limit <= 3 and executors == ["thread"] for limit, _, executors in store.claims)
    finally:
        loop.stop()


# -- rows as snapshots ----------------------------------------------------------------------------------


def test_a_stored_row_reads_as_a_task_info_on_this_node_s_clock() -> None:
    offset = T0 - 1000.0  # the database's clock minus this node's
    info = info_of(row(options_json='{"name": "report"}'), None, wall_offset=offset)
    assert (info.name, info.status, info.next_run_at, info.trigger) == (
        "report",
        TaskStatus.SCHEDULED,
        1000.0,
        Once(1000.0),
    )
    assert info.next_run_wall is not None
    assert info.next_run_wall.timestamp() == T0
    rate = row(trigger_json=json.dumps({"rate": 60.0, "anchor": T0 - 600}))
    assert info_of(rate, None, wall_offset=offset).trigger == FixedRate(60.0, 400.0)
    assert info_of(row(trigger_json='{"delay": 5.0}'), None, wall_offset=offset).trigger == FixedDelay(
        5.0, 0.0
    )
    cron = row(trigger_json='{"cron": "0 9 * * *", "tz": "UTC"}')
    assert info_of(cron, None, wall_offset=offset).trigger == Cron("0 9 * * *", "UTC")


@pytest.mark.parametrize(
    "damage",
    [
        {"trigger_json": "[1]"},
        {"trigger_json": '{"rate": 0, "anchor": 0}'},
        {"options_json": "not json"},
        {"options_json": "[1]"},
        {"fn_ref": "not a reference"},
    ],
    ids=["trigger-not-an-object", "rate-zero", "options-not-json", "options-not-an-object", "bad-reference"],
)
def test_a_damaged_row_reads_as_a_task_info_as_its_stand_in_runs(damage: dict[str, str]) -> None:
    info = info_of(row(**damage), None, wall_offset=0.0)  # listing a shared store never fails on one row
    assert (info.status, info.next_run_at) == (TaskStatus.SCHEDULED, T0)
    if "trigger_json" in damage:
        assert info.trigger == Once(T0)  # as its stand-in: due once, at its next_due
    assert info.name == ("not a reference" if "fn_ref" in damage else "send")


def test_a_run_in_flight_shows_where_it_runs_and_an_error_from_elsewhere_as_remote() -> None:
    flight = RunInFlight(task_id="t", seq=1, owner="node-b", expires=T0 + 30, started=True)
    info = info_of(row(), flight, wall_offset=0.0)
    assert (info.status, info.node, info.next_run_at) == (TaskStatus.RUNNING, "node-b", None)
    claimed = info_of(
        row(), RunInFlight(task_id="t", seq=1, owner="a", expires=T0, started=False), wall_offset=0
    )
    assert (claimed.status, claimed.node) == (TaskStatus.SCHEDULED, "a")
    failed = row(
        status="failed",
        next_due=None,
        last_error="RuntimeError: boom",
        consecutive_failures=3,
        options_json='{"max_consecutive_failures": 3}',
        trigger_json='{"rate": 1.0, "anchor": 0.0}',
    )
    info = info_of(failed, None, wall_offset=0.0)
    assert isinstance(info.last_error, RemoteRunError)
    assert info.last_error.error == "RuntimeError: boom"
    assert info.end_reason == "stopped after 3 consecutive failures (max_consecutive_failures=3)"
    assert info_of(row(status="cancelled", next_due=None), None, wall_offset=0.0).end_reason == "cancelled"


# -- the outcome saver (group commit) and the start group ---------------------------------------


def test_items_put_while_a_commit_is_in_flight_go_together_in_the_next() -> None:
    entered, release = threading.Event(), threading.Event()
    commits: list[list[int]] = []

    def commit(items: list[int]) -> bool:
        commits.append(list(items))
        entered.set()
        assert release.wait(5)
        return True

    saver: OutcomeSaver[int] = OutcomeSaver(commit, poll=1.0)
    saver.start()
    saver.put(1)
    assert entered.wait(5)
    assert saver.busy()
    for item in (2, 3, 4):
        saver.put(item)
    release.set()
    assert saver.stop(timeout=5) == []
    assert commits == [[1], [2, 3, 4]]
    assert not saver.busy()


def test_a_failed_commit_is_tried_again_and_does_not_count_as_busy() -> None:
    attempts: list[list[str]] = []
    retried = threading.Event()

    def commit(items: list[str]) -> bool:
        attempts.append(list(items))
        if len(attempts) == 1:
            return False  # the store failed
        retried.set()
        return True

    saver: OutcomeSaver[str] = OutcomeSaver(commit, poll=0.05)
    saver.start()
    saver.put("a")
    assert retried.wait(5)
    assert attempts == [["a"], ["a"]]
    assert saver.stop(timeout=5) == []


def test_stop_makes_one_last_attempt_and_returns_what_it_could_not_save() -> None:
    attempts: list[list[str]] = []
    failed = threading.Event()

    def commit(items: list[str]) -> bool:
        attempts.append(list(items))
        failed.set()
        return False

    saver: OutcomeSaver[str] = OutcomeSaver(commit, poll=60.0)  # no retry before the stop
    saver.start()
    saver.put("a")
    assert failed.wait(5)
    assert not saver.busy()  # a store that is down holds no shutdown up
    assert saver.unsaved() == 1
    assert saver.stop(timeout=5) == ["a"]
    assert attempts == [["a"], ["a"]]


def test_starts_asked_while_one_is_in_flight_go_in_the_next_group() -> None:
    entered, release = threading.Event(), threading.Event()
    groups: list[list[int]] = []

    def start_many(starts: Sequence[tuple[Lease, bool]]) -> list[float | None]:
        groups.append([held.seq for held, _ in starts])
        if len(groups) == 1:
            entered.set()
            assert release.wait(5)
        return [None if held.seq == 3 else float(held.seq) for held, _ in starts]

    group = StartGroup(start_many)
    answers: dict[int, float | None] = {}

    def ask(seq: int) -> None:
        answers[seq] = group.start(lease(seq), seal=False)

    first = threading.Thread(target=ask, args=(1,))
    first.start()
    assert entered.wait(5)
    others = [threading.Thread(target=ask, args=(seq,)) for seq in (2, 3, 4)]
    for thread in others:
        thread.start()
    while len(group._waiting) < 3:
        threading.Event().wait(0.001)
    release.set()
    for thread in [first, *others]:
        thread.join(5)
    assert groups[0] == [1]
    assert sorted(groups[1]) == [2, 3, 4]
    assert answers == {1: 1.0, 2: 2.0, 3: None, 4: 4.0}
    assert group.start(lease(5), seal=True) == 5.0  # alone: at once, in a group of its own
    assert group.groups == 3


def test_a_failed_group_raises_in_every_worker_of_it_and_the_next_goes_on() -> None:
    calls = 0

    def start_many(starts: Sequence[tuple[Lease, bool]]) -> list[float | None]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise StoreError("down")
        return [1.0] * len(starts)

    group = StartGroup(start_many)
    with pytest.raises(StoreError, match="down"):
        group.start(lease(1), seal=False)
    assert group.start(lease(2), seal=False) == 1.0


def test_a_renewal_extends_a_lease_at_least_half_a_period_after_the_last_extension() -> None:
    assert renew_within(30.0) == 30.0 - renew_period(30.0) / 2
    assert 30.0 - renew_period(30.0) < renew_within(30.0) < 30.0  # a scheduled renewal always extends
