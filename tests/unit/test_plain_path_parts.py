"""The pieces the plain path of ``schedule_once`` and a handle's cancel are made of (issue 23)."""

from __future__ import annotations

import functools

from actors import Scheduler
from actors.core.task_record import default_name, makes_coroutine, plain_function, plain_name
from actors.runtime.minting import MEMORY_PREFIX, IdMint


def _plain() -> None:
    pass


async def _coroutine() -> None:
    pass


class _Holder:
    def method(self) -> None:
        pass


def test_plain_name_is_default_name_for_a_plain_function_and_none_otherwise() -> None:
    for fn in (_plain, _Holder().method, lambda: None):
        assert plain_function(fn)
        assert not makes_coroutine(fn)
        assert plain_name(fn) == default_name(fn)
    for fn in (_coroutine, functools.partial(_plain), print, _Holder()):
        assert not plain_function(fn)
        assert plain_name(fn) is None


def test_memory_ids_without_a_store_share_the_numbers_of_every_other_minted_id() -> None:
    mint = IdMint()
    assert [mint(), next(mint.memory_ids), mint.memory(), *mint.many(2), *mint.memory_many(1)] == [
        f"task-{number}" for number in range(1, 7)
    ]


def test_memory_ids_with_a_store_have_their_own_space_and_never_ask_the_store() -> None:
    asked: list[int] = []

    def reserve(count: int) -> range:
        asked.append(count)
        return range(100, 100 + count)

    mint = IdMint(reserve)
    assert [next(mint.memory_ids), mint.memory(), *mint.memory_many(2)] == [
        f"{MEMORY_PREFIX}{number}" for number in range(1, 5)
    ]
    assert asked == []
    assert mint() == "task-100"


def test_a_plain_task_and_its_cancel_take_the_fast_path_and_stay_ordered() -> None:
    with Scheduler(workers=1) as scheduler:
        handles = [scheduler.schedule_once(_plain, delay=3600.0) for _ in range(1000)]
        assert [handle.task_id for handle in handles] == [f"task-{n}" for n in range(1, 1001)]
        assert all(handle.cancel() for handle in handles)
        assert not any(handle.cancel() for handle in handles)  # a second cancel changes nothing
        scheduler.settle(timeout=30)
        assert all(handle.done() for handle in handles)
        assert scheduler.tasks() == []
