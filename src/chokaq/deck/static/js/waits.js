// Why the wait: the banner of queues with due jobs no live worker serves (fresh at every
// snapshot), and the panel of pending jobs by queue and type with the reason their due jobs do
// not run.

import { $, clear, el, setText, syncRows, userText } from "./dom.js";
import { ago, fmtNum, fmtSecs } from "./format.js";
import { subscribe } from "./store.js";

export function init() {
  subscribe("snapshot", function (snap) {
    renderUnserved(snap.unserved || []);
    if (snap.waits) { renderWaits(snap.waits); }
  });
}

var REASON_LABELS = {
  no_worker: "no worker", paused: "paused", circuit: "circuit open", limit: "held by limit",
  capacity: "waiting for a slot", retrying: "retrying later", delayed: "delayed",
  parents: "waiting on parents"
};

function renderUnserved(unserved) {
  var list = $("unserved");
  clear(list);
  list.hidden = unserved.length === 0;
  unserved.forEach(function (u) {
    list.appendChild(el("li", { className: "notice notice-unserved", dataset: { queue: u.queue } },
      userText(u.message)));
  });
}

function waitKey(r) { return JSON.stringify([r.queue, r.type]); }

function renderWaits(w) {
  $("waits-at").textContent = "read " + ago(w.at);
  $("waits-empty").hidden = w.rows.length > 0;
  $("waits-truncated").hidden = !w.truncated;
  var c = w.counts;
  $("waits-counts").textContent = "Due: " + fmtNum(c.no_worker) + " without a worker · " +
    fmtNum(c.circuit) + " deferred by a circuit · " + fmtNum(c.limit) + " held by a limit · " +
    fmtNum(c.paused) + " paused · " + fmtNum(c.capacity) + " waiting for a slot. Not due: " +
    fmtNum(c.retrying) + " retrying · " + fmtNum(c.delayed) + " delayed · " +
    fmtNum(c.parents) + " on parents.";
  syncRows($("wait-rows"), w.rows, waitKey, buildWaitRow, updateWaitRow);
}

function buildWaitRow() {
  var tr = el("tr");
  ["queue", "type", "pending", "due", "lag", "reason", "detail", "retrying", "delayed", "parents"]
    .forEach(function (col) { tr.appendChild(el("td", { dataset: { col: col } })); });
  return tr;
}

function updateWaitRow(tr, r) {
  var c = tr.children;
  tr.dataset.reason = r.reason;
  setText(c[0], r.queue);
  setText(c[1], r.type);
  c[2].textContent = fmtNum(r.pending);
  c[3].textContent = fmtNum(r.due);
  c[4].textContent = r.lag_seconds === null ? "–" : fmtSecs(r.lag_seconds);
  c[4].className = r.lag_seconds >= 10 ? "lag-critical" : (r.lag_seconds >= 5 ? "lag-warning" : "");
  clear(c[5]);
  c[5].appendChild(el("span", { className: "reason reason-" + r.reason }, REASON_LABELS[r.reason] || r.reason));
  if (r.held) { c[5].appendChild(el("span", { className: "hint" }, " " + fmtNum(r.held) + " held")); }
  clear(c[6]);
  c[6].appendChild(userText(r.detail));
  if (!r.due && r.next_due_at) {
    c[6].appendChild(el("span", { className: "hint", title: r.next_due_at }, " · next due " + ago(r.next_due_at)));
  }
  if (r.circuit !== null) {
    var link = el("button", { type: "button", className: "link circuit-link" }, "circuit");
    link.addEventListener("click", function () { showCircuit(r.circuit); });
    c[6].appendChild(document.createTextNode(" "));
    c[6].appendChild(link);
  }
  c[7].textContent = fmtNum(r.retrying);
  c[8].textContent = fmtNum(r.delayed);
  c[9].textContent = fmtNum(r.on_parents);
}

// The circuit's row in the Circuits panel, scrolled to and marked for a moment.
function showCircuit(key) {
  var row = Array.prototype.find.call($("circuit-rows").children, function (tr) {
    return tr.dataset.key === key;
  });
  var target = row || $("circuits");
  target.scrollIntoView({ block: "center" });
  if (row) {
    row.classList.add("flash");
    setTimeout(function () { row.classList.remove("flash"); }, 2000);
  }
}
