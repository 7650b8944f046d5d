// The editor tab of the drawer (admins): the open job's payload (JSON checked as it is typed),
// tags and priority, saved, or saved and requeued from the DLQ in one step.

import { api } from "./api.js";
import { isAdmin } from "./config.js";
import { $, invisibleIn, setText, toast } from "./dom.js";
import { showTab } from "./drawer.js";
import { pretty } from "./format.js";
import { publish, state } from "./store.js";

export function init() {
  if (!isAdmin) { return; }
  document.querySelector('#drawer-tabs [data-tab="editor"]').addEventListener("click", openEditor);
  $("insp-edit").addEventListener("click", openEditor);
  $("ed-payload").addEventListener("input", checkJson);
  $("editor").addEventListener("submit", function (ev) { ev.preventDefault(); saveEditor(false); });
  $("ed-requeue").addEventListener("click", function () { saveEditor(true); });
}

function openEditor() {
  showTab("editor");
  fillEditor();
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
    showTab("inspector"); publish("jobs-changed");
  }).catch(function (e) { toast(e.message, true); });
}
