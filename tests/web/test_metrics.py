"""``actors.metrics``: a scheduler's metrics, scraped over real HTTP and parsed as Prometheus does."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

prometheus_client = pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, generate_latest, start_http_server  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from actors import FakeClock, Scheduler  # noqa: E402
from actors.core.run_totals import COMMIT_BUCKETS, CommitTimes  # noqa: E402
from actors.metrics import OTHER, RunTally, register  # noqa: E402
from actors.metrics.exposition import MetricsText  # noqa: E402


def boom() -> None:
    raise RuntimeError("boom")


@pytest.fixture
def scheduler() -> Iterator[Scheduler]:
    s = Scheduler(2, clock=FakeClock())
    yield s
    s.shutdown()


def scrape(registry: CollectorRegistry) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Serve the registry on a real port, GET /metrics, parse it: sample name -> labels -> value."""
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def test_a_scrape_shows_runs_by_outcome_lateness_duration_and_gauges(scheduler: Scheduler) -> None:
    registry = CollectorRegistry()
    register(scheduler, registry)
    scheduler.schedule_once(lambda: None, delay=0, task_id="ok")
    scheduler.schedule_once(boom, delay=0, task_id="bad")
    scheduler.schedule_at_fixed_rate(lambda: None, 60, 60, task_id="later")
    scheduler.settle()

    samples = scrape(registry)

    runs = samples["taskscheduler_runs_total"]
    assert runs[(("outcome", "completed"), ("task", "ok"))] == 1
    assert runs[(("outcome", "failed"), ("task", "bad"))] == 1
    assert samples["taskscheduler_start_lateness_seconds_count"][()] == 2
    on_time = samples["taskscheduler_start_lateness_seconds_bucket"][(("le", "0.001"),)]
    assert on_time == 2  # a FakeClock stands still: both started at their due time
    assert samples["taskscheduler_start_lateness_seconds_bucket"][(("le", "+Inf"),)] == 2
    assert samples["taskscheduler_run_duration_seconds_count"][()] == 2
    assert samples["taskscheduler_pending_tasks"][()] == 1  # "later"
    assert samples["taskscheduler_running_runs"][()] == 0
    assert samples["taskscheduler_workers_busy"][()] == 0
    assert samples["taskscheduler_workers"][()] == 2


def test_missed_due_times_are_counted_by_reason(scheduler: Scheduler) -> None:
    registry = CollectorRegistry()
    register(scheduler, registry)
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    scheduler.schedule_at_fixed_rate(lambda: None, 10, 10, task_id="tick", misfire_grace=1)
    clock.advance(25)  # due at 10 and 20, both more than misfire_grace late
    scheduler.settle()

    missed = scrape(registry)["taskscheduler_missed_total"]
    assert sum(v for labels, v in missed.items() if ("task", "tick") in labels) >= 1
    assert all(dict(labels)["reason"] in {"misfire", "catch_up", "overlap"} for labels in missed)


def test_tasks_beyond_max_tasks_fold_into_other(scheduler: Scheduler) -> None:
    registry = CollectorRegistry()
    register(scheduler, registry, max_tasks=2)
    for n in range(5):
        scheduler.schedule_once(lambda: None, delay=0, task_id=f"t{n}")
    scheduler.settle()

    runs = scrape(registry)["taskscheduler_runs_total"]
    tasks = {dict(labels)["task"]: value for labels, value in runs.items()}
    assert len(tasks) == 3
    assert tasks[OTHER] == 3
    assert sum(tasks.values()) == 5


def test_one_tally_per_scheduler_and_bad_max_tasks_is_refused(scheduler: Scheduler) -> None:
    first = register(scheduler, CollectorRegistry())
    second = register(scheduler, CollectorRegistry())
    assert first.tally is second.tally
    with pytest.raises(TypeError):
        RunTally(scheduler, "10")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tasks"):
        RunTally(scheduler, -1)


def test_a_store_s_commits_are_a_histogram_and_a_memory_scheduler_has_none(tmp_path: Path) -> None:
    with Scheduler(2, clock=FakeClock(), store=tmp_path / "metrics.db") as stored:
        registry = CollectorRegistry()
        register(stored, registry)
        for n in range(3):
            stored.schedule_once("tests.durable.tasks:noop", delay=0, task_id=f"durable-{n}")
        stored.settle()
        samples = scrape(registry)
    commits = samples["taskscheduler_store_commit_seconds_count"][()]
    assert commits >= 1  # the outcomes of 3 runs, in one commit or more
    assert samples["taskscheduler_store_commit_seconds_bucket"][(("le", "+Inf"),)] == commits
    assert samples["taskscheduler_store_commit_seconds_sum"][()] > 0
    assert "taskscheduler_claims_total" not in samples  # not a shared store

    with Scheduler(1, clock=FakeClock()) as memory:
        registry = CollectorRegistry()
        register(memory, registry)
        memory.schedule_once(lambda: None, delay=0, task_id="m")
        memory.settle()
        samples = scrape(registry)
    assert not any(name.startswith("taskscheduler_store_commit_seconds") for name in samples)
    assert "taskscheduler_claims_total" not in samples


def test_commit_times_fall_in_their_buckets() -> None:
    times = CommitTimes()
    for seconds in (0.0002, 0.003, 0.003, 20.0, -1.0):
        times.observe(seconds)
    totals = times.snapshot(claims=4)
    assert len(totals.commits) == len(COMMIT_BUCKETS) + 1
    assert totals.commits[0] == 2  # 0.0002 and a clock step back, counted as 0
    assert totals.commits[COMMIT_BUCKETS.index(0.005)] == 2
    assert totals.commits[-1] == 1
    assert totals.commit_sum == pytest.approx(20.0062)
    assert totals.claims == 4


def test_the_served_text_is_what_generate_latest_writes(scheduler: Scheduler) -> None:
    """``MetricsText`` (what ``/metrics`` serves) writes the labelled families itself, keeping lines."""
    registry = CollectorRegistry()
    text = MetricsText(register(scheduler, registry, max_tasks=4))
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    for task_id in ('a "quoted" \\ task\nwith a newline', "caf\u00e9", "other", "plain"):
        scheduler.schedule_at_fixed_rate(lambda: None, 10, task_id=task_id)
    scheduler.schedule_at_fixed_rate(boom, 10, task_id="beyond the labels")
    scheduler.schedule_at_fixed_rate(lambda: None, 10, 10, task_id="missing", misfire_grace=1)
    scheduler.settle()
    assert text.render() == generate_latest(registry)
    clock.advance(25)  # every count moves; "missing" misses its slots
    scheduler.settle()
    served = text.render()
    assert served == generate_latest(registry)
    assert (
        b'taskscheduler_runs_total{outcome="completed",task="a \\"quoted\\" \\\\ task\\nwith a newline"}'
        in served
    )
    families = {family.name: family for family in text_string_to_metric_families(served.decode())}
    assert "taskscheduler_missed" in families
    assert text.render() == generate_latest(registry)  # nothing moved: the kept lines


def test_every_run_of_a_busy_scheduler_is_counted_once() -> None:
    """Completed runs are counted in bulk after each message (``RunCounts.fold``): none lost, none twice."""
    done = threading.Semaphore(0)
    with Scheduler(4) as busy:
        registry = CollectorRegistry()
        register(busy, registry, max_tasks=10)
        for n in range(3000):
            busy.schedule_once(done.release, delay=0, task_id=f"t{n}")
        busy.schedule_once(boom, delay=0, task_id="bad")
        for _ in range(3000):
            assert done.acquire(timeout=60)
        busy.settle()
        samples = scrape(registry)
    runs = samples["taskscheduler_runs_total"]
    assert sum(runs.values()) == 3001
    labelled = [labels for labels in runs if ("task", OTHER) not in labels]
    assert len(labelled) == 10  # the first 10 ids counted; "bad" may be one of them
    assert samples["taskscheduler_start_lateness_seconds_count"][()] == 3001
    assert samples["taskscheduler_run_duration_seconds_count"][()] == 3001
