"""Nodes the PostgreSQL tests run in other processes: ``python -m tests.store.pg_child CMD ...``.

``claim DSN SCHEMA LEASE LIMIT``: open a node, claim up to LIMIT due rows, print
``claimed <n> <latest expiry>``, then block until stdin closes (or a kill -9).

``fork DSN SCHEMA``: open a node that holds a lease and listens, then fork. The child reports
whether its copy of the store is usable (``child refused|usable``), closes it and exits
normally (finalizing what it inherited); then the parent reports whether its own pool,
listener and renewal connection survived that (``parent <ok|broken> <hint|no-hint> renewed N``).

``work DSN SCHEMA LEASE BATCH RUNS SEED STALL``: a scheduler's loop, reduced to the store:
claim up to BATCH due rows, "run" each (nothing), and commit them in one fenced ``save``
with a ledger row each: the task's next run is due at once until it has run RUNS times,
then it completes. With probability STALL a batch stalls past its lease before saving, so
another node claims its rows and this save is fenced out. Prints ``batch <runs> <new>`` for
each save (runs it tried to commit, ledger rows that landed) and ``stalled`` before each
stall, and exits when no live row is left. Idles on the store's hints (``listen``) with the
lease as the poll interval.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time

from actors.errors import StoreError
from actors.store import PostgresStore, TaskUpdate
from tests.store.helpers import definition, record


def claim(dsn: str, schema: str, lease: float, limit: int) -> None:
    store = PostgresStore(dsn, schema=schema, lease=lease, node=f"child-{os.getpid()}")
    store.open()
    leases = store.claim_due(limit)
    latest = max((held.expires for held in leases), default=0.0)
    print(f"claimed {len(leases)} {latest!r}", flush=True)
    sys.stdin.read()  # until the test closes our stdin (or kills us)
    store.close()


def fork(dsn: str, schema: str) -> None:
    store = PostgresStore(dsn, schema=schema, node=f"forker-{os.getpid()}")
    store.open()
    store.add(definition("a", next_due=store.db_now() - 1))
    leases = store.claim_due(1)
    assert store.renew(leases)  # the renewals' own connection is open too
    hint = threading.Event()
    stop = store.listen(hint.set)
    pid = os.fork()
    if pid == 0:  # the child: its copy must refuse, and must not end the parent's sessions
        try:
            store.get("a")
        except StoreError:
            state = "refused"
        else:
            state = "usable"
        print(f"child {state}", flush=True)
        store.close()
        sys.exit(0)  # a normal exit: finalizers run on everything inherited
    os.waitpid(pid, 0)
    try:
        store.add(definition("b"))
        renewed = len(store.renew(leases))
        state = "ok" if store.get("a") is not None else "broken"
    except StoreError:
        state, renewed = "broken", 0
    print(f"parent {state} {'hint' if hint.wait(5) else 'no-hint'} renewed {renewed}", flush=True)
    stop()
    store.close()


def work(dsn: str, schema: str, lease: float, batch: int, runs: int, seed: int, stall: float) -> None:
    rng = random.Random(seed)
    store = PostgresStore(
        dsn, schema=schema, lease=lease, poll=lease, node=f"worker-{os.getpid()}", run_history=1_000_000
    )
    store.open()
    hint = threading.Event()
    stop = store.listen(hint.set)
    try:
        while True:
            hint.clear()
            leases = store.claim_due(batch)
            if not leases:
                if store.next_wakeup() is None:
                    return
                hint.wait(lease)  # a hint, or the poll: a lease may have ended meanwhile
                continue
            if rng.random() < stall:
                # Stall past the lease, as a paused or overloaded node would (the fault this
                # process injects): the rows become claimable by the other nodes, and this
                # save must be fenced out if one of them claimed them.
                print("stalled", flush=True)
                deadline = max(held.expires for held in leases) + lease  # the others poll that often
                while store.db_now() < deadline:
                    time.sleep(lease / 4)
            updates, ledger = [], []
            for held in leases:
                task, run = held.task, held.task.run_count + 1
                done = run >= runs
                updates.append(
                    TaskUpdate(
                        task_id=task.task_id,
                        seq=task.seq,
                        status="completed" if done else "scheduled",
                        next_due=None if done else task.next_due,  # due again at once
                        run_count=run,
                        failure_count=0,
                        consecutive_failures=0,
                        last_error=None,
                        last_outcome="completed",
                        fence=held.fence,
                    )
                )
                ledger.append(record(task, run, due=task.next_due))
            new = store.save(updates, ledger)
            print(f"batch {len(leases)} {new}", flush=True)
    finally:
        stop()
        store.close()


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "claim":
        dsn, schema, lease, limit = args
        claim(dsn, schema, float(lease), int(limit))
    elif command == "fork":
        dsn, schema = args
        fork(dsn, schema)
    elif command == "work":
        dsn, schema, lease, batch, runs, seed, stall = args
        work(dsn, schema, float(lease), int(batch), int(runs), int(seed), float(stall))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
