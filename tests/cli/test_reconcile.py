"""The file-is-the-truth diff, as data: one decision per job, then the cancels (no scheduler needed)."""

from __future__ import annotations

from actors.cli.jobfile import parse_jobfile
from actors.cli.reconcile import Decision, Held, fingerprints_of, reconcile

FILE = """
[jobs.same]
fn = "tasks:tick"
every = "10s"

[jobs.changed]
fn = "tasks:tick"
every = "10s"

[jobs.new]
fn = "tasks:tick"
cron = "0 9 * * *"

[jobs.ran]
fn = "tasks:tick"
at = 2026-01-01T00:00:00Z

[jobs.revived]
fn = "tasks:tick"
delay = "5s"
"""


def test_each_rule_of_the_table() -> None:
    jobs = parse_jobfile(FILE, "jobs.toml").jobs
    recorded = fingerprints_of(jobs)
    recorded["changed"] = "an older definition"
    recorded["revived"] = "an older definition"
    held = [
        Held("same", live=True, status="scheduled"),
        Held("changed", live=True, status="scheduled"),
        Held("ran", live=False, status="completed"),
        Held("revived", live=False, status="failed"),
        Held("gone", live=True, status="scheduled"),
        Held("long-gone", live=False, status="cancelled"),
    ]
    decisions = reconcile(jobs, held, recorded)
    assert [(d.action, d.task_id, d.reason) for d in decisions] == [
        ("keep", "same", "unchanged"),
        ("replace", "changed", "definition changed"),
        ("add", "new", "new job"),
        ("ended", "ran", "unchanged, and it ended completed; change it to schedule it again"),
        ("add", "revived", "it ended failed, and its definition changed"),
        ("cancel", "gone", "not in the job file any more"),
    ]
    specs = {spec.job_id: spec for spec in jobs}
    assert all(d.spec is specs[d.task_id] for d in decisions if d.action != "cancel")
    assert decisions[-1] == Decision("cancel", "gone", None, "not in the job file any more")


def test_a_live_task_whose_definition_was_never_recorded_is_replaced() -> None:
    jobs = parse_jobfile(FILE, "jobs.toml").jobs
    decisions = reconcile(jobs[:1], [Held("same", live=True, status="scheduled")], {})
    assert [(d.action, d.reason) for d in decisions] == [("replace", "no record of its definition")]


def test_an_unchanged_file_is_all_keeps_and_an_empty_store_all_adds() -> None:
    jobs = parse_jobfile(FILE, "jobs.toml").jobs
    live = [Held(spec.job_id, live=True, status="scheduled") for spec in jobs]
    assert {d.action for d in reconcile(jobs, live, fingerprints_of(jobs))} == {"keep"}
    assert [d.action for d in reconcile(jobs, [], {})] == ["add"] * len(jobs)


def test_a_job_cancelled_when_it_left_the_file_is_scheduled_afresh_when_it_comes_back() -> None:
    jobs = parse_jobfile(FILE, "jobs.toml").jobs
    held = [Held("same", live=False, status="cancelled")]  # its row kept its fingerprint
    decisions = reconcile(jobs[:1], held, fingerprints_of(jobs))
    assert [(d.action, d.reason) for d in decisions] == [
        ("add", "it was cancelled, and it is in the job file again")
    ]


def test_an_ended_task_whose_definition_was_never_recorded_is_added_saying_so() -> None:
    jobs = parse_jobfile(FILE, "jobs.toml").jobs
    decisions = reconcile(jobs[3:4], [Held("ran", live=False, status="completed")], {})
    assert [(d.action, d.reason) for d in decisions] == [
        ("add", "it ended completed, and there is no record of its definition")
    ]


def test_a_live_task_whose_stored_row_is_damaged_is_replaced_whatever_its_fingerprint() -> None:
    jobs = parse_jobfile(FILE, "jobs.toml").jobs
    damage = "its column trigger_json ('[1]') does not decode: is JSON list, not an object"
    held = [
        Held("same", live=True, status="scheduled", damage=damage),
        Held("changed", live=True, status="scheduled", damage=damage, counters_decode=False),
    ]
    decisions = reconcile(jobs[:2], held, fingerprints_of(jobs))  # both unchanged
    assert decisions == [
        Decision("replace", "same", jobs[0], f"its stored row was damaged: {damage}"),
        Decision(
            "replace",
            "changed",
            jobs[1],
            f"its stored row was damaged: {damage}; its counters did not decode, so they start at zero",
            afresh=True,
        ),
    ]
