// reveal.js: see what you caused. After an action, what it changes is on
// screen. On a wide screen the timeline keeps to the top of the screen
// beside the Databases (lab.css), so its newest rows are in view wherever
// the page is scrolled. What is left is the card: an action taken at the
// bottom of a tall card changes fields at its top. So the page brings the
// card's top into view; after a create, the new card once it is drawn;
// after a scenario's step, its panel, with the Databases under it.
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
export function setupReveal() {
  for (const type of ["wheel", "touchstart", "pointerdown"]) window.addEventListener(type, moved, { passive: true });
  window.addEventListener("keydown", (e) => { if (/^(Page|Arrow|Home|End|Tab| )/.test(e.key)) moved(); }, { passive: true });
}

// intend notes a form sent from a card (card), by a resume (resumes), or
// a create or a scenario's step: what it changes is to be brought into view.
export function intend(card, resumes) {
  revealIntent = true;
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
  reveal(where);
}
// revealDrawn is called as a card is drawn or drawn anew: the Database
// just created, or after a resume the first one that changes.
export function revealDrawn(card) {
  if (!revealIntent || !revealName || (revealName !== ANY_CARD && card.dataset.name !== revealName)) return;
  revealName = "";
  reveal(card);
}
