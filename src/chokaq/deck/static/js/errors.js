// Top errors (DLQ): the most frequent error families; a click lists that family's DLQ jobs.

import { $, clear, el, userText } from "./dom.js";
import { ago, fmtNum } from "./format.js";
import { showJobs } from "./jobs.js";
import { subscribe } from "./store.js";

export function init() {
  subscribe("snapshot", function (snap) { renderErrors(snap.top_errors); });
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
  showJobs("dlq", { reason: g.failure_reason, family: g.family });
}
