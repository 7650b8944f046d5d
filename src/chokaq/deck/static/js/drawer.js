// The drawer at the side: its tabs (Inspector, Editor, Workflow; each tab's module opens it)
// and closing it (the ✕ or Esc). Opening or closing it pauses or resumes the jobs table's live
// refresh (jobs.js watches it).

import { $ } from "./dom.js";
import { writeLink } from "./link.js";
import { state } from "./store.js";

export function init() {
  document.querySelector('#drawer-tabs [data-tab="inspector"]').addEventListener("click", function () { showTab("inspector"); });
  $("drawer-close").addEventListener("click", closeDrawer);
  document.addEventListener("keydown", function (ev) {
    // Esc closes the drawer, unless a dialog or an editor field has the key first.
    // (A read-only page has no confirm dialog at all.)
    if (ev.key !== "Escape" || $("drawer").hidden || ($("confirm") && $("confirm").open)) { return; }
    var target = ev.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT")) { return; }
    closeDrawer();
  });
}

export function showTab(tab) {
  document.querySelectorAll("#drawer-tabs button").forEach(function (b) { b.classList.toggle("on", b.dataset.tab === tab); });
  $("inspector").hidden = tab !== "inspector";
  $("workflow").hidden = tab !== "workflow";
  if ($("editor")) { $("editor").hidden = tab !== "editor"; }
}

export function closeDrawer() {
  state.job = null; state.jobData = null;
  state.workflow = null;  // workflow.js starts afresh when one is opened again
  $("drawer").hidden = true;
  writeLink();
}
