// The typed confirmation: a modal dialog asking before an action, and for destructive or
// large ones the word to type (CANCEL, PURGE...). Only an admin's page has the dialog.

import { isAdmin } from "./config.js";
import { $, setText } from "./dom.js";

export function init() {
  if (!isAdmin) { return; }
  $("confirm-input").addEventListener("input", function () {
    $("confirm-yes").disabled = this.value !== $("confirm-word").textContent;
  });
}

// Resolves true when the operator confirms (having typed `word`, when one is given), false
// when they go back or press Esc.
export function confirmAction(title, text, word) {
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
