// player.js: playback, that is pause, step and slow motion. Every message
// goes through the player's queue. Live at 1× it is shown the moment it
// arrives; paused, it waits (the counter says how many); in slow motion
// or in a replay each step is given time on screen. A follower's player
// goes where the presenter's is (state.follow.view).
import { h } from "../base.js";
import { $ } from "./dom.js";
import { state } from "./state.js";
import { handle } from "./dispatch.js";
import { onDatabase } from "./cards.js";

// VIEW_CHANGED is the event the player sends to the document when the
// learner pauses, steps or changes the speed: follow.js tells the class a
// presenter's view. An event, since follow.js imports this module to steer
// the player while the lab follows.
export const VIEW_CHANGED = "oplab:view-changed";
function viewChanged() { document.dispatchEvent(new CustomEvent(VIEW_CHANGED)); }

let queue = [];
let paused = false;
let speed = 1;
let timer = null;
// options are the page's own: onShown(m) after each message is shown, and
// onDone() when every message queued has been (the replay's counter and
// its Replay button). Set once, by setupPlayer.
let options = {};
const pauseBtn = $("#play-pause");
const stepBtn = $("#play-step");
const speedSel = $("#play-speed");
const waitingEl = $("#play-waiting");
const stepWhy = $("#play-step-why");
const MAX_WAITING = 20000;
const takesTime = (m) => m.type !== "state" && m.type !== "reset" && m.type !== "queue";

export function push(msgs) {
  for (const m of msgs) if (aheadOfPresenter(m)) drawAhead(m);
  queue.push(...msgs);
  if (queue.length > MAX_WAITING) {
    // Paused for very long under a storm: catch up rather than hold it all.
    while (queue.length) handle(queue.shift());
  }
  pump();
}
// A learner who starts following while the presenter is paused gets each
// object's latest state only (the stream keeps no older card), which may
// be past the presenter's step. Rather than no card at all, the card is
// drawn as it is now, and says so, until the presenter's timeline
// reaches a state of it.
function aheadOfPresenter(m) {
  return state.follow.view && held(m) && m.type === "state" && m.state && m.state.html && m.object.kind === "Database"
    && !document.getElementById("db-" + m.object.name);
}
function drawAhead(m) {
  onDatabase(m);
  const st = $(`#db-${CSS.escape(m.object.name)} .db-state`);
  if (st) st.prepend(h("p", { class: "ahead small" }, "Drawn as it is now: the presenter's timeline has not reached this state yet."));
}
function paced() { return state.mode === "replay" || speed < 1; }
function gapAfter(m) {
  const next = queue.find(takesTime);
  let gap = next ? new Date(next.time) - new Date(m.time) : 0;
  if (isNaN(gap)) gap = 200;
  if (state.mode === "replay") return Math.max(30, Math.min(gap, 1500)) / speed;
  return Math.max(200, Math.min(gap, 2000)) / speed;
}
// held: the message waits. A follower shows what the presenter shows: up
// to the presenter's step while they are paused, everything otherwise.
function held(m) {
  const v = state.follow.view;
  if (v) return v.paused && (m.seq || 0) > v.seq;
  return paused;
}
export function pump() {
  while (!timer && queue.length && !held(queue[0])) {
    const m = queue.shift();
    show(m);
    if (paced() && takesTime(m)) timer = setTimeout(() => { timer = null; pump(); }, gapAfter(m));
  }
  showWaiting();
  if (!queue.length && !timer && options.onDone) options.onDone();
}
function show(m) {
  if (m.seq) state.shownSeq = m.seq;
  handle(m);
  if (state.mode === "replay" && m.time) state.replayNow = new Date(m.time).getTime();
  if (options.onShown) options.onShown(m);
}
// stepOnce shows the next step (and the states before it), and pauses.
function stepOnce() {
  setPaused(true);
  stop();
  while (queue.length) {
    const m = queue.shift();
    show(m);
    if (takesTime(m)) break;
  }
  showWaiting();
  viewChanged();
}
function stop() {
  clearTimeout(timer);
  timer = null;
}
export function setPaused(p) {
  paused = p;
  drawPause(p);
  if (!p) pump();
  showWaiting();
  viewChanged();
}
function drawPause(p) {
  if (!pauseBtn) return;
  pauseBtn.textContent = p ? "Unfreeze timeline" : "Freeze timeline";
  pauseBtn.setAttribute("aria-pressed", String(p));
}
export function showWaiting() {
  const n = queue.filter(takesTime).length;
  showStep(n);
  if (!waitingEl) return;
  waitingEl.hidden = n === 0;
  waitingEl.textContent = `${n} new step${n === 1 ? "" : "s"} waiting`;
}
// showStep enables Step only when there is a step to show, n of them
// waiting while the timeline is frozen or slowed, and says why not beside
// it.
function showStep(n) {
  if (!stepBtn) return;
  let why = "";
  if (!paused && !paced()) why = "Nothing to step: the timeline is live, each step shows as it comes. Freeze it to step through new ones.";
  else if (n === 0) why = state.mode === "replay" ? "Nothing to step: every step is shown." : "Nothing to step: no new step is waiting.";
  const off = why !== "";
  if (off && document.activeElement === stepBtn) pauseBtn?.focus(); // a disabled button drops the focus
  stepBtn.disabled = off;
  if (stepWhy && stepWhy.textContent !== why) stepWhy.textContent = why;
}

// view is the player as a presenter reports it.
export const view = () => ({ paused, speed });
// load queues msgs to play from the start (a replay, again).
export function load(msgs) {
  queue = msgs.slice();
}
// clear drops what waits, before another namespace's stream.
export function clear() {
  queue = [];
  stop();
}
// showAll shows at once every message that waits (the replay's Show all).
export function showAll() {
  stop();
  while (queue.length) show(queue.shift());
  showWaiting();
  if (options.onDone) options.onDone();
}
// idle: nothing waits, nothing is being given its time.
export const idle = () => !queue.length && !timer;
// followPlayer puts the player where the presenter's is (v), or back to
// the learner's own speed, playing (null).
export function followPlayer(v) {
  if (!v) {
    speed = Number(speedSel?.value) || 1;
    setPaused(false);
    return;
  }
  speed = v.speed || 1;
  if (speedSel) speedSel.value = String(speed);
  drawPause(!!v.paused);
}

export function setupPlayer(opts = {}) {
  options = opts;
  const bar = $(".player");
  if (bar) bar.hidden = false;
  pauseBtn?.addEventListener("click", () => setPaused(!paused));
  stepBtn?.addEventListener("click", stepOnce);
  speedSel?.addEventListener("change", () => {
    speed = Number(speedSel.value) || 1;
    showWaiting();
    if (!paced() && !paused) { stop(); pump(); }
    viewChanged();
  });
  // Single-key shortcuts work only while focus is in the timeline
  // (WCAG 2.1.4), so they never fire while the learner types elsewhere
  // or a screen reader uses letter keys to move around the page.
  $(".timeline")?.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.target.closest("input, select, textarea, [contenteditable]")) return;
    // Following, the presenter steers the timeline: the keys wait, as
    // the player's buttons (hidden then) do.
    if (state.followNs) return;
    const k = e.key.toLowerCase();
    if (k === "p") { setPaused(!paused); e.preventDefault(); }
    if (k === "n") { stepOnce(); e.preventDefault(); }
  });
}
