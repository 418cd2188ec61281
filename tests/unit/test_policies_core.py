"""The pure policy decisions (``actors/core/policies.py``) against a brute-force reference (hypothesis)."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from actors.core.policies import (
    DEFAULT_POLICIES,
    Policies,
    catch_up,
    check_policies,
    jitter_delay,
    on_slot,
    slots_between,
)


def grid(first: float, interval: float) -> Callable[[float], float | None]:
    def after(at: float) -> float | None:
        slot = 0
        while first + slot * interval <= at:
            slot += 1
        return first + slot * interval

    return after


@given(
    interval=st.sampled_from([0.5, 1.0, 3.0]),
    behind=st.integers(0, 12),
    offset=st.sampled_from([0.0, 0.25, 0.5]),
    mode=st.sampled_from(["all", "none"]),
    cap=st.integers(1, 5),
    grace=st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.5, 100.0])),
)
def test_catch_up_splits_the_passed_times_into_runs_and_misses(
    interval: float, behind: int, offset: float, mode: str, cap: int, grace: float | None
) -> None:
    after = grid(0.0, interval)
    now = behind * interval + offset
    passed = [k * interval for k in range(behind + 3) if k * interval <= now]  # 0.0, then each slot to now
    decision = catch_up(Policies(catch_up=mode, max_catch_up=cap), after, 0.0, now, grace)
    if mode == "none":
        missed = [slot for slot in passed if slot < now]
        if not missed:
            assert decision is None
            return
        assert decision is not None
        assert decision.missed == [(slot, "catch_up") for slot in missed]
        assert decision.due_at >= now
        assert decision.due_at - interval < now
        assert not decision.run_now
        return
    within = [slot for slot in passed if grace is None or now - slot <= grace]
    runs = within[-cap:]
    reasons = [(slot, "misfire") for slot in passed if slot not in within]
    reasons += [(slot, "catch_up") for slot in within if slot not in runs]
    if len(runs) == 1 and not reasons:
        assert decision is None
        return
    assert decision is not None
    assert decision.missed == reasons
    if runs:
        assert (decision.due_at, decision.until, decision.run_now) == (runs[0], runs[-1], True)
    else:
        assert decision.due_at > now
        assert not decision.run_now


def test_latest_decides_nothing() -> None:
    assert catch_up(DEFAULT_POLICIES, grid(0.0, 1.0), 0.0, 50.0, None) is None


@given(start=st.floats(-10, 10), length=st.floats(0, 20))
def test_slots_between_are_the_grid_slots_inside(start: float, length: float) -> None:
    after = grid(-20.0, 1.5)
    slots = slots_between(after, start, start + length, inclusive=False)
    assert all(start < slot < start + length for slot in slots)
    assert slots == sorted(slots)
    assert after(slots[-1] if slots else start) >= start + length  # type: ignore[operator]


@given(task_id=st.text(max_size=8), due=st.floats(0, 1e9), jitter=st.floats(0.001, 100))
def test_jitter_is_repeatable_and_within_its_bound(task_id: str, due: float, jitter: float) -> None:
    delay = jitter_delay(task_id, due, jitter)
    assert 0.0 <= delay < jitter
    assert delay == jitter_delay(task_id, due, jitter)


def test_the_defaults_check_to_the_one_shared_default() -> None:
    assert check_policies("skip", None, "latest", 100, 0, recurring=False) is DEFAULT_POLICIES


def test_a_due_time_a_hair_before_its_slot_is_that_slot() -> None:
    after = grid(0.0, 2.0)
    assert on_slot(after, 3.999994) == 4.0  # a stored due time a few microseconds early
    assert on_slot(after, 4.0) == 4.0  # on its slot: itself
    assert on_slot(after, 3.5) == 3.5  # half a slot off: not a slot's
    fine = grid(0.0, 0.01)
    assert on_slot(fine, 0.007) == 0.007  # more than a quarter of the spacing before it: its own
    missed = catch_up(Policies(catch_up="none"), after, on_slot(after, 3.999994), 9.0, None)
    assert missed is not None
    assert [time for time, _ in missed.missed] == [4.0, 6.0, 8.0]  # not 3.999994 and 4.0 both
