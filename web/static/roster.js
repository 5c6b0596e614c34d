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
// Each fetch lists the digests (data-sig) of the rows the page has, and
// the server sends those rows as stubs, so a poll that changed 60 of 300
// learners parses and morphs 60 rows, not 300.
import { KEY, store, tabStore } from "./base.js";
import { morph, morphChildren, parse } from "./morph.js";
import { sorts, byName, keyOf, stays } from "./roster-order.js";

// What a redraw did is reported as User Timing entries, not on the page:
// REFRESH is marked at the end of each poll (its detail.error the HTTP
// status of a refused one), REDRAW measures a redraw's own cost (parse,
// morph, sort and filter, layout; detail.phases and detail.rows). They
// show in the browser's performance tools; only the latest of each is
// kept, so an open roster does not gather them for hours.
const REFRESH = "oplab:roster-refresh";
const REDRAW = "oplab:roster-redraw";

(() => {
  const box = document.getElementById("roster-live");
  if (!box) return;
  const say = document.getElementById("roster-announce");
  const every = Number(box.dataset.every) || 2000;

  // announce says text once in the live region (and shows it above the
  // table, whole in its title where the line cuts it); the same words twice
  // in a row are said again.
  function announce(text) {
    if (!say) return;
    if (say.textContent === text) say.textContent = "";
    setTimeout(() => { say.textContent = text; say.title = text; }, 50);
  }

  // Attributes the script owns on a row, which a redraw leaves alone; a
  // table body's rows are morphed by morphRows, the rest as morph.js does.
  const morphing = {
    keep: new Set(["hidden"]),
    children: (from, to) => from.nodeName === "TBODY" && (morphRows(from, to), true),
  };

  // missed is set when the server sent a stub for a row this page does not
  // have as the stub says (it should not happen: the page sent its own
  // digests); the next fetch then asks for every row whole.
  let missed = false;
  // whole and kept count a redraw's rows sent whole and as stubs, reported
  // with its timings (REDRAW).
  let whole = 0, kept = 0;

  // morphRows makes tbody from hold the rows of to, matched by id whatever
  // their order (the script has its own order): a row is morphed in place,
  // a new one added at the end, a gone one removed. The order is set after.
  function morphRows(from, to) {
    const have = new Map();
    for (let r = from.firstElementChild; r; r = r.nextElementSibling) have.set(r.id, r);
    for (let w = to.firstElementChild; w;) {
      const next = w.nextElementSibling; // w may move into from
      const h = have.get(w.id);
      have.delete(w.id);
      const sig = w.getAttribute("data-sig");
      if (w.hasAttribute("data-kept")) {
        // A stub names a row the page already has as it is.
        if (!h || h.getAttribute("data-sig") !== sig) missed = true;
        kept++;
      } else {
        whole++;
        // The server digests what a row shows: the same digest, nothing to do.
        if (!h) from.appendChild(w);
        else if (!sig || h.getAttribute("data-sig") !== sig) morph(h, w, morphing);
      }
      w = next;
    }
    for (const gone of have.values()) gone.remove();
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

  function setDensity(detailed) {
    box.classList.toggle("roster-compact", !detailed);
    if (density) density.setAttribute("aria-pressed", String(detailed));
  }

  // apply puts the rows in the chosen order and hides those the filter
  // leaves out, touching only rows whose place or visibility changes, and
  // says how many are shown of how many.
  function apply() {
    const body = box.querySelector("#roster-table tbody");
    if (!body) { if (showing) showing.textContent = ""; return; }
    const rows = [];
    for (const r of body.children) rows.push(keyOf(r));
    const text = find ? find.value.trim().toLowerCase() : "";
    const only = chips.filter((c) => c.getAttribute("aria-pressed") === "true").map((c) => c.dataset.chip);
    let shown = 0;
    for (const k of rows) {
      const hit = (!text || k.who.includes(text)) && only.every((c) => k[c]);
      if (k.row.hidden === hit) k.row.hidden = !hit;
      if (hit) shown++;
    }
    const place = new Map(rows.map((k, i) => [k, i]));
    const sorted = rows.slice().sort(sorts[sortBy ? sortBy.value : "name"] || byName);
    const keep = stays(sorted.map((k) => place.get(k)));
    // From the end: each row that moves goes just before the one after it.
    let after = null;
    for (let i = sorted.length - 1; i >= 0; i--) {
      const r = sorted[i].row;
      if (!keep[i]) body.insertBefore(r, after);
      after = r;
    }
    if (showing) showing.textContent = shown === rows.length ? "Showing all " + rows.length : "Showing " + shown + " of " + rows.length;
    return shown;
  }

  function initTools() {
    if (!tools) return;
    tools.hidden = false;
    setDensity(store.text(KEY.rosterDetailed) === "1");
    const kept = tabStore.load("oplab.roster.view", {});
    if (sortBy && kept.sort && sorts[kept.sort]) sortBy.value = kept.sort;
    if (find && typeof kept.find === "string") find.value = kept.find;
    for (const c of chips) c.setAttribute("aria-pressed", String((kept.only || []).includes(c.dataset.chip)));
    const keep = () => {
      tabStore.save("oplab.roster.view", { sort: sortBy.value, find: find.value,
        only: chips.filter((c) => c.getAttribute("aria-pressed") === "true").map((c) => c.dataset.chip) });
    };
    // A change the instructor makes is said once, in the live region: how
    // many rows are left to look at.
    const changed = () => { keep(); const n = apply(); if (n !== undefined) announce(showing.textContent + " learners."); };
    density.addEventListener("click", () => {
      const detailed = density.getAttribute("aria-pressed") !== "true";
      setDensity(detailed);
      store.saveText(KEY.rosterDetailed, detailed ? "1" : "0");
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

  // digests lists the digests (data-sig) of the rows the page shows, for
  // the server to send those rows as stubs: the page then parses and
  // morphs only the rows that changed, not all 300 at every poll. Empty
  // (every row whole) after a stub that did not match, or when the header
  // was refused (a proxy that takes no header of 4 KB).
  let sendHave = true;
  function digests() {
    const body = box.querySelector("#roster-table tbody");
    if (!sendHave || !body) return "";
    const sigs = [];
    for (let r = body.firstElementChild; r; r = r.nextElementSibling) { const s = r.getAttribute("data-sig"); if (s) sigs.push(s); }
    return sigs.join(" ");
  }

  let last = "", fetching = false, again = false;
  let refreshError = ""; // the status of the last poll refused, "" after one answered
  // noteHands says a newly raised hand once, in the roster's live region:
  // the instructor need not watch the queue to hear someone is stuck.
  let hands = null;
  function noteHands() {
    const now = new Map([...box.querySelectorAll("#help-list > li")].map((li) => [li.id, li.querySelector("b")?.textContent || ""]));
    if (hands) {
      const raised = [...now].filter(([id]) => !hands.has(id)).map(([, who]) => who);
      if (raised.length) announce(raised.join(", ") + (raised.length === 1 ? " raised a hand." : " raised hands."));
    }
    hands = new Set(now.keys());
  }

  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const headers = { Accept: "text/html" };
      const sigs = missed ? "" : digests();
      if (sigs) headers["Oplab-Roster-Have"] = sigs;
      const res = await fetch(box.dataset.refresh, { credentials: "same-origin", headers });
      if (!res.ok && sigs && (res.status === 400 || res.status === 431)) { sendHave = false; again = true; return; }
      if (!res.ok) { refreshError = String(res.status); return; }
      const html = await res.text();
      refreshError = "";
      if (html === last) return;
      last = html;
      // The redraw's own cost (parse, morph, sort and filter), without the
      // fetch, is measured (REDRAW).
      const t0 = performance.now();
      const next = parse(html);
      const t1 = performance.now();
      const focused = box.contains(document.activeElement) ? document.activeElement : null;
      missed = false; whole = 0; kept = 0;
      morphChildren(box, next, morphing);
      if (missed) { again = true; last = ""; }
      const t2 = performance.now();
      apply();
      const t3 = performance.now();
      // Reading the height makes the browser lay the table out now, so the
      // figure counts style and layout too, not only the script.
      void box.offsetHeight;
      const t4 = performance.now();
      performance.clearMeasures(REDRAW);
      performance.measure(REDRAW, { start: t0, end: t4,
        detail: { phases: { parse: t1 - t0, morph: t2 - t1, apply: t3 - t2, layout: t4 - t3 }, rows: { whole, kept } } });
      // A row that moved was taken out of the page for a moment, which
      // drops its focus: give it back.
      if (focused && document.activeElement !== focused) (focused.isConnected ? focused : document.getElementById(focused.id))?.focus();
      noteResets(true);
      noteHands();
    } catch { /* the next tick tries again */ }
    finally {
      performance.clearMarks(REFRESH);
      performance.mark(REFRESH, { detail: { error: refreshError } });
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
