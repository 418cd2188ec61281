"""The child is a fresh interpreter: it never runs the parent's ``__main__`` and never outlives it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.process.conftest import Listener
from tests.process.test_deaths import wait_gone

ROOT = Path(__file__).resolve().parents[2]


def write_script(directory: Path, body: str) -> Path:
    """Write a script with no ``if __name__ == "__main__"`` guard that imports this checkout."""
    script = directory / "script.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n" + textwrap.dedent(body))
    return script


def read_line(process: subprocess.Popen[str], timeout: float = 10.0) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no output within {timeout} s"
    return process.stdout.readline()


def test_the_child_does_not_run_the_parents_main(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        """
        import os
        from actors.process.slot import ProcessSlot

        print("main ran in", os.getpid(), flush=True)
        with ProcessSlot() as slot:
            print("child", slot.call("os:getpid", (), {}))
        """,
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout  # the child printed nothing: it never ran this script
    assert lines[0] == f"main ran in {done.stdout.split()[3]}"
    assert lines[1].startswith("child ")
    assert lines[1].split()[1] != lines[0].split()[3]


def test_the_child_imports_the_library_from_the_parents_checkout(tmp_path: Path) -> None:
    """The child puts the directory holding ``actors`` first, however deep the slot's module is."""
    (tmp_path / "where.py").write_text("def actors_file():\n    import actors\n    return actors.__file__\n")
    script = write_script(
        tmp_path,
        """
        from actors.process.slot import ProcessSlot

        with ProcessSlot() as slot:
            print(slot.call("where:actors_file", (), {}))
        """,
    )
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(ROOT / "actors" / "__init__.py")


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "in-a-task"])
def test_the_child_exits_when_its_parent_is_killed(tmp_path: Path, listener: Listener, busy: bool) -> None:
    script = write_script(
        tmp_path,
        f"""
        import threading
        from actors.process.slot import ProcessSlot

        slot = ProcessSlot()
        print(slot.call("os:getpid", (), {{}}), flush=True)
        if {busy}:
            slot.call("tests.process.tasks:announce_and_block", ({listener.address!r},), {{}})
        threading.Event().wait()
        """,
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(read_line(parent))
        if busy:
            assert listener.accept_pid() == child  # the child is inside the task now
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        assert parent.stdout is not None
        parent.stdout.close()
    wait_gone(child)
