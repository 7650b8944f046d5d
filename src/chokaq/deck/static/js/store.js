// The state more than one panel reads, and the notices panels send each other. A panel keeps
// what only it reads to itself (the preview, the open schedule, the live refresh's pause...);
// what is here is what the deep link, the jobs table, the bulk bar and the drawer share.
//
// Panels tell each other of changes through topics rather than by importing each other, so
// the modules import in one direction only (main.js at the top). Subscribers run at once, in
// the order they subscribed: main.js starts the panels in the order they drew the snapshot
// before the script was split, so they still do.
//
//   snapshot      the live stream's snapshot (state.snapshot is set first)
//   tick          a second passed without a snapshot (idle storage)
//   connected     the stream (re)opened: re-read everything from storage
//   jobs-changed  an action moved jobs ({purged: ids} for a purge): re-read what shows them
//   filters       the jobs table's tab or filters changed (a bulk preview no longer applies)
//   queues        the snapshot's queues were patched (a queue's rate set): redraw them

export var state = {
  source: "active",      // the jobs table's tab: active, archive or dlq (null before the link is read)
  page: 1,               // the page number shown (counted here: a page reached by cursor has none)
  cursor: null,          // {kind: "after" | "before", token} or {kind: "last"}; null: the first page
  selected: new Set(),   // the ids the operator ticked (an action applies to exactly these)
  job: null,             // the id open in the inspector
  jobData: null,         // that job as last read
  workflow: null,        // the id of the workflow open in the drawer
  snapshot: null         // the latest live snapshot
};

var TOPICS = ["snapshot", "tick", "connected", "jobs-changed", "filters", "queues"];
var listeners = new Map(TOPICS.map(function (topic) { return [topic, []]; }));

function listenersOf(topic) {
  var list = listeners.get(topic);
  if (!list) { throw new Error("store: no topic " + topic); }
  return list;
}

export function subscribe(topic, listener) { listenersOf(topic).push(listener); }

export function publish(topic, data) {
  listenersOf(topic).forEach(function (listener) { listener(data); });
}
