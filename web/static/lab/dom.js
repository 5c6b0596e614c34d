// dom.js: the small DOM helpers every lab module shares. Text always goes
// through textContent (base.js's h), never through innerHTML.
import { h, clock } from "../base.js";

export const $ = (sel, el) => (el || document).querySelector(sel);
export const $$ = (sel, el) => Array.from((el || document).querySelectorAll(sel));

// timeEl is a step's time of day in the learner's zone, empty for none
// (Go's zero time).
export function timeEl(t) {
  const none = !t || t.startsWith("0001-");
  return h("time", { class: "t", datetime: t }, none ? "" : clock(new Date(t)));
}
export function dur(ns) {
  if (!ns) return "";
  const ms = ns / 1e6;
  if (ms < 1) return "<1ms";
  if (ms < 1000) return Math.round(ms) + "ms";
  const s = ms / 1000;
  if (s < 120) return (Math.round(s * 10) / 10) + "s";
  return Math.round(s / 60) + "m";
}

// displayed is whether el takes part in the page, so can hold the focus.
export const displayed = (el) => !!el && el.isConnected && el.getClientRects().length > 0;

export function dbOf(m) {
  return m.database || (m.object && m.object.kind === "Database" ? m.object.name : "");
}
export const targetName = (s) => (s.target ? `${s.target.kind} ${s.target.name}` : "");
