"""next_fixed_rate / next_fixed_delay, and the demo's timeline driven through a Timetable."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.core.recurrence import next_fixed_delay, next_fixed_rate
from messages import FixedDelay, FixedRate
from tests.unit.helpers import Pool, make, timetable


def slot_of(first_at: float, interval: float, at: float) -> int:
    """The integer k with ``first_at + k * interval == at`` exactly (asserted)."""
    k = round((at - first_at) / interval)
    assert first_at + k * interval == at, (first_at, interval, at, k)
    return k


def brute_force_next(first_at: float, interval: float, ran_slot: int, finished_at: float) -> float:
    k = ran_slot + 1
    while first_at + k * interval < finished_at:
        k += 1
    return first_at + k * interval


def check_next_rate(first_at: float, interval: float, ran_slot: int, finished_at: float) -> float:
    ran_at = first_at + ran_slot * interval
    result = next_fixed_rate(first_at, interval, ran_at, finished_at)
    k = slot_of(first_at, interval, result)
    assert k > ran_slot
    assert result > ran_at
    assert result >= finished_at
    if k - 1 > ran_slot:  # the first slot not past: the one before it was already past
        assert first_at + (k - 1) * interval < finished_at
    return result


# -- exhaustive-ish grid ----------------------------------------------------------------------


@pytest.mark.parametrize("interval", [0.5, 1.0, 3.0, 0.03, 0.1])
@pytest.mark.parametrize("first_at", [-7.0, 0.0, 1000.0, 123456.789])
def test_fixed_rate_grid(first_at: float, interval: float) -> None:
    for ran_slot, steps in itertools.product(range(6), range(-2, 40)):
        # finished_at on, just before and just after grid points of interval / 4
        base = first_at + ran_slot * interval + steps * interval / 4
        for finished_at in (base, base - 1e-9, base + 1e-9):
            result = check_next_rate(first_at, interval, ran_slot, finished_at)
            assert result == brute_force_next(first_at, interval, ran_slot, finished_at)


def test_fixed_rate_instant_run_takes_next_slot() -> None:
    assert next_fixed_rate(0.0, 1.0, 0.0, 0.0) == 1.0
    assert next_fixed_rate(10.0, 2.0, 14.0, 14.0) == 16.0


def test_fixed_rate_slot_exactly_at_finish_counts() -> None:
    assert next_fixed_rate(0.0, 1.0, 0.0, 3.0) == 3.0
    assert next_fixed_rate(0.0, 1.0, 0.0, 3.0000001) == 4.0


def test_fixed_rate_missed_slots_are_skipped() -> None:
    assert next_fixed_rate(0.0, 10.0, 20.0, 95.0) == 100.0


def test_fixed_rate_finish_before_slot_is_next_slot() -> None:
    # a report with finished_at before the due time (clock skew) still moves on by one slot
    assert next_fixed_rate(0.0, 1.0, 5.0, 4.0) == 6.0


def test_fixed_delay_is_finish_plus_delay() -> None:
    assert next_fixed_delay(0.03, 1000.11) == 1000.11 + 0.03
    assert next_fixed_delay(5.0, -1.0) == 4.0


# -- hypothesis properties --------------------------------------------------------------------

first_ats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
intervals = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)


@given(
    first_at=first_ats,
    interval=intervals,
    ran_slot=st.integers(0, 10**6),
    late=st.floats(min_value=0.0, max_value=200.0, allow_nan=False),
)
def test_fixed_rate_properties(first_at: float, interval: float, ran_slot: int, late: float) -> None:
    ran_at = first_at + ran_slot * interval
    check_next_rate(first_at, interval, ran_slot, ran_at + late * interval)


@given(
    first_at=st.integers(-1000, 1000),
    interval=st.integers(1, 50),
    ran_slot=st.integers(0, 1000),
    late=st.integers(0, 500),
)
def test_fixed_rate_matches_brute_force_on_integers(
    first_at: int, interval: int, ran_slot: int, late: int
) -> None:
    finished_at = float(first_at + ran_slot * interval + late)
    result = check_next_rate(float(first_at), float(interval), ran_slot, finished_at)
    assert result == brute_force_next(float(first_at), float(interval), ran_slot, finished_at)


@given(
    delay=st.floats(min_value=1e-6, max_value=1e6, allow_nan=False),
    finished_at=st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
)
def test_fixed_delay_properties(delay: float, finished_at: float) -> None:
    result = next_fixed_delay(delay, finished_at)
    assert result == finished_at + delay
    assert result >= finished_at


@given(first_at=first_ats, interval=intervals)
def test_no_drift_after_many_instant_runs(first_at: float, interval: float) -> None:
    ran_at = first_at
    for k in range(1, 2001):
        ran_at = next_fixed_rate(first_at, interval, ran_at, ran_at)
        assert ran_at == first_at + k * interval


def test_no_drift_through_timetable() -> None:
    first_at, interval = 1000.0, 0.1
    table = timetable(1, wanted=frozenset())
    pool = Pool(table)
    table.schedule(make("r", FixedRate(interval, first_at)), now=0.0)
    accumulated = first_at
    for k in range(10_000):
        due = table.next_due()
        assert due == first_at + k * interval
        table.tick(now=due)
        pool.take()
        assert pool.start(0) is not None
        pool.finish(0, at=due)
        accumulated += interval
    assert accumulated != first_at + 10_000 * interval  # accumulating would have drifted


# -- the demo's timeline: 30 ms interval, the third run takes 50 ms, the others are instant ---------

FIRST = 1000.0
MS = 0.001


def run_starts(trigger: FixedRate | FixedDelay, runs: int = 5) -> list[float]:
    table = timetable(1, wanted=frozenset())
    pool = Pool(table)
    table.schedule(make("seed", trigger), now=FIRST - 1.0)
    starts = []
    for n in range(1, runs + 1):
        now = table.next_due()
        assert now is not None
        table.tick(now=now)
        pool.take()
        msg = pool.start(0)
        assert msg is not None
        assert msg.run == n
        starts.append((now - FIRST) / MS)
        finished_at = now + (50 * MS if n == 3 else 0.0)
        pool.finish(0, at=finished_at)
        assert not pool.take().dispatches
    return starts


def test_seed_table_fixed_rate() -> None:
    assert run_starts(FixedRate(30 * MS, FIRST)) == pytest.approx([0, 30, 60, 120, 150], abs=1e-9)


def test_seed_table_fixed_delay() -> None:
    assert run_starts(FixedDelay(30 * MS, FIRST)) == pytest.approx([0, 30, 60, 140, 170], abs=1e-9)


@pytest.mark.parametrize(("first_at", "interval"), [(1000.0, 1e-14), (1e9, 1e-12), (0.0, 5e-324)])
def test_fixed_rate_below_float_spacing_still_moves_forward(first_at: float, interval: float) -> None:
    ran_at = first_at
    for _ in range(3):
        nxt = next_fixed_rate(first_at, interval, ran_at, ran_at)
        assert nxt > ran_at
        ran_at = nxt


@pytest.mark.parametrize(("finished_at", "delay"), [(1000.0, 1e-14), (1e9, 1e-12)])
def test_fixed_delay_below_float_spacing_still_moves_forward(finished_at: float, delay: float) -> None:
    assert next_fixed_delay(delay, finished_at) > finished_at
