// roster.js: keeps the instructor's roster of learners live. Every couple
// of seconds it fetches /instructor/roster and changes only what changed (a
// cell's text, a row that came or went), so a screen reader reading the
// table keeps its place, a selection stays, and the focused button keeps
// the focus. Reset is posted from here and answered at once; the learner's
// row then shows how far it got. Only what matters is said in the one
// polite live region: a reset started, refused or ended, never a routine
// redraw. Without script the page shows the roster as of its load, and
// Reset is a form post that comes back to the page.
//
// For a class of 300 the rows are one line each (the compact density; the
// detailed one is a toggle kept in localStorage), and the tools above the
// table sort and filter the rows the server rendered: the script only
// reorders and hides them, it never draws a row itself. Sort and filter
// hold across redraws: a redraw changes rows in place, then the order and
// the filter are applied again, moving only rows that are out of place.
"use strict";

(() => {
  const box = document.getElementById("roster-live");
  if (!box) return;
  const say = document.getElementById("roster-announce");
  const every = Number(box.dataset.every) || 2000;

  // announce says text once in the live region (and shows it above the
  // table); the same words twice in a row are said again.
  function announce(text) {
    if (!say) return;
    if (say.textContent === text) say.textContent = "";
    setTimeout(() => { say.textContent = text; }, 50);
  }

  // same tells whether node a can be kept as node b: the same kind of
  // node, and for elements the same tag and id (rows are keyed by id).
  function same(a, b) {
    if (!a || a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) return false;
    return a.nodeType !== Node.ELEMENT_NODE || a.id === b.id;
  }

  // Attributes the script owns on a row, which a redraw leaves alone.
  const ours = new Set(["hidden"]);

  // morphRows makes tbody from hold the rows of to, matched by id whatever
  // their order (the script has its own order): a row is morphed in place,
  // a new one added at the end, a gone one removed. The order is set after.
  function morphRows(from, to) {
    const have = new Map();
    for (const r of from.children) have.set(r.id, r);
    const keep = new Set();
    for (const w of [...to.children]) {
      const h = have.get(w.id);
      keep.add(w.id);
      // The server digests what a row shows: the same digest, nothing to do.
      if (!h) from.appendChild(w);
      else if (!w.dataset.sig || h.dataset.sig !== w.dataset.sig) morph(h, w);
    }
    for (const [id, r] of have) if (!keep.has(id)) r.remove();
  }

  // morphChildren makes from's children look like to's, keeping every node
  // that can be kept: a text node gets new text, an element new attributes
  // and children, and only what has no counterpart is added or removed.
  function morphChildren(from, to) {
    const want = [...to.childNodes];
    want.forEach((w, i) => {
      let have = from.childNodes[i];
      if (w.nodeType === Node.ELEMENT_NODE && w.id && !same(have, w)) {
        const moved = [...from.childNodes].slice(i).find((n) => same(n, w));
        if (moved) { from.insertBefore(moved, have); have = moved; }
      }
      if (!same(have, w)) { from.insertBefore(w, have || null); return; }
      morph(have, w);
    });
    while (from.childNodes.length > want.length) from.lastChild.remove();
  }

  function morph(from, to) {
    if (from.nodeType !== Node.ELEMENT_NODE) {
      if (from.nodeValue !== to.nodeValue) from.nodeValue = to.nodeValue;
      return;
    }
    for (const a of [...from.attributes]) if (!to.hasAttribute(a.name) && !ours.has(a.name)) from.removeAttribute(a.name);
    for (const a of to.attributes) if (from.getAttribute(a.name) !== a.value) from.setAttribute(a.name, a.value);
    if (from.nodeName === "TBODY") morphRows(from, to); else morphChildren(from, to);
  }

  // The tools: density, sort, text filter and the chips. Their settings
  // are kept (the density in localStorage, the rest for this tab), so a
  // reload keeps the view the instructor chose.
  const tools = document.getElementById("roster-tools");
  const density = document.getElementById("roster-density");
  const sortBy = document.getElementById("roster-sort");
  const find = document.getElementById("roster-filter");
  const showing = document.getElementById("roster-showing");
  const chips = tools ? [...tools.querySelectorAll("[data-chip]")] : [];
  // base.js comes after this script in the page, so window.oplab is read
  // once the document has loaded (initTools), not now.
  let store = null, tabStore = null;

  function setDensity(detailed) {
    box.classList.toggle("roster-compact", !detailed);
    if (density) density.setAttribute("aria-pressed", String(detailed));
  }

  // Each sort is a comparison of two rows' data attributes; ties go by
  // name, then namespace, so the order never flickers between redraws.
  const num = (r, k) => Number(r.dataset[k]) || 0;
  const flag = (r, k) => (r.dataset[k] ? 1 : 0);
  // Names sort as people read them: "Ana 2" before "Ana 12". The server's
  // key puts the unnamed (a leading U+FFFF) after every named learner.
  const collate = new Intl.Collator("en", { numeric: true }).compare;
  const byNamespace = (a, b) => (a.dataset.namespace < b.dataset.namespace ? -1 : a.dataset.namespace > b.dataset.namespace ? 1 : 0);
  const byName = (a, b) => collate(a.dataset.name, b.dataset.name) || byNamespace(a, b);
  const sorts = {
    name: byName,
    namespace: byNamespace,
    progress: (a, b) => num(b, "progress") - num(a, "progress") || byName(a, b),
    "progress-asc": (a, b) => num(a, "progress") - num(b, "progress") || byName(a, b),
    stuck: (a, b) => flag(b, "stuck") - flag(a, "stuck") || byName(a, b),
    away: (a, b) => flag(b, "away") - flag(a, "away") || num(b, "idle") - num(a, "idle") || byName(a, b),
  };

  // apply puts the rows in the chosen order and hides those the filter
  // leaves out, touching only rows whose place or visibility changes, and
  // says how many are shown of how many.
  function apply() {
    const body = box.querySelector("#roster-table tbody");
    if (!body) { if (showing) showing.textContent = ""; return; }
    const rows = [...body.children];
    const text = find ? find.value.trim().toLowerCase() : "";
    const only = chips.filter((c) => c.getAttribute("aria-pressed") === "true").map((c) => c.dataset.chip);
    let shown = 0;
    for (const r of rows) {
      const hit = (!text || r.dataset.who.toLowerCase().includes(text)) && only.every((k) => r.dataset[k]);
      if (r.hidden === hit) r.hidden = !hit;
      if (hit) shown++;
    }
    const sorted = rows.slice().sort(sorts[sortBy ? sortBy.value : "name"] || byName);
    // Move only what is out of place: walk the wanted order and insert a
    // row before the node that is where it should be.
    let at = body.firstElementChild;
    for (const r of sorted) {
      if (r === at) { at = at.nextElementSibling; continue; }
      body.insertBefore(r, at);
    }
    if (showing) showing.textContent = shown === rows.length ? "Showing all " + rows.length : "Showing " + shown + " of " + rows.length;
    return shown;
  }

  function initTools() {
    if (!tools) return;
    if (window.oplab) ({ store, tabStore } = window.oplab);
    tools.hidden = false;
    setDensity(store ? store.text("oplab.roster.detailed") === "1" : false);
    if (tabStore) {
      const kept = tabStore.load("oplab.roster.view", {});
      if (sortBy && kept.sort && sorts[kept.sort]) sortBy.value = kept.sort;
      if (find && typeof kept.find === "string") find.value = kept.find;
      for (const c of chips) c.setAttribute("aria-pressed", String((kept.only || []).includes(c.dataset.chip)));
    }
    const keep = () => {
      if (tabStore) tabStore.save("oplab.roster.view", { sort: sortBy.value, find: find.value,
        only: chips.filter((c) => c.getAttribute("aria-pressed") === "true").map((c) => c.dataset.chip) });
    };
    // A change the instructor makes is said once, in the live region: how
    // many rows are left to look at.
    const changed = () => { keep(); const n = apply(); if (n !== undefined) announce(showing.textContent + " learners."); };
    density.addEventListener("click", () => {
      const detailed = density.getAttribute("aria-pressed") !== "true";
      setDensity(detailed);
      if (store) store.saveText("oplab.roster.detailed", detailed ? "1" : "0");
    });
    sortBy.addEventListener("change", changed);
    let typing;
    find.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(changed, 250); });
    for (const c of chips) c.addEventListener("click", () => {
      c.setAttribute("aria-pressed", String(c.getAttribute("aria-pressed") !== "true"));
      changed();
    });
    apply();
  }
  document.addEventListener("DOMContentLoaded", initTools);

  // seen is each learner's latest reset as "seq:state": a new one is
  // announced, its progress within a state is not.
  const seen = new Map();
  // Several resets that changed in one redraw are said together: each
  // announce replaces the words before it.
  function noteResets(speak) {
    const said = [];
    for (const p of box.querySelectorAll(".reset-status")) {
      const row = p.closest("tr");
      if (!row) continue;
      const key = p.dataset.resetSeq + ":" + p.dataset.resetState;
      if (speak && seen.get(row.dataset.namespace) !== key) said.push(row.dataset.who + ": " + p.textContent.trim());
      seen.set(row.dataset.namespace, key);
    }
    if (said.length) announce(said.join(" "));
  }
  noteResets(false);

  let last = "", fetching = false, again = false;
  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const res = await fetch(box.dataset.refresh, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!res.ok) { box.dataset.refreshError = String(res.status); return; }
      const html = await res.text();
      delete box.dataset.refreshError;
      if (html === last) return;
      last = html;
      // The redraw's own cost (parse, morph, sort and filter), without the
      // fetch, is kept on the box for the 300-learner test to read.
      const t0 = performance.now();
      const next = document.createElement("template");
      next.innerHTML = html;
      const focused = box.contains(document.activeElement) ? document.activeElement : null;
      morphChildren(box, next.content);
      apply();
      // Reading the height makes the browser lay the table out now, so the
      // figure counts style and layout too, not only the script.
      void box.offsetHeight;
      box.dataset.redrawMs = (performance.now() - t0).toFixed(1);
      // A row that moved was taken out of the page for a moment, which
      // drops its focus: give it back.
      if (focused && document.activeElement !== focused) (focused.isConnected ? focused : document.getElementById(focused.id))?.focus();
      noteResets(true);
    } catch { /* the next tick tries again */ }
    finally {
      box.dataset.refreshed = String(Date.now());
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  // Reset deletes a learner's Databases: ask once, post it, and say at
  // once that it runs (the forms are redrawn, so the listener sits on the
  // box). A reset already running is not posted again.
  box.addEventListener("submit", async (e) => {
    const form = e.target;
    // A data-plain form (removing the finalizers left) posts as HTML does.
    if (form.hasAttribute("data-plain")) return;
    const btn = form.querySelector("button[aria-label]");
    const row = form.closest("tr");
    if (!btn || !row) return;
    e.preventDefault();
    const who = row.dataset.who;
    if (btn.getAttribute("aria-disabled") === "true") {
      announce(who + ": a reset is already running; its row says how many Databases are left.");
      return;
    }
    if (!window.confirm("Reset " + who + "? Every Database in the namespace is deleted; snapshots and progress are kept.")) return;
    // The name starts with the words the button shows.
    const showBusy = (on) => {
      btn.textContent = on ? "Resetting…" : "Reset";
      btn.setAttribute("aria-label", btn.textContent + " " + who);
      if (on) btn.setAttribute("aria-disabled", "true"); else btn.removeAttribute("aria-disabled");
    };
    showBusy(true);
    try {
      const res = await fetch(form.action, { method: "POST", credentials: "same-origin", headers: { Accept: "application/json" } });
      const body = await res.json().catch(() => ({}));
      if (res.ok) {
        seen.set(row.dataset.namespace, body.seq + ":running");
        announce(who + ": " + body.message);
      } else {
        showBusy(false);
        announce(who + ": reset refused: " + (body.error || "oplab answered " + res.status));
      }
    } catch {
      showBusy(false);
      announce(who + ": reset not sent: oplab could not be reached.");
    }
    refresh();
  });
  setInterval(refresh, every);
})();
