"""The shared store: several nodes on one PostgreSQL schema, each due run claimed by one of them.

Nodes are separate ``PostgresStore`` objects (threads of this process) or separate
processes (``tests.store.pg_child``). Time is the database's: tests wait for its clock.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from actors.errors import StoreError
from actors.store import Lease, PostgresStore, StoredTask
from tests.store.helpers import definition, record, update
from tests.store.pg import DSN, admin, backends, spawn_node, terminate, unique_node, wait_for_db_clock

Node = Callable[..., PostgresStore]


def due(store: PostgresStore, task_id: str, ago: float = 1.0, **changes: object) -> StoredTask:
    """Add a task due ``ago`` seconds before the database's now."""
    return store.add(definition(task_id, next_due=store.db_now() - ago, **changes))[0]


def ids(leases: list[Lease]) -> list[str]:
    return [held.task.task_id for held in leases]


# -- claiming ------------------------------------------------------------------------------------


def test_a_claim_takes_only_rows_due_on_the_database_clock(make_node: Node) -> None:
    a = make_node("a", lease=30.0)
    first = due(a, "first", ago=10)
    second = due(a, "second", ago=5)
    now = a.db_now()
    later = a.add(definition("later", next_due=now + 0.5))[0]
    a.add(definition("next-year", next_due=now + 3600 * 24 * 365))
    a.add(definition("unknown", next_due=None))
    a.cancel(due(a, "cancelled").task_id)

    leases = a.claim_due(10)

    claimed_at = leases[0].db_now
    assert claimed_at >= now
    # What was due at the claim's instant on the database's clock (on a loaded machine, "later"
    # may be due already), in due order; each row as claimed.
    assert [held.task for held in leases] == [t for t in (first, second, later) if t.next_due <= claimed_at]  # type: ignore[operator]
    for held in leases:
        assert (held.owner, held.fence, held.db_now) == ("a", 1, claimed_at)
        assert held.expires == pytest.approx(claimed_at + 30.0)

    wait_for_db_clock(a, now + 0.5)
    assert ids(a.claim_due(10)) == ([] if len(leases) == 3 else ["later"])
    assert a.claim_due(10) == []  # held, and nothing else is due yet


def test_a_claim_takes_at_most_limit_rows_in_due_order(make_node: Node) -> None:
    a = make_node("a")
    now = a.db_now()
    dues = [now - 50 + random.Random(3).choice([0, 1, 2]) for _ in range(10)]
    tasks = [a.add(definition(f"t{i}", next_due=d))[0] for i, d in enumerate(dues)]
    expected = [t.task_id for t in sorted(tasks, key=lambda t: (t.next_due, t.seq))]

    assert a.claim_due(0) == []
    assert ids(a.claim_due(3)) == expected[:3]
    assert ids(a.claim_due(100)) == expected[3:]
    with pytest.raises(ValueError, match="limit"):
        a.claim_due(-1)


def test_a_claim_takes_only_importable_functions(make_node: Node) -> None:
    a = make_node("a")
    due(a, "old", fn_ref="jobs.old:run")
    due(a, "new", fn_ref="jobs.new:run")
    due(a, "other", fn_ref="jobs.other:run")

    assert a.claim_due(10, importable=[]) == []
    assert a.next_wakeup(importable=[]) is None
    assert ids(a.claim_due(10, importable={"jobs.new:run", "jobs.absent:fn"})) == ["new"]
    assert ids(a.claim_due(10, importable=("jobs.old:run", "jobs.other:run"))) == ["old", "other"]
    with pytest.raises(TypeError, match="str"):
        a.claim_due(10, importable="jobs.old:run")


def test_a_claim_takes_only_runs_of_the_executors_it_has_room_for(make_node: Node) -> None:
    a = make_node("a")
    due(a, "proc", ago=4, options_json='{"executor": "process", "timeout": 5.0}')
    named = json.dumps({"name": '"executor": "process"'})  # a thread task with a misleading name
    due(a, "thread", ago=3, options_json=named)
    due(a, "damaged", ago=2, options_json="not json")  # read as a thread task: claims never fail on it
    due(a, "plain", ago=1)

    assert a.claim_due(10, executors=[]) == []
    assert a.next_wakeup(executors=[]) is None
    assert a.next_wakeup(executors=["process"]) == a.get("proc").next_due  # type: ignore[union-attr]
    assert ids(a.claim_due(10, executors=["thread"])) == ["thread", "damaged", "plain"]
    assert a.next_wakeup(executors=["thread"]) is not None  # their leases' ends
    assert ids(a.claim_due(10, importable=["jobs.reports:send"], executors={"process", "thread"})) == ["proc"]
    with pytest.raises(ValueError, match="executors"):
        a.claim_due(10, executors=["inline"])
    with pytest.raises(TypeError, match="str"):
        a.next_wakeup(executors="process")


def test_nodes_claiming_at_once_never_get_the_same_row(make_node: Node) -> None:
    nodes = [make_node(f"n{i}") for i in range(4)]
    now = nodes[0].db_now()
    for i in range(300):
        nodes[0].add(definition(f"t{i}", next_due=now - 1 - i % 7))
    start = threading.Barrier(len(nodes))
    claimed: list[list[str]] = [[] for _ in nodes]
    errors: list[BaseException] = []

    def claimer(n: int) -> None:
        try:
            start.wait(timeout=10)
            while leases := nodes[n].claim_due(7):
                assert all(held.owner == f"n{n}" for held in leases)
                claimed[n].extend(ids(leases))
        except BaseException as error:  # reported by the test below
            errors.append(error)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(len(nodes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert not errors
    every = [task_id for per_node in claimed for task_id in per_node]
    assert Counter(every) == Counter(f"t{i}" for i in range(300))  # each exactly once
    assert sum(bool(per_node) for per_node in claimed) >= 2  # they did compete


# -- leases and fences ---------------------------------------------------------------------------


def test_an_expired_lease_is_claimed_again_and_the_late_outcome_refused(make_node: Node) -> None:
    a, b = make_node("a", lease=0.3), make_node("b", lease=30.0)
    task = due(a, "x")
    (lost,) = a.claim_due(1)

    wait_for_db_clock(b, lost.expires)
    (won,) = b.claim_due(1)

    assert (won.seq, won.fence, won.owner) == (task.seq, lost.fence + 1, "b")
    late = update(task, next_due=task.next_due + 60, run_count=1, last_outcome="completed")
    assert a.save([update(task, run_count=1, fence=lost.fence)], [record(task, 1)]) == 0
    assert a.get("x") == task  # no counter moved
    assert a.runs() == []  # and no ledger row
    assert a.renew([lost]) == []  # a's lease is gone for good

    assert b.save([update(task, run_count=1, fence=won.fence)], [record(task, 1)]) == 1
    assert a.save([], [record(task, 1, outcome="failed")]) == 0  # the ledger keeps one per run
    assert b.save([update(task, run_count=2, fence=won.fence)], [record(task, 2)]) == 0  # spent
    assert [r.outcome for r in a.runs()] == ["completed"]
    # The contrast: without a fence, a late update lands (the scheduler's own, unshared case).
    a.save([late])
    assert a.get("x").run_count == 1  # type: ignore[union-attr]
    assert a.get("x").next_due == task.next_due + 60  # type: ignore[union-attr]


def test_a_claim_that_says_what_it_holds_never_retakes_those_and_retakes_its_orphans_at_once(
    make_node: Node,
) -> None:
    a = make_node("a", lease=0.3)
    lost_answer = make_node("a", lease=30.0)  # the same node's claim, whose answer never reached it
    held, orphan = due(a, "held", ago=2), due(a, "orphan", ago=1)
    (lease,) = a.claim_due(1)
    assert lease.task.task_id == "held"
    (gone,) = lost_answer.claim_due(1)
    assert gone.task.task_id == "orphan"

    wait_for_db_clock(a, lease.expires)  # the held row's lease has lapsed: its keeper is late
    (again,) = a.claim_due(10, held=[held.seq])

    assert (again.seq, again.fence) == (orphan.seq, gone.fence + 1)  # the orphan at once, 30 s early
    assert a.claim_due(10, held=[held.seq, orphan.seq]) == []  # never a row it holds, lapsed or not
    assert a.renew([lease]) != []  # the keeper takes the lapsed lease up again
    with pytest.raises(TypeError, match="held"):
        a.claim_due(1, held=["1"])  # type: ignore[list-item]


def test_a_fenced_save_ends_the_lease_and_lands_on_a_cancelled_row(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    task = due(a, "x")
    (held,) = a.claim_due(1)
    assert b.cancel("x")  # a caller cancels while the run is in flight

    assert (
        a.save([update(task, run_count=1, last_outcome="completed", fence=held.fence)], [record(task, 1)])
        == 1
    )
    stored = a.get("x")
    assert stored is not None
    assert (stored.status, stored.run_count) == ("cancelled", 1)
    assert a.renew([held]) == []  # the save gave the row up


def test_a_lease_commits_once_even_within_one_save(make_node: Node) -> None:
    a = make_node("a")
    task = due(a, "x")
    (held,) = a.claim_due(1)

    new = a.save(
        [update(task, run_count=1, fence=held.fence), update(task, run_count=9, fence=held.fence)],
        [record(task, 1)],
    )

    assert new == 1  # the first update applied, so the run's ledger row lands
    assert a.get("x").run_count == 1  # type: ignore[union-attr]  # the second found the lease spent


def test_renewing_keeps_a_lease_past_its_first_end(make_node: Node) -> None:
    a, b = make_node("a", lease=0.5), make_node("b")
    due(a, "x")
    (held,) = a.claim_due(1)
    first_end = held.expires

    while a.db_now() < first_end + 0.25:
        (renewed,) = a.renew([held])
        assert renewed.expires > held.expires
        assert (renewed.fence, renewed.task) == (held.fence, held.task)
        held = renewed
        assert b.claim_due(1) == []
        time.sleep(0.1)  # a lease keeper's period: well inside the lease

    wait_for_db_clock(b, held.expires)  # the keeper stops: the lease ends
    assert ids(b.claim_due(1)) == ["x"]
    assert a.renew([held]) == []


def test_release_makes_rows_claimable_at_once(make_node: Node) -> None:
    a, b = make_node("a", lease=30.0), make_node("b", lease=30.0)
    for i in range(3):
        due(a, f"t{i}", ago=10 - i)
    held = a.claim_due(3)

    a.release(held[:2])

    assert ids(b.claim_due(10)) == ["t0", "t1"]
    a.release(held[:2])  # lost already (b holds them): left alone
    assert b.claim_due(10) == []
    assert a.claim_due(10) == []
    a.release([])


def test_next_wakeup_counts_the_leases_of_owned_rows(make_node: Node) -> None:
    a = make_node("a", lease=30.0)
    assert a.next_wakeup() is None
    now = a.db_now()
    later = a.add(definition("later", next_due=now + 100))[0]
    assert a.next_wakeup() == later.next_due
    soon = due(a, "soon")
    assert a.next_wakeup() == soon.next_due
    a.add(definition("unknown", next_due=None))  # never claimable: no wake-up

    (held,) = a.claim_due(1)

    assert a.next_wakeup() == held.expires  # the claimed row's lease end, before "later"
    assert a.next_wakeup(importable=["jobs.other:fn"]) is None
    a.release([held])
    assert a.next_wakeup() == soon.next_due


# -- the change feed -----------------------------------------------------------------------------


def test_changes_returns_what_other_nodes_wrote_since_the_cursor(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    old = a.add(definition("old"))[0]
    rows, cursor = a.changes(0)
    assert rows == [old]

    x = b.add(definition("x"))[0]
    b.add(definition("y"))
    b.cancel("y")
    rows, cursor = a.changes(cursor)
    assert {t.task_id: t.status for t in rows} == {"x": "scheduled", "y": "cancelled"}
    assert a.changes(cursor)[0] == []

    b.save([update(x, run_count=1, next_due=x.next_due + 60)])  # type: ignore[operator]
    rows, cursor = a.changes(cursor)
    assert [(t.task_id, t.run_count) for t in rows] == [("x", 1)]

    # Claims, renewals and releases change who holds a row, not the row a node caches.
    due(b, "z")
    rows, cursor = a.changes(cursor)
    held = b.claim_due(5)
    b.release(b.renew(held))
    assert a.changes(cursor)[0] == []
    with pytest.raises(ValueError, match="since"):
        a.changes(-1)


def test_changes_never_skips_a_row_committed_after_a_newer_one(make_node: Node, pg_schema: str) -> None:
    a, b = make_node("a"), make_node("b")
    a.add(definition("slow"))
    _, cursor = a.changes(0)
    with admin() as slow:
        # A node's write that started first and commits last (as the store writes a row).
        slow.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        slow.execute("BEGIN")
        slow.execute(
            "UPDATE task SET run_count = 7, change = pg_current_xact_id()::text::bigint"
            " WHERE task_id = 'slow'"
        )
        b.add(definition("fast"))
        rows, cursor = a.changes(cursor)
        assert [t.task_id for t in rows] == ["fast"]
        slow.execute("COMMIT")

    rows, cursor = a.changes(cursor)

    assert ("slow", 7) in [(t.task_id, t.run_count) for t in rows]


def test_changes_move_on_while_other_clients_of_the_server_hold_transactions_open(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    a.add(definition("old"))
    # Transactions of other clients, open with an id: one in another database of the server,
    # one in this database that never touched the store. The server's snapshot lists both.
    with (
        psycopg.connect(make_conninfo(DSN, dbname="postgres"), autocommit=True) as elsewhere,
        admin() as neighbour,
    ):
        for other in (elsewhere, neighbour):
            other.execute("BEGIN")
            other.execute("SELECT pg_current_xact_id()")
        rows, cursor = a.changes(0)
        assert [t.task_id for t in rows] == ["old"]
        assert a.changes(cursor)[0] == []
        _, ref_cursor = a.references(0)
        assert a.references(ref_cursor)[0] == set()

        b.add(definition("new", fn_ref="jobs.new:fn"))
        rows, cursor = a.changes(cursor)
        assert [t.task_id for t in rows] == ["new"]
        assert a.changes(cursor)[0] == []
        assert a.references(ref_cursor)[0] == {"jobs.new:fn"}
        for other in (elsewhere, neighbour):
            other.execute("ROLLBACK")


# -- hints -------------------------------------------------------------------------------------


def test_listen_calls_back_when_another_node_changes_the_schedule(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    hint = threading.Event()
    stop = a.listen(hint.set)
    try:
        x = b.add(definition("x"))[0]
        assert hint.wait(1.0), "no hint after an add"
        for change in (
            lambda: b.add(definition("x", fn_ref="jobs.new:fn"), "replace"),
            lambda: b.save([update(x, run_count=1)]),
            lambda: b.cancel("x"),
        ):
            hint.clear()
            change()
            assert hint.wait(1.0), "no hint after a write"
        hint.clear()
        b.add(definition("x"), "keep")  # a fresh row: the cancelled one is terminal
        assert hint.wait(1.0)
        hint.clear()
        b.cancel("nothing-here")  # nothing written, nothing sent
        assert not hint.wait(0.2)
    finally:
        stop()
    stop()  # idempotent


def test_a_saved_outcomes_hint_goes_to_saved_when_the_listener_asks(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    hints: list[str] = []
    heard = threading.Semaphore(0)

    def hear(kind: str) -> Callable[[], None]:
        def call() -> None:
            hints.append(kind)
            heard.release()

        return call

    stop = a.listen(hear("wakeup"), saved=hear("saved"))
    try:
        x = b.add(definition("x"))[0]
        assert heard.acquire(timeout=1.0)
        b.save([update(x, run_count=1)], [record(x, 1)])  # a save: no reference, no stop request
        assert heard.acquire(timeout=1.0)
        b.cancel("x")
        assert heard.acquire(timeout=1.0)
        assert hints == ["wakeup", "saved", "wakeup"]
    finally:
        stop()


def test_listen_reconnects_and_calls_back_after_losing_its_connection(make_node: Node) -> None:
    name = unique_node("a")  # only this test's connections are cut
    a, b = make_node(name, poll=30.0), make_node("b")  # no probe query: LISTEN shows in pg_stat_activity
    calls = threading.Semaphore(0)
    stop = a.listen(calls.release)
    try:
        (listener,) = [pid for pid, query in backends(name) if query.startswith("LISTEN")]
        terminate([listener])
        assert calls.acquire(timeout=5), "no call after reconnecting"
        b.add(definition("x"))
        assert calls.acquire(timeout=2), "no hint after the reconnection"
    finally:
        stop()


def test_closing_the_store_stops_its_listeners(make_node: Node) -> None:
    a = make_node("a")
    a.listen(lambda: None)
    a.close()
    assert "store-listener" not in {t.name for t in threading.enumerate()}
    with pytest.raises(StoreError, match="not open"):
        a.listen(lambda: None)


# -- other processes ---------------------------------------------------------------------------


def test_the_rows_of_a_killed_node_are_claimable_once_its_leases_end(make_node: Node, pg_schema: str) -> None:
    b = make_node("b")
    for i in range(8):
        due(b, f"t{i}", ago=10 - i)
    child = spawn_node("claim", DSN, pg_schema, "1.0", "5")
    try:
        assert child.stdout is not None
        word, count, expires = child.stdout.readline().split()
        assert (word, count) == ("claimed", "5")
        assert ids(b.claim_due(10)) == ["t5", "t6", "t7"]  # the child holds the rest

        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
        wait_for_db_clock(b, float(expires))

        taken = b.claim_due(10)
        assert ids(taken) == [f"t{i}" for i in range(5)]
        assert {held.fence for held in taken} == {2}
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()
        if child.stdin is not None:
            child.stdin.close()


def run_workers(
    b: PostgresStore, schema: str, *, workers: int, tasks: int, runs: int, stall: float, kill_every: float = 0
) -> tuple[list[list[str]], int]:
    """Run ``workers`` worker processes over ``tasks`` due tasks until every one ran ``runs`` times.

    With ``kill_every``, a random worker is killed (kill -9) about that often, and replaced.
    Returns each worker's output lines and the number of kills.
    """
    now = b.db_now()
    for i in range(tasks):
        b.add(definition(f"t{i}", next_due=now - 1 - i % 5))
    rng = random.Random(11)
    seeds = iter(range(1_000_000))

    def spawn() -> subprocess.Popen[str]:
        return spawn_node("work", DSN, schema, "0.5", "8", str(runs), str(next(seeds)), str(stall))

    live = [spawn() for _ in range(workers)]
    killed: list[subprocess.Popen[str]] = []
    deadline = time.monotonic() + (300 if kill_every else 60)
    try:
        while b.next_wakeup() is not None:  # live rows left: the workers are not done
            assert time.monotonic() < deadline, "the workers never finished"
            if kill_every:
                time.sleep(rng.uniform(0.5, 1.5) * kill_every)  # the fault schedule
                victim = live.pop(rng.randrange(len(live)))
                victim.send_signal(signal.SIGKILL)
                killed.append(victim)
                live.append(spawn())
            else:
                time.sleep(0.1)
        for process in live:
            assert process.wait(timeout=30) == 0
    finally:
        for process in live + killed:
            if process.poll() is None:
                process.kill()
    output: list[list[str]] = []
    for process in live + killed:
        process.wait(timeout=10)
        assert process.stdout is not None
        assert process.stdin is not None
        output.append(process.stdout.read().splitlines())
        process.stdout.close()
        process.stdin.close()
    return output, len(killed)


def check_exactly_once(b: PostgresStore, tasks: int, runs: int) -> None:
    """The oracle: one ledger row per (task, run), none missing, every task completed."""
    stored = {t.task_id: t for t in b.tasks()}
    assert {t.status for t in stored.values()} == {"completed"}
    assert {t.run_count for t in stored.values()} == {runs}
    ledger = Counter((r.task_id, r.run) for r in b.runs(limit=10 * tasks * runs))
    expected = {(f"t{i}", run) for i in range(tasks) for run in range(1, runs + 1)}
    assert set(ledger) == expected
    assert set(ledger.values()) == {1}


def batches(lines: list[str]) -> tuple[int, int]:
    """Runs a worker tried to commit, and ledger rows that landed."""
    counts = [line.split()[1:] for line in lines if line.startswith("batch")]
    return sum(int(tried) for tried, _ in counts), sum(int(new) for _, new in counts)


def test_competing_processes_commit_each_run_exactly_once(make_node: Node, pg_schema: str) -> None:
    b = make_node("b")
    tasks, runs = 150, 3
    output, _ = run_workers(b, pg_schema, workers=3, tasks=tasks, runs=runs, stall=0.05)

    check_exactly_once(b, tasks, runs)
    per_worker = [batches(lines) for lines in output]
    assert sum(landed for _, landed in per_worker) == tasks * runs
    assert sum(landed > 0 for _, landed in per_worker) >= 2  # they did compete
    assert sum(tried for tried, _ in per_worker) >= tasks * runs  # more: stalled runs, fenced out


@pytest.mark.stress
def test_competing_processes_commit_each_run_exactly_once_under_kill_9_stress(
    make_node: Node, pg_schema: str
) -> None:
    b = make_node("b", run_history=1_000_000)  # the oracle reads the whole ledger
    tasks, runs = 2000, 15  # 30,000 runs: a kill -9 about every 0.5 s for some 20 s
    output, kills = run_workers(b, pg_schema, workers=4, tasks=tasks, runs=runs, stall=0.01, kill_every=0.5)

    check_exactly_once(b, tasks, runs)
    tried = sum(batches(lines)[0] for lines in output)
    stalls = sum(line == "stalled" for lines in output for line in lines)
    print(f"{kills} workers killed, {stalls} stalls, {tried - tasks * runs} runs tried twice or more")


def test_a_renewal_due_within_extends_only_the_leases_ending_soon_and_writes_nothing_else(
    make_node: Node,
) -> None:
    a, b = make_node("a", lease=30.0), make_node("b")
    due(a, "x")
    (held,) = a.claim_due(1)

    (fresh,) = a.renew([held], due_within=20.0)  # ends in ~30 s: not due, left as it stands
    assert (fresh.expires, fresh.fence, fresh.task) == (held.expires, held.fence, held.task)
    assert fresh.db_now >= held.db_now

    (renewed,) = a.renew([fresh], due_within=31.0)  # ends within 31 s: extended
    assert renewed.expires > held.expires
    assert b.claim_due(1) == []
    assert a.renew([renewed], due_within=20.0) != []
    with pytest.raises(ValueError, match="due_within"):
        a.renew([renewed], due_within=-1.0)
