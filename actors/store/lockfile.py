"""One holder per store file: an exclusive ``flock`` on a sidecar lock file.

The kernel drops an ``flock`` when the last descriptor of its open file goes away, which
happens when the holding process exits by any means, ``kill -9`` included: a new holder
gets the lock at once, with no lease to wait out and no stale row to clean. The lock is
taken on an open file description, so a second ``LockFile`` on the same path fails even in
the same process. The holder writes its pid into the file, only to name it in messages.

The lock file is never deleted: deleting it would let two processes lock two different
files of the same name. It must be on a local file system (``flock`` over NFS is emulated
with byte-range locks, and not everywhere).

Whether a lock is held can be asked without taking it (``lock_state``, for ``status``): on
Linux the kernel lists every ``flock`` in ``/proc/locks``. Elsewhere the answer is "cannot
tell": trying the lock, even for an instant, could refuse a scheduler starting then.

A forked child inherits the descriptor, and with it the lock: if the parent then died, the
child (a process-pool worker, say) would keep the store locked. So each child closes its
inherited copies at once (``os.register_at_fork``), which leaves the parent's lock intact.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Final, final

from actors.errors import StoreError, StoreLockedError

logger = logging.getLogger(__name__)

_PID_BYTES: Final = 32
_PROC_LOCKS: Final = "/proc/locks"


def lock_path_of(store_path: str) -> str:
    """Return the lock file of a store file: ``<file>.lock``, beside the real file however it is spelt."""
    return os.path.realpath(store_path) + ".lock"


@final
@dataclass(frozen=True, slots=True)
class LockState:
    """Whether a lock file is held, as ``lock_state`` found out.

    Attributes:
        held: ``True`` while a holder (a live scheduler) has it, ``False`` if nobody does,
            ``None`` where this system cannot tell without taking it.
        pid: The holder's process id as it wrote it in the file, if it is held and readable.
    """

    held: bool | None
    pid: int | None = None


def lock_state(path: str) -> LockState:
    """Say whether the lock file ``path`` is held, without taking it (any thread).

    A missing lock file is not held. Linux lists every ``flock`` in ``/proc/locks`` with the
    file's device and inode, and the holder's pid. A lock on the file's inode counts if the
    device matches too, or if its pid is the one the holder wrote in the file (on an overlay
    file system the listed device is not the one ``stat`` gives). Without that list the
    answer is ``held=None``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return LockState(held=False)
    except OSError:
        return LockState(held=None)
    try:
        info, pid = os.fstat(fd), _read_pid(fd)
    finally:
        os.close(fd)
    try:
        with open(_PROC_LOCKS, encoding="ascii", errors="replace") as listing:
            locks = [lock for line in listing if (lock := _flock_of(line)) is not None]
    except OSError:
        return LockState(held=None)
    device = (os.major(info.st_dev), os.minor(info.st_dev))
    held = any(
        inode == info.st_ino and (lock_device == device or (pid is not None and lock_pid == pid))
        for lock_pid, lock_device, inode in locks
    )
    return LockState(held=True, pid=pid) if held else LockState(held=False)


def _flock_of(line: str) -> tuple[int, tuple[int, int], int] | None:
    # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2146457 0 EOF" as (pid, (major, minor), inode); a
    # waiter's line has "->" after the number. The device is in hex, the inode in decimal.
    fields = line.split()
    if len(fields) < 6 or fields[1] != "FLOCK":
        return None
    try:
        major, minor, inode = fields[5].split(":")
        return int(fields[4]), (int(major, 16), int(minor, 16)), int(inode)
    except ValueError:
        return None


class LockFile:
    """An exclusive lock on a file, held from ``acquire`` until ``release`` or process exit.

    ``acquire`` and ``release`` may be called from any thread, not concurrently with each
    other (the store calls them under its open/close lock).
    """

    __slots__ = ("__weakref__", "_fd", "path")

    def __init__(self, path: str) -> None:
        """Name the lock file; nothing is opened yet."""
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self, what: str) -> None:
        """Take the lock without waiting; ``what`` names the guarded thing in messages.

        Raises:
            StoreLockedError: Another holder (any process, this one included) has it.
            StoreError: The lock file cannot be created or opened.
        """
        if self._fd is not None:
            raise StoreError(f"{what} is already locked by this object")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise StoreError(f"{what}: cannot open the lock file {self.path}: {error}") from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            if holder == os.getpid():
                who = "this process (another store object is open on it)"
            elif holder is not None:
                who = f"process {holder}"
            else:
                who = "another process"
            raise StoreLockedError(
                f"{what} is in use by another scheduler: {who} holds the lock {self.path}"
            ) from None
        except OSError as error:
            os.close(fd)
            raise StoreError(f"{what}: cannot lock {self.path}: {error}") from error
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # the pid is only for messages; the lock is what matters
            logger.debug("could not write the pid into %s", self.path, exc_info=True)
        self._fd = fd
        with _HELD_LOCK:
            _HELD.add(self)

    def release(self) -> None:
        """Drop the lock (closing the descriptor drops it). Idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with _HELD_LOCK:
            _HELD.discard(self)
        os.close(fd)

    def _forget_in_child(self) -> None:
        # In a forked child: close the inherited copy without unlocking. LOCK_UN here would
        # unlock the parent's open file description too.
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, _PID_BYTES, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


# Every lock held in this process, so that a forked child can close its copies.
# _HELD_LOCK guards _HELD against acquire/release racing on other threads.
_HELD: Final[weakref.WeakSet[LockFile]] = weakref.WeakSet()
_HELD_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    # Only the forking thread lives on in the child, and _HELD_LOCK may have been held by
    # another thread at the fork: replace it rather than take it.
    global _HELD_LOCK  # noqa: PLW0603
    _HELD_LOCK = threading.Lock()
    for lock in list(_HELD):
        lock._forget_in_child()
    _HELD.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
