"""A web status page, a JSON API and ``/metrics`` for a running scheduler (the ``[web]`` extra).

``app(scheduler)`` returns an ASGI application (Starlette) to mount in a web server, or to
serve with ``actors.web.server.WebServer`` (what ``pykka-taskscheduler run --http`` does).
``docs/web.md`` describes the routes, the JSON and the control token.
"""

from __future__ import annotations

from actors.web.app import CONTROL_ACTIONS, app

__all__ = ["CONTROL_ACTIONS", "app"]
