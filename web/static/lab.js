// lab.js: makes /lab live. The page works without it (forms POST and
// redirect); with it, forms are sent with fetch, and the page follows the
// /ws stream. The server renders every object view (a Database's card, a
// kept snapshot) and sends it in the state message's "html"; this file only
// swaps those in. What it draws itself is what must be live: the timeline
// rows, the loop diagram's lights, the playback controls and the resync
// countdown. On /lab/replay it plays an exported timeline through the same
// code.
"use strict";
(function () {
  const root = document.getElementById("lab");
  if (!root) return;
  const mode = root.dataset.mode; // live | replay | upload
  if (mode === "upload") return;
  const namespace = root.dataset.namespace || "";
  // look is the stream of a learner's lab the instructor looks at,
  // read-only (/instructor/look/NS); "" on a learner's own lab.
  const look = root.dataset.look || "";
  // followNs is the presenter's namespace while this lab follows it (the
  // stream is then /ws?follow=presenter); "" is the learner's own.
  let followNs = "";

  // ---- small DOM helpers: text always goes through textContent ----------
  const h = window.oplab.h;
  const $ = (sel, el) => (el || document).querySelector(sel);
  const $$ = (sel, el) => Array.from((el || document).querySelectorAll(sel));
  const localize = (el) => window.oplab && window.oplab.localize(el);
  function clock(t) {
    if (!t || t.startsWith("0001-")) return "";
    return window.oplab.clock(new Date(t));
  }
  function timeEl(t) {
    return h("time", { class: "t", datetime: t }, clock(t));
  }
  function dur(ns) {
    if (!ns) return "";
    const ms = ns / 1e6;
    if (ms < 1) return "<1ms";
    if (ms < 1000) return Math.round(ms) + "ms";
    const s = ms / 1000;
    if (s < 120) return (Math.round(s * 10) / 10) + "s";
    return Math.round(s / 60) + "m";
  }

  // ---- the loop diagram --------------------------------------------------
  const stageOf = {
    event: "watch", "reconcile.start": "queue", fetch: "fetch", diff: "diff",
    action: "act", finalizer: "act", status: "status", result: "requeue",
  };
  const lightQueue = [];
  let lightTimer = null;
  // light shows the stage of each step for a moment, in order, so a burst
  // delivered in one frame still plays as a sequence; a long backlog is
  // skipped rather than lagging behind the stream.
  function light(m) {
    const stage = stageOf[m.type];
    if (!stage) return;
    lightQueue.push({ stage, m });
    if (lightQueue.length > 40) lightQueue.splice(0, lightQueue.length - 1);
    if (!lightTimer) nextLight();
  }
  function nextLight() {
    const item = lightQueue.shift();
    if (!item) {
      lightTimer = setTimeout(() => { $$("#loop [data-stage]").forEach((e) => e.classList.remove("lit")); lightTimer = null; }, 1500);
      return;
    }
    clearTimeout(lightTimer);
    $$("#loop [data-stage]").forEach((e) => e.classList.toggle("lit", e.dataset.stage === item.stage));
    const el = $(`#loop [data-stage="${item.stage}"]`);
    if (el) el.classList.toggle("ignored", !!item.m.ignored);
    if (item.stage === "queue") $(`#loop [data-stage="watch"]`)?.classList.remove("ignored");
    const cap = $("#loop-caption");
    if (cap) cap.textContent = caption(item.m);
    lightTimer = setTimeout(nextLight, 160);
  }
  function dbOf(m) {
    return m.database || (m.object && m.object.kind === "Database" ? m.object.name : "");
  }
  function caption(m) {
    const who = dbOf(m);
    switch (m.type) {
      case "event": return `${m.object.kind} ${m.object.name}: ${m.event} event` + (m.ignored ? " — ignored" : " → queued " + who);
      case "reconcile.start": return `reconcile ${who} (${m.trigger || "?"})`;
      case "fetch": return `fetch ${who}: ${m.found}`;
      case "diff": return `diff: ${(m.differences || []).join(", ") || "in sync"}`;
      case "action": return m.outcome === "Unchanged" ? `${targetName(m)}: in sync` : `${m.action} ${targetName(m)}: ${m.outcome}`;
      case "finalizer": return `finalizer: ${m.phase}`;
      case "status": return m.conflict ? "status write refused: 409 Conflict" : m.skipped ? "status unchanged: write skipped" : `status written, observedGeneration ${m.observedGeneration || 0}`;
      case "result": return m.message || m.result;
    }
    return "";
  }
  const targetName = (s) => (s.target ? `${s.target.kind} ${s.target.name}` : "");

  // ctrlUp is whether the one controller runs (the instructor may stop it).
  let ctrlUp = $("#controller-status")?.dataset.up !== "false";
  // showPaused follows the learner's namespace being paused: the controller
  // holds its reconciles, so the loop stands still on purpose.
  function showPaused(paused) {
    root.dataset.paused = String(paused);
    const note = $("#loop-paused");
    if (note) {
      note.hidden = !paused;
      // Following, the pause shown is the presenter's, and so is its note.
      if (paused && followNs) note.replaceChildren(h("b", {}, "paused"), ` The controller holds every reconcile of ${follow.name}'s namespace: events queue up, nothing is fetched or changed until ${follow.name} resumes it.`);
      else if (paused && ownPausedNote) note.replaceChildren(...ownPausedNote.map((n) => n.cloneNode(true)));
    }
    const cap = $("#loop-caption");
    if (cap && paused) cap.textContent = `paused: reconciles of ${whose()} namespace are held`;
    drawControllerPill();
  }
  const ownPausedNote = $("#loop-paused") ? [...$("#loop-paused").childNodes].map((n) => n.cloneNode(true)) : null;
  // whose is whose namespace the lab shows: "your", or the presenter's.
  const whose = () => (followNs ? `${follow.name}'s` : "your");

  // ---- the timeline --------------------------------------------------------
  const rowsEl = $("#rows");
  const filterEl = $("#filter");
  const pending = new Map(); // database → events seen since its last reconcile
  const rows = new Map();    // reconcileID → row
  const failures = new Map(); // database → errors in a row, for "retry N"
  const MAX_ROWS = 400;

  // jump is the link to the timeline on a narrow screen, where the timeline
  // comes after every card: shown while the timeline is off screen, with
  // the rows added since it was last seen.
  const jump = (() => {
    const link = $("#to-timeline");
    const narrow = window.matchMedia("(max-width: 60rem)");
    const section = $(".lab-grid > .timeline");
    let seen = true;
    let added = 0;
    function draw() {
      if (!link) return;
      link.hidden = !narrow.matches || seen;
      link.replaceChildren(added ? `Timeline: ${added} new` : "Timeline", h("span", { "aria-hidden": "true" }, " ↓"));
    }
    if (link && section && "IntersectionObserver" in window) {
      new IntersectionObserver((entries) => {
        seen = entries[entries.length - 1].isIntersecting;
        if (seen) added = 0;
        draw();
      }).observe(section);
      narrow.addEventListener("change", draw);
      link.addEventListener("click", (e) => {
        e.preventDefault();
        section.scrollIntoView({ block: "start" });
        $("#log")?.focus({ preventScroll: true });
      });
    }
    // Only rows of what happens now count as new, not the past a reload draws.
    return { added(live) { if (!seen && live) { added++; draw(); } } };
  })();
  let handlingLive = true; // the message being handled is of now, not the past
  function addRow(el) {
    jump.added(handlingLive);
    rowsEl.prepend(el);
    applyFilter(el);
    while (rowsEl.children.length > MAX_ROWS) rowsEl.lastElementChild.remove();
  }
  function applyFilter(el) {
    const want = filterEl ? filterEl.value : "";
    el.hidden = !!want && el.dataset.db !== want && el.dataset.db !== "";
  }
  if (filterEl) {
    filterEl.addEventListener("change", () => {
      $$("#rows > li").forEach(applyFilter);
      markSelected();
      showCountdown();
      tellView();
    });
  }
  function knowObject(name) {
    if (!filterEl || !name || $$("option", filterEl).some((o) => o.value === name)) return;
    filterEl.append(h("option", { value: name }, name));
  }

  function eventLine(m) {
    return h("li", { class: m.ignored ? "ev ignored" : "ev" },
      timeEl(m.time), " ",
      h("span", { class: "kind" }, m.object.kind), ` ${m.object.name} `, h("b", {}, m.event),
      m.generation ? ` (generation ${m.generation})` : "",
      // Which of the controller's watches saw it: For (the Database) or Owns (a child).
      m.watch ? h("span", { class: "muted small" }, ` via ${m.watch}`) : "",
      m.ignored ? h("span", { class: "pill warn small" }, "ignored: " + (m.pitfall || "dropped")) : "");
  }

  // onEvent shows events waiting for a reconcile (or ignored), so that
  // dropped events and a paused controller are visible as they happen.
  function onEvent(m) {
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
    const ignored = p.events.filter((e) => e.ignored).length;
    p.el.replaceChildren(
      h("div", { class: "row-head" },
        timeEl(p.events[0].time), " ",
        h("b", {}, db), " ",
        h("span", { class: "pill" }, `${p.events.length} event${p.events.length > 1 ? "s" : ""}`),
        ignored ? h("span", { class: "pill warn" }, `${ignored} ignored`) : h("span", { class: "muted small" }, " waiting for a reconcile…")),
      h("ul", { class: "events" }, p.events.map(eventLine)));
  }

  // eventsSummary counts the watch events seen before a reconcile; ignored
  // ones (drop-events) are named as such, since they did not cause it.
  function eventsSummary(events) {
    const ignored = events.filter((e) => e.ignored).length;
    const queued = events.length - ignored;
    const parts = [];
    if (queued) parts.push(`${queued} watch event${queued > 1 ? "s" : ""}`);
    if (ignored) parts.push(`${ignored} ignored event${ignored > 1 ? "s" : ""} (they did not cause it)`);
    return parts.join(" and ") + " before this reconcile";
  }

  function onStart(m) {
    const db = dbOf(m);
    knowObject(db);
    const p = pending.get(db);
    pending.delete(db);
    if (p) p.el.remove();
    const row = {
      db, start: m, steps: [], events: p ? p.events : [], retry: 0,
      el: h("li", { class: "row", "data-db": db, "data-reconcile": m.reconcileID }),
    };
    row.el._row = row;
    if (m.trigger === "requeue") row.retry = failures.get(db) || 0;
    rows.set(m.reconcileID, row);
    if (rows.size > MAX_ROWS * 2) rows.delete(rows.keys().next().value);
    redraw(row);
    addRow(row.el);
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

  const pastTense = { create: "created", update: "changed", delete: "deleted" };
  // A generic event is oplab's own: the namespace was resumed, and it queues
  // every Database there again (the controller's events.go).
  const RESUMED = "namespace resumed: every Database queued again";
  // triggerLabel names what made the reconcile run: the object whose watch
  // event queued it (as the controller's event handler saw it, or, in an
  // older export, the first event this page saw), the periodic resync, or
  // the retry after an error.
  function triggerLabel(row) {
    const used = row.events.filter((e) => !e.ignored);
    const count = used.length > 1 ? `${used.length} events` : "1 event";
    const w = row.start.wokenBy;
    if (w ? row.start.event === "generic" : used[0]?.event === "generic") return `${RESUMED} · ${count} → 1 reconcile`;
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
  function wokeNote(row) {
    const s = row.start;
    let text = "";
    if (s.watch === "For") text = "woken by the For watch: the Database's own event";
    else if (s.watch === "Owns") text = `woken by an Owns watch: ${s.wokenBy ? s.wokenBy.kind + " " + s.wokenBy.name : "a child"} is owned by ${row.db}`;
    else if (s.trigger === "resync") text = "no watch event: the periodic resync";
    else if (s.trigger === "requeue") text = row.retry ? "no watch event: the retry after an error" : "no watch event: the last reconcile asked to run again";
    else if (s.trigger === "event" && s.wokenBy) {
      // An event oplab sent itself (a namespace resumed) says why on the event.
      const ev = row.events.find((e) => !e.ignored && e.message);
      text = "woken by oplab, not a watch" + (ev ? ": " + ev.message : "");
    }
    return text ? h("span", { class: "muted small woke" }, text) : "";
  }

  // isNoop: the reconcile found everything as it should be and changed
  // nothing. Consecutive ones fold into one line.
  function isNoop(row) {
    const r = row.result;
    if (!r || (r.result !== "done" && r.result !== "requeue") || r.error) return false;
    return row.steps.every((s) => !s.error && (
      (s.type === "fetch" && s.found === "found") ||
      (s.type === "diff" && !(s.differences && s.differences.length)) ||
      (s.type === "action" && s.outcome === "Unchanged") ||
      // A write the status-thrash cap held back is not "nothing changed".
      (s.type === "status" && s.skipped && !s.held)));
  }

  function resultPill(res) {
    if (!res) return h("span", { class: "pill small running" }, "running…");
    const cls = res.result === "error" ? "bad" : res.result === "requeue" ? "warn" : "ok";
    let text = res.result;
    if (res.requeueAfterNs) text += res.result === "error" ? `, backoff ${dur(res.requeueAfterNs)}` : ` · next in ${dur(res.requeueAfterNs)}`;
    return h("span", { class: `pill ${cls} result` }, text);
  }

  // pitfallPill names the reconcile's pitfall, which its steps carry from
  // the fetch on; a hidden one (a challenge's) is "hidden", whether one is
  // on or not.
  function pitfallPill(row) {
    const s = [row.start, ...row.steps].find((x) => x.pitfall);
    if (!s) return "";
    const hidden = s.pitfall === "hidden";
    return h("span", { class: "pill warn small", title: hidden ? "A pitfall may be on, or none: which one is for you to find." : null }, "pitfall: " + s.pitfall);
  }

  function drawRow(row) {
    const res = row.result;
    const hasError = row.steps.some((s) => s.error || s.outcome === "Error") || (res && res.result === "error");
    row.el.classList.toggle("error", !!hasError);
    // travel.js shows the objects as they were after the row's last step.
    const last = res || row.steps[row.steps.length - 1] || row.start;
    if (last.seq) row.el.dataset.seq = String(last.seq);
    row.el.replaceChildren(
      h("div", { class: "row-head" },
        timeEl(row.start.time), " ",
        h("b", { class: "db-name" }, row.db), " ",
        h("span", { class: "pill trigger" }, triggerLabel(row)),
        pitfallPill(row),
        // The learner's own reconciler ran this one (the code page, /code).
        row.start.yourCode ? h("span", { class: "pill ok small your-code" }, "your code") : "",
        " ", resultPill(res),
        res && res.durationNs ? h("span", { class: "muted small" }, " " + dur(res.durationNs)) : "",
        // The challenges name a reconcile by these eight characters.
        row.start.reconcileID ? h("span", { class: "muted small rid", title: "reconcile ID" }, " #" + row.start.reconcileID.slice(0, 8)) : "",
        wokeNote(row)),
      row.events.length ? h("details", { class: "coalesced" },
        h("summary", {}, eventsSummary(row.events)),
        h("ul", { class: "events" }, row.events.map(eventLine))) : "",
      h("ol", { class: "steps" }, row.steps.map(stepLine)),
      res && (res.message || res.error) ? h("p", { class: res.error ? "error small" : "muted small" }, res.error || res.message) : "");
    if (row.group) drawGroup(row.group);
  }

  // fold puts a finished no-op reconcile (nothing created, changed or
  // deleted; status unchanged) together with the no-op rows of the same
  // Database just below it (the ones before it on the timeline) as one
  // line, "in sync ×3". The line is a disclosure: a click or Enter on it
  // shows the reconciles themselves, each drawn as it was.
  function fold(row) {
    if (!isNoop(row)) return;
    row.el.classList.add("noop");
    const below = row.el.nextElementSibling;
    if (!below || below.dataset.db !== row.db || !below.classList.contains("noop")) return;
    let g = below._group;
    if (!g) {
      const prev = below._row;
      if (!prev) return;
      const summary = h("summary", { class: "row-head" });
      const list = h("ol", { class: "rows folded" });
      g = { members: [], summary, list, el: h("li", { class: "row noop fold", "data-db": row.db }, h("details", { class: "fold" }, summary, list)) };
      g.el._group = g;
      below.replaceWith(g.el);
      applyFilter(g.el);
      join(g, prev);
    }
    join(g, row);
    drawGroup(g);
  }
  function join(g, row) {
    g.members.push(row);
    row.group = g;
    g.list.prepend(row.el); // newest first, as on the timeline
  }

  function drawGroup(g) {
    const last = g.members[g.members.length - 1];
    const counts = new Map();
    for (const r of g.members) {
      const t = triggerLabel(r).replace(/ · .*/, "");
      counts.set(t, (counts.get(t) || 0) + 1);
    }
    const why = [...counts].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t)).join(", ");
    g.summary.replaceChildren(
      timeEl(last.start.time), " ",
      h("b", { class: "db-name" }, last.db), " ",
      h("span", { class: "pill ok fold-count" }, `in sync ×${g.members.length}`), " ",
      h("span", { class: "muted small" }, `${why}: each read the Database, found nothing to change and skipped the status write`), " ",
      resultPill(last.result));
    g.el.dataset.reconcile = last.start.reconcileID;
  }

  function stepLine(s) {
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
      case "action": {
        if (s.outcome === "Unchanged") return li("muted", `${targetName(s)}: `, h("span", { class: "pill small" }, "in sync"));
        const cls = s.outcome === "Error" ? "bad" : s.outcome === "AlreadyExists" ? "" : "ok";
        return li("", `${s.action} ${targetName(s)} → `, h("span", { class: "pill small " + cls }, s.outcome || "?"));
      }
      case "finalizer":
        return li("", h("b", {}, s.phase), s.message ? " — " + s.message : "");
      case "status":
        if (s.skipped && s.held) return li("muted", "write held back: at most one status write a second (oplab's cap on a loop that writes on every reconcile)");
        if (s.skipped) return li("muted", "unchanged: write skipped, nothing in the status changed", s.observedGeneration ? ` (observedGeneration ${s.observedGeneration})` : "");
        if (s.fields) return li("", `written, observedGeneration ${s.observedGeneration || 0}: `, fieldsShown(s.fields).map((f) => fieldText(f, s)));
        // An export from before status steps named their fields.
        return li("", `written, observedGeneration ${s.observedGeneration || 0}: `,
          (s.conditions || []).map((c) => h("span", { class: "cond" + (c.transition ? " transition" : "") }, condText(c))));
      default:
        return li("", s.message || "");
    }
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

  function onStep(m) {
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

  // The pill says what reconciles this namespace: the one controller (the
  // instructor may stop it for everyone) and the learner's own pause.
  function drawControllerPill() {
    const pill = $("#controller-status");
    if (!pill) return;
    const paused = root.dataset.paused === "true";
    const says = !ctrlUp ? "Controller stopped" : paused ? `${followNs ? follow.name + "'s" : "Your"} namespace is paused` : "Controller running";
    if (pill.textContent !== says) pill.textContent = says;
    pill.classList.toggle("ok", ctrlUp && !paused);
    pill.classList.toggle("warn", ctrlUp && paused);
    pill.classList.toggle("bad", !ctrlUp);
    // Only the button that applies is enabled; the line after them says
    // why (the server draws the same on load: web/lab pauseWhy).
    const stop = $('button[data-controller="stop"]'), start = $('button[data-controller="start"]'), why = $("#pause-why");
    if (stop) stop.disabled = paused;
    if (start) start.disabled = !paused;
    // The words are the server's (web/lab pauseWhy), written only when they
    // change: a rewrite replaces the text node, and this runs on every view
    // a follower receives.
    const reason = why && (paused ? why.dataset.paused : why.dataset.running);
    if (reason && why.textContent !== reason) why.textContent = reason;
    showCountdown();
  }
  function showController(running) {
    ctrlUp = running;
    drawControllerPill();
  }
  function onController(m) {
    if (m.phase === "narration") { onNarration(m); return; }
    if (m.phase === "challenge-started") {
      // A challenge's Start wiped the namespace: what is below is from
      // before, though its Databases may have the same names.
      addRow(h("li", { class: "row controller divider", "data-db": "" },
        h("div", { class: "row-head" }, timeEl(m.time), " ", h("span", { class: "pill warn" }, "challenge started"), " ", m.message || "")));
      return;
    }
    if (m.object && m.object.kind === "ControlPlane") {
      // A control-plane process went down or came back: say so in the
      // timeline, and leave the controller's own pill alone.
      const up = m.phase === "control-plane-restarted";
      addRow(h("li", { class: "row controller", "data-db": "" },
        h("div", { class: "row-head" }, timeEl(m.time), " ",
          h("span", { class: "pill " + (up ? "ok" : "bad") }, m.object.name + (up ? " back" : " down")), " ", m.message || "")));
      return;
    }
    const mine = m.object && m.object.namespace;
    if (mine && mine !== (followNs || namespace)) return;
    if (m.phase === "restarted") {
      addRow(h("li", { class: "row controller", "data-db": "" },
        h("div", { class: "row-head" }, timeEl(m.time), " ", h("span", { class: "pill warn" }, "oplab restarted"), " ", m.message || "")));
      return;
    }
    if (mine) showPaused(m.phase === "paused");
    else showController(m.phase === "started");
    const cls = { started: "ok", resumed: "ok", paused: "warn" }[m.phase] || "bad";
    addRow(h("li", { class: "row controller", "data-db": "" },
      h("div", { class: "row-head" }, timeEl(m.time), " ",
        h("span", { class: "pill " + cls }, (mine ? whose() + " namespace " : "controller ") + (m.phase || "")), " ", m.message || "")));
  }

  // A scripted demo's narration (web/demo): the instructor's words, in
  // order among the reconciles they announce; a failed step shows its error.
  function onNarration(m) {
    demoKeys.note(m);
    // A demo's step is about its Database: select it, as the presenter
    // would, so the room (and every follower) sees that card and its rows.
    if (m.database && filterEl && !followNs && filterEl.value !== m.database) {
      knowObject(m.database);
      filterEl.value = m.database;
      filterEl.dispatchEvent(new Event("change"));
    }
    addRow(h("li", { class: "row controller narration" + (m.error ? " error" : ""), "data-db": "" },
      h("div", { class: "row-head" }, timeEl(m.time), " ",
        h("span", { class: "pill " + (m.error ? "bad" : "running") }, "demo " + ((m.object && m.object.name) || "")), " ",
        h("span", { class: "narration-text" }, m.message || ""))));
  }

  // ---- the presenter's keys during a scripted demo -------------------------
  // A demo plays in the instructor's own lab namespace, and waits after each
  // step for the presenter. On that lab (the projector) → and space ask for
  // the next step, as a clicker moves slides on: the instructor cookie of
  // this browser lets the request through (/instructor/demo/next). Only
  // while a demo's narration says one is under way on this timeline, never
  // while following someone, and never while focus is in a form field (or,
  // for space, on anything space would press).
  const demoKeys = (() => {
    let underWay = false;
    let line = null;
    // begun is the step the presenter's last key began, whose "begun" line
    // its own narration, arriving after the reply, must not replace.
    let begun = 0;
    function say(text) {
      if (!line) {
        line = h("p", { id: "demo-keys", class: "muted small", role: "status" });
        $(".timeline-head")?.after(line);
      }
      line.textContent = text;
      line.hidden = !text;
    }
    // note reads a narration: "Step 2 of 6: …" while a demo is under way;
    // its end ("is over", "stopped") says it is not.
    function note(m) {
      // Followers get the presenter's narrations too: only a demo in this
      // lab's own namespace is one these keys may move on.
      const step = !m.error && !!m.object && m.object.namespace === namespace && /^Step (\d+) of \d+: /.exec(m.message || "");
      underWay = !!step;
      if (step && Number(step[1]) === begun) return;
      begun = 0;
      if (mode === "live" && !followNs) say(underWay ? "Demo under way: press → or space for its next step." : "");
    }
    async function next() {
      say("Asking for the demo's next step…");
      try {
        const res = await fetch("/instructor/demo/next", {
          method: "POST", credentials: "same-origin", headers: { Accept: "application/json" },
        });
        if (res.status === 401 || res.status === 403) {
          say("→ and space move the demo on only in the instructor's browser: open /instructor in this browser once.");
          return;
        }
        const reply = await res.json();
        const st = reply.status || {};
        if (reply.error) say("Next: " + reply.error.replace(/^refused: /, ""));
        else if (st.state === "finished") say("The demo is over.");
        else { begun = st.step; say(`Step ${st.step} of ${st.of} begun: ${st.stepTitle}.`); }
      } catch (_) {
        say("The next step could not be asked for: is oplab still running?");
      }
    }
    if (mode === "live") {
      document.addEventListener("keydown", (e) => {
        if (!underWay || followNs || e.defaultPrevented || e.repeat || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
        if (e.key !== "ArrowRight" && e.key !== " ") return;
        const fields = "input, select, textarea, [contenteditable]";
        if (e.target.closest && e.target.closest(e.key === " " ? fields + ", button, a[href], summary, [tabindex]" : fields)) return;
        e.preventDefault();
        next();
      });
    }
    return { note };
  })();

  function reset(m) {
    pending.clear();
    rows.clear();
    rowsEl.replaceChildren(h("li", { class: "row notice", "data-db": "" }, "Timeline restarted: " + (m.message || "the resume point was lost") + "."));
  }

  // ---- the next resync of the selected Database --------------------------------
  const nextRun = new Map(); // database → {at, kind}
  function noteResult(db, m) {
    if (!m.requeueAfterNs) { nextRun.delete(db); return; }
    nextRun.set(db, { at: new Date(m.time).getTime() + m.requeueAfterNs / 1e6, kind: m.result === "error" ? "retry" : m.result === "requeue" ? "requeue" : "resync" });
    showCountdown();
  }
  function selectedDB() {
    if (filterEl && filterEl.value) return filterEl.value;
    const card = $("#databases article.db");
    return card ? card.dataset.name : "";
  }
  // In a replay the clock is the replayed one.
  let replayNow = 0;
  function showCountdown() {
    const el = $("#resync");
    if (!el) return;
    const db = selectedDB();
    const next = nextRun.get(db);
    el.hidden = !next;
    if (!next) return;
    if (root.dataset.paused === "true") { el.textContent = `${db}: held, ${whose()} namespace is paused`; return; }
    if (mode === "live" && $("#controller-status")?.classList.contains("bad")) {
      el.textContent = `${db}: no ${next.kind} while the controller is stopped`;
      return;
    }
    const now = mode === "replay" ? replayNow : Date.now();
    const s = Math.ceil((next.at - now) / 1000);
    el.textContent = s > 0 ? `${db}: next ${next.kind} in ${s}s` : `${db}: ${next.kind} due now`;
    if (mode === "replay") el.textContent += ", as recorded";
  }
  if (mode === "live") setInterval(showCountdown, 1000);

  // ---- object views: server-rendered fragments, swapped in -----------------------
  function fragment(html) {
    const t = document.createElement("template");
    t.innerHTML = html;
    return t.content.firstElementChild;
  }
  // editing: the learner has typed into the part and not sent it, or is in
  // one of its fields right now. That part keeps what they typed.
  function editing(part) {
    const a = document.activeElement;
    if (a && part.contains(a) && a.matches("input, select, textarea")) return true;
    return $$("input, select", part).some((el) => el.type !== "hidden" && (el.tagName === "SELECT"
      ? Math.max(el.selectedIndex, 0) !== defaultIndex(el)
      : el.value !== el.defaultValue));
  }
  // defaultIndex is the option a select shows as drawn: the one marked
  // selected, or the first when none is (a card's "none" pitfall, its
  // default Pods); comparing each option's selected with its
  // defaultSelected took such a select for one being edited, for good.
  function defaultIndex(select) {
    const i = [...select.options].findIndex((o) => o.defaultSelected);
    return i < 0 ? 0 : i;
  }
  // A state that comes while the learner edits a part leaves that part as
  // they typed it (skipped); once their edit is sent (settle), the part is
  // drawn from the card's latest state, which may have come before the
  // answer did. latestActions keeps each card's latest state's form parts
  // that were not drawn.
  const skipped = new WeakSet();
  const latestActions = new Map();
  function swapCard(card, fresh) {
    const open = new Set($$("details[open][id]", card).map((d) => d.id));
    $(".db-state", card).replaceWith($(".db-state", fresh));
    const actions = $(".db-actions", card);
    const freshActions = $(".db-actions", fresh);
    if (actions && freshActions) {
      latestActions.set(card.id, freshActions);
      for (const part of $$(":scope > [data-part]", freshActions)) {
        const old = $(`:scope > [data-part="${part.dataset.part}"]`, actions);
        if (!old) continue;
        if (editing(old)) { skipped.add(old); continue; }
        drawPart(old, part);
      }
    }
    for (const id of open) document.getElementById(id)?.setAttribute("open", "");
    localize(card);
  }
  // drawPart moves part in (a clone of a select drawn in the template's
  // inert document would have no option selected at all).
  function drawPart(old, part) {
    old.replaceWith(part);
    enhanceAll(part);
  }

  const dbList = $("#databases");
  function onState(m) {
    switch (m.object.kind) {
      case "Database": onDatabase(m); return;
      case "ConfigMap": onSnapshot(m); return;
    }
  }
  // rendered is when the server asked for the cards this page came with.
  // A fresh stream first replays the recent past, states included; drawn,
  // they would flash old cards for seconds (a Database deleted minutes ago,
  // Terminating again) over cards that are already current. States older
  // than the page stay off the cards; the timeline still shows every step.
  // Another stream (following, a reset) has no page behind it: all count.
  let rendered = Date.parse(root.dataset.rendered || "") || 0;
  let cardsDrawn = 0;
  const olderThanPage = (m) => rendered && m.time && new Date(m.time).getTime() < rendered;
  function onDatabase(m) {
    const name = m.object.name;
    if (!dbList) return;
    knowObject(name);
    if (olderThanPage(m)) return;
    root.dataset.cardsDrawn = String(++cardsDrawn);
    let card = document.getElementById("db-" + name);
    if (!m.state) {
      if (card) {
        card.classList.add("gone");
        $(".db-state", card).prepend(h("p", { class: "pill bad" }, "Deleted"));
        $$("button", card).forEach((b) => { b.disabled = true; });
        latestActions.delete(card.id);
        markScenarioNext();
        setTimeout(() => { card.remove(); markSelected(); }, 4000);
      }
      return;
    }
    if (!m.state.html) return;
    const fresh = fragment(m.state.html);
    if (card && !card.classList.contains("gone")) {
      swapCard(card, fresh);
      revealDrawn(card);
    } else {
      if (card) card.remove();
      enhanceAll(fresh);
      localize(fresh);
      $(".empty", dbList)?.remove();
      const after = $$("article.db", dbList).find((a) => a.dataset.name > name);
      dbList.insertBefore(fresh, after || null);
      revealDrawn(fresh);
    }
    markSelected();
  }
  // onSnapshot keeps "Snapshots kept after delete" current: a state names a
  // final snapshot whose Database is gone; a nil state removes it.
  function onSnapshot(m) {
    const list = $("#snapshots");
    if (!list || olderThanPage(m)) return;
    const name = m.object.name;
    document.getElementById("snap-" + name)?.remove();
    if (m.state && m.state.html) {
      const li = fragment(m.state.html);
      localize(li);
      const after = $$("li.snapshot", list).find((x) => x.dataset.name > name);
      list.insertBefore(li, after || null);
    }
    const section = $("#kept");
    if (section) section.hidden = list.children.length === 0;
  }
  // markSelected marks the card the focused layout shows: the one the
  // timeline's filter names, else the first.
  function markSelected() {
    const want = selectedDB();
    $$("#databases article.db").forEach((a) => a.classList.toggle("selected", a.dataset.name === want));
    markScenarioNext();
  }
  // A scenario's next step on a Database that is gone, or its Delete once
  // the Database is Terminating, does not apply: the button is disabled and
  // the line after it says why.
  function markScenarioNext() {
    $$(".scenario-next form").forEach((form, i) => {
      const m = /^\/lab\/databases\/([^/]+)\/(.+)$/.exec(new URL(form.action, location.href).pathname);
      if (!m) return;
      const card = document.getElementById("db-" + m[1]);
      let why = "";
      if (!card || card.classList.contains("gone")) why = `${m[1]} is not there.`;
      else if (m[2] === "delete" && $(".terminating", card)) why = `${m[1]} is already being deleted: deleting again changes nothing.`;
      const button = $("button", form);
      let note = $(".why", form);
      if (why && !note) {
        note = h("span", { class: "why small muted", id: `scenario-next-why-${i}` });
        form.append(note);
        button.setAttribute("aria-describedby", note.id);
      }
      if (note) note.textContent = why;
      button.disabled = !!why;
    });
  }

  // ---- dispatch ----------------------------------------------------------------
  function handle(m) {
    handlingLive = !olderThanPage(m);
    switch (m.type) {
      case "reset": rendered = 0; reset(m); return;
      case "state": onState(m); return;
      case "controller": onController(m); return;
      case "dropped":
        addRow(h("li", { class: "row notice", "data-db": "" }, m.message || "some steps were dropped"));
        return;
      case "event": onEvent(m); break;
      case "reconcile.start": onStart(m); break;
      default:
        if (m.reconcileID) onStep(m);
    }
    if (olderThanPage(m)) notePast(); else light(m);
  }
  // The past a fresh stream replays first is drawn on the timeline, not
  // played on the loop: the loop lights up only for what happens now, and
  // its caption says meanwhile that the timeline is catching up.
  let pastDrawn = 0;
  let pastFrame = null;
  let pastDone = null;
  function notePast() {
    pastDrawn++;
    // No message marks the end of the past; a pause in it does.
    clearTimeout(pastDone);
    pastDone = setTimeout(() => {
      cancelAnimationFrame(pastFrame);
      pastFrame = null;
      sayPast(`caught up: ${pastDrawn} steps of the past on the timeline; the loop lights up at the next event`);
    }, 400);
    if (pastFrame) return;
    pastFrame = requestAnimationFrame(() => {
      pastFrame = null;
      sayPast(`catching up: ${pastDrawn} steps of the past drawn on the timeline…`);
    });
  }
  function sayPast(text) {
    const cap = $("#loop-caption");
    // While paused the caption says why the loop stands still.
    if (cap && !lightTimer && root.dataset.paused !== "true") cap.textContent = text;
  }

  // ---- playback: pause, step, slow motion -------------------------------------
  // Every message goes through the player's queue. Live at 1× it is shown
  // the moment it arrives; paused, it waits (the counter says how many);
  // in slow motion or in a replay each step is given time on screen.
  const player = { queue: [], paused: false, speed: 1, timer: null, done: null };
  const pauseBtn = $("#play-pause");
  const stepBtn = $("#play-step");
  const speedSel = $("#play-speed");
  const waitingEl = $("#play-waiting");
  const stepWhy = $("#play-step-why");
  const MAX_WAITING = 20000;
  const takesTime = (m) => m.type !== "state" && m.type !== "reset";

  function push(msgs) {
    for (const m of msgs) if (aheadOfPresenter(m)) drawAhead(m);
    player.queue.push(...msgs);
    if (player.queue.length > MAX_WAITING) {
      // Paused for very long under a storm: catch up rather than hold it all.
      while (player.queue.length) handle(player.queue.shift());
    }
    pump();
  }
  // A learner who starts following while the presenter is paused gets each
  // object's latest state only (the stream keeps no older card), which may
  // be past the presenter's step. Rather than no card at all, the card is
  // drawn as it is now, and says so, until the presenter's timeline
  // reaches a state of it.
  function aheadOfPresenter(m) {
    return follow.view && held(m) && m.type === "state" && m.state && m.state.html && m.object.kind === "Database"
      && !document.getElementById("db-" + m.object.name);
  }
  function drawAhead(m) {
    onDatabase(m);
    const st = $(`#db-${CSS.escape(m.object.name)} .db-state`);
    if (st) st.prepend(h("p", { class: "ahead small" }, "Drawn as it is now: the presenter's timeline has not reached this state yet."));
  }
  function paced() { return mode === "replay" || player.speed < 1; }
  function gapAfter(m) {
    const next = player.queue.find(takesTime);
    let gap = next ? new Date(next.time) - new Date(m.time) : 0;
    if (isNaN(gap)) gap = 200;
    if (mode === "replay") return Math.max(30, Math.min(gap, 1500)) / player.speed;
    return Math.max(200, Math.min(gap, 2000)) / player.speed;
  }
  // held: the message waits. A follower shows what the presenter shows: up
  // to the presenter's step while they are paused, everything otherwise.
  function held(m) {
    if (follow.view) return follow.view.paused && (m.seq || 0) > follow.view.seq;
    return player.paused;
  }
  function pump() {
    while (!player.timer && player.queue.length && !held(player.queue[0])) {
      const m = player.queue.shift();
      show(m);
      if (paced() && takesTime(m)) player.timer = setTimeout(() => { player.timer = null; pump(); }, gapAfter(m));
    }
    showWaiting();
    if (!player.queue.length && !player.timer && player.done) player.done();
  }
  let shown = 0; // steps shown, for the tests and the counter
  let shownSeq = 0; // the last message shown: where a presenter's timeline is
  function show(m) {
    if (m.seq) { shownSeq = m.seq; root.dataset.shownSeq = String(m.seq); }
    handle(m);
    if (takesTime(m)) root.dataset.shown = String(++shown);
    if (mode === "replay" && m.time) replayNow = new Date(m.time).getTime();
  }
  // stepOnce shows the next step (and the states before it), and pauses.
  function stepOnce() {
    setPaused(true);
    clearTimeout(player.timer);
    player.timer = null;
    while (player.queue.length) {
      const m = player.queue.shift();
      show(m);
      if (takesTime(m)) break;
    }
    showWaiting();
    tellView();
  }
  function setPaused(p) {
    player.paused = p;
    if (pauseBtn) {
      pauseBtn.textContent = p ? "Unfreeze timeline" : "Freeze timeline";
      pauseBtn.setAttribute("aria-pressed", String(p));
    }
    root.dataset.playback = p ? "paused" : "playing";
    if (!p) pump();
    showWaiting();
    tellView();
  }
  function showWaiting() {
    const n = player.queue.filter(takesTime).length;
    showStep(n);
    if (!waitingEl) return;
    waitingEl.hidden = n === 0;
    waitingEl.textContent = `${n} new step${n === 1 ? "" : "s"} waiting`;
    root.dataset.waiting = String(n);
  }
  // showStep enables Step only when there is a step to show, n of them
  // waiting while the timeline is frozen or slowed, and says why not beside
  // it.
  function showStep(n) {
    if (!stepBtn) return;
    let why = "";
    if (!player.paused && !paced()) why = "Nothing to step: the timeline is live, each step shows as it comes. Freeze it to step through new ones.";
    else if (n === 0) why = mode === "replay" ? "Nothing to step: every step is shown." : "Nothing to step: no new step is waiting.";
    const off = why !== "";
    if (off && document.activeElement === stepBtn) pauseBtn?.focus(); // a disabled button drops the focus
    stepBtn.disabled = off;
    if (stepWhy && stepWhy.textContent !== why) stepWhy.textContent = why;
  }
  function setupPlayer() {
    const bar = $(".player");
    if (bar) bar.hidden = false;
    pauseBtn?.addEventListener("click", () => setPaused(!player.paused));
    stepBtn?.addEventListener("click", stepOnce);
    speedSel?.addEventListener("change", () => {
      player.speed = Number(speedSel.value) || 1;
      showWaiting();
      if (!paced() && !player.paused) { clearTimeout(player.timer); player.timer = null; pump(); }
      tellView();
    });
    // Single-key shortcuts work only while focus is in the timeline
    // (WCAG 2.1.4), so they never fire while the learner types elsewhere
    // or a screen reader uses letter keys to move around the page.
    $(".timeline")?.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.target.closest("input, select, textarea, [contenteditable]")) return;
      // Following, the presenter steers the timeline: the keys wait, as
      // the player's buttons (hidden then) do.
      if (followNs) return;
      const k = e.key.toLowerCase();
      if (k === "p") { setPaused(!player.paused); e.preventDefault(); }
      if (k === "n") { stepOnce(); e.preventDefault(); }
    });
  }

  // ---- live: the websocket ---------------------------------------------------------
  let lastSeq = 0;
  let classroomSeq = 0;
  let classroomTimer = null;
  let reopen = () => {};
  function connect() {
    const status = $("#stream-status");
    let delay = 1000;
    let ws = null;
    let retry = null;
    function open() {
      clearTimeout(retry);
      const proto = location.protocol === "https:" ? "wss:" : "ws:";
      const q = new URLSearchParams();
      if (followNs) q.set("follow", "presenter");
      if (lastSeq > 0) q.set("since", String(lastSeq));
      const qs = q.toString() ? "?" + q : "";
      const sock = new WebSocket(`${proto}//${location.host}${look || "/ws"}${qs}`);
      let opened = false;
      ws = sock;
      sock.onopen = () => {
        opened = true;
        delay = 1000;
        if (status) status.textContent = followNs ? "live, following" : "live";
        root.dataset.stream = "open";
      };
      sock.onmessage = (e) => {
        if (ws !== sock) return; // replaced by the other stream
        let batch;
        try { batch = JSON.parse(e.data); } catch (err) { return; }
        batch = Array.isArray(batch) ? batch : [batch];
        const shown = [];
        for (const m of batch) {
          // After a reset the server may count from 1 again.
          if (m.type === "reset") { lastSeq = 0; classroomSeq = 0; }
          else if (m.seq > lastSeq) lastSeq = m.seq;
          // The classroom's state is never held by the player: it is what
          // tells a follower where the presenter's player is. A fresh
          // stream replays the recent ones; only the newest counts.
          if (m.type === "state" && m.object && m.object.kind === "Classroom") {
            if (classroom && m.seq > classroomSeq) {
              classroomSeq = m.seq;
              const st = m.state;
              clearTimeout(classroomTimer);
              classroomTimer = setTimeout(() => classroom.receive(st), 50);
            }
            continue;
          }
          shown.push(m);
        }
        root.dataset.seq = String(lastSeq);
        push(shown);
        for (const m of shown) document.dispatchEvent(new CustomEvent("oplab:message", { detail: m }));
      };
      sock.onclose = () => {
        if (ws !== sock) return; // replaced by the other stream
        root.dataset.stream = "closed";
        // A presentation that ended before the follow stream opened (409):
        // back to the own stream, whose classroom state says what next.
        if (followNs && !opened) {
          switchStream(""); // it opens the own stream
          return;
        }
        if (status) status.textContent = `reconnecting in ${Math.round(delay / 1000)}s…`;
        retry = setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
    reopen = () => {
      clearTimeout(retry);
      const old = ws;
      ws = null;
      if (old) old.close();
      delay = 1000;
      open();
    };
    open();
  }

  // ---- live: forms sent with fetch -------------------------------------------------
  function flash(ok, message, field, form) {
    const box = $("#flash");
    $$(".invalid").forEach((e) => e.classList.remove("invalid"));
    if (!box) return;
    box.replaceChildren(h("p", { class: "flash " + (ok ? "flash-ok" : "flash-error"), "data-field": field || "" }, message));
    if (!ok && field && form) {
      const input = form.querySelector(`[name="${CSS.escape(field)}"]`);
      if (input) { input.classList.add("invalid"); input.focus(); }
    }
  }
  // settle makes what was sent the form's new baseline, so the next
  // fragment may replace it: the learner is no longer editing it.
  function settle(form) {
    $$("input", form).forEach((el) => { el.defaultValue = el.value; });
    $$("option", form).forEach((o) => { o.defaultSelected = o.selected; });
    if (!skipped.has(form) || !form.isConnected || editing(form)) return;
    const card = form.closest("article.db");
    const fresh = card && latestActions.get(card.id);
    const part = fresh && $(`:scope > [data-part="${form.dataset.part}"]`, fresh);
    if (part) drawPart(form, part);
  }
  function enhanceForm(form) {
    if (form.dataset.enhanced) return;
    form.dataset.enhanced = "1";
    form.addEventListener("submit", async (e) => {
      if (e.submitter && e.submitter.getAttribute("formmethod") === "get") return; // preview without JS
      e.preventDefault();
      // Where the form is now: a card's part may be drawn anew before the
      // answer comes, leaving this form out of the page.
      const scenario = form.closest(".scenario");
      const card = form.closest("article.db");
      const created = form.id === "create-form" ? (form.elements.name?.value || "") : "";
      // Resume runs what the pause held: the first card it changes is what
      // the learner caused (its state may come before the answer does).
      const resumes = !scenario && form.querySelector('[data-controller="start"]');
      if ((scenario || card || created || resumes) && mode === "live" && !followNs) {
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
      const buttons = $$("button", form);
      buttons.forEach((b) => { b.disabled = true; });
      const busy = form.dataset.busy;
      if (busy) flash(true, busy);
      try {
        const resp = await fetch(form.action, {
          method: "POST", body: new URLSearchParams(new FormData(form)),
          headers: { Accept: "application/json" }, credentials: "same-origin",
        });
        let res;
        try { res = await resp.json(); } catch (err) { res = { ok: false, message: `${resp.status} ${resp.statusText}` }; }
        flash(res.ok, res.message, res.field, form);
        if (res.ok && created) {
          // As after the page's own post: the next Database needs its own
          // name, and gets no pitfall unless the learner picks one again.
          form.elements.name.value = "";
          form.elements.pitfall.value = "";
          form.dispatchEvent(new Event("input"));
        }
        if (res.ok) settle(form);
        // controllerRunning is "reconciles this namespace"; paused says why not.
        if (typeof res.paused === "boolean") showPaused(res.paused);
        if (typeof res.controllerRunning === "boolean" && !res.paused) showController(res.controllerRunning);
        if (res.ok && scenario && !form.dataset.reveal) {
          form.remove();
          $(".scenario .watch")?.classList.remove("pending");
          const next = $(".scenario .scenario-next");
          if (next) next.hidden = false;
          const u = new URL(location.href);
          u.searchParams.set("ready", "1");
          history.replaceState(null, "", u);
        }
        if (res.ok) revealAfter(created, scenario || card);
      } catch (err) {
        flash(false, "The request failed: " + err.message);
      } finally {
        buttons.forEach((b) => { b.disabled = false; });
        // Pause and Resume stay disabled while they do not apply, and so
        // does a scenario's step that no longer does.
        if (form.querySelector("[data-controller]")) drawControllerPill();
        if (scenario) markScenarioNext();
      }
    });
  }
  // ---- see what you caused: after an action, what it changes is on screen ----------
  // On a wide screen the timeline keeps to the top of the screen beside the
  // Databases (lab.css), so its newest rows are in view wherever the page
  // is scrolled. What is left is the card: an action taken at the bottom of
  // a tall card changes fields at its top. So the page brings the card's top
  // into view; after a create, the new card once it is drawn; after a
  // scenario's step, its panel, with the Databases under it.
  //
  // For a few seconds after, the card keeps its place: as the state comes
  // in, the card grows, and the browser's scroll anchoring would keep the
  // button that was pressed in place instead, pushing the card's top up
  // and out of view. So anchoring is off for the page (not for the
  // timeline's own box) until the card has settled.
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
    document.documentElement.style.overflowAnchor = "none";
    clearTimeout(anchorTimer);
    anchorTimer = setTimeout(unreveal, SETTLE_MS);
  }
  function unreveal() {
    clearTimeout(anchorTimer);
    document.documentElement.style.overflowAnchor = "";
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
  for (const type of ["wheel", "touchstart", "pointerdown"]) window.addEventListener(type, moved, { passive: true });
  window.addEventListener("keydown", (e) => { if (/^(Page|Arrow|Home|End|Tab| )/.test(e.key)) moved(); }, { passive: true });
  // revealAfter follows a form's answer: created names the Database a
  // create made, where the card or scenario panel the form was in. Nothing
  // moves if the learner has scrolled or pointed elsewhere meanwhile.
  function revealAfter(created, where) {
    if (mode !== "live" || followNs || !revealIntent) return;
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
  function revealDrawn(card) {
    if (!revealIntent || !revealName || (revealName !== ANY_CARD && card.dataset.name !== revealName)) return;
    revealName = "";
    reveal(card);
  }

  function enhanceAll(el) {
    if (mode !== "live") return;
    if (el.matches && el.matches("form.act")) enhanceForm(el);
    $$("form.act", el).forEach(enhanceForm);
  }

  // The YAML preview follows the create form as it is typed.
  function livePreview() {
    const form = $("#create-form");
    const pre = $("#preview");
    if (!form || !pre) return;
    let timer;
    form.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const q = new URLSearchParams(new FormData(form));
        const resp = await fetch("/lab/preview?" + q, { credentials: "same-origin" });
        const text = await resp.text();
        pre.textContent = resp.ok ? text : "# " + text;
      }, 200);
    });
  }

  // ---- the focused layout: loop, selected card and newest rows on one screen -------
  function setupLayout() {
    const btn = $("#layout-toggle");
    if (!btn) return;
    btn.hidden = false;
    const apply = (focus) => {
      root.dataset.layout = focus ? "focus" : "";
      btn.setAttribute("aria-pressed", String(focus));
    };
    const wanted = new URL(location.href).searchParams.get("layout");
    let focus = wanted ? wanted === "focus" : window.oplab.store.text("oplab.layout") === "focus";
    apply(focus);
    btn.addEventListener("click", () => {
      focus = !focus;
      apply(focus);
      window.oplab.store.saveText("oplab.layout", focus ? "focus" : "");
    });
  }

  // ---- replay ------------------------------------------------------------------------
  function replay() {
    const data = JSON.parse($("#replay-data").textContent);
    const msgs = data.messages || [];
    const status = $("#stream-status");
    let shown = 0;
    const count = () => { if (status) status.textContent = `${shown} / ${msgs.length}`; };
    const showOne = show;
    show = (m) => { showOne(m); shown++; count(); root.dataset.seq = String(m.seq || 0); };
    function restart() {
      shown = 0;
      reset({ message: "replaying from the start" });
      dbList?.replaceChildren();
      $("#snapshots")?.replaceChildren();
      const kept = $("#kept");
      if (kept) kept.hidden = true;
      player.queue = msgs.slice();
      setPaused(false);
    }
    player.done = () => { if (pauseBtn) pauseBtn.textContent = "Replay"; };
    pauseBtn?.addEventListener("click", (e) => {
      if (!player.queue.length && !player.timer) { e.stopImmediatePropagation(); restart(); }
    }, true);
    $("#replay-all")?.addEventListener("click", () => {
      clearTimeout(player.timer);
      player.timer = null;
      while (player.queue.length) show(player.queue.shift());
      showWaiting();
      player.done();
    });
    restart();
  }

  // ---- the classroom: following the presenter, or being followed -------------------
  // Looking at a learner's lab, the instructor follows nobody.
  const classroom = mode === "live" && !look ? window.oplabClassroom : null;
  const follow = { view: null, name: "", ownPaused: false };
  const objectsH = $("#objects-h");
  const ownHeading = objectsH ? objectsH.textContent : "";
  const backLine = $("#follow-back");
  // playerNote says, in the player's place, who steers the timeline.
  const playerNote = h("span", { id: "follow-player", class: "follow-player small", hidden: "" });
  $(".player")?.prepend(playerNote);

  // clearView empties what the stream drew, before another namespace's
  // stream draws its own.
  function clearView(message) {
    player.queue = [];
    clearTimeout(player.timer);
    player.timer = null;
    lastSeq = 0;
    reset({ message });
    nextRun.clear();
    failures.clear();
    dbList?.replaceChildren();
    $("#snapshots")?.replaceChildren();
    const kept = $("#kept");
    if (kept) kept.hidden = true;
    if (filterEl) { $$("option", filterEl).forEach((o) => { if (o.value) o.remove(); }); filterEl.value = ""; }
    showWaiting();
  }
  // displayed is whether el takes part in the page, so can hold the focus.
  const displayed = (el) => !!el && el.isConnected && el.getClientRects().length > 0;
  // switchStream shows the presenter's lab alone (ns), or the learner's own
  // (""). The learner's own controls are not shown inside the presenter's
  // lab (lab.css), and the filter only says what the presenter selected;
  // one line in the create form's place leads back.
  function switchStream(ns) {
    if (ns === followNs) return;
    rendered = 0;
    const focused = document.activeElement;
    if (ns && !followNs) follow.ownPaused = root.dataset.paused === "true";
    followNs = ns;
    clearView(ns ? `following ${follow.name}'s lab` : "back in your own namespace");
    root.dataset.following = ns ? "presenter" : "";
    if (objectsH) objectsH.textContent = ns ? `${follow.name}'s Databases (read-only)` : ownHeading;
    if (backLine) backLine.hidden = !ns;
    // A flash speaks of the lab it came from ("Created Database x: watch
    // its first reconcile"): it goes with that lab.
    $("#flash")?.replaceChildren();
    if (filterEl) filterEl.disabled = !!ns;
    playerNote.hidden = !ns;
    playerNote.textContent = ns ? `${follow.name} steers this timeline.` : "";
    // The stream's replay says whether the presenter's namespace is paused.
    showPaused(ns ? false : follow.ownPaused);
    if (!ns) {
      follow.view = null;
      player.speed = Number(speedSel?.value) || 1;
      setPaused(false);
    }
    // Focus never falls to the page's start with what held it: it moves to
    // the way back while following, and to the own create form after.
    if (focused && focused !== document.body && root.contains(focused) && !displayed(focused)) {
      (ns ? $("#follow-back-button") : $("details.create > summary"))?.focus();
    }
    reopen();
  }
  // followView puts the player, the filter and the selected card where the
  // presenter's are.
  function followView(v) {
    follow.view = v ? { paused: !!v.paused, seq: v.seq || 0 } : null;
    if (!v) return;
    player.speed = v.speed || 1;
    playerNote.textContent = `${follow.name} steers this timeline: ` +
      (v.paused ? "paused." : player.speed === 1 ? "live." : `${player.speed}× slow motion.`);
    if (speedSel) speedSel.value = String(player.speed);
    if (pauseBtn) {
      pauseBtn.textContent = v.paused ? "Unfreeze timeline" : "Freeze timeline";
      pauseBtn.setAttribute("aria-pressed", String(!!v.paused));
    }
    root.dataset.playback = v.paused ? "paused" : "playing";
    if (filterEl && filterEl.value !== (v.selected || "")) {
      knowObject(v.selected);
      filterEl.value = v.selected || "";
      $$("#rows > li").forEach(applyFilter);
      markSelected();
      showCountdown();
    }
    pump();
  }

  // here is the page as followers should see it: the lab and its scenario.
  function here() {
    const sc = new URL(location.href).searchParams.get("scenario");
    return "/lab" + (sc ? "?scenario=" + encodeURIComponent(sc) : "");
  }
  let tellTimer = null;
  // tellView reports the presenter's view; the server takes it from the
  // presenter's session only and passes it on at most ten times a second.
  function tellView() {
    if (!classroom || !classroom.isPresenter()) return;
    clearTimeout(tellTimer);
    tellTimer = setTimeout(() => {
      fetch("/lab/present", {
        method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ selected: filterEl ? filterEl.value : "", path: here(), paused: player.paused, seq: shownSeq, speed: player.speed }),
      }).catch(() => {});
    }, 30);
  }

  let presentedSince = null;
  function onClassroom(s) {
    const presenter = classroom.isPresenter();
    root.dataset.presenting = String(presenter);
    if (presenter && presentedSince !== s.since) { presentedSince = s.since; tellView(); }
    if (!presenter) presentedSince = null;
    if (classroom.following()) {
      follow.name = s.name || "the presenter";
      switchStream(s.namespace);
      followView(s.view);
    } else {
      switchStream("");
    }
  }
  function setupClassroom() {
    if (!classroom) return;
    classroom.onChange(onClassroom);
    // Acting in one's own lab breaks away from the presenter, as in VS
    // Code's Live Share. Following, the own forms and player are hidden
    // (lab.css); this still holds for any own form shown meanwhile.
    root.addEventListener("click", (e) => {
      if (followNs && e.target.closest("form.act, .player button, #filter, details.create > summary")) classroom.breakAway();
    }, true);
    // The way back in the create form's place: break away, and the form
    // is there again, with the focus on it.
    $("#follow-back-button")?.addEventListener("click", () => classroom.breakAway());
  }

  // ---- projector mode: big type, one screen, for the back of the room --------------
  function setupProjector() {
    const btn = $("#projector-toggle");
    if (!btn) return;
    btn.hidden = false;
    const layoutBtn = $("#layout-toggle");
    const apply = (on) => {
      root.dataset.projector = String(on);
      btn.setAttribute("aria-pressed", String(on));
      if (on) root.dataset.layout = "focus";
      else root.dataset.layout = layoutBtn?.getAttribute("aria-pressed") === "true" ? "focus" : "";
    };
    const wanted = new URL(location.href).searchParams.get("projector");
    let on = wanted !== null ? wanted === "1" : root.dataset.projector === "true" || window.oplab.store.text("oplab.projector") === "1";
    apply(on);
    btn.addEventListener("click", () => {
      on = !on;
      apply(on);
      window.oplab.store.saveText("oplab.projector", on ? "1" : "");
    });
  }

  setupPlayer();
  setupLayout();
  setupProjector();
  if (mode === "replay") {
    replay();
    return;
  }
  // Looking over a learner's shoulder, no form of the page is sent: the
  // forms are hidden (classroom.css), and one that shows anyway is stopped
  // here before any other handler sees it.
  if (look) {
    root.addEventListener("submit", (e) => { e.preventDefault(); e.stopImmediatePropagation(); }, true);
    for (const f of $$("form", root)) for (const el of f.elements) el.disabled = true;
  }
  enhanceAll(document);
  markSelected();
  livePreview();
  setupClassroom();
  connect();
  // Watching is using: keep the session (and its namespace) alive while the
  // page is open and visible.
  if (!look) setInterval(() => {
    if (document.visibilityState === "visible") fetch("/lab/ping", { credentials: "same-origin" }).catch(() => {});
  }, 5 * 60 * 1000);
})();
