// Workers: the live workers, their queues, running jobs, concurrency (admins change it), state
// and heartbeat.

import { api } from "./api.js";
import { isAdmin } from "./config.js";
import { $, attrText, el, setInput, setText, syncRows, toast } from "./dom.js";
import { ago } from "./format.js";
import { subscribe } from "./store.js";

export function init() {
  subscribe("snapshot", function (snap) { renderWorkers(snap.workers); });
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
