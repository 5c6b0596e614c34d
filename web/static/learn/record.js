// record.js: what the course pages keep in this browser, through base.js's
// store (which falls back to memory when storage is refused). Each key
// holds JSON; the lab's progress.js reads some of them for the roster.
import { store } from "../base.js";

export const KEY_READ = "oplab.read"; // [slug, ...] pages read to the end
export const KEY_QUIZ = "oplab.quiz"; // {results: {id: bool}, best: n}
export const KEY_CARDS = "oplab.cards"; // {id: State} as returned by the server (FSRS)
export const KEY_CARDS_SM2 = "oplab.cards.sm2"; // the SM-2 states, as they were before conversion
export const KEY_REVIEWS = "oplab.reviews"; // [{card, rating, at, recall, interval, due, ...}], newest last

export const load = store.load;
export const save = store.save;

// forgetAll removes everything the course pages keep.
export function forgetAll() {
  for (const k of [KEY_READ, KEY_QUIZ, KEY_CARDS, KEY_CARDS_SM2, KEY_REVIEWS]) store.remove(k);
}

export function readSlugs() { return new Set(load(KEY_READ, [])); }

export function markRead(slug) {
  const read = readSlugs();
  if (read.has(slug)) return;
  read.add(slug);
  save(KEY_READ, [...read]);
  showReadMarks();
}

// showReadMarks ticks every outline entry the learner has read.
export function showReadMarks() {
  const read = readSlugs();
  for (const li of document.querySelectorAll("li[data-slug]")) {
    const done = read.has(li.dataset.slug);
    li.classList.toggle("is-read", done);
    const mark = li.querySelector(".read-mark");
    if (mark) mark.hidden = !done;
  }
}

// isDue reports whether a card with this stored state is due at now; a
// card never reviewed is.
export function isDue(state, now) {
  if (!state || !state.due) return true;
  return Date.parse(state.due) <= now;
}

export function countDue(ids, now) {
  const states = load(KEY_CARDS, {});
  return ids.filter((id) => isDue(states[id], now)).length;
}

export function recordQuiz(id, correct) {
  const q = load(KEY_QUIZ, { results: {}, best: 0 });
  q.results[id] = correct;
  const score = Object.values(q.results).filter(Boolean).length;
  q.best = Math.max(q.best || 0, score);
  save(KEY_QUIZ, q);
}
