"""A child process for the crash test: schedules and cancels durable tasks until it is killed.

Prints one JSON line per acknowledged call (after the call returned), flushed at once, so the
parent knows exactly what the scheduler promised before the SIGKILL.
"""

from __future__ import annotations

import json
import random
import sys

from actors import Scheduler


def main() -> None:
    store, runs_log, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    with Scheduler(workers=2, store=store) as s:
        print(json.dumps({"op": "started"}), flush=True)
        live: list[str] = []
        n = 0
        while True:
            n += 1
            if live and rng.random() < 0.3:
                task_id = live.pop(rng.randrange(len(live)))
                result = s.cancel(task_id)
                print(json.dumps({"op": "cancel", "id": task_id, "result": result}), flush=True)
                continue
            task_id = f"t{seed}-{n}"
            if rng.random() < 0.7:
                s.schedule_once(
                    "tests.durable.tasks:append_key",
                    delay=rng.random() * 0.3,
                    args=(runs_log,),
                    task_id=task_id,
                )
                kind = "once"
            else:
                s.schedule_at_fixed_rate(
                    "tests.durable.tasks:append_key", 0.05, args=(runs_log,), task_id=task_id
                )
                kind = "rate"
            live.append(task_id)
            print(json.dumps({"op": "schedule", "id": task_id, "kind": kind}), flush=True)


if __name__ == "__main__":
    main()
