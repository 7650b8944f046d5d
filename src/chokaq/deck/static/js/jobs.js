// The Jobs panel: one table for the Active, Archive and DLQ tabs with the server's filters,
// sort and paging; row selection; and the live refresh, which pauses while rows are selected or
// a job is open. The bulk bar's actions are bulk.js; a row opens the inspector (inspector.js).

import { cancelJobs, isDelayed, resurrect, runNowButton } from "./actions.js";
import { api } from "./api.js";
import { isAdmin, REASONS } from "./config.js";
import { $, attrText, clear, el, setText, syncRows, toast, userText } from "./dom.js";
import { ago, fmtNum, fmtSecs, shortId, when } from "./format.js";
import { openJob } from "./inspector.js";
import { writeLink } from "./link.js";
import { publish, state, subscribe } from "./store.js";

var jobsBusy = false, jobsAgain = false;  // a read in flight; another asked for meanwhile
var pages = 1, next = null, previous = null;  // the last page read: its count and cursor tokens
var liveMode = "auto", pausedAt;  // the live refresh: see refreshJobs
var ticks = 0, lastSummary = null;  // snapshots seen, and the last one's counts
var connections = 0;  // live streams opened (the first, then any reconnect)

export function init() {
  var form = $("filters");
  REASONS.forEach(function (r) { form.elements.reason.appendChild(el("option", { value: r }, r)); });
  document.querySelectorAll("#source button").forEach(function (b) {
    b.addEventListener("click", function () { setSource(b.dataset.source); });
  });
  form.addEventListener("submit", function (ev) { ev.preventDefault(); firstPage(); writeLink(); publish("filters"); loadJobs(); });
  form.addEventListener("input", function () { publish("filters"); });
  form.addEventListener("reset", function () { setTimeout(function () { firstPage(); writeLink(); publish("filters"); loadJobs(); }, 0); });
  // A cursor belongs to one sort, order and page size: changing one starts from page 1.
  ["sort", "order", "page_size"].forEach(function (name) {
    form.elements[name].addEventListener("change", function () { firstPage(); writeLink(); });
  });
  $("first").addEventListener("click", function () { goPage("first"); });
  $("prev").addEventListener("click", function () { goPage("before", previous); });
  $("next").addEventListener("click", function () { goPage("after", next); });
  $("last").addEventListener("click", function () { goPage("last"); });
  $("live-toggle").addEventListener("click", function () {
    liveMode = pauseReason() === null ? "paused" : "live";
    refreshJobs(false);
  });
  // Opening or closing the drawer pauses or resumes the table, whoever opened it.
  new MutationObserver(function () { refreshJobs(false); }).observe($("drawer"), { attributes: true, attributeFilter: ["hidden"] });
  $("job-rows").addEventListener("copy", copyFullId);
  if (isAdmin) {
    $("select-all").addEventListener("change", function () {
      var on = this.checked;
      document.querySelectorAll("#job-rows tr").forEach(function (tr) {
        if (on) { state.selected.add(tr.dataset.id); } else { state.selected.delete(tr.dataset.id); }
        tr.querySelector(".sel").checked = on;
      });
      updateSelection();
    });
    $("clear-selection").addEventListener("click", function () {
      state.selected.clear();
      document.querySelectorAll("#job-rows .sel").forEach(function (b) { b.checked = false; });
      updateSelection();
    });
  }
  subscribe("snapshot", liveReload);
  // A reconnect reconciles the table with storage at once; the first connection does not (the
  // page's link has just loaded it, and the first snapshot, which follows, reloads it).
  subscribe("connected", function () { refreshJobs(connections++ > 0); });
  subscribe("jobs-changed", function () { loadJobs(); });
}

// The jobs table is re-read when the counts moved, while jobs run on Active (their progress
// bars; every other snapshot), and every 10th snapshot: a snapshot also comes when only a lag
// figure changed, and re-reading a page each time cost an idle tab a database query every
// 0.6 s. refreshJobs holds it while the table is paused.
function liveReload(snap) {
  var prev = lastSummary, s = snap.summary;
  lastSummary = s;
  // The first snapshot reloads the table: it may be newer than the page's own read of it.
  var changed = !prev || prev.succeeded_total !== s.succeeded_total ||
    prev.failed_total !== s.failed_total || prev.pending !== s.pending ||
    prev.fetched !== s.fetched || prev.processing !== s.processing;
  ticks++;
  var running = state.source === "active" && s.processing > 0 && ticks % 2 === 0;
  refreshJobs(changed || running || ticks % 10 === 0);
}

export function filterValues() {
  var f = $("filters").elements;
  var out = {};
  ["search", "queue", "type", "partition"].forEach(function (k) { if (f[k].value.trim()) { out[k] = f[k].value.trim(); } });
  if (state.source === "active" && f.status.value) { out.status = f.status.value; }
  if (state.source === "active" && f.blocked.checked) { out.blocked = "true"; }
  if (state.source === "dlq" && f.reason.value) { out.reason = f.reason.value; }
  if (state.source === "dlq" && f.family.value) { out.family = f.family.value; }
  ["since", "until"].forEach(function (k) {
    if (f[k].value) { out[k] = new Date(f[k].value).toISOString(); }
  });
  return out;
}

export function loadJobs() {
  if (jobsBusy) { jobsAgain = true; return; }
  jobsBusy = true;
  writeLink();  // the filters and sort in force are part of the link
  var f = $("filters").elements;
  var params = new URLSearchParams(filterValues());
  params.set("source", state.source);
  params.set("sort", f.sort.value);
  params.set("order", f.order.value);
  params.set("page_size", f.page_size.value);
  setCursorParams(params);
  api("/api/jobs?" + params.toString()).then(renderJobs).catch(function (e) {
    toast("Jobs: " + e.message, true);
    if (state.cursor) { firstPage(); writeLink(); jobsAgain = true; }  // a stale or foreign cursor
  }).then(function () {
    jobsBusy = false;
    if (jobsAgain) { jobsAgain = false; loadJobs(); }
  });
}

function renderJobs(data) {
  renderPager(data);
  $("jobs").dataset.total = String(data.total);
  // The selection is not trimmed to what this page shows: it is the set of ids the operator
  // ticked, and an action applies to exactly those (updateSelection says how many are off-page).
  syncRows($("job-rows"), data.items, function (j) { return j.pillar + ":" + j.id; }, buildJobRow, updateJobRow);
  updateSelection();
}

function buildJobRow(j) {
  var tr = el("tr");
  tr.dataset.id = j.id;
  if (isAdmin) {
    var box = el("input", { type: "checkbox", className: "sel" });
    box.setAttribute("aria-label", "select " + j.id);
    box.addEventListener("click", function (ev) { ev.stopPropagation(); });
    box.addEventListener("change", function () {
      if (box.checked) { state.selected.add(j.id); } else { state.selected.delete(j.id); }
      updateSelection();
    });
    tr.appendChild(el("td", { className: "admin-only" }, box));
  }
  for (var i = 0; i < 10; i++) { tr.appendChild(el("td")); }
  ["id", "queue", "type", "prio", "status", "progress", "tries", "when", "by", "act"].forEach(function (col, k) {
    tr.children[k + (isAdmin ? 1 : 0)].dataset.col = col;
  });
  tr.addEventListener("click", function () { openJob(j.id); });
  return tr;
}

function updateJobRow(tr, j) {
  var c = Array.prototype.slice.call(tr.children, isAdmin ? 1 : 0);
  if (isAdmin) { tr.firstChild.firstChild.checked = state.selected.has(j.id); }
  setText(c[0], shortId(j.id));
  c[0].className = "id"; c[0].title = attrText(j.id); c[0].dataset.full = j.id;
  setText(c[1], j.queue); c[1].title = attrText(j.queue);
  setText(c[2], j.type); c[2].title = attrText(j.type);
  if (j.partition) { c[2].appendChild(el("span", { className: "chip part", title: "partition " + attrText(j.partition) }, userText(j.partition))); }
  c[3].textContent = j.priority === null ? "–" : j.priority;
  clear(c[4]);
  var status;
  if (j.pillar === "hot") { status = j.state || j.status; }
  else if (j.pillar === "archive") { status = "succeeded"; }
  else { status = "failed"; }
  c[4].appendChild(el("span", { className: "st-" + status }, status.toUpperCase()));
  tr.dataset.status = status;
  if (j.pillar === "dlq") {
    c[4].appendChild(el("span", { className: "chip" }, userText(j.failure_reason || "")));
    // The exception's class by its own name; the module path is in the title (and the inspector).
    if (j.error_type) { c[4].appendChild(el("span", { className: "chip exc", title: attrText(j.error_type) }, userText(j.error_type.split(".").slice(-1)[0]))); }
    if (j.error) { c[4].appendChild(el("span", { className: "err", title: attrText(j.error) }, userText(j.error.split("\n").slice(-1)[0]))); }
  }
  (j.tags || []).forEach(function (t) { c[4].appendChild(el("span", { className: "chip tag", title: attrText(t) }, userText(t))); });
  // Progress for running jobs, due time for delayed ones, duration for finished ones.
  var cell = c[5];
  if (j.pillar === "hot" && j.status === "processing") {
    var pct = Math.max(0, Math.min(100, j.progress || 0));
    var bar = cell.querySelector(".bar");
    if (!bar) { clear(cell); bar = el("span", { className: "bar" }, el("span")); bar.setAttribute("role", "progressbar"); cell.appendChild(bar); cell.appendChild(el("span", { className: "pct" })); }
    bar.firstChild.style.width = pct + "%";
    bar.setAttribute("aria-valuenow", String(pct));
    cell.querySelector(".pct").textContent = " " + pct + "%";
  } else {
    clear(cell);
    cell.title = "";
    if (j.pillar === "hot" && j.scheduled_at && Date.parse(j.scheduled_at) > Date.now()) {
      cell.appendChild(el("span", { className: "due", title: when(j.scheduled_at) }, "due " + ago(j.scheduled_at)));
    } else if (j.duration_seconds !== null && j.duration_seconds !== undefined) {
      cell.textContent = fmtSecs(j.duration_seconds);
      cell.title = j.duration_seconds + " s";
    } else { cell.textContent = "–"; }
  }
  c[6].textContent = j.attempt_count + " / " + (j.max_attempts || "–");
  c[6].title = j.max_attempts ? "tries so far / at most" : "tries so far; at most: the handler's or the worker's default";
  var at = j.failed_at || j.finished_at || j.created_at;
  c[7].textContent = ago(at); c[7].title = when(at);
  var by = j.cancelled_by || j.last_modified_by || j.created_by || "system";
  setText(c[8], by); c[8].title = attrText(by);
  clear(c[9]);
  if (isAdmin) {
    if (j.pillar === "hot") {
      var stop = el("button", { type: "button", className: "row-cancel danger" }, "Cancel");
      stop.disabled = !!j.cancel_requested_at;
      stop.addEventListener("click", function (ev) { ev.stopPropagation(); cancelJobs([j.id]); });
      c[9].appendChild(stop);
      if (isDelayed(j)) { c[9].appendChild(runNowButton(j.id)); }
    } else if (j.pillar === "dlq") {
      var retry = el("button", { type: "button", className: "row-retry" }, "Requeue");
      retry.addEventListener("click", function (ev) { ev.stopPropagation(); resurrect([j.id]); });
      c[9].appendChild(retry);
    }
  }
}

function updateSelection() {
  if (!isAdmin) { return; }
  var shown = 0;
  document.querySelectorAll("#job-rows tr").forEach(function (tr) { if (state.selected.has(tr.dataset.id)) { shown++; } });
  var off = state.selected.size - shown;
  $("selected-count").textContent = state.selected.size + " selected" + (off > 0 ? " (" + off + " not on this page)" : "");
  $("bulk").dataset.selected = String(state.selected.size);
  ["bulk-cancel", "bulk-run-now", "bulk-retry", "bulk-purge"].forEach(function (id) { $(id).disabled = state.selected.size === 0; });
  $("clear-selection").hidden = state.selected.size === 0;
  var boxes = document.querySelectorAll("#job-rows .sel");
  $("select-all").checked = boxes.length > 0 && Array.prototype.every.call(boxes, function (b) { return b.checked; });
  refreshJobs(false);
}

// -- live refresh of the jobs table: while the operator has rows selected or a job open, the
// table stops following the live snapshot, because rows moving under the cursor change what
// they are looking at (50 failures on screen become another 50 as new ones arrive). The
// selection is a frozen set of ids either way, so an action applies to exactly those. The
// toggle pauses by hand, or resumes while something is selected; the hint counts what
// finished since the pause, from the lifetime counters the snapshot carries anyway.

function pauseReason() {
  if (liveMode === "live" && state.selected.size === 0 && $("drawer").hidden) { liveMode = "auto"; }
  if (liveMode === "paused") { return "by hand"; }
  if (liveMode === "live") { return null; }
  if (state.selected.size > 0) { return state.selected.size + " selected"; }
  if (!$("drawer").hidden) { return "a job is open"; }
  return null;
}

function finishedCounts() {
  var s = state.snapshot ? state.snapshot.summary : null;
  return s ? { succeeded: s.succeeded_total, failed: s.failed_total } : null;
}

// Called on every snapshot with whether a live reload is due, and whenever what pauses the
// table may have changed; a table that resumes is reloaded at once.
function refreshJobs(due) {
  var reason = pauseReason();
  if (reason === null) {
    if (pausedAt !== undefined) { pausedAt = undefined; due = true; }
    if (due) { loadJobs(); }
  } else if (pausedAt === undefined) {
    pausedAt = finishedCounts();
  }
  showLive(reason);
}

function showLive(reason) {
  var pill = $("live-state"), toggle = $("live-toggle");
  $("jobs").dataset.live = reason === null ? "live" : "paused";
  toggle.textContent = reason === null ? "Pause" : "Resume";
  toggle.setAttribute("aria-pressed", String(reason !== null));
  toggle.title = reason === null ? "Stop refreshing the table" : "Refresh the table live again (the selection stays)";
  pill.className = "pill " + (reason === null ? "live" : "paused");
  if (reason === null) { pill.textContent = "LIVE"; return; }
  var since = "", now = finishedCounts(), then = pausedAt;
  if (now && then && state.source !== "active") {
    var key = state.source === "dlq" ? "failed" : "succeeded";
    var n = now[key] - then[key];
    if (n > 0) { since = " · " + fmtNum(n) + " " + key + " since"; }
  }
  pill.textContent = "PAUSED · " + reason + since;
}

// A copied short id is the full one: the cell shows only its distinguishing tail.
function copyFullId(ev) {
  var sel = window.getSelection(), node = sel && sel.anchorNode;
  var cell = node && (node.nodeType === 1 ? node : node.parentElement).closest("td[data-col=id]");
  if (!cell || !ev.clipboardData) { return; }
  ev.clipboardData.setData("text/plain", cell.dataset.full);
  ev.preventDefault();
}

// Shows the tab `source` from its first page; `load` false: the caller loads the table itself.
export function setSource(source, load) {
  state.source = source;
  firstPage();
  state.selected.clear();
  clear($("job-rows"));
  publish("filters");  // a bulk preview no longer applies
  document.querySelectorAll("#source button").forEach(function (b) { b.classList.toggle("on", b.dataset.source === source); });
  document.body.dataset.source = source;
  document.querySelectorAll(".only-dlq").forEach(function (n) { n.hidden = source !== "dlq"; });
  document.querySelectorAll(".only-active").forEach(function (n) { n.hidden = source !== "active"; });
  document.querySelectorAll(".only-archive").forEach(function (n) { n.hidden = source !== "archive"; });
  writeLink();
  if (load !== false) { loadJobs(); }
}

// Lists the jobs of one tab that match `fields` (filter names to values; the others cleared):
// another panel's link into the table (a partition in Limits, an error family in Top errors).
export function showJobs(source, fields) {
  var form = $("filters");
  form.reset();
  Object.keys(fields).forEach(function (name) { form.elements[name].value = fields[name]; });
  setSource(source);
}

// -- paging: the first pages by number, the others by the cursor tokens the API answers
// (next/previous: the row a page follows or precedes), so a deep page costs what the first
// does. The page number shown is counted here (a page reached by cursor has none); the
// total says "about" when the server estimated it.

export function firstPage() { state.page = 1; state.cursor = null; }

function setCursorParams(params) {
  if (!state.cursor) { return; }
  if (state.cursor.kind === "last") { params.set("last", "true"); }
  else { params.set(state.cursor.kind, state.cursor.token); }
}

function goPage(kind, token) {
  if (kind === "first") { firstPage(); }
  else if (kind === "last") { state.cursor = { kind: "last" }; state.page = pages; }
  else if (token) {
    state.cursor = { kind: kind, token: token };
    state.page = Math.max(1, state.page + (kind === "after" ? 1 : -1));
  } else { return; }
  writeLink();
  loadJobs();
}

function renderPager(data) {
  pages = data.pages;
  next = data.next;
  previous = data.previous;
  if (state.cursor && state.cursor.kind === "last") { state.page = data.pages; }
  if (!data.previous) { state.page = 1; }
  if (state.page > data.pages) { state.page = data.pages; }
  var about = data.total_estimated ? "about " : "";
  var info = $("page-info");
  info.textContent = "Page " + fmtNum(state.page) + " of " + about + fmtNum(data.pages) +
    " · " + about + fmtNum(data.total) + " jobs";
  info.title = data.total_estimated
    ? "The total is the database's estimate: counting every match exactly would cost more than the page."
    : "";
  info.dataset.estimated = data.total_estimated ? "true" : "false";
  $("first").disabled = $("prev").disabled = !data.previous;
  $("next").disabled = $("last").disabled = !data.next;
}
