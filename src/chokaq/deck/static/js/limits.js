// The Limits panel: every limited queue and job type, with the rate and partition concurrency
// in force and where they come from (the code or an operator), the current rate, waiting,
// held and running jobs, and the busiest partitions (each lists its jobs); admins set and
// reset limits here.

import { api } from "./api.js";
import { isAdmin, user } from "./config.js";
import { confirmAction } from "./confirm.js";
import { $, attrText, clear, el, setInput, setText, syncRows, toast, userText } from "./dom.js";
import { fmtNum } from "./format.js";
import { showJobs } from "./jobs.js";
import { publish, state, subscribe } from "./store.js";

var shown = [];  // the limits as last drawn

export function init() {
  subscribe("snapshot", function (snap) { renderLimits(snap.limits || []); });
}

function limitKey(l) { return l.scope + ":" + l.name; }

// "OPERATOR" (set in the Deck or the CLI, kept until reset) or "CODE" (what the job's code
// declares), beside a limit's value.
function sourceMarker(source, declared, l) {
  if (!source) { return null; }
  var title = source === "operator"
    ? "Set by " + attrText(l.last_modified_by || "an operator") + "; the code declares " + (declared === null ? "none" : declared) + ". Kept until reset to code."
    : "Declared by the job's code";
  return el("span", { className: "chip src src-" + source, title: title }, source.toUpperCase());
}

function limitValue(cell, input, value, source, declared, l) {
  // The cell keeps its input (admins) and rebuilds only the text and the marker around it.
  Array.prototype.slice.call(cell.childNodes).forEach(function (n) { if (n !== input) { n.remove(); } });
  if (input) { setInput(input, value); }
  else { cell.appendChild(el("span", { className: "val" }, userText(value === null ? "none" : value))); }
  var marker = sourceMarker(source, declared, l);
  if (marker) { cell.appendChild(document.createTextNode(" ")); cell.appendChild(marker); }
  if (source === "operator" && l.scope === "type") {
    cell.appendChild(el("span", { className: "hint declared" }, " code: " + (declared === null ? "none" : declared)));
  }
}

function renderLimits(limits) {
  shown = limits;
  $("limits-empty").hidden = limits.length > 0;
  syncRows($("limit-rows"), limits, limitKey, buildLimitRow, updateLimitRow);
}

function buildLimitRow(l) {
  var tr = el("tr");
  ["scope", "name", "queue", "rate", "concurrency", "current", "waiting", "held", "running", "partitions"]
    .forEach(function (col) { tr.appendChild(el("td", { dataset: { col: col } })); });
  tr.children[1].className = "lname";
  if (isAdmin) {
    var target = { scope: l.scope, name: l.name };
    var rate = el("input", { className: "l-rate", placeholder: "none", size: 7, spellcheck: false,
      title: "N/s, N/m or N/h; empty: none" });
    rate.addEventListener("change", function () {
      var text = rate.value.trim();
      limitAction("set", Object.assign({ rate_limit: text === "" ? null : text }, target));
    });
    tr.children[3].appendChild(rate);
    if (l.scope === "type") {
      var conc = el("input", { type: "number", min: 1, max: 10000, className: "l-conc", placeholder: "∞" });
      conc.addEventListener("change", function () {
        limitAction("set", Object.assign({ partition_concurrency: conc.value === "" ? null : parseInt(conc.value, 10) }, target));
      });
      tr.children[4].appendChild(conc);
    }
    var reset = el("button", { type: "button", className: "l-reset ghost" }, "Reset to code");
    reset.addEventListener("click", function () { resetLimit(tr.dataset.key); });
    tr.appendChild(el("td", { className: "admin-only" }, reset));
  }
  return tr;
}

function updateLimitRow(tr, l) {
  var c = tr.children;
  tr.dataset.scope = l.scope;
  tr.dataset.rateSource = l.rate_source || "";
  tr.dataset.concurrencySource = l.concurrency_source || "";
  c[0].textContent = l.scope;
  setText(c[1], l.name);
  setText(c[2], l.scope === "type" ? (l.queue || "–") : "–");
  c[2].title = l.scope === "type" && !l.queue ? "not known: the Deck's app does not register this type" : "";
  limitValue(c[3], isAdmin ? c[3].querySelector(".l-rate") : null, l.rate_limit, l.rate_source, l.declared_rate_limit, l);
  if (l.scope === "type") {
    limitValue(c[4], isAdmin ? c[4].querySelector(".l-conc") : null, l.partition_concurrency,
      l.concurrency_source, l.declared_partition_concurrency, l);
  } else { c[4].textContent = "–"; c[4].title = "a queue's concurrency is its max workers"; }
  c[5].textContent = l.current_rate.toFixed(2) + "/s";
  c[6].textContent = fmtNum(l.pending);
  c[7].textContent = fmtNum(l.held);
  c[7].className = l.held ? "lag-warning" : "";
  c[8].textContent = fmtNum(l.running);
  renderPartitions(c[9], l);
  if (isAdmin) {
    c[10].firstChild.disabled = !l.rate_set && !l.concurrency_set;
    c[10].firstChild.textContent = l.scope === "queue" ? "Remove" : "Reset to code";
  }
}

// A partition's value is user data: each one is a text node inside its own button, which
// filters the jobs table to that type and partition. Rebuilt only when the list changed, so
// a click is not lost to a refresh.
function renderPartitions(cell, l) {
  var text = JSON.stringify([l.partitions, l.top_partitions]);
  if (cell.dataset.sig === text) { return; }
  cell.dataset.sig = text;
  clear(cell);
  if (l.scope !== "type" || l.top_partitions.length === 0) { cell.textContent = "–"; return; }
  var list = el("ul", { className: "parts" });
  l.top_partitions.forEach(function (p) {
    var b = el("button", { type: "button", className: "link part", title: "Show the jobs of this partition" }, userText(p.partition));
    b.dataset.partition = p.partition;
    b.addEventListener("click", function () { showPartition(l.name, p.partition); });
    list.appendChild(el("li", { dataset: { waiting: String(p.waiting), running: String(p.running) } },
      b, el("span", { className: "hint" }, " " + fmtNum(p.waiting) + " waiting · " + fmtNum(p.running) + " running")));
  });
  cell.appendChild(list);
  if (l.partitions > l.top_partitions.length) {
    cell.appendChild(el("span", { className: "hint" }, "and " + fmtNum(l.partitions - l.top_partitions.length) + " more"));
  }
}

function showPartition(type, partition) {
  showJobs("active", { type: type, partition: partition });
  $("jobs").scrollIntoView({ block: "start" });
}

// Shows the answer at once (the next snapshot, read after the change, agrees with it).
function patchLimit(info) {
  var snap = state.snapshot, key = limitKey(info);
  var rows = shown.filter(function (l) { return limitKey(l) !== key; });
  if (info.limited || info.rate_set || info.concurrency_set || info.declared_rate_limit !== null ||
      info.declared_partition_concurrency !== null) { rows.push(info); }
  rows.sort(function (a, b) { return limitKey(a) < limitKey(b) ? -1 : 1; });
  renderLimits(rows);
  if (snap && info.scope === "queue") {
    snap.queues.forEach(function (q) { if (q.name === info.name) { q.rate_limit = info.rate_limit; } });
    publish("queues", snap.queues);
  }
}

// Sets or resets a limit (the Queues panel sets a queue's rate through here too).
export function limitAction(action, body) {
  return api("/api/limits/" + action, body).then(function (info) {
    patchLimit(info);
    toast(action === "reset" ? info.scope + " " + info.name + ": back to its code"
      : "Limit of " + info.scope + " " + info.name + " set");
  }).catch(function (e) { toast(e.message, true); });
}

function resetLimit(key) {
  var l = shown.filter(function (x) { return limitKey(x) === key; })[0];
  if (!l) { return; }
  var code = l.scope === "queue" ? "The queue's rate is removed (a queue's code declares none)."
    : "The code's rate (" + (l.declared_rate_limit || "none") + ") and partition concurrency (" +
      (l.declared_partition_concurrency === null ? "none" : l.declared_partition_concurrency) + ") are in force again.";
  confirmAction((l.scope === "queue" ? "Remove the rate of queue " : "Reset the limits of type ") + l.name + "?",
    code + " Recorded as " + user + ".", null).then(function (ok) {
    if (ok) { limitAction("reset", { scope: l.scope, name: l.name }); }
  });
}
