// Circuits: each job type's breaker as the workers report it; admins may force one closed.

import { api } from "./api.js";
import { isAdmin } from "./config.js";
import { $, el, setText, syncRows, toast } from "./dom.js";
import { fmtSecs } from "./format.js";
import { subscribe } from "./store.js";

export function init() {
  subscribe("snapshot", function (snap) { renderCircuits(snap.circuits); });
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
