// record.js: what the course pages keep in this browser, through base.js's
// store (which falls back to memory when storage is refused) under its
// KEYs; the lab's progress.js reads some of them for the roster.
import { KEY, store } from "../base.js";

// forgetAll removes everything the course pages keep.
export function forgetAll() {
  for (const k of [KEY.read, KEY.quiz, KEY.cards, KEY.reviews]) store.remove(k);
}

export function readSlugs() { return new Set(store.load(KEY.read, [])); }

export function markRead(slug) {
  const read = readSlugs();
  if (read.has(slug)) return;
  read.add(slug);
  store.save(KEY.read, [...read]);
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
  const states = store.load(KEY.cards, {});
  return ids.filter((id) => isDue(states[id], now)).length;
}

// recordQuiz keeps an answer's verdict, the best score, and the choices
// picked, so the quiz shows the learner's answers again after a reload.
export function recordQuiz(id, correct, picked) {
  const q = store.load(KEY.quiz, { results: {}, best: 0 });
  q.results[id] = correct;
  if (picked) q.picked = { ...q.picked, [id]: picked };
  const score = Object.values(q.results).filter(Boolean).length;
  q.best = Math.max(q.best || 0, score);
  store.save(KEY.quiz, q);
}

// pickedAnswers is {question: [choice, ...]}: the answers the quiz shows
// again, as picked since the learner last started afresh.
export function pickedAnswers() {
  const q = store.load(KEY.quiz, null);
  return q && q.picked && typeof q.picked === "object" ? q.picked : {};
}

// forgetPicks starts questions afresh (all of them when ids is empty): their
// answers are not shown again. The verdicts and the best score stay, for
// the home page and the roster.
export function forgetPicks(ids) {
  const q = store.load(KEY.quiz, null);
  if (!q || !q.picked) return;
  if (ids.length === 0) delete q.picked;
  else for (const id of ids) delete q.picked[id];
  store.save(KEY.quiz, q);
}
