// The one client of the Deck's JSON API and its event stream. Every URL is built on the mount
// prefix; a POST carries the CSRF token; an answer that is not 2xx rejects with the server's
// error message ({"error": ...}) or its status.

import { base, csrf } from "./config.js";

export function api(path, body) {
  var options = { credentials: "same-origin", headers: { "Accept": "application/json" } };
  if (body !== undefined) {
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.headers["X-CSRF-Token"] = csrf;
    options.body = JSON.stringify(body);
  }
  return fetch(base + path, options).then(function (r) {
    return r.json().catch(function () { return {}; }).then(function (data) {
      if (!r.ok) { throw new Error(data.error || ("HTTP " + r.status)); }
      return data;
    });
  });
}

// The live stream of snapshots and ticks (server-sent events).
export function events() { return new EventSource(base + "/api/events"); }

// The status of GET /api/me, whatever it is: 401 once the session is gone.
export function meStatus() {
  return fetch(base + "/api/me", { credentials: "same-origin" }).then(function (r) { return r.status; });
}
