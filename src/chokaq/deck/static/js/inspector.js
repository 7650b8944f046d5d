// The inspector: every field of the open job wherever it lives, its result, its parents,
// children and workflow, a durable job's steps and what it is suspended on, the last items it
// emitted (its stream), its error and failed attempts, the batches it ran in, its payload; admins requeue, cancel or
// purge it here, and send the event a suspended job waits for (the editor is editor.js, the
// workflow tab workflow.js). It refreshes live.

import { cancelJobs, purge, resurrect } from "./actions.js";
import { api } from "./api.js";
import { isAdmin } from "./config.js";
import { $, attrText, clear, el, setText, userText } from "./dom.js";
import { closeDrawer, showTab } from "./drawer.js";
import { fieldText, fmtSecs, pretty, shortId, when } from "./format.js";
import { writeLink } from "./link.js";
import { state, subscribe } from "./store.js";

export function init() {
  if (isAdmin) {
    $("insp-retry").addEventListener("click", function () { resurrect([state.job]); });
    $("insp-cancel").addEventListener("click", function () { cancelJobs([state.job]); });
    $("insp-purge").addEventListener("click", function () { purge([state.job]); });
    $("insp-event").addEventListener("submit", sendEvent);
  }
  subscribe("snapshot", function () {
    if (state.job && $("inspector") && !$("inspector").hidden) { refreshInspector(); }
  });
  subscribe("connected", refreshInspector);
  // A purge closes the drawer on a job it took; any other action shows the job's new state.
  subscribe("jobs-changed", function (change) {
    if (!change || !change.purged) { refreshInspector(); return; }
    if (state.job && change.purged.indexOf(state.job) >= 0) { closeDrawer(); }
  });
}

var FIELD_ORDER = ["id", "pillar", "status", "failure_reason", "error_type", "queue", "type", "partition", "priority", "tags",
  "parents_left", "attempt_count", "max_attempts", "timeout_seconds", "progress", "idempotency_key", "worker_id",
  "created_by", "last_modified_by", "cancelled_by", "created_at", "scheduled_at", "expires_at", "started_at",
  "heartbeat_at", "updated_at", "finished_at", "failed_at", "duration_seconds", "cancel_requested_at"];

export function openJob(id) {
  state.job = id;
  $("drawer").hidden = false;
  showTab("inspector");
  writeLink();
  refreshInspector();
}

// A button naming a job by its short id, which opens it here (from a schedule, a workflow or
// the job's parents and children).
export function jobLink(id) {
  var b = el("button", { type: "button", className: "link job-link", title: "Open job " + attrText(id) },
    userText(shortId(id)));
  b.dataset.job = id;
  b.addEventListener("click", function (ev) { ev.stopPropagation(); openJob(id); });
  return b;
}

function refreshInspector() {
  if (!state.job) { return; }
  var id = state.job;
  api("/api/jobs/" + encodeURIComponent(id)).then(function (j) {
    if (state.job === id) { renderInspector(j); }
  }).catch(function (e) {
    if (state.job === id) {
      setText($("insp-banner"), e.message);
      $("insp-banner").className = "banner";
      $("drawer").dataset.pillar = "gone";
    }
  });
}

function renderInspector(j) {
  state.jobData = j;
  var banner = $("insp-banner");
  var where = { hot: "ACTIVE", archive: "ARCHIVE · SUCCEEDED", dlq: "DLQ · " + String(j.failure_reason).toUpperCase() }[j.pillar];
  var now = j.pillar === "hot" ? (j.state || j.status) : null;
  setText(banner, where + (now ? " · " + now.toUpperCase() : ""));
  banner.className = "banner " + j.pillar + (j.state === "blocked" ? " blocked" : "");
  $("drawer").dataset.pillar = j.pillar;
  $("drawer").dataset.status = j.status || "";
  $("drawer").dataset.state = j.state || "";
  renderResult(j);
  renderSupersession(j.supersession || {});
  renderRelatives(j);
  var dl = $("insp-fields");
  clear(dl);
  FIELD_ORDER.forEach(function (k) {
    var v = j[k];
    if (v === null || v === undefined || (Array.isArray(v) && v.length === 0)) { return; }
    dl.appendChild(el("dt", null, k.replace(/_/g, " ")));
    var shown = fieldText(k, v);
    dl.appendChild(el("dd", { dataset: { field: k }, title: shown.title }, userText(shown.text)));
  });
  setText($("insp-error"), j.error || j.last_error || "(none)");
  renderSteps(j.steps || []);
  renderStream(j.stream || { length: 0, items: [] });
  renderAttempts(j.attempts || []);
  renderBatches(j.batches || []);
  setText($("insp-payload"), j.payload === null ? "(not stored)" : pretty(j.payload));
  if (isAdmin) {
    var editable = j.pillar === "dlq" || (j.pillar === "hot" && j.status === "pending");
    $("insp-edit").hidden = !editable;
    $("insp-retry").hidden = j.pillar !== "dlq";
    $("insp-purge").hidden = j.pillar !== "dlq";
    $("insp-cancel").hidden = j.pillar !== "hot";
    document.querySelector('#drawer-tabs [data-tab="editor"]').disabled = !editable;
    $("ed-requeue").hidden = j.pillar !== "dlq";
  }
}

// An archived job's return value (JSON, pretty-printed as text), or why it was not kept.
function renderResult(j) {
  var box = $("insp-result-box"), pre = $("insp-result");
  box.hidden = j.pillar !== "archive";
  if (j.result_error) {
    setText(pre, "not kept: " + j.result_error);
    pre.className = "code not-kept";
  } else {
    setText(pre, j.result === null || j.result === undefined ? "null (nothing returned)" : pretty(j.result));
    pre.className = "code";
  }
}

// An enqueue with on_conflict that took this job's idempotency key while it ran ("superseded
// by", and whether it asked it to stop), and the job this one took the key from.
function renderSupersession(s) {
  var by = $("insp-superseded"), of = $("insp-supersedes");
  clear(by);
  clear(of);
  by.hidden = !s.superseded_by;
  of.hidden = !s.supersedes;
  if (s.superseded_by) {
    by.append("Superseded by ", jobLink(s.superseded_by),
      s.cancel_requested ? " (latest wins: asked to stop) " : " ", when(s.superseded_at));
  }
  if (s.supersedes) { of.append("Supersedes ", jobLink(s.supersedes)); }
}

export function stateBadge(st) {
  return el("span", { className: "badge st-" + st }, String(st).toUpperCase());
}

// One job at the other end of a dependency: its state, a link that opens it, its type and,
// when it failed, why.
function linkItem(link) {
  var li = el("li", { dataset: { id: link.id, state: link.state } }, stateBadge(link.state), " ",
    jobLink(link.id), " ", el("span", { className: "ltype" }, userText(link.type || "?")));
  if (link.failure_reason) { li.appendChild(el("span", { className: "chip" }, userText(link.failure_reason))); }
  return li;
}

function fillLinks(list, note, links, limit) {
  clear(list);
  links.forEach(function (link) { list.appendChild(linkItem(link)); });
  if (links.length === 0) { list.appendChild(el("li", { className: "hint" }, "none")); }
  note.textContent = links.length >= limit ? "(the first " + limit + ")" : "(" + links.length + ")";
}

function renderRelatives(j) {
  var parents = j.parents || [], children = j.children || [];
  var box = $("insp-relatives");
  box.hidden = !j.workflow_id && parents.length === 0 && children.length === 0;
  var link = $("insp-workflow-link");
  setText(link, j.workflow_id ? j.workflow_id : "");
  link.dataset.workflow = j.workflow_id || "";
  $("insp-workflow").hidden = !j.workflow_id;
  fillLinks($("insp-parents"), $("insp-parents-note"), parents, j.relatives_limit || 1000);
  // What the job waits for: every parent succeeded (the default) or finished on any outcome.
  var after = $("insp-after-outcome");
  after.hidden = !j.after_outcome;
  setText(after, j.after_outcome === "any"
    ? "Runs once every parent has finished, on any outcome (succeeded or failed)."
    : "Runs once every parent has succeeded.");
  fillLinks($("insp-children"), $("insp-children-note"), children, j.relatives_limit || 1000);
  document.querySelector('#drawer-tabs [data-tab="workflow"]').disabled = !j.workflow_id && !state.workflow;
}

// -- attempt history (inspector) -----------------------------------------------------------

// Each failed attempt, newest first: its number, when and where it failed, how long it ran,
// whether it was retried or was the final failure, and its error (the first line shown, the
// whole traceback one click away in a <details>, which needs no script).
function renderAttempts(attempts) {
  var list = $("insp-attempts");
  clear(list);
  $("insp-attempts-box").hidden = attempts.length === 0;
  $("insp-attempts-note").textContent = "(" + attempts.length + ", newest first" +
    (attempts.length >= 20 ? "; a job keeps its newest 20" : "") + ")";
  attempts.forEach(function (a) {
    var outcome = a.failure_reason === null ? "retried" : "final: " + a.failure_reason;
    var head = el("div", { className: "attempt-head" },
      el("b", null, "#" + a.attempt), " ",
      el("span", { className: "chip" + (a.failure_reason === null ? "" : " final") }, outcome), " ",
      el("span", { title: a.failed_at }, when(a.failed_at)), " · ",
      (a.worker_id ? userText(a.worker_id) : "no worker"), " · ran ", fmtSecs(a.duration_seconds));
    var text = a.error || "(no error text)";
    var details = el("details", null,
      el("summary", null, userText(text.split("\n")[0])),
      el("pre", { className: "code" }, userText(text, true)));
    list.appendChild(el("li", { dataset: { seq: String(a.seq) } }, head, details));
  });
}

// The batches a batch handler ran the job in (one per attempt), newest first: the batch id,
// the attempt, its size, when and by which worker it was claimed, and its other jobs as links.
function renderBatches(batches) {
  var list = $("insp-batches");
  clear(list);
  $("insp-batches-box").hidden = batches.length === 0;
  $("insp-batches-note").textContent = "(" + batches.length + ", newest first)";
  batches.forEach(function (b) {
    var head = el("div", { className: "attempt-head" },
      el("b", null, "attempt " + b.attempt), " · batch ", el("code", null, userText(b.batch_id)),
      " · " + b.size + " job(s) · ", el("span", { title: b.claimed_at }, when(b.claimed_at)),
      " · ", userText(b.worker_id));
    var siblings = el("ul", { className: "links" });
    b.siblings.forEach(function (id) { siblings.appendChild(el("li", null, jobLink(id))); });
    var more = b.size - 1 - b.siblings.length;
    if (more > 0) { siblings.appendChild(el("li", { className: "hint" }, "and " + more + " more")); }
    list.appendChild(el("li", { dataset: { batch: b.batch_id } }, head, siblings));
  });
}

// A durable job's recorded steps, in order: name, kind and state, when it started, how long it
// ran, the size of its stored value or its error; and, for a suspended job, what it waits for.
var eventKey = null;

function renderSteps(steps) {
  var list = $("insp-steps");
  clear(list);
  $("insp-steps-box").hidden = steps.length === 0;
  $("insp-steps-note").textContent = "(" + steps.length + ", in order)";
  var pending = null;
  steps.forEach(function (s) {
    if (s.state === "pending") { pending = s; }
    var outcome = s.error ? s.error.split("\n")[0] :
      (s.value_bytes === null ? "no value" : s.value_bytes + " B stored");
    var head = el("div", { className: "attempt-head" },
      el("b", null, "#" + s.seq + " "), userText(s.name), " ",
      el("span", { className: "chip" + (s.state === "failed" ? " final" : "") }, s.kind + ": " + s.state), " ",
      el("span", { title: s.started_at || "" }, s.started_at ? when(s.started_at) : "–"), " · ran ",
      fmtSecs(s.duration_seconds), " · ", userText(outcome));
    list.appendChild(el("li", { dataset: { seq: String(s.seq) } }, head));
  });
  var line = "";
  eventKey = null;
  if (pending && pending.kind === "sleep") {
    line = "Suspended: sleeping until " + pending.wake_at;
  } else if (pending && pending.kind === "wait") {
    eventKey = pending.event_key;
    line = "Suspended: waiting for event " + pending.event_key +
      (pending.wake_at ? " (until " + pending.wake_at + ")" : "");
  } else if (pending && pending.kind === "gather") {
    var ids = [];
    try { ids = JSON.parse(pending.value || "[]"); } catch (e) { ids = []; }
    line = "Suspended: waiting for " + ids.length + " children";
  }
  setText($("insp-suspension"), line);
  if (isAdmin) { $("insp-event").hidden = eventKey === null; }
}

// The last items the job emitted (ctx.emit), oldest first: each one's index, when it was
// written, and the item's JSON as text (a user's data: a text node, never markup).
function renderStream(stream) {
  var list = $("insp-stream");
  clear(list);
  $("insp-stream-box").hidden = stream.length === 0;
  var shown = stream.items.length;
  $("insp-stream-note").textContent = shown === stream.length ?
    "(" + stream.length + ", in order)" :
    "(the last " + shown + " of " + stream.length + "; chokaq job stream ID has them all)";
  stream.items.forEach(function (it) {
    var head = el("div", { className: "attempt-head" },
      el("b", null, "#" + it.index + " "),
      el("span", { title: it.created_at || "" }, it.created_at ? when(it.created_at) : "–"), " · ",
      userText(it.item));
    list.appendChild(el("li", { dataset: { index: String(it.index) } }, head));
  });
}

function sendEvent(ev) {
  ev.preventDefault();
  if (eventKey === null) { return; }
  var text = ev.target.elements.data.value.trim();
  var data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) {
    setText($("insp-suspension"), "The event data is not JSON: " + e.message);
    return;
  }
  api("/api/events/send", { key: eventKey, data: data }).then(function () {
    ev.target.reset();
    refreshInspector();
  }).catch(function (e) { setText($("insp-suspension"), e.message); });
}
