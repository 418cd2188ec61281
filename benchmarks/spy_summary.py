"""Summarise ``py-spy record --format raw`` files: ``python -m benchmarks.spy_summary FILE... [--top N]``.

Per thread (by name, numbers folded: ``worker-1`` and ``worker-2`` are ``worker-*``) the share
of samples, and over all threads the frames with most samples: *self* (the innermost frame)
and *inclusive* (anywhere on the stack), each frame ``function (file)`` without its line.
Record with ``--idle`` to see where threads wait, without it to see where CPU goes
(``python -m benchmarks.scaleout --profile DIR`` records with ``--idle``).
"""

from __future__ import annotations

import re
import sys
from collections import Counter


def parse(paths: list[str]) -> list[tuple[str, list[str], int]]:
    stacks = []
    for path in paths:
        with open(path) as raw:
            for text in raw:
                line = text.rstrip("\n")
                if not line:
                    continue
                body, _, count = line.rpartition(" ")
                frames = body.split(";")
                thread = re.sub(r"\(\d+\)", "", frames[0]).replace("thread", "").strip(" :")
                thread = re.sub(r"\d+", "*", thread) or "main"
                stacks.append((thread, [re.sub(r":\d+\)", ")", f) for f in frames[1:]], int(count)))
    return stacks


def main() -> None:
    args = sys.argv[1:]
    top = 25
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i : i + 2]
    stacks = parse(args)
    total = sum(count for _, _, count in stacks) or 1
    threads: Counter[str] = Counter()
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for thread, frames, count in stacks:
        threads[thread] += count
        if frames:
            own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    print(f"{total} samples")
    print("threads:")
    for thread, count in threads.most_common():
        print(f"  {100 * count / total:5.1f}%  {thread}")
    print("self:")
    for frame, count in own.most_common(top):
        print(f"  {100 * count / total:5.1f}%  {frame}")
    print("inclusive:")
    for frame, count in inclusive.most_common(top):
        print(f"  {100 * count / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
