"""The web API on a shared PostgreSQL store: every node, and which node ran each run."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from actors.metrics import register
from actors.store import PostgresStore
from actors.web import app
from tests.shared import tasks
from tests.shared.conftest import LEASE, POLL, Node
from tests.store.pg import DSN


def test_nodes_and_the_node_of_each_run(node: Node, schema: str) -> None:
    store = PostgresStore(DSN, schema=schema, node="a", lease=LEASE, poll=POLL)
    a = node("a", store=store)
    node("b")
    a.schedule_at_fixed_rate(tasks.noop, 0.2, task_id="beat")
    with TestClient(app(a, token="T", store=store)) as client:
        deadline = time.monotonic() + 20
        while len(runs := client.get("/api/tasks/beat/history").json()) < 3:
            assert time.monotonic() < deadline, f"too few runs: {runs}"
            time.sleep(0.1)
        assert {run["node"] for run in runs} <= {"a", "b"}
        assert all(run["node"] is not None for run in runs)

        nodes = client.get("/api/nodes").json()
        assert nodes[0]["node"] == "a"
        assert nodes[0]["this_node"] is True
        ran = {run["node"] for run in runs}
        by_name = {entry["node"]: entry for entry in nodes}
        for name in ran:
            assert by_name[name]["runs_ended"] >= 1
            assert by_name[name]["last_seen"] is not None
        assert {"leases_held", "runs_running"} <= set(nodes[0])

        families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
        [sample] = families["taskscheduler_leases_held"].samples
        assert sample.value >= 0
        page = client.get("/")
        assert 'id="nodes"' in page.text


def test_claims_total_counts_the_runs_this_node_claimed(node: Node) -> None:
    a = node("a")
    registry = CollectorRegistry()
    register(a, registry)
    handles = [a.schedule_once(tasks.noop, delay=0.0, task_id=f"once-{n}") for n in range(3)]
    for handle in handles:
        handle.result(timeout=20)

    samples = {
        sample.name: sample.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for sample in family.samples
    }
    assert samples["taskscheduler_claims_total"] == 3  # one node: it claimed each run once
    assert samples["taskscheduler_store_commit_seconds_count"] >= 1  # their fenced outcomes


def test_an_app_built_without_the_store_still_lists_the_shared_rows(node: Node) -> None:
    a, b = node("a"), node("b")
    assert a.is_shared
    assert b.is_shared
    b.schedule_at_fixed_rate(tasks.noop, 3600, 3600, task_id="from-b")
    with TestClient(app(a)) as client:
        listed = client.get("/api/tasks")
        assert [entry["id"] for entry in listed.json()] == ["from-b"]
        assert listed.headers["X-Total-Count"] == "1"
