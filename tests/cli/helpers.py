"""Running the command line as the user does: a real subprocess, read line by line."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

TASKS = Path(__file__).with_name("job_tasks.py")


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("COLUMNS", None)
    return env


def write_jobfile(folder: Path, text: str, name: str = "jobs.toml") -> Path:
    """Write a job file, with the tests' tasks.py beside it."""
    shutil.copyfile(TASKS, folder / "tasks.py")
    path = folder / name
    path.write_text(text)
    return path


def cli(*args: str, cwd: Path, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run ``python -m actors ARGS`` to its end; return what it printed and its exit code."""
    return subprocess.run(
        [sys.executable, "-m", "actors", *args],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class Service:
    """``python -m actors run ...`` in the background; its output (stderr merged) read as lines."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "actors", "run", *args],
            cwd=cwd,
            env=environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._position = 0
        self._reader = threading.Thread(target=self._read, name="service-output", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._seen:
                self.lines.append(line.rstrip("\n"))
                self._seen.notify_all()
        with self._seen:
            self.lines.append("<end of output>")
            self._seen.notify_all()

    def expect(self, pattern: str, timeout: float = 15.0, *, anywhere: bool = False) -> re.Match[str]:
        """Wait for the next line (after the last one expected) matching ``pattern``.

        ``anywhere``: any line so far will do, even one before the last one expected (for
        lines whose order against the others is not fixed); the position does not move.
        """
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._seen:
            position = 0 if anywhere else self._position
            while True:
                while position < len(self.lines):
                    line = self.lines[position]
                    position += 1
                    match = compiled.search(line)
                    if match:
                        if not anywhere:
                            self._position = position
                        return match
                if self.lines and self.lines[-1] == "<end of output>":
                    raise AssertionError(f"the service ended without printing {pattern!r}:\n{self.output()}")
                left = deadline - time.monotonic()
                if left <= 0 or not self._seen.wait(left):
                    raise AssertionError(f"no line matched {pattern!r} within {timeout} s:\n{self.output()}")

    def output(self) -> str:
        return "\n".join(self.lines)

    def send(self, signum: signal.Signals) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout: float = 15.0) -> int:
        """Wait for the process to exit and its output to be read; return its exit code."""
        code = self.process.wait(timeout)
        self._reader.join(timeout)
        return code

    def __enter__(self) -> Service:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self._reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()
