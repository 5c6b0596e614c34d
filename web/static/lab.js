// lab.js: makes /lab live. The page works without it (forms POST and
// redirect); with it, forms are sent with fetch, and the timeline, the loop
// diagram and the object panels follow the /ws stream. On /lab/replay it
// plays an exported timeline back through the same drawing code.
"use strict";
(function () {
  const root = document.getElementById("lab");
  if (!root) return;
  const mode = root.dataset.mode; // live | replay | upload
  if (mode === "upload") return;

  // ---- small DOM helpers: text always goes through textContent ----------
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  const $ = (sel, el) => (el || document).querySelector(sel);
  const $$ = (sel, el) => Array.from((el || document).querySelectorAll(sel));
  function clock(t) {
    if (!t || t.startsWith("0001-")) return "";
    const d = new Date(t);
    return isNaN(d) ? "" : d.toLocaleTimeString([], { hour12: false });
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
  const readyClass = (s) => (s === "True" ? "ok" : s === "False" ? "bad" : "unknown");
  // conditionClass mirrors the page's: Ready=True is good, Degraded=True bad.
  function conditionClass(type, s) {
    if (type === "Ready") return readyClass(s);
    if (type === "Degraded") return s === "True" ? "bad" : s === "False" ? "ok" : "";
    return "";
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
      case "action": return `${m.action} ${m.target ? m.target.kind + " " + m.target.name : ""}: ${m.outcome}`;
      case "finalizer": return `finalizer: ${m.phase}`;
      case "status": return m.skipped ? "status unchanged: write skipped" : `status written, observedGeneration ${m.observedGeneration || 0}`;
      case "result": return m.message || m.result;
    }
    return "";
  }

  // ---- the timeline --------------------------------------------------------
  const rowsEl = $("#rows");
  const filterEl = $("#filter");
  const pending = new Map(); // database → events seen since its last reconcile
  const rows = new Map();    // reconcileID → row
  const MAX_ROWS = 400;

  function addRow(el) {
    rowsEl.prepend(el);
    applyFilter(el);
    while (rowsEl.children.length > MAX_ROWS) rowsEl.lastElementChild.remove();
  }
  function applyFilter(el) {
    const want = filterEl ? filterEl.value : "";
    el.hidden = !!want && el.dataset.db !== want && el.dataset.db !== "";
  }
  if (filterEl) filterEl.addEventListener("change", () => $$("#rows > li").forEach(applyFilter));
  function knowObject(name) {
    if (!filterEl || !name || $$("option", filterEl).some((o) => o.value === name)) return;
    filterEl.append(h("option", { value: name }, name));
  }

  function eventLine(m) {
    return h("li", { class: m.ignored ? "ev ignored" : "ev" },
      h("span", { class: "t" }, clock(m.time)), " ",
      h("span", { class: "kind" }, m.object.kind), ` ${m.object.name} `, h("b", {}, m.event),
      m.generation ? ` (generation ${m.generation})` : "",
      m.ignored ? h("span", { class: "pill warn small" }, "ignored: " + (m.pitfall || "dropped")) : "");
  }

  // pendingRow shows events waiting for a reconcile (or ignored), so that
  // dropped events and a stopped controller are visible as they happen.
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
    const ignored = p.events.filter((e) => e.ignored).length;
    p.el.replaceChildren(
      h("div", { class: "row-head" },
        h("span", { class: "t" }, clock(p.events[0].time)), " ",
        h("b", {}, db), " ",
        h("span", { class: "pill" }, `${p.events.length} event${p.events.length > 1 ? "s" : ""}`),
        ignored ? h("span", { class: "pill warn" }, `${ignored} ignored`) : h("span", { class: "muted small" }, " waiting for a reconcile…")),
      h("ul", { class: "events" }, p.events.map(eventLine)));
  }

  function onStart(m) {
    const db = dbOf(m);
    knowObject(db);
    const p = pending.get(db);
    pending.delete(db);
    if (p) p.el.remove();
    const events = p ? p.events : [];
    const row = {
      db, start: m, steps: [], events,
      el: h("li", { class: "row", "data-db": db, "data-reconcile": m.reconcileID }),
    };
    rows.set(m.reconcileID, row);
    if (rows.size > MAX_ROWS * 2) rows.delete(rows.keys().next().value);
    drawRow(row);
    addRow(row.el);
  }

  function triggerLabel(row) {
    const used = row.events.filter((e) => !e.ignored).length;
    if (row.start.trigger === "event" || used > 0) {
      return used > 1 ? `${used} events → 1 reconcile` : "1 event → 1 reconcile";
    }
    return row.start.trigger || "requeue";
  }

  function drawRow(row) {
    const res = row.result;
    let resultPill = h("span", { class: "pill small running" }, "running…");
    if (res) {
      const cls = res.result === "error" ? "bad" : res.result === "requeue" ? "warn" : "ok";
      let text = res.result;
      if (res.requeueAfterNs) text += res.result === "error" ? `, backoff ${dur(res.requeueAfterNs)}` : ` · next in ${dur(res.requeueAfterNs)}`;
      resultPill = h("span", { class: `pill ${cls} result` }, text);
    }
    const hasError = row.steps.some((s) => s.error || s.outcome === "Error") || (res && res.result === "error");
    row.el.classList.toggle("error", !!hasError);
    row.el.replaceChildren(
      h("div", { class: "row-head" },
        h("span", { class: "t" }, clock(row.start.time)), " ",
        h("b", { class: "db-name" }, row.db), " ",
        h("span", { class: "pill trigger" }, triggerLabel(row)),
        row.start.pitfall ? h("span", { class: "pill warn small" }, "pitfall: " + row.start.pitfall) : "",
        " ", resultPill,
        res && res.durationNs ? h("span", { class: "muted small" }, " " + dur(res.durationNs)) : ""),
      row.events.length ? h("details", { class: "coalesced" },
        h("summary", {}, `${row.events.length} watch event${row.events.length > 1 ? "s" : ""} before this reconcile`),
        h("ul", { class: "events" }, row.events.map(eventLine))) : "",
      h("ol", { class: "steps" }, row.steps.map(stepLine)),
      res && (res.message || res.error) ? h("p", { class: res.error ? "error small" : "muted small" }, res.error || res.message) : "");
  }

  function stepLine(s) {
    const li = (cls, ...kids) => h("li", { class: "step " + s.type + " " + (cls || "") }, h("span", { class: "st" }, s.type), " ", ...kids,
      s.error ? h("span", { class: "error" }, " " + s.error) : "");
    switch (s.type) {
      case "fetch":
        return li("", `Database ${s.found}`, s.generation ? ` (generation ${s.generation})` : "");
      case "diff":
        return li("", (s.differences && s.differences.length) ? s.differences.join("; ") : (s.message || "in sync: nothing to do"));
      case "action": {
        const target = s.target ? `${s.target.kind} ${s.target.name}` : "";
        const cls = s.outcome === "Error" ? "bad" : s.outcome === "Unchanged" || s.outcome === "AlreadyExists" ? "" : "ok";
        return li("", `${s.action} ${target} → `, h("span", { class: "pill small " + cls }, s.outcome || "?"));
      }
      case "finalizer":
        return li("", h("b", {}, s.phase), s.message ? " — " + s.message : "");
      case "status":
        if (s.skipped) return li("muted", "unchanged: write skipped", s.observedGeneration ? ` (observedGeneration ${s.observedGeneration})` : "");
        return li("", `written, observedGeneration ${s.observedGeneration || 0}: `,
          (s.conditions || []).map((c) => h("span", { class: "cond" + (c.transition ? " transition" : "") },
            `${c.type} ${c.from ? c.from + "→" : ""}${c.to} (${c.reason}) `)));
      default:
        return li("", s.message || "");
    }
  }

  function onStep(m) {
    let row = rows.get(m.reconcileID);
    if (!row) {
      // Its start fell out of the recorder's history before we connected:
      // draw the rest of the reconcile under a placeholder start.
      onStart(Object.assign({}, m, { type: "reconcile.start", trigger: "started earlier" }));
      row = rows.get(m.reconcileID);
    }
    if (m.type === "result") row.result = m;
    else row.steps.push(m);
    drawRow(row);
  }

  function showController(running) {
    const pill = $("#controller-status");
    if (!pill) return;
    pill.textContent = running ? "Controller running" : "Controller stopped";
    pill.classList.toggle("ok", running);
    pill.classList.toggle("bad", !running);
  }
  function onController(m) {
    if (m.object && m.object.kind === "ControlPlane") {
      // A control-plane process went down or came back: say so in the
      // timeline, and leave the controller's own pill alone.
      const up = m.phase === "control-plane-restarted";
      addRow(h("li", { class: "row controller", "data-db": "" },
        h("div", { class: "row-head" }, h("span", { class: "t" }, clock(m.time)), " ",
          h("span", { class: "pill " + (up ? "ok" : "bad") }, m.object.name + (up ? " back" : " down")), " ", m.message || "")));
      return;
    }
    const running = m.phase === "started";
    showController(running);
    addRow(h("li", { class: "row controller", "data-db": "" },
      h("div", { class: "row-head" }, h("span", { class: "t" }, clock(m.time)), " ",
        h("span", { class: "pill " + (running ? "ok" : "bad") }, "controller " + (m.phase || "")), " ", m.message || "")));
  }

  function reset(m) {
    pending.clear();
    rows.clear();
    rowsEl.replaceChildren(h("li", { class: "row notice", "data-db": "" }, "Timeline restarted: " + (m.message || "the resume point was lost") + "."));
  }

  // ---- object panels ---------------------------------------------------------
  function renderState(d) {
    const kids = [];
    kids.push(h("header", { class: "db-head" }, h("h3", {}, d.name),
      h("span", { class: "pill " + readyClass(ready(d)) }, "Ready " + (ready(d) || "Unknown")),
      d.terminating ? h("span", { class: "pill warn" }, "Terminating") : "",
      d.pitfall ? h("span", { class: "pill warn" }, "pitfall: " + d.pitfall) : ""));
    kids.push(h("div", { class: "gen" },
      h("span", {}, "metadata.generation ", h("b", { class: "generation" }, d.generation)),
      h("span", {}, "status.observedGeneration ", h("b", { class: "observed" }, d.observedGeneration)),
      d.stale ? h("span", { class: "pill warn stale" }, `stale: the status describes generation ${d.observedGeneration}`)
        : h("span", { class: "pill ok" }, "up to date")));
    kids.push(h("p", { class: "spec small" }, `${d.engine} ${d.version || "(default version)"} · replicas ${d.replicas} · ready ${d.readyReplicas}`,
      d.endpoint ? [" · endpoint ", h("code", {}, d.endpoint)] : ""));
    if (d.terminating) {
      kids.push(h("p", { class: "terminating" }, `Terminating since ${clock(d.deletionTimestamp)}. `,
        d.heldBy && d.heldBy.length ? ["Held by the finalizer ", h("code", {}, d.heldBy[0]),
          ": the API server will not remove the object until it is gone from metadata.finalizers."] : ""));
    }
    kids.push(h("p", { class: "finalizers small" }, "Finalizers: ",
      d.finalizers && d.finalizers.length ? d.finalizers.map((f) => h("code", {}, f)) : h("span", { class: "muted" }, "none")));
    const body = [];
    for (const c of d.conditions || []) {
      body.push(h("tr", {}, h("td", {}, c.type), h("td", { class: conditionClass(c.type, c.status) }, c.status), h("td", {}, c.reason),
        h("td", {}, c.message || ""), h("td", {}, clock(c.lastTransitionTime)), h("td", {}, c.observedGeneration)));
      if (c.history && c.history.length > 1) {
        body.push(h("tr", { class: "history" }, h("td", { colspan: "6" }, h("details", {},
          h("summary", {}, `${c.type}: ${c.history.length} values seen`),
          h("ol", {}, c.history.map((x) => h("li", {}, `${clock(x.seen)} `, h("b", {}, x.status), ` ${x.reason} (gen ${x.observedGeneration})`,
            x.transition ? h("span", { class: "pill small" }, "transition") : "")))))));
      }
    }
    kids.push(h("table", { class: "conditions" },
      h("thead", {}, h("tr", {}, ["Condition", "Status", "Reason", "Message", "Last transition", "Gen"].map((t) => h("th", {}, t)))),
      h("tbody", {}, body)));
    kids.push(h("div", { class: "tree-wrap" }, h("h4", {}, "Owner tree"),
      h("ul", { class: "tree" },
        h("li", {}, h("span", { class: "kind" }, "Database"), " " + d.name, tree(d.owned)),
        (d.unowned || []).map((n) => h("li", { class: "unowned" }, h("span", { class: "kind" }, n.kind), ` ${n.name} `, h("span", { class: "muted small" }, n.note || ""))))));
    if (d.events && d.events.length) {
      kids.push(h("details", { class: "events" }, h("summary", {}, `Events (${d.events.length})`),
        h("table", {}, d.events.map((e) => h("tr", { class: e.type === "Warning" ? "bad" : "" },
          h("td", {}, clock(e.last)), h("td", {}, e.type), h("td", {}, e.reason), h("td", {}, e.message), h("td", {}, e.count > 1 ? "×" + e.count : ""))))));
    }
    return kids;
  }
  function ready(d) {
    const c = (d.conditions || []).find((x) => x.type === "Ready");
    return c ? c.status : "";
  }
  function tree(nodes) {
    if (!nodes || !nodes.length) return "";
    return h("ul", {}, nodes.map((n) => h("li", { class: n.deleting ? "deleting" : "" },
      h("span", { class: "kind" }, n.kind), ` ${n.name} `, h("span", { class: "muted small" }, n.summary),
      n.deleting ? h("span", { class: "pill warn small" }, "deleting") : "", tree(n.children))));
  }

  // snapshotItem mirrors keptSnapshot in view.templ.
  function snapshotItem(s) {
    return h("li", { class: "snapshot", id: "snap-" + s.name, "data-name": s.name },
      h("span", { class: "kind" }, "ConfigMap"), " ", h("b", {}, s.name), " ",
      h("span", { class: "from" }, "from Database ", h("code", {}, s.database), `, generation ${s.generation}, taken ${clock(s.time)}`), " ",
      h("span", { class: "muted small note" }, s.note || ""));
  }
  // onSnapshot keeps "Snapshots kept after delete" current: a state names a
  // final snapshot whose Database is gone; a nil state removes it.
  function onSnapshot(m) {
    const list = $("#snapshots");
    if (!list) return;
    const name = m.object.name;
    document.getElementById("snap-" + name)?.remove();
    if (m.state) {
      const after = $$("li.snapshot", list).find((li) => li.dataset.name > name);
      list.insertBefore(snapshotItem(m.state), after || null);
    }
    const section = $("#kept");
    if (section) section.hidden = list.children.length === 0;
  }

  const dbList = $("#databases");
  // onState renders a state message by the kind of object it describes.
  function onState(m) {
    switch (m.object.kind) {
      case "Database": onDatabase(m); return;
      case "ConfigMap": onSnapshot(m); return;
    }
  }
  function onDatabase(m) {
    const name = m.object.name;
    if (!dbList) return;
    knowObject(name);
    let card = document.getElementById("db-" + name);
    if (!m.state) {
      if (card) {
        card.classList.add("gone");
        $(".db-state", card).prepend(h("p", { class: "pill bad" }, "Deleted"));
        setTimeout(() => card.remove(), 4000);
      }
      return;
    }
    if (!card || card.classList.contains("gone")) {
      if (card) card.remove();
      card = h("article", { class: "db", id: "db-" + name, "data-name": name }, h("div", { class: "db-state" }));
      const tpl = document.getElementById("db-actions-template");
      if (tpl && mode === "live") card.append(actionsFor(tpl, name, m.state));
      $(".empty", dbList)?.remove();
      const after = $$("article.db", dbList).find((a) => a.dataset.name > name);
      dbList.insertBefore(card, after || null);
    }
    const open = new Set($$("details[open] > summary", card).map((s) => s.textContent.replace(/\d+/g, "")));
    $(".db-state", card).replaceChildren(...renderState(m.state));
    $$(".db-state details > summary", card).forEach((s) => { if (open.has(s.textContent.replace(/\d+/g, ""))) s.parentElement.open = true; });
  }
  function actionsFor(tpl, name, d) {
    const frag = tpl.content.cloneNode(true);
    $$("form", frag).forEach((f) => f.setAttribute("action", f.getAttribute("action").replace("__NAME__", name)));
    $$("code", frag).forEach((c) => { c.textContent = c.textContent.replace("__NAME__", name); });
    const reps = $('input[name="replicas"]', frag);
    if (reps) reps.value = d.replicas;
    const ver = $('input[name="version"]', frag);
    if (ver) ver.value = d.version || "";
    const pf = $('select[name="pitfall"]', frag);
    if (pf) pf.value = d.pitfall || "";
    $$("form.act", frag).forEach(enhanceForm);
    return frag;
  }

  // ---- dispatch ----------------------------------------------------------------
  let lastSeq = 0;
  function handle(m) {
    if (m.seq > lastSeq) lastSeq = m.seq;
    switch (m.type) {
      case "reset": lastSeq = 0; reset(m); return;  // the server restarted or our resume point fell out of its ring
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
    light(m);
  }

  // ---- live: the websocket ---------------------------------------------------------
  function connect() {
    const status = $("#stream-status");
    let delay = 1000;
    function open() {
      const proto = location.protocol === "https:" ? "wss:" : "ws:";
      const since = lastSeq > 0 ? "?since=" + lastSeq : "";
      const ws = new WebSocket(`${proto}//${location.host}/ws${since}`);
      ws.onopen = () => { delay = 1000; if (status) status.textContent = "live"; root.dataset.stream = "open"; };
      ws.onmessage = (e) => {
        let batch;
        try { batch = JSON.parse(e.data); } catch (err) { return; }
        for (const m of Array.isArray(batch) ? batch : [batch]) handle(m);
        root.dataset.seq = String(lastSeq);
      };
      ws.onclose = () => {
        root.dataset.stream = "closed";
        if (status) status.textContent = `reconnecting in ${Math.round(delay / 1000)}s…`;
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
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
  function enhanceForm(form) {
    form.addEventListener("submit", async (e) => {
      if (e.submitter && e.submitter.getAttribute("formmethod") === "get") return; // preview without JS
      e.preventDefault();
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
        if (typeof res.controllerRunning === "boolean") showController(res.controllerRunning);
        if (res.ok && form.closest(".scenario")) {
          form.remove();
          $(".scenario .watch")?.classList.remove("pending");
          const u = new URL(location.href);
          u.searchParams.set("ready", "1");
          history.replaceState(null, "", u);
        }
      } catch (err) {
        flash(false, "The request failed: " + err.message);
      } finally {
        buttons.forEach((b) => { b.disabled = false; });
      }
    });
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

  // ---- replay ------------------------------------------------------------------------
  function replay() {
    const data = JSON.parse($("#replay-data").textContent);
    const msgs = data.messages || [];
    let i = 0, timer = null, speed = 1;
    const play = $("#replay-play");
    const status = $("#stream-status");
    function show() { if (status) status.textContent = `${i} / ${msgs.length}`; root.dataset.seq = String(lastSeq); }
    function step() {
      if (i >= msgs.length) { timer = null; play.textContent = "Replay"; show(); return; }
      const m = msgs[i++];
      handle(m);
      show();
      const next = msgs[i];
      let gap = next ? (new Date(next.time) - new Date(m.time)) : 0;
      gap = Math.max(30, Math.min(isNaN(gap) ? 200 : gap, 1500)) / speed;
      timer = setTimeout(step, gap);
    }
    function start() {
      if (i >= msgs.length) {
        i = 0; lastSeq = 0; reset({ message: "replaying from the start" });
        $("#databases").replaceChildren();
        $("#snapshots")?.replaceChildren();
        const kept = $("#kept");
        if (kept) kept.hidden = true;
      }
      play.textContent = "Pause";
      step();
    }
    play.addEventListener("click", () => {
      if (timer) { clearTimeout(timer); timer = null; play.textContent = "Play"; } else start();
    });
    $("#replay-all").addEventListener("click", () => {
      clearTimeout(timer); timer = null;
      while (i < msgs.length) handle(msgs[i++]);
      play.textContent = "Replay";
      show();
    });
    $("#replay-speed").addEventListener("change", (e) => { speed = Number(e.target.value) || 1; });
    start();
  }

  if (mode === "replay") {
    replay();
    return;
  }
  $$("form.act").forEach(enhanceForm);
  livePreview();
  connect();
  // Watching is using: keep the session (and its namespace) alive while the
  // page is open and visible.
  setInterval(() => {
    if (document.visibilityState === "visible") fetch("/lab/ping", { credentials: "same-origin" }).catch(() => {});
  }, 5 * 60 * 1000);
})();
