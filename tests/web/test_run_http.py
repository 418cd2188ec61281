"""``pykka-taskscheduler run --http``: the page and API of a real running service, over real HTTP."""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from tests.cli.helpers import Service, cli, write_jobfile

JOBS = """
[jobs.tick]
fn = "tasks:tick"
every = "200ms"

[jobs.secret]
fn = "tasks:say"
every = "1h"
initial_delay = "1h"
args = ["hunter2"]
"""


def get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


def post(url: str, token: str | None) -> int:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        with error:
            return int(error.code)


def test_run_serves_the_api_beside_the_schedule_and_stops_it_at_shutdown(tmp_path: Path) -> None:
    write_jobfile(tmp_path, JOBS)
    args = ("jobs.toml", "--no-status", "--store", ":memory:", "--http", "127.0.0.1:0", "--http-token", "T")
    with Service(*args, cwd=tmp_path) as service:
        base = service.expect(r"status page on (http://127\.0\.0\.1:\d+) \(control on\)").group(1)
        service.expect(r"task=tick event=completed run=1")
        tasks = {task["id"]: task for task in get(f"{base}/api/tasks")}  # type: ignore[attr-defined]
        assert tasks["tick"]["trigger"] == "every 200ms"
        assert "arguments" not in tasks["secret"]
        assert post(f"{base}/api/tasks/tick/pause", None) == 403
        assert post(f"{base}/api/tasks/tick/pause", "T") == 200
        assert get(f"{base}/api/tasks/tick")["status"] == "paused"  # type: ignore[index]
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as reply:
            assert b"taskscheduler_runs_total" in reply.read()
        service.send(signal.SIGTERM)
        assert service.wait() == 0  # the server's thread ended too, or the process would hang
    assert "Traceback" not in service.output()


def test_show_args_and_the_token_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_jobfile(tmp_path, JOBS)
    monkeypatch.setenv("PYKKA_TASKSCHEDULER_HTTP_TOKEN", "from-env")
    args = ("jobs.toml", "--no-status", "--store", ":memory:", "--http", "0", "--show-args", "--for", "20")
    with Service(*args, cwd=tmp_path) as service:
        base = service.expect(r"status page on (http://127\.0\.0\.1:\d+)").group(1)
        secret = get(f"{base}/api/tasks/secret")
        assert secret["arguments"] == {"args": ["hunter2"], "kwargs": {}}  # type: ignore[index]
        assert post(f"{base}/api/tasks/secret/pause", "from-env") == 200
        service.send(signal.SIGINT)
        assert service.wait() == 0


def test_a_bad_address_is_refused(tmp_path: Path) -> None:
    write_jobfile(tmp_path, JOBS)
    args = ("run", "jobs.toml", "--no-status", "--store", ":memory:", "--http", "localhost:http")
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert "the port must be a number" in done.stderr
