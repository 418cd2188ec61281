"""The pure history helpers: what ``keep_result`` keeps, and how many runs a record keeps."""

from __future__ import annotations

import math

import pytest

from actors.core.run_log import KEPT_VALUE_BYTES, RUNS_PER_TASK, RunEntry, keep_run, keep_value, last_runs


def entry(run: int) -> RunEntry:
    return RunEntry(run, float(run), float(run), float(run), run + 0.5, "completed", None)


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ({"a": [1, 2.5, None, True]}, '{"a":[1,2.5,null,true]}'),
        ((1, "two"), '[1,"two"]'),
        ("é", '"\\u00e9"'),
        (None, "null"),
    ],
)
def test_json_data_is_kept_as_json_text(value: object, kept: str) -> None:
    assert keep_value(value) == (kept, None)


@pytest.mark.parametrize(
    "value",
    [{1, 2}, object(), math.nan, math.inf, {("a",): 1}],
    ids=["set", "object", "nan", "inf", "tuple-key"],
)
def test_what_is_not_json_data_is_not_kept_and_says_so(value: object) -> None:
    kept, why = keep_value(value)
    assert kept is None
    assert why is not None
    assert why.startswith("its value is not JSON data")


def test_the_bound_is_64_kib_of_utf8_json() -> None:
    assert keep_value("x" * (KEPT_VALUE_BYTES - 2))[0] is not None  # with its two quotes: exactly the bound
    kept, why = keep_value("x" * (KEPT_VALUE_BYTES - 1))
    assert kept is None
    assert why == f"its value is {KEPT_VALUE_BYTES + 1} bytes as JSON, more than the 65536 keep_result keeps"


def test_a_record_keeps_its_last_runs_newest_first() -> None:
    runs = None
    for run in range(1, 3 * RUNS_PER_TASK + 8):
        runs = keep_run(runs, entry(run))
        assert len(runs) <= 2 * RUNS_PER_TASK
    last = 3 * RUNS_PER_TASK + 7
    assert [e.run for e in last_runs(runs, 3)] == [last, last - 1, last - 2]
    assert [e.run for e in last_runs(runs, 10_000)] == list(range(last, last - RUNS_PER_TASK, -1))
    assert last_runs(None, 5) == []
