// deck.js: the flashcards as a deck. The server's FSRS-6 scheduler decides
// everything about a card's next review (POST /flashcards/review), predicts
// each card's recall (/flashcards/states) and what each rating would do
// (/flashcards/preview); the deck keeps the states it returns in this
// browser and shows the due cards one at a time.
import { KEY, store } from "../base.js";
import { isDue } from "./record.js";
import { postJSON } from "./post.js";
import { pct, when, relative } from "./format.js";

const RATING_NAMES = { 1: "Again", 2: "Hard", 3: "Good", 4: "Easy" };

// aimWords compares a card's predicted recall at its next review with the
// 90% the scheduler aims at, truthfully: Easy stretches the interval past
// that point, Hard stops short of it, and whole days move it a little.
function aimWords(recall, rating) {
  const off = Math.round(recall * 100) - 90;
  if (Math.abs(off) <= 2) return "about the 90% the scheduler aims at (intervals are whole days).";
  if (off < 0) return rating === 4 ? "below the 90% the scheduler aims at: Easy stretches the interval past it."
    : "below the 90% the scheduler aims at: the interval was rounded to whole days or capped.";
  return rating === 2 ? "above the 90% the scheduler aims at: Hard brings the review sooner."
    : "above the 90% the scheduler aims at: intervals are whole days, one at least.";
}
const MAX_LOG = 500; // reviews kept in the log, newest last
const PREVIEW_FRESH_MS = 10 * 60 * 1000;

// deck is the one state of the page's deck. The cards and the elements are
// set once by initDeck; the rest changes as the learner reviews.
const deck = {
  cards: [], byID: new Map(), card: null, ui: {},
  current: null, // the card on screen, or null when none is due
  flipped: false,
  busy: false, // a review is on its way to the server
  timer: 0, // wakes the deck when the next card falls due
  // preview is what each rating would do to the card on screen, as the
  // server's scheduler worked it out when the answer was shown: {card,
  // asked, now, options}. The review is sent with the same clock, so the
  // interval a button shows is the interval it gives.
  preview: null,
  // recall is each reviewed card's predicted recall, as the server last
  // worked it out; the forgetting curve is not computed here.
  recall: {},
  spaceFlipped: false, // the last keydown was a Space that flipped the card
};

export function initDeck() {
  const root = document.getElementById("deck");
  const data = document.getElementById("cards-data");
  if (!root || !data) return;
  deck.cards = JSON.parse(data.textContent);
  deck.byID = new Map(deck.cards.map((c) => [c.id, c]));
  const el = (id) => document.getElementById(id);
  deck.card = el("card");
  deck.ui = {
    due: el("due-count"), wrap: el("deck-card"), front: el("card-front"), back: el("card-back"),
    backFace: deck.card.querySelector(".face.back"), ratings: el("ratings"), lesson: el("card-lesson"),
    done: el("deck-done"), nextDue: el("next-due"), error: el("deck-error"), recall: el("card-recall"),
    last: el("last-review"), log: el("review-log"), logCount: el("review-count"), logList: el("review-list"),
  };
  deck.card.addEventListener("click", () => { if (deck.current) setFlipped(!deck.flipped); });
  for (const b of deck.ui.ratings.querySelectorAll("button[data-rating]")) {
    b.addEventListener("click", () => rate(Number(b.dataset.rating)));
  }
  document.addEventListener("keydown", onKey);
  // Its keypress scrolls nothing either. A browser skips the keypress of a
  // keydown prevented, but input sent through the DevTools protocol (the
  // tests') delivers it, and the page then scrolled a screen down,
  // smoothly, under the next click (TestBrowserFlashcardsFlipRateAndRemember).
  document.addEventListener("keypress", (e) => { if (e.key === " " && deck.spaceFlipped) e.preventDefault(); });
  refresh().then(() => {
    showLog();
    root.hidden = false;
    show();
  });
}

// onKey: Space flips the card, 1–4 rate a flipped one.
function onKey(e) {
  deck.spaceFlipped = false;
  if (e.altKey || e.ctrlKey || e.metaKey || e.isComposing) return;
  const t = e.target;
  if (t instanceof HTMLElement && t.closest("input, textarea, select, [contenteditable]")) return;
  if (e.key === " ") {
    // On the card or another control, Space already clicks it.
    if (t instanceof HTMLElement && t.closest("button, a, summary")) return;
    if (!deck.current) return;
    e.preventDefault();
    deck.spaceFlipped = true;
    setFlipped(!deck.flipped);
    return;
  }
  if (["1", "2", "3", "4"].includes(e.key) && deck.flipped) {
    e.preventDefault();
    rate(Number(e.key));
  }
}

function fail(what, err) {
  deck.ui.error.textContent = `${what}: ${err.message}`;
  deck.ui.error.hidden = false;
}

// refresh asks the server to read the stored deck: it predicts each card's
// recall now.
async function refresh() {
  const states = store.load(KEY.cards, {});
  if (Object.keys(states).length === 0) { deck.recall = {}; return; }
  let reply;
  try {
    reply = await postJSON("/flashcards/states", { states, now: new Date().toISOString() });
  } catch (err) {
    fail("Could not read your saved progress", err);
    return;
  }
  deck.recall = {};
  for (const [id, st] of Object.entries(reply.cards || {})) {
    if (st.recall !== undefined) deck.recall[id] = st.recall;
  }
}

// dueCards lists the cards due at now. Reviews that fell due come first,
// longest overdue first, before new cards (in deck order): their
// predicted recall is falling.
function dueCards(now) {
  const states = store.load(KEY.cards, {});
  const dueAt = (c) => (states[c.id] && states[c.id].due ? Date.parse(states[c.id].due) : Infinity);
  return deck.cards.filter((c) => isDue(states[c.id], now)).sort((a, b) => (dueAt(a) === dueAt(b) ? 0 : dueAt(a) < dueAt(b) ? -1 : 1));
}

function setFlipped(on) {
  const ui = deck.ui;
  deck.flipped = on;
  ui.backFace.hidden = !on;
  ui.ratings.hidden = !on;
  ui.lesson.hidden = !on;
  deck.card.classList.toggle("flipped", on);
  deck.card.setAttribute("aria-expanded", String(on));
  if (on && deck.current) loadPreview(deck.current);
}

// loadPreview asks the server what each rating would do to c now and
// writes it on the buttons ("Good · 2 days"). Until it answers, or if it
// cannot, the buttons carry their names only.
async function loadPreview(c) {
  const p = deck.preview;
  if (p && p.card === c.id && Date.now() - p.asked < PREVIEW_FRESH_MS) return;
  showIntervals(null);
  const asked = Date.now();
  let reply;
  try {
    reply = await postJSON("/flashcards/preview", { state: store.load(KEY.cards, {})[c.id] || {}, now: new Date(asked).toISOString() });
  } catch (err) {
    fail("Could not work out the intervals", err);
    return;
  }
  if (!deck.current || deck.current.id !== c.id) return; // the deck moved on meanwhile
  deck.preview = { card: c.id, asked, now: reply.now, options: reply.options };
  showIntervals(reply.options);
}

function showIntervals(options) {
  for (const b of deck.ui.ratings.querySelectorAll("button[data-rating]")) {
    const o = options && options.find((x) => String(x.rating) === b.dataset.rating);
    b.querySelector(".interval").textContent = o ? ` · ${o.interval}` : "";
  }
}

// recallOf is a reviewed card's predicted recall and due time in words,
// or null for a new card. A card just rated Again (no interval: it comes
// back within the sitting) has no recall worth quoting: the model's is
// 100% the moment after any review, which would read oddly beside Again.
function recallOf(id, now) {
  const st = store.load(KEY.cards, {})[id];
  if (!st || !(id in deck.recall)) return null;
  const due = Date.parse(st.due);
  const when = due <= now ? "due now" : `due ${relative(due - now)}`;
  if (!st.interval) return { relearning: true, when };
  return { pct: pct(deck.recall[id]), when };
}

// show draws the deck: the due count, each listed card's recall, and the
// first due card, face down; or, with none due, when the next one is.
function show() {
  const ui = deck.ui;
  clearTimeout(deck.timer);
  const now = Date.now();
  const due = dueCards(now);
  ui.due.textContent = String(due.length);
  const dueIDs = new Set(due.map((c) => c.id));
  for (const c of deck.cards) {
    const li = document.getElementById("card-" + c.id);
    if (!li) continue;
    li.classList.toggle("is-due", dueIDs.has(c.id));
    const p = li.querySelector("[data-recall-for]");
    const r = recallOf(c.id, now);
    p.hidden = !r;
    if (r) p.textContent = r.relearning ? `Being relearned · ${r.when}` : `Recall now ${r.pct} · ${r.when}`;
  }
  const current = due[0] || null;
  deck.current = current;
  if (!current || !deck.preview || deck.preview.card !== current.id) { deck.preview = null; showIntervals(null); }
  ui.wrap.hidden = !current;
  ui.done.hidden = !!current;
  if (!current) { scheduleNext(now); return; }
  ui.front.textContent = current.front;
  ui.back.textContent = current.back;
  const r = recallOf(current.id, now);
  ui.recall.textContent = !r ? "New card: not reviewed yet."
    : r.relearning ? "Being relearned: you rated it Again in this sitting." : `Predicted recall now: ${r.pct} (${r.when}).`;
  const a = ui.lesson.querySelector("a");
  a.href = current.lessonURL;
  a.textContent = current.lessonTitle;
  setFlipped(false);
}

// scheduleNext says when the next card falls due and wakes the deck then.
function scheduleNext(now) {
  const states = store.load(KEY.cards, {});
  const next = Math.min(...deck.cards.map((c) => (states[c.id] && states[c.id].due ? Date.parse(states[c.id].due) : now)));
  deck.ui.nextDue.textContent = relative(next - now);
  const wait = next - now;
  if (wait < 24 * 3600 * 1000) deck.timer = setTimeout(() => refresh().then(show), Math.max(1000, wait + 250));
}

function showLog() {
  const ui = deck.ui;
  const log = store.load(KEY.reviews, []);
  ui.log.hidden = log.length === 0;
  ui.logCount.textContent = String(log.length);
  ui.logList.replaceChildren(...log.slice(-20).reverse().map((e) => {
    const li = document.createElement("li");
    const c = deck.byID.get(e.card);
    const before = e.recall === undefined ? "new card" : `recall was ${pct(e.recall)}`;
    li.textContent = `${when(Date.parse(e.at))} · ${c ? c.front : e.card} · ${RATING_NAMES[e.rating]} · ${before} · next ${e.interval ? "in " + e.interval + (e.interval === 1 ? " day" : " days") : "in a minute"}`;
    return li;
  }));
}

// rate sends the review of the flipped card and stores the state the
// scheduler returns, with a line in the review log.
async function rate(rating) {
  if (!deck.current || !deck.flipped || deck.busy) return;
  deck.busy = true;
  const states = store.load(KEY.cards, {});
  const reviewed = deck.current;
  // The clock of the preview the buttons show, while it is fresh, so that
  // the card gets exactly the interval its button said.
  const p = deck.preview;
  const fresh = p && p.card === reviewed.id && Date.now() - p.asked < PREVIEW_FRESH_MS;
  const at = fresh ? new Date(p.now) : new Date();
  let reply;
  try {
    reply = await postJSON("/flashcards/review", { state: states[reviewed.id] || {}, rating, now: at.toISOString(), card: reviewed.id });
  } catch (err) {
    fail("Could not schedule the card", err);
    return;
  } finally {
    deck.busy = false;
  }
  const ui = deck.ui;
  ui.error.hidden = true;
  deck.preview = null; // made for the state this review replaces
  states[reviewed.id] = reply.state;
  store.save(KEY.cards, states);
  const log = store.load(KEY.reviews, []);
  log.push({
    card: reviewed.id, rating, at: at.toISOString(), recall: reply.recall,
    interval: reply.state.interval, due: reply.state.due,
    stability: reply.state.stability, difficulty: reply.state.difficulty,
  });
  store.save(KEY.reviews, log.slice(-MAX_LOG));
  const due = Date.parse(reply.state.due);
  // Again is not scheduled by the forgetting curve: the card comes back
  // within the sitting, so no recall is predicted for it.
  ui.last.textContent = rating === 1
    ? `“${reviewed.front}”: Again. It comes back ${relative(due - Date.now())}, in this sitting, to be relearned.`
    : `“${reviewed.front}”: ${RATING_NAMES[rating]}. Next review ${relative(due - Date.now())}` +
      ` (${when(due)}), when its predicted recall will have fallen to ${pct(reply.recallAtDue)}, ` + aimWords(reply.recallAtDue, rating);
  ui.last.hidden = false;
  await refresh();
  showLog();
  show();
  deck.card.focus();
}
