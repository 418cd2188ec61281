"""A recurring task's policies: overlap, catch-up and jitter, and the pure arithmetic they decide by.

Part of the pure core (see ``actors/core/timetable.py``): no clock, no thread; every time comes
in as an argument. ``Policies`` is immutable and shared (``DEFAULT_POLICIES`` by every task that
asks for none, so the plain path tests one identity). The timetable asks the functions here
*which* due times run and which are missed, and carries the answer out.

- ``overlap``: what a slot that comes due while the task's run is in progress gets.
  ``"skip"`` (it is missed), ``"queue"`` (the latest such slot runs right after the run; the
  others are missed: at most one waits), ``"replace"`` (as ``"queue"``, and the run is asked to
  stop, cooperatively, as the slot comes due), ``"allow"`` with ``max_instances=N`` (a slot due
  while fewer than N runs are going starts another run at once, each with its own run number;
  with N going it is missed, as with ``"skip"``).
- ``catch_up``: what due times get that passed while nothing ran (the scheduler was down, or a
  timer or clock jump let several slots pass): ``"latest"`` (one late run, if within
  ``misfire_grace``: the behaviour before these policies), ``"all"`` (each one within
  ``misfire_grace``, oldest first, the newest ``max_catch_up`` of them), ``"none"`` (all missed;
  the next run is the first slot not past).
- ``jitter``: each run starts up to this many seconds after its due time, drawn from a
  generator seeded by the task id and the due time (repeatable); the grid never moves.

Every due time that does not get its run is a *miss* with a reason: ``"overlap"``,
``"catch_up"`` or ``"misfire"``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Final

from messages.triggers import require_finite

__all__ = [
    "ALLOW_ON_FIXED_DELAY",
    "CATCH_UP",
    "CATCH_UP_ALL",
    "CATCH_UP_LATEST",
    "CATCH_UP_NONE",
    "DEFAULT_POLICIES",
    "MISSED_EVENTS",
    "OVERLAP",
    "OVERLAP_ALLOW",
    "OVERLAP_QUEUE",
    "OVERLAP_REPLACE",
    "OVERLAP_SKIP",
    "REASON_CATCH_UP",
    "REASON_MISFIRE",
    "REASON_OVERLAP",
    "SLOT_LIMIT",
    "CatchUp",
    "Policies",
    "catch_up",
    "check_policies",
    "jitter_delay",
    "on_slot",
    "slots_between",
]

OVERLAP_SKIP: Final = "skip"
OVERLAP_QUEUE: Final = "queue"
OVERLAP_REPLACE: Final = "replace"
OVERLAP_ALLOW: Final = "allow"
OVERLAP: Final = (OVERLAP_SKIP, OVERLAP_QUEUE, OVERLAP_REPLACE, OVERLAP_ALLOW)
"""The overlap policies."""
CATCH_UP_LATEST: Final = "latest"
CATCH_UP_ALL: Final = "all"
CATCH_UP_NONE: Final = "none"
CATCH_UP: Final = (CATCH_UP_LATEST, CATCH_UP_ALL, CATCH_UP_NONE)

REASON_OVERLAP: Final = "overlap"
REASON_CATCH_UP: Final = "catch_up"
REASON_MISFIRE: Final = "misfire"

ALLOW_ON_FIXED_DELAY: Final = (
    'overlap="allow" is for fixed-rate and cron tasks: a fixed-delay task counts its next run '
    "from the end of the last, so its runs never overlap"
)
"""Why ``overlap="allow"`` is refused on a fixed-delay task (the call and the job file say it)."""

SLOT_LIMIT: Final = 100_000
"""Most slots one decision walks (and counts as missed): a longer gap counts this many."""
MISSED_EVENTS: Final = 1_000
"""Most ``MISSED`` events one decision publishes (the newest misses); ``missed_count`` counts all."""

SAME_SLOT: Final = 0.1
"""Seconds: a due time this close before a slot of its grid is that slot (``on_slot``)."""


class Policies:
    """A task's overlap, catch-up and jitter policies (immutable; see the module docstring)."""

    __slots__ = ("catch_up", "jitter", "max_catch_up", "max_instances", "overlap")

    def __init__(
        self,
        overlap: str = OVERLAP_SKIP,
        max_instances: int | None = None,
        catch_up: str = CATCH_UP_LATEST,
        max_catch_up: int = 100,
        jitter: float = 0.0,
    ) -> None:
        """Hold checked values (``check_policies`` checks them)."""
        self.overlap = overlap
        self.max_instances = max_instances
        self.catch_up = catch_up
        self.max_catch_up = max_catch_up
        self.jitter = jitter

    @property
    def allows(self) -> bool:
        """Whether runs of the task may overlap (``overlap="allow"``: up to ``max_instances`` at once)."""
        return self.overlap == OVERLAP_ALLOW

    @property
    def replaces(self) -> bool:
        """Whether a slot due during a run asks the run to stop (``overlap="replace"``)."""
        return self.overlap == OVERLAP_REPLACE

    def key(self) -> tuple[str, int | None, str, int, float]:
        """The values, in order (to compare and to store)."""
        return (self.overlap, self.max_instances, self.catch_up, self.max_catch_up, self.jitter)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policies) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        names = ("overlap", "max_instances", "catch_up", "max_catch_up", "jitter")
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(names, self.key(), strict=True))
        return f"Policies({shown})"


DEFAULT_POLICIES: Final = Policies()
"""The policies of a task that asks for none (the behaviour before they existed)."""


def check_policies(
    overlap: object,
    max_instances: object,
    catch_up: object,
    max_catch_up: object,
    jitter: object,
    *,
    recurring: bool,
) -> Policies:
    """Check the policy options of one task; return them (``DEFAULT_POLICIES`` at their defaults).

    The one place these rules live: ``TaskOptions.check`` (a call) and a stored row's decoding
    (``actors/runtime/durable.py``) both come here.

    Raises:
        TypeError: a policy name that is not a str; ``max_instances``/``max_catch_up`` not an
            int; ``jitter`` not a number.
        ValueError: an unknown policy name; ``max_instances < 1``, or above 1 without
            ``overlap="allow"`` (the only policy it means anything to); ``max_catch_up < 1``;
            ``jitter`` negative, NaN or infinite; any policy off its default on a one-time task.
    """
    overlap, instances = _check_overlap(overlap, max_instances)
    if not isinstance(catch_up, str):
        raise TypeError(f"catch_up must be a str, got {catch_up!r}")
    if catch_up not in CATCH_UP:
        raise ValueError(f"catch_up must be 'latest', 'all' or 'none', got {catch_up!r}")
    if type(max_catch_up) is not int:
        raise TypeError(f"max_catch_up must be an int, got {max_catch_up!r}")
    if max_catch_up < 1:
        raise ValueError(f"max_catch_up must be at least 1, got {max_catch_up!r}")
    if isinstance(jitter, bool) or not isinstance(jitter, int | float):
        raise TypeError(f"jitter must be a number of seconds, got {jitter!r}")
    jitter = require_finite("jitter", jitter)
    if jitter < 0:
        raise ValueError(f"jitter must not be negative, got {jitter!r}")
    policies = Policies(overlap, instances, catch_up, max_catch_up, float(jitter))
    if policies == DEFAULT_POLICIES:
        return DEFAULT_POLICIES
    if not recurring:
        raise ValueError("overlap, catch_up, max_catch_up and jitter are for recurring tasks only")
    return policies


def _check_overlap(overlap: object, max_instances: object) -> tuple[str, int | None]:
    """The rules of ``overlap`` and ``max_instances`` (``check_policies``); return them as kept.

    ``max_instances`` is kept only with ``"allow"`` (``1`` when not given); with any other
    policy it may be given only as ``1``, which is what every other policy means, and is kept
    as ``None`` (so that the defaults stay ``DEFAULT_POLICIES``).
    """
    if not isinstance(overlap, str):
        raise TypeError(f"overlap must be a str, got {overlap!r}")
    if overlap not in OVERLAP:
        raise ValueError(f"overlap must be 'skip', 'queue', 'replace' or 'allow', got {overlap!r}")
    if max_instances is not None:
        if type(max_instances) is not int:
            raise TypeError(f"max_instances must be an int, got {max_instances!r}")
        if max_instances < 1:
            raise ValueError(f"max_instances must be at least 1, got {max_instances!r}")
    if overlap == OVERLAP_ALLOW:
        return overlap, 1 if max_instances is None else max_instances
    if max_instances is not None and max_instances > 1:
        raise ValueError(
            f'max_instances={max_instances!r} needs overlap="allow" (with overlap={overlap!r} '
            "at most one run of the task is going at a time)"
        )
    return overlap, None


def jitter_delay(task_id: str, due: float, jitter: float) -> float:
    """Seconds after its due time a run starts: drawn in ``[0, jitter)``, seeded by task and due time.

    ``due`` is the slot's time as the task's store would know it (its wall-clock instant when it
    has one), so the same slot of the same task draws the same delay, run after run and restart
    after restart.
    """
    if not jitter:
        return 0.0
    return random.Random(f"{task_id}@{due!r}").random() * jitter  # spreading starts, not secrets


def slots_between(
    after: Callable[[float], float | None], start: float, end: float, *, inclusive: bool
) -> list[float]:
    """The slots strictly after ``start`` and before ``end`` (``inclusive``: or at it), oldest first.

    ``after(t)`` is the grid: its first slot strictly after ``t`` (``None``: none). At most
    ``SLOT_LIMIT`` slots are walked.
    """
    slots: list[float] = []
    at = after(start)
    while at is not None and (at < end or (inclusive and at == end)) and len(slots) < SLOT_LIMIT:
        slots.append(at)
        nxt = after(at)
        if nxt is not None and nxt <= at:  # a grid floats cannot resolve: stop walking
            break
        at = nxt
    return slots


def on_slot(after: Callable[[float], float | None], due: float) -> float:
    """The slot of the grid ``after`` a due time stands for: ``due``, or the slot just after it.

    A stored due time comes back through wall-clock seconds and the offset between clocks, so
    it may sit a few microseconds (a clock reading apart: up to ``SAME_SLOT``) before the slot
    it was written for; walking the grid from it would count that slot once more. A slot
    closer than a quarter of the grid's spacing is never a slot of its own.
    """
    following = after(due)
    if following is None or following - due >= SAME_SLOT:
        return due
    beyond = after(following)
    return following if beyond is None or beyond - following > 4 * (following - due) else due


class CatchUp:
    """What a catch-up decision says: the due time that runs next, the misses, how far runs catch up.

    Attributes:
        due_at: The due time of the next run (clock seconds).
        missed: ``(due_at, reason)`` of each missed due time, oldest first.
        until: With ``"all"``: the last slot that is caught up (each slot up to it runs in
            turn); ``None`` otherwise.
        run_now: Whether ``due_at`` is past (its run is due at once) rather than a future slot.
    """

    __slots__ = ("due_at", "missed", "run_now", "until")

    def __init__(
        self, due_at: float, missed: list[tuple[float, str]], until: float | None, *, run_now: bool
    ) -> None:
        """Hold a decision."""
        self.due_at = due_at
        self.missed = missed
        self.until = until
        self.run_now = run_now


def catch_up(
    policies: Policies,
    after: Callable[[float], float | None],
    due_at: float,
    now: float,
    misfire_grace: float | None,
) -> CatchUp | None:
    """Decide what a recurring task whose due time ``due_at`` has passed at ``now`` does with it.

    The due times passed are ``due_at`` and the slots after it up to ``now`` (``after`` is the
    grid). ``None``: nothing to decide (``"latest"``: the one late run goes on as before).

    - ``"none"``: every passed time is missed (``"catch_up"``); the next run is the first slot
      not past (a slot at ``now`` exactly is not past).
    - ``"all"``: passed times later than ``misfire_grace`` are missed (``"misfire"``); of the
      rest, the oldest beyond the newest ``max_catch_up`` are missed (``"catch_up"``); the others
      run, oldest first (``until``: the last of them).
    """
    mode = policies.catch_up
    if mode == CATCH_UP_LATEST:
        return None
    passed = [due_at, *slots_between(after, due_at, now, inclusive=mode == CATCH_UP_ALL)]
    if mode == CATCH_UP_NONE:
        missed = [time for time in passed if time < now]
        if not missed:
            return None
        following = passed[len(missed)] if len(missed) < len(passed) else after(missed[-1])
        if following is None:  # a calendar that fires no more: the last miss stands for the end
            following = math.inf
        return CatchUp(following, [(time, REASON_CATCH_UP) for time in missed], None, run_now=False)
    grace = math.inf if misfire_grace is None else misfire_grace
    kept = [time for time in passed if now - time <= grace]
    missed_reasons = [(time, REASON_MISFIRE) for time in passed[: len(passed) - len(kept)]]
    if len(kept) > policies.max_catch_up:
        cut = len(kept) - policies.max_catch_up
        missed_reasons += [(time, REASON_CATCH_UP) for time in kept[:cut]]
        kept = kept[cut:]
    if not kept:  # all too late: the next slot after now
        following = after(now)
        return CatchUp(math.inf if following is None else following, missed_reasons, None, run_now=False)
    if len(kept) == 1 and not missed_reasons:
        return None  # one run, on time or late within its grace: as ever
    return CatchUp(kept[0], missed_reasons, kept[-1], run_now=True)
