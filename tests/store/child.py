"""Programs the SQLite store tests run in other processes: ``python -m tests.store.child CMD PATH``.

``hold``: open the store, print ``held <pid>``, and keep it until stdin closes.
``hold-fork``: as ``hold``, then fork a child that reports whether its copy of the store is
usable (``child <pid> <refused|usable>``) and waits for stdin to close too.
``churn SEED``: add, cancel and save in a loop, printing each call's intent before it and
its acknowledgement after it returns, until killed.
"""

from __future__ import annotations

import os
import random
import sys

from actors.errors import StoreError
from actors.store import SQLiteStore
from tests.store.helpers import definition, record, update


def hold(path: str) -> None:
    store = SQLiteStore(path)
    store.open()
    print(f"held {os.getpid()}", flush=True)
    sys.stdin.read()  # until the test closes our stdin (or kills us)
    store.close()


def hold_fork(path: str) -> None:
    store = SQLiteStore(path)
    store.open()
    print(f"held {os.getpid()}", flush=True)
    pid = os.fork()
    if pid == 0:  # the child: its copy of the store must be unusable, and must not lock
        try:
            store.get("x")
        except StoreError:
            state = "refused"
        else:
            state = "usable"
        print(f"child {os.getpid()} {state}", flush=True)
        sys.stdin.read()
        os._exit(0)
    sys.stdin.read()
    store.close()


def churn(path: str, seed: int) -> None:
    rng = random.Random(seed)
    store = SQLiteStore(path)
    store.open()
    print("open", flush=True)
    live: list[str] = []
    for n in range(1_000_000):
        choice = rng.random()
        if live and choice < 0.3:
            victim = live.pop(rng.randrange(len(live)))
            print(f"c {victim}", flush=True)
            cancelled = store.cancel(victim)
            print(f"C {victim} {int(cancelled)}", flush=True)
        elif live and choice < 0.4:
            task = store.get(rng.choice(live))
            assert task is not None
            run = task.run_count + 1
            print(f"s {task.task_id} {run}", flush=True)
            store.save([update(task, run_count=run, last_outcome="completed")], [record(task, run)])
            print(f"S {task.task_id} {task.seq} {run}", flush=True)
        else:
            task_id = f"{seed}-{n}"
            print(f"a {task_id}", flush=True)
            store.add(definition(task_id))
            print(f"A {task_id}", flush=True)
            live.append(task_id)


def main() -> None:
    command, path, *rest = sys.argv[1:]
    if command == "hold":
        hold(path)
    elif command == "hold-fork":
        hold_fork(path)
    elif command == "churn":
        churn(path, int(rest[0]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
