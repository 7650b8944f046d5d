// The Queues panel: each queue's counts, lag and status, and for admins its controls (pause or
// resume, hide, max workers, zombie timeout, rate); the notices above the table.

import { api } from "./api.js";
import { isAdmin, user } from "./config.js";
import { confirmAction } from "./confirm.js";
import { $, attrText, clear, el, setInput, setText, syncRows, toast, userText } from "./dom.js";
import { ago, fmtNum, fmtSecs } from "./format.js";
import { limitAction } from "./limits.js";
import { state, subscribe } from "./store.js";

export function init() {
  subscribe("snapshot", function (snap) {
    renderNotices(snap.notices || []);
    renderQueues(snap.queues);
  });
  subscribe("queues", renderQueues);  // a rate set in the Limits panel, shown at once
  $("show-hidden").addEventListener("change", function () { if (state.snapshot) { renderQueues(state.snapshot.queues); } });
}

function renderNotices(notices) {
  var list = $("notices");
  clear(list);
  list.hidden = notices.length === 0;
  notices.forEach(function (n) {
    list.appendChild(el("li", { className: "notice notice-" + n.kind }, userText(n.message)));
  });
}

function renderQueues(queues) {
  var showHidden = $("show-hidden").checked;
  var rows = queues.filter(function (q) { return !q.hidden || showHidden; });
  $("queues-empty").hidden = rows.length > 0;
  syncRows($("queue-rows"), rows, function (q) { return q.name; }, buildQueueRow, updateQueueRow);
}

function buildQueueRow(q) {
  var tr = el("tr");
  for (var i = 0; i < 16; i++) { tr.appendChild(el("td")); }
  tr.children[0].className = "qname";
  tr.children[13].dataset.col = "rate";
  if (isAdmin) {
    var ctl = el("td", { className: "admin-only" },
      el("button", { type: "button", className: "q-pause" }), " ",
      el("button", { type: "button", className: "q-hide ghost",
        title: "Hide: leave this queue out of this list (for everyone, until unhidden). Its jobs still run: Pause stops them." }));
    tr.appendChild(ctl);
    var mw = el("input", { type: "number", min: 1, max: 10000, className: "q-max", placeholder: "∞" });
    var zt = el("input", { type: "number", min: 15, max: 86400, className: "q-zombie", placeholder: "default",
      title: "at least 15 s: three heartbeat intervals of a default worker" });
    var rate = el("input", { className: "q-rate", placeholder: "none", size: 7, spellcheck: false,
      title: "N/s, N/m or N/h; empty: no rate" });
    clear(tr.children[11]); tr.children[11].appendChild(mw);
    clear(tr.children[12]); tr.children[12].appendChild(zt);
    tr.children[13].appendChild(rate);
    ctl.querySelector(".q-pause").addEventListener("click", function () { pauseOrResume(q.name, tr); });
    ctl.querySelector(".q-hide").addEventListener("click", function () {
      queueAction({ queue: q.name, hidden: tr.dataset.hidden !== "true" });
    });
    mw.addEventListener("change", function () {
      queueAction({ queue: q.name, max_workers: mw.value === "" ? null : parseInt(mw.value, 10) });
    });
    zt.addEventListener("change", function () {
      queueAction({ queue: q.name, zombie_timeout_seconds: zt.value === "" ? null : Number(zt.value) });
    });
    // A queue's code declares no rate: clearing it drops the limit (a reset), rather than
    // leaving an operator's "none" behind in the Limits panel.
    rate.addEventListener("change", function () {
      var text = rate.value.trim();
      if (text === "") { limitAction("reset", { scope: "queue", name: q.name }); }
      else { limitAction("set", { scope: "queue", name: q.name, rate_limit: text }); }
    });
  }
  return tr;
}

function updateQueueRow(tr, q) {
  var c = tr.children;
  tr.dataset.paused = q.paused; tr.dataset.active = q.active; tr.dataset.hidden = q.hidden;
  setText(c[0], q.name);
  c[0].title = attrText(q.name);
  c[1].textContent = fmtNum(q.pending);
  c[2].textContent = fmtNum(q.fetched);
  c[3].textContent = fmtNum(q.processing);
  c[4].textContent = fmtNum(q.waiting);
  c[4].dataset.col = "waiting";
  c[5].textContent = fmtNum(q.blocked);
  c[5].dataset.col = "blocked";
  c[5].className = q.blocked ? "st-blocked" : "";
  c[6].textContent = fmtNum(q.succeeded_total);
  c[7].textContent = fmtNum(q.failed_total);
  // Enqueues with on_conflict (docs/concepts.md, "Debounce, throttle, latest wins").
  c[8].textContent = fmtNum(q.replaced_total);
  c[8].dataset.col = "replaced";
  c[9].textContent = fmtNum(q.superseded_total);
  c[9].dataset.col = "superseded";
  c[10].textContent = q.lag_count ? fmtSecs(q.lag_avg_seconds) + " / " + fmtSecs(q.lag_max_seconds) : "–";
  c[10].className = "lag-" + q.lag_level;
  if (isAdmin) {
    setInput(c[11].firstChild, q.max_workers);
    setInput(c[12].firstChild, q.zombie_timeout_seconds);
    setInput(c[13].firstChild, q.rate_limit);
    var pause = c[16].querySelector(".q-pause");
    pause.textContent = !q.active ? "Activate" : (q.paused ? "Resume" : "Pause");
    pause.title = !q.active ? "Deactivated through the Python API (queue_activate): workers skip it. Activate lets them claim its jobs again."
      : q.paused ? "Resume: workers claim this queue's jobs again." : "Pause: workers stop claiming this queue's jobs (running ones finish; new ones wait). Asks first.";
    c[16].querySelector(".q-hide").textContent = q.hidden ? "Unhide" : "Hide";
  } else {
    c[11].textContent = q.max_workers === null ? "∞" : q.max_workers;
    c[12].textContent = q.zombie_timeout_seconds === null ? "default" : q.zombie_timeout_seconds;
    setText(c[13], q.rate_limit || "–");
  }
  c[14].textContent = (!q.active ? "INACTIVE" : (q.paused ? "PAUSED" : "ACTIVE")) + (q.hidden ? " · HIDDEN" : "");
  c[14].className = q.paused || !q.active ? "st-failed" : "st-succeeded";
  c[14].title = q.hidden ? "Hidden from this list only (show hidden lists it); workers still serve it unless it is paused." : "";
  c[15].textContent = ago(q.last_activity_at);
}

// Pausing stops processing, so it asks first; resuming (and activating) does not.
function pauseOrResume(name, tr) {
  if (tr.dataset.active !== "true") { queueAction({ queue: name, active: true }); return; }
  if (tr.dataset.paused === "true") { queueAction({ queue: name, paused: false }); return; }
  confirmAction("Pause queue " + name + "?",
    "Workers stop claiming its jobs until someone resumes it: running jobs finish, new jobs wait in the queue. " +
    "(To only remove it from this list, use Hide.) Recorded as " + user + ".", null).then(function (ok) {
    if (ok) { queueAction({ queue: name, paused: true }); }
  });
}

function queueAction(body) {
  api("/api/queues", body).then(function () { toast("Queue " + body.queue + " updated"); })
    .catch(function (e) { toast(e.message, true); });
}
