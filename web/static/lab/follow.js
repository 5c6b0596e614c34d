// follow.js: the classroom. A learner's lab follows the presenter's (its
// stream, its player, its selected Database) until the learner acts in
// their own; a presenter's lab reports where its player is. Looking at a
// learner's lab, the instructor follows nobody.
import { classroom as everyPage } from "../classroom.js";
import { h } from "../base.js";
import { $, $$, displayed } from "./dom.js";
import { state } from "./state.js";
import { showPaused } from "./loop.js";
import { reset, refilter, knowObject, forgetObjects } from "./timeline.js";
import { forgetRuns, showCountdown } from "./countdown.js";
import { clearCards, markSelected } from "./cards.js";
import { clearQueue } from "./graph.js";
import { VIEW_CHANGED, clear, showWaiting, followPlayer, pump, view } from "./player.js";
import { FOLLOW_ENDED, reopen } from "./stream.js";

const classroom = state.mode === "live" && !state.look ? everyPage : null;
const follow = state.follow;
const filterEl = $("#filter");
const objectsH = $("#objects-h");
const ownHeading = objectsH ? objectsH.textContent : "";
const backLine = $("#follow-back");
// playerNote says, in the player's place, who steers the timeline.
const playerNote = h("span", { id: "follow-player", class: "follow-player small", hidden: "" });

// clearView empties what the stream drew, before another namespace's
// stream draws its own.
function clearView(message) {
  clear();
  reset({ message });
  forgetRuns();
  forgetObjects();
  clearCards();
  clearQueue();
  showWaiting();
}
// switchStream shows the presenter's lab alone (ns), or the learner's own
// (""). The learner's own controls are not shown inside the presenter's
// lab (lab.css), and the filter only says what the presenter selected;
// one line in the create form's place leads back.
export function switchStream(ns) {
  if (ns === state.followNs) return;
  state.rendered = 0;
  const focused = document.activeElement;
  if (ns && !state.followNs) follow.ownPaused = state.root.dataset.paused === "true";
  state.followNs = ns;
  clearView(ns ? `following ${follow.name}'s lab` : "back in your own namespace");
  // lab.css and travel.css read it: the own controls are hidden.
  state.root.dataset.following = ns ? "presenter" : "";
  if (objectsH) objectsH.textContent = ns ? `${follow.name}'s Databases (read-only)` : ownHeading;
  if (backLine) backLine.hidden = !ns;
  // A flash speaks of the lab it came from ("Created Database x: watch
  // its first reconcile"): it goes with that lab.
  $("#flash")?.replaceChildren();
  if (filterEl) filterEl.disabled = !!ns;
  playerNote.hidden = !ns;
  playerNote.textContent = ns ? `${follow.name} steers this timeline.` : "";
  // The stream's replay says whether the presenter's namespace is paused.
  showPaused(ns ? false : follow.ownPaused);
  if (!ns) {
    follow.view = null;
    followPlayer(null);
  }
  // Focus never falls to the page's start with what held it: it moves to
  // the way back while following, and to the own create form after.
  if (focused && focused !== document.body && state.root.contains(focused) && !displayed(focused)) {
    (ns ? $("#follow-back-button") : $("details.create > summary"))?.focus();
  }
  reopen();
}
// followView puts the player, the filter and the selected card where the
// presenter's are.
function followView(v) {
  follow.view = v ? { paused: !!v.paused, seq: v.seq || 0 } : null;
  if (!v) return;
  followPlayer(v);
  const speed = v.speed || 1;
  playerNote.textContent = `${follow.name} steers this timeline: ` +
    (v.paused ? "paused." : speed === 1 ? "live." : `${speed}× slow motion.`);
  if (filterEl && filterEl.value !== (v.selected || "")) {
    knowObject(v.selected);
    filterEl.value = v.selected || "";
    refilter();
    markSelected();
    showCountdown();
  }
  pump();
}

// here is the page as followers should see it: the lab and its scenario.
function here() {
  const sc = new URL(location.href).searchParams.get("scenario");
  return "/lab" + (sc ? "?scenario=" + encodeURIComponent(sc) : "");
}
let tellTimer = null;
// tellView reports the presenter's view; the server takes it from the
// presenter's session only and passes it on at most ten times a second.
export function tellView() {
  if (!classroom || !classroom.isPresenter()) return;
  clearTimeout(tellTimer);
  tellTimer = setTimeout(() => {
    const { paused, speed } = view();
    fetch("/lab/present", {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ selected: filterEl ? filterEl.value : "", path: here(), paused, seq: state.shownSeq, speed }),
    }).catch(() => {});
  }, 30);
}

// The player's view changes (player.js) and a presentation that ended
// before its stream opened (stream.js) are told by events.
document.addEventListener(VIEW_CHANGED, () => tellView());
document.addEventListener(FOLLOW_ENDED, () => switchStream(""));

let presentedSince = null;
function onClassroom(s) {
  const presenter = classroom.isPresenter();
  if (presenter && presentedSince !== s.since) { presentedSince = s.since; tellView(); }
  if (!presenter) presentedSince = null;
  if (classroom.following()) {
    follow.name = s.name || "the presenter";
    switchStream(s.namespace);
    followView(s.view);
  } else {
    switchStream("");
  }
}
// placeNote puts the note in the player, hidden until the lab follows.
export function placeNote() {
  $(".player")?.prepend(playerNote);
}
export function setupClassroom() {
  if (!classroom) return;
  classroom.onChange(onClassroom);
  // Acting in one's own lab breaks away from the presenter, as in VS
  // Code's Live Share. Following, the own forms and player are hidden
  // (lab.css); this still holds for any own form shown meanwhile.
  state.root.addEventListener("click", (e) => {
    if (state.followNs && e.target.closest("form.act, .player button, #filter, details.create > summary")) classroom.breakAway();
  }, true);
  // The way back in the create form's place: break away, and the form
  // is there again, with the focus on it.
  $("#follow-back-button")?.addEventListener("click", () => classroom.breakAway());
}
