// loop.js: the loop diagram (its lights and caption), the note while the
// namespace is paused, and the pill that says what reconciles it.
import { h } from "../base.js";
import { $, $$, dbOf, targetName } from "./dom.js";
import { state, paused, whose } from "./state.js";
import { showCountdown } from "./countdown.js";

const stageOf = {
  event: "watch", "reconcile.start": "queue", fetch: "fetch", diff: "diff", read: "diff",
  action: "act", finalizer: "act", status: "status", result: "requeue",
};
const lightQueue = [];
let lightTimer = null;
// light shows the stage of each step for a moment, in order, so a burst
// delivered in one frame still plays as a sequence; a long backlog is
// skipped rather than lagging behind the stream.
export function light(m) {
  const stage = stageOf[m.type];
  if (!stage) return;
  lightQueue.push({ stage, m });
  if (lightQueue.length > 40) lightQueue.splice(0, lightQueue.length - 1);
  if (!lightTimer) nextLight();
}
function nextLight() {
  const item = lightQueue.shift();
  if (!item) {
    lightTimer = setTimeout(() => { $$("#loop [data-stage]").forEach((e) => e.classList.remove("lit")); lightTimer = null; }, 1500);
    return;
  }
  clearTimeout(lightTimer);
  $$("#loop [data-stage]").forEach((e) => e.classList.toggle("lit", e.dataset.stage === item.stage));
  const el = $(`#loop [data-stage="${item.stage}"]`);
  if (el) el.classList.toggle("ignored", !!item.m.ignored);
  if (item.stage === "queue") $(`#loop [data-stage="watch"]`)?.classList.remove("ignored");
  const cap = $("#loop-caption");
  if (cap) cap.textContent = caption(item.m);
  lightTimer = setTimeout(nextLight, 160);
}
function caption(m) {
  const who = dbOf(m);
  switch (m.type) {
    case "event": return `${m.object.kind} ${m.object.name}: ${m.event} event` + (m.ignored ? " — ignored" : " → queued " + who);
    case "reconcile.start": return `reconcile ${who} (${m.trigger || "?"})`;
    case "fetch": return `fetch ${who}: ${m.found}`;
    case "diff": return `diff: ${(m.differences || []).join(", ") || "in sync"}`;
    case "read": return `your code read ${targetName(m)}: ${m.found === "not-found" ? "not found" : "found"}`;
    case "action": return m.outcome === "Unchanged" ? `${targetName(m)}: in sync` : `${m.action} ${targetName(m)}: ${m.outcome}`;
    case "throttled": return `your code's ${m.action} of ${targetName(m)} waited for its write rate`;
    case "finalizer": return `finalizer: ${m.phase}`;
    case "status": return m.conflict ? "status write refused: 409 Conflict" : m.skipped ? (m.yourCode ? "no status write" : "status unchanged: write skipped") : m.unchanged ? "status written, nothing changed: no event" : `status written, observedGeneration ${m.observedGeneration || 0}`;
    case "result": return m.message || m.result;
  }
  return "";
}

// The past a fresh stream replays first is drawn on the timeline, not
// played on the loop: the loop lights up only for what happens now, and
// its caption says meanwhile that the timeline is catching up.
let pastDrawn = 0;
let pastFrame = null;
let pastDone = null;
export function notePast() {
  pastDrawn++;
  // No message marks the end of the past; a pause in it does.
  clearTimeout(pastDone);
  pastDone = setTimeout(() => {
    cancelAnimationFrame(pastFrame);
    pastFrame = null;
    sayPast(`caught up: ${pastDrawn} steps of the past on the timeline; the loop lights up at the next event`);
  }, 400);
  if (pastFrame) return;
  pastFrame = requestAnimationFrame(() => {
    pastFrame = null;
    sayPast(`catching up: ${pastDrawn} steps of the past drawn on the timeline…`);
  });
}
function sayPast(text) {
  const cap = $("#loop-caption");
  // While paused the caption says why the loop stands still.
  if (cap && !lightTimer && !paused()) cap.textContent = text;
}

// ctrlUp is whether the one controller runs (the instructor may stop it).
let ctrlUp = $("#controller-status")?.dataset.up !== "false";
const ownPausedNote = $("#loop-paused") ? [...$("#loop-paused").childNodes].map((n) => n.cloneNode(true)) : null;
// showPaused follows the learner's namespace being paused: the controller
// holds its reconciles, so the loop stands still on purpose.
export function showPaused(p) {
  state.root.dataset.paused = String(p);
  const note = $("#loop-paused");
  if (note) {
    note.hidden = !p;
    // Following, the pause shown is the presenter's, and so is its note.
    const name = state.follow.name;
    if (p && state.followNs) note.replaceChildren(h("b", {}, "paused"), ` The controller holds every reconcile of ${name}'s namespace: events queue up, nothing is fetched or changed until ${name} resumes it.`);
    else if (p && ownPausedNote) note.replaceChildren(...ownPausedNote.map((n) => n.cloneNode(true)));
  }
  const cap = $("#loop-caption");
  if (cap && p) cap.textContent = `paused: reconciles of ${whose()} namespace are held`;
  drawControllerPill();
}

// The pill says what reconciles this namespace: the one controller (the
// instructor may stop it for everyone) and the learner's own pause.
export function drawControllerPill() {
  const pill = $("#controller-status");
  if (!pill) return;
  const p = paused();
  // Following, the pill is about the presenter's namespace, whose code
  // this page is not told of.
  const mine = state.yourCode && !state.followNs;
  const says = !ctrlUp ? "Controller stopped" : p ? `${state.followNs ? state.follow.name + "'s" : "Your"} namespace is paused` :
    mine ? pill.dataset.codeWords : "Controller running";
  if (pill.textContent !== says) pill.textContent = says;
  pill.classList.toggle("ok", ctrlUp && !p);
  pill.classList.toggle("warn", ctrlUp && p);
  pill.classList.toggle("bad", !ctrlUp);
  // Only the button that applies is enabled; the line after them says
  // why (the server draws the same on load: web/lab pauseWhy).
  const stop = $('button[data-controller="stop"]'), start = $('button[data-controller="start"]'), why = $("#pause-why");
  if (stop) stop.disabled = p;
  if (start) start.disabled = !p;
  // The words are the server's (web/lab pauseWhy), written only when they
  // change: a rewrite replaces the text node, and this runs on every view
  // a follower receives.
  const reason = why && (p ? why.dataset.paused : !ctrlUp && why.dataset.stopped ? why.dataset.stopped : why.dataset.running);
  if (reason && why.textContent !== reason) why.textContent = reason;
  const note = $("#your-code-note");
  if (note) note.hidden = !mine;
  showCountdown();
}
export function showController(running) {
  ctrlUp = running;
  drawControllerPill();
}
