"""``WebServer``: uvicorn serving an ASGI app on a thread of its own, beside a running scheduler.

The socket is bound by ``start`` on the caller's thread, so a port in use fails there, at
once, and ``port`` is known (also for port 0) before the first request; requests that come
before the server thread's loop runs wait in the socket's backlog. ``stop`` asks uvicorn to
exit and joins its thread: no thread is left (the request threads of the app's thread pool
belong to the loop and end with it).

Threads: ``start``/``stop`` on the owner's thread (the ``run`` command's main thread); the
server on ``taskscheduler-web``.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any, Final

import uvicorn

__all__ = ["DEFAULT_HOST", "WebServer", "parse_address"]

logger = logging.getLogger(__name__)

DEFAULT_HOST: Final = "127.0.0.1"
"""Where ``--http PORT`` binds when no host is given: this machine only."""


def parse_address(text: str) -> tuple[str, int]:
    """Read ``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` (host ``127.0.0.1``).

    Raises:
        ValueError: no port from 0 to 65535, or an empty host.
    """
    host, colon, port_text = text.rpartition(":")
    if not colon:
        host = DEFAULT_HOST
    host = host.removeprefix("[").removesuffix("]")
    if not host:
        raise ValueError(f"{text!r}: give HOST:PORT (e.g. 127.0.0.1:8080) or PORT")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535")
    return host, port


class WebServer:
    """Serves ``app`` on ``host:port`` from a thread until ``stop`` (see the module)."""

    def __init__(self, app: Any, host: str = DEFAULT_HOST, port: int = 0) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (the one the system chose, for port 0)."""
        if self._socket is None:
            raise RuntimeError("the server is not started")
        port: int = self._socket.getsockname()[1]
        return port

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        """Bind the socket and start serving (returns at once).

        Raises:
            OSError: the address cannot be bound (in use, no such interface...).
        """
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host, self._port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self._socket = sock
        config = uvicorn.Config(
            self._app,
            log_config=None,  # the process's logging as it is set up
            access_log=False,
            lifespan="off",
            timeout_keep_alive=5,
            limit_concurrency=64,  # beyond: 503 at once, never a queue of stuck clients
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="taskscheduler-web"
        )
        self._thread.start()
        logger.info("serving the status page on %s", self.url)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and join the server's thread (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                logger.warning("the web server did not stop within %s s", timeout)
            self._thread = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
