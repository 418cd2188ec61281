"""The status page: one HTML document, its script reading the JSON API (no template engine).

The document holds no task data: the script fetches ``/api/tasks`` (and a task's history) and
builds the rows with ``textContent``, so a task named ``<script>`` shows as text. ``page``
only fills in whether control buttons are shown and how often the page refreshes.

The list shows ``PAGE_ROWS`` tasks at a time (``/api/tasks?offset=...&limit=...``, with
buttons to the previous and next ones): an open page of a schedule of 100,000 tasks costs the
scheduler thread 100 snapshots per refresh, not 100,000. A page in a hidden tab does not
refresh until it is shown again.
"""

from __future__ import annotations

import json
from typing import Final

__all__ = ["PAGE_ROWS", "page"]

PAGE_ROWS: Final = 100
"""Tasks the list shows at a time."""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Task scheduler</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f4f4f4; }
td.status { font-weight: 600; }
tr.paused td.status { color: #a60; } tr.failed td.status { color: #b00; }
tr.running td.status { color: #070; }
.error { color: #b00; font-family: monospace; white-space: pre-wrap; }
button { margin-right: .3em; }
#message { color: #b00; }
small { color: #666; }
</style>
</head>
<body>
<h1><a href="/">Task scheduler</a> <small id="updated"></small></h1>
<form id="token-form" hidden>
  <label>Control token <input type="password" id="token" autocomplete="off"></label>
  <button type="submit" id="token-use">Use</button>
</form>
<p id="message"></p>
<div id="list" hidden>
<table id="tasks">
<thead><tr><th>Task</th><th>Trigger</th><th>Status</th><th>Next run (local / UTC)</th><th>Runs</th>
<th>Failures</th><th>Last outcome</th><th>Last error</th><th>Lateness p50 / p99</th><th></th></tr></thead>
<tbody></tbody>
</table>
<p id="pager" hidden><button id="previous">previous</button> <span id="shown"></span>
<button id="next">next</button></p>
<div id="nodes" hidden>
<h3>Nodes</h3>
<table id="node-table">
<thead><tr><th>Node</th><th>Last seen (UTC)</th><th>Leases held</th><th>Running</th>
<th>Runs ended (recent)</th></tr></thead>
<tbody></tbody>
</table>
</div>
</div>
<div id="task" hidden>
<h2 id="task-name"></h2>
<table id="task-fields"><tbody></tbody></table>
<p id="task-controls"></p>
<h3>Runs</h3>
<table id="history">
<thead><tr><th>Run</th><th>Due (UTC)</th><th>Started (UTC)</th><th>Outcome</th><th>Lateness</th>
<th>Duration</th><th>Error</th><th>Node</th></tr></thead>
<tbody></tbody>
</table>
</div>
<script>
"use strict";
const CONTROL = __CONTROL__;
const REFRESH_MS = __REFRESH_MS__;
const PAGE_ROWS = __PAGE_ROWS__;
const KEY = "taskscheduler-token";
let pending = null;
let offset = 0;

function text(value) {
  return value === null || value === undefined || value === "" ? "\\u2013" : String(value);
}
function cell(row, value, cls) {
  const td = document.createElement("td");
  td.textContent = text(value);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}
function when(iso) {
  if (!iso) return null;
  const d = new Date(iso);
  return d.toLocaleString() + " / " + d.toISOString().slice(0, 19).replace("T", " ") + " UTC";
}
function utc(iso) { return iso ? new Date(iso).toISOString().slice(0, 23).replace("T", " ") : null; }
function ms(seconds) {
  return seconds === null || seconds === undefined ? null : (seconds * 1000).toFixed(1) + " ms";
}
function percentiles(task) {
  return task.lateness_p50 === null ? null : ms(task.lateness_p50) + " / " + ms(task.lateness_p99);
}
function say(words) { document.getElementById("message").textContent = words || ""; }
function taskId() {
  const m = location.pathname.match(/^\\/tasks\\/(.+)$/);
  return m ? decodeURIComponent(m[1]) : null;
}
function askToken() {
  const form = document.getElementById("token-form");
  form.hidden = false;
  document.getElementById("token").focus();
}
async function control(id, action) {
  const token = sessionStorage.getItem(KEY);
  if (!token) { pending = [id, action]; askToken(); say("Give the control token first."); return; }
  const url = "/api/tasks/" + encodeURIComponent(id) + "/" + action;
  const reply = await fetch(url, { method: "POST", headers: { Authorization: "Bearer " + token } });
  if (reply.status === 403) {
    sessionStorage.removeItem(KEY);
    pending = [id, action];
    askToken();
    say("The token was refused.");
    return;
  }
  const body = await reply.json().catch(() => ({}));
  say(reply.ok ? "" : action + ": " + text(body.error));
  await refresh();
}
function buttons(holder, task) {
  if (!CONTROL) return;
  const live = ["scheduled", "running", "waiting", "paused"].includes(task.status);
  if (!live) return;
  const actions = task.status === "paused" ? ["resume", "run-now", "cancel"] : ["pause", "run-now", "cancel"];
  for (const action of actions) {
    const b = document.createElement("button");
    b.textContent = action.replace("-", " ");
    b.className = "control " + action;
    b.addEventListener("click", () => control(task.id, action));
    holder.appendChild(b);
  }
}
async function fetchJson(url) {
  const reply = await fetch(url, { headers: { Accept: "application/json" } });
  if (!reply.ok) throw new Error(url + ": " + reply.status);
  return reply.json();
}
async function fetchPage() {
  const url = "/api/tasks?offset=" + offset + "&limit=" + PAGE_ROWS;
  const reply = await fetch(url, { headers: { Accept: "application/json" } });
  if (!reply.ok) throw new Error(url + ": " + reply.status);
  return [await reply.json(), Number(reply.headers.get("X-Total-Count"))];
}
async function showList() {
  let [tasks, total] = await fetchPage();
  if (tasks.length === 0 && offset > 0) {  // the list shrank below this page: show its last one
    offset = Math.max(0, Math.ceil(total / PAGE_ROWS) - 1) * PAGE_ROWS;
    [tasks, total] = await fetchPage();
  }
  document.getElementById("pager").hidden = total <= PAGE_ROWS && offset === 0;
  document.getElementById("shown").textContent = tasks.length === 0 ? "no tasks"
    : "tasks " + (offset + 1) + "\u2013" + (offset + tasks.length) + " of " + total;
  document.getElementById("previous").disabled = offset === 0;
  document.getElementById("next").disabled = offset + tasks.length >= total;
  const body = document.querySelector("#tasks tbody");
  const rows = [];
  for (const task of tasks) {
    const row = document.createElement("tr");
    row.dataset.taskId = task.id;
    row.className = task.status;
    const name = cell(row, null);
    const link = document.createElement("a");
    link.href = "/tasks/" + encodeURIComponent(task.id);
    link.textContent = task.name === task.id ? task.id : task.id + " (" + task.name + ")";
    name.replaceChildren(link);
    cell(row, task.trigger);
    cell(row, task.status, "status");
    cell(row, when(task.next_run));
    cell(row, task.runs, "runs");
    cell(row, task.failures);
    cell(row, task.last_outcome);
    cell(row, task.last_error, "error");
    cell(row, percentiles(task));
    const holder = document.createElement("td");
    row.appendChild(holder);
    buttons(holder, task);
    rows.push(row);
  }
  body.replaceChildren(...rows);
  const nodes = await fetchJson("/api/nodes");
  document.getElementById("nodes").hidden = nodes.length === 0;
  document.querySelector("#node-table tbody").replaceChildren(...nodes.map((node) => {
    const row = document.createElement("tr");
    row.dataset.node = node.node;
    cell(row, node.this_node ? node.node + " (this one)" : node.node);
    cell(row, utc(node.last_seen));
    cell(row, node.leases_held);
    cell(row, node.runs_running);
    cell(row, node.runs_ended);
    return row;
  }));
}
async function showTask(id) {
  const base = "/api/tasks/" + encodeURIComponent(id);
  const [task, history] = await Promise.all([fetchJson(base), fetchJson(base + "/history")]);
  document.getElementById("task-name").textContent = task.name;
  const fields = [["id", task.id], ["trigger", task.trigger], ["status", task.status],
    ["next run (local / UTC)", when(task.next_run)], ["runs", task.runs], ["failures", task.failures],
    ["missed", task.missed], ["last outcome", task.last_outcome], ["last error", task.last_error],
    ["lateness p50 / p99", percentiles(task)],
    ["node", task.node], ["ended", task.end_reason]];
  if ("arguments" in task) fields.push(["arguments", JSON.stringify(task.arguments)]);
  const rows = fields.map(([label, value]) => {
    const row = document.createElement("tr");
    const th = document.createElement("th");
    th.textContent = label;
    row.appendChild(th);
    cell(row, value, label === "status" ? "status" : "");
    return row;
  });
  document.querySelector("#task-fields tbody").replaceChildren(...rows);
  const controls = document.getElementById("task-controls");
  controls.replaceChildren();
  buttons(controls, task);
  const runs = history.map((run) => {
    const row = document.createElement("tr");
    cell(row, run.run + (run.manual ? " (manual)" : ""));
    cell(row, utc(run.due_wall));
    cell(row, utc(run.started_at));
    cell(row, run.reason ? run.outcome + " (" + run.reason + ")" : run.outcome);
    cell(row, ms(run.lateness));
    cell(row, ms(run.duration));
    cell(row, run.error, "error");
    cell(row, run.node);
    return row;
  });
  document.querySelector("#history tbody").replaceChildren(...runs);
}
async function refresh() {
  const id = taskId();
  try {
    if (id === null) await showList(); else await showTask(id);
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (error) {
    say(String(error.message || error));
  }
}
document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = document.getElementById("token").value;
  if (!value) return;
  sessionStorage.setItem(KEY, value);
  document.getElementById("token-form").hidden = true;
  say("");
  if (pending) { const [id, action] = pending; pending = null; control(id, action); }
});
document.getElementById("previous").addEventListener("click", () => {
  offset = Math.max(0, offset - PAGE_ROWS);
  refresh();
});
document.getElementById("next").addEventListener("click", () => { offset += PAGE_ROWS; refresh(); });
document.getElementById(taskId() === null ? "list" : "task").hidden = false;
if (CONTROL && !sessionStorage.getItem(KEY)) askToken();
refresh();
setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);  // a hidden tab asks nothing
document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
</script>
</body>
</html>
"""


def page(control: bool, refresh: float = 2.0) -> str:
    """The page's HTML: with control buttons or without, refreshing every ``refresh`` seconds."""
    return (
        _PAGE.replace("__CONTROL__", json.dumps(control))
        .replace("__REFRESH_MS__", str(max(100, round(refresh * 1000))))
        .replace("__PAGE_ROWS__", str(PAGE_ROWS))
    )
