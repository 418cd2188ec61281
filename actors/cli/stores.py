"""The job file's store: an SQLite file, a PostgreSQL database shared by several runs, or none.

``store = "jobs.db"`` names an SQLite file (relative to the job file's folder), which one
``run`` holds at a time. ``store = "postgresql://..."`` (or ``"postgres://..."``) names a
PostgreSQL database that any number of ``run`` processes share, each due run executed by one
of them (docs/scale-out.md); it is kept as the URL text, never as a path. ``":memory:"``
keeps nothing (``None``).

Threads: the caller's.
"""

from __future__ import annotations

from pathlib import Path

from actors.cli.jobkeys import MEMORY_STORE
from actors.store import POSTGRES_SCHEMES, SQLiteStore, StoredTask

__all__ = ["StoreName", "is_shared", "read_stored", "shown_store", "store_name", "store_problem"]

StoreName = Path | str
"""A store: a ``Path`` is an SQLite file (absolute); a ``str`` a PostgreSQL URL."""


def store_name(text: str, folder: Path) -> StoreName | None:
    """Read a store as written (in the file, or after ``--store``); a relative path is under ``folder``."""
    if text == MEMORY_STORE:
        return None
    if text.startswith(POSTGRES_SCHEMES):
        return text
    return folder / Path(text).expanduser()


def store_problem(store: StoreName | None) -> str | None:
    """Say what is wrong with a PostgreSQL URL without connecting (psycopg missing, a malformed URL)."""
    if not isinstance(store, str):
        return None
    try:
        import psycopg  # noqa: PLC0415 - optional
        from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415
    except ImportError as error:
        return f"a PostgreSQL store needs psycopg ({error}): pip install 'pykka-taskscheduler[postgres]'"
    try:
        conninfo_to_dict(store)
    except psycopg.Error as error:
        reason = str(error).strip().replace(store, shown_store(store))  # libpq quotes it, password too
        return f"not a PostgreSQL URL libpq understands: {reason}"
    return None


def is_shared(store: StoreName | None) -> bool:
    """Whether ``store`` is a PostgreSQL database (shared by every run of it), not a file."""
    return isinstance(store, str)


def shown_store(store: StoreName) -> str:
    """Write a store as a user would: a path relative to the current folder, a URL without its password."""
    if isinstance(store, str):
        return _without_password(store)
    try:
        return str(store.relative_to(Path.cwd()))
    except ValueError:
        return str(store)


def _without_password(url: str) -> str:
    """The URL with no password, in the user part nor in the query; never raises (a malformed one too)."""
    scheme, _, rest = url.partition("://")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    user, at, hosts = netloc.rpartition("@")
    if at:
        netloc = f"{user.partition(':')[0]}@{hosts}"
    path, question, query = tail.partition("?")
    if question:
        kept = [pair for pair in query.split("&") if not pair.lower().startswith(("password=", "passfile="))]
        tail = f"{path}?{'&'.join(kept)}" if kept else path
    return f"{scheme}://{netloc}{tail}"


def read_stored(store: Path) -> list[StoredTask]:
    """Return every task in the store file, live or ended, read-only; none if there is no store yet.

    Raises:
        StoreError: the file exists but cannot be read as a current store.
    """
    if not store.exists():
        return []
    with SQLiteStore.inspect(store) as reader:
        return reader.tasks()
