"""What a node does with a lease it holds: start the run, save its outcome; and how cancels and
replaces from other nodes meet a run in flight (PostgreSQL only).

Nodes are ``PostgresStore`` objects on one schema (``make_node``); time is the database's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from actors.store import Lease, PostgresStore, RunInFlight, StoredTask
from actors.store.postgres_schema import SCHEMA_VERSION
from tests.store.helpers import definition, record, update
from tests.store.pg import DSN, admin, wait_for_db_clock

Node = Callable[..., PostgresStore]


def due(store: PostgresStore, task_id: str, ago: float = 1.0) -> StoredTask:
    return store.add(definition(task_id, next_due=store.db_now() - ago))[0]


# -- start ---------------------------------------------------------------------------------------


def test_start_says_when_on_the_database_clock_and_renews_the_lease(make_node: Node) -> None:
    a = make_node("a", lease=30.0)
    due(a, "x")
    (held,) = a.claim_due(1)

    started = a.start(held, seal=False)

    assert started is not None
    assert held.db_now <= started <= a.db_now()
    (renewed,) = a.renew([held])
    assert renewed.expires >= started + 30.0
    assert a.start(held, seal=False) is not None  # starting twice is starting once


def test_start_many_decides_each_start_on_its_own_in_one_statement(make_node: Node) -> None:
    a, b = make_node("a", lease=30.0), make_node("b")
    for task_id in ("x", "y", "z"):
        due(a, task_id)
    held = {lease.task.task_id: lease for lease in a.claim_due(3)}
    assert b.cancel("y")  # committed before the start: it wins

    started = a.start_many([(held["x"], True), (held["y"], False), (held["z"], False)])

    assert None not in (started[0], started[2])
    assert started[1] is None
    assert b.cancel("x") is False  # sealed: a one-time run in progress refuses a cancel
    assert b.cancel("z")  # not sealed
    assert a.start_many([]) == []
    assert b.start_many([(held["x"], False)]) == [None]  # another node's lease is not b's to start


def test_a_cancel_committed_before_the_start_wins(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    due(a, "x")
    (held,) = a.claim_due(1)

    assert b.cancel("x") is True

    assert a.start(held, seal=True) is None
    assert a.get("x").status == "cancelled"  # type: ignore[union-attr]


def test_a_lost_lease_cannot_start(make_node: Node) -> None:
    a, b = make_node("a", lease=0.3), make_node("b")
    due(a, "x")
    (lost,) = a.claim_due(1)
    wait_for_db_clock(b, lost.expires)
    (won,) = b.claim_due(1)

    assert a.start(lost, seal=False) is None
    assert a.start(won, seal=False) is None  # b's lease is not a's to start
    assert b.start(won, seal=False) is not None


def test_a_sealed_run_in_flight_refuses_a_cancel_until_its_lease_ends(make_node: Node) -> None:
    a, b = make_node("a", lease=0.5), make_node("b")
    due(a, "once")
    due(a, "every")
    sealed, recurring = a.claim_due(2)
    assert a.start(sealed, seal=True) is not None
    assert a.start(recurring, seal=False) is not None

    assert b.cancel(sealed.task.task_id) is False  # a one-time run in progress: it decides
    assert b.cancel(recurring.task.task_id) is True  # a recurring one: no further run
    assert a.get(sealed.task.task_id).status == "scheduled"  # type: ignore[union-attr]

    (renewed,) = a.renew([sealed])
    wait_for_db_clock(b, renewed.expires)  # the owner died: the run counts as not run
    assert b.cancel(sealed.task.task_id) is True


def test_runs_in_flight_shows_every_node_s_claims_and_starts(make_node: Node) -> None:
    a, b = make_node("a", lease=30.0), make_node("b", lease=30.0)
    x, y = due(a, "x", ago=2), due(a, "y")
    (held_x,) = a.claim_due(1)
    (held_y,) = b.claim_due(1)
    b.start(held_y, seal=True)

    assert a.runs_in_flight() == [
        RunInFlight(task_id="x", seq=x.seq, owner="a", expires=held_x.expires, started=False),
        RunInFlight(task_id="y", seq=y.seq, owner="b", expires=b.runs_in_flight()[1].expires, started=True),
    ]
    a.save_outcomes([update(x, run_count=1, status="completed", next_due=None, fence=held_x.fence)])
    assert [run.task_id for run in b.runs_in_flight()] == ["y"]


# -- outcomes ------------------------------------------------------------------------------------


def test_save_outcomes_names_the_rows_fenced_out(make_node: Node) -> None:
    a, b = make_node("a", lease=0.3), make_node("b")
    x, y = due(a, "x", ago=2), due(a, "y")
    lost_x, held_y = a.claim_due(2)
    wait_for_db_clock(b, lost_x.expires)
    b.claim_due(1)  # takes x (its lease ended); y's ended too, but b takes one only
    # y's lease ended as well, but nobody claimed it: it is still a's

    fenced_out = a.save_outcomes(
        [update(x, run_count=1, fence=lost_x.fence), update(y, run_count=1, fence=held_y.fence)],
        [record(x, 1), record(y, 1)],
    )

    assert fenced_out == {x.seq}
    assert [r.task_id for r in a.runs()] == ["y"]
    assert a.save_outcomes() == frozenset()


def test_the_outcome_of_a_row_that_is_gone_is_kept(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    old = due(a, "x")
    (held,) = a.claim_due(1)
    a.start(held, seal=False)  # a recurring run, cancelled mid-run by b, then its id reused
    assert b.cancel("x")
    fresh, written = b.add(definition("x"))
    assert written
    assert fresh.seq != old.seq

    fenced_out = a.save_outcomes([update(old, run_count=1, fence=held.fence)], [record(old, 1)])

    assert fenced_out == frozenset()  # nobody can claim that incarnation again: this run counts
    assert [(r.task_seq, r.run) for r in a.runs()] == [(old.seq, 1)]
    assert a.get("x") == fresh


def test_a_replace_during_a_run_keeps_the_new_definition_and_the_run_s_outcome(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    task = due(a, "x")
    (held,) = a.claim_due(1)
    a.start(held, seal=True)
    later = a.db_now() + 600
    replaced, _ = b.add(definition("x", fn_ref="jobs.new:fn", next_due=later), "replace")

    # The owner saves what its (old) definition says: a one-time run that ended the task.
    a.save_outcomes(
        [update(task, status="completed", next_due=None, run_count=1, fence=held.fence)],
        [record(task, 1)],
    )

    stored = a.get("x")
    assert stored is not None
    assert (stored.status, stored.next_due, stored.fn_ref) == ("scheduled", later, "jobs.new:fn")
    assert stored.run_count == 1  # the run counted
    assert len(a.runs()) == 1
    assert a.runs_in_flight() == []  # the lease ended
    assert replaced.seq == task.seq


def test_a_replace_of_a_row_nobody_holds_leaves_later_outcomes_alone(make_node: Node) -> None:
    a = make_node("a")
    task = due(a, "x")
    b_row, _ = a.add(definition("x", next_due=a.db_now() - 1), "replace")
    (held,) = a.claim_due(1)
    a.save_outcomes([update(task, status="completed", next_due=None, run_count=1, fence=held.fence)])
    assert a.get("x").status == "completed"  # type: ignore[union-attr]
    assert b_row.seq == task.seq


# -- the layout ----------------------------------------------------------------------------------


def test_a_version_1_store_is_migrated_and_keeps_its_rows(pg_schema: str) -> None:
    with PostgresStore(DSN, schema=pg_schema) as store:
        store.add(definition("kept"))
    with admin() as db:  # make it what version 1 created
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        _make_version_2(db)
        db.execute(
            "ALTER TABLE task DROP COLUMN started_fence, DROP COLUMN sealed_fence, "
            "DROP COLUMN replaced_fence, DROP COLUMN interrupt_fence"
        )
        db.execute("UPDATE store_meta SET schema_version = 1")

    with PostgresStore(DSN, schema=pg_schema, lease=30.0) as store:
        assert store.get("kept") is not None
        task = due(store, "x")
        (held,) = store.claim_due(1)  # "kept" is due in 2027: only x
        assert held.task == task
        assert store.start(held, seal=True) is not None
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        version = db.execute("SELECT schema_version FROM store_meta").fetchone()
        assert version == (SCHEMA_VERSION,)
        try:
            db.execute("SELECT started_fence, sealed_fence, replaced_fence FROM task")
            db.execute("SELECT dependency_seq, waiter_seq, dependency_id, delay FROM task_after")
            db.execute("SELECT attempt, reason, node, manual, value_json, value_note FROM run")
        except psycopg.Error as error:  # pragma: no cover - the assertion's message
            raise AssertionError(f"the columns were not added: {error}") from error


def _make_version_5(db: psycopg.Connection[Any]) -> None:
    """Undo the step after version 5: the count of runs lost with their node (v6)."""
    db.execute("ALTER TABLE task DROP COLUMN lost_runs")
    db.execute("UPDATE store_meta SET schema_version = 5")


def _make_version_2(db: psycopg.Connection[Any]) -> None:
    """Undo the steps after version 2: the lost-run count (v6), the operations' columns (v5) and
    task_free as version 2 made it, the ledger's columns (v4) and the edges of schedule_after (v3)."""
    _make_version_5(db)
    db.execute("ALTER TABLE task DROP COLUMN paused, DROP COLUMN grid_due, DROP COLUMN manual_fence")
    db.execute("DROP INDEX IF EXISTS task_free")
    db.execute("CREATE INDEX task_free ON task (next_due, seq) WHERE status = 'scheduled' AND owner IS NULL")
    db.execute(
        "ALTER TABLE run DROP COLUMN attempt, DROP COLUMN reason, DROP COLUMN node, "
        "DROP COLUMN manual, DROP COLUMN value_json, DROP COLUMN value_note"
    )
    db.execute("DROP TABLE task_after")
    db.execute("UPDATE store_meta SET schema_version = 2")


def test_a_version_2_store_is_migrated_and_a_paused_row_is_not_claimed(pg_schema: str) -> None:
    with PostgresStore(DSN, schema=pg_schema) as store:
        store.add(definition("kept"))
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        _make_version_2(db)

    with PostgresStore(DSN, schema=pg_schema, lease=30.0) as store:
        assert store.get("kept") is not None
        assert store.paused_ids() == frozenset()
        due(store, "x")
        assert store.pause("x") is True
        assert store.paused_ids() == {"x"}
        assert store.claim_due(1) == []  # paused: passed over
        assert store.run_now("x") is True  # an extra run is claimable, paused or not
        (held,) = store.claim_due(1)
        assert held.grid_due is not None
        assert store.start(held, seal=False) is not None
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        assert db.execute("SELECT schema_version FROM store_meta").fetchone() == (SCHEMA_VERSION,)
        predicate = db.execute(
            "SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = 'task_free'::regclass"
        ).fetchone()
        assert predicate is not None
        assert "paused" in predicate[0]


def test_a_version_5_store_is_migrated_and_counts_lost_runs(pg_schema: str) -> None:
    with PostgresStore(DSN, schema=pg_schema) as store:
        store.add(definition("kept"))
        due(store, "x")
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        _make_version_5(db)

    with PostgresStore(DSN, schema=pg_schema, node="a", lease=0.3) as a:
        assert a.get("kept") is not None
        (held,) = a.claim_due(1)
        assert held.lost_runs == 0
        start_and_die(a, held)
        with PostgresStore(DSN, schema=pg_schema, node="b") as b:
            (retaken,) = b.claim_due(1)
        assert retaken.lost_runs == 1  # the old rows count from none
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        assert db.execute("SELECT schema_version FROM store_meta").fetchone() == (SCHEMA_VERSION,)
        assert db.execute("SELECT lost_runs FROM task WHERE task_id = 'kept'").fetchone() == (0,)


# -- the poison-pill count -----------------------------------------------------------------------


def start_and_die(store: PostgresStore, held: Lease) -> None:
    """Start the run of ``held``, then return once its lease (renewed by the start) has ended."""
    started = store.start(held, seal=True)
    assert started is not None
    wait_for_db_clock(store, started + store.lease)


def test_a_run_retaken_after_its_started_lease_ended_counts_one_loss_more(make_node: Node) -> None:
    a, b = make_node("a", lease=0.3), make_node("b", lease=0.3)
    due(a, "x")
    held = a.claim_due(1)[0]
    for losses in range(1, 4):
        start_and_die(a, held)
        (held,) = b.claim_due(1)
        assert held.lost_runs == losses
        a, b = b, a


def test_a_claim_that_never_started_counts_no_loss(make_node: Node) -> None:
    a, b = make_node("a", lease=0.3), make_node("b", lease=0.3)
    due(a, "x")
    (held,) = a.claim_due(1)
    start_and_die(a, held)
    (retaken,) = b.claim_due(1)  # one loss: a had started it
    assert retaken.lost_runs == 1
    wait_for_db_clock(a, retaken.expires)  # b dies before it starts the run: not a loss
    (again,) = a.claim_due(1)
    assert again.lost_runs == 1
    a.release([again])  # given back before the start: a free row
    (fresh,) = b.claim_due(1)
    assert fresh.lost_runs == 0  # a claim of a free row starts from none


def test_an_outcome_that_lands_clears_the_count(make_node: Node) -> None:
    a, b = make_node("a", lease=0.3), make_node("b", lease=0.3)
    task = due(a, "x")
    (held,) = a.claim_due(1)
    start_and_die(a, held)
    (retaken,) = b.claim_due(1)
    assert retaken.lost_runs == 1
    assert b.start(retaken, seal=False) is not None
    next_due = b.db_now() - 1
    b.save_outcomes([update(task, status="scheduled", next_due=next_due, run_count=1, fence=retaken.fence)])
    (next_run,) = a.claim_due(1)  # the next run of a recurring task: its own count
    assert next_run.lost_runs == 0


def test_max_lost_runs_must_be_an_int_of_at_least_one() -> None:
    assert PostgresStore(DSN, max_lost_runs=1).max_lost_runs == 1
    assert PostgresStore(DSN).max_lost_runs == 3
    for bad in (0, -1, 2.0, True, "3", None):
        with pytest.raises(ValueError, match=r"max_lost_runs must be an int >= 1, got"):
            PostgresStore(DSN, max_lost_runs=bad)  # type: ignore[arg-type]


def test_references_names_what_a_node_must_import_to_claim_what_was_written(make_node: Node) -> None:
    a, b = make_node("a"), make_node("b")
    a.add(definition("x", fn_ref="jobs.one:fn"))
    refs, cursor = b.references(0)
    assert refs == {"jobs.one:fn"}
    a.add(definition("y", fn_ref="jobs.two:fn"))
    a.add(definition("z", fn_ref="jobs.gone:fn"))
    a.cancel("z")  # no longer live: nothing to claim
    refs, cursor = b.references(cursor)
    assert refs in ({"jobs.two:fn"}, {"jobs.one:fn", "jobs.two:fn"})  # rows may come twice
    assert b.references(cursor + 1_000_000)[0] == set()


def test_an_interrupting_cancel_wins_against_a_sealed_run_and_asks_it_to_stop(make_node: Node) -> None:
    a, b = make_node("a", lease=30.0), make_node("b")
    due(a, "x")
    (held,) = a.claim_due(1)
    a.start(held, seal=True)
    (renewed,) = a.renew([held])
    assert not renewed.stop_requested

    assert b.cancel("x") is False
    assert b.cancel("x", interrupt=True) is True

    (renewed,) = a.renew([held])
    assert renewed.stop_requested
    assert a.get("x").status == "cancelled"  # type: ignore[union-attr]
