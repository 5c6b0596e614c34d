// tasks.js: a challenge's progress as this browser keeps it, and its tasks'
// states as the server checks them. The challenge page and the code page's
// list of exercises both show them, so both read and write the one record
// under KEY.challenges: {ID: {tasks: {TASKID: "done"}, done: n, of: n,
// started: ms, details: {TASKID: what its check said when it turned done},
// answers: {TASKID: the typed answer that was right}}}, the format the
// progress reporter reads.
import { KEY, store } from "./base.js";

export const LABELS = { done: "Done", todo: "To do", locked: "Locked" };
export const ICONS = { done: "✓", todo: "○", locked: "–" };

export function loadAll() {
  const v = store.load(KEY.challenges, {});
  return v && typeof v === "object" && !Array.isArray(v) ? v : {};
}

// progressOf is challenge id's record, or a fresh one with no start.
export function progressOf(id, of) {
  const mine = loadAll()[id] || { tasks: {}, done: 0, of: of };
  mine.tasks = mine.tasks || {};
  mine.of = of;
  return mine;
}

// keep recounts mine's done tasks and saves it as challenge id's record.
export function keep(id, mine) {
  mine.done = Object.keys(mine.tasks).filter((t) => mine.tasks[t] === "done").length;
  const all = loadAll();
  all[id] = mine;
  store.save(KEY.challenges, all);
}

// doneIDs are the tasks mine has seen done, as the server's "done" field
// takes them: a task once done is not checked again.
export function doneIDs(mine) {
  return Object.keys(mine.tasks).filter((t) => mine.tasks[t] === "done");
}

// check asks statusURL for the tasks' states since mine's start ({tasks,
// quieted}: the pitfalls a complete challenge switched off); null when the
// server did not answer.
export async function check(statusURL, mine) {
  const q = new URLSearchParams();
  if (mine.started) q.set("since", String(mine.started));
  const done = doneIDs(mine);
  if (done.length) q.set("done", done.join(","));
  const res = await fetch(statusURL + "?" + q.toString(), { headers: { Accept: "application/json" }, cache: "no-store" });
  const body = res.ok ? await res.json() : null;
  return body ? { tasks: body.tasks || [], quieted: body.quieted || [] } : null;
}

// record takes a check's states into mine: a task done stays done, with
// the words its check said then (a later check sends none). It returns
// the text to show for each state.
export function record(mine, states) {
  mine.details = mine.details || {};
  return states.map((s) => {
    if (s.state === "done") {
      if (s.detail) mine.details[s.id] = s.detail;
      mine.tasks[s.id] = "done";
    }
    return s.state === "done" ? (s.detail || mine.details[s.id] || "") : (s.detail || "");
  });
}
