// Numbers, durations, ids and times as the Deck writes them (strings only; no DOM).

export function fmtNum(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
// A duration in human units: 13 µs, 250 ms, 2.5 s, 3 m 4 s, 2 h 5 m, 3 d 4 h. The stored
// value is a float of seconds (0.00001299399997378714); the exact figure is for the tooltip.
export function fmtSecs(s) {
  if (s === null || s === undefined || isNaN(s)) { return "–"; }
  s = Number(s);
  if (s < 0) { return "-" + fmtSecs(-s); }
  if (s === 0) { return "0 s"; }
  if (s < 0.001) { return Math.max(1, Math.round(s * 1e6)) + " µs"; }
  if (s < 1) { return Math.min(999, Math.round(s * 1000)) + " ms"; }
  if (s < 10) { return (Math.floor(s * 10) / 10).toFixed(1) + " s"; }
  if (s < 60) { return Math.floor(s) + " s"; }
  var units = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
  for (var i = 0; i < 3; i++) {
    if (s >= units[i][0]) {
      var big = Math.floor(s / units[i][0]), small = Math.floor((s % units[i][0]) / units[i + 1][0]);
      return big + " " + units[i][1] + (small ? " " + small + " " + units[i + 1][1] : "");
    }
  }
  return Math.floor(s) + " s";
}

// A UUIDv7 starts with its creation time, the same on every row of a busy page; its last
// characters are random, so the short form shows those (the full id is on hover and copy).
export function shortId(id) { return id && id.length > 12 ? "…" + id.slice(-8) : (id || ""); }
export function ago(iso) {
  if (!iso) { return "–"; }
  var s = (Date.now() - Date.parse(iso)) / 1000;
  if (s < 0) { return "in " + fmtSecs(-s); }
  if (s < 60) { return Math.floor(s) + "s ago"; }
  if (s < 3600) { return Math.floor(s / 60) + "m ago"; }
  if (s < 86400) { return Math.floor(s / 3600) + "h ago"; }
  return Math.floor(s / 86400) + "d ago";
}
function pad2(n) { return String(n).padStart(2, "0"); }

// Times are shown in the browser's time zone; UTC is the tooltip (when()).
export function localTime(iso) {
  if (!iso) { return "–"; }
  var d = new Date(iso);
  if (isNaN(d.getTime())) { return String(iso); }
  return d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " +
    pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
}
export function utcTime(iso) {
  var d = new Date(iso);
  return isNaN(d.getTime()) ? String(iso) : d.toISOString().replace("T", " ").replace("Z", " UTC");
}
export function when(iso) { return iso ? localTime(iso) + " local · " + utcTime(iso) : "–"; }

// An inspector field's text and tooltip: times local (UTC on hover), durations in units.
export function fieldText(key, value) {
  if (key === "duration_seconds" || key === "timeout_seconds") {
    return { text: fmtSecs(value), title: String(value) + " s" };
  }
  if (/_at$/.test(key) && typeof value === "string") { return { text: localTime(value), title: utcTime(value) }; }
  return { text: Array.isArray(value) ? value.join(", ") : value, title: "" };
}
export function pretty(text) {
  if (text === null || text === undefined) { return ""; }
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}

// "2026-12-02T07:00:00+01:00" -> "2026-12-02 07:00:00 +01:00"; "...Z" -> "... UTC".
export function isoText(iso) {
  if (!iso) { return "–"; }
  return iso.replace("T", " ").replace(/\.\d+/, "").replace(/Z$/, " UTC").replace(/([+-]\d\d:\d\d)$/, " $1");
}
