"""``run --http``: the status page, JSON API and ``/metrics`` of the running schedule.

Starts ``actors.web`` (the ``[web]`` extra) on a thread beside the schedule; ``run`` stops it
before it shuts the scheduler down. The control token comes from ``--http-token`` or, kept out
of the process list, the environment variable ``TOKEN_ENV``. Threads: the runner's main thread.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from actors.api.facade import Scheduler
from actors.cli import exits
from actors.cli.service import JobService

if TYPE_CHECKING:
    from actors.store import SharedStore
    from actors.web.server import WebServer

__all__ = ["TOKEN_ENV", "serve_http"]

logger = logging.getLogger("actors.cli")

TOKEN_ENV: Final = "PYKKA_TASKSCHEDULER_HTTP_TOKEN"
"""The environment variable read for the control token when ``--http-token`` is not given."""


def serve_http(
    scheduler: Scheduler,
    service: JobService,
    address: str,
    token: str | None,
    show_args: bool,
    store: SharedStore | None = None,
) -> WebServer | int:
    """Start serving on ``address`` (``HOST:PORT`` or ``PORT``): the server, or an exit code (stderr: why)."""
    try:
        from actors.web import app  # noqa: PLC0415 - an extra
        from actors.web.server import WebServer, parse_address  # noqa: PLC0415
    except ImportError as error:
        hint = "pip install 'pykka-taskscheduler[web]'"
        print(f"--http needs the web extra ({error}): {hint}", file=sys.stderr)
        return exits.FAILURE
    try:
        host, port = parse_address(address)
    except ValueError as error:
        print(f"--http: {error}", file=sys.stderr)
        return exits.BAD_INPUT
    token = token if token else (os.environ.get(TOKEN_ENV) or None)

    def arguments(task_id: str) -> Mapping[str, Any] | None:
        for spec in service.jobfile.jobs:  # read on a request's thread; a reload swaps the whole file
            if spec.job_id == task_id:
                return {"args": list(spec.args), "kwargs": dict(spec.kwargs)}
        return None

    server = WebServer(app(scheduler, token, show_args, arguments=arguments, store=store), host, port)
    try:
        server.start()
    except OSError as error:
        print(f"--http {address}: cannot listen there: {error}", file=sys.stderr)
        return exits.FAILURE
    logger.info("status page on %s (control %s)", server.url, "on" if token else "off: no token")
    return server
