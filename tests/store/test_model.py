"""Random sequences of store calls against a model of the contract, for every backend."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.errors import DuplicateTaskError
from actors.store import Store, StoredTask
from tests.store.conftest import StoreFactory
from tests.store.helpers import T0, definition, record, update

IDS = ["a", "b", "c"]
TERMINAL = ["completed", "failed", "cancelled"]


@dataclass(frozen=True)
class Row:
    """What the model expects of one stored row (``updated_at`` aside)."""

    seq: int
    fn_ref: str
    next_due: float | None
    status: str = "scheduled"
    run_count: int = 0
    failure_count: int = 0
    last_outcome: str | None = None


def view(task: StoredTask) -> Row:
    assert task.args_json == definition(task.task_id).args_json  # verbatim, every time
    return Row(
        task.seq,
        task.fn_ref,
        task.next_due,
        task.status,
        task.run_count,
        task.failure_count,
        task.last_outcome,
    )


adds = st.tuples(
    st.just("add"), st.sampled_from(IDS), st.sampled_from(["error", "keep", "replace"]), st.integers(0, 3)
)
cancels = st.tuples(st.just("cancel"), st.sampled_from(IDS))
saves = st.tuples(
    st.just("save"),
    st.sampled_from(IDS),
    st.booleans(),  # stale: names an incarnation that is gone
    st.sampled_from(["scheduled", *TERMINAL]),
    st.integers(1, 4),  # the run it reports
)
reopens = st.tuples(st.just("reopen"))
operations = st.lists(st.one_of(adds, cancels, saves, reopens), max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_the_store_behaves_like_its_model(factory: StoreFactory, ops: list[tuple[Any, ...]]) -> None:
    location = factory.fresh_location()
    store: Store = factory.open(location=location)
    model: dict[str, Row] = {}
    ledger: set[tuple[int, int]] = set()
    highest_seq = 0
    try:
        for op in ops:
            if op[0] == "add":
                _, task_id, if_exists, variant = op
                given_ = definition(task_id, fn_ref=f"jobs:fn{variant}", next_due=T0 + variant)
                old = model.get(task_id)
                if old is not None and old.status == "scheduled" and if_exists == "error":
                    with pytest.raises(DuplicateTaskError):
                        store.add(given_, if_exists)
                    continue
                task, written = store.add(given_, if_exists)
                if old is None or old.status != "scheduled":
                    assert task.seq > highest_seq  # a fresh row, a never-used seq
                    highest_seq = task.seq
                    model[task_id] = Row(task.seq, given_.fn_ref, given_.next_due)
                elif if_exists == "replace":
                    model[task_id] = replace(old, fn_ref=given_.fn_ref, next_due=given_.next_due)
                assert written == (if_exists != "keep" or old is None or old.status != "scheduled")
                assert view(task) == model[task_id]
            elif op[0] == "cancel":
                old = model.get(op[1])
                live = old is not None and old.status == "scheduled"
                assert store.cancel(op[1]) == live
                if old is not None and live:
                    model[op[1]] = replace(old, status="cancelled", next_due=None)
            elif op[0] == "save":
                _, task_id, stale, status, run = op
                old = model.get(task_id)
                if old is None:
                    continue
                stored = store.get(task_id)
                assert stored is not None
                seq = stored.seq - 1 if stale else stored.seq  # seqs are unique: seq - 1 is not this row's
                stored = replace(stored, seq=seq)
                due = T0 + 60 * run if status == "scheduled" else None
                failed = int(status == "failed")
                change = update(
                    stored,
                    status=status,
                    next_due=due,
                    run_count=run,
                    failure_count=failed,
                    last_outcome=status,
                )
                new = store.save([change], [record(stored, run), record(stored, run)])
                assert new == int((seq, run) not in ledger)
                ledger.add((seq, run))
                if not stale:
                    keep = old.status != "scheduled"  # a terminal row keeps its status
                    model[task_id] = replace(
                        old,
                        status=old.status if keep else status,
                        next_due=None if keep else due,
                        run_count=run,
                        failure_count=failed,
                        last_outcome=status,
                    )
            else:
                store.close()
                store = factory.open(location=location)
            assert {t.task_id: view(t) for t in store.tasks()} == model
        assert [t.task_id for t in store.load()] == [
            task_id
            for task_id, row in sorted(model.items(), key=lambda item: item[1].seq)
            if row.status == "scheduled"
        ]
    finally:
        store.close()
