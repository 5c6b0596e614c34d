// rowtext.js: what a timeline row says. Each function draws one part of a
// row from the messages it holds; none keeps anything between calls.
import { h } from "../base.js";
import { timeEl, dur, targetName } from "./dom.js";

export function eventLine(m) {
  return h("li", { class: m.ignored ? "ev ignored" : "ev" },
    timeEl(m.time), " ",
    h("span", { class: "kind" }, m.object.kind), ` ${m.object.name} `, h("b", {}, m.event),
    m.generation ? ` (generation ${m.generation})` : "",
    // Which of the controller's watches saw it: For (the Database), Owns (a
    // child) or Watches (a Pod, a StatefulSet's Warning Event).
    m.watch ? h("span", { class: "muted small" }, ` via ${m.watch}`) : "",
    // The version the watch delivered, and whether it is a reconciler's
    // own write coming back (the controller's events.go knows its writes).
    m.resourceVersion ? h("span", { class: "rv" }, ` · resourceVersion ${m.resourceVersion}`) : "",
    m.ownWrite ? h("span", { class: "own small" }, ` · ${ownWords(m.ownWrite)}`) : "",
    m.ignored ? h("span", { class: "pill warn small" }, "ignored: " + (m.pitfall || "dropped")) : "");
}

// ownWords says whose write an event brings back: the controller's own
// ("status patch"), or the learner's code's ("your code's update").
export function ownWords(what) {
  return what.startsWith("your code's ") ? `${what} coming back` : `the controller's own ${what} coming back`;
}

// eventsSummary counts the watch events seen before a reconcile; ignored
// ones (drop-events) are named as such, since they did not cause it.
export function eventsSummary(events) {
  const ignored = events.filter((e) => e.ignored).length;
  const queued = events.length - ignored;
  const parts = [];
  if (queued) parts.push(`${queued} watch event${queued > 1 ? "s" : ""}`);
  if (ignored) parts.push(`${ignored} ignored event${ignored > 1 ? "s" : ""} (not its cause)`);
  return parts.join(" and ") + " before this reconcile";
}

const pastTense = { create: "created", update: "changed", delete: "deleted" };
// A generic event is oplab's own: the namespace was resumed, handed to the
// learner's code or taken back, and it queues every Database there again
// (the controller's events.go). Its message says which, before the colon;
// an older export's may not.
function sweptLabel(events) {
  const message = events.find((e) => e.event === "generic" && e.message)?.message || "";
  // A reconcile the reconciler tester ran (a test's replay) says why.
  if (message.startsWith("the tester: ")) return message;
  const why = message.split(":")[0] || "namespace resumed";
  return `${why}: every Database queued again`;
}
// triggerLabel names what made the reconcile run: the object whose watch
// event queued it (as the controller's event handler saw it, or, in an
// older export, the first event this page saw), the periodic resync, or
// the retry after an error.
export function triggerLabel(row) {
  const used = row.events.filter((e) => !e.ignored);
  const count = used.length > 1 ? `${used.length} events` : "1 event";
  const w = row.start.wokenBy;
  if (w ? row.start.event === "generic" : used[0]?.event === "generic") return `${sweptLabel(used)} · ${count} → 1 reconcile`;
  if (w) return `${w.kind} ${w.name} ${pastTense[row.start.event] || row.start.event} · ${count} → 1 reconcile`;
  if (used.length) {
    const e = used[0];
    const what = `${e.object.kind} ${used.length > 1 ? "first " : ""}${pastTense[e.event] || e.event}`;
    return `${what} · ${count} → 1 reconcile`;
  }
  switch (row.start.trigger) {
    case "event": return "event → 1 reconcile"; // its events came before we connected
    case "resync": return "resync";
    case "requeue": return row.retry ? `retry ${row.retry}` : "requeued";
  }
  return row.start.trigger || "requeued";
}

// wokeNote says, beside the trigger, which watch woke the reconcile
// (For: the Database's own; Owns: a child's) or that no watch did.
export function wokeNote(row) {
  const s = row.start;
  let text = "";
  if (s.watch === "For" && s.ownWrite) text = `woken by the For watch: ${ownWords(s.ownWrite)}`;
  else if (s.watch === "For") text = "woken by the For watch: the Database's own event";
  else if (s.watch === "Owns") text = `woken by an Owns watch: ${s.wokenBy ? s.wokenBy.kind + " " + s.wokenBy.name : "a child"} is owned by ${row.db}` +
    (s.ownWrite ? ` (${ownWords(s.ownWrite)})` : "");
  else if (s.watch === "Watches" && s.wokenBy?.kind === "Pod") text = `woken by a Watches watch: Pod ${s.wokenBy.name} carries the label db.oplab.dev/database=${row.db}`;
  else if (s.watch === "Watches") text = `woken by a Watches watch: a Warning Event about StatefulSet ${row.db}`;
  else if (s.trigger === "resync") text = "no watch event: the periodic resync";
  else if (s.trigger === "requeue") text = row.retry ? "no watch event: the retry after an error" : "no watch event: the last reconcile asked to run again";
  else if (s.trigger === "event" && s.wokenBy) {
    // An event oplab sent itself (a namespace resumed) says why on the event.
    const ev = row.events.find((e) => !e.ignored && e.message);
    text = ev && ev.message.startsWith("the tester: ") ? "run by the tester, not a watch"
      : "woken by oplab, not a watch" + (ev ? ": " + ev.message : "");
  }
  return text ? h("span", { class: "muted small woke" }, text) : "";
}

// isNoop: the reconcile found everything as it should be and changed
// nothing. Consecutive ones fold into one line.
export function isNoop(row) {
  const r = row.result;
  if (!r || (r.result !== "done" && r.result !== "requeue") || r.error) return false;
  return row.steps.every((s) => !s.error && (
    (s.type === "fetch" && s.found === "found") ||
    (s.type === "diff" && !(s.differences && s.differences.length)) ||
    s.type === "read" ||
    (s.type === "action" && s.outcome === "Unchanged") ||
    // A write the status-thrash cap held back is not "nothing changed".
    (s.type === "status" && s.skipped && !s.held)));
}

// rowEffect says in one line what a reconcile did, from its steps: what
// it created, changed or deleted, the finalizer's phases, the status
// fields it wrote, its error; or that it changed nothing. It is the
// row's second line, before the row is opened on its steps.
export function rowEffect(row) {
  const out = [];
  for (const s of row.steps) {
    if (s.conflict) { out.push(`${s.type === "status" ? "status write" : `${s.action} ${targetName(s)}`} → 409 Conflict`); continue; }
    switch (s.type) {
      case "action":
        if (s.outcome === "Unchanged") break;
        out.push(s.outcome === "Error" ? `${s.action} ${targetName(s)} failed` :
          s.outcome === "AlreadyExists" ? `${targetName(s)} already exists` : `${pastAction[s.action] || s.action} ${targetName(s)}`);
        break;
      case "diff":
        if (s.differences && s.differences.length) out.push(`${s.target ? targetName(s) + ": " : ""}${s.differences.join("; ")}`);
        break;
      case "finalizer": out.push(`finalizer ${s.phase}`); break;
      case "throttled": out.push(`${s.action} ${targetName(s)} waited ${dur(s.durationNs || 0)}`); break;
      case "status":
        if (s.skipped && s.held) out.push("status write held back");
        else if (!s.skipped && !s.unchanged) out.push("status: " + statusGist(s));
        break;
    }
  }
  const res = row.result;
  if (res && res.error) out.push("error: " + firstLine(res.error));
  if (!out.length) {
    if (!res) return "running…";
    if (row.steps.some((s) => s.type === "fetch" && s.found === "not-found")) return "Database gone: nothing to do";
    return "nothing changed";
  }
  return out.join(" · ");
}
const pastAction = { create: "created", update: "updated", patch: "patched", delete: "deleted" };
// statusGist names the status fields a write changed, the flipped
// conditions first, at most three of them.
function statusGist(s) {
  const f = fieldsShown(s.fields || []).filter((x) => !/\.(reason|message|observedGeneration)$/.test(x.field));
  const v = (x) => (x === undefined || x === "" ? "∅" : x);
  const named = f.map((x) => `${x.field.replace(/^conditions\[([^\]]+)\]$/, "$1")} ${v(x.from)}→${v(x.to)}`);
  if (!named.length) return (s.conditions || []).map((c) => `${c.type} ${c.to}`).join(", ") || "written";
  return named.slice(0, 3).join(", ") + (named.length > 3 ? ", …" : "");
}
function firstLine(text) {
  const line = String(text).split("\n")[0];
  return line.length > 140 ? line.slice(0, 139) + "…" : line;
}

export function resultPill(res) {
  if (!res) return h("span", { class: "pill small running" }, "running…");
  const cls = res.result === "error" ? "bad" : res.result === "requeue" ? "warn" : "ok";
  let text = res.result;
  if (res.requeueAfterNs) text += res.result === "error" ? `, backoff ${dur(res.requeueAfterNs)}` : ` · next in ${dur(res.requeueAfterNs)}`;
  return h("span", { class: `pill ${cls} result` }, text);
}

// pitfallPill names the reconcile's pitfall, which its steps carry from
// the fetch on; a hidden one (a challenge's) is "hidden", whether one is
// on or not.
export function pitfallPill(row) {
  const s = [row.start, ...row.steps].find((x) => x.pitfall);
  if (!s) return "";
  // The pitfalls in oplab's reconciler do not touch the learner's code,
  // which runs as it is written; dropped events (the event handlers') and
  // a hidden one (which may be that) still apply to it.
  if (row.start.yourCode && s.pitfall !== "drop-events" && s.pitfall !== "hidden") return "";
  const hidden = s.pitfall === "hidden";
  return h("span", { class: "pill warn small", title: hidden ? "A pitfall may be on, or none: which one is for you to find." : null }, "pitfall: " + s.pitfall);
}

export function stepLine(s) {
  const li = (cls, ...kids) => h("li", { class: "step " + s.type + " " + (cls || "") }, h("span", { class: "st" }, s.type), " ", ...kids,
    s.error && !s.conflict ? h("span", { class: "error" }, " " + s.error) : "");
  if (s.conflict) return conflictLine(s, li);
  switch (s.type) {
    case "fetch":
      return li("", `Database ${s.found}`, s.generation ? ` (generation ${s.generation})` : "",
        s.resourceVersion ? h("span", { class: "rv", title: "the version of the object this reconcile works from" }, ` · read at resourceVersion ${s.resourceVersion}`) : "");
    case "diff": {
      const what = s.target ? `${targetName(s)}: ` : "";
      if (s.differences && s.differences.length) return li("", what, s.differences.join("; "));
      return li("muted", what, h("span", { class: "pill small" }, "in sync"));
    }
    case "read":
      // The learner's code read a child; what it compared it with is its
      // own, so no diff is drawn.
      return li("muted", `${targetName(s)} read by your code → `, h("span", { class: "pill small" }, s.found === "not-found" ? "not found" : "found"),
        s.found === "found" && s.resourceVersion ? ` · resourceVersion ${s.resourceVersion}` : "");
    case "action": {
      if (s.outcome === "Unchanged") return li("muted", `${targetName(s)}: `, h("span", { class: "pill small" }, "in sync"));
      const cls = s.outcome === "Error" ? "bad" : s.outcome === "AlreadyExists" ? "" : "ok";
      return li("", `${s.action} ${targetName(s)} → `, h("span", { class: "pill small " + cls }, s.outcome || "?"));
    }
    case "throttled":
      // The learner's code wrote faster than its write rate: the write
      // waited its turn before it was sent.
      return li("", `${s.action} ${targetName(s)} waited `, h("span", { class: "pill small warn" }, dur(s.durationNs || 0)),
        h("span", { class: "why" }, s.message || ""));
    case "finalizer":
      return li("", h("b", {}, s.phase), s.message ? " — " + s.message : "");
    case "status":
      if (s.skipped && s.held) return li("muted", "write held back: at most one status write a second (oplab's cap on a loop that writes on every reconcile)");
      // oplab's controller compares before it writes; the learner's code
      // may not, so of its reconcile the trace knows only that it wrote none.
      if (s.skipped && s.yourCode) return li("muted", "no status write: your code wrote no status in this reconcile");
      if (s.skipped) return li("muted", "unchanged: write skipped, nothing in the status changed", s.observedGeneration ? ` (observedGeneration ${s.observedGeneration})` : "");
      // Written, but equal to what was stored: the API server kept it as it
      // was, so no watch event follows (the controller's tracing.go).
      if (s.unchanged) return li("muted", `written, but nothing in it changed: the API server kept resourceVersion ${s.resourceVersion}, so no watch event follows`, writeNo(s));
      if (s.fields) return li("", `written, observedGeneration ${s.observedGeneration || 0}: `, fieldsShown(s.fields).map((f) => fieldText(f, s)), writeNo(s));
      // An export from before status steps named their fields.
      return li("", `written, observedGeneration ${s.observedGeneration || 0}: `,
        (s.conditions || []).map((c) => h("span", { class: "cond" + (c.transition ? " transition" : "") }, condText(c))), writeNo(s));
    default:
      return li("", s.message || "");
  }
}

// writeNo numbers a status write among the Database's, as the challenges'
// checks count them ("status write #3").
function writeNo(s) {
  return s.statusWrites ? h("span", { class: "write-no muted small" }, ` · status write #${s.statusWrites}`) : "";
}

// conflictLine is a write the API server refused with 409 Conflict: the
// object changed since the reconcile read it. The step says so and why
// (its message); the API server's own words are its title.
function conflictLine(s, li) {
  const what = s.type === "status" ? "write" : `${s.action} ${targetName(s)}`;
  return li("conflict", `${what} → `, h("span", { class: "pill small bad", title: s.error || "" }, "409 Conflict"),
    s.resourceVersion ? ` (based on resourceVersion ${s.resourceVersion})` : "",
    h("span", { class: "why" }, s.message || "the object changed since it was read"));
}

// fieldsShown drops what another field says already: a condition's
// lastTransitionTime moves when its status flips, and its
// observedGeneration follows the status's.
function fieldsShown(fields) {
  const has = (f, from, to) => fields.some((x) => x.field === f && (from === undefined || (x.from === from && x.to === to)));
  return fields.filter((f) => {
    const m = /^(conditions\[[^\]]+\])\.(lastTransitionTime|observedGeneration)$/.exec(f.field);
    if (!m) return true;
    if (m[2] === "lastTransitionTime") return !has(m[1]);
    return !has("observedGeneration", f.from, f.to);
  });
}
// fieldText is one changed field, old→new; a flipped condition stands out.
// A condition rewritten with only a new lastTransitionTime (the status
// thrash signature) reads as the condition, "rewritten".
function fieldText(f, s) {
  const moved = /^conditions\[([^\]]+)\]\.lastTransitionTime$/.exec(f.field);
  const c = moved && (s.conditions || []).find((x) => x.type === moved[1]);
  if (c) return h("span", { class: "cond" }, condText(c));
  const flip = /^conditions\[[^\]]+\]$/.test(f.field);
  const v = (x) => (x === undefined || x === "" ? "∅" : x);
  return h("span", { class: "field" + (flip ? " transition" : "") }, `${f.field} ${v(f.from)}→${v(f.to)} `);
}

// condText says what a status write did to one condition: flipped
// (False→True), rewritten with only a new lastTransitionTime (the status
// thrash signature), or written unchanged beside a change elsewhere.
function condText(c) {
  if (c.from && c.from === c.to && !c.transition) {
    const moved = c.lastTransitionTime && c.fromLastTransitionTime && c.lastTransitionTime !== c.fromLastTransitionTime;
    return `${c.type} ${c.to} (${c.reason}${moved ? "; rewritten, lastTransitionTime moved" : "; unchanged"}) `;
  }
  return `${c.type} ${c.from ? c.from + "→" : ""}${c.to} (${c.reason}) `;
}
