// Deep links: the tab, the jobs table's filters and sort, and the open job live in the URL's
// fragment (#tab=dlq&reason=timeout&sort=type&order=asc&job=ID), so a link (or a reload) opens
// the same view; the fragment never reaches the server. The page adds its cursor and number
// (pageLink). A part names a field of the filters form; a part left at its default is left
// out. Another part joins by adding itself to writeLink and readLink (and to followLink in
// main.js, if it needs to act).

import { $ } from "./dom.js";
import { localTime } from "./format.js";
import { state } from "./store.js";

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

export function writeLink() {
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

export function readLink() {
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
export function applyLinkFilters(filters) {
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
