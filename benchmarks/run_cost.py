"""Where a plain run's time goes, thread by thread: ``python -m benchmarks.run_cost [--ref REF]``.

The throughput workload (``--tasks`` no-op one-time tasks all due at once, 4 workers), for
``ours`` and the ``textbook`` peer in turn, each repeat in a fresh process, alternating which
goes first. Per task it prints:

- the CPU time of each kind of thread (``/proc/self/task/<tid>/stat``: user + system), so
  the sum is what a quiet machine turns into tasks/s (the GIL lets one thread run Python at
  a time: throughput is about one over that sum);
- context switches, voluntary and not, of all the process's threads (each is a thread
  hand-off: a wake-up, or a wait for the GIL);
- for ours, the scheduler's messages (``Drain`` wake-ups) and the workers' (``RunBatch``);
- the garbage collector's collections per generation.

Figures are medians over the repeats. CPU time is steadier than tasks/s on a shared
machine, but not free of its load (a busy sibling core slows every instruction): compare
figures taken in the same run, and say the load (``uptime``) beside them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import collections, gc, json, os, sys, threading, time
sys.path.insert(0, ".")
from benchmarks.completions import Completions

peer, n = sys.argv[1], int(sys.argv[2])
messages = collections.Counter()
if peer in ("ours", "metrics", "served"):
    from actors import Scheduler
    from actors.runtime import scheduler as scheduler_module, worker as worker_module

    def counted(cls, side):
        receive = cls.on_receive
        def on_receive(self, message):
            messages[f"{side} {type(message).__name__}"] += 1
            return receive(self, message)
        cls.on_receive = on_receive

    counted(scheduler_module.SchedulerActor, "scheduler")
    counted(worker_module.WorkerActor, "worker")
    s = Scheduler(workers=4)
    schedule, stop = (lambda fn: s.schedule_once(fn, delay=0.0)), s.shutdown
    if peer == "metrics":  # benchmarks.watched's metrics mode: registered, never scraped
        from prometheus_client import CollectorRegistry
        from actors.metrics import register
        register(s, CollectorRegistry())
    if peer == "served":  # benchmarks.watched's served mode: the page open, /metrics scraped
        from actors.web import app
        from actors.web.server import WebServer
        from benchmarks.watched import WATCHERS, _get, _poll
        server = WebServer(app(s))
        server.start()
        polling = threading.Event()
        for path, every in WATCHERS["served"]:
            _get(server.url + path)
            threading.Thread(target=_poll, args=(server.url + path, every, polling), name="client").start()

        def stop():
            polling.set()
            server.stop()
            s.shutdown()
else:
    from benchmarks.textbook import TextbookScheduler
    t = TextbookScheduler(4)
    t.start()
    schedule, stop = (lambda fn: t.schedule(fn, 0.0)), t.shutdown

def kind(thread_name):
    name = thread_name.split("-")[0]
    if name == "textbook":  # textbook-timer, textbook-worker_<n>
        return "timer" if "timer" in thread_name else "workers"
    return {"MainThread": "caller", "SchedulerActor": "scheduler", "WorkerActor": "workers"}.get(name, name)

def threads():
    tick = os.sysconf("SC_CLK_TCK")
    cpu, switches = collections.Counter(), [0, 0]
    for thread in threading.enumerate():
        try:
            with open(f"/proc/self/task/{thread.native_id}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{thread.native_id}/status") as f:
                status = dict(line.split(":", 1) for line in f if "ctxt" in line)
        except OSError:
            continue
        cpu[kind(thread.name)] += (int(fields[11]) + int(fields[12])) / tick
        switches[0] += int(status["voluntary_ctxt_switches"])
        switches[1] += int(status["nonvoluntary_ctxt_switches"])
    return cpu, switches

done = Completions(n)
gc0 = [g["collections"] for g in gc.get_stats()]
cpu0, sw0 = threads()
t0 = time.perf_counter()
for _ in range(n):
    schedule(done.hit)
if not done.wait(600):
    raise TimeoutError("the tasks did not all run")
elapsed = time.perf_counter() - t0
cpu1, sw1 = threads()
gc1 = [g["collections"] for g in gc.get_stats()]
stop()
out = {"tasks_per_s": n / elapsed}
for name in cpu1:
    out[f"cpu_us {name}"] = (cpu1[name] - cpu0.get(name, 0.0)) / n * 1e6
out["cpu_us all"] = sum(v for k, v in out.items() if k.startswith("cpu_us "))
out["switches voluntary"] = (sw1[0] - sw0[0]) / n
out["switches involuntary"] = (sw1[1] - sw0[1]) / n
for name, count in messages.items():
    out[f"messages {name}"] = count / n
for generation, (a, b) in enumerate(zip(gc0, gc1)):
    out[f"gc gen{generation}"] = b - a
print(json.dumps(out))
"""


def measure(checkout: Path, peer: str, tasks: int) -> dict[str, float]:
    """One fresh process of ``checkout`` running ``peer``: its figures per task."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, peer, str(tasks)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Measure both peers, alternating, and print the medians side by side."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peers", default="ours,textbook")
    parser.add_argument("--ref", help="also measure ours at this commit (a temporary git worktree)")
    options = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    peers = options.peers.split(",")
    with contextlib.ExitStack() as stack:
        checkouts = dict.fromkeys(peers, here)
        if options.ref:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            before = scratch / "ref"
            subprocess.run(
                ["git", "worktree", "add", "--detach", "--quiet", str(before), options.ref],
                cwd=here,
                check=True,
            )
            stack.callback(
                subprocess.run, ["git", "worktree", "remove", "--force", str(before)], cwd=here, check=True
            )
            peers.append(f"ours@{options.ref}")
            checkouts[peers[-1]] = before
        rows: dict[str, list[dict[str, float]]] = {peer: [] for peer in peers}
        for repeat in range(options.repeats):
            for peer in peers if repeat % 2 == 0 else reversed(peers):
                rows[peer].append(measure(checkouts[peer], peer.split("@")[0], options.tasks))
    keys = sorted({key for runs in rows.values() for run in runs for key in run})
    print(f"per task, {options.tasks:,} no-op tasks due at once, 4 workers, median of {options.repeats} runs")
    print(f"  {'figure':<34}" + "".join(f"{peer:>14}" for peer in peers))
    for key in keys:
        cells = []
        for peer in peers:
            values = [run[key] for run in rows[peer] if key in run]
            cells.append(f"{statistics.median(values):14.4g}" if values else f"{'':>14}")
        print(f"  {key:<34}" + "".join(cells))


if __name__ == "__main__":
    main()
