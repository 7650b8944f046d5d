// The Deck's page logic: live snapshot over server-sent events, the jobs table, the inspector
// and editor, the workflow view, actions with typed confirmation, bulk actions on all jobs
// matching the filter (with a preview) and run-now, the periodic schedules, the rate limits, why
// jobs wait, and the wiring of the charts (static/chart.js).
// All user data is written through userText() (text nodes in an isolating <bdi>, invisible
// characters shown as visible markers; never innerHTML); no inline handlers (CSP).
(function () {
  "use strict";

  var base = document.querySelector('meta[name="deck-base"]').content;
  var csrf = document.querySelector('meta[name="csrf-token"]').content;
  var isAdmin = document.body.dataset.role === "admin";
  var REASONS = (document.body.dataset.reasons || "").split(" ").filter(Boolean);

  var state = {
    source: "active", page: 1, pages: 1, cursor: null, selected: new Set(), job: null,
    lastSnapshot: null,
    lastEventAt: 0, jobsBusy: false, jobsAgain: false, preview: null, ticks: 0,
    schedule: null, scheduleData: null, idleTicks: 0, workflow: null, workflowData: null,
    workflowText: "", limits: [],
    liveMode: "auto", pausedAt: undefined  // the jobs table's live refresh (see refreshJobs)
  };

  function $(id) { return document.getElementById(id); }

  // el("td", {className: "x", title: "y"}, "text", node, ...) with text as textContent.
  function el(tag, props) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        if (k === "dataset") { Object.assign(node.dataset, props[k]); }
        else { node[k] = props[k]; }
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === "string" || typeof child === "number"
        ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }

  // -- user text: names, tags, partitions, ids, payloads, errors and worker names come from
  // users. Written as bare text, a bidi override reorders what the operator reads
  // ("\u202eRTL-fdp.exe" shows as "exe.pdf-LTR") and a zero-width or control character hides
  // (a queue named "\u202e" is invisible). So every such piece goes through userText(): it sits
  // in its own <bdi> (direction from its own first strong character, isolated from its
  // neighbours), and each bidi control, zero-width character and C0/C1 control is replaced by a
  // visible marker ⟨U+202E⟩. "Such" is what storage refuses in names (chokaq.limits): the
  // Unicode categories Cc (C0/C1 controls), Cf (format: bidi controls, zero-width characters,
  // soft hyphen, BOM), Zl and Zp (line and paragraph separators), and the Hangul fillers,
  // letters that draw nothing. Tab and line ends are marked only in one-line places: payloads
  // and tracebacks (a <pre>) need them.
  var INVISIBLE_IN_LINE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/gu;
  var INVISIBLE = /(?![\t\n\r])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/gu;

  function codePoint(ch) {
    return "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
  }

  // A DOM node showing `value` (any type; null shows as nothing) safely: one line unless
  // `multiline` (then tabs and newlines are kept as they are).
  function userText(value, multiline) {
    var text = value === null || value === undefined ? "" : String(value);
    var node = el("bdi", { className: "ut" });
    var last = 0, m, re = multiline ? INVISIBLE : INVISIBLE_IN_LINE;
    re.lastIndex = 0;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) { node.appendChild(document.createTextNode(text.slice(last, m.index))); }
      var cp = codePoint(m[0]);
      node.appendChild(el("span", { className: "ctl", title: "invisible character " + cp }, "⟨" + cp + "⟩"));
      last = m.index + m[0].length;
    }
    if (last < text.length) { node.appendChild(document.createTextNode(text.slice(last))); }
    return node;
  }

  // Replaces a node's content with userText(value), many lines in a <pre>; a table cell also
  // gets the whole text as its tooltip, since the CSS cuts long text in cells with an ellipsis.
  // The live refresh rewrites every cell each second with mostly the same text: a node that
  // still holds only the <bdi> this wrote for the same text is left alone.
  function setText(node, value) {
    var text = value === null || value === undefined ? "" : String(value);
    var only = node.childNodes.length === 1 ? node.firstChild : null;
    if (only && only.nodeName === "BDI" && only.chokaqText === text) { return; }
    clear(node);
    var shown = userText(text, node.tagName === "PRE");
    shown.chokaqText = text;  // a property, not an attribute: a payload may be a megabyte
    node.appendChild(shown);
    if (node.tagName === "TD") { node.title = attrText(text); }
  }

  // The invisible characters a text holds, as "U+202E, U+200B" (each once), or "": for a
  // textarea, where no marker can be drawn.
  function invisibleIn(text) {
    var seen = [];
    (String(text).match(INVISIBLE) || []).forEach(function (ch) {
      var cp = codePoint(ch);
      if (seen.indexOf(cp) < 0) { seen.push(cp); }
    });
    return seen.join(", ");
  }

  // User text for an attribute (a tooltip, which may hold many lines): no markup there, so the
  // markers are plain text.
  function attrText(value) {
    var text = value === null || value === undefined ? "" : String(value);
    return text.replace(INVISIBLE, function (ch) { return "⟨" + codePoint(ch) + "⟩"; });
  }

  function toast(message, bad) {
    var t = el("div", { className: "toast" + (bad ? " bad" : "") }, userText(message));
    $("toasts").appendChild(t);
    setTimeout(function () { t.remove(); }, 4000);
  }

  function api(path, body) {
    var options = { credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (body !== undefined) {
      options.method = "POST";
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRF-Token"] = csrf;
      options.body = JSON.stringify(body);
    }
    return fetch(base + path, options).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) { throw new Error(data.error || ("HTTP " + r.status)); }
        return data;
      });
    });
  }

  // -- formatting -------------------------------------------------------------------------

  function fmtNum(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
  // A duration in human units: 13 µs, 250 ms, 2.5 s, 3 m 4 s, 2 h 5 m, 3 d 4 h. The stored
  // value is a float of seconds (0.00001299399997378714); the exact figure is for the tooltip.
  function fmtSecs(s) {
    if (s === null || s === undefined || isNaN(s)) { return "–"; }
    s = Number(s);
    if (s < 0) { return "-" + fmtSecs(-s); }
    if (s === 0) { return "0 s"; }
    if (s < 0.001) { return Math.max(1, Math.round(s * 1e6)) + " µs"; }
    if (s < 1) { return Math.min(999, Math.round(s * 1000)) + " ms"; }
    if (s < 10) { return (Math.floor(s * 10) / 10).toFixed(1) + " s"; }
    if (s < 60) { return Math.floor(s) + " s"; }
    var units = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
    for (var i = 0; i < 3; i++) {
      if (s >= units[i][0]) {
        var big = Math.floor(s / units[i][0]), small = Math.floor((s % units[i][0]) / units[i + 1][0]);
        return big + " " + units[i][1] + (small ? " " + small + " " + units[i + 1][1] : "");
      }
    }
    return Math.floor(s) + " s";
  }

  // A UUIDv7 starts with its creation time, the same on every row of a busy page; its last
  // characters are random, so the short form shows those (the full id is on hover and copy).
  function shortId(id) { return id && id.length > 12 ? "…" + id.slice(-8) : (id || ""); }
  function ago(iso) {
    if (!iso) { return "–"; }
    var s = (Date.now() - Date.parse(iso)) / 1000;
    if (s < 0) { return "in " + fmtSecs(-s); }
    if (s < 60) { return Math.floor(s) + "s ago"; }
    if (s < 3600) { return Math.floor(s / 60) + "m ago"; }
    if (s < 86400) { return Math.floor(s / 3600) + "h ago"; }
    return Math.floor(s / 86400) + "d ago";
  }
  function pad2(n) { return String(n).padStart(2, "0"); }

  // Times are shown in the browser's time zone; UTC is the tooltip (when()).
  function localTime(iso) {
    if (!iso) { return "–"; }
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return String(iso); }
    return d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " +
      pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
  }
  function utcTime(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toISOString().replace("T", " ").replace("Z", " UTC");
  }
  function when(iso) { return iso ? localTime(iso) + " local · " + utcTime(iso) : "–"; }

  // An inspector field's text and tooltip: times local (UTC on hover), durations in units.
  function fieldText(key, value) {
    if (key === "duration_seconds" || key === "timeout_seconds") {
      return { text: fmtSecs(value), title: String(value) + " s" };
    }
    if (/_at$/.test(key) && typeof value === "string") { return { text: localTime(value), title: utcTime(value) }; }
    return { text: Array.isArray(value) ? value.join(", ") : value, title: "" };
  }
  function pretty(text) {
    if (text === null || text === undefined) { return ""; }
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }

  // Keeps one <tr> per key, updating cells in place so that focus, selection and the progress
  // bar's transition survive the once-a-second refresh.
  function syncRows(tbody, items, key, build, update) {
    var existing = new Map();
    Array.prototype.forEach.call(tbody.children, function (tr) { existing.set(tr.dataset.key, tr); });
    items.forEach(function (item) {
      var k = key(item);
      var tr = existing.get(k);
      if (!tr) { tr = build(item); tr.dataset.key = k; }
      existing.delete(k);
      update(tr, item);
      tbody.appendChild(tr);
    });
    existing.forEach(function (tr) { tr.remove(); });
  }

  // -- typed confirmation ---------------------------------------------------------------------

  function confirmAction(title, text, word) {
    var dialog = $("confirm");
    setText($("confirm-title"), title);
    setText($("confirm-text"), text);
    $("confirm-word").textContent = word || "";
    $("confirm-typed").hidden = !word;
    $("confirm-input").value = "";
    $("confirm-yes").disabled = !!word;
    dialog.showModal();
    if (word) { $("confirm-input").focus(); }
    return new Promise(function (resolve) {
      function done(ok) {
        $("confirm-form").removeEventListener("submit", onSubmit);
        $("confirm-no").removeEventListener("click", onNo);
        dialog.removeEventListener("cancel", onNo);
        dialog.close();
        resolve(ok);
      }
      function onSubmit(ev) {
        ev.preventDefault();
        if (!word || $("confirm-input").value === word) { done(true); }
      }
      function onNo(ev) { ev.preventDefault(); done(false); }
      $("confirm-form").addEventListener("submit", onSubmit);
      $("confirm-no").addEventListener("click", onNo);
      dialog.addEventListener("cancel", onNo);
    });
  }
  if (isAdmin) {
    $("confirm-input").addEventListener("input", function () {
      $("confirm-yes").disabled = this.value !== $("confirm-word").textContent;
    });
  }

  // -- live snapshot ----------------------------------------------------------------------

  function renderSnapshot(snap) {
    var prev = state.lastSnapshot;
    state.lastSnapshot = snap;
    var s = snap.summary, t = snap.throughput;
    $("c-pending").textContent = fmtNum(s.pending);
    $("c-fetched").textContent = fmtNum(s.fetched);
    $("c-processing").textContent = fmtNum(s.processing);
    $("c-waiting").textContent = fmtNum(s.waiting);
    $("c-succeeded").textContent = fmtNum(s.succeeded_total);
    $("c-failed").textContent = fmtNum(s.failed_total);
    $("c-tput").textContent = t.jobs_per_second_1m.toFixed(2) + "/s";
    $("c-tput5").textContent = "5 min: " + t.jobs_per_second_5m.toFixed(2) + "/s";
    $("c-frate").textContent = t.failure_rate_1m.toFixed(1) + "%";
    $("c-frate5").textContent = "5 min: " + t.failure_rate_5m.toFixed(1) + "%";
    renderNotices(snap.notices || []);
    renderQueues(snap.queues);
    renderLimits(snap.limits || []);
    renderUnserved(snap.unserved || []);
    if (snap.waits) { renderWaits(snap.waits); }
    renderErrors(snap.top_errors);
    renderCircuits(snap.circuits);
    renderWorkers(snap.workers);
    chart.snapshot(snap);
    var changed = !prev || prev.summary.succeeded_total !== s.succeeded_total ||
      prev.summary.failed_total !== s.failed_total || prev.summary.pending !== s.pending ||
      prev.summary.fetched !== s.fetched || prev.summary.processing !== s.processing;
    state.ticks++;
    // The jobs table is re-read when the counts moved, while jobs run on Active (their
    // progress bars; every other snapshot), and every 10th snapshot: a snapshot also comes
    // when only a lag figure changed, and re-reading a page each time cost an idle tab a
    // database query every 0.6 s. refreshJobs holds it while the table is paused.
    var running = state.source === "active" && s.processing > 0 && state.ticks % 2 === 0;
    refreshJobs(changed || running || state.ticks % 10 === 0);
    if (state.job && $("inspector") && !$("inspector").hidden) { refreshInspector(); }
    if (state.workflow && !$("workflow").hidden) { refreshWorkflow(); }
    loadSchedules();
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
    for (var i = 0; i < 14; i++) { tr.appendChild(el("td")); }
    tr.children[0].className = "qname";
    tr.children[11].dataset.col = "rate";
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
      clear(tr.children[9]); tr.children[9].appendChild(mw);
      clear(tr.children[10]); tr.children[10].appendChild(zt);
      tr.children[11].appendChild(rate);
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

  function setInput(input, value) {
    if (document.activeElement !== input) { input.value = value === null || value === undefined ? "" : value; }
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
    c[8].textContent = q.lag_count ? fmtSecs(q.lag_avg_seconds) + " / " + fmtSecs(q.lag_max_seconds) : "–";
    c[8].className = "lag-" + q.lag_level;
    if (isAdmin) {
      setInput(c[9].firstChild, q.max_workers);
      setInput(c[10].firstChild, q.zombie_timeout_seconds);
      setInput(c[11].firstChild, q.rate_limit);
      var pause = c[14].querySelector(".q-pause");
      pause.textContent = !q.active ? "Activate" : (q.paused ? "Resume" : "Pause");
      pause.title = !q.active ? "Deactivated through the Python API (queue_activate): workers skip it. Activate lets them claim its jobs again."
        : q.paused ? "Resume: workers claim this queue's jobs again." : "Pause: workers stop claiming this queue's jobs (running ones finish; new ones wait). Asks first.";
      c[14].querySelector(".q-hide").textContent = q.hidden ? "Unhide" : "Hide";
    } else {
      c[9].textContent = q.max_workers === null ? "∞" : q.max_workers;
      c[10].textContent = q.zombie_timeout_seconds === null ? "default" : q.zombie_timeout_seconds;
      setText(c[11], q.rate_limit || "–");
    }
    c[12].textContent = (!q.active ? "INACTIVE" : (q.paused ? "PAUSED" : "ACTIVE")) + (q.hidden ? " · HIDDEN" : "");
    c[12].className = q.paused || !q.active ? "st-failed" : "st-succeeded";
    c[12].title = q.hidden ? "Hidden from this list only (show hidden lists it); workers still serve it unless it is paused." : "";
    c[13].textContent = ago(q.last_activity_at);
  }

  // Pausing stops processing, so it asks first; resuming (and activating) does not.
  function pauseOrResume(name, tr) {
    if (tr.dataset.active !== "true") { queueAction({ queue: name, active: true }); return; }
    if (tr.dataset.paused === "true") { queueAction({ queue: name, paused: false }); return; }
    confirmAction("Pause queue " + name + "?",
      "Workers stop claiming its jobs until someone resumes it: running jobs finish, new jobs wait in the queue. " +
      "(To only remove it from this list, use Hide.) Recorded as " + document.body.dataset.user + ".", null).then(function (ok) {
      if (ok) { queueAction({ queue: name, paused: true }); }
    });
  }

  function queueAction(body) {
    api("/api/queues", body).then(function () { toast("Queue " + body.queue + " updated"); })
      .catch(function (e) { toast(e.message, true); });
  }

  // -- why the wait ---------------------------------------------------------------------------
  // The banner of queues with due jobs no live worker serves (fresh at every snapshot), and the
  // panel of pending jobs by queue and type with the reason their due jobs do not run.

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

  // -- limits ---------------------------------------------------------------------------------

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
    state.limits = limits;
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
    var form = $("filters");
    form.reset();
    form.elements.type.value = type;
    form.elements.partition.value = partition;
    setSource("active");
    $("jobs").scrollIntoView({ block: "start" });
  }

  // Shows the answer at once (the next snapshot, read after the change, agrees with it).
  function patchLimit(info) {
    var snap = state.lastSnapshot, key = limitKey(info);
    var rows = (state.limits || []).filter(function (l) { return limitKey(l) !== key; });
    if (info.limited || info.rate_set || info.concurrency_set || info.declared_rate_limit !== null ||
        info.declared_partition_concurrency !== null) { rows.push(info); }
    rows.sort(function (a, b) { return limitKey(a) < limitKey(b) ? -1 : 1; });
    renderLimits(rows);
    if (snap && info.scope === "queue") {
      snap.queues.forEach(function (q) { if (q.name === info.name) { q.rate_limit = info.rate_limit; } });
      renderQueues(snap.queues);
    }
  }

  function limitAction(action, body) {
    return api("/api/limits/" + action, body).then(function (info) {
      patchLimit(info);
      toast(action === "reset" ? info.scope + " " + info.name + ": back to its code"
        : "Limit of " + info.scope + " " + info.name + " set");
    }).catch(function (e) { toast(e.message, true); });
  }

  function resetLimit(key) {
    var l = (state.limits || []).filter(function (x) { return limitKey(x) === key; })[0];
    if (!l) { return; }
    var code = l.scope === "queue" ? "The queue's rate is removed (a queue's code declares none)."
      : "The code's rate (" + (l.declared_rate_limit || "none") + ") and partition concurrency (" +
        (l.declared_partition_concurrency === null ? "none" : l.declared_partition_concurrency) + ") are in force again.";
    confirmAction((l.scope === "queue" ? "Remove the rate of queue " : "Reset the limits of type ") + l.name + "?",
      code + " Recorded as " + document.body.dataset.user + ".", null).then(function (ok) {
      if (ok) { limitAction("reset", { scope: l.scope, name: l.name }); }
    });
  }

  function renderErrors(groups) {
    var list = $("error-rows");
    clear(list);
    $("errors-empty").hidden = groups.length > 0;
    groups.forEach(function (g) {
      var li = el("li", { title: "Show the DLQ jobs of this family (numbers, ids and quoted values folded into <n>, <id> and <str>)" },
        el("span", { className: "chip" }, g.failure_reason), " ",
        el("b", null, fmtNum(g.count)), " · ", ago(g.latest_at),
        el("span", { className: "prefix" }, userText(g.family)));
      li.addEventListener("click", function () { showErrorGroup(g); });
      list.appendChild(li);
    });
  }

  // A family is stored with each DLQ row, so the DLQ filters on it exactly: every member and
  // nothing else (a search on the text would miss "card 1111" when the family says "card <n>").
  function showErrorGroup(g) {
    var form = $("filters");
    form.reset();
    form.elements.reason.value = g.failure_reason;
    form.elements.family.value = g.family;
    setSource("dlq");
  }

  function renderCircuits(circuits) {
    $("circuits-empty").hidden = circuits.length > 0;
    syncRows($("circuit-rows"), circuits, function (c) { return c.key; }, function (c) {
      var tr = el("tr", null, el("td"), el("td"), el("td"), el("td"));
      if (isAdmin) {
        var b = el("button", { type: "button", className: "c-close" }, "Force close");
        b.addEventListener("click", function () {
          api("/api/circuits/close", { key: c.key }).then(function (r) {
            toast("Asked " + r.workers_asked + " worker(s) to close " + c.key);
          }).catch(function (e) { toast(e.message, true); });
        });
        tr.appendChild(el("td", { className: "admin-only" }, b));
      }
      return tr;
    }, function (tr, c) {
      setText(tr.children[0], c.key);
      tr.children[1].textContent = c.state.toUpperCase().replace("_", "-");
      tr.children[1].className = "st-" + c.state;
      tr.children[2].textContent = c.failures;
      tr.children[3].textContent = c.state === "open" && c.reset_in_seconds !== null
        ? fmtSecs(c.reset_in_seconds) : (c.state === "closed" ? "–" : "ready");
      if (isAdmin) { tr.children[4].firstChild.disabled = c.state === "closed"; }
    });
  }

  function renderWorkers(workers) {
    $("workers-empty").hidden = workers.length > 0;
    syncRows($("worker-rows"), workers, function (w) { return w.id; }, function (w) {
      var tr = el("tr", null, el("td", { className: "id" }), el("td"), el("td"), el("td"), el("td"), el("td"));
      if (isAdmin) {
        var input = el("input", { type: "number", min: 1, max: 1000, className: "w-concurrency" });
        input.addEventListener("change", function () {
          api("/api/workers/concurrency", { worker_id: w.id, concurrency: parseInt(input.value, 10) })
            .then(function () { toast("Concurrency of " + w.hostname + ":" + w.pid + " → " + input.value); })
            .catch(function (e) { toast(e.message, true); });
        });
        tr.children[3].appendChild(input);
      }
      return tr;
    }, function (tr, w) {
      var c = tr.children;
      setText(c[0], w.hostname + ":" + w.pid);
      c[0].title = attrText(w.id);
      setText(c[1], w.queues.length ? w.queues.join(", ") : "all");
      c[2].textContent = w.running;
      if (isAdmin) { setInput(c[3].firstChild, w.desired_concurrency || w.concurrency); }
      else { c[3].textContent = w.concurrency; }
      setText(c[4], w.state);
      c[5].textContent = ago(w.heartbeat_at);
    });
  }

  // -- chart --------------------------------------------------------------------------------
  // The charts live in static/chart.js (loaded first); this wires them to the live snapshot.

  var chart = window.DeckChart.create({ api: api, toast: toast, label: attrText });

  // -- jobs ---------------------------------------------------------------------------------

  function filterValues() {
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

  function loadJobs() {
    if (state.jobsBusy) { state.jobsAgain = true; return; }
    state.jobsBusy = true;
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
      if (state.cursor) { firstPage(); writeLink(); state.jobsAgain = true; }  // a stale or foreign cursor
    }).then(function () {
      state.jobsBusy = false;
      if (state.jobsAgain) { state.jobsAgain = false; loadJobs(); }
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
    if (state.liveMode === "live" && state.selected.size === 0 && $("drawer").hidden) { state.liveMode = "auto"; }
    if (state.liveMode === "paused") { return "by hand"; }
    if (state.liveMode === "live") { return null; }
    if (state.selected.size > 0) { return state.selected.size + " selected"; }
    if (!$("drawer").hidden) { return "a job is open"; }
    return null;
  }

  function finishedCounts() {
    var s = state.lastSnapshot ? state.lastSnapshot.summary : null;
    return s ? { succeeded: s.succeeded_total, failed: s.failed_total } : null;
  }

  // Called on every snapshot with whether a live reload is due, and whenever what pauses the
  // table may have changed; a table that resumes is reloaded at once.
  function refreshJobs(due) {
    var reason = pauseReason();
    if (reason === null) {
      if (state.pausedAt !== undefined) { state.pausedAt = undefined; due = true; }
      if (due) { loadJobs(); }
    } else if (state.pausedAt === undefined) {
      state.pausedAt = finishedCounts();
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
    var since = "", now = finishedCounts(), base = state.pausedAt;
    if (now && base && state.source !== "active") {
      var key = state.source === "dlq" ? "failed" : "succeeded";
      var n = now[key] - base[key];
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

  function setSource(source) {
    state.source = source;
    firstPage();
    state.selected.clear();
    clear($("job-rows"));
    invalidatePreview();
    document.querySelectorAll("#source button").forEach(function (b) { b.classList.toggle("on", b.dataset.source === source); });
    document.body.dataset.source = source;
    document.querySelectorAll(".only-dlq").forEach(function (n) { n.hidden = source !== "dlq"; });
    document.querySelectorAll(".only-active").forEach(function (n) { n.hidden = source !== "active"; });
    document.querySelectorAll(".only-archive").forEach(function (n) { n.hidden = source !== "archive"; });
    writeLink();
    loadJobs();
  }

  // -- paging: the first pages by number, the others by the cursor tokens the API answers
  // (next/previous: the row a page follows or precedes), so a deep page costs what the first
  // does. The page number shown is counted here (a page reached by cursor has none); the
  // total says "about" when the server estimated it.

  function firstPage() { state.page = 1; state.cursor = null; }

  function setCursorParams(params) {
    if (!state.cursor) { return; }
    if (state.cursor.kind === "last") { params.set("last", "true"); }
    else { params.set(state.cursor.kind, state.cursor.token); }
  }

  function goPage(kind, token) {
    if (kind === "first") { firstPage(); }
    else if (kind === "last") { state.cursor = { kind: "last" }; state.page = state.pages; }
    else if (token) {
      state.cursor = { kind: kind, token: token };
      state.page = Math.max(1, state.page + (kind === "after" ? 1 : -1));
    } else { return; }
    writeLink();
    loadJobs();
  }

  function renderPager(data) {
    state.pages = data.pages;
    state.next = data.next;
    state.previous = data.previous;
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

  // -- deep links: the tab, the jobs table's filters and sort, and the open job live in the
  // URL's fragment (#tab=dlq&reason=timeout&sort=type&order=asc&job=ID), so a link (or a reload)
  // opens the same view; the fragment never reaches the server. The page adds its cursor and
  // number (pageLink). A part names a field of the filters form; a part left at its default is left out. Another part joins by adding itself
  // to writeLink and readLink (and followLink, if it needs to act).

  var SOURCES = ["active", "archive", "dlq"];
  var JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  var LINK_FILTERS = ["search", "queue", "type", "status", "blocked", "partition", "reason", "since", "until",
    "sort", "order", "page_size"];
  var MAX_LINK_TEXT = 1000;  // the server's longest search (MAX_SEARCH_LENGTH)

  // The form field's value as link text ("" when at its default: left out of the link). A time
  // goes into the link in UTC, so that a colleague in another zone sees the same window.
  function fieldValue(input) {
    if (input.type === "checkbox") { return input.checked ? "1" : ""; }
    if (input.type === "datetime-local") { return input.value ? new Date(input.value).toISOString() : ""; }
    var initial = input.tagName === "SELECT"
      ? (Array.prototype.filter.call(input.options, function (o) { return o.defaultSelected; })[0] || input.options[0]).value
      : input.defaultValue;
    return input.value === initial ? "" : input.value;
  }

  // Sets a form field from link text; false when the text is not a value the field can take.
  function setField(input, text) {
    if (input.type === "checkbox") { input.checked = text === "1"; return text === "1" || text === ""; }
    if (text.length > MAX_LINK_TEXT) { return false; }
    if (input.type === "datetime-local") {
      var d = new Date(text);
      if (!/^\d{4}-\d\d-\d\dT/.test(text) || isNaN(d.getTime())) { return false; }
      input.value = localTime(d.toISOString()).replace(" ", "T");
      return input.value !== "";
    }
    input.value = text;
    return input.value === text;  // a select without that option, or a malformed date, refuses it
  }

  function writeLink() {
    var params = new URLSearchParams();
    params.set("tab", state.source);
    var form = $("filters").elements;
    LINK_FILTERS.forEach(function (name) {
      var value = fieldValue(form[name]);
      if (value !== "") { params.set(name, value); }
    });
    if (state.job) { params.set("job", state.job); }
    pageLink().forEach(function (kv) { params.set(kv[0], kv[1]); });
    var hash = "#" + params.toString();
    if (window.location.hash !== hash) { history.replaceState(null, "", hash); }
  }

  function readLink() {
    var params = new URLSearchParams((window.location.hash || "").replace(/^#/, ""));
    var filters = {};
    LINK_FILTERS.forEach(function (name) { if (params.has(name)) { filters[name] = params.get(name); } });
    return {
      tab: SOURCES.indexOf(params.get("tab")) >= 0 ? params.get("tab") : "active",
      job: JOB_ID.test(params.get("job") || "") ? params.get("job") : null,
      filters: filters,
      cursor: readCursor(params.get("cursor")),
      page: /^[1-9][0-9]{0,8}$/.test(params.get("page") || "") ? +params.get("page") : 1,
    };
  }

  // Puts the link's filters in the form (the others back to their defaults); whether any changed.
  function applyLinkFilters(filters) {
    var form = $("filters").elements, changed = false;
    LINK_FILTERS.forEach(function (name) {
      var input = form[name], before = fieldValue(input);
      var text = Object.prototype.hasOwnProperty.call(filters, name) ? filters[name] : "";
      if (text === before) { return; }
      if (text === "" || !setField(input, text)) {
        if (input.type === "checkbox") { input.checked = false; }
        else if (input.tagName === "SELECT") { input.selectedIndex = Math.max(0, Array.prototype.findIndex.call(input.options, function (o) { return o.defaultSelected; })); }
        else { input.value = input.defaultValue; }
      }
      changed = changed || fieldValue(input) !== before;
    });
    return changed;
  }

  // The page's part of the link: cursor=after.TOKEN, before.TOKEN or last, and its number.
  var CURSOR = /^(after|before)\.([A-Za-z0-9_-]{1,2048})$/;
  function pageLink() {
    if (!state.cursor) { return []; }
    var c = state.cursor.kind === "last" ? "last" : state.cursor.kind + "." + state.cursor.token;
    return [["cursor", c], ["page", String(state.page)]];
  }
  function readCursor(text) {
    if (text === "last") { return { kind: "last" }; }
    var m = CURSOR.exec(text || "");
    return m ? { kind: m[1], token: m[2] } : null;
  }

  // -- actions ----------------------------------------------------------------------------

  function cancelJobs(ids) {
    confirmAction("Cancel " + ids.length + " job(s)?",
      "Pending and fetched jobs go to the DLQ as Cancelled now; running jobs are stopped by their worker. Recorded as " + document.body.dataset.user + ".",
      "CANCEL").then(function (ok) {
      if (!ok) { return; }
      api("/api/jobs/cancel", { ids: ids, confirm: "CANCEL" }).then(function (r) {
        toast("Cancelled " + r.cancelled.length + ", stop requested for " + r.requested.length +
          (r.not_found.length ? ", " + r.not_found.length + " no longer active" : ""));
        state.selected.clear(); loadJobs(); refreshInspector();
      }).catch(function (e) { toast(e.message, true); });
    });
  }

  function resurrect(ids) {
    var word = ids.length >= 25 ? "RETRY" : null;
    confirmAction("Requeue " + ids.length + " DLQ job(s)?", "They go back to pending with attempts reset.", word)
      .then(function (ok) {
        if (!ok) { return; }
        api("/api/dlq/resurrect", { ids: ids, confirm: "RETRY" }).then(function (r) {
          toast("Requeued " + r.moved.length + " job(s)");
          state.selected.clear(); loadJobs(); refreshInspector();
        }).catch(function (e) { toast(e.message, true); });
      });
  }

  function purge(ids) {
    confirmAction("Purge " + ids.length + " DLQ job(s)?", "They are deleted for good. Lifetime counters keep them.", "PURGE")
      .then(function (ok) {
        if (!ok) { return; }
        api("/api/dlq/purge", { ids: ids, confirm: "PURGE" }).then(function (r) {
          toast("Purged " + r.deleted.length + " job(s)");
          state.selected.clear(); loadJobs();
          if (state.job && ids.indexOf(state.job) >= 0) { closeDrawer(); }
        }).catch(function (e) { toast(e.message, true); });
      });
  }

  // -- bulk by filter and run-now: "all matching the filter" on each tab (a preview pinned to
  // now, then the typed word, then exactly the previewed set), and delayed jobs made due now.

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

  function invalidatePreview() {
    state.preview = null;
    var box = $("preview");
    if (box) { box.hidden = true; clear(box); }
  }

  function previewByFilter(action) {
    var key = state.source + ":" + action;
    var spec = BULK[key];
    var cap = parseInt($("cap").value, 10) || 100;
    api(spec.preview, { filter: filterValues(), cap: cap }).then(function (p) {
      if (state.source + ":" + action !== key) { return; }  // the tab changed meanwhile
      state.preview = { key: key, data: p };
      var box = $("preview");
      clear(box);
      box.hidden = false;
      box.dataset.action = key;
      box.appendChild(el("p", { className: "preview-text" },
        "Will " + spec.verb + " ", el("b", { id: "preview-count" }, String(p.will_affect)), " of " + fmtNum(p.matched) +
        " matching " + spec.noun + (p.matched > p.will_affect ? " (capped at " + p.cap + ")" : "") + ", " + spec.order + "."));
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
    var pv = state.preview;
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
          invalidatePreview(); firstPage(); writeLink(); loadJobs(); refreshInspector();
        }).catch(function (e) { toast(e.message, true); });
      });
  }

  // A delayed job: pending and due later (a delay, a run-at time or a retry's backoff).
  function isDelayed(j) {
    return j.pillar === "hot" && j.status === "pending" && !!j.scheduled_at && Date.parse(j.scheduled_at) > Date.now();
  }

  function runNowButton(id) {
    var go = el("button", { type: "button", className: "row-run-now" }, "Run now");
    go.addEventListener("click", function (ev) { ev.stopPropagation(); runNow([id]); });
    return go;
  }

  function runNow(ids) {
    var word = ids.length >= 25 ? "RUN" : null;
    confirmAction("Run " + ids.length + " delayed job(s) now?",
      "They become due now and the workers are woken; a job that is not delayed is left alone. Recorded as " +
      document.body.dataset.user + ".", word).then(function (ok) {
      if (!ok) { return; }
      api("/api/jobs/run-now", { ids: ids, confirm: "RUN" }).then(function (r) {
        toast("Due now: " + r.moved.length + (r.refused.length ? ", " + r.refused.length + " not delayed (left alone)" : ""));
        state.selected.clear(); loadJobs(); refreshInspector();
      }).catch(function (e) { toast(e.message, true); });
    });
  }

  if (isAdmin) {
    [["preview-cancel", "cancel"], ["preview-archive-requeue", "requeue"], ["preview-archive-delete", "delete"],
      ["preview-requeue", "requeue"], ["preview-purge", "purge"]].forEach(function (pair) {
      $(pair[0]).addEventListener("click", function () { previewByFilter(pair[1]); });
    });
    $("cap").addEventListener("input", invalidatePreview);
    $("bulk-run-now").addEventListener("click", function () { runNow(Array.from(state.selected)); });
  }

  // -- schedules ------------------------------------------------------------------------------

  // "2026-12-02T07:00:00+01:00" -> "2026-12-02 07:00:00 +01:00"; "...Z" -> "... UTC".
  function isoText(iso) {
    if (!iso) { return "–"; }
    return iso.replace("T", " ").replace(/\.\d+/, "").replace(/Z$/, " UTC").replace(/([+-]\d\d:\d\d)$/, " $1");
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
      var name = state.schedule;
      if (name === null) { return null; }
      return api(schedulePath(name)).then(function (d) {
        if (state.schedule === name) { renderScheduleDetail(d); }
      }).catch(function (e) {
        if (state.schedule === name) {
          $("sch-banner").hidden = false;
          setText($("sch-banner"), e.message);
        }
      });
    });
  });

  function jobLink(id) {
    var b = el("button", { type: "button", className: "link job-link", title: "Open job " + attrText(id) },
      userText(shortId(id)));
    b.dataset.job = id;
    b.addEventListener("click", function (ev) { ev.stopPropagation(); openJob(id); });
    return b;
  }

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
      tr.classList.toggle("on", state.schedule === s.name);
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
    state.schedule = name;
    state.scheduleData = null;
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
    state.schedule = null; state.scheduleData = null;
    $("schedule-detail").hidden = true;
    document.querySelectorAll("#schedule-rows tr.on").forEach(function (tr) { tr.classList.remove("on"); });
  }

  function field(dl, key, label, value) {
    dl.appendChild(el("dt", null, label));
    dl.appendChild(el("dd", { dataset: { field: key } }, typeof value === "string" ? userText(value) : value));
  }

  function renderScheduleDetail(d) {
    state.scheduleData = d;
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
    var name = state.schedule;
    if (name === null) { return; }
    api(schedulePath(name, action), {}).then(function (r) {
      toast(done(r));
      loadSchedules(); loadJobs();
    }).catch(function (e) { toast(e.message, true); });
  }

  function triggerSchedule() {
    var d = state.scheduleData;
    if (!d) { return; }
    confirmAction("Run " + d.name + " now?",
      "One job of type " + d.type + " is enqueued on " + d.queue + " now, outside the schedule's slots" +
      (d.paused ? " (it stays paused)" : "") + ". Recorded as " + document.body.dataset.user + ".", null)
      .then(function (ok) {
        if (ok) { scheduleAction("trigger", function (r) { return "Enqueued job " + r.job_id; }); }
      });
  }

  function resetSchedule() {
    var d = state.scheduleData;
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
    var d = state.scheduleData;
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
    var d = state.scheduleData, kwargs = checkKwargs();
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

  // -- inspector & editor ---------------------------------------------------------------------

  var FIELD_ORDER = ["id", "pillar", "status", "failure_reason", "queue", "type", "partition", "priority", "tags",
    "parents_left", "attempt_count", "max_attempts", "timeout_seconds", "progress", "idempotency_key", "worker_id",
    "created_by", "last_modified_by", "cancelled_by", "created_at", "scheduled_at", "expires_at", "started_at",
    "heartbeat_at", "updated_at", "finished_at", "failed_at", "duration_seconds", "cancel_requested_at"];

  function openJob(id) {
    state.job = id;
    $("drawer").hidden = false;
    showTab("inspector");
    writeLink();
    refreshInspector();
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
    renderAttempts(j.attempts || []);
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

  function stateBadge(st) {
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

  // -- workflow view --------------------------------------------------------------------------

  var STATE_ORDER = ["pending", "fetched", "processing", "waiting", "blocked", "succeeded", "failed", "purged"];

  function openWorkflow(id) {
    if (!id) { return; }
    if (state.workflow !== id) {
      state.workflowData = null; state.workflowText = "";
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
        state.workflowText = "";
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
    state.workflowData = w;
    var box = $("workflow");
    box.dataset.finished = String(w.finished);
    if (isAdmin) { $("wf-cancel").disabled = w.finished; }
    if (text !== state.workflowText) { state.workflowText = text; buildWorkflow(w); }
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
      }
      if (job.failure_reason) { li.appendChild(el("span", { className: "chip" }, userText(job.failure_reason))); }
      if (job.error) { li.appendChild(el("span", { className: "err", title: attrText(job.error) }, userText(job.error.split("\n").slice(-1)[0]))); }
      ol.appendChild(li);
    });
    $("wf-truncated").hidden = !w.truncated;
    $("wf-truncated").textContent = w.truncated ? "Only the first " + w.total + " jobs are listed." : "";
  }

  function cancelWorkflow() {
    var w = state.workflowData;
    if (!w) { return; }
    var open = w.jobs.filter(function (job) { return ["succeeded", "failed", "purged"].indexOf(job.state) < 0; });
    var blocked = open.filter(function (job) { return job.state === "blocked"; }).length;
    confirmAction("Cancel workflow " + w.id.slice(0, 8) + "…?",
      "Its " + open.length + " unfinished job(s) stop: " + blocked + " blocked one(s) go to the DLQ as dependency_failed, " +
      "the others are cancelled (running ones are stopped by their worker). Recorded as " + document.body.dataset.user + ".",
      "CANCEL").then(function (ok) {
      if (!ok) { return; }
      api("/api/workflows/" + encodeURIComponent(w.id) + "/cancel", { confirm: "CANCEL" }).then(function (r) {
        toast("Workflow cancelled: " + r.cancelled.length + " job(s) to the DLQ" +
          (r.requested.length ? ", stop requested for " + r.requested.length : ""));
        refreshWorkflow(); loadJobs(); refreshInspector();
      }).catch(function (e) { toast(e.message, true); });
    });
  }

  function showTab(tab) {
    document.querySelectorAll("#drawer-tabs button").forEach(function (b) { b.classList.toggle("on", b.dataset.tab === tab); });
    $("inspector").hidden = tab !== "inspector";
    $("workflow").hidden = tab !== "workflow";
    if ($("editor")) { $("editor").hidden = tab !== "editor"; }
    if (tab === "editor") { fillEditor(); }
  }

  function fillEditor() {
    var j = state.jobData;
    if (!j) { return; }
    $("ed-payload").value = pretty(j.payload);
    $("ed-tags").value = (j.tags || []).join(", ");
    $("ed-priority").value = j.priority === null || j.priority === undefined ? "" : j.priority;
    checkJson();
  }

  function checkJson() {
    var hint = $("ed-json");
    try {
      JSON.parse($("ed-payload").value);
      var hidden = invisibleIn($("ed-payload").value);
      hint.textContent = "Valid JSON" + (hidden ? " · holds invisible characters: " + hidden : "");
      hint.className = "hint ok";
      $("ed-save").disabled = false; $("ed-requeue").disabled = false;
      return true;
    } catch (e) {
      setText(hint, "Invalid JSON: " + e.message); hint.className = "hint bad";
      $("ed-save").disabled = true; $("ed-requeue").disabled = true;
      return false;
    }
  }

  function saveEditor(requeue) {
    if (!checkJson() || !state.job) { return; }
    var j = state.jobData;
    var body = { payload: JSON.stringify(JSON.parse($("ed-payload").value)), requeue: requeue };
    var tags = $("ed-tags").value.split(",").map(function (t) { return t.trim(); }).filter(Boolean);
    if (tags.join(",") !== (j.tags || []).join(",")) { body.tags = tags; }
    var p = $("ed-priority").value;
    if (p !== "") { body.priority = parseInt(p, 10); }
    api("/api/jobs/" + encodeURIComponent(state.job) + "/edit", body).then(function (r) {
      toast(r.requeued ? "Saved and requeued" : "Saved");
      showTab("inspector"); refreshInspector(); loadJobs();
    }).catch(function (e) { toast(e.message, true); });
  }

  function closeDrawer() {
    state.job = null; state.jobData = null;
    state.workflow = null; state.workflowData = null; state.workflowText = "";
    $("drawer").hidden = true;
    writeLink();
  }

  // -- wiring ---------------------------------------------------------------------------------

  if (!isAdmin) {
    document.querySelectorAll(".admin-only").forEach(function (n) { n.remove(); });
  }
  var reasonSelect = $("filters").elements.reason;
  REASONS.forEach(function (r) { reasonSelect.appendChild(el("option", { value: r }, r)); });
  document.querySelectorAll("#source button").forEach(function (b) {
    b.addEventListener("click", function () { setSource(b.dataset.source); });
  });
  $("filters").addEventListener("submit", function (ev) { ev.preventDefault(); firstPage(); writeLink(); invalidatePreview(); loadJobs(); });
  $("filters").addEventListener("input", invalidatePreview);
  $("filters").addEventListener("reset", function () { setTimeout(function () { firstPage(); writeLink(); invalidatePreview(); loadJobs(); }, 0); });
  // A cursor belongs to one sort, order and page size: changing one starts from page 1.
  ["sort", "order", "page_size"].forEach(function (name) {
    $("filters").elements[name].addEventListener("change", function () { firstPage(); writeLink(); });
  });
  $("first").addEventListener("click", function () { goPage("first"); });
  $("prev").addEventListener("click", function () { goPage("before", state.previous); });
  $("next").addEventListener("click", function () { goPage("after", state.next); });
  $("last").addEventListener("click", function () { goPage("last"); });
  $("live-toggle").addEventListener("click", function () {
    state.liveMode = pauseReason() === null ? "paused" : "live";
    refreshJobs(false);
  });
  // Opening or closing the drawer pauses or resumes the table, whoever opened it.
  new MutationObserver(function () { refreshJobs(false); }).observe($("drawer"), { attributes: true, attributeFilter: ["hidden"] });
  $("job-rows").addEventListener("copy", copyFullId);
  $("show-hidden").addEventListener("change", function () { if (state.lastSnapshot) { renderQueues(state.lastSnapshot.queues); } });
  $("drawer-close").addEventListener("click", closeDrawer);
  document.addEventListener("keydown", function (ev) {
    // Esc closes the drawer, unless a dialog or an editor field has the key first.
    // (A read-only page has no confirm dialog at all.)
    if (ev.key !== "Escape" || $("drawer").hidden || ($("confirm") && $("confirm").open)) { return; }
    var target = ev.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT")) { return; }
    closeDrawer();
  });
  $("sch-close").addEventListener("click", closeSchedule);
  document.querySelectorAll("#drawer-tabs button").forEach(function (b) {
    b.addEventListener("click", function () {
      if (b.dataset.tab === "workflow") {
        openWorkflow((state.jobData && state.jobData.workflow_id) || state.workflow);
      } else { showTab(b.dataset.tab); }
    });
  });
  $("insp-workflow-link").addEventListener("click", function () { openWorkflow(this.dataset.workflow); });
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
    $("bulk-cancel").addEventListener("click", function () { cancelJobs(Array.from(state.selected)); });
    $("bulk-retry").addEventListener("click", function () { resurrect(Array.from(state.selected)); });
    $("bulk-purge").addEventListener("click", function () { purge(Array.from(state.selected)); });
    $("insp-edit").addEventListener("click", function () { showTab("editor"); });
    $("insp-retry").addEventListener("click", function () { resurrect([state.job]); });
    $("insp-cancel").addEventListener("click", function () { cancelJobs([state.job]); });
    $("insp-purge").addEventListener("click", function () { purge([state.job]); });
    $("wf-cancel").addEventListener("click", cancelWorkflow);
    $("ed-payload").addEventListener("input", checkJson);
    $("editor").addEventListener("submit", function (ev) { ev.preventDefault(); saveEditor(false); });
    $("ed-requeue").addEventListener("click", function () { saveEditor(true); });
    $("sch-pause").addEventListener("click", function () {
      var paused = state.scheduleData && state.scheduleData.paused;
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

  var themeSelect = $("theme");
  themeSelect.value = document.documentElement.getAttribute("data-theme") || "blueprint";
  themeSelect.addEventListener("change", function () {
    document.documentElement.setAttribute("data-theme", themeSelect.value);
    try { window.localStorage.setItem("chokaq-deck-theme", themeSelect.value); } catch (e) { /* ignore */ }
  });

  // -- connection -------------------------------------------------------------------------

  var source = null;
  function setOnline(on) {
    var pill = $("conn");
    pill.textContent = on ? "ONLINE" : "OFFLINE";
    pill.className = "pill " + (on ? "online" : "offline");
  }

  function connect() {
    if (source) { source.close(); }
    source = new EventSource(base + "/api/events");
    source.addEventListener("open", function () {
      setOnline(true);
      state.lastEventAt = Date.now();
      // Reconcile everything with storage after every (re)connect.
      chart.load(); refreshJobs(true); refreshInspector(); refreshWorkflow(); loadSchedules();
    });
    source.addEventListener("snapshot", function (ev) {
      state.lastEventAt = Date.now();
      setOnline(true);
      renderSnapshot(JSON.parse(ev.data));
    });
    source.addEventListener("tick", function () {
      state.lastEventAt = Date.now(); setOnline(true);
      chart.tick();
      // Idle storage still moves schedules along (a slot comes due, a worker stops declaring
      // one): re-read them every few ticks.
      if (++state.idleTicks % 4 === 0) { loadSchedules(); }
    });
    source.addEventListener("storage-error", function (ev) { setOnline(false); toast("Storage: " + JSON.parse(ev.data), true); });
    source.addEventListener("error", function () {
      setOnline(false);
      // Closed for good means the server refused the stream (a session that expired):
      // reload, so the sign-in page (or the host's) takes over; otherwise the browser retries.
      if (source.readyState === EventSource.CLOSED) {
        fetch(base + "/api/me", { credentials: "same-origin" }).then(function (r) {
          if (r.status === 401) { window.location.reload(); } else { setTimeout(connect, 2000); }
        }).catch(function () { setTimeout(connect, 2000); });
      }
    });
  }
  // A stream that went silent (a proxy holding a dead connection) is reopened.
  setInterval(function () {
    if (state.lastEventAt && Date.now() - state.lastEventAt > 5000) { setOnline(false); state.lastEventAt = 0; connect(); }
  }, 1000);

  function followLink() {
    var link = readLink();
    var filtered = applyLinkFilters(link.filters);
    if (link.tab !== state.source) { setSource(link.tab); }
    if (JSON.stringify(link.cursor) !== JSON.stringify(state.cursor)) {
      state.cursor = link.cursor; state.page = link.cursor ? link.page : 1; invalidatePreview(); loadJobs();
    } else if (filtered) { firstPage(); invalidatePreview(); loadJobs(); }
    if (link.job && link.job !== state.job) { openJob(link.job); }
    if (!link.job && state.job) { closeDrawer(); }
    writeLink();  // a bad part of the link is dropped
  }
  window.addEventListener("hashchange", followLink);  // a link followed within the page
  state.source = null;
  followLink();
  connect();
})();
