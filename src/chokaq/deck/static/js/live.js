// The connection to the live stream (server-sent events): it announces each snapshot, each
// idle tick and each (re)connect through the store, shows ONLINE / OFFLINE, and reopens a
// stream that went silent or was refused (reloading the page when the session is gone).

import { events, meStatus } from "./api.js";
import { $, toast } from "./dom.js";
import { publish, state } from "./store.js";

var source = null;
var lastEventAt = 0;

export function init() {
  // A stream that went silent (a proxy holding a dead connection) is reopened.
  setInterval(function () {
    if (lastEventAt && Date.now() - lastEventAt > 5000) { setOnline(false); lastEventAt = 0; connect(); }
  }, 1000);
}

function setOnline(on) {
  var pill = $("conn");
  pill.textContent = on ? "ONLINE" : "OFFLINE";
  pill.className = "pill " + (on ? "online" : "offline");
}

export function connect() {
  if (source) { source.close(); }
  source = events();
  source.addEventListener("open", function () {
    setOnline(true);
    lastEventAt = Date.now();
    // Reconcile everything with storage after every (re)connect.
    publish("connected");
  });
  source.addEventListener("snapshot", function (ev) {
    lastEventAt = Date.now();
    setOnline(true);
    state.snapshot = JSON.parse(ev.data);
    publish("snapshot", state.snapshot);
  });
  source.addEventListener("tick", function () {
    lastEventAt = Date.now(); setOnline(true);
    publish("tick");
  });
  source.addEventListener("storage-error", function (ev) { setOnline(false); toast("Storage: " + JSON.parse(ev.data), true); });
  source.addEventListener("error", function () {
    setOnline(false);
    // Closed for good means the server refused the stream (a session that expired):
    // reload, so the sign-in page (or the host's) takes over; otherwise the browser retries.
    if (source.readyState === EventSource.CLOSED) {
      meStatus().then(function (status) {
        if (status === 401) { window.location.reload(); } else { setTimeout(connect, 2000); }
      }).catch(function () { setTimeout(connect, 2000); });
    }
  });
}
