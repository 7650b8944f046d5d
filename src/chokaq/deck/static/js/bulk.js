// The bulk bar of the jobs table (admins): the actions on the selected rows, and "all matching
// the filter" on each tab (a preview pinned to now, then the typed word, then exactly the
// previewed set). A preview is dropped when the tab, a filter or the cap changes.

import { cancelJobs, purge, resurrect, runNow } from "./actions.js";
import { api } from "./api.js";
import { isAdmin } from "./config.js";
import { confirmAction } from "./confirm.js";
import { $, clear, el, toast, userText } from "./dom.js";
import { fmtNum } from "./format.js";
import { filterValues, firstPage } from "./jobs.js";
import { writeLink } from "./link.js";
import { publish, state, subscribe } from "./store.js";

var preview = null;  // {key: "dlq:purge", data: the preview's answer}, the one on screen

export function init() {
  subscribe("filters", invalidatePreview);
  if (!isAdmin) { return; }
  $("bulk-cancel").addEventListener("click", function () { cancelJobs(Array.from(state.selected)); });
  $("bulk-run-now").addEventListener("click", function () { runNow(Array.from(state.selected)); });
  $("bulk-retry").addEventListener("click", function () { resurrect(Array.from(state.selected)); });
  $("bulk-purge").addEventListener("click", function () { purge(Array.from(state.selected)); });
  [["preview-cancel", "cancel"], ["preview-archive-requeue", "requeue"], ["preview-archive-delete", "delete"],
    ["preview-requeue", "requeue"], ["preview-purge", "purge"]].forEach(function (pair) {
    $(pair[0]).addEventListener("click", function () { previewByFilter(pair[1]); });
  });
  $("cap").addEventListener("input", invalidatePreview);
}

var BULK = {
  "active:cancel": {
    preview: "/api/jobs/preview", path: "/api/jobs/cancel-by-filter", verb: "cancel",
    word: "CANCEL", always: true, noun: "active jobs", order: "newest created first",
    pinned: "created before the preview was taken",
    note: "Pending, fetched and waiting jobs go to the DLQ as Cancelled now; running jobs are stopped by their worker."
  },
  "archive:requeue": {
    preview: "/api/archive/preview", path: "/api/archive/requeue-by-filter", verb: "requeue as new",
    word: "REQUEUE", always: false, noun: "archived jobs", order: "newest finished first",
    pinned: "finished before the preview was taken",
    note: "Each becomes a new pending job (created by requeue:<archived id>); the archived jobs stay."
  },
  "archive:delete": {
    preview: "/api/archive/preview", path: "/api/archive/delete-by-filter", verb: "delete",
    word: "DELETE", always: true, noun: "archived jobs", order: "newest finished first",
    pinned: "finished before the preview was taken",
    note: "They are deleted for good. Lifetime counters and charts keep them."
  },
  "dlq:requeue": {
    preview: "/api/dlq/preview", path: "/api/dlq/requeue-by-filter", verb: "requeue",
    word: "REQUEUE", always: false, noun: "DLQ jobs", order: "newest failure first",
    pinned: "failed before the preview was taken",
    note: "They go back to pending with attempts reset."
  },
  "dlq:purge": {
    preview: "/api/dlq/preview", path: "/api/dlq/purge-by-filter", verb: "purge",
    word: "PURGE", always: true, noun: "DLQ jobs", order: "newest failure first",
    pinned: "failed before the preview was taken",
    note: "They are deleted for good. Lifetime counters keep them."
  }
};

export function invalidatePreview() {
  preview = null;
  var box = $("preview");
  if (box) { box.hidden = true; clear(box); }
}

function previewByFilter(action) {
  var key = state.source + ":" + action;
  var spec = BULK[key];
  var cap = parseInt($("cap").value, 10) || 100;
  api(spec.preview, { filter: filterValues(), cap: cap }).then(function (p) {
    if (state.source + ":" + action !== key) { return; }  // the tab changed meanwhile
    preview = { key: key, data: p };
    var box = $("preview");
    clear(box);
    box.hidden = false;
    box.dataset.action = key;
    // What the action takes is counted exactly; the matches past the cap may be the
    // database's estimate (matched_estimated): the text says which.
    var about = p.matched_estimated ? "about " : "";
    box.appendChild(el("p", { className: "preview-text" },
      "Will " + spec.verb + " ", el("b", { id: "preview-count" }, String(p.will_affect)), " of " + about + fmtNum(p.matched) +
      " matching " + spec.noun + (p.matched > p.will_affect ? " (capped at " + p.cap + ")" : "") + ", " + spec.order + "."));
    box.appendChild(el("p", { className: "hint", id: "preview-counting" }, p.matched_estimated
      ? "The " + fmtNum(p.will_affect) + " it acts on are counted; the total is the database's estimate (past 10,000 matches no more are counted)."
      : "Counted exactly."));
    var sample = el("p", { className: "hint" }, "First ids: ");
    p.sample_ids.forEach(function (id) { sample.appendChild(el("code", null, userText(id), " ")); });
    box.appendChild(sample);
    var go = el("button", { type: "button", id: "preview-confirm", className: "danger" }, "Confirm " + spec.verb + "…");
    go.disabled = p.will_affect === 0;
    var back = el("button", { type: "button", className: "ghost" }, "Discard preview");
    back.addEventListener("click", invalidatePreview);
    go.addEventListener("click", function () { executeByFilter(); });
    box.appendChild(el("div", { className: "actions" }, go, back));
  }).catch(function (e) { toast(e.message, true); });
}

function doneText(key, r) {
  if (key === "active:cancel") {
    return "Cancelled " + r.cancelled.length + ", stop requested for " + r.requested.length +
      (r.not_found.length ? ", " + r.not_found.length + " no longer active" : "");
  }
  var past = { "archive:requeue": "requeued as new", "archive:delete": "deleted", "dlq:requeue": "requeued", "dlq:purge": "purged" };
  return r.affected + " job(s) " + past[key];
}

function executeByFilter() {
  var pv = preview;
  if (!pv) { return; }
  var spec = BULK[pv.key];
  var needsWord = spec.always || pv.data.will_affect >= 25;
  var verb = spec.verb.charAt(0).toUpperCase() + spec.verb.slice(1);
  confirmAction(verb + " " + pv.data.will_affect + " " + spec.noun + " by filter?",
    "Exactly the jobs previewed (" + spec.pinned + "). " + spec.note, needsWord ? spec.word : null)
    .then(function (ok) {
      if (!ok) { return; }
      api(spec.path, { filter: pv.data.filter, cap: pv.data.cap, confirm: spec.word }).then(function (r) {
        toast(doneText(pv.key, r));
        invalidatePreview(); firstPage(); writeLink(); publish("jobs-changed");
      }).catch(function (e) { toast(e.message, true); });
    });
}
