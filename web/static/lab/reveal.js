// reveal.js: see what you caused. After an action, what it changes is on
// screen. On a wide screen the timeline keeps to the top of the screen
// beside the Databases, on a narrow one its newest rows to the bottom
// (lab.css), so its newest rows are in view wherever the page is
// scrolled. A card keeps its name, state and generations at the top of
// the screen while any of it is (its sticky top), so an action at the
// bottom of a tall card moves nothing: the answer is beside the button.
// After a create, the page brings the new card into view once it is
// drawn; after a scenario's step, its panel, with the Databases under it.
//
// For a few seconds after, the card keeps its place: as the state comes
// in, the card grows, and the browser's scroll anchoring would keep the
// button that was pressed in place instead, pushing the card's top up
// and out of view. So anchoring is off for the page (not for the
// timeline's own box) until the card has settled. Chromium goes on
// anchoring the page with overflow-anchor: none on the root element
// alone (measured: the page moved 13–21 px as a card was drawn, once
// its head out of view); with it on body too, it stops.
import { state } from "./state.js";

let revealName = ""; // a Database name, or ANY_CARD
let lastActed = ""; // the Database whose card's form was sent last
let resumeReveal = false; // revealName was set by a resume
const ANY_CARD = "*"; // not a name a Database can have
let revealIntent = false; // an action was sent, and the learner has not moved since
let anchorTimer = null;
const SETTLE_MS = 8000;

function reveal(el) {
  if (!el) return;
  holdPlace();
  inView(el);
  if (el.matches("article.db")) {
    revealed = el;
    if (pendingNote) { el.prepend(pendingNote); pendingNote = null; }
  }
}
// holdPlace turns the page's scroll anchoring off from the moment a form
// is sent: the state may come in before the answer does.
function holdPlace() {
  for (const el of [document.documentElement, document.body]) el.style.overflowAnchor = "none";
  clearTimeout(anchorTimer);
  anchorTimer = setTimeout(unreveal, SETTLE_MS);
}
function unreveal() {
  clearTimeout(anchorTimer);
  for (const el of [document.documentElement, document.body]) el.style.overflowAnchor = "";
  // A resume that changed no card within the settling time moves nothing later.
  if (resumeReveal) revealName = "";
  resumeReveal = false;
}
function inView(el) {
  const top = el.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight * 0.4) el.scrollIntoView({ block: "start" });
}
// The learner's own moves. (Dragging the scrollbar and find-in-page are
// not seen: the card may then still be brought back once, within 8 s.)
function moved() {
  revealIntent = false;
  revealName = "";
  unreveal();
}
// stayPut: a form that changes no card was sent (Pause, say): nothing an
// earlier action asked to keep in view moves the page now.
export function stayPut() { moved(); }
export function setupReveal() {
  for (const type of ["wheel", "touchstart", "pointerdown"]) window.addEventListener(type, moved, { passive: true });
  window.addEventListener("keydown", (e) => { if (/^(Page|Arrow|Home|End|Tab| )/.test(e.key)) moved(); }, { passive: true });
}

// intend notes a form sent from a card (card), by a resume (resumes), or
// a create or a scenario's step: what it changes is to be brought into view.
export function intend(card, resumes) {
  revealIntent = true;
  revealed = null;
  pendingNote = null;
  // The card last acted on (an Apply while paused, say) is what the
  // resume lets the controller act on; else the first to change.
  if (resumes) {
    revealName = lastActed && document.getElementById("db-" + lastActed) ? lastActed : ANY_CARD;
    resumeReveal = true;
  }
  if (card) lastActed = card.dataset.name || "";
  holdPlace();
}
// revealAfter follows a form's answer: created names the Database a
// create made, where the card or scenario panel the form was in. Nothing
// moves if the learner has scrolled or pointed elsewhere meanwhile.
export function revealAfter(created, where) {
  if (state.mode !== "live" || state.followNs || !revealIntent) return;
  if (created) {
    revealName = created;
    const card = document.getElementById("db-" + created);
    if (card) { revealName = ""; reveal(card); }
    return;
  }
  // A card's own form: the page stays where the learner clicked, with the
  // answer beside the form (forms.js); the card's name, state and
  // generations are at the top of the screen while any of the card is
  // (its sticky top, lab.css), and the timeline beside it or, on a narrow
  // screen, at its bottom.
  if (where && where.matches("article.db")) { holdPlace(); return; }
  reveal(where);
}
// revealNote puts the answer to an action that brings a card into view (a
// create, a resume) at that card's top too, where the page brings the
// learner's eyes: now, if it was brought already, or once it is.
let pendingNote = null;
let revealed = null; // the card brought into view since the last action
export function revealNote(note) {
  if (revealed && revealed.isConnected) revealed.prepend(note);
  else pendingNote = note;
}
// keepSeen keeps el (the answer beside a form) on screen above the
// timeline's strip at the bottom of a narrow screen while the card it is
// in settles (a state may add a line above it), unless the learner moves.
export function keepSeen(el) {
  const check = () => {
    if (!revealIntent || !el.isConnected) return;
    const strip = document.querySelector(".lab-grid > .timeline");
    const bottom = strip && getComputedStyle(strip).position === "fixed" ? strip.getBoundingClientRect().top : window.innerHeight;
    const r = el.getBoundingClientRect();
    if (r.bottom > bottom - 4) window.scrollBy(0, r.bottom - bottom + 12);
    else if (r.top < 0) window.scrollBy(0, r.top - 12);
  };
  check();
  for (const ms of [500, 1500, 3000]) setTimeout(check, ms);
}
// revealDrawn is called as a card is drawn or drawn anew: the Database
// just created, or after a resume the first one that changes.
export function revealDrawn(card) {
  if (!revealIntent || !revealName || (revealName !== ANY_CARD && card.dataset.name !== revealName)) return;
  revealName = "";
  reveal(card);
}
