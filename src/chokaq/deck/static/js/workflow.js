// The workflow tab of the drawer: every job of the workflow the open job belongs to, in steps
// by depth, with the counts per state; admins cancel the whole workflow here.

import { api } from "./api.js";
import { isAdmin, user } from "./config.js";
import { confirmAction } from "./confirm.js";
import { $, attrText, clear, el, setText, toast, userText } from "./dom.js";
import { showTab } from "./drawer.js";
import { fmtNum, shortId } from "./format.js";
import { jobLink, stateBadge } from "./inspector.js";
import { publish, state, subscribe } from "./store.js";

var workflowData = null;  // the workflow as last read
var workflowText = "";    // ...and as JSON, to rebuild the list only when it changed

export function init() {
  document.querySelector('#drawer-tabs [data-tab="workflow"]').addEventListener("click", function () {
    openWorkflow((state.jobData && state.jobData.workflow_id) || state.workflow);
  });
  $("insp-workflow-link").addEventListener("click", function () { openWorkflow(this.dataset.workflow); });
  if (isAdmin) { $("wf-cancel").addEventListener("click", cancelWorkflow); }
  subscribe("snapshot", function () {
    if (state.workflow && !$("workflow").hidden) { refreshWorkflow(); }
  });
  subscribe("connected", refreshWorkflow);
}

var STATE_ORDER = ["pending", "fetched", "processing", "waiting", "blocked", "succeeded", "failed", "purged"];

function openWorkflow(id) {
  if (!id) { return; }
  if (state.workflow !== id) {
    workflowData = null; workflowText = "";
    clear($("wf-levels")); clear($("wf-counts"));
    $("wf-banner").textContent = "WORKFLOW";
    $("wf-banner").className = "banner";
    $("workflow").dataset.finished = "";
  }
  state.workflow = id;
  $("drawer").hidden = false;
  $("workflow").dataset.id = id;
  setText($("wf-id"), id);
  document.querySelector('#drawer-tabs [data-tab="workflow"]').disabled = false;
  showTab("workflow");
  refreshWorkflow();
}

function refreshWorkflow() {
  var id = state.workflow;
  if (!id) { return; }
  api("/api/workflows/" + encodeURIComponent(id)).then(function (w) {
    if (state.workflow === id) { renderWorkflow(w); }
  }).catch(function (e) {
    if (state.workflow === id) {
      workflowText = "";
      setText($("wf-banner"), e.message);
      $("wf-banner").className = "banner gone";
      $("workflow").dataset.finished = "";
    }
  });
}

// Jobs grouped by depth (a step holds the jobs whose deepest parent is in the step before),
// each with its state, a link to the inspector and the parents it waits on. The list is
// rebuilt only when the workflow changed, so a click is never lost to a refresh.
function renderWorkflow(w) {
  var text = JSON.stringify(w);
  workflowData = w;
  var box = $("workflow");
  box.dataset.finished = String(w.finished);
  if (isAdmin) { $("wf-cancel").disabled = w.finished; }
  if (text !== workflowText) { workflowText = text; buildWorkflow(w); }
  document.querySelectorAll("#wf-levels .wf-job").forEach(function (li) { li.classList.toggle("on", li.dataset.id === state.job); });
}

function buildWorkflow(w) {
  var banner = $("wf-banner");
  banner.textContent = "WORKFLOW · " + (w.finished ? "FINISHED" : "UNFINISHED") + " · " + w.total + " job(s) in " + w.depth + " step(s)";
  banner.className = "banner " + (w.finished ? "archive" : ((w.counts.blocked || 0) > 0 ? "blocked" : "hot"));
  var counts = $("wf-counts");
  clear(counts);
  STATE_ORDER.forEach(function (st) {
    var n = w.counts[st];
    if (n) { counts.appendChild(el("span", { className: "chip count", dataset: { state: st } }, stateBadge(st), " " + fmtNum(n))); }
  });
  var short = {};
  w.jobs.forEach(function (job) { short[job.id] = shortId(job.id); });
  var levels = $("wf-levels");
  clear(levels);
  var lists = [];
  w.jobs.forEach(function (job) {
    var ol = lists[job.depth];
    if (!ol) {
      ol = lists[job.depth] = el("ul", { className: "links" });
      levels.appendChild(el("section", { className: "wf-level", dataset: { depth: String(job.depth) } },
        el("h4", null, "Step " + (job.depth + 1)), ol));
    }
    var li = el("li", { className: "wf-job", dataset: { id: job.id, state: job.state } },
      stateBadge(job.state), " ", jobLink(job.id), " ", el("span", { className: "ltype" }, userText(job.type || "?")),
      " ", el("span", { className: "chip" }, userText(job.queue || "?")));
    if (job.parents.length) {
      li.appendChild(el("span", { className: "after hint" }, "after ", userText(job.parents.map(function (p) { return short[p] || p; }).join(", "))));
      // after_outcome="any": it runs once its parents have finished, succeeded or not.
      if (job.any_outcome) { li.appendChild(el("span", { className: "chip any-outcome" }, "any outcome")); }
    }
    if (job.failure_reason) { li.appendChild(el("span", { className: "chip" }, userText(job.failure_reason))); }
    if (job.error) { li.appendChild(el("span", { className: "err", title: attrText(job.error) }, userText(job.error.split("\n").slice(-1)[0]))); }
    ol.appendChild(li);
  });
  $("wf-truncated").hidden = !w.truncated;
  $("wf-truncated").textContent = w.truncated ? "Only the first " + w.total + " jobs are listed." : "";
}

function cancelWorkflow() {
  var w = workflowData;
  if (!w) { return; }
  var open = w.jobs.filter(function (job) { return ["succeeded", "failed", "purged"].indexOf(job.state) < 0; });
  var blocked = open.filter(function (job) { return job.state === "blocked"; }).length;
  confirmAction("Cancel workflow " + w.id.slice(0, 8) + "…?",
    "Its " + open.length + " unfinished job(s) stop: " + blocked + " blocked one(s) go to the DLQ as dependency_failed, " +
    "the others are cancelled (running ones are stopped by their worker). Recorded as " + user + ".",
    "CANCEL").then(function (ok) {
    if (!ok) { return; }
    api("/api/workflows/" + encodeURIComponent(w.id) + "/cancel", { confirm: "CANCEL" }).then(function (r) {
      toast("Workflow cancelled: " + r.cancelled.length + " job(s) to the DLQ" +
        (r.requested.length ? ", stop requested for " + r.requested.length : ""));
      refreshWorkflow(); publish("jobs-changed");
    }).catch(function (e) { toast(e.message, true); });
  });
}
