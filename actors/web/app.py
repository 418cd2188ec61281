"""``app``: the Starlette application of the status page, the JSON API and ``/metrics``.

Threads: Starlette runs each (synchronous) endpoint on its thread pool, so a question to the
scheduler (``tasks()``, ``pause``...) blocks a pool thread, never the server's event loop; the
scheduler itself only answers messages, so no client, slow or stuck, can hold it up.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from typing import Any, Final

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from actors.api.facade import Scheduler
from actors.errors import SchedulerShutdownError, UnknownTaskError
from actors.metrics import register, tally_of
from actors.metrics.exposition import MetricsText
from actors.metrics.tally import shown_runs
from actors.store import SharedStore
from actors.web.nodes import nodes_json
from actors.web.page import page
from actors.web.views import Arguments, record_json, task_json, tasks_body

__all__ = ["CONTROL_ACTIONS", "MAX_HISTORY", "app"]

logger = logging.getLogger(__name__)

CONTROL_ACTIONS: Final = ("pause", "resume", "run-now", "cancel")
"""The actions of ``POST /api/tasks/{id}/<action>``."""

ACTION_ALIASES: Final = {"run_now": "run-now"}
"""Other spellings of an action taken as it (``run_now``, as the method is named)."""

MAX_HISTORY: Final = 1000
"""The largest ``limit`` a history request may ask for."""


def app(
    scheduler: Scheduler,
    token: str | None = None,
    show_args: bool = False,
    *,
    arguments: Arguments | None = None,
    refresh: float = 2.0,
    max_tasks: int = 1000,
    store: SharedStore | None = None,
) -> Starlette:
    """Return an ASGI application showing ``scheduler`` (call on any thread, once per scheduler).

    Args:
        scheduler: The scheduler to show (and control).
        token: The control token: ``POST /api/tasks/{id}/pause|resume|run-now|cancel`` needs
            ``Authorization: Bearer <token>``. ``None``: no control at all (the page has no
            buttons, every ``POST`` is refused with 403).
        show_args: Show each task's arguments (``arguments`` gives them); off by default,
            since arguments may hold secrets.
        arguments: Task id -> its arguments as JSON data, or ``None``; used only with ``show_args``.
        refresh: Seconds between the page's refreshes.
        max_tasks: The metrics' label bound (``actors.metrics.register``).
        store: The scheduler's shared store (PostgreSQL), if it has one: ``/api/nodes``
            lists the nodes it shows, the page too, and ``/metrics`` has the leases held.

    Raises:
        TypeError: ``token`` is neither a str nor ``None``.
        ValueError: ``token`` is empty.
        SchedulerShutdownError: the scheduler has stopped.
    """
    if token is not None and not isinstance(token, str):
        raise TypeError(f"token must be a str or None, got {token!r}")
    if token == "":
        raise ValueError("token must not be empty (None: no control)")
    registry = CollectorRegistry(auto_describe=True)
    exposition = MetricsText(register(scheduler, registry, max_tasks=max_tasks, store=store))
    tally = tally_of(scheduler)
    shown = arguments if show_args else None
    # A shared store's tasks are its rows (whichever node runs them), read through the facade.
    shared = store is not None or scheduler.is_shared
    html = page(control=token is not None, refresh=refresh)

    def one(task_id: str) -> dict[str, Any]:
        info = scheduler.info(task_id)
        return task_json(info, shown_runs(tally.recent((task_id,))), shown)

    def index(request: Request) -> Response:
        return HTMLResponse(html, headers=_PAGE_HEADERS)

    def tasks(request: Request) -> Response:
        window = _window(request.query_params)
        if isinstance(window, Response):
            return window
        if not shared:  # one question: the page's tasks, their total and their recent runs
            table = tally.table(*window)
            infos, total, recent = table.infos, table.total, table.recent
        else:  # the store's rows, read whole: cut here; the runs of those this node has run
            every = scheduler.tasks()
            offset, limit = window
            infos = tuple(every[offset : None if limit is None else offset + limit])
            total, recent = len(every), tally.recent(info.task_id for info in infos)
        body = tasks_body(infos, shown_runs(recent), shown)
        return Response(body, media_type="application/json", headers={"X-Total-Count": str(total)})

    def task(request: Request) -> Response:
        return JSONResponse(one(request.path_params["task_id"]))

    def history(request: Request) -> Response:
        task_id = request.path_params["task_id"]
        limit = _limit(request.query_params)
        if isinstance(limit, Response):
            return limit
        scheduler.info(task_id)  # 404 for an id it does not know
        runs = scheduler.history(task_id, limit)
        return JSONResponse([record_json(run, show_args) for run in runs])

    def nodes(request: Request) -> Response:
        return JSONResponse([] if store is None else nodes_json(store))

    def metrics(request: Request) -> Response:
        return Response(exposition.render(), media_type=CONTENT_TYPE_LATEST)  # generate_latest's text

    def act(request: Request) -> Response:
        refused = _refused(request, token)
        if refused is not None:
            return refused
        task_id, action = request.path_params["task_id"], _action(request.path_params["action"])
        if action not in CONTROL_ACTIONS:
            return _error(404, f"no action {action!r}: one of {', '.join(CONTROL_ACTIONS)}")
        scheduler.info(task_id)  # 404 for an id it does not know
        if action == "pause":
            done = scheduler.pause(task_id)
        elif action == "resume":
            done = scheduler.resume(task_id)
        elif action == "run-now":
            done = scheduler.run_now(task_id)
        else:
            done = scheduler.cancel(task_id)
        logger.info("web: %s %r (%s)", action, task_id, "done" if done else "nothing to do")
        return JSONResponse({"ok": done, "action": action, "task": one(task_id)})

    return Starlette(
        routes=[
            Route("/", index),
            Route("/tasks/{task_id:path}", index),
            Route("/api/tasks", tasks),
            Route("/api/tasks/{task_id}/history", history),
            Route("/api/tasks/{task_id}/{action}", act, methods=["POST"]),
            Route("/api/tasks/{task_id}", task),
            Route("/api/nodes", nodes),
            Route("/metrics", metrics),
        ],
        exception_handlers={
            UnknownTaskError: _unknown,
            SchedulerShutdownError: _stopped,
            Exception: _crashed,
        },
    )


_PAGE_HEADERS: Final = {
    # The page runs only its own inline script and talks only to this server.
    "Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _refused(request: Request, token: str | None) -> Response | None:
    """403 unless the request carries the token (compared in constant time); ``None`` if it does."""
    if token is None:
        return _error(403, "control is off: the server was started without a token")
    given = request.headers.get("authorization", "")
    scheme, _, credentials = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(credentials.strip().encode(), token.encode()):
        return _error(403, "a control request needs 'Authorization: Bearer <token>'")
    return None


def _window(query: Mapping[str, str]) -> tuple[int, int | None] | Response:
    """``offset`` (default 0) and ``limit`` (default: all) of ``GET /api/tasks``, or a 400."""
    window: list[int | None] = []
    for name, least in (("offset", 0), ("limit", 1)):
        text = query.get(name)
        if text is None:
            window.append(0 if name == "offset" else None)
            continue
        try:
            value = int(text)
        except ValueError:
            return _error(400, f"{name} must be a whole number, got {text!r}")
        if value < least:
            return _error(400, f"{name} must be >= {least}, got {value}")
        window.append(value)
    offset, limit = window
    assert offset is not None
    return offset, limit


def _limit(query: Mapping[str, str]) -> int | Response:
    text = query.get("limit", "100")
    try:
        limit = int(text)
    except ValueError:
        return _error(400, f"limit must be a whole number, got {text!r}")
    if not 1 <= limit <= MAX_HISTORY:
        return _error(400, f"limit must be between 1 and {MAX_HISTORY}, got {limit}")
    return limit


async def _unknown(request: Request, error: Exception) -> Response:
    return _error(404, str(error.args[0]) if error.args else "no such task")


async def _stopped(request: Request, error: Exception) -> Response:
    return _error(503, "the scheduler has stopped")


async def _crashed(request: Request, error: Exception) -> Response:
    logger.error("web: %s %s failed", request.method, request.url.path, exc_info=error)
    return _error(500, f"internal error: {type(error).__name__}")


def _action(given: str) -> str:
    """The action ``given`` names in the URL, an alias (``ACTION_ALIASES``) read as its action."""
    return ACTION_ALIASES.get(given, given)
