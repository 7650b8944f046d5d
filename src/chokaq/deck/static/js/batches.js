// Batches: each batch handler type's batches over the last hour, as the store recorded them
// when they were claimed: its settings, how many batches and jobs, their mean and largest
// size, and the newest batches' sizes. Refreshed with the live snapshot, at most every 5 s.

import { api } from "./api.js";
import { $, el, setText, syncRows } from "./dom.js";
import { fmtNum, fmtSecs } from "./format.js";
import { subscribe } from "./store.js";

var REFRESH_MS = 5000;
var last = 0;

export function init() {
  subscribe("snapshot", function () {
    var now = Date.now();
    if (now - last < REFRESH_MS) { return; }
    last = now;
    api("/api/batches").then(renderBatches).catch(function () { last = 0; });
  });
}

function renderBatches(data) {
  var types = data.types;
  $("batches-empty").hidden = types.some(function (t) { return t.batches > 0; });
  syncRows($("batch-rows"), types, function (t) { return t.type; }, function () {
    return el("tr", null, el("td"), el("td"), el("td"), el("td"), el("td"), el("td"), el("td"),
      el("td"), el("td", { className: "sizes" }));
  }, function (tr, t) {
    var cells = tr.children;
    setText(cells[0], t.type);
    cells[1].textContent = t.batch_size === null ? "–" : fmtNum(t.batch_size);
    cells[2].textContent = t.batch_wait_seconds === null ? "–" : fmtSecs(t.batch_wait_seconds);
    setText(cells[3], t.batch_key === null ? "–" : t.batch_key);
    cells[4].textContent = fmtNum(t.batches);
    cells[5].textContent = fmtNum(t.jobs);
    cells[6].textContent = t.mean_size === null ? "–" : String(t.mean_size);
    cells[7].textContent = t.max_size === null ? "–" : fmtNum(t.max_size);
    cells[8].textContent = t.recent.map(function (b) { return b.size; }).join(" ");
  });
}
