// The actions on jobs named by id (a row's button, the selected rows, the open job): cancel,
// requeue from the DLQ, purge and run now, each confirmed first. Done, they announce
// "jobs-changed" for the table and the inspector to re-read; the selection is cleared.

import { api } from "./api.js";
import { user } from "./config.js";
import { confirmAction } from "./confirm.js";
import { el, toast } from "./dom.js";
import { publish, state } from "./store.js";

export function cancelJobs(ids) {
  confirmAction("Cancel " + ids.length + " job(s)?",
    "Pending and fetched jobs go to the DLQ as Cancelled now; running jobs are stopped by their worker. Recorded as " + user + ".",
    "CANCEL").then(function (ok) {
    if (!ok) { return; }
    api("/api/jobs/cancel", { ids: ids, confirm: "CANCEL" }).then(function (r) {
      toast("Cancelled " + r.cancelled.length + ", stop requested for " + r.requested.length +
        (r.not_found.length ? ", " + r.not_found.length + " no longer active" : ""));
      state.selected.clear(); publish("jobs-changed");
    }).catch(function (e) { toast(e.message, true); });
  });
}

export function resurrect(ids) {
  var word = ids.length >= 25 ? "RETRY" : null;
  confirmAction("Requeue " + ids.length + " DLQ job(s)?", "They go back to pending with attempts reset.", word)
    .then(function (ok) {
      if (!ok) { return; }
      api("/api/dlq/resurrect", { ids: ids, confirm: "RETRY" }).then(function (r) {
        toast("Requeued " + r.moved.length + " job(s)");
        state.selected.clear(); publish("jobs-changed");
      }).catch(function (e) { toast(e.message, true); });
    });
}

export function purge(ids) {
  confirmAction("Purge " + ids.length + " DLQ job(s)?", "They are deleted for good. Lifetime counters keep them.", "PURGE")
    .then(function (ok) {
      if (!ok) { return; }
      api("/api/dlq/purge", { ids: ids, confirm: "PURGE" }).then(function (r) {
        toast("Purged " + r.deleted.length + " job(s)");
        state.selected.clear(); publish("jobs-changed", { purged: ids });
      }).catch(function (e) { toast(e.message, true); });
    });
}

// A delayed job: pending and due later (a delay, a run-at time or a retry's backoff).
export function isDelayed(j) {
  return j.pillar === "hot" && j.status === "pending" && !!j.scheduled_at && Date.parse(j.scheduled_at) > Date.now();
}

export function runNowButton(id) {
  var go = el("button", { type: "button", className: "row-run-now" }, "Run now");
  go.addEventListener("click", function (ev) { ev.stopPropagation(); runNow([id]); });
  return go;
}

export function runNow(ids) {
  var word = ids.length >= 25 ? "RUN" : null;
  confirmAction("Run " + ids.length + " delayed job(s) now?",
    "They become due now and the workers are woken; a job that is not delayed is left alone. Recorded as " +
    user + ".", word).then(function (ok) {
    if (!ok) { return; }
    api("/api/jobs/run-now", { ids: ids, confirm: "RUN" }).then(function (r) {
      toast("Due now: " + r.moved.length + (r.refused.length ? ", " + r.refused.length + " not delayed (left alone)" : ""));
      state.selected.clear(); publish("jobs-changed");
    }).catch(function (e) { toast(e.message, true); });
  });
}
