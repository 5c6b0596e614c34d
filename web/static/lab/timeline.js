// timeline.js: the timeline's rows. Events wait in a row of their
// Database until a reconcile takes them; a reconcile is one row that
// grows step by step; finished no-op reconciles fold together. The
// timeline owns its rows: other modules add or clear them through the
// functions here.
import { h } from "../base.js";
import { $, $$, timeEl, dur, dbOf } from "./dom.js";
import { state } from "./state.js";
import { noteResult } from "./countdown.js";
import { noteAdded } from "./newrows.js";
import { eventLine, eventsSummary, triggerLabel, wokeNote, isNoop, resultPill, pitfallPill, stepLine, rowEffect } from "./rowtext.js";

const rowsEl = $("#rows");
const filterEl = $("#filter");
const pending = new Map(); // database → events seen since its last reconcile
const rows = new Map();    // reconcileID → row
const failures = new Map(); // database → errors in a row, for "retry N"
const rowOfEl = new WeakMap();   // a row's element → the row
const groupOfEl = new WeakMap(); // a folded line's element → its group
const MAX_ROWS = 400;

// A row is one or two lines until the learner opens it: what woke the
// reconcile and how it ended, then what it did. Its steps, its events and
// what woke it are behind its Steps button, so that eight rows and more
// fit on a screen and the newest is where the learner looks.
const opened = new WeakMap(); // a row's element → the learner opened it
function toggle(el, bodyId) {
  const open = !!opened.get(el);
  return h("button", { type: "button", class: "row-toggle small", "aria-expanded": String(open), "aria-controls": bodyId }, open ? "Hide steps" : "Steps");
}
// travelButton offers time travel on a finished row, visibly: lab/travel.js
// answers it where the lab has a history (lab.css shows it only there).
const travelButton = () => h("button", { type: "button", class: "travel-here small" }, "Time travel");
let bodies = 0;
function bodyId(el) {
  if (!el.dataset.body) el.dataset.body = "row-body-" + ++bodies;
  return el.dataset.body;
}

export function addRow(el) {
  noteAdded(state.handlingLive);
  rowsEl.prepend(el);
  applyFilter(el);
  while (rowsEl.children.length > MAX_ROWS) rowsEl.lastElementChild.remove();
}
function applyFilter(el) {
  const want = filterEl ? filterEl.value : "";
  el.hidden = !!want && el.dataset.db !== want && el.dataset.db !== "";
}
// refilter shows the rows of the Database the filter names, after it changed.
export function refilter() {
  $$("#rows > li").forEach(applyFilter);
}
// knowObject offers a Database in the filter, once.
export function knowObject(name) {
  if (!filterEl || !name || $$("option", filterEl).some((o) => o.value === name)) return;
  filterEl.append(h("option", { value: name }, name));
}
// forgetObjects empties the filter, before another namespace's stream.
export function forgetObjects() {
  failures.clear();
  if (filterEl) { $$("option", filterEl).forEach((o) => { if (o.value) o.remove(); }); filterEl.value = ""; }
}

// onEvent shows events waiting for a reconcile (or ignored), so that
// dropped events and a paused controller are visible as they happen.
export function onEvent(m) {
  const db = dbOf(m);
  knowObject(db);
  let p = pending.get(db);
  if (!p) {
    p = { events: [], el: h("li", { class: "row pending", "data-db": db }) };
    pending.set(db, p);
    addRow(p.el);
  }
  p.events.push(m);
  if (m.seq) p.el.dataset.seq = String(m.seq); // travel.js: the objects after it
  drawPending(p);
}
function drawPending(p) {
  const ignored = p.events.filter((e) => e.ignored).length;
  const id = bodyId(p.el);
  const last = p.events[p.events.length - 1];
  p.el.replaceChildren(
    h("div", { class: "row-head" },
      timeEl(p.events[0].time), " ",
      h("b", { class: "db-name" }, dbOf(last)), " ",
      h("span", { class: "pill" }, `${p.events.length} event${p.events.length > 1 ? "s" : ""}`),
      ignored ? h("span", { class: "pill warn" }, `${ignored} ignored`) : h("span", { class: "muted small trigger" }, " waiting for a reconcile…")),
    h("div", { class: "row-sum" },
      h("span", { class: "effect" }, `${last.object.kind} ${last.object.name} ${last.event}` + (last.held ? ": held, namespace paused" : ""))),
    h("div", { class: "row-tools" }, toggle(p.el, id), travelButton()),
    h("div", { class: "row-body", id, hidden: !opened.get(p.el) }, h("ul", { class: "events" }, p.events.map(eventLine))));
}

export function onStart(m) {
  const db = dbOf(m);
  knowObject(db);
  const p = pending.get(db);
  pending.delete(db);
  if (p) p.el.remove();
  const row = {
    db, start: m, steps: [], events: p ? p.events : [], retry: 0,
    el: h("li", { class: "row", "data-db": db }),
  };
  rowOfEl.set(row.el, row);
  if (m.trigger === "requeue") row.retry = failures.get(db) || 0;
  rows.set(m.reconcileID, row);
  if (rows.size > MAX_ROWS * 2) rows.delete(rows.keys().next().value);
  redraw(row);
  addRow(row.el);
}

export function onStep(m) {
  let row = rows.get(m.reconcileID);
  if (!row) {
    // Its start fell out of the recorder's history before we connected:
    // draw the rest of the reconcile under a placeholder start.
    onStart(Object.assign({}, m, { type: "reconcile.start", trigger: "started earlier" }));
    row = rows.get(m.reconcileID);
  }
  if (m.type === "result") {
    row.result = m;
    failures.set(row.db, m.result === "error" ? (failures.get(row.db) || 0) + 1 : 0);
    noteResult(row.db, m);
  } else {
    row.steps.push(m);
  }
  redraw(row);
  if (m.type === "result") fold(row);
}

// A row is drawn once for all the steps of a batch of messages, not
// again at each step: a reload's catch-up brings thousands of steps at
// once, each reconcile's together. The microtask runs as soon as the
// batch is handled, before the page is painted.
const toDraw = new Set();
function redraw(row) {
  if (!toDraw.size) {
    queueMicrotask(() => {
      const batch = [...toDraw];
      toDraw.clear();
      for (const r of batch) {
        try { drawRow(r); } catch (err) { console.error("drawing a timeline row", err); }
      }
    });
  }
  toDraw.add(row);
}

function drawRow(row) {
  const res = row.result;
  const hasError = row.steps.some((s) => s.error || s.outcome === "Error") || (res && res.result === "error");
  row.el.classList.toggle("error", !!hasError);
  // travel.js shows the objects as they were after the row's last step.
  const last = res || row.steps[row.steps.length - 1] || row.start;
  if (last.seq) row.el.dataset.seq = String(last.seq);
  const id = bodyId(row.el);
  row.el.replaceChildren(
    h("div", { class: "row-head" },
      timeEl(row.start.time), " ",
      h("b", { class: "db-name" }, row.db), " ",
      resultPill(res),
      // The learner's own reconciler ran this one (the code page, /code).
      row.start.yourCode ? h("span", { class: "pill ok small your-code" }, "your code") : "",
      pitfallPill(row), " ",
      h("span", { class: "trigger" }, triggerLabel(row)),
      res && res.durationNs ? h("span", { class: "muted small took" }, " " + dur(res.durationNs)) : "",
      // The challenges name a reconcile by these eight characters.
      row.start.reconcileID ? h("span", { class: "muted small rid", title: "reconcile ID" }, " #" + row.start.reconcileID.slice(0, 8)) : ""),
    h("div", { class: "row-sum" }, h("span", { class: "effect" }, rowEffect(row))),
    h("div", { class: "row-tools" }, toggle(row.el, id), res ? travelButton() : ""),
    h("div", { class: "row-body", id, hidden: !opened.get(row.el) },
      wokeNote(row),
      row.start.reconcileID ? h("span", { class: "muted small rid-full" }, `reconcile #${row.start.reconcileID.slice(0, 8)}` + (res && res.durationNs ? `, ${dur(res.durationNs)}` : "")) : "",
      row.events.length ? h("details", { class: "coalesced" },
        h("summary", {}, eventsSummary(row.events)),
        h("ul", { class: "events" }, row.events.map(eventLine))) : "",
      h("ol", { class: "steps" }, row.steps.map(stepLine)),
      res && (res.message || res.error) ? h("p", { class: res.error ? "error small" : "muted small" }, res.error || res.message) : ""));
  if (row.group) drawGroup(row.group);
}

// A row's Steps button opens it on its steps, and closes it again.
rowsEl?.addEventListener("click", (e) => {
  const b = e.target.closest("button.row-toggle");
  if (!b) return;
  const li = b.closest("li.row");
  const body = li && document.getElementById(b.getAttribute("aria-controls"));
  if (!body) return;
  const open = body.hidden;
  opened.set(li, open);
  body.hidden = !open;
  b.setAttribute("aria-expanded", String(open));
  b.textContent = open ? "Hide steps" : "Steps";
});

// fold puts a finished no-op reconcile (nothing created, changed or
// deleted; status unchanged) together with the no-op rows of the same
// Database just below it (the ones before it on the timeline) as one
// line, "in sync ×3". The line is a disclosure: a click or Enter on it
// shows the reconciles themselves, each drawn as it was.
//
// A line the learner is reading (the pointer on it, the focus in it, one
// of its disclosures open) is not folded away under them: the new row
// stays on its own above it, and folds with the next ones; once nobody
// reads the line below them, the two lines become one.
function fold(row) {
  if (!isNoop(row)) return;
  row.el.classList.add("noop");
  const below = row.el.nextElementSibling;
  if (!foldable(below, row.db)) return;
  let g = groupOfEl.get(below);
  if (!g) {
    const prev = rowOfEl.get(below);
    if (!prev) return;
    g = newGroup(row.db);
    below.replaceWith(g.el);
    applyFilter(g.el);
    join(g, prev);
    const older = g.el.nextElementSibling;
    if (foldable(older, row.db) && groupOfEl.has(older)) absorb(g, groupOfEl.get(older));
  }
  join(g, row);
  drawGroup(g);
}
function foldable(el, db) {
  return !!el && el.dataset.db === db && el.classList.contains("noop") && !reading(el);
}
function reading(el) {
  return el.matches(":hover") || el.contains(document.activeElement) || !!$("details[open], .row-body:not([hidden])", el);
}
function newGroup(db) {
  const summary = h("summary", { class: "row-head" });
  const list = h("ol", { class: "rows folded" });
  const g = { members: [], summary, list, el: h("li", { class: "row noop fold", "data-db": db }, h("details", { class: "fold" }, summary, list)) };
  groupOfEl.set(g.el, g);
  return g;
}
function join(g, row) {
  g.members.push(row);
  row.group = g;
  g.list.prepend(row.el); // newest first, as on the timeline
}
// absorb takes an older group's rows into g, below g's own.
function absorb(g, older) {
  for (const r of older.members) r.group = g;
  g.members = older.members.concat(g.members);
  g.list.append(...older.list.children);
  older.el.remove();
}

function drawGroup(g) {
  const last = g.members[g.members.length - 1];
  const counts = new Map();
  for (const r of g.members) {
    const t = triggerLabel(r).replace(/ · .*/, "");
    counts.set(t, (counts.get(t) || 0) + 1);
  }
  const why = [...counts].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t)).join(", ");
  // oplab's controller compares before it skips a write; the learner's
  // code may not, so of its reconciles the fold says only what they did.
  const did = g.members.some((r) => r.start.yourCode) ? "each read the Database and wrote nothing"
    : "each read the Database, found nothing to change and skipped the status write";
  g.summary.replaceChildren(
    timeEl(last.start.time), " ",
    h("b", { class: "db-name" }, last.db), " ",
    h("span", { class: "pill ok fold-count" }, `in sync ×${g.members.length}`), " ",
    h("span", { class: "muted small" }, `${why}: ${did}`), " ",
    resultPill(last.result));
}

// reset starts the timeline again, with a line that says why.
export function reset(m) {
  pending.clear();
  rows.clear();
  rowsEl.replaceChildren(h("li", { class: "row notice", "data-db": "" }, "Timeline restarted: " + (m.message || "the resume point was lost") + "."));
}
