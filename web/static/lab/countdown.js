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
export function showCountdown() {
  const el = $("#resync");
  if (!el) return;
  const db = selectedDB();
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
