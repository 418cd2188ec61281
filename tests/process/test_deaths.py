"""A child that dies, is killed or is stopped: what the call says, and what is left behind."""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from pathlib import Path

import pytest

from actors.errors import ProcessDiedError, SchedulerShutdownError, WorkerLostError
from actors.process.slot import ProcessSlot
from tests.process.conftest import Listener

TASKS = "tests.process.tasks"


def wait_gone(pid: int, timeout: float = 5.0) -> None:
    """Wait until process ``pid`` has exited (a pidfd becomes readable), ``timeout`` at most."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        assert ready, f"process {pid} still running after {timeout} s"
    finally:
        os.close(pidfd)


class BlockedCall:
    """Runs ``announce_and_block`` on a thread, and waits until the task is really running."""

    def __init__(self, slot: ProcessSlot, listener: Listener) -> None:
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(slot, listener.address), name="blocked-call")
        self._thread.start()
        self.pid = listener.accept_pid()

    def _run(self, slot: ProcessSlot, address: str) -> None:
        try:
            slot.call(f"{TASKS}:announce_and_block", (address,), {})
        except BaseException as error:
            self.error = error

    def join(self, timeout: float = 5.0) -> BaseException | None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the blocked call never ended"
        return self.error


def test_a_child_that_exits_fails_the_call_and_the_next_call_gets_a_new_child(slot: ProcessSlot) -> None:
    first = slot.call(f"{TASKS}:pid", (), {})
    with pytest.raises(ProcessDiedError, match=rf"worker process {first} exited with code 3") as caught:
        slot.call(f"{TASKS}:exit_hard", (3,), {})
    assert isinstance(caught.value, WorkerLostError)
    assert "exit_hard" in str(caught.value)
    assert not Path(f"/proc/{first}").exists()  # reaped, not a zombie
    second = slot.call(f"{TASKS}:pid", (), {})
    assert second != first
    assert slot.pid == second


def test_a_segfault_is_reported_by_its_signal_name(slot: ProcessSlot) -> None:
    with pytest.raises(ProcessDiedError, match="killed by signal SIGSEGV"):
        slot.call(f"{TASKS}:segfault", (), {})
    assert slot.call(f"{TASKS}:add", (1, 2), {}) == 3


def test_sigkill_from_outside_during_a_call(slot: ProcessSlot, listener: Listener) -> None:
    call = BlockedCall(slot, listener)
    os.kill(call.pid, signal.SIGKILL)
    error = call.join()
    assert isinstance(error, ProcessDiedError)
    assert "killed by signal SIGKILL" in str(error)


def test_kill_from_another_thread_ends_a_blocked_call_quickly(slot: ProcessSlot, listener: Listener) -> None:
    call = BlockedCall(slot, listener)
    assert call.pid == slot.pid
    with pytest.raises(RuntimeError, match="one at a time"):
        slot.call(f"{TASKS}:noop", (), {})
    killed_at = time.monotonic()
    assert slot.kill()
    error = call.join()
    assert time.monotonic() - killed_at < 2.0
    assert isinstance(error, ProcessDiedError)
    assert f"worker process {call.pid} was killed by ProcessSlot.kill()" in str(error)
    assert not Path(f"/proc/{call.pid}").exists()
    assert slot.call(f"{TASKS}:pid", (), {}) not in {call.pid, None}


def test_a_child_killed_or_dead_between_calls_is_replaced_without_an_error(slot: ProcessSlot) -> None:
    assert not slot.kill()  # nothing to kill yet
    first = slot.call(f"{TASKS}:pid", (), {})
    assert slot.kill()
    second = slot.call(f"{TASKS}:pid", (), {})
    assert second != first
    os.kill(second, signal.SIGKILL)
    wait_gone(second)
    assert not slot.alive
    assert slot.call(f"{TASKS}:pid", (), {}) not in {first, second}


def test_stop_ends_the_child_politely_reaps_it_and_closes_everything(slot: ProcessSlot) -> None:
    pid = slot.call(f"{TASKS}:pid", (), {})
    assert slot.stop() == 0  # it exited on the stop request: no signal was needed
    assert not Path(f"/proc/{pid}").exists()
    assert not slot.alive
    assert slot.pid is None
    assert slot.stop() is None  # idempotent
    with pytest.raises(SchedulerShutdownError, match="has been stopped"):
        slot.call(f"{TASKS}:pid", (), {})


def test_stop_without_a_child_and_as_a_context_manager() -> None:
    with ProcessSlot() as slot:
        pass
    with pytest.raises(SchedulerShutdownError):
        slot.call(f"{TASKS}:pid", (), {})


def test_stop_escalates_to_sigkill_when_the_child_will_not_exit(slot: ProcessSlot) -> None:
    pid = slot.call(f"{TASKS}:make_unstoppable", (), {})
    started = time.monotonic()
    assert slot.stop(timeout=0.2) == -signal.SIGKILL
    assert time.monotonic() - started < 3.0
    assert not Path(f"/proc/{pid}").exists()


def test_stop_during_a_call_kills_the_child_after_the_timeout(slot: ProcessSlot, listener: Listener) -> None:
    call = BlockedCall(slot, listener)
    slot.stop(timeout=0.2)
    error = call.join()
    assert isinstance(error, ProcessDiedError)
    assert "was killed by ProcessSlot.stop()" in str(error)
    assert not Path(f"/proc/{call.pid}").exists()
    with pytest.raises(SchedulerShutdownError):
        slot.call(f"{TASKS}:pid", (), {})


def test_an_interrupted_call_abandons_its_child_so_no_stale_reply_is_read(
    slot: ProcessSlot, listener: Listener
) -> None:
    def interrupt_when_the_task_runs() -> None:
        try:
            listener.accept_pid()
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt in the main thread, in poll()

    interrupter = threading.Thread(target=interrupt_when_the_task_runs, name="interrupter")
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            slot.call(f"{TASKS}:announce_and_block", (listener.address,), {})
    finally:
        interrupter.join(15)
    assert slot.pid is None  # killed and reaped
    assert slot.call(f"{TASKS}:add", (1, 2), {}) == 3
