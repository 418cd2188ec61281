"""How many xdist workers ``-n auto`` (pyproject's addopts) starts: ``tests/conftest.py`` decides."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from tests.conftest import MAX_WORKERS, WORKERS_PER_CPU, pytest_xdist_auto_num_workers


def options(capture: str = "fd", markexpr: str = "not stress") -> pytest.Config:
    return SimpleNamespace(option=SimpleNamespace(capture=capture, markexpr=markexpr))  # type: ignore[return-value]


@pytest.fixture(autouse=True)
def no_worker_count_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)


def test_the_default_run_has_two_workers_per_cpu_up_to_the_limit() -> None:
    expected = max(1, min(WORKERS_PER_CPU * len(os.sched_getaffinity(0)), MAX_WORKERS))
    assert pytest_xdist_auto_num_workers(options()) == expected
    assert pytest_xdist_auto_num_workers(options(markexpr="realtime and not stress")) == expected


@pytest.mark.parametrize(
    ("capture", "markexpr"),
    [("no", "not stress"), ("fd", "stress"), ("fd", "stress and not realtime"), ("fd", "realtime or stress")],
)
def test_output_shown_or_stress_selected_runs_in_one_process(capture: str, markexpr: str) -> None:
    assert pytest_xdist_auto_num_workers(options(capture, markexpr)) == 0


def test_the_environment_variable_is_left_to_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert pytest_xdist_auto_num_workers(options(capture="no")) is None
