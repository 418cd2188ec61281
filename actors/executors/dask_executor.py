"""Runs on a Dask cluster: a run is ``client.submit(...)``, its outcome the future's.

Each run is submitted with ``key=`` its run key and ``pure=False``; its future's done callback
(on a thread of the Dask client) calls the run's ``done``; an interrupt is ``future.cancel()``
(Dask forgets the run; a function already running on a worker runs to its end, unwatched). A
worker lost mid-run: Dask tries the run again on another worker up to the scheduler's
``distributed.scheduler.allowed-failures`` (3 by default; 0 to fail at once), then fails it with
``KilledWorker``, which this executor turns into an ``ExecutorWorkerLostError``.

A stored task's run may have been sent before under its key, by a scheduler that died while it
was out. Dask keeps a key only while some client wants it, and a dead client wants nothing: so,
with a fixed ``namespace``, each stored run's future is also *published* on the cluster under
its key (``publish_dataset``) until its outcome is back here. A node that submits the key
again meanwhile (the next owner of the run) joins that Dask task instead of running it again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from actors.errors import ExecutorWorkerLostError, RunCancelled
from actors.executors.engine_call import call_reference, job_engine_key
from actors.references import check_picklable_arguments
from actors.runtime.executor_protocol import DEFAULT_MAX_IN_FLIGHT, Done, Job

__all__ = ["DaskExecutor"]

logger = logging.getLogger(__name__)

FETCHERS: Final = 8
"""Most threads that fetch finished runs' values from the workers at once."""


class _DaskRun:
    """A run out on Dask: its future."""

    __slots__ = ("future",)

    def __init__(self, future: Any) -> None:
        self.future = future

    def interrupt(self) -> None:
        """Cancel the future (any thread): Dask forgets the run; its done callback reports it cancelled."""
        self.future.cancel()


class DaskExecutor:
    """An ``Executor`` that runs each run on a Dask cluster (``Scheduler(executors={"dask": ...})``).

    Args:
        address_or_client: A Dask scheduler's address (``"tcp://host:8786"``; this executor
            makes a ``distributed.Client`` and closes it with the scheduler), or a ``Client``
            (or anything with ``.scheduler.address``, such as a ``LocalCluster``: a client is made
            for it) that stays the caller's.
        max_in_flight: Runs out on Dask at once; more due runs wait in the scheduler.
        namespace: Put before each run key to make the Dask key (``None``: a random one per
            executor, so two schedulers never share a key). Give a fixed one, the same on
            every node of a shared store, for a durable schedule: a stored run the cluster
            still holds, sent by a node that died, is then joined instead of run again.

    Threads: ``submit`` on the scheduler's slot threads; ``done`` on this executor's fetcher
    threads (at most ``FETCHERS``), which take each finished run's value from its worker;
    ``close`` on the scheduler's thread.
    """

    remote = True

    def __init__(
        self,
        address_or_client: Any,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        namespace: str | None = None,
    ) -> None:
        """Connect to the cluster, unless given a client (caller's thread)."""
        import distributed  # noqa: PLC0415  (here: the [dask] extra is needed only to make one)

        Client: Any = distributed.Client  # untyped calls: the client is used as Any throughout

        self.max_in_flight = max_in_flight
        self.client: Any
        self._fetchers = ThreadPoolExecutor(
            min(max_in_flight, FETCHERS), thread_name_prefix="dask-executor-fetch"
        )
        self.namespace = uuid.uuid4().hex[:12] if namespace is None else namespace
        self._fresh = namespace is None  # no key of this namespace was ever sent before this executor
        # Under a fixed namespace, what keeps a memory task's keys apart from an earlier process's.
        self._incarnation = None if self._fresh else uuid.uuid4().hex[:8]
        if isinstance(address_or_client, Client):
            self.client = address_or_client
            self._own = False
        else:
            address = getattr(getattr(address_or_client, "scheduler", None), "address", None)
            address = address_or_client if address is None else address
            if not isinstance(address, str):
                raise TypeError(f"expected a Dask address, Client or cluster, got {address_or_client!r}")
            self.client = Client(address, set_as_default=False)
            self._own = True
        scheduler = self.client.scheduler
        self.address: str | None = getattr(scheduler, "address", None)  # None: a client closed already

    def __repr__(self) -> str:
        return f"DaskExecutor({self.address!r})"

    def check_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """Raise ``TypeError`` unless the arguments pickle (caller's thread)."""
        check_picklable_arguments(args, kwargs)

    def submit(self, job: Job, done: Done) -> _DaskRun:
        """Submit the run (a slot's thread); raise if the client is not connected."""
        status = self.client.status
        if status != "running":
            raise ConnectionError(f"the Dask client to {self.address} is {status}")
        if job.reference is None:
            raise ValueError(f"task {job.task_id!r} has no function reference to send")
        key = job_engine_key(self.namespace, job, self._incarnation)
        # The same key as a task the cluster still holds (published by a node that died) joins it.
        future = self.client.submit(
            call_reference, job.reference, job.args, dict(job.kwargs), key=key, pure=False
        )
        kept = job.seq is not None and not self._fresh
        if kept:  # held by the cluster for whoever submits the key next, until the outcome is here
            self.client.publish_dataset(future, name=key, override=True)
        # The callback runs on the client's one callback thread: fetching the value there would
        # take the runs' results one round trip at a time, so a fetcher thread takes it.
        fetchers = self._fetchers
        client = self.client if kept else None
        future.add_done_callback(lambda ended: fetchers.submit(_report, ended, done, client))
        return _DaskRun(future)

    def close(self) -> None:
        """Close the client if this executor made it (the scheduler's thread)."""
        self._fetchers.shutdown(wait=True, cancel_futures=True)
        if self._own:
            self.client.close()


def _report(future: Any, done: Done, published: Any | None) -> None:
    """Call ``done`` with a finished future's outcome (a fetcher thread); unpublish it from ``published``."""
    try:
        _outcome(future, done)
    finally:
        if published is not None:
            try:
                published.unpublish_dataset(future.key)
            except Exception as error:  # gone already (another node's end), or the cluster is down
                logger.debug("could not unpublish %s: %r", future.key, error)


def _outcome(future: Any, done: Done) -> None:
    """Call ``done`` with a finished future's outcome."""
    from distributed import KilledWorker  # noqa: PLC0415  (as above)

    status = future.status
    if status == "finished":
        try:
            value = future.result()
        except BaseException as error:  # lost between finishing and our read
            done(None, error)
            return
        done(value, None)
    elif status == "cancelled":
        done(None, RunCancelled(f"Dask future {future.key} was cancelled"))
    else:
        failure = future.exception()
        if isinstance(failure, KilledWorker):
            done(None, ExecutorWorkerLostError(f"the Dask worker running {future.key} was lost: {failure}"))
        elif isinstance(failure, BaseException):
            done(None, failure)
        else:
            done(None, RuntimeError(f"Dask run {future.key} failed: {failure!r}"))
