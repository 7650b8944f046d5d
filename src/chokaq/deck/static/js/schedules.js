// The Schedules panel: every periodic schedule with its timing, zone, next and last run and
// markers (paused, orphaned, edited, late), and a detail view with its recent slots; admins
// pause or resume, trigger, edit and reset one here.

import { api } from "./api.js";
import { isAdmin, user } from "./config.js";
import { confirmAction } from "./confirm.js";
import { $, attrText, clear, el, setText, syncRows, toast, userText } from "./dom.js";
import { ago, fmtSecs, isoText, pretty, when } from "./format.js";
import { jobLink } from "./inspector.js";
import { loadJobs } from "./jobs.js";
import { subscribe } from "./store.js";

var schedule = null;      // the name of the schedule open in the detail view
var scheduleData = null;  // ...and that schedule as last read
var idleTicks = 0;

export function init() {
  $("sch-close").addEventListener("click", closeSchedule);
  if (isAdmin) {
    $("sch-pause").addEventListener("click", function () {
      var paused = scheduleData && scheduleData.paused;
      scheduleAction(paused ? "resume" : "pause", function (r) { return r.name + (r.paused ? " paused" : " resumed"); });
    });
    $("sch-trigger").addEventListener("click", triggerSchedule);
    $("sch-edit").addEventListener("click", openScheduleEditor);
    $("sch-reset").addEventListener("click", resetSchedule);
    $("sch-kind").addEventListener("change", kindChanged);
    $("sch-kwargs").addEventListener("input", checkKwargs);
    $("sch-form").addEventListener("submit", function (ev) { ev.preventDefault(); saveScheduleEdit(); });
    $("sch-discard").addEventListener("click", function () { $("sch-form").hidden = true; });
  }
  subscribe("snapshot", function () { loadSchedules(); });
  // Idle storage still moves schedules along (a slot comes due, a worker stops declaring one):
  // re-read them every few ticks.
  subscribe("tick", function () { if (++idleTicks % 4 === 0) { loadSchedules(); } });
  subscribe("connected", function () { loadSchedules(); });
}

function schedulePath(name, action) {
  return "/api/schedules/" + encodeURIComponent(name) + (action ? "/" + action : "");
}

// Runs load() (a function returning a promise) one at a time; a call made while one runs
// runs it once more afterwards, so the last call always shows fresh data.
function serial(load) {
  var busy = false, again = false;
  return function run() {
    if (busy) { again = true; return; }
    busy = true;
    load().then(function () {
      busy = false;
      if (again) { again = false; run(); }
    });
  };
}

var loadSchedules = serial(function () {
  var list = api("/api/schedules").then(renderSchedules).catch(function (e) { toast("Schedules: " + e.message, true); });
  return list.then(function () {
    var name = schedule;
    if (name === null) { return null; }
    return api(schedulePath(name)).then(function (d) {
      if (schedule === name) { renderScheduleDetail(d); }
    }).catch(function (e) {
      if (schedule === name) {
        $("sch-banner").hidden = false;
        setText($("sch-banner"), e.message);
      }
    });
  });
});

function scheduleMarkers(s) {
  var out = [el("span", { className: s.paused ? "st-failed" : "st-succeeded" }, s.paused ? "PAUSED" : "ACTIVE")];
  if (s.orphaned) {
    out.push(el("span", { className: "chip marker orphaned",
      title: "No running worker has declared it in the last 60 s: it does not fire." }, "ORPHANED"));
  }
  if (s.edited) {
    out.push(el("span", { className: "chip marker edited",
      title: "Edited by " + attrText(s.edited_by) + " " + ago(s.edited_at) + "; the code declares " +
        attrText(s.declared.expression) + ". Kept until reset to code." }, "EDITED"));
  }
  if (s.lag_seconds >= 5 && !s.paused && !s.orphaned) {
    out.push(el("span", { className: s.lag_seconds >= 60 ? "lag-critical" : "lag-warning",
      title: "its next slot is overdue" }, "late " + fmtSecs(s.lag_seconds)));
  }
  return out;
}

function lastRun(s) {
  if (!s.last_run_at) { return el("span", { className: "hint" }, "never"); }
  return el("span", { title: when(s.last_run_at) }, ago(s.last_run_at), " ",
    el("span", { className: "chip outcome" }, userText(s.last_outcome || "?")), " ",
    s.last_job_id ? jobLink(s.last_job_id) : null);
}

function renderSchedules(data) {
  $("schedules-empty").hidden = data.items.length > 0;
  syncRows($("schedule-rows"), data.items, function (s) { return s.name; }, function (s) {
    var tr = el("tr");
    for (var i = 0; i < 7; i++) { tr.appendChild(el("td")); }
    tr.children[0].className = "sname";
    tr.children[1].className = "expr";
    tr.addEventListener("click", function () { openSchedule(s.name); });
    return tr;
  }, function (tr, s) {
    var c = tr.children;
    tr.dataset.paused = s.paused; tr.dataset.orphaned = s.orphaned; tr.dataset.edited = s.edited;
    tr.classList.toggle("on", schedule === s.name);
    setText(c[0], s.name);
    setText(c[1], s.expression);
    setText(c[2], s.every_seconds !== null ? "–" : s.timezone);
    c[3].textContent = isoText(s.next_run_local);
    c[4].textContent = isoText(s.next_run_utc);
    c[4].title = s.next_run_utc ? ago(s.next_run_utc) : "";
    clear(c[5]); c[5].appendChild(lastRun(s));
    clear(c[6]); scheduleMarkers(s).forEach(function (m) { c[6].appendChild(m); c[6].appendChild(document.createTextNode(" ")); });
  });
}

function openSchedule(name) {
  schedule = name;
  scheduleData = null;
  var box = $("schedule-detail");
  box.hidden = false;
  box.dataset.name = name;
  setText($("sch-name"), name);
  $("sch-banner").hidden = true;
  clear($("sch-fields")); clear($("sch-history")); clear($("sch-markers"));
  if ($("sch-form")) { $("sch-form").hidden = true; }
  box.scrollIntoView({ block: "nearest" });
  loadSchedules();
}

function closeSchedule() {
  schedule = null; scheduleData = null;
  $("schedule-detail").hidden = true;
  document.querySelectorAll("#schedule-rows tr.on").forEach(function (tr) { tr.classList.remove("on"); });
}

function field(dl, key, label, value) {
  dl.appendChild(el("dt", null, label));
  dl.appendChild(el("dd", { dataset: { field: key } }, typeof value === "string" ? userText(value) : value));
}

function renderScheduleDetail(d) {
  scheduleData = d;
  var box = $("schedule-detail");
  box.dataset.paused = d.paused; box.dataset.edited = d.edited; box.dataset.orphaned = d.orphaned;
  $("sch-banner").hidden = true;
  setText($("sch-name"), d.name);
  var markers = $("sch-markers");
  clear(markers);
  scheduleMarkers(d).forEach(function (m) { markers.appendChild(m); markers.appendChild(document.createTextNode(" ")); });
  var dl = $("sch-fields");
  clear(dl);
  var zone = d.every_seconds !== null ? "" : " (" + d.timezone + ")";
  field(dl, "timing", "timing", d.expression + zone);
  var code = d.declared.expression + (d.declared.every_seconds !== null ? "" : " (" + d.declared.timezone + ")");
  field(dl, "declared", "declared by code", code);
  field(dl, "job", "job", d.type + " on " + d.queue + ", priority " + d.priority);
  field(dl, "expires", "each run expires", d.expires_after_seconds === null ? "never" :
    fmtSecs(d.expires_after_seconds) + " after its enqueue (not started by then: DLQ as EXPIRED)");
  field(dl, "kwargs", "kwargs", el("pre", { className: "code" }, userText(pretty(d.kwargs), true)));
  if (d.edited && d.kwargs !== d.declared.kwargs) {
    field(dl, "declared_kwargs", "declared kwargs", el("pre", { className: "code" }, userText(pretty(d.declared.kwargs), true)));
  }
  field(dl, "next_run", "next run", isoText(d.next_run_local) + "  ·  " + isoText(d.next_run_utc));
  field(dl, "lag", "overdue by", d.lag_seconds > 0 ? fmtSecs(d.lag_seconds) : "–");
  field(dl, "last_run", "last run", lastRun(d));
  field(dl, "misfire", "misfire", d.misfire);
  field(dl, "overlap", "overlap", d.overlap ? "allowed" : "skip a slot while the last run is unfinished");
  if (d.edited) { field(dl, "edited_by", "edited by", d.edited_by + " · " + when(d.edited_at)); }
  if (d.last_modified_by) { field(dl, "last_modified_by", "last changed by", d.last_modified_by); }
  field(dl, "seen_at", "last declared", ago(d.seen_at));
  if (isAdmin) {
    $("sch-pause").textContent = d.paused ? "Resume" : "Pause";
    $("sch-reset").disabled = !d.edited;
  }
  $("sch-history-empty").hidden = d.history.length > 0;
  syncRows($("sch-history"), d.history, function (r) { return r.recorded_at + "|" + r.slot + "|" + r.outcome + "|" + (r.job_id || ""); },
    function () { return el("tr", null, el("td"), el("td"), el("td"), el("td")); },
    function (tr, r) {
      var c = tr.children;
      tr.dataset.outcome = r.outcome;
      c[0].textContent = isoText(r.slot);
      clear(c[1]); c[1].appendChild(el("span", { className: "outcome-" + r.outcome }, r.outcome.toUpperCase()));
      clear(c[2]); c[2].appendChild(r.job_id ? jobLink(r.job_id) : document.createTextNode("–"));
      setText(c[3], r.detail || "");
    });
}

function scheduleAction(action, done) {
  var name = schedule;
  if (name === null) { return; }
  api(schedulePath(name, action), {}).then(function (r) {
    toast(done(r));
    loadSchedules(); loadJobs();
  }).catch(function (e) { toast(e.message, true); });
}

function triggerSchedule() {
  var d = scheduleData;
  if (!d) { return; }
  confirmAction("Run " + d.name + " now?",
    "One job of type " + d.type + " is enqueued on " + d.queue + " now, outside the schedule's slots" +
    (d.paused ? " (it stays paused)" : "") + ". Recorded as " + user + ".", null)
    .then(function (ok) {
      if (ok) { scheduleAction("trigger", function (r) { return "Enqueued job " + r.job_id; }); }
    });
}

function resetSchedule() {
  var d = scheduleData;
  if (!d) { return; }
  confirmAction("Reset " + d.name + " to its code?",
    "The edit by " + d.edited_by + " is dropped: the code's " + d.declared.expression +
    " and its kwargs are in force again, with slots counted from now.", null)
    .then(function (ok) {
      if (ok) { scheduleAction("reset", function () { return "Reset " + d.name + " to its code"; }); }
    });
}

function kindChanged() {
  var every = $("sch-kind").value === "every";
  $("sch-expr-label").textContent = every ? "Seconds between runs" : "Cron expression";
  $("sch-expr").placeholder = every ? "3600" : "*/15 * * * *";
}

function openScheduleEditor() {
  var d = scheduleData;
  if (!d) { return; }
  $("sch-kind").value = d.cron !== null ? "cron" : "every";
  $("sch-expr").value = d.cron !== null ? d.cron : String(d.every_seconds);
  $("sch-tz").value = d.timezone;
  $("sch-kwargs").value = pretty(d.kwargs);
  kindChanged();
  checkKwargs();
  $("sch-form").hidden = false;
  $("sch-expr").focus();
}

function checkKwargs() {
  var hint = $("sch-json"), value;
  try { value = JSON.parse($("sch-kwargs").value); } catch (e) {
    setText(hint, "Invalid JSON: " + e.message); hint.className = "hint bad";
    $("sch-save").disabled = true;
    return undefined;
  }
  var isObject = value !== null && typeof value === "object" && !Array.isArray(value);
  hint.textContent = isObject ? "Valid JSON object" : "Must be a JSON object of keyword arguments";
  hint.className = "hint " + (isObject ? "ok" : "bad");
  $("sch-save").disabled = !isObject;
  return isObject ? value : undefined;
}

// Sends only what differs from the schedule in force: any field sent marks it edited.
function saveScheduleEdit() {
  var d = scheduleData, kwargs = checkKwargs();
  if (!d || kwargs === undefined) { return; }
  var body = {}, expr = $("sch-expr").value.trim(), tz = $("sch-tz").value.trim();
  if ($("sch-kind").value === "cron") {
    if (expr.split(/\s+/).join(" ") !== d.cron) { body.cron = expr; }
  } else {
    var secs = /^\d+(\.\d+)?$/.test(expr) ? Number(expr) : expr;
    if (secs !== d.every_seconds) { body.every_seconds = secs; }
  }
  if (tz !== d.timezone) { body.timezone = tz; }
  if (JSON.stringify(kwargs) !== JSON.stringify(JSON.parse(d.kwargs))) { body.kwargs = kwargs; }
  if (Object.keys(body).length === 0) { toast("Nothing changed"); return; }
  api(schedulePath(d.name, "edit"), body).then(function (r) {
    toast("Saved: " + r.name + " runs " + r.expression + " until reset to code");
    $("sch-form").hidden = true;
    loadSchedules();
  }).catch(function (e) { toast(e.message, true); });
}
