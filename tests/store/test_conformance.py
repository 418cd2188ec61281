"""The Store protocol's contract, run against every backend in ``STORE_FACTORIES``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from actors.errors import DuplicateTaskError, StoreError
from actors.store import Store, TaskDefinition
from tests.store.conftest import StoreFactory
from tests.store.helpers import T0, counters, definition, definition_part, record, update


def reopen(factory: StoreFactory, store: Store, **options: Any) -> Store:
    store.close()
    return factory.open(**options)


# -- add, get, load ----------------------------------------------------------------------------


def test_add_get_load_round_trip(factory: StoreFactory, store: Store) -> None:
    odd = definition(
        "odd",
        args_json='[ "héllo", null,\n 1e-3 ]',  # verbatim: not re-encoded
        kwargs_json="{}",
        trigger_json='{"kind":"once"}',
        options_json="{ }",
        next_due=None,
    )
    added = [store.add(definition("a"))[0], store.add(odd)[0], store.add(definition("c"))[0]]

    assert [t.seq for t in added] == sorted({t.seq for t in added})
    for task, given in zip(added, [definition("a"), odd, definition("c")], strict=True):
        assert definition_part(task) == given
        assert task.status == "scheduled"
        assert task.live
        assert counters(task) == (0, 0, 0, None, None)
        assert store.get(task.task_id) == task
    assert store.get("nope") is None
    assert store.load() == added

    store = reopen(factory, store)
    assert store.load() == added
    assert store.tasks() == added


def test_add_refuses_a_live_id_by_default(store: Store) -> None:
    first, _ = store.add(definition("a"))

    with pytest.raises(DuplicateTaskError, match="'a'"):
        store.add(definition("a", fn_ref="other:fn"))
    assert store.get("a") == first


def test_add_keep_leaves_the_row_untouched(store: Store) -> None:
    first, _ = store.add(definition("a"))

    kept, written = store.add(definition("a", fn_ref="other:fn", next_due=T0), "keep")

    assert (kept, written) == (first, False)
    assert store.get("a") == first


def test_add_replace_swaps_the_definition_and_keeps_counters(factory: StoreFactory, store: Store) -> None:
    first, _ = store.add(definition("a"))
    store.save(
        [
            update(
                first,
                run_count=3,
                failure_count=2,
                consecutive_failures=1,
                last_error="ValueError: bad",
                last_outcome="failed",
            )
        ]
    )
    new = definition(
        "a",
        fn_ref="jobs.other:run",
        args_json="[2]",
        kwargs_json='{"x": 1}',
        trigger_json='{"kind": "delay", "delay": 5.0}',
        options_json='{"name": "renamed"}',
        next_due=T0 + 5,
    )

    replaced, written = store.add(new, "replace")

    assert written
    assert definition_part(replaced) == new
    assert replaced.seq == first.seq
    assert replaced.status == "scheduled"
    assert counters(replaced) == (3, 2, 1, "ValueError: bad", "failed")
    assert reopen(factory, store).get("a") == replaced


@pytest.mark.parametrize("if_exists", ["error", "keep", "replace"])
@pytest.mark.parametrize("end", ["cancelled", "completed", "failed"])
def test_add_over_a_terminal_row_starts_afresh(store: Store, if_exists: str, end: str) -> None:
    old, _ = store.add(definition("a"))
    if end == "cancelled":
        assert store.cancel("a")
    else:
        store.save([update(old, status=end, next_due=None, run_count=1, last_outcome=end)])

    fresh, written = store.add(definition("a", fn_ref="jobs.new:fn"), if_exists)  # type: ignore[arg-type]

    assert written
    assert fresh.seq > old.seq
    assert fresh.status == "scheduled"
    assert fresh.fn_ref == "jobs.new:fn"
    assert counters(fresh) == (0, 0, 0, None, None)
    assert store.get("a") == fresh


def test_add_rejects_bad_arguments(store: Store) -> None:
    with pytest.raises(ValueError, match="if_exists"):
        store.add(definition("a"), "overwrite")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TaskDefinition"):
        store.add({"task_id": "a"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="next_due"):
        definition("a", next_due=float("nan"))
    with pytest.raises(TypeError, match="args_json"):
        definition("a", args_json=[1])
    assert store.tasks() == []


# -- add_many ------------------------------------------------------------------------------------


def test_add_many_commits_fresh_rows_in_order(factory: StoreFactory, store: Store) -> None:
    store.add(definition("before"))
    given = [definition(f"bulk-{i}", args_json=f"[{i}]", next_due=T0 + i) for i in range(5)]
    given.append(definition("other", fn_ref="jobs.other:fn", options_json='{"name": "x"}'))

    seqs = store.add_many(given)

    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(given)
    rows = [store.get(task.task_id) for task in given]
    assert [row.seq for row in rows if row is not None] == seqs
    for row, task in zip(rows, given, strict=True):
        assert row is not None
        assert definition_part(row) == task
        assert row.status == "scheduled"
        assert counters(row) == (0, 0, 0, None, None)
    assert [t.task_id for t in reopen(factory, store).load()] == ["before"] + [t.task_id for t in given]


def test_add_many_writes_nothing_when_an_id_is_taken(store: Store) -> None:
    store.add(definition("taken"))
    assert store.cancel("taken")  # terminal, and still its id

    with pytest.raises(DuplicateTaskError):
        store.add_many([definition("new-1"), definition("taken"), definition("new-2")])
    with pytest.raises(DuplicateTaskError):
        store.add_many([definition("twice"), definition("twice")])
    with pytest.raises(TypeError, match="TaskDefinition"):
        store.add_many([definition("fine"), {"task_id": "a"}])  # type: ignore[list-item]

    assert [t.task_id for t in store.tasks()] == ["taken"]
    assert store.add_many([]) == []


# -- cancel --------------------------------------------------------------------------------------


def test_cancel_is_committed_when_it_returns(factory: StoreFactory, store: Store) -> None:
    store.add(definition("a"))
    store.add(definition("b"))

    assert store.cancel("a") is True
    assert store.cancel("a") is False
    assert store.cancel("unknown") is False

    store = reopen(factory, store)
    cancelled = store.get("a")
    assert cancelled is not None
    assert (cancelled.status, cancelled.next_due, cancelled.live) == ("cancelled", None, False)
    assert [t.task_id for t in store.load()] == ["b"]
    assert [t.task_id for t in store.tasks()] == ["a", "b"]
    assert [t.task_id for t in store.tasks(include_terminal=False)] == ["b"]


# -- save: updates and the ledger --------------------------------------------------------------


def test_save_applies_updates_and_appends_the_ledger(factory: StoreFactory, store: Store) -> None:
    a, _ = store.add(definition("a"))
    b, _ = store.add(definition("b"))

    new = store.save(
        [
            update(a, next_due=T0 + 120, run_count=1, last_outcome="completed"),
            update(
                b,
                status="failed",
                next_due=None,
                run_count=1,
                failure_count=1,
                consecutive_failures=1,
                last_error="boom",
                last_outcome="failed",
            ),
        ],
        [record(a, 1), record(b, 1, outcome="failed", error="boom")],
    )

    assert new == 2
    store = reopen(factory, store)
    stored_a, stored_b = store.get("a"), store.get("b")
    assert stored_a is not None
    assert stored_b is not None
    assert (stored_a.status, stored_a.next_due, counters(stored_a)) == (
        "scheduled",
        T0 + 120,
        (1, 0, 0, None, "completed"),
    )
    assert (stored_b.status, stored_b.next_due, counters(stored_b)) == (
        "failed",
        None,
        (1, 1, 1, "boom", "failed"),
    )
    assert [t.task_id for t in store.load()] == ["a"]
    assert store.runs() == [record(b, 1, outcome="failed", error="boom"), record(a, 1)]
    assert store.runs("a") == [record(a, 1)]
    assert store.runs(limit=1) == [record(b, 1, outcome="failed", error="boom")]
    assert store.save() == 0


def test_a_run_is_committed_once(store: Store) -> None:
    a, _ = store.add(definition("a"))
    missed = record(a, 2, started=None, outcome="missed")

    assert store.save([], [record(a, 1)]) == 1
    assert store.save([], [record(a, 1, outcome="failed", error="again")]) == 0  # ignored
    assert store.save([], [record(a, 1), missed, missed]) == 1

    assert store.runs() == [missed, record(a, 1)]


def test_save_never_undoes_a_committed_cancel(store: Store) -> None:
    a, _ = store.add(definition("a"))
    assert store.cancel("a")

    # The scheduler reports a run that was in flight when the caller cancelled.
    store.save([update(a, next_due=T0 + 120, run_count=1, last_outcome="completed")], [record(a, 1)])

    stored = store.get("a")
    assert stored is not None
    assert (stored.status, stored.next_due, counters(stored)) == (
        "cancelled",
        None,
        (1, 0, 0, None, "completed"),
    )
    store.save([update(a, status="failed", next_due=None)])
    assert store.get("a").status == "cancelled"  # type: ignore[union-attr]


def test_a_late_update_never_lands_on_a_new_incarnation(store: Store) -> None:
    old, _ = store.add(definition("a"))
    assert store.cancel("a")
    new, _ = store.add(definition("a", fn_ref="jobs.new:fn"))

    saved = store.save(
        [update(old, status="completed", next_due=None, run_count=1)],
        [record(old, 1), record(new, 1)],
    )

    assert saved == 2  # run 1 of each incarnation: two different runs
    assert store.get("a") == new
    assert {(r.task_seq, r.run) for r in store.runs("a")} == {(old.seq, 1), (new.seq, 1)}


def test_updates_of_one_row_in_one_save_apply_in_order(store: Store) -> None:
    a, _ = store.add(definition("a"))
    b, _ = store.add(definition("b"))

    store.save(
        [
            update(a, next_due=T0 + 120, run_count=1),
            update(b, run_count=1),
            update(a, status="completed", next_due=None, run_count=2),
            update(a, next_due=T0 + 180, run_count=3),  # finds the row terminal: counters only
        ]
    )

    stored = store.get("a")
    assert stored is not None
    assert (stored.status, stored.next_due, stored.run_count) == ("completed", None, 3)
    assert store.get("b").run_count == 1  # type: ignore[union-attr]


def test_save_validates_its_batch(store: Store) -> None:
    a, _ = store.add(definition("a"))
    with pytest.raises(TypeError, match="TaskUpdate"):
        store.save([record(a, 1)], [])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no next due"):
        update(a, status="completed")
    with pytest.raises(ValueError, match="status"):
        update(a, status="running")
    with pytest.raises(ValueError, match="run must be"):
        record(a, 0)
    assert store.runs() == []


# -- minted ids ----------------------------------------------------------------------------------


def test_minted_numbers_are_never_handed_out_twice(factory: StoreFactory, store: Store) -> None:
    assert store.minted_high_water() == 0
    assert store.reserve_minted(100) == range(1, 101)
    assert store.reserve_minted(1) == range(101, 102)

    store = reopen(factory, store)

    assert store.minted_high_water() == 101
    assert store.reserve_minted(10) == range(102, 112)
    with pytest.raises(ValueError, match="count"):
        store.reserve_minted(0)


# -- threads -----------------------------------------------------------------------------------


def test_concurrent_adds_and_cancels_from_8_threads_are_all_committed(
    factory: StoreFactory, store: Store
) -> None:
    threads, per_thread = 8, 40
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def caller(n: int) -> None:
        try:
            start.wait(timeout=10)
            for i in range(per_thread):
                store.add(definition(f"t{n}-{i}"))
                if i % 4 == 3:
                    assert store.cancel(f"t{n}-{i}")
        except BaseException as error:  # reported by the test below
            errors.append(error)

    workers = [threading.Thread(target=caller, args=(n,), name=f"caller-{n}") for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)

    assert not errors
    store = reopen(factory, store)
    tasks = {t.task_id: t.status for t in store.tasks()}
    assert len(tasks) == threads * per_thread
    assert sum(status == "cancelled" for status in tasks.values()) == threads * per_thread // 4
    assert len({t.seq for t in store.tasks()}) == threads * per_thread


# -- bounds --------------------------------------------------------------------------------------


def test_the_ledger_keeps_the_newest_rows(factory: StoreFactory, store: Store) -> None:
    store = reopen(factory, store, run_history=20)
    tasks = [store.add(definition(f"t{i}"))[0] for i in range(3)]
    batch = 7
    for first in range(1, 101, batch):
        store.save([], [record(t, run) for run in range(first, first + batch) for t in tasks])
        assert len(store.runs(limit=10_000)) <= 20 + 20 // 10 + batch * len(tasks)

    newest = store.runs(limit=20)
    store = reopen(factory, store, run_history=20)  # opening prunes to the bound exactly
    assert store.runs(limit=10_000) == newest
    assert [(r.task_id, r.run) for r in newest[:3]] == [("t2", 105), ("t1", 105), ("t0", 105)]


def test_terminal_rows_are_bounded_and_live_ones_never_pruned(factory: StoreFactory, store: Store) -> None:
    store = reopen(factory, store, task_history=10)
    for i in range(60):
        store.add(definition(f"t{i}"))
    for i in range(0, 60, 2):  # 30 ended, in this order
        if i % 4 == 0:
            assert store.cancel(f"t{i}")
        else:
            task = store.get(f"t{i}")
            assert task is not None
            store.save([update(task, status="completed", next_due=None, run_count=1)])
    a_live = store.get("t1")
    assert a_live is not None
    store.save([update(a_live, run_count=1)])  # a save prunes what cancels left behind
    terminal = [t for t in store.tasks() if not t.live]
    assert len(terminal) <= 10 + 10 // 10 + 1

    store = reopen(factory, store, task_history=10)

    assert [t.task_id for t in store.tasks() if not t.live] == [f"t{i}" for i in range(40, 60, 2)]
    assert [t.task_id for t in store.load()] == [f"t{i}" for i in range(1, 60, 2)]


# -- closing -----------------------------------------------------------------------------------


def test_a_closed_store_refuses_calls_and_closes_twice(store: Store) -> None:
    store.add(definition("a"))
    store.close()
    store.close()

    with pytest.raises(StoreError, match="not open"):
        store.add(definition("b"))
    with pytest.raises(StoreError, match="not open"):
        store.load()


def test_definition_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        TaskDefinition("a", "m:f", "[]", "{}", "{}", "{}", None)  # type: ignore[call-arg]
