// The Deck's page script: the one module index.html loads. It starts every panel's module
// (each wires its own listeners and subscribes to the store), follows the deep link in the
// URL's fragment, and opens the live stream.
//
// The panels are started in the order they drew each snapshot when the script was one file
// (the cards, the queues, the limits, why the wait, ..., the jobs table, the drawer, the
// schedules): the store calls subscribers in the order they subscribed.
//
// User data reaches the page only as text nodes (dom.js: userText and setText), never through
// innerHTML; there are no inline scripts or handlers (the Content-Security-Policy allows
// scripts from the Deck's own origin only).

import * as batches from "./batches.js";
import * as bulk from "./bulk.js";
import * as charts from "./charts.js";
import * as circuits from "./circuits.js";
import { isAdmin } from "./config.js";
import * as confirm from "./confirm.js";
import * as drawer from "./drawer.js";
import * as editor from "./editor.js";
import * as errors from "./errors.js";
import * as inspector from "./inspector.js";
import * as jobs from "./jobs.js";
import * as limits from "./limits.js";
import { applyLinkFilters, readLink, writeLink } from "./link.js";
import * as live from "./live.js";
import * as overview from "./overview.js";
import * as queues from "./queues.js";
import * as schedules from "./schedules.js";
import { state } from "./store.js";
import * as themePicker from "./theme-picker.js";
import * as waits from "./waits.js";
import * as workers from "./workers.js";
import * as workflow from "./workflow.js";

// Puts the page in the state the link names: the tab, the filters, the page and the open job.
function followLink() {
  var link = readLink();
  var reload = applyLinkFilters(link.filters);
  // One list request for the whole link (a new tab, filters and a page together), not one
  // per part: the table's request is the page's costliest at depth.
  if (link.tab !== state.source) { jobs.setSource(link.tab, false); reload = true; }
  if (JSON.stringify(link.cursor) !== JSON.stringify(state.cursor)) {
    state.cursor = link.cursor; state.page = link.cursor ? link.page : 1; reload = true;
  } else if (reload) { jobs.firstPage(); }
  if (reload) { bulk.invalidatePreview(); jobs.loadJobs(); }
  if (link.job && link.job !== state.job) { inspector.openJob(link.job); }
  if (!link.job && state.job) { drawer.closeDrawer(); }
  writeLink();  // a bad part of the link is dropped
}

if (!isAdmin) {
  document.querySelectorAll(".admin-only").forEach(function (n) { n.remove(); });
}
[confirm, overview, queues, limits, waits, errors, batches, circuits, workers, charts, jobs, bulk,
  inspector, drawer, workflow, editor, schedules, themePicker, live].forEach(function (panel) { panel.init(); });

window.addEventListener("hashchange", followLink);  // a link followed within the page
state.source = null;  // so that the link's tab, whichever it is, is set up
followLink();
live.connect();
