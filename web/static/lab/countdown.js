// countdown.js: the next resync (or retry, or requeue) of the selected
// Database, counted down beside the timeline's filter.
import { $ } from "./dom.js";
import { state, paused, whose } from "./state.js";

const nextRun = new Map(); // database → {at, kind}

export function noteResult(db, m) {
  if (!m.requeueAfterNs) { nextRun.delete(db); return; }
  nextRun.set(db, { at: new Date(m.time).getTime() + m.requeueAfterNs / 1e6, kind: m.result === "error" ? "retry" : m.result === "requeue" ? "requeue" : "resync" });
  showCountdown();
}
// forgetRuns drops every count, before another namespace's stream.
export function forgetRuns() {
  nextRun.clear();
}
// selectedDB is the Database the timeline's filter names, else the first card's.
export function selectedDB() {
  const filterEl = $("#filter");
  if (filterEl && filterEl.value) return filterEl.value;
  const card = $("#databases article.db");
  return card ? card.dataset.name : "";
}
// countedDB is the Database the countdown names: the filter's, else the
// one whose next run comes first, so that with no filter the count is of
// what happens next on the timeline, not of the first card's Database.
function countedDB() {
  if ($("#filter")?.value) return selectedDB();
  let soonest = "", at = Infinity;
  for (const [db, next] of nextRun) {
    if (next.at < at && document.getElementById("db-" + db)) { soonest = db; at = next.at; }
  }
  return soonest;
}
export function showCountdown() {
  const el = $("#resync");
  if (!el) return;
  const db = countedDB();
  const next = nextRun.get(db);
  el.hidden = !next;
  if (!next) return;
  if (paused()) { el.textContent = `${db}: held, ${whose()} namespace is paused`; return; }
  if (state.mode === "live" && $("#controller-status")?.classList.contains("bad")) {
    el.textContent = `${db}: no ${next.kind} while the controller is stopped`;
    return;
  }
  // In a replay the clock is the replayed one.
  const now = state.mode === "replay" ? state.replayNow : Date.now();
  const s = Math.ceil((next.at - now) / 1000);
  el.textContent = s > 0 ? `${db}: next ${next.kind} in ${s}s` : `${db}: ${next.kind} due now`;
  if (state.mode === "replay") el.textContent += ", as recorded";
}
