// main.js: makes /lab live. The page works without script (forms POST and
// redirect); with it, forms are sent with fetch, and the page follows the
// /ws stream. The server renders every object view (a Database's card, a
// kept snapshot) and sends it in the state message's "html"; the lab only
// puts those in. What it draws itself is what must be live: the timeline
// rows, the loop diagram's lights, the playback controls and the resync
// countdown. On /lab/replay it plays an exported timeline through the same
// modules.
//
// The modules, each owning its own state (what several read is in
// state.js's one object):
//   stream.js     the websocket, its reconnects and what it missed
//   player.js     pause, step, slow motion: every message goes through it
//   dispatch.js   a shown message to the module that draws it
//   timeline.js   the rows (rowtext.js: what a row says; newrows.js: the
//                 newest kept in view)
//   loop.js       the loop diagram, the pause note, the controller's pill
//   controller.js the controller's messages, a demo's narration and keys
//   countdown.js  the selected Database's next resync
//   cards.js      the server's object views, swapped in
//   forms.js      the forms sent with fetch (reveal.js: what they changed)
//   follow.js     the classroom: following the presenter, or being followed
//   replay.js     /lab/replay
//   layout.js     the focused layout and projector mode
//   travel.js     time travel: the objects as they were at a row
//   graph.js      the work queue as a picture, beside the timeline
//   terminal.js   kubectl in the page
import { $, $$ } from "./dom.js";
import { state } from "./state.js";
import { refilter } from "./timeline.js";
import { setupJump } from "./newrows.js";
import { showCountdown } from "./countdown.js";
import { markSelected } from "./cards.js";
import { enhanceAll, livePreview } from "./forms.js";
import { setupReveal } from "./reveal.js";
import { setupDemoKeys } from "./controller.js";
import { setupPlayer } from "./player.js";
import { placeNote, setupClassroom, tellView } from "./follow.js";
import { connect } from "./stream.js";
import { setupReplay } from "./replay.js";
import { setupLayout, setupProjector } from "./layout.js";
import { setupTravel } from "./travel.js";
import { setupGraph } from "./graph.js";
import { setupTerminal } from "./terminal.js";

function start() {
  const root = state.root;
  if (!root || state.mode === "upload") return;
  placeNote();
  setupJump();
  setupTravel();
  setupGraph();
  setupReveal();
  setupDemoKeys();
  $("#filter")?.addEventListener("change", () => {
    refilter();
    markSelected();
    showCountdown();
    tellView();
  });
  if (state.mode === "live") setInterval(showCountdown, 1000);
  if (state.mode === "replay") {
    setupLayout();
    setupProjector();
    setupReplay();
    return;
  }
  setupPlayer();
  setupLayout();
  setupProjector();
  // Looking over a learner's shoulder, no form of the page is sent: the
  // forms are hidden (classroom.css), and one that shows anyway is stopped
  // here before any other handler sees it.
  if (state.look) {
    root.addEventListener("submit", (e) => { e.preventDefault(); e.stopImmediatePropagation(); }, true);
    for (const f of $$("form", root)) for (const el of f.elements) el.disabled = true;
  }
  enhanceAll(document);
  markSelected();
  livePreview();
  setupTerminal();
  setupClassroom();
  connect();
  // Watching is using: keep the session (and its namespace) alive while the
  // page is open and visible.
  if (!state.look) setInterval(() => {
    if (document.visibilityState === "visible") fetch("/lab/ping", { credentials: "same-origin" }).catch(() => {});
  }, 5 * 60 * 1000);
}

start();
