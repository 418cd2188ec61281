"""``actors.web.app``: the JSON API, its control token, its errors, and the page it serves."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from urllib.parse import quote

import pytest

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from actors import FakeClock, Scheduler
from actors.web import app

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def boom() -> None:
    raise ValueError("it broke")


def secret_job(password: str) -> None:
    pass


@pytest.fixture
def scheduler() -> Iterator[Scheduler]:
    s = Scheduler(2, clock=FakeClock())
    yield s
    s.shutdown()


@pytest.fixture
def client(scheduler: Scheduler) -> Iterator[TestClient]:
    with TestClient(app(scheduler, token=TOKEN), raise_server_exceptions=False) as c:
        yield c


def tick_twice(scheduler: Scheduler) -> None:
    scheduler.schedule_at_fixed_rate(lambda: None, 10, task_id="tick", name="ticker")
    scheduler.schedule_at_fixed_rate(boom, 10, task_id="bad")
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    scheduler.settle()
    clock.advance(10)
    scheduler.settle()


def test_tasks_list_and_one_task_have_the_documented_fields(scheduler: Scheduler, client: TestClient) -> None:
    tick_twice(scheduler)

    listed = client.get("/api/tasks")
    assert listed.status_code == 200
    by_id = {task["id"]: task for task in listed.json()}
    tick = by_id["tick"]
    assert tick["name"] == "ticker"
    assert tick["status"] == "scheduled"
    assert tick["trigger"] == "every 10s"
    assert tick["runs"] == 2
    assert tick["failures"] == 0
    assert tick["last_outcome"] == "completed"
    assert tick["last_error"] is None
    assert datetime.fromisoformat(tick["next_run"]).utcoffset() is not None
    assert tick["lateness_p50"] == 0.0
    bad = by_id["bad"]
    assert bad["failures"] == 2
    assert bad["last_outcome"] == "failed"
    assert "ValueError: it broke" in bad["last_error"]
    one = client.get("/api/tasks/tick").json()
    assert one["id"] == "tick"
    assert one["runs"] == 2


def test_a_page_of_the_list_and_its_total(scheduler: Scheduler, client: TestClient) -> None:
    for n in range(5):
        scheduler.schedule_at_fixed_rate(lambda: None, 10, task_id=f"t{n}")

    whole = client.get("/api/tasks")
    assert whole.headers["x-total-count"] == "5"
    assert [task["id"] for task in whole.json()] == [f"t{n}" for n in range(5)]
    page = client.get("/api/tasks?offset=1&limit=2")
    assert page.headers["x-total-count"] == "5"
    assert page.json() == whole.json()[1:3]
    assert client.get("/api/tasks?offset=9").json() == []
    for query in ("offset=-1", "offset=x", "limit=0", "limit=1.5"):
        reply = client.get(f"/api/tasks?{query}")
        assert reply.status_code == 400
        assert query.split("=")[0] in reply.json()["error"]


def test_the_list_says_what_each_task_object_says(scheduler: Scheduler) -> None:
    """``tasks_body`` writes the list field by field: the same JSON as ``task_json`` of each."""
    tick_twice(scheduler)
    scheduler.schedule_at_fixed_rate(lambda: None, 1.5, task_id='<script>\u00e9"\n', name="na\u00efve")
    scheduler.schedule_with_fixed_delay(lambda: None, 0.25, task_id="delayed")
    scheduler.schedule_cron(lambda: None, "0 9 * * *", task_id="daily")
    scheduler.schedule_once(lambda: None, delay=5, task_id="once")
    scheduler.schedule_after(lambda: None, ["once"], task_id="after")
    scheduler.pause("once")
    scheduler.settle()

    def arguments(task_id: str) -> dict[str, object]:
        return {"args": [task_id, 1.5, None], "kwargs": {"k": "\u2603"}}

    for shown in (False, True):
        with TestClient(app(scheduler, show_args=shown, arguments=arguments)) as client:
            listed = client.get("/api/tasks").json()
            assert len(listed) == 7  # tick_twice's two, and five
            one_by_one = [client.get(f"/api/tasks/{quote(task['id'], safe='')}").json() for task in listed]
            assert listed == one_by_one
    statuses = {task["id"]: task["status"] for task in listed}
    assert (statuses["after"], statuses["once"]) == ("waiting", "paused")
    assert listed[-1]["waiting_for"] == ["once"]


def test_history_has_the_fields_of_run_record(scheduler: Scheduler, client: TestClient) -> None:
    tick_twice(scheduler)

    runs = client.get("/api/tasks/bad/history").json()
    assert [run["run"] for run in runs] == [2, 1]
    assert {"run", "due_at", "due_wall", "started_at", "ended_at", "outcome", "reason", "error",
            "attempt", "node", "manual", "value"} <= set(runs[0])  # fmt: skip
    assert runs[0]["outcome"] == "failed"
    assert "it broke" in runs[0]["error"]
    assert datetime.fromisoformat(runs[0]["due_wall"]).utcoffset() is not None
    assert len(client.get("/api/tasks/bad/history?limit=1").json()) == 1


def test_control_needs_the_token(scheduler: Scheduler, client: TestClient) -> None:
    tick_twice(scheduler)

    assert client.post("/api/tasks/tick/pause").status_code == 403
    assert client.post("/api/tasks/tick/pause", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert client.post("/api/tasks/tick/pause", headers={"Authorization": TOKEN}).status_code == 403
    assert scheduler.info("tick").status.value == "scheduled"

    paused = client.post("/api/tasks/tick/pause", headers=AUTH)
    assert paused.status_code == 200
    assert paused.json()["ok"] is True
    assert paused.json()["task"]["status"] == "paused"
    assert scheduler.info("tick").status.value == "paused"
    assert client.post("/api/tasks/tick/resume", headers=AUTH).json()["task"]["status"] == "scheduled"
    assert client.post("/api/tasks/tick/run-now", headers=AUTH).json()["ok"] is True
    scheduler.settle()
    assert scheduler.info("tick").run_count == 3
    ran = client.post("/api/tasks/tick/run_now", headers=AUTH)  # the method's spelling, too
    assert (ran.json()["ok"], ran.json()["action"]) == (True, "run-now")
    scheduler.settle()
    assert scheduler.info("tick").run_count == 4
    assert client.post("/api/tasks/tick/cancel", headers=AUTH).json()["ok"] is True
    assert scheduler.info("tick").status.value == "cancelled"


def test_without_a_token_the_page_has_no_buttons_and_every_post_is_refused(scheduler: Scheduler) -> None:
    scheduler.schedule_at_fixed_rate(lambda: None, 10, task_id="tick")
    with TestClient(app(scheduler), raise_server_exceptions=False) as client:
        assert client.post("/api/tasks/tick/pause").status_code == 403
        assert client.post("/api/tasks/tick/pause", headers=AUTH).status_code == 403
        page = client.get("/")
    assert "const CONTROL = false;" in page.text
    assert scheduler.info("tick").status.value == "scheduled"


def test_bad_requests(scheduler: Scheduler, client: TestClient) -> None:
    tick_twice(scheduler)

    for url in ("/api/tasks/nope", "/api/tasks/nope/history"):
        reply = client.get(url)
        assert reply.status_code == 404
        assert "nope" in reply.json()["error"]
    assert client.post("/api/tasks/nope/pause", headers=AUTH).status_code == 404
    assert client.post("/api/tasks/tick/explode", headers=AUTH).status_code == 404
    for limit in ("x", "0", "100000"):
        reply = client.get(f"/api/tasks/tick/history?limit={limit}")
        assert reply.status_code == 400
        assert "limit" in reply.json()["error"]


def test_a_crashing_handler_is_a_500_and_the_scheduler_goes_on(scheduler: Scheduler) -> None:
    class Broken(Scheduler):
        def info(self, task_id):  # type: ignore[no-untyped-def]
            raise RuntimeError("handler bug")

    broken = Broken(1, clock=FakeClock())
    try:
        with TestClient(app(broken), raise_server_exceptions=False) as client:
            reply = client.get("/api/tasks/any")
            assert reply.status_code == 500
            assert reply.json() == {"error": "internal error: RuntimeError"}
        broken.schedule_once(lambda: None, delay=0, task_id="still")
        broken.settle()
        assert Scheduler.info(broken, "still").status.value == "completed"
    finally:
        broken.shutdown()


def test_page_and_metrics_are_served(scheduler: Scheduler, client: TestClient) -> None:
    scheduler.schedule_at_fixed_rate(lambda: None, 10, task_id="<script>alert(1)</script>")
    scheduler.settle()

    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "<script>alert(1)</script>" not in page.text  # names come as JSON, shown with textContent
    assert "const CONTROL = true;" in page.text
    assert client.get("/tasks/anything").status_code == 200
    metrics = client.get("/metrics")
    names = {family.name for family in text_string_to_metric_families(metrics.text)}
    assert {
        "taskscheduler_runs",
        "taskscheduler_pending_tasks",
        "taskscheduler_start_lateness_seconds",
    } <= names


def test_arguments_only_when_asked(scheduler: Scheduler) -> None:
    scheduler.schedule_at_fixed_rate(secret_job, 10, task_id="job", args=("hunter2",))

    def arguments(task_id: str) -> dict[str, object]:
        return {"args": ["hunter2"], "kwargs": {}}

    with TestClient(app(scheduler, arguments=arguments)) as client:
        assert "arguments" not in client.get("/api/tasks/job").json()
        assert "hunter2" not in client.get("/api/tasks").text
    with TestClient(app(scheduler, show_args=True, arguments=arguments)) as client:
        assert client.get("/api/tasks/job").json()["arguments"] == {"args": ["hunter2"], "kwargs": {}}


def test_bad_token_is_refused(scheduler: Scheduler) -> None:
    with pytest.raises(TypeError, match="token"):
        app(scheduler, token=123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="token"):
        app(scheduler, token="")
