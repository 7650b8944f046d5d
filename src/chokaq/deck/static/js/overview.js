// The overview's cards: live counts of active work, the lifetime counters, and throughput and
// failure rate over 1 and 5 minutes (the charts below them are charts.js).

import { $ } from "./dom.js";
import { fmtNum } from "./format.js";
import { subscribe } from "./store.js";

export function init() {
  subscribe("snapshot", renderCards);
}

function renderCards(snap) {
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
}
