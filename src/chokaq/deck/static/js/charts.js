// The Deck's charts: jobs per second (succeeded and failed stacked, so the red share of the
// drawn area is the failure share) and the duration of finished jobs (average bars, longest as a
// line), over a window ending now, for every queue or one; y-axis values and a hover read-out.
// The server aggregates into at most as many buckets as the chart is wide (GET /api/series);
// the live snapshot's newest seconds keep it moving between reads. All text is written with
// textContent (a queue's name as attrText: plain text with its invisible characters marked).

import { api } from "./api.js";
import { $, attrText, clear, toast } from "./dom.js";
import { subscribe } from "./store.js";

var NS = "http://www.w3.org/2000/svg";
var H = 200, LAT_H = 100;          // the SVGs' viewBox heights; both are 1000 wide
var TICKS = 4;                     // grid lines above the baseline, each with its value
var RELOAD_MS = 10 * 60 * 1000;    // re-read the window now and then (bounds the seconds kept)
var QUEUE_RELOAD_MS = 3000;        // a one-queue chart re-reads at most this often while it moves
var GAP_SECONDS = 10;              // snapshots further apart than this missed seconds: re-read

function svgEl(tag, cls) {
  var node = document.createElementNS(NS, tag);
  if (cls) { node.setAttribute("class", cls); }
  return node;
}

// The axis' top value: the smallest 1, 2, 4, 6 or 8 times a power of ten at or above v, so
// that each quarter is a round number too.
function niceTop(v) {
  if (!(v > 0)) { return 1; }
  var p = Math.pow(10, Math.floor(Math.log10(v)));
  var steps = [1, 2, 4, 6, 8, 10];
  for (var i = 0; i < steps.length; i++) { if (steps[i] * p >= v * (1 - 1e-9)) { return steps[i] * p; } }
  return 10 * p;
}
function fmtRate(v) {
  if (v === 0) { return "0"; }
  if (v >= 100) { return v.toFixed(0); }
  if (v >= 10) { return v.toFixed(1).replace(/\.0$/, ""); }
  return String(Number(v.toPrecision(3)));
}
function fmtDur(s) {
  if (s === null || s === undefined) { return "–"; }
  if (s === 0) { return "0 s"; }
  if (s < 0.001) { return Number((s * 1e6).toPrecision(2)) + " µs"; }
  if (s < 1) { return Number((s * 1000).toPrecision(3)) + " ms"; }
  if (s < 60) { return Number(s.toPrecision(3)) + " s"; }
  if (s < 3600) { return Number((s / 60).toPrecision(3)) + " min"; }
  return Number((s / 3600).toPrecision(3)) + " h";
}
function fmtTime(sec, withDate) {
  var d = new Date(sec * 1000);
  return withDate ? d.toLocaleString() : d.toLocaleTimeString();
}

function emptyBucket() { return { s: 0, f: 0, dn: 0, dt: 0, dm: null }; }
function addInto(into, v) {
  into.s += v.s; into.f += v.f; into.dn += v.dn; into.dt += v.dt;
  if (v.dm !== null && (into.dm === null || v.dm > into.dm)) { into.dm = v.dm; }
}
function fromPoint(p) {  // a SeriesPoint as the snapshot and the series' tail carry it
  return {
    s: p.succeeded, f: p.failed, dn: p.duration_count || 0,
    dt: p.total_duration_seconds || 0, dm: p.max_duration_seconds
  };
}

// Draws the charts and keeps them moving with the live stream: a snapshot adds its newest
// seconds, a tick slides the window, a (re)connect re-reads it.
export function init() {
  var svg = $("chart"), lat = $("lat"), tip = $("chart-tip"), picker = $("chart-queue");
  var c = {
    window: "hour", queue: "", width: 1, since: 0, tailFrom: 0, loadedAt: 0, seq: 0,
    buckets: new Map(),  // bucket start -> totals read aggregated, for seconds before tailFrom
    seconds: new Map(),  // second -> totals, from tailFrom on (the live snapshots' tails)
    drawn: new Map(), x0: 0, x1: 1, clockSkew: 0, lastSnapAt: 0,
    queues: [], queueMark: "", queueDirty: false, hover: null
  };

  function points() {
    var w = svg.getBoundingClientRect().width;
    return Math.max(60, Math.min(1000, Math.floor(w) || 600));
  }

  function load() {
    var seq = ++c.seq;
    var q = "/api/series?window=" + encodeURIComponent(c.window) + "&points=" + points();
    if (c.queue) { q += "&queue=" + encodeURIComponent(c.queue); }
    c.loadedAt = Date.now();
    c.queueDirty = false;
    c.queueMark = queueMark();
    return api(q).then(function (data) {
      if (seq !== c.seq) { return; }  // a newer read (another window or queue) was asked for
      c.width = data.width_seconds;
      c.since = Date.parse(data.since) / 1000;
      c.tailFrom = Date.parse(data.tail_from) / 1000;
      c.clockSkew = Date.parse(data.until) / 1000 - Date.now() / 1000;
      c.buckets = new Map();
      var cols = data.points;
      for (var i = 0; i < cols.t.length; i++) {
        var avg = cols.duration_avg_seconds[i], n = cols.duration_count[i];
        c.buckets.set(cols.t[i], {
          s: cols.succeeded[i], f: cols.failed[i], dn: n,
          dt: avg === null ? 0 : avg * n, dm: cols.duration_max_seconds[i]
        });
      }
      c.seconds = new Map();
      mergeSeconds(data.tail);
      // Which window the bars on screen were read for (c.window changes at the click, before
      // the read answers): tests and tools wait on it.
      svg.dataset.loaded = c.window + ":" + c.queue;
      draw();
    }).catch(function (e) { toast("Chart: " + e.message, true); });
  }

  // A tail's seconds replace what was known of them (a second still filling up is re-read
  // whole by the next snapshot); seconds before tailFrom are in the aggregated buckets.
  function mergeSeconds(tail) {
    tail.forEach(function (p) {
      var sec = Date.parse(p.bucket_start) / 1000;
      if (sec >= c.tailFrom) { c.seconds.set(sec, fromPoint(p)); }
    });
  }

  function now() { return Date.now() / 1000 + c.clockSkew; }

  function snapshot(snap) {
    var at = Date.parse(snap.at) / 1000;
    c.clockSkew = at - Date.now() / 1000;
    syncQueues(snap.queues || []);
    var gap = c.lastSnapAt && at - c.lastSnapAt > GAP_SECONDS;
    c.lastSnapAt = at;
    if (!c.loadedAt || gap || Date.now() - c.loadedAt > RELOAD_MS) { load(); return; }
    c.queues = snap.queues || [];
    if (c.queue) {
      // The snapshot's tail is every queue's: a one-queue chart re-reads while it moves.
      var mark = queueMark();
      if (mark !== c.queueMark) { c.queueDirty = true; c.queueMark = mark; }
    } else {
      mergeSeconds(snap.series_tail || []);
    }
    tick();
  }

  // Every second (a snapshot or the idle stream's tick): redraw, so the window slides with
  // the clock, or re-read a one-queue chart that moved since its last read.
  function tick() {
    if (c.queue && c.queueDirty && Date.now() - c.loadedAt > QUEUE_RELOAD_MS) { load(); return; }
    draw();
  }

  // The chosen queue's lifetime counters in the latest snapshot: they move when it does.
  function queueMark() {
    var row = c.queues.filter(function (q) { return q.name === c.queue; })[0];
    return row ? row.succeeded_total + "/" + row.failed_total : "";
  }

  function syncQueues(queues) {
    var names = queues.map(function (q) { return q.name; });
    if (c.queue && names.indexOf(c.queue) < 0) { names.push(c.queue); }  // keep the choice
    names.sort();
    var have = Array.prototype.slice.call(picker.options, 1).map(function (o) { return o.value; });
    if (names.join("\n") === have.join("\n")) { return; }
    while (picker.options.length > 1) { picker.remove(1); }
    names.forEach(function (name) {
      var o = document.createElement("option");
      // An option holds plain text only: invisible characters as the page's visible markers.
      o.value = name; o.textContent = attrText(name); o.dir = "auto";
      picker.appendChild(o);
    });
    picker.value = c.queue;
  }

  // The buckets to draw: the aggregated ones and the newest seconds folded into theirs.
  function combine(nowSec) {
    var w = c.width, out = new Map();
    c.buckets.forEach(function (v, b) { if (b >= c.since) { var o = emptyBucket(); addInto(o, v); out.set(b, o); } });
    c.seconds.forEach(function (v, sec) {
      if (sec < c.since) { c.seconds.delete(sec); return; }
      if (sec > nowSec + 1) { return; }
      var b = Math.floor(sec / w) * w;
      if (!out.has(b)) { out.set(b, emptyBucket()); }
      addInto(out.get(b), v);
    });
    return out;
  }

  function draw() {
    if (!c.since) { return; }  // nothing read yet
    var nowSec = now(), w = c.width;
    var drawn = combine(nowSec);
    // The x domain runs from the window's first bucket to the end of the current one, so every
    // bar has the same width and the areas compare as the counts do.
    c.x0 = c.since;
    c.x1 = c.since + (Math.floor((nowSec - c.since) / w) + 1) * w;
    var k = 1000 / (c.x1 - c.x0), bw = w * k;
    var peak = 0, total = 0, failed = 0, durPeak = 0;
    drawn.forEach(function (v) {
      peak = Math.max(peak, (v.s + v.f) / w);
      total += v.s + v.f; failed += v.f;
      if (v.dm !== null) { durPeak = Math.max(durPeak, v.dm); }
      else if (v.dn) { durPeak = Math.max(durPeak, v.dt / v.dn); }
    });
    var top = niceTop(peak), scale = H / top;
    var ok = [], bad = [], avg = [], max = [];
    var latTop = niceTop(durPeak), latScale = LAT_H / latTop;
    drawn.forEach(function (v, b) {
      var x = ((b - c.x0) * k).toFixed(3), x2 = ((b - c.x0) * k + bw).toFixed(3);
      var hs = (v.s / w) * scale, hf = (v.f / w) * scale;
      if (hs > 0) { ok.push("M" + x + " " + H + "V" + Math.max(0, H - hs).toFixed(3) + "H" + x2 + "V" + H + "Z"); }
      if (hf > 0) {
        var y0 = (H - hs).toFixed(3);
        // The tallest bar may end a rounding error above the top (-1e-14 prints "-0.000").
        bad.push("M" + x + " " + y0 + "V" + Math.max(0, H - hs - hf).toFixed(3) + "H" + x2 + "V" + y0 + "Z");
      }
      if (v.dn > 0) {
        avg.push("M" + x + " " + LAT_H + "V" + (LAT_H - (v.dt / v.dn) * latScale).toFixed(3) + "H" + x2 + "V" + LAT_H + "Z");
      }
      if (v.dm !== null) {
        var ym = (LAT_H - v.dm * latScale).toFixed(3);
        max.push("M" + x + " " + ym + "H" + x2);
      }
    });
    c.drawn = drawn;
    paint(svg, H, [["ok", ok], ["bad", bad]]);
    paint(lat, LAT_H, [["avg", avg], ["max", max]]);
    axis($("chart-y"), top, fmtRate);
    axis($("lat-y"), latTop, fmtDur);
    svg.dataset.until = String(Math.floor(nowSec));
    svg.dataset.total = String(total);
    svg.dataset.failed = String(failed);
    svg.dataset.bars = String(drawn.size);
    svg.dataset.width = String(w);
    svg.dataset.x0 = String(c.x0);
    svg.dataset.x1 = String(c.x1);
    lat.dataset.bars = String(avg.length);
    svg.setAttribute("aria-label", "throughput chart: " + total + " jobs, " + failed + " failed");
    $("chart-from").textContent = fmtTime(c.x0, true);
    $("chart-peak").textContent = "bars of " + fmtDur(w) + " · peak " + fmtRate(peak) +
      " jobs/s · " + total.toLocaleString("en-US") + " jobs, " +
      (total ? (100 * failed / total).toFixed(1) : "0.0") + "% failed";
    $("chart-to").textContent = "now";
    if (c.hover !== null) { showTip(c.hover); }
  }

  function paint(target, height, layers) {
    clear(target);
    for (var i = 1; i <= TICKS; i++) {
      var y = String(height - (height * i) / TICKS);
      var line = svgEl("line", "axis");
      line.setAttribute("x1", "0"); line.setAttribute("x2", "1000");
      line.setAttribute("y1", y); line.setAttribute("y2", y);
      target.appendChild(line);
    }
    layers.forEach(function (pair) {
      var path = svgEl("path", pair[0]);
      path.setAttribute("d", pair[1].join("") || "M0 " + height);
      target.appendChild(path);
    });
    var mark = svgEl("rect", "hover");
    mark.setAttribute("y", "0"); mark.setAttribute("height", String(height));
    mark.setAttribute("width", "0");
    target.appendChild(mark);
  }

  function axis(box, top, fmt) {
    clear(box);
    for (var i = TICKS; i >= 0; i--) {
      var span = document.createElement("span");
      span.textContent = fmt((top * i) / TICKS);
      box.appendChild(span);
    }
  }

  // -- hover: the bucket under the pointer, in either chart
  function bucketAt(target, clientX) {
    var box = target.getBoundingClientRect();
    var t = c.x0 + ((clientX - box.left) / box.width) * (c.x1 - c.x0);
    return Math.floor(t / c.width) * c.width;
  }

  function showTip(b) {
    var v = c.drawn.get(b) || emptyBucket(), n = v.s + v.f, w = c.width;
    var days = c.window === "24h" || c.window === "2w";
    var lines = [
      fmtTime(b, days) + " – " + fmtTime(b + w, days),
      v.s.toLocaleString("en-US") + " succeeded · " + v.f.toLocaleString("en-US") + " failed · " +
        (n ? (100 * v.f / n).toFixed(1) : "0.0") + "% failed",
      fmtRate(n / w) + " jobs/s · duration avg " + fmtDur(v.dn ? v.dt / v.dn : null) +
        " · max " + fmtDur(v.dm)
    ];
    clear(tip);
    lines.forEach(function (text) { var d = document.createElement("div"); d.textContent = text; tip.appendChild(d); });
    tip.dataset.bucket = String(b);
    tip.hidden = false;
    var frac = (b - c.x0) / (c.x1 - c.x0);
    tip.style.left = Math.min(Math.max(frac * 100, 0), 70).toFixed(2) + "%";
    [svg, lat].forEach(function (target) {
      var mark = target.querySelector("rect.hover");
      if (!mark) { return; }
      mark.setAttribute("x", (frac * 1000).toFixed(3));
      mark.setAttribute("width", ((w / (c.x1 - c.x0)) * 1000).toFixed(3));
    });
  }

  function hideTip() {
    c.hover = null; tip.hidden = true;
    [svg, lat].forEach(function (target) {
      var mark = target.querySelector("rect.hover");
      if (mark) { mark.setAttribute("width", "0"); }
    });
  }

  [svg, lat].forEach(function (target) {
    // Pointer events: a mouse, a pen or a finger dragged along the chart.
    target.addEventListener("pointermove", function (ev) {
      if (!c.since) { return; }
      c.hover = bucketAt(target, ev.clientX);
      showTip(c.hover);
    });
    target.addEventListener("pointerleave", hideTip);
  });

  document.querySelectorAll("#chart-window button").forEach(function (b) {
    b.addEventListener("click", function () {
      c.window = b.dataset.window;
      document.querySelectorAll("#chart-window button").forEach(function (o) { o.classList.toggle("on", o === b); });
      hideTip();
      load();
    });
  });
  picker.addEventListener("change", function () {
    c.queue = picker.value; hideTip(); load();
  });

  subscribe("snapshot", snapshot);
  subscribe("tick", tick);
  subscribe("connected", load);
}
